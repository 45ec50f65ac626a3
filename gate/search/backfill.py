"""Filling the vector index (gate.search.vectors) from the endpoint: all over again, a batch per
request and per transaction (`rebuild`: `memory-gate reindex`), or the facts still waiting for a
vector, a few a request, soon after the write that could not embed them (`catch_up`: the server's
background work, and a search's short turn). Apart from the index because the index is what every
search and write reads and stores; this is the long-running work around it, with its own batches
and time-outs, which the team's pgvector index (gate.search.teamvectors) shares.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from contextlib import AbstractContextManager as ContextManager
from dataclasses import dataclass, field

import apsw

from gate.engine import store
from gate.engine.seam import VectorIndex
from gate.search import vectors
from gate.search.embeddings import DOCUMENT, Endpoint, VectorError, Vectors

# -- rebuilding -----------------------------------------------------------------------------

REINDEX_BATCH = 16
REINDEX_TIMEOUT = 120.0


@dataclass
class Rebuilt:
    embedded: int = 0
    failed: list[int] = field(default_factory=list)
    space: vectors.Space | None = None


def rebuild(
    conn: apsw.Connection,
    endpoint: Endpoint,
    *,
    progress: Callable[[int, int], None] | None = None,
    batch: int = REINDEX_BATCH,
    timeout: float = REINDEX_TIMEOUT,
) -> Rebuilt:
    """`rebuild_in` over a local memory's vectors (sqlite-vec, which must load: StoreError)."""
    return rebuild_in(LocalVectors(conn), endpoint, progress=progress, batch=batch, timeout=timeout)


def rebuild_in(
    index: VectorIndex,
    endpoint: Endpoint,
    *,
    progress: Callable[[int, int], None] | None = None,
    batch: int = REINDEX_BATCH,
    timeout: float = REINDEX_TIMEOUT,
) -> Rebuilt:
    """Embed every fact again into a new index, a batch per request and per transaction. The
    first batch is asked for before the old index is dropped, so an endpoint that does not
    answer leaves memory as it was (VectorError). A batch the endpoint refuses is retried one
    fact at a time; a fact that still fails stays waiting and is reported in `failed`. One
    algorithm for both engines (LocalVectors, teamvectors.TeamVectors)."""
    with index.reading():
        index.require()
        total = index.count()
        first = index.first(batch)
    answer = endpoint.embed([text for _, text in first] or ["memory-gate"], role=DOCUMENT, timeout=timeout)
    with index.changing():
        index.forget()
    result = Rebuilt()
    pending: list[tuple[int, str]] = first
    ahead: Vectors | None = answer if first else None
    while pending:
        if ahead is None:
            ahead = _embed_or_none(endpoint, [text for _, text in pending], timeout)
        if ahead is None and len(pending) > 1:
            for item in pending:
                single = _embed_or_none(endpoint, [item[1]], timeout)
                _store_batch(index, [item], single, result)
        else:
            _store_batch(index, pending, ahead, result)
        last = pending[-1][0]
        if progress:
            progress(result.embedded + len(result.failed), total)
        with index.reading():
            pending, ahead = index.waiting(limit=batch, chars=1 << 30, after=last), None
    result.space = index.finish(endpoint, batch, timeout)
    return result


def _embed_or_none(endpoint: Endpoint, texts: list[str], timeout: float) -> Vectors | None:
    try:
        return endpoint.embed(texts, role=DOCUMENT, timeout=timeout)
    except VectorError:
        return None


def _store_batch(index: VectorIndex, items: list[tuple[int, str]], answer: Vectors | None, result: Rebuilt) -> None:
    ids = [fact for fact, _ in items]
    if answer is None:
        result.failed += ids
        return
    prepared = vectors.Prepared(answer, dict(zip((text for _, text in items), answer.rows)), [])
    with index.changing():
        result.embedded += index.sync(ids, prepared)
        # Left over: changed by another session meanwhile, or answered in another space.
        owed = index.owed(ids)
        result.failed += [fact for fact in ids if fact in owed]


# -- catching up ----------------------------------------------------------------------------

CATCH_UP_TIMEOUT = 60.0
# Texts a catch-up request carries. Small on purpose: an endpoint answers one request at a time,
# and a search's query waits behind whatever catch-up asked for (bge-m3 on two CPU cores takes
# tens to a hundred ms a text).
CATCH_UP_BATCH = 4


def catch_up(
    conn: apsw.Connection,
    endpoint: Endpoint,
    *,
    hold: Callable[[], ContextManager[object]],
    batch: int = CATCH_UP_BATCH,
    timeout: float = CATCH_UP_TIMEOUT,
    until: float | None = None,
) -> int:
    """`catch_up_in` over a local memory's vectors (sqlite-vec)."""
    return catch_up_in(LocalVectors(conn), endpoint, hold=hold, batch=batch, timeout=timeout, until=until)


