"""SIGINT, SIGTERM and SIGHUP for `memory-gate serve` and `view`, from their first moment.

Claude Code stops its MCP server with SIGINT, at any time, even while the server is still
importing the MCP SDK (a second or more). Python's default answer is a KeyboardInterrupt
traceback wherever the signal lands; instead the signal is noted here, before anything heavy is
imported, and the server stops cleanly once it runs (gate.serve.wire). SIGHUP (the terminal
closed) is a stop like the others. Standard library only.

Once a stop has waited its grace for the calls in flight, gate.engine.store.close_writes makes
every write still waiting for the lock give up and every later one refuse to begin, so that what
was not written by then is not written after the answer said so.
"""

from __future__ import annotations

import signal

SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
_received: list[int] = []


def hold() -> None:
    """From now on these signals are noted, not raised."""
    for signum in SIGNALS:
        signal.signal(signum, _note)


def _note(signum: int, frame: object) -> None:
    _received.append(signum)


def requested() -> bool:
    """A stop was asked for while only `hold` listened."""
    return bool(_received)
