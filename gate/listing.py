"""Facts listed for people: what memory holds (`memory-gate show`) and what nobody has confirmed
in a while (`memory-gate review`).

Both are generators over one SELECT read in index order (schema.sql, version 4), so a memory of
any size streams to the terminal a row at a time, and the first rows show at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import apsw

from gate.search import FACT_COLUMNS, Fact


def like_pattern(text: str) -> str:
    """A LIKE pattern matching `text` anywhere, its own % and _ taken literally (escape `\\`)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def facts(
    conn: apsw.Connection,
    *,
    topic: str | None = None,
    kind: str | None = None,
    since: str | None = None,
    limit: int | None = None,
) -> Iterator[Fact]:
    """Facts, the most recently changed (or created) first. `topic`: the topic holds these
    letters (any case); `kind`: exactly this kind; `since`: changed on or after this day."""
    where, args = [], []
    if topic:
        where.append("topic LIKE ? ESCAPE '\\'")
        args.append(like_pattern(topic))
    if kind:
        where.append("kind = ?")
        args.append(kind)
    if since:
        where.append("updated >= ?")
        args.append(since)
    sql = f"SELECT {FACT_COLUMNS} FROM facts"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY updated DESC, id DESC"
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    for row in conn.execute(sql, args):
        yield Fact(*row)


def cutoff(days: int, now: datetime | None = None) -> str:
    """The moment `days` days before now, as the ledger writes times (UTC, to the second, Z)."""
    try:
        moment = (now or datetime.now(timezone.utc)) - timedelta(days=days)
    except OverflowError:
        return ""  # before the first day of the calendar: no fact is that old
    # isoformat pads the year to four digits, so the text compares as the time does.
    return moment.replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def unconfirmed(conn: apsw.Connection, before: str, *, limit: int | None = None) -> Iterator[Fact]:
    """Facts no turn has kept or updated since `before` (a ledger time), the longest first."""
    sql = f"SELECT {FACT_COLUMNS} FROM facts WHERE confirmed < ? ORDER BY confirmed, id"
    args: list = [before]
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    for row in conn.execute(sql, args):
        yield Fact(*row)


def count_unconfirmed(conn: apsw.Connection, before: str) -> int:
    return conn.execute("SELECT count(*) FROM facts WHERE confirmed < ?", (before,)).fetchone()[0]
