"""Facts listed for people: what memory holds (`memory-gate show`) and what nobody has confirmed
in a while (`memory-gate review`), on a local memory's connection.

The SQL is the engine's (gate.engine.listing: SQLite's and PostgreSQL's, behind
gate.engine.seam.Listing); a command reaches either through its store (gate.memory.opening,
`Opened.store.listing`). These functions are that listing over a local connection, for callers
that hold one. Each list is a generator over one SELECT read in index order (schema.sql,
version 4), so a memory of any size streams to the terminal a row at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import apsw

from gate import clock
from gate.engine.facts import Fact
from gate.engine.listing import SqliteListing, like_pattern, topic_match

__all__ = ["count", "count_unconfirmed", "cutoff", "facts", "like_pattern", "topic_match", "unconfirmed"]


def facts(
    conn: apsw.Connection,
    *,
    topic: str | None = None,
    kind: str | None = None,
    since: str | None = None,
    unconfirmed_before: str | None = None,
    topic_words: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> Iterator[Fact]:
    """Facts, the most recently changed (or created) first. `topic`: the topic holds these
    letters (any case); `kind`: exactly this kind; `since`: changed on or after this day;
    `unconfirmed_before`: no turn kept or updated it since this ledger time (see `cutoff`);
    `topic_words`: the topic holds words starting so (see `topic_match`); `offset`: skip that
    many (a page further down)."""
    return SqliteListing(conn).facts(
        topic=topic,
        kind=kind,
        since=since,
        unconfirmed_before=unconfirmed_before,
        topic_words=topic_words,
        limit=limit,
        offset=offset,
    )


def count(
    conn: apsw.Connection,
    *,
    topic: str | None = None,
    kind: str | None = None,
    since: str | None = None,
    unconfirmed_before: str | None = None,
    topic_words: str | None = None,
) -> int:
    """How many facts `facts` lists with these filters."""
    return SqliteListing(conn).count(
        topic=topic, kind=kind, since=since, unconfirmed_before=unconfirmed_before, topic_words=topic_words
    )


def cutoff(days: int, now: datetime | None = None) -> str:
    """The moment `days` days before now, as the ledger writes times (UTC, to the second, Z)."""
    try:
        moment = (now or datetime.now(UTC)) - timedelta(days=days)
    except OverflowError:
        return ""  # before the first day of the calendar: no fact is that old
    return clock.stamp(moment)


def unconfirmed(conn: apsw.Connection, before: str, *, limit: int | None = None) -> Iterator[Fact]:
    """Facts no turn has kept or updated since `before` (a ledger time), the longest first."""
    return SqliteListing(conn).unconfirmed(before, limit=limit)


def count_unconfirmed(conn: apsw.Connection, before: str) -> int:
    return SqliteListing(conn).count_unconfirmed(before)
