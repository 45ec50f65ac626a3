"""What a memory store does, on either engine: the seam SQLite (a local memory) and PostgreSQL
(a team's) both implement, as typed interfaces.

A store holds facts (`Facts`, the five operations a change set changes them with), keeps the
record of their changes (`Record`: write.log locally, the `changes` table on a team), lists them
for people (`Listing`), keeps them findable by words and meaning (`Index`: its word index and
vectors); gate.memory.transfer copies any store's facts out. The engines own their SQL and their connections
(gate.engine.facts and gate.engine.teamfacts, gate.engine.listing, gate.engine.store and
gate.engine.postgres); gate.memory.stores puts each engine's parts together as one `Store`,
and gate.memory.opening opens the project's. Everything above (ranking, catch-up, export and
import, undo, listing, the command line, the page, the server) takes a `Store` and never asks
which engine it is: tests/test_seam.py fails on a module outside the engine that does.

What a person is told may differ on a team (whose memory it is, where its changes are
recorded): a store says so by `shared` and `where`, capabilities, not the engine's name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from gate.engine.facts import Fact


class Facts(Protocol):
    """The engine's side of a change: LocalFacts (gate.engine.facts) or TeamFacts
    (gate.engine.teamfacts), inside the caller's transaction."""

    def transaction(self) -> AbstractContextManager[Any]: ...
    def existing(self, ids: Sequence[int]) -> set[int]: ...
    def current(self, ids: Sequence[int]) -> dict[int, tuple[int, str, str, str, str | None]]: ...
    def snapshot(self, fact_id: int) -> dict[str, str] | None: ...
    def insert(
        self, after: dict[str, str], *, stamp: str, fact_id: int | None = None, bookkeeping: dict | None = None
    ) -> int: ...
    def update(self, fact_id: int, before: dict[str, str], after: dict[str, str], *, stamp: str) -> None: ...
    def delete(self, fact_id: int, before: dict[str, str], *, stamp: str) -> None: ...
    def confirm(self, fact_id: int, *, stamp: str) -> None: ...
    def record_lines(self, entries: Sequence[dict]) -> None:
        """The changes' lines into the engine's record of them (a team's `changes`; nothing
        locally, where the change set appends them to write.log)."""

    def revisions(self, ids: Iterable[int]) -> dict[int, int] | None:
        """The revision now of each of `ids`, for the ledger of a turn that read them (None: the
        ledger's own file holds the facts and reads them itself)."""


class Listing(Protocol):
    """Facts listed for people (gate.engine.listing: SqliteListing, PostgresListing)."""

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
        """Facts, the most recently changed (or created) first. `topic`: the topic holds these
        letters (any case); `kind`: exactly this kind; `since`: changed on or after this day;
        `unconfirmed_before`: no turn kept or updated it since this ledger time
        (gate.memory.listing.cutoff); `topic_words`: the topic holds words starting so
        (gate.engine.listing.topic_match); `offset`: skip that many (a page further down)."""

    def count(
        self,
        *,
        topic: str | None = None,
        kind: str | None = None,
        since: str | None = None,
        unconfirmed_before: str | None = None,
        topic_words: str | None = None,
    ) -> int: ...
    def unconfirmed(self, before: str, *, limit: int | None = None) -> Iterator[Fact]: ...
    def count_unconfirmed(self, before: str) -> int: ...
    def kinds(self) -> dict[str, int]: ...
    def load(self, ids: Sequence[int]) -> dict[int, Fact]: ...
    def export_rows(self, columns: Sequence[str]) -> Iterator[tuple]: ...


class Record(Protocol):
    """The record of a memory's changes (gate.memory.record: LogRecord, TeamRecord). Its
    entries are write.log's shape; `changes` yields gate.memory.history.Change."""

    where: str  # as a person is told: "write.log", or "the team's record"

    def entries(
        self, *, fact: int | None = None, session: str | None = None, since: str | None = None
    ) -> Iterator[dict]: ...
    def changes(self, fact_id: int) -> Iterator[Any]: ...
    def never_committed(self, prefix: str, fact_id: int) -> bool: ...
    def unproven(self, line: Any) -> str | None: ...


Progress = Callable[[int, int], None]


