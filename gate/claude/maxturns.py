"""How many model turns a headless run has left: `claude -p --max-turns N`.

Claude Code ends a `-p` run with `error_max_turns` and no result once a turn has made N model
requests, and it gives its hooks and mods no word of N. A hold costs the model at least one more
request (a search, a write and the answer again when nothing was searched), so a hold the limit
cannot afford would lose the owner's answer. The limit is read from the command line of the
Claude Code process above this one (Linux /proc; elsewhere there is none to read and no limit is
assumed); the requests a turn has made, from the mod (its step index) or, for the Stop hook,
from the session's transcript.

On the hooks' path: standard library only, and nothing is read unless a limit is set.
"""

import os

# Ancestors to look through: the hook's shell (`/bin/sh -c`), then Claude Code itself.
_DEPTH = 4


def _cmdline(pid: int) -> list[str]:
    with open(f"/proc/{pid}/cmdline", "rb") as file:
        return [arg.decode("utf-8", "replace") for arg in file.read().split(b"\0") if arg]


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as file:
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after it.
        return int(file.read().rsplit(b")", 1)[1].split()[1])


def parse(argv: list[str]) -> int | None:
    """N from `--max-turns N` or `--max-turns=N`, or None."""
    for at, arg in enumerate(argv):
        value = None
        if arg == "--max-turns" and at + 1 < len(argv):
            value = argv[at + 1]
        elif arg.startswith("--max-turns="):
            value = arg.split("=", 1)[1]
        if value is not None:
            try:
                limit = int(value)
            except ValueError:
                return None
            return limit if limit > 0 else None
    return None


def limit(pid: int | None = None) -> int | None:
    """The --max-turns of the nearest `-p` process above `pid` (default: this process)."""
    try:
        current = os.getppid() if pid is None else pid
        for _ in range(_DEPTH):
            if current <= 1:
                return None
            argv = _cmdline(current)
            if "-p" in argv or "--print" in argv:
                return parse(argv)
            current = _parent(current)
    except (OSError, ValueError, IndexError):
        return None
    return None


def steps_in_transcript(path: str, prompt_id: str, last_answer: str | None) -> int:
    """Model requests the turn of `prompt_id` has made so far, as its transcript shows them: the
    main loop's assistant messages since the prompt (a message streamed in several entries is one
    request). The transcript may lag behind the answer being stopped: that answer counts too."""
    from gate import jsonlite

    ids: list[str] = []
    last_texts: list[str] = []
    started = False
    with open(path, encoding="utf-8", errors="replace") as file:
        for line in file:
            if not started:
                if prompt_id not in line:
                    continue
                entry = jsonlite.loads(line)
                started = isinstance(entry, dict) and entry.get("promptId") == prompt_id
                continue
            if '"assistant"' not in line:
                continue
            entry = jsonlite.loads(line)
            if not isinstance(entry, dict) or entry.get("type") != "assistant" or entry.get("isSidechain"):
                continue
            message = entry.get("message")
            if not isinstance(message, dict):
                message = {}
            message_id = message.get("id") or entry.get("uuid") or str(len(ids))
            if message_id not in ids:
                ids.append(message_id)
                last_texts = []
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "text":
                    last_texts.append(block.get("text") or "")
    steps = len(ids)
    if last_answer and last_answer.strip() not in "".join(last_texts).strip():
        steps += 1  # the answer being stopped is not written yet
    elif not ids:
        steps = 1
    return steps


def needed(searched: bool) -> int:
    """Requests a held turn needs before its answer goes out: a search (unless done), a write,
    and the answer."""
    return 2 if searched else 3
