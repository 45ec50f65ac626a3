"""`memory-gate serve`: the stdio MCP server Claude Code starts, with its two tools,
memory_search and memory_write.

`front` answers Claude Code's first requests, the first tool calls included, while the `mcp` SDK
imports; `server` is the SDK's server; `tools` does each call's work over `connection` (the
server's one connection to memory, and the embedding it does in the background) and `render`
shapes what the model reads; `wire` carries JSON-RPC lines so that every request is answered.

May import: gate.memory, gate.search, gate.engine, the ground floor; the `mcp` SDK (server only).
"""