def catch_up_in(
    index: VectorIndex,
    endpoint: Endpoint,
    *,
    hold: Callable[[], ContextManager[object]],
    batch: int = CATCH_UP_BATCH,
    timeout: float = CATCH_UP_TIMEOUT,
    until: float | None = None,
) -> int:
    """Embed the facts still waiting for a vector, a few a request, until none waits, the
    endpoint fails or there is no time left before the monotonic clock's `until` for another
    request as long as the last, and the model's REFERENCE vectors if memory lacks them; returns
    how many facts were stored. A write embeds its own facts under a short deadline; what it
    could not (the endpoint slow, just started, or down) is caught up here, soon after rather than
    on some later write. `hold()` guards each step on the connection (the server's lock) but
    never a request, so the tools answer meanwhile. One loop for both engines: `index` is a
    local memory's (LocalVectors) or a team's project's (gate.search.teamvectors.TeamVectors).

    With `until`, a request is not started unless it can end in time rather than started and
    abandoned: an endpoint goes on computing a request its client gave up on, and the next
    search's query would wait behind it."""
    stored, took = 0, 0.0
    while True:
        if until is not None and time.monotonic() + took > until:
            return stored
        with hold(), index.reading():
            if not index.available():
                return stored
            pending = index.waiting(limit=batch, chars=vectors.WAITING_CHARS)
        if not pending:
            break
        started = time.monotonic()
        prepared = vectors.prepare(endpoint, [text for _, text in pending], timeout=timeout)
        took = time.monotonic() - started
        if prepared is None:
            return stored
        with hold(), index.changing():
            done = index.sync([fact for fact, _ in pending], prepared)
        if not done:
            # Changed meanwhile, or answered in another space: the next write or search retries.
            return stored
        stored += done
    if until is None:
        index.settle(hold)  # a background chore, never a search's
    with hold(), index.reading():
        if until is not None or not index.needs_reference():
            return stored  # the reference is a background chore, never a search's
    answer = reference_vectors(endpoint, batch, timeout)
    if answer is not None:
        with hold(), index.changing():
            index.store_reference(answer)
    return stored


def reference_vectors(endpoint: Endpoint, batch: int, timeout: float) -> Vectors | None:
    """The model's vectors of vectors.REFERENCE, a batch a request; None when the endpoint fails."""
    rows: list[tuple[float, ...]] = []
    model = ""
    for start in range(0, len(vectors.REFERENCE), batch):
        try:
            answer = endpoint.embed(vectors.REFERENCE[start : start + batch], role=DOCUMENT, timeout=timeout)
        except VectorError:
            return None
        rows += answer.rows
        model = answer.model
    return Vectors(model, rows)


class LocalVectors:
    """A local memory's vectors (gate.search.vectors, sqlite-vec) as catch_up_in keeps them: read
    on the connection as it is, each store a write transaction of its own."""

    # What storing a vector can meet and leave memory searchable: the vectors wait for a write
    # that can store them.
    faults: tuple[type[Exception], ...] = (apsw.ReadOnlyError, apsw.FullError, apsw.IOError, apsw.BusyError)

    def __init__(self, conn: apsw.Connection):
        self.conn = conn

    def reading(self) -> ContextManager[object]:
        return contextlib.nullcontext()

    def changing(self) -> ContextManager[object]:
        return store.writing(self.conn)

    def available(self) -> bool:
        return store.vectors_loaded(self.conn)

    def waiting(self, *, limit: int, chars: int, after: int | None = None) -> list[tuple[int, str]]:
        return vectors.waiting(self.conn, limit=limit, chars=chars, after=after)

    def owed(self, ids: list[int]) -> set[int]:
        return vectors._owed(self.conn, ids)

    def require(self) -> None:
        """sqlite-vec loads, or StoreError says how to get it."""
        store.require_vectors(self.conn)

    def count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM facts").get

    def first(self, batch: int) -> list[tuple[int, str]]:
        rows = self.conn.execute("SELECT id, topic, text FROM facts ORDER BY id LIMIT ?", (batch,))
        return [(row[0], vectors.fact_text(row[1], row[2])) for row in rows]

    def forget(self) -> None:
        vectors.forget(self.conn)

    def finish(self, endpoint: Endpoint, batch: int, timeout: float) -> vectors.Space | None:
        """After a rebuild: the REFERENCE vectors asked for in one request, the index centered on
        them past vectors.EXACT_LIMIT (store_reference does); the space it is in."""
        conn = self.conn
        known = _embed_or_none(endpoint, list(vectors.REFERENCE), timeout) if vectors.has_table(conn) else None
        with store.writing(conn):
            if known is not None:
                vectors.store_reference(conn, known)
            return vectors.space(conn)

    def missing(self) -> int:
        return vectors.missing(self.conn)

    def sync(self, ids: list[int], prepared: vectors.Prepared) -> int:
        return vectors.sync(self.conn, ids, prepared)

    def settle(self, hold: Callable[[], ContextManager[object]]) -> None:
        """Center the index if it is due: one centered by an earlier memory-gate on its first
        vectors (one growing is centered by vectors.sync and vectors.store_reference)."""
        with hold():
            if vectors.has_table(self.conn) and vectors.needs_center(self.conn):
                with store.writing(self.conn):
                    vectors.recenter(self.conn)

    def needs_reference(self) -> bool:
        return vectors.needs_reference(self.conn)

    def store_reference(self, answer: Vectors) -> bool:
        return vectors.store_reference(self.conn, answer)
