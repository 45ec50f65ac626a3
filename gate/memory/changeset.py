"""A change set: the one path every change to the facts takes, whoever makes it.

memory_write (gate.memory.write), `memory-gate undo` and `memory-gate import` all change facts through
a ChangeSet, inside a write transaction their caller opened. Each insert, update and delete
happens here together with its write.log line, and `finish` keeps the rules of gate.memory.audit for
all of them: it brings the vectors of the changed facts up to date, records the write in `writes`
(with the number of lines it logged), and appends and fsyncs the lines, all before the caller
commits. So a committed change never lacks its line, and a line whose write id `writes` does not
know never committed.

A change set may hold more lines than fit comfortably in memory (an import of 100k facts): lines
are appended in batches as they accumulate. That is safe for the same reason as the order above: a
line is only history once its write commits, and until then it reads as never committed.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import apsw

from gate import clock, credentials
from gate.engine import store
from gate.engine.facts import FIELDS, LocalFacts
from gate.memory import audit, ledger
from gate.search import embeddings, vectors

# Lines buffered before they are appended (and fsynced): a few hundred kilobytes at most.
FLUSH_LINES = 1000
# Fact ids per vectors.sync call, under SQLite's limit on bound parameters.
SYNC_BATCH = 500
# Who changes memory by hand, as write.log and `writes` name it: the command line, and the page
# of `memory-gate view`. Their turns are not the agent's: stats leaves them out.
CLI_SESSION = "cli"
VIEWER_SESSION = "viewer"
HAND_SESSIONS = (CLI_SESSION, VIEWER_SESSION)
BOOKKEEPING = ("created", "updated", "confirmed", "rev")


class Facts(Protocol):
    """The engine's side of a change: LocalFacts (gate.engine.facts) or TeamFacts
    (gate.engine.teamfacts), inside the caller's transaction."""

    def transaction(self) -> Any: ...
    def existing(self, ids: Any) -> set[int]: ...
    def current(self, ids: Any) -> dict[int, tuple[int, str, str, str, str | None]]: ...

    def snapshot(self, fact_id: int) -> dict[str, str] | None: ...
    def insert(
        self, after: dict[str, str], *, stamp: str, fact_id: int | None = None, bookkeeping: dict | None = None
    ) -> int: ...
    def update(self, fact_id: int, before: dict[str, str], after: dict[str, str], *, stamp: str) -> None: ...
    def delete(self, fact_id: int, before: dict[str, str], *, stamp: str) -> None: ...
    def confirm(self, fact_id: int, *, stamp: str) -> None: ...
    def record_lines(self, entries: Any) -> None: ...
    def revisions(self, ids: Any) -> dict[int, int] | None: ...

    # A team's only, so not here: TeamFacts.lines_of_write (a write's lines, to settle a write
    # the ledger missed: gate.memory.pending).


class Vectors(Protocol):
    """What keeps the changed facts' vectors (a store's Index): `sync` inside the change's transaction."""

    def sync(self, ids: list[int], ahead: vectors.Prepared | None) -> None: ...


@dataclass(frozen=True)
class Author:
    """Who makes a write, as write.log names it: the session, the turn, and the owner's words."""

    session: str
    turn: str
    words: str | None


def author(turn: ledger.Turn) -> Author:
    """The author of the changes a turn makes: its session, its turn as write.log names it (a
    server turn has no prompt id), and its words, credentials redacted (a turn stored before
    the ledger redacted them may still hold some)."""
    return Author(turn.session, turn.prompt_id or f"server:{turn.id}", credentials.redact(turn.prompt))


def cli_turn(conn: apsw.Connection, command: str, session: str = CLI_SESSION) -> ledger.Turn:
    """A turn of a hand session (the command line's, or the viewer's), whose words are the
    command as it was typed: the "why" of a change made by hand. Inside the caller's transaction."""
    return ledger.open_turn(conn, session, f"{session}-{uuid.uuid4().hex[:12]}", command)