class Index(Protocol):
    """What keeps facts findable: the word index and the vectors (gate.search: vectors and
    fulltext locally, teamvectors and team on PostgreSQL)."""

    @property
    def embeds_waiting(self) -> bool:
        """Whether a command embeds the facts waiting for a vector itself (embed_waiting), or the
        engine's catch-up does."""

    def prepare(self) -> bool: ...
    def embed_waiting(self, endpoint: Any, *, progress: Any = None) -> tuple[int, int]: ...
    def embed_ahead(self, endpoint: Any, texts: list[str], touched: Sequence[int]) -> Any: ...
    def before_write(self, retexted: list[int], touched: set[int]) -> Any:
        """What a memory_write reads before it embeds ahead of its transaction: the topic and
        text now of the facts it rewords, and the facts waiting for a vector it takes along
        (gate.memory.stores.Ahead), or None when the store keeps no vectors."""

    def sync(self, ids: list[int], ahead: Any) -> None:
        """Bring the changed facts' vectors up to date, inside the change's transaction."""

    def rebuild_words(self) -> int: ...
    def rebuild_vectors(self, endpoint: Any, progress: Any) -> Any: ...


class VectorIndex(Protocol):
    """A memory's vectors as the catch-up keeps them (gate.search.backfill.catch_up_in, one loop
    for both engines): what waits for a vector, and storing what the endpoint answered.
    gate.search.backfill.LocalVectors (sqlite-vec), gate.search.teamvectors.TeamVectors
    (pgvector); `prepared` and `answer` are gate.search.vectors.Prepared and embeddings.Vectors."""

    # What storing a vector can meet that leaves memory searchable (a read-only or full disk).
    faults: tuple[type[Exception], ...]

    def reading(self) -> AbstractContextManager[Any]: ...
    def changing(self) -> AbstractContextManager[Any]: ...
    def available(self) -> bool: ...
    def waiting(self, *, limit: int, chars: int, after: int | None = None) -> list[tuple[int, str]]: ...
    def missing(self) -> int: ...
    def owed(self, ids: list[int]) -> set[int]: ...
    # Rebuilding (gate.search.backfill.rebuild_in): every fact embedded again.
    def require(self) -> None: ...
    def count(self) -> int: ...
    def first(self, batch: int) -> list[tuple[int, str]]: ...
    def forget(self) -> None: ...
    def finish(self, endpoint: Any, batch: int, timeout: float) -> Any: ...
    def sync(self, ids: list[int], prepared: Any) -> int: ...
    def settle(self, hold: Callable[[], AbstractContextManager[Any]]) -> None: ...
    def needs_reference(self) -> bool: ...
    def store_reference(self, answer: Any) -> bool: ...


class Store(Protocol):
    """A memory: its facts, their record, their lists, their index, and its copy out."""

    @property
    def shared(self) -> bool:
        """A team's: memory other members change too (what a person is told differs)."""

    @property
    def commits_apart(self) -> bool:
        """The facts commit in a transaction of their own, apart from the turn ledger's (another
        database): a memory_write then goes in phases (gate.memory.write), else in one."""

    @property
    def log(self) -> Path | None:
        """write.log, where a change set logs each change (None: the record is the engine's)."""

    @property
    def facts(self) -> Facts: ...
    @property
    def listing(self) -> Listing: ...
    @property
    def record(self) -> Record: ...
    @property
    def index(self) -> Index: ...

    def transaction(self) -> AbstractContextManager[Any]: ...
    def reading(self) -> AbstractContextManager[Any]: ...
    def snapshot(self, fact_id: int) -> dict[str, str] | None: ...
    def change_set(self, conn: Any, author: Any, *, write_id: str | None = None) -> Any: ...
    @property
    def search(self) -> Any:
        """memory_search's ranking over this memory (gate.search.lookup.Search)."""

    def import_rows(
        self, conn: Any, result: Any, *, command: str, new_ids: bool, dry_run: bool, progress: Progress | None
    ) -> Any:
        """`memory-gate import`'s checked lines (the temporary table `incoming` of `conn`, the
        ledger) into memory, each change in its record; `result` (gate.memory.transfer.Imported)
        filled in and returned. Locally one write transaction; on a team in batches, the
        ledger's lock never held while the team answers (gate.memory.teamimport)."""

    def by_hand(self, conn: Any, words: str, session: str) -> AbstractContextManager[Any]:
        """A change by hand (an undo, an edit or delete on the page) under way, as
        gate.memory.stores.HandChange: its `changes` and `finish`; `conn` the ledger its turn
        and write are recorded in, whose lock is never held while a team's network answers."""
