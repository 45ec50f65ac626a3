"""The plugin's mod hands the server each memory tool call's turn, so that no hook process starts.

Which turn a tool call belongs to, and which subagent made it, is what the PreToolUse hook tells
the ledger (gate.memory.ledger `record_tool_call`). Under the plugin the mod
(mods/memory-gate/hooks/register.js) sees the same fields a moment before: in `tool.call`, which
runs before the PreToolUse hooks, it writes them, and nothing else (never the call's input, which
may hold a credential), to
`$CLAUDE_PLUGIN_DATA/calls/<tool_use_id>.json`, and marks the hook done so that the plugin's
launcher (bin/memory-gate) answers it without starting Python. The server claims the note when
the call arrives, by the `claudecode/toolUseId` of its `_meta`, and records it in the same
transaction as the call itself.

A note that is missing or malformed is no error: the call is then attributed as any call the
PreToolUse hook did not map (by the session), which is right except under `--continue`. Notes
of calls that never reached this server (a refused call, a server that was down) are swept once
a day old, and so are the marks of sessions long over.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

FOLDER = "calls"
MARKS = "done"  # the mod's marks for the launcher (mods/memory-gate/bin/memory-gate), one a session and hook
MAX_BYTES = 4096  # a note is about 200 bytes: anything much larger is not one
STALE_AFTER = 24 * 3600.0
TOOLS = ("__memory_search", "__memory_write")


@dataclass(frozen=True)
class Note:
    """A tool call's turn as the mod saw it: the hook payload's session_id, prompt_id,
    tool_name and agent_id (None for the main agent)."""

    session: str
    prompt_id: str | None
    tool: str
    agent: str | None


def folder(plugin_data: str | None) -> Path | None:
    return Path(plugin_data) / FOLDER if plugin_data else None


def marks(plugin_data: str | None) -> Path | None:
    return Path(plugin_data) / MARKS if plugin_data else None


def safe_id(tool_use_id: str) -> bool:
    """A tool_use_id fit to be a file name: Claude Code's are `toolu_` and letters and digits.
    Anything else (a slash, dots) never names a path."""
    return 0 < len(tool_use_id) <= 128 and all(ch.isascii() and (ch.isalnum() or ch in "_-") for ch in tool_use_id)


def peek(where: Path, tool_use_id: str) -> Note | None:
    """The note the mod left for this call, left in place for `claim`."""
    if not safe_id(tool_use_id):
        return None
    try:
        with open(where / f"{tool_use_id}.json", "rb") as handle:
            return parse(handle.read(MAX_BYTES + 1))
    except OSError:
        return None


def claim(where: Path, tool_use_id: str) -> Note | None:
    """The note the mod left for this call, removed as it is read; None when there is none fit
    to use (then the call is attributed by its session)."""
    if not safe_id(tool_use_id):
        return None
    path = where / f"{tool_use_id}.json"
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError:
        return None
    try:
        os.unlink(path)
    except OSError:
        pass  # read all the same; the sweep takes it later
    return parse(raw)


def parse(raw: bytes) -> Note | None:
    if len(raw) > MAX_BYTES:
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    session, prompt_id, tool, agent = (data.get(key) for key in ("session_id", "prompt_id", "tool_name", "agent_id"))
    if not (isinstance(session, str) and session and isinstance(tool, str) and tool.endswith(TOOLS)):
        return None
    return Note(
        session,
        prompt_id if isinstance(prompt_id, str) and prompt_id else None,
        tool,
        agent if isinstance(agent, str) and agent else None,
    )


def sweep(where: Path, now: float | None = None, suffix: str = ".json") -> int:
    """Remove the files of `where` ending in `suffix` a day old or more (notes, or with suffix ""
    the marks of sessions long over); return how many went. Never raises."""
    cutoff = (time.time() if now is None else now) - STALE_AFTER
    gone = 0
    try:
        entries = list(os.scandir(where))
    except OSError:
        return 0
    for entry in entries:
        try:
            if entry.name.endswith(suffix) and entry.is_file() and entry.stat().st_mtime < cutoff:
                os.unlink(entry.path)
                gone += 1
        except OSError:
            continue
    return gone
