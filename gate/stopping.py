"""SIGINT and SIGTERM for `memory-gate serve`, from its first moment.

Claude Code stops its MCP server with SIGINT, at any time, even while the server is still
importing the MCP SDK (a second or more). Python's default answer is a KeyboardInterrupt
traceback wherever the signal lands; instead the signal is noted here, before anything heavy is
imported, and the server stops cleanly once it runs (gate.serve.wire). Standard library only.
"""

from __future__ import annotations

import signal

SIGNALS = (signal.SIGINT, signal.SIGTERM)
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
