"""The facts of one project in a team database, as a change set changes them.

The team's side of the seam LocalFacts (gate.engine.facts) stands on: the same five
operations, over a psycopg connection to a database gate.engine.postgres opened (this module
never imports psycopg itself). Each change writes its record in `changes` (schema-postgres.sql)
in the caller's transaction, so that a change and its record commit together or not at all:
what write.log is to one owner, `changes` is to a team, and it says which member made each.

Fact ids are the project's own: handed out under the project row's lock, so that two members'
inserts wait for each other a moment and never clash, and never reused after a delete.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gate.engine import postgres, teamwords
from gate.engine.facts import FACT_COLUMNS, FIELDS, Fact

# A bulk insert (an import) moves its facts in batches of this many, each a transaction of its
# own under the project's lock: another member's write waits for one batch at most (about 0.2 s
# on a 2-core machine; 2,000 took 0.75 s), never for the whole import, and searches never wait at all. A batch refused for the
# lock (a member's write holding it past lock_timeout) is tried again, up to BATCH_TRIES times.
BATCH = 500
BATCH_TRIES = 5


@dataclass(frozen=True)
class Who:
    """Who makes the changes, as the team's record names them: the member (config.member),
    the session, and Claude Code's id of the write, if it came from one."""

    member: str
    session: str
    tool_use_id: str | None = None


def project(conn, key: str, now: str) -> int:
    """The id of the project `key` names, made now if the team has none by that name. Read first,
    so that a member's first call never touches a row another member's write holds."""
    found = (
        conn.execute("SELECT id FROM projects WHERE key = %s", (key,)).fetchone()
        or conn.execute(
            # made before names from a remote were lowercased (github.com/Acme/API): the same project
            "SELECT id FROM projects WHERE lower(key) = lower(%s) ORDER BY id LIMIT 1",
            (key,),
        ).fetchone()
    )
    if found is not None:
        return found[0]
    conn.execute("INSERT INTO projects (key, created) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING", (key, now))
    return conn.execute("SELECT id FROM projects WHERE key = %s", (key,)).fetchone()[0]


