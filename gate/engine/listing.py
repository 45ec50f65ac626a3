"""Facts listed for people, on either engine: the SQL behind `memory-gate show`, `review`,
`stats`, `export` and the memory page's lists (gate.memory.listing holds what is said once above).

`SqliteListing` reads a local memory over apsw, `PostgresListing` one team project over psycopg
(through its TeamFacts, gate.engine.teamfacts); both build their WHERE clause with `filters`, the
one place the two dialects differ: marks (? or %s), LIKE or ILIKE, the FTS5 index or the facts'
tsvector, and the index hint SQLite needs. Both stream: a memory of any size answers its first
rows at once (SQLite a row at a time, PostgreSQL through a server-side cursor in one snapshot).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import apsw

from gate.engine import tokens as words_of
from gate.engine.facts import FACT_COLUMNS, Fact, load_facts


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


def filters(
    topic, kind, since, unconfirmed_before, topic_words=None, *, ordered=False, project: int | None = None
) -> tuple[str, list]:
    """The WHERE clause and its arguments. `ordered`: for a list read newest change first, where
    the unconfirmed filter must not take the confirmed index (SQLite would then sort every
    stale fact to return the first page; reading the updated index in order stops at a page).
    With a team's `project` id, PostgreSQL's: the project's facts, %s marks, ILIKE for the
    any-case match SQLite's LIKE makes, and `topic_words` asked of the facts' words (topic_query)."""
    team = project is not None
    mark = "%s" if team else "?"
    where: list[str] = [f"project = {mark}"] if team else []
    args: list[Any] = [project] if team else []
    matched = topic_match(topic_words) if topic_words else None
    if topic_words and matched is None:
        topic = topic_words  # no word in it (punctuation, say): the letters anywhere, as LIKE finds them
    if topic:
        where.append(f"topic {'ILIKE' if team else 'LIKE'} {mark} ESCAPE '\\'")
        args.append(like_pattern(topic))
    if matched and not team:
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
        where.append(f"+confirmed < {mark}" if ordered and not team else f"confirmed < {mark}")
        args.append(unconfirmed_before)
    return (" WHERE " + " AND ".join(where) if where else ""), args


class SqliteListing:
    """The lists of a local memory (gate.engine.seam.Listing)."""

    def __init__(self, conn: apsw.Connection):
        self.conn = conn

    def facts(
        self,
        *,
        topic: str | None = None,
        kind: str | None = None,
        since: str | None = None,
        unconfirmed_before: str | None = None,
        topic_words: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> Iterator[Fact]:
        where, args = filters(topic, kind, since, unconfirmed_before, topic_words, ordered=True)
        sql = f"SELECT {FACT_COLUMNS} FROM facts{where} ORDER BY updated DESC, id DESC"
        if limit is not None or offset:
            sql += " LIMIT ? OFFSET ?"
            args += [-1 if limit is None else limit, offset]
        for row in self.conn.execute(sql, args):
            yield Fact(*row)

    def count(
        self,
        *,
        topic: str | None = None,
        kind: str | None = None,
        since: str | None = None,
        unconfirmed_before: str | None = None,
        topic_words: str | None = None,
    ) -> int:
        where, args = filters(topic, kind, since, unconfirmed_before, topic_words)
        return self.conn.execute(f"SELECT count(*) FROM facts{where}", args).get

    def unconfirmed(self, before: str, *, limit: int | None = None) -> Iterator[Fact]:
        sql = f"SELECT {FACT_COLUMNS} FROM facts WHERE confirmed < ? ORDER BY confirmed, id"
        args: list = [before]
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        for row in self.conn.execute(sql, args):
            yield Fact(*row)

    def count_unconfirmed(self, before: str) -> int:
        return self.conn.execute("SELECT count(*) FROM facts WHERE confirmed < ?", (before,)).get

    def kinds(self) -> dict[str, int]:
        return dict(self.conn.execute("SELECT kind, count(*) FROM facts GROUP BY kind"))

    def load(self, ids: Sequence[int]) -> dict[int, Fact]:
        return load_facts(self.conn, ids)

    def export_rows(self, columns: Sequence[str]) -> Iterator[tuple]:
        """Every fact's `columns`, by id; the caller holds the read transaction (store.writing)."""
        return self.conn.execute(f"SELECT {', '.join(columns)} FROM facts ORDER BY id")


class PostgresListing:
    """The lists of a team's project (gate.engine.seam.Listing), each read in one snapshot of
    the team database, over the connection of its TeamFacts."""

    def __init__(self, team: Any):
        self.team = team  # a TeamFacts: its connection, project and transaction

    def _rows(self, sql: str, args: list, name: str = "memory_gate_listing", size: int = 500) -> Iterator[Any]:
        """The rows of `sql`, streamed through a server-side cursor in one snapshot."""
        with self.team.transaction(), self.team.conn.cursor(name=name) as cursor:
            cursor.itersize = size
            cursor.execute(sql, args)
            yield from cursor

    def _one(self, sql: str, args: Sequence) -> Any:
        with self.team.transaction():
            return self.team.conn.execute(sql, args).fetchone()[0]

    def facts(
        self,
        *,
        topic: str | None = None,
        kind: str | None = None,
        since: str | None = None,
        unconfirmed_before: str | None = None,
        topic_words: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> Iterator[Fact]:
        where, args = filters(topic, kind, since, unconfirmed_before, topic_words, project=self.team.project)
        sql = f"SELECT {FACT_COLUMNS} FROM facts{where} ORDER BY updated DESC, id DESC"
        if limit is not None:
            sql += " LIMIT %s"
            args.append(limit)
        if offset:
            sql += " OFFSET %s"
            args.append(offset)
        return (Fact(*row) for row in self._rows(sql, args))

    def count(
        self,
        *,
        topic: str | None = None,
        kind: str | None = None,
        since: str | None = None,
        unconfirmed_before: str | None = None,
        topic_words: str | None = None,
    ) -> int:
        where, args = filters(topic, kind, since, unconfirmed_before, topic_words, project=self.team.project)
        return self._one(f"SELECT count(*) FROM facts{where}", args)

    def unconfirmed(self, before: str, *, limit: int | None = None) -> Iterator[Fact]:
        where, args = filters(None, None, None, before, project=self.team.project)
        sql = f"SELECT {FACT_COLUMNS} FROM facts{where} ORDER BY confirmed, id"
        if limit is not None:
            sql += " LIMIT %s"
            args.append(limit)
        return (Fact(*row) for row in self._rows(sql, args))

    def count_unconfirmed(self, before: str) -> int:
        where, args = filters(None, None, None, before, project=self.team.project)
        return self._one(f"SELECT count(*) FROM facts{where}", args)

    def kinds(self) -> dict[str, int]:
        with self.team.transaction():
            rows = self.team.conn.execute(
                "SELECT kind, count(*) FROM facts WHERE project = %s GROUP BY kind", (self.team.project,)
            )
            return dict(rows)

    def load(self, ids: Sequence[int]) -> dict[int, Fact]:
        with self.team.transaction():
            return self.team.load(ids)

    def export_rows(self, columns: Sequence[str]) -> Iterator[tuple]:
        sql = f"SELECT {', '.join(columns)} FROM facts WHERE project = %s ORDER BY id"
        return self._rows(sql, [self.team.project], name="memory_gate_export", size=1000)
