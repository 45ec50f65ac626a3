"""Facts listed for people: what memory holds (`memory-gate show`) and what nobody has confirmed
in a while (`memory-gate review`).

The lists themselves are the engine's (gate.engine.listing: SQLite's and PostgreSQL's, behind
gate.engine.seam.Listing), reached through the project's store (gate.memory.opening,
`Opened.store.listing`). What is left here is the one piece above the engines: the ledger time a
number of days ago, which `review` and the page's "stale" filter ask for.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gate import clock


def cutoff(days: int, now: datetime | None = None) -> str:
    """The moment `days` days before now, as the ledger writes times (UTC, to the second, Z)."""
    try:
        moment = (now or datetime.now(UTC)) - timedelta(days=days)
    except OverflowError:
        return ""  # before the first day of the calendar: no fact is that old
    return clock.stamp(moment)