class TeamFacts:
    """The facts of project `project` in the team database `conn`, changed by `who`."""

    def __init__(
        self, conn, project: int, who: Who, *, url: str = "", deadline: float | None = postgres.CALL_DEADLINE_S
    ):
        self.conn, self.project, self.who, self.url = conn, project, who, url
        self.deadline = deadline
        # The changes recorded and still waiting for their line (record_lines): (seq, fact, op).
        self._unlined: list[tuple[int, int, str]] = []

    @contextlib.contextmanager
    def transaction(self):
        """The team database's transaction around a write's changes, inside the caller's local
        one: it commits first, so a change the team has is never one the ledger refused. A
        connection lost on the way, or the call's deadline passed, raises postgres.Unreachable,
        a lock another member holds too long postgres.Held, and nothing is committed."""
        outermost = self.conn.info.transaction_status == 0  # idle: this block begins the transaction
        with postgres.reaching(self.url, self.conn, self.deadline), self.conn.transaction():
            if outermost:
                postgres.bound(self.conn)
            yield

    def existing(self, ids: Sequence[int]) -> set[int]:
        """Which of `ids` the project holds. A write checks its ids and revisions under the
        project's lock, taken here, and holds it to its commit: another member's write of the
        same facts waits, then finds what this one left (a check before the lock would let two
        writers both pass it, and the later overwrite a change it never saw)."""
        self._lock()
        rows = self.conn.execute("SELECT id FROM facts WHERE project = %s AND id = ANY(%s)", (self.project, list(ids)))
        return {row[0] for row in rows}

    def current(self, ids: Sequence[int]) -> dict[int, tuple[int, str, str, str, str | None]]:
        """(rev, topic, text, updated, the member whose change made this revision) of each fact,
        under the project's lock (see `existing`)."""
        self._lock()
        rows = self.conn.execute(
            "SELECT id, rev, topic, text, updated, changed_by FROM facts WHERE project = %s AND id = ANY(%s)",
            (self.project, list(ids)),
        )
        return {row[0]: tuple(row[1:]) for row in rows}

    def load(self, ids: Sequence[int]) -> dict[int, Fact]:
        rows = self.conn.execute(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE project = %s AND id = ANY(%s)", (self.project, list(ids))
        )
        return {row[0]: Fact(*row) for row in rows}

    def snapshot(self, fact_id: int) -> dict[str, str] | None:
        row = self.conn.execute(
            "SELECT topic, kind, text, date FROM facts WHERE project = %s AND id = %s", (self.project, fact_id)
        ).fetchone()
        return dict(zip(FIELDS, row)) if row else None

    def insert(
        self, after: dict[str, str], *, stamp: str, fact_id: int | None = None, bookkeeping: dict | None = None
    ) -> int:
        kept = bookkeeping or {}
        if fact_id is None:
            fact_id = self.conn.execute(
                "UPDATE projects SET last_fact = last_fact + 1 WHERE id = %s RETURNING last_fact", (self.project,)
            ).fetchone()[0]
        else:  # a fact restored or imported keeps its id; later ones come after it
            self.conn.execute(
                "UPDATE projects SET last_fact = greatest(last_fact, %s) WHERE id = %s", (fact_id, self.project)
            )
        rev = kept.get("rev", 1)
        self.conn.execute(
            "INSERT INTO facts (project, id, topic, kind, text, date, created, updated, confirmed, rev, changed_by, words)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::tsvector)",
            (
                self.project,
                fact_id,
                *_stored(after, kept, stamp),
                self.who.member,
                teamwords.words(after["topic"], after["text"]),
            ),
        )
        self._record("insert", fact_id, rev, None, after, stamp)
        return fact_id

    def last_id(self) -> int:
        """The highest id the project has handed out (a fact may no longer hold it)."""
        return self.conn.execute("SELECT last_fact FROM projects WHERE id = %s", (self.project,)).fetchone()[0]

    def content_digests(self) -> set[str]:
        """Each fact's topic, kind and text as one md5 digest (hex, the three joined by chr(31)),
        read in one pass: what a bulk import compares its lines with to find duplicates."""
        return {
            row[0]
            for row in self.conn.execute(
                "SELECT md5(topic || chr(31) || kind || chr(31) || text) FROM facts WHERE project = %s",
                (self.project,),
            )
        }

    def topics(self, ids: Sequence[int]) -> dict[int, str]:
        """The topic of each of `ids` a fact of the project holds."""
        return dict(
            self.conn.execute(
                "SELECT id, topic FROM facts WHERE project = %s AND id = ANY(%s)", (self.project, list(ids))
            ).fetchall()
        )

    def reserve(self, count: int, above: int = 0, given: Sequence[int] = ()) -> int:
        """Hand out `count` new ids at once, in a short transaction of its own, after lifting the
        project's last id to `above` (the highest id a bulk insert brings), so that no member's
        insert takes an id the bulk gives. Returns the first id handed out. Raises ValueError
        naming the ids of `given` a fact holds by now (taken since the caller checked them)."""
        with self.transaction():
            self._lock()
            taken = [
                row[0]
                for row in self.conn.execute(
                    "SELECT id FROM facts WHERE project = %s AND id = ANY(%s) ORDER BY id", (self.project, list(given))
                )
            ]
            if taken:
                raise ValueError(
                    f"ids {', '.join(map(str, taken[:10]))} were taken by another member's write meanwhile"
                )
            last = self.conn.execute(
                "UPDATE projects SET last_fact = greatest(last_fact, %s) + %s WHERE id = %s RETURNING last_fact",
                (above, count, self.project),
            ).fetchone()[0]
        return last - count + 1

    def insert_many(
        self, rows: Iterable[tuple[int, dict, dict, dict]], *, stamp: str, progress=None, batch: int | None = None
    ) -> int:
        """Insert facts in bulk, each with its change in the record: rows of (id, after, kept,
        line), `kept` the fact's created, updated, confirmed and rev, `line` its change's line (the
        member is set here). The ids are the caller's (`reserve`). The rows go first, with COPY,
        into a temporary table of this connection, holding no lock on anything shared; then into
        facts and changes `batch` at a time, each batch one transaction under the project's lock,
        whole or not there. Interrupted, the batches before stay, each fact with its change.
        `progress(done)` is called after each batch. Returns how many facts went in."""
        member, batch = self.who.member, batch or BATCH
        with self.transaction():
            self.conn.execute("SET LOCAL statement_timeout = 0")  # a person waits; nothing shared is held
            self.conn.execute(
                "CREATE TEMP TABLE IF NOT EXISTS memory_gate_incoming (n bigint PRIMARY KEY, id bigint, topic text,"
                " kind text, text text, date text, created text, updated text, confirmed text, rev integer,"
                " words text, after jsonb, line jsonb)"
            )
            self.conn.execute("TRUNCATE memory_gate_incoming")
            count = 0
            with (
                self.conn.cursor() as cursor,
                cursor.copy(
                    "COPY memory_gate_incoming (n, id, topic, kind, text, date, created, updated, confirmed, rev, words,"
                    " after, line) FROM STDIN"
                ) as copy,
            ):
                for fact_id, after, kept, line in rows:
                    copy.write_row(
                        (
                            count,
                            fact_id,
                            *_stored(after, kept, stamp),
                            teamwords.words(after["topic"], after["text"]),
                            json.dumps(after, ensure_ascii=False),
                            json.dumps({**line, "member": member}, ensure_ascii=False),
                        )
                    )
                    count += 1
        done = 0
        try:
            while done < count:
                for attempt in range(BATCH_TRIES):
                    try:
                        self._insert_batch(done, done + batch, stamp)
                        break
                    except postgres.Held:
                        if attempt == BATCH_TRIES - 1:
                            raise
                done = min(done + batch, count)
                if progress is not None:
                    progress(done)
        finally:
            if not self.conn.closed and not self.conn.broken:
                with contextlib.suppress(Exception), self.transaction():
                    self.conn.execute("DROP TABLE IF EXISTS memory_gate_incoming")
        return done

    def _insert_batch(self, start: int, end: int, stamp: str) -> None:
        with self.transaction():
            self._lock()
            self.conn.execute(
                "INSERT INTO facts (project, id, topic, kind, text, date, created, updated, confirmed, rev, changed_by, words)"
                " SELECT %s, id, topic, kind, text, date, created, updated, confirmed, rev, %s, words::tsvector"
                " FROM memory_gate_incoming WHERE n >= %s AND n < %s ORDER BY n",
                (self.project, self.who.member, start, end),
            )
            self.conn.execute(
                "INSERT INTO changes (project, fact, op, rev, before, after, member, session, tool_use_id, at, line)"
                " SELECT %s, id, 'insert', rev, NULL, after, %s, %s, %s, %s, line"
                " FROM memory_gate_incoming WHERE n >= %s AND n < %s ORDER BY n",
                (self.project, self.who.member, self.who.session, self.who.tool_use_id, stamp, start, end),
            )

    def _lock(self) -> None:
        """The project's row, first: every change of a project takes it before any fact's row
        (and the counters' trigger after it, schema-postgres.sql section 2), so that two members'
        writes of several facts wait for each other and never deadlock. Taken before any change's
        seq is drawn, so a project's changes commit in seq order: each member's mirror of the
        words (gate.search.mirror) catches up by seq and relies on it."""
        self.conn.execute("SELECT 1 FROM projects WHERE id = %s FOR UPDATE", (self.project,))

    def update(self, fact_id: int, before: dict[str, str], after: dict[str, str], *, stamp: str) -> None:
        self._lock()
        row = self.conn.execute(
            "UPDATE facts SET topic = %s, kind = %s, text = %s, date = %s, updated = %s, confirmed = %s,"
            " rev = rev + 1, changed_by = %s, words = %s::tsvector WHERE project = %s AND id = %s RETURNING rev",
            (
                after["topic"],
                after["kind"],
                after["text"],
                after["date"],
                stamp,
                stamp,
                self.who.member,
                teamwords.words(after["topic"], after["text"]),
                self.project,
                fact_id,
            ),
        ).fetchone()
        if row is not None:
            self._record("update", fact_id, row[0], before, after, stamp)

    def delete(self, fact_id: int, before: dict[str, str], *, stamp: str) -> None:
        self._lock()
        row = self.conn.execute(
            "DELETE FROM facts WHERE project = %s AND id = %s RETURNING rev", (self.project, fact_id)
        ).fetchone()
        if row is not None:
            self._record("delete", fact_id, row[0], before, None, stamp)

    def confirm(self, fact_id: int, *, stamp: str) -> None:
        """Someone looked at the fact and it holds: not a change, so nothing is recorded."""
        self.conn.execute(
            "UPDATE facts SET confirmed = %s WHERE project = %s AND id = %s", (stamp, self.project, fact_id)
        )

    def _record(self, op: str, fact_id: int, rev: int, before: dict | None, after: dict | None, stamp: str) -> None:
        seq = self.conn.execute(
            "INSERT INTO changes (project, fact, op, rev, before, after, member, session, tool_use_id, at)"
            " VALUES (%s, %s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s, %s) RETURNING seq",
            (
                self.project,
                fact_id,
                op,
                rev,
                None if before is None else json.dumps(before, ensure_ascii=False),
                None if after is None else json.dumps(after, ensure_ascii=False),
                self.who.member,
                self.who.session,
                self.who.tool_use_id,
                stamp,
            ),
        ).fetchone()[0]
        self._unlined.append((seq, fact_id, op))

    def revisions(self, ids: Iterable[int]) -> dict[int, int]:
        """The revision now of each of `ids` the project holds."""
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        return dict(
            self.conn.execute(
                "SELECT id, rev FROM facts WHERE project = %s AND id = ANY(%s)", (self.project, wanted)
            ).fetchall()
        )

    def lines_of_write(self, write_id: str) -> list[dict]:
        """The lines of the changes write `write_id` made, in order; none if it never committed."""
        return [
            line
            for (line,) in self.conn.execute(
                "SELECT line FROM changes WHERE project = %s AND line->>'write' = %s ORDER BY seq",
                (self.project, write_id),
            )
        ]

    def record_lines(self, entries: Sequence[dict]) -> None:
        """Give the changes just recorded their lines, as write.log would hold them (the change
        set's, gate.memory.changeset), with the member: in the caller's transaction, in the
        order the changes were made. A line whose change made no row (a fact gone meanwhile)
        is dropped, as no change."""
        rows = []
        for entry in entries:
            while self._unlined and (self._unlined[0][1], self._unlined[0][2]) != (entry.get("id"), entry.get("op")):
                self._unlined.pop(0)  # a change with no line: never, but never paired with the wrong one
            if not self._unlined:
                break
            seq = self._unlined.pop(0)[0]
            rows.append((json.dumps({**entry, "member": self.who.member}, ensure_ascii=False), self.project, seq))
        if rows:
            with self.conn.cursor() as cursor:
                cursor.executemany("UPDATE changes SET line = %s::jsonb WHERE project = %s AND seq = %s", rows)


def _stored(after: dict, kept: dict, stamp: str) -> tuple:
    """A fact's row from topic to rev, as insert and insert_many store it: its fields, and the
    bookkeeping it keeps (an import's, a restore's) or this change's stamp and revision 1."""
    return (
        after["topic"],
        after["kind"],
        after["text"],
        after["date"],
        kept.get("created", stamp),
        kept.get("updated", stamp),
        kept.get("confirmed", stamp),
        kept.get("rev", 1),
    )
