"""A throwaway stdio MCP server for the Claude Code harness tests.

Tool `echo(text)` answers "echo: <text>". Every tools/call is appended as one JSON line
({"tool", "args", "meta", "env"}) to the file named by $ECHO_LOG, so a test can read the
`_meta` Claude Code sent (e.g. "claudecode/toolUseId") and the environment the server got.
"""

import json
import os

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("echo")


def _log(tool: str, args: dict, ctx: Context) -> None:
    path = os.environ.get("ECHO_LOG")
    if not path:
        return
    meta = dict(ctx.request_context.meta or {})
    env = {k: v for k, v in os.environ.items() if k.startswith("CLAUDE")}
    with open(path, "a") as f:
        f.write(json.dumps({"tool": tool, "args": args, "meta": meta, "env": env}, default=str) + "\n")


@server.tool(structured_output=False)
def echo(text: str, ctx: Context) -> str:
    """Echo the text back."""
    _log("echo", {"text": text}, ctx)
    return f"echo: {text}"


if __name__ == "__main__":
    server.run()
