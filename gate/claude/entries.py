"""memory-gate's entries in Claude Code's files, as they go in and as they are recognised: the
hooks of hooks/hooks.json with the running executable's path in place of the bare name, the stdio
MCP server entry, the allow rules for the two tools, and the tests that tell a hook or a server
entry as memory-gate's, whatever path it runs from. Apart from gate.claude.install because more
than install reads them: install merges them into the settings files, and doctor
(gate.doctor.wiring) looks for them there, writing nothing.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path
from typing import Any, TypeGuard

from gate.claude.scopes import InstallError

SERVER = "memory-gate"
TOOLS = f"mcp__{SERVER}__"
RULES = (f"{TOOLS}memory_search", f"{TOOLS}memory_write")
EXECUTABLE_NAMES = ("memory-gate", "memory-gate.exe")
# The settings hooks, written once: the top-level hooks/hooks.json of a checkout, shipped inside
# the package in a wheel. Install writes them with the executable's path in place of the bare name.
HOOKS_FILE = "hooks.json"


def executable(argv0: str, python: str) -> str:
    """The absolute path of the memory-gate that is running, to write into the settings.

    Why a path and not the bare name: Claude Code runs hooks and starts MCP servers with the PATH
    of the shell it was started from, and a virtualenv's bin is rarely on it; a path works from
    any shell and pins hooks and server to the version that installed them. Rerunning install
    from elsewhere updates the path in place. Symlinks are kept (pipx's ~/.local/bin link
    survives upgrades; its target does not)."""
    if os.path.basename(argv0) in EXECUTABLE_NAMES and os.path.isfile(argv0):
        return os.path.abspath(argv0)
    for name in EXECUTABLE_NAMES:  # `python -m gate install`: the script beside the interpreter
        beside = os.path.join(os.path.dirname(os.path.abspath(python)), name)
        if os.path.isfile(beside) and os.access(beside, os.X_OK):
            return beside
    return shutil.which("memory-gate") or "memory-gate"


def hooks_path() -> Path:
    """hooks/hooks.json at the repository root in a checkout, gate/claude/hooks.json in a wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here / HOOKS_FILE, here.parent.parent / "hooks" / HOOKS_FILE):
        if candidate.is_file():
            return candidate
    raise InstallError(f"hooks/{HOOKS_FILE} is missing beside {here}: reinstall memory-gate")


def settings_hooks() -> dict[str, list]:
    """The `hooks` object of hooks/hooks.json: each event's matcher groups, running `memory-gate`
    by name."""
    return json.loads(hooks_path().read_text(encoding="utf-8"))["hooks"]


def hook_groups(exe: str) -> dict[str, dict]:
    """Each event's matcher group, as it goes into `hooks.<event>`: hooks/hooks.json's, with
    the executable's path (quoted for the shell) in place of `memory-gate`."""
    groups = {}
    for event, (group,) in settings_hooks().items():
        hooks = []
        for hook in group["hooks"]:
            name, _, rest = hook["command"].partition(" ")
            if name != SERVER:
                raise InstallError(
                    f"{hooks_path()}: the {event} hook runs {name!r}, not memory-gate: reinstall memory-gate"
                )
            hooks.append({**hook, "command": f"{shlex.quote(exe)} {rest}"})
        groups[event] = {**group, "hooks": hooks}
    return groups


def server_entry(exe: str) -> dict:
    """The MCP server entry, shaped as `claude mcp add memory-gate -- EXE serve` writes it, with
    `alwaysLoad`: without it Claude Code 2.1.332 keeps the memory tools behind tool search and
    tells the model so in its first request (tests/test_e2e_host.py)."""
    return {"type": "stdio", "command": exe, "args": ["serve"], "env": {}, "alwaysLoad": True}


def is_our_hook(hook: Any) -> bool:
    """A hook running `memory-gate hook ...`, from any path."""
    command = hook.get("command") if isinstance(hook, dict) else None
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return len(words) >= 2 and os.path.basename(words[0]) in EXECUTABLE_NAMES and words[1] == "hook"


def is_our_server(entry: Any) -> TypeGuard[dict]:
    """A server entry running `memory-gate serve`, from any path."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    args = entry.get("args")
    return os.path.basename(entry["command"]) in EXECUTABLE_NAMES and isinstance(args, list) and args[:1] == ["serve"]
