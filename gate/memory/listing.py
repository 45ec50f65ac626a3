"""Facts listed for people: what memory holds (`memory-gate show`) and what nobody has confirmed
in a while (`memory-gate review`).

Both are generators over one SELECT read in index order (schema.sql, version 4), so a memory of
any size streams to the terminal a row at a time, and the first rows show at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import apsw

from gate import clock
from gate.engine import tokens as words_of
from gate.engine.facts import FACT_COLUMNS, Fact


def topic_match(typed: str) -> str | None:
    """An FTS5 expression for topics holding a word that starts with each of the typed words
    (`deplo stag` finds "staging deploys"), or None when nothing typed is a word. The word index
    answers it at once in a memory of any size, where LIKE reads every topic."""
    found = [word.replace('"', '""') for word in words_of.words(typed)]
    if not found:
        return None
    return "topic : (" + " ".join(f'"{word}"*' for word in found) + ")"


def topic_query(typed: str) -> str:
    """topic_match for a team's memory: a tsquery over the facts' words (gate.engine.postgres
    `words`, the topic's at weight A), each typed word a prefix of a topic word. Only called when
    topic_match found a word."""
    from gate.engine import teamwords

    return " & ".join(f"{teamwords.lexeme(word)}:*A" for word in words_of.words(typed))


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
    where, args = _filters(topic, kind, since, unconfirmed_before, topic_words, ordered=True)
    sql = f"SELECT {FACT_COLUMNS} FROM facts{where} ORDER BY updated DESC, id DESC"
    if limit is not None or offset:
        sql += " LIMIT ? OFFSET ?"
        args += [-1 if limit is None else limit, offset]
    for row in conn.execute(sql, args):
        yield Fact(*row)


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
    where, args = _filters(topic, kind, since, unconfirmed_before, topic_words)
    return conn.execute(f"SELECT count(*) FROM facts{where}", args).get


def _filters(topic, kind, since, unconfirmed_before, topic_words=None, *, ordered=False, team=None) -> tuple[str, list]:
    """The WHERE clause and its arguments. `ordered`: for a list read newest change first, where
    the unconfirmed filter must not take the confirmed index (SQLite would then sort every
    stale fact to return the first page; reading the updated index in order stops at a page).
    With a `team` (its TeamFacts), PostgreSQL's: the project's facts, %s marks, ILIKE for the
    any-case match SQLite's LIKE makes, and `topic_words` asked of the facts' words (topic_query)."""
    mark = "%s" if team is not None else "?"
    where, args = ([f"project = {mark}"], [team.project]) if team is not None else ([], [])
    matched = topic_match(topic_words) if topic_words else None
    if topic_words and matched is None:
        topic = topic_words  # no word in it (punctuation, say): the letters anywhere, as LIKE finds them
    if topic:
        where.append(f"topic {'ILIKE' if team is not None else 'LIKE'} {mark} ESCAPE '\\'")
        args.append(like_pattern(topic))
    if matched and team is None:
        where.append("id IN (SELECT rowid FROM facts_fts WHERE facts_fts MATCH ?)")
        args.append(matched)
    elif matched:
        where.append("words @@ %s::tsquery")
        args.append(topic_query(topic_words))
    if kind:
        where.append(f"kind = {mark}")
        args.append(kind)
    if since:
        where.append(f"updated >= {mark}")
        args.append(since)
    if unconfirmed_before:
        where.append(f"+confirmed < {mark}" if ordered and team is None else f"confirmed < {mark}")
        args.append(unconfirmed_before)
    return (" WHERE " + " AND ".join(where) if where else ""), args


def cutoff(days: int, now: datetime | None = None) -> str:
    """The moment `days` days before now, as the ledger writes times (UTC, to the second, Z)."""
    try:
        moment = (now or datetime.now(UTC)) - timedelta(days=days)
    except OverflowError:
        return ""  # before the first day of the calendar: no fact is that old
    return clock.stamp(moment)


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
    return conn.execute("SELECT count(*) FROM facts WHERE confirmed < ?", (before,)).get


# -- a team's facts (gate.engine.teamfacts): the same lists, from PostgreSQL -----------------


def _team_rows(team, sql: str, args: list) -> Iterator[Fact]:
    """The rows of `sql`, streamed through a server-side cursor in one snapshot, as Facts."""
    with team.transaction(), team.conn.cursor(name="memory_gate_listing") as cursor:
        cursor.itersize = 500
        cursor.execute(sql, args)
        for row in cursor:
            yield Fact(*row)


def team_facts(
    team,
    *,
    topic: str | None = None,
    kind: str | None = None,
    since: str | None = None,
    unconfirmed_before: str | None = None,
    topic_words: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> Iterator[Fact]:
    """`facts` over a team's memory: the most recently changed first."""
    where, args = _filters(topic, kind, since, unconfirmed_before, topic_words, team=team)
    sql = f"SELECT {FACT_COLUMNS} FROM facts{where} ORDER BY updated DESC, id DESC"
    if limit is not None:
        sql += " LIMIT %s"
        args.append(limit)
    if offset:
        sql += " OFFSET %s"
        args.append(offset)
    return _team_rows(team, sql, args)


def team_count(
    team,
    *,
    topic: str | None = None,
    kind: str | None = None,
    since: str | None = None,
    unconfirmed_before: str | None = None,
    topic_words: str | None = None,
) -> int:
    """How many facts `team_facts` lists with these filters."""
    where, args = _filters(topic, kind, since, unconfirmed_before, topic_words, team=team)
    with team.transaction():
        return team.conn.execute(f"SELECT count(*) FROM facts{where}", args).fetchone()[0]


def team_unconfirmed(team, before: str, *, limit: int | None = None) -> Iterator[Fact]:
    """`unconfirmed` over a team's memory: no member's turn kept or updated them since `before`."""
    where, args = _filters(None, None, None, before, team=team)
    sql = f"SELECT {FACT_COLUMNS} FROM facts{where} ORDER BY confirmed, id"
    if limit is not None:
        sql += " LIMIT %s"
        args.append(limit)
    return _team_rows(team, sql, args)


def team_count_unconfirmed(team, before: str) -> int:
    where, args = _filters(None, None, None, before, team=team)
    with team.transaction():
        return team.conn.execute(f"SELECT count(*) FROM facts{where}", args).fetchone()[0]


def team_kinds(team) -> dict[str, int]:
    """How many facts of each kind the team's project holds."""
    with team.transaction():
        return dict(
            team.conn.execute("SELECT kind, count(*) FROM facts WHERE project = %s GROUP BY kind", (team.project,))
        )


def team_export_rows(team, columns: tuple[str, ...]) -> Iterator[tuple]:
    """Every fact's `columns`, by id, in one snapshot."""
    with team.transaction(), team.conn.cursor(name="memory_gate_export") as cursor:
        cursor.itersize = 1000
        cursor.execute(f"SELECT {', '.join(columns)} FROM facts WHERE project = %s ORDER BY id", (team.project,))
        yield from cursor
