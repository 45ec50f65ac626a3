"""The floor of any MCP server for bench/turn.py's mode `floor`: memory-gate's two tools as Claude
Code sees them (the recorded discovery answers gate/serve/front.py sends), each call answered at
once with a canned result, no database, no search. What Claude Code itself spends on a stdio
server and two tool calls; the server's own cost is the rest."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gate.serve import front  # noqa: E402

# The least each tool's output schema takes.
CANNED = {
    "memory_search": {"must_answer": [], "next": "Memory holds nothing for these terms.", "facts": []},
    "memory_write": {"done": [], "new_ids": [1], "kept": [], "replayed": False, "next": "Nothing owed for this turn."},
}


# `--hook-tool`: a third tool, `hook`, for settings hooks of type mcp_tool to call (bench/turn.py
# mode floormcp): it answers at once with no text, as a hook with nothing to say.
HOOK_TOOL = {"name": "hook", "description": "A hook's stand-in.", "inputSchema": {"type": "object"}}


def main() -> int:
    answers = front.recorded()
    if answers is None:
        print("bench/_floor_server.py: gate/serve/discovery.json does not fit the installed SDK", file=sys.stderr)
        return 1
    meta = answers["results"]["tools/list"].get("_meta")
    hook_tool = "--hook-tool" in sys.argv[1:]
    if hook_tool:
        answers["results"]["tools/list"] = {**answers["results"]["tools/list"],
                                            "tools": [*answers["results"]["tools/list"]["tools"], HOOK_TOOL]}
    for line in sys.stdin.buffer:
        if hook_tool and b'"hook"' in line:
            message = json.loads(line)
            if message.get("method") == "tools/call" and message["params"].get("name") == "hook":
                result = {"content": [{"text": "", "type": "text"}], "isError": False, "resultType": "complete"}
                if meta is not None:
                    result["_meta"] = meta
                os.write(1, (json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n").encode())
                continue
        reply = front.answer(line, answers)
        if isinstance(reply, front.Call):
            body = CANNED[reply.tool]
            result = {"content": [{"text": json.dumps(body), "type": "text"}], "isError": False,
                      "resultType": "complete", "structuredContent": body}
            if meta is not None:
                result["_meta"] = meta
            reply = (json.dumps({"jsonrpc": "2.0", "id": reply.request_id, "result": result}) + "\n").encode()
        if reply is not None:
            os.write(1, reply)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
