"""The part every hook process shares: read Claude Code's JSON, answer in JSON, fail open.

A hook must never lock the owner out of their agent. Whatever goes wrong (input that is not a
JSON object, an unknown event, a database that is missing, locked or damaged, a bug), the process
exits 0 with one warning line for the owner (`systemMessage`, and the same on stderr) and the turn
goes on without the hook. Exit 2 is never used: on UserPromptSubmit it would erase the prompt.
"""

import sys

import apsw

from gate import jsonlite
from gate.engine import store

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the hooks' import path stays light
    from collections.abc import Callable, Iterable


# Claude Code feeds some events back as prompts of their own (a background subagent that
# finished): not the owner's requests, so neither the gate nor injected-context acts on them.
AUTOMATED = ("<task-notification>",)


def automated(prompt: str | None) -> bool:
    return isinstance(prompt, str) and prompt.lstrip().startswith(AUTOMATED)


def asks_for_help(args: list[str], usage: str) -> bool:
    """`memory-gate hook --help`: a person at the shell, not Claude Code. Prints the usage."""
    if args[:1] in (["-h"], ["--help"]):
        try:
            print(usage, flush=True)
        except BrokenPipeError:  # `| head`: the reader has what it wanted
            pass
        return True
    return False


class Skip(Exception):
    """The hook has nothing to do, or cannot do it: the turn goes on, nothing said."""


def warn(line: str) -> int:
    from gate import credentials  # here: a hook that has nothing to warn about never loads it

    line = credentials.redact(line)  # an exception's text may quote the input
    print(jsonlite.dumps({"systemMessage": line}))
    print(line, file=sys.stderr)
    return 0


def serve(
    event: str,
    handler: "Callable[[dict], dict | None] | None",
    *,
    known: "Iterable[str]",
    name: str,
    off: str,
) -> int:
    """Run one hook: `handler` gets the input object and returns the answer object (or None).
    `name` starts every warning ("memory-gate"), `off` says what the owner loses ("memory is off
    for this event")."""
    if handler is None:
        return warn(f"{name}: unknown hook event {event!r}; {off} (expected one of {', '.join(known)})")
    try:
        payload = jsonlite.loads(sys.stdin.read() or "null")
    except (ValueError, UnicodeDecodeError):
        return warn(f"{name}: {event} hook input is not JSON; {off}")
    if not isinstance(payload, dict):
        return warn(f"{name}: {event} hook input is not a JSON object; {off}")
    try:
        output = handler(payload)
    except Skip:
        output = None
    except (apsw.Error, store.StoreError, OSError) as error:
        return warn(f"{name}: {event} hook skipped: {store.explain(error)}; {off}")
    except Exception as error:  # fail open, whatever went wrong
        return warn(f"{name}: {event} hook skipped ({type(error).__name__}: {error}); {off}")
    if output:
        print(jsonlite.dumps(output))
    return 0
