"""`memory-gate serve`: the stdio MCP server Claude Code starts, with its two tools,
memory_search and memory_write.

`front` answers Claude Code's first requests, the first tool calls included, while the `mcp` SDK
imports; `server` is the SDK's server; `tools` does each call's work over `connection` (the
server's one connection to memory, and the embedding it does in the background) and `render`
shapes what the model reads; `wire` carries JSON-RPC lines, each read by `inbound`, so that every
request is answered; `sightings` keeps the server's own record of each turn's memory calls and
answers the Stop hook's question about it on a loopback port.

May import: gate.memory, gate.search, gate.engine, the ground floor; the `mcp` SDK (server only).
"""

# The longest line memory-gate serve reads (gate.serve.wire lets a longer one go as it arrives): a
# write of a thousand full facts fits many times over. Here rather than in gate.serve.front, which
# reads it first: the wire reads it too, and an import of front from the wire would close a cycle
# (front hands over to gate.serve.server, which runs the wire).
MAX_LINE = 8 << 20