class ChangeSet:
    """Changes to facts made in one write, each logged; `finish` before the caller's COMMIT.

    `facts` and `index` (what keeps their vectors) default to the local memory `conn`'s; a
    store's change set (gate.memory.stores, Store.change_set) gives its own, and another engine's
    facts want their index with them (a change set without one keeps only the local file's
    vectors)."""

    def __init__(
        self,
        conn: apsw.Connection,
        author: Author,
        log: Path | None,
        facts: Facts | None = None,
        *,
        write_id: str | None = None,
        index: Vectors | None = None,
    ):
        self.conn, self.author, self.log = conn, author, log
        # Where the facts are changed, and what keeps their vectors: the local memory's own table
        # and vectors unless told (a store's, gate.memory.stores, tells both).
        self.facts: Facts = facts if facts is not None else LocalFacts(conn)
        self.index: Vectors = index if index is not None else FileVectors(conn)
        self.write_id = write_id or uuid.uuid4().hex
        self.stamp = clock.now()
        self.changed: list[int] = []
        self.logged = 0
        self._pending: list[dict] = []

    # -- reading -------------------------------------------------------------------------------

    def snapshot(self, fact_id: int) -> dict[str, str] | None:
        """The fact's topic, kind, text and date, as write.log records a version; None if gone."""
        return self.facts.snapshot(fact_id)

    # -- changing ------------------------------------------------------------------------------

    def insert(
        self,
        fields: dict[str, str],
        *,
        fact_id: int | None = None,
        bookkeeping: dict[str, Any] | None = None,
        extra: dict | None = None,
    ) -> int:
        """A new fact (topic, kind, text, date). `fact_id` gives it that id (a fact restored, or
        imported), else the next one. Without `bookkeeping` it is created, updated and confirmed
        now at revision 1; with it (created, updated, confirmed, rev), those are kept and the line
        records them, so that history can tell what the fact was."""
        after = {name: fields[name] for name in FIELDS}
        fact_id = self.facts.insert(after, stamp=self.stamp, fact_id=fact_id, bookkeeping=bookkeeping)
        if bookkeeping:
            extra = {**(extra or {}), "bookkeeping": {name: bookkeeping[name] for name in BOOKKEEPING}}
        self._line("insert", fact_id, None, after, extra)
        return fact_id

    def update(self, fact_id: int, before: dict[str, str], after: dict[str, str], *, extra: dict | None = None) -> None:
        """The fact now reads `after` (it read `before`): a new revision, changed and confirmed now."""
        self.facts.update(fact_id, before, after, stamp=self.stamp)
        self._line("update", fact_id, before, after, extra)

    def delete(self, fact_id: int, before: dict[str, str], *, extra: dict | None = None) -> None:
        self.facts.delete(fact_id, before, stamp=self.stamp)
        self._line("delete", fact_id, before, None, extra)

    def confirm(self, fact_id: int) -> None:
        """Someone looked at the fact and it holds: not a change, so nothing is logged."""
        self.facts.confirm(fact_id, stamp=self.stamp)

    def insert_many(self, rows: Iterable[tuple[int, dict[str, str], dict[str, Any] | None]], *, progress=None) -> int:
        """Facts inserted in bulk on a team (an import): rows of (id, fields, bookkeeping or None),
        the ids handed out by the caller (TeamFacts.reserve). Each fact's line goes with it into
        the team's record, in batches (TeamFacts.insert_many); returns how many went in."""

        def lines():
            for fact_id, fields, bookkeeping in rows:
                after = {name: fields[name] for name in FIELDS}
                extra = {"bookkeeping": {name: bookkeeping[name] for name in BOOKKEEPING}} if bookkeeping else None
                self.changed.append(fact_id)
                self.logged += 1
                yield fact_id, after, bookkeeping or {}, self._entry("insert", fact_id, None, after, extra)

        # Only a team's facts (gate.engine.teamfacts) take a bulk insert; the caller asked for one there.
        return self.facts.insert_many(lines(), stamp=self.stamp, progress=progress)  # type: ignore[attr-defined]

    def _line(self, op: str, fact_id: int, before: dict | None, after: dict | None, extra: dict | None) -> None:
        self.changed.append(fact_id)
        self.logged += 1
        self._pending.append(self._entry(op, fact_id, before, after, extra))
        if len(self._pending) >= FLUSH_LINES:
            self._flush()

    def _entry(self, op: str, fact_id: int, before: dict | None, after: dict | None, extra: dict | None) -> dict:
        """A change's line, as write.log and a team's record hold it."""
        current = after or before or {}
        entry = {
            "time": self.stamp,
            "write": self.write_id,
            "op": op,
            "id": fact_id,
            "topic": current.get("topic"),
            "kind": current.get("kind"),
        }
        if before is not None:
            entry["before"] = before
        if after is not None:
            entry["after"] = after
        entry |= {"session": self.author.session, "turn": self.author.turn, "words": self.author.words}
        if extra:
            entry |= extra
        return entry

    def flush(self) -> None:
        """Record the changes' lines so far: in write.log, or a team's record (finish does too)."""
        self._flush()

    def _flush(self) -> None:
        if self.log is not None:
            audit.append(self.log, self._pending)
        if self._pending:
            self.facts.record_lines(self._pending)  # a team's `changes` rows; locally nothing (write.log is it)
        self._pending = []

    # -- finishing -----------------------------------------------------------------------------

    def finish(
        self,
        turn: ledger.Turn,
        *,
        digest: str,
        answer: str,
        ahead: vectors.Prepared | None = None,
        sync: Iterable[int] | None = None,
        tool_use_id: str | None = None,
    ) -> None:
        """Vectors, the `writes` row and the log lines: the last steps before the caller commits.

        `sync` lists the facts whose vectors to bring up to date (default: those changed here),
        `ahead` the vectors asked for before the transaction (see `embed_ahead`). A change set
        that changed nothing and is not a memory_write (an import of duplicates only) need not
        be finished: it recorded nothing."""
        revisions = self._settle(turn, ahead, sync)
        self.record(turn, revisions, digest=digest, answer=answer, tool_use_id=tool_use_id)
        self._flush()

    def finish_facts(
        self, turn: ledger.Turn, *, ahead: vectors.Prepared | None = None, sync: Iterable[int] | None = None
    ) -> dict[int, int] | None:
        """The facts' part of `finish`, in the facts' transaction and nothing of the ledger's:
        the vectors and the changes' lines. Returns the revision now of each fact the turn read
        (None: the ledger reads them from the same file), which `record` then gives the ledger
        (a memory_write to a store whose facts commit apart from the ledger records it in a
        ledger transaction of its own, after the facts' commit: gate.memory.write)."""
        revisions = self._settle(turn, ahead, sync)
        self._flush()
        return revisions

    def _settle(
        self, turn: ledger.Turn, ahead: vectors.Prepared | None, sync: Iterable[int] | None
    ) -> dict[int, int] | None:
        """The changed facts' vectors brought up to date, and the revisions of the facts the turn read."""
        self.index.sync(list(self.changed if sync is None else sync), ahead)
        return self.facts.revisions(ledger.read_ids(self.conn, turn.id))

    def record(
        self, turn: ledger.Turn, revisions: dict[int, int] | None, *, digest: str, answer: str, tool_use_id: str | None
    ) -> None:
        """The ledger's part of `finish`: the turn's reads answered, at `revisions` where the facts
        are a team's, and the `writes` row; in the ledger's transaction."""
        seq = ledger.record_write(self.conn, turn, revisions)
        self.conn.execute(
            "INSERT INTO writes (id, session, turn, seq, tool_use_id, digest, changes, answer, at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (self.write_id, turn.session, turn.id, seq, tool_use_id, digest, self.logged, answer, clock.now()),
        )


class FileVectors:
    """A local memory's vectors (sqlite-vec), kept in the caller's write transaction."""

    def __init__(self, conn: apsw.Connection):
        self.conn = conn

    def sync(self, ids: list[int], ahead: vectors.Prepared | None) -> None:
        for start in range(0, max(len(ids), 1), SYNC_BATCH):
            vectors.sync(self.conn, ids[start : start + SYNC_BATCH], ahead)


def embed_ahead(
    conn: apsw.Connection, endpoint: embeddings.Endpoint, texts: list[str], touched: Iterable[int]
) -> vectors.Prepared | None:
    """Embed, in one request and before the transaction (never under the write lock), the texts a
    write will store (vectors.fact_text of each) and a few facts still waiting for a vector."""
    if not store.vectors_loaded(conn):
        return None
    skip = set(touched)
    waiting = [(fact, text) for fact, text in vectors.waiting(conn) if fact not in skip]
    return vectors.prepare(endpoint, texts + [text for _, text in waiting], [fact for fact, _ in waiting])
