"""The project's memory as one gate.engine.seam.Store, on either engine: `LocalStore` (a SQLite
file and its write.log) and `TeamStore` (a team's project on PostgreSQL, through its TeamFacts).

Each puts its engine's parts together (facts, listing, the record of changes, the index) and
holds no algorithm of its own: callers (gate.cli, gate.view, gate.memory.undo, gate.memory.transfer)
take a Store and never ask which engine it is.

A change made by hand (`memory-gate undo`, an edit, delete or undo on the page) goes through
`by_hand`: locally one write transaction of the file holds the turn, the change and its line; on
a team, the member's ledger lock is never held while the team's transaction waits on the network
(see TeamStore.by_hand for why the order of its three transactions is safe).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from gate.engine import store
from gate.engine.facts import LocalFacts, load_facts
from gate.engine.listing import PostgresListing, SqliteListing
from gate.memory import changeset, record
from gate.search import lookup

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gate.engine.teamfacts import TeamFacts
    from gate.search.matrix import Matrix


class LocalStore:
    """A local memory: the SQLite file `conn`, its changes logged in write.log (`log`)."""

    shared = False
    # The facts and the turn ledger are one file: a write is one transaction.
    commits_apart = False

    def __init__(self, conn: apsw.Connection, log: Path | None, matrix: Matrix | None = None):
        # `matrix`: the copy of the vectors its opener keeps (gate.search.matrix), so that the
        # command line and the page rank by meaning exactly as memory_search does at any size.
        self.conn, self.log, self.matrix = conn, log, matrix
        self.facts = LocalFacts(conn)
        self.listing = SqliteListing(conn)
        self.index = LocalIndex(conn)

    @property
    def record(self) -> record.LogRecord:
        assert self.log is not None, "a local memory's record is its write.log"
        return record.LogRecord(self.conn, self.log)

    def transaction(self):
        """The engine's transaction around changes: the caller's write transaction is it."""
        return contextlib.nullcontext()

    def reading(self):
        """One snapshot for a read of many statements (export's count and rows)."""
        return store.writing(self.conn, lock=False)

    def snapshot(self, fact_id: int) -> dict[str, str] | None:
        return self.facts.snapshot(fact_id)

    def change_set(
        self, conn: apsw.Connection, author: changeset.Author, *, write_id: str | None = None
    ) -> changeset.ChangeSet:
        return changeset.ChangeSet(conn, author, self.log, self.facts, write_id=write_id, index=self.index)

    @property
    def search(self) -> lookup.LocalSearch:
        return lookup.LocalSearch(self.conn, self.matrix)

    def import_rows(self, conn: apsw.Connection, result: Any, **options: Any) -> Any:
        """`memory-gate import`'s checked lines into the file, in one write transaction
        (gate.memory.transfer.import_rows_into_file)."""
        from gate.memory import transfer

        return transfer.import_rows_into_file(conn, self, result, **options)

    @contextlib.contextmanager
    def by_hand(self, conn: apsw.Connection, words: str, session: str) -> Iterator[HandChange]:
        """A change by hand in one write transaction of the file (`conn`, this memory's own): the
        turn of `session` whose words are `words`, the change, its write.log line and its
        `writes` row commit together, or none of them."""
        with store.writing(conn):
            turn = changeset.cli_turn(conn, words, session)
            yield HandChange(self.change_set(conn, changeset.author(turn)), turn)


class TeamStore:
    """A team's project (`facts`, a TeamFacts), its record the team's `changes` table."""

    shared = True
    log = None
    # The facts are the team database's, the turn ledger the member's file: a write commits the
    # facts first and then the ledger, in phases (gate.memory.write), never holding the ledger's
    # lock while the team answers.
    commits_apart = True

    def __init__(self, facts: TeamFacts):
        self.facts = facts
        self.listing = PostgresListing(facts)
        self.record = record.TeamRecord(facts)
        self.index = TeamIndex(facts)

    def transaction(self):
        return self.facts.transaction()

    def reading(self):
        """Each list reads in a snapshot of its own (gate.engine.listing.PostgresListing)."""
        return contextlib.nullcontext()

    def snapshot(self, fact_id: int) -> dict[str, str] | None:
        with self.facts.transaction():
            return self.facts.snapshot(fact_id)

    def change_set(
        self, conn: apsw.Connection, author: changeset.Author, *, write_id: str | None = None
    ) -> changeset.ChangeSet:
        return changeset.ChangeSet(conn, author, None, self.facts, write_id=write_id, index=self.index)

    @property
    def search(self) -> lookup.TeamSearch:
        return lookup.TeamSearch(self.facts)

    def import_rows(self, conn: apsw.Connection, result: Any, **options: Any) -> Any:
        """`memory-gate import`'s checked lines (held in the member's ledger, `conn`) into the
        project in batches, never holding the ledger's lock while the team answers
        (gate.memory.teamimport)."""
        from gate.memory import teamimport

        return teamimport.import_rows(conn, self, self.facts, result, **options)

    @contextlib.contextmanager
    def by_hand(self, conn: apsw.Connection, words: str, session: str) -> Iterator[TeamHandChange]:
        """A change by hand to the team's project, in three transactions, none holding the lock
        of the member's ledger (`conn`) while the network answers:

        1. a short ledger transaction opens the turn (`session`, `words`);
        2. the team's transaction checks and makes the change, with its line in the team's
           record and the vectors (`HandChange.finish`), and commits;
        3. once the team has committed, a short ledger transaction records the write.

        The order is safe. Killed between 1 and 3, the ledger holds a turn of a hand session
        with no write (hand sessions count in no figure: gate.memory.stats) and the team the
        change or not; the ledger never records a write the team did not commit, and the team's
        record says who changed what either way. Nothing is applied twice: a change by hand is
        never sent again by itself, and the same one run again is refused (an undo: the fact's
        latest change is now the undo; an edit or delete: the fact's revision moved on). A change
        refused or failed in 2 rolls back on the team and records nothing in 3."""
        with store.writing(conn):
            turn = changeset.cli_turn(conn, words, session)
        hand = TeamHandChange(self.change_set(conn, changeset.author(turn)), turn)
        with self.facts.transaction():
            yield hand
        if hand.recorded is not None:
            revisions, digest, answer = hand.recorded
            with store.writing(conn):
                hand.changes.record(turn, revisions, digest=digest, answer=answer, tool_use_id=None)


@dataclass(frozen=True)
class Ahead:
    """What a write reads before it embeds ahead of its transaction (Index.before_write): the
    topic and text now of the facts whose words it changes, and the facts waiting for a vector
    (id, text) its request takes along."""

    current: dict[int, tuple[str, str]]
    riding: list[tuple[int, str]]


class HandChange:
    """A change by hand under way (Store.by_hand): its change set and turn. `finish` as
    ChangeSet.finish, last, inside the change's transaction."""

    def __init__(self, changes: changeset.ChangeSet, turn: Any):
        self.changes, self.turn = changes, turn

    def finish(self, *, digest: str, answer: str, ahead: Any = None) -> None:
        self.changes.finish(self.turn, digest=digest, answer=answer, ahead=ahead)


class TeamHandChange(HandChange):
    """A change by hand to a team's project: `finish` does the team's part (the vectors, the
    record's lines) in the team's transaction, and keeps the ledger's (the `writes` row) for
    TeamStore.by_hand to record once the team has committed."""

    def __init__(self, changes: changeset.ChangeSet, turn: Any):
        super().__init__(changes, turn)
        self.recorded: tuple[dict[int, int] | None, str, str] | None = None

    def finish(self, *, digest: str, answer: str, ahead: Any = None) -> None:
        self.recorded = (self.changes.finish_facts(self.turn, ahead=ahead), digest, answer)


class LocalIndex:
    """The local memory's word index (FTS5) and vectors (sqlite-vec)."""

    def __init__(self, conn: apsw.Connection):
        self.conn = conn

    # A command embeds the facts waiting for a vector itself (after an import): nobody else will.
    embeds_waiting = True

    def prepare(self) -> bool:
        """Load sqlite-vec, so that vectors are kept in step and search has meaning; whether it loaded."""
        return store.load_vectors(self.conn)

    def embed_waiting(self, endpoint: Any, *, progress: Any = None) -> tuple[int, int]:
        """Embed every fact waiting for a vector: (embedded, still waiting)."""
        from gate.memory import transfer

        return transfer.embed_waiting(self.conn, endpoint, progress=progress)

    def embed_ahead(self, endpoint: Any, texts: list[str], touched: Sequence[int]) -> Any:
        return changeset.embed_ahead(self.conn, endpoint, texts, touched)

    def before_write(self, retexted: list[int], touched: set[int]) -> Ahead | None:
        """What a write embeds ahead of its transaction reads first (None without sqlite-vec)."""
        from gate.search import vectors

        if not store.vectors_loaded(self.conn):
            return None
        current = {fact.id: (fact.topic, fact.text) for fact in load_facts(self.conn, retexted).values()}
        riding = [(fact, text) for fact, text in vectors.waiting(self.conn) if fact not in touched]
        return Ahead(current, riding)

    def sync(self, ids: list[int], ahead: Any) -> None:
        """The changed facts' vectors up to date, in the write's transaction."""
        changeset.FileVectors(self.conn).sync(ids, ahead)

    def rebuild_words(self) -> int:
        """Rebuild the FTS5 index from the facts; how many facts it holds."""
        from gate.search import fulltext

        with store.writing(self.conn):
            fulltext.rebuild_words(self.conn)
        return self.conn.execute("SELECT count(*) FROM facts").get

    def rebuild_vectors(self, endpoint: Any, progress: Any) -> Any:
        """Every fact's vector again (gate.search.backfill); a StoreError when sqlite-vec is missing."""
        from gate.search import backfill

        store.require_vectors(self.conn)
        return backfill.rebuild(self.conn, endpoint, progress=progress)


class TeamIndex:
    """A team's word index (the facts' tsvector) and vectors (pgvector)."""

    def __init__(self, facts: TeamFacts):
        self.facts = facts

    # The facts waiting for a vector are embedded by the members' servers as they catch up
    # (gate.search.teamvectors.catch_up), not by the command that imported them.
    embeds_waiting = False

    def prepare(self) -> bool:
        """Nothing to load: pgvector is the server's."""
        return True

    def embed_waiting(self, endpoint: Any, *, progress: Any = None) -> tuple[int, int]:
        raise NotImplementedError("a team's facts are embedded as its members' servers catch up")

    def embed_ahead(self, endpoint: Any, texts: list[str], touched: Sequence[int]) -> Any:
        from gate.search import teamvectors

        return teamvectors.embed_ahead(self.facts, endpoint, texts, list(touched))

    def before_write(self, retexted: list[int], touched: set[int]) -> Ahead | None:
        """What a write embeds ahead reads first, in a team transaction of its own before the
        write's (None without pgvector)."""
        from gate.search import teamvectors

        with self.facts.transaction():
            if not teamvectors.available(self.facts):
                return None
            found = self.facts.load(retexted).values() if retexted else []
            current = {fact.id: (fact.topic, fact.text) for fact in found}
            riding = [(fact, text) for fact, text in teamvectors.waiting(self.facts) if fact not in touched]
        return Ahead(current, riding)

    def sync(self, ids: list[int], ahead: Any) -> None:
        """The changed facts' vectors (pgvector's) up to date, in the team's transaction."""
        from gate.search import teamvectors

        teamvectors.sync(self.facts, ids, ahead)

    def rebuild_words(self) -> int:
        from gate.search import team

        return team.rebuild_words(self.facts)

    def rebuild_vectors(self, endpoint: Any, progress: Any) -> Any:
        from gate.search import teamvectors

        return teamvectors.rebuild(self.facts, endpoint, progress=progress)
