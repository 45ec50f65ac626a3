"""The vector index held in a server's memory as one numpy matrix: exact nearest neighbours in a
few milliseconds, where sqlite-vec's vec0 takes tens at 10k facts (docs/search.md, "By meaning").

`Matrix` is a copy of the stored vectors (gate.search.vectors) that a long-lived process owns
beside its connection (gate.serve.connection.Memory). It answers what vectors.neighbourhood
answers over every vector, at any size: the same facts, with sqlite-vec's own distances, ties in
the same order (by id), and the same spread of memory's distances (vectors.spread_of). One product
of the matrix and the query ranks every vector; the distances of those near the `limit`-th are
then computed by sqlite-vec itself, so that float32 sums taken in another order never reorder
two facts (see `candidates`).

Never stale: before each search it reads the highest `seq` of vector_changes (schema.sql,
"version 11"), which every change of a stored vector advances in the change's own transaction,
on any connection and in any process, and the schema's version (dropping the index changes it).
It fetches again only the vectors changed since, or all of them when the schema changed or the
count disagrees. When nothing changed this costs three reads of a few microseconds.

numpy is imported here only, when a search first needs it: a process without it (an endpoint
and a bare install) uses vec0 as before (`available`). The hooks never import this module.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

import apsw

from gate.search import vectors
from gate.search.embeddings import Vectors

# How far numpy's float32 distance may lie from sqlite-vec's, per dimension. Each sums the
# products of two unit vectors in float32, within dimension * 2**-24 of the true dot product
# whatever the order; with the norms, the two distances differ by less than dimension * 2**-22.
# Twice that is kept as a margin (a bound: the typical difference is about 1e-7).
ERROR_PER_DIMENSION = 2.0**-21
# Past this share of the stored vectors changed, all are fetched again rather than those.
REFETCH_SHARE = 0.25


def available() -> bool:
    """Whether numpy is there to import (a look at the import path, no import)."""
    try:
        return importlib.util.find_spec("numpy") is not None
    except ValueError:  # blocked in sys.modules
        return False


class Matrix:
    """The stored vectors of one connection's memory, unit length, one row per vector (`rows`,
    the first `count` of them used; `ids` the fact of each, `slots` the row of each fact)."""

    def __init__(self) -> None:
        self.conn: apsw.Connection | None = None
        self.key: tuple[Any, ...] | None = None  # the schema's version and the space
        self.seq = 0  # the highest vector_changes.seq taken in
        self.count = 0
        self.ids: Any = None
        self.rows: Any = None
        self.slots: dict[int, int] = {}
        self.reference: tuple[Sequence[Sequence[float]], Any] | None = None

    def neighbourhood(self, conn: apsw.Connection, query: Vectors, *, limit: int) -> vectors.Neighbourhood | None:
        """vectors.neighbourhood over every stored vector, from the matrix: the `limit` trusted
        facts nearest the query vector, and memory's spread of distances; None while memory holds
        no vectors. Raises embeddings.VectorError when the query is not of the stored kind."""
        import numpy as np

        found = vectors.space(conn)
        if found is None:
            return None
        vectors.check(found, query)
        point = np.asarray(query.rows[0], dtype=np.float32)
        length = float(np.linalg.norm(point))
        if not length > 0.0 or not self.refresh(conn, found):
            return vectors.neighbourhood(conn, query, limit=limit)  # no direction; or vec0 not as known
        approx = 1.0 - np.einsum("ij,j->i", self.rows[: self.count], point / length)
        approx[np.isnan(approx)] = np.inf  # a zero vector: sqlite-vec's distance is NULL
        nearest = self.nearest(conn, vectors.pack(query.rows[0]), approx, limit, found.dimension)
        if nearest is None:  # nearly every vector near the query waits for a new one
            return vectors.neighbourhood(conn, query, limit=limit)
        # Memory's spread from the matrix's distances too, within 1e-6 of sqlite-vec's.
        sample = self.sampled(approx, vectors.sample_of(conn, self.count))
        known = self.known(vectors.reference(conn, found), query.rows[0])
        measured = vectors.spread_of(query.rows[0], sample + known, ())
        return vectors.Neighbourhood(nearest, *measured) if measured else None

    def nearest(self, conn: apsw.Connection, packed: bytes, approx: Any, limit: int, dimension: int) -> list | None:
        """The `limit` trusted facts nearest, closest first, ties by id, with sqlite-vec's distances
        (vectors.trusted_nearest over every vector, computed over the candidates only); None when
        the candidates grow past BATCH."""
        import numpy as np

        error = ERROR_PER_DIMENSION * dimension
        finite = int(np.isfinite(approx).sum())
        wanted = min(limit, finite)
        while True:
            chosen, cutoff = candidates(approx, wanted, 2 * error, finite)
            if len(chosen) > BATCH:
                return None
            rows = vectors.distances(conn, packed, self.ids[chosen].tolist())
            found = vectors.trusted_nearest(conn, rows, limit)
            # Every vector left out lies farther than cutoff - error by sqlite-vec's measure: the
            # answer is whole once its `limit`-th is nearer than that, or when none was left out.
            if len(chosen) >= finite or (len(found) == limit and found[-1][1] <= cutoff - error):
                return found
            wanted = min(max(wanted, 1) * 4, finite)  # facts not trusted took places: look wider

    def sampled(self, approx: Any, ids: list[int] | None) -> list[float]:
        """The distances `approx` holds of the stored vectors of `ids`, or of every one with None
        (vectors.sample_of); a zero vector's is left out, as sqlite-vec's NULL is."""
        import numpy as np

        chosen = approx if ids is None else approx[[self.slots[fact] for fact in ids if fact in self.slots]]
        return chosen[np.isfinite(chosen)].tolist()

    def known(self, reference: Sequence[Sequence[float]], query: Sequence[float]) -> list[float]:
        """The query's distances to the REFERENCE vectors, as vectors.spread_of takes them, in one
        product (24 sums of 384 in Python took half a millisecond)."""
        import numpy as np

        if not reference:
            return []
        if self.reference is None or self.reference[0] is not reference:  # decoded once per text
            self.reference = (reference, np.asarray(reference, dtype=np.float64))
        return (1.0 - self.reference[1] @ np.asarray(query, dtype=np.float64)).tolist()

    def refresh(self, conn: apsw.Connection, found: vectors.Space) -> bool:
        """Bring the matrix up to date with the stored vectors; False when they cannot be read as
        this module knows them (search then asks vec0)."""
        # The highest seq first: a change committed after it is fetched again by the next search.
        key = (conn.execute("PRAGMA schema_version").get, found.model, found.dimension)
        seq = conn.execute("SELECT coalesce(max(seq), 0) FROM vector_changes").get
        try:
            if conn is not self.conn or key != self.key or seq < self.seq:
                self.load(conn, found.dimension, None)
            elif seq > self.seq:
                changed = [row[0] for row in conn.execute("SELECT id FROM vector_changes WHERE seq > ?", (self.seq,))]
                self.load(conn, found.dimension, changed if len(changed) <= REFETCH_SHARE * self.count else None)
            if self.count != vectors.stored_count(conn):  # a writer that noted nothing
                self.load(conn, found.dimension, None)
        except (apsw.SQLError, ValueError):
            self.conn = self.key = None
            return False
        self.conn, self.key, self.seq = conn, key, seq
        return True

    def load(self, conn: apsw.Connection, dimension: int, ids: Sequence[int] | None) -> None:
        """Fetch the stored vectors of `ids` (every one with None) into the matrix: changed, new
        or gone. Raises ValueError for a vector not of `dimension`."""
        import numpy as np

        stored = dict(_stored(conn, ids))
        if ids is None:
            self.ids = np.fromiter(stored, dtype=np.int64, count=len(stored))
            self.rows = _unit(np.frombuffer(_joined(stored.values(), dimension), dtype="<f4").reshape(-1, dimension))
            self.count = len(stored)
            self.slots = {fact: slot for slot, fact in enumerate(stored)}
            return
        for fact in ids:
            blob = stored.get(fact)
            slot = self.slots.get(fact)
            if blob is None:
                if slot is not None:  # gone: the last row takes its place
                    last = self.count - 1
                    self.rows[slot], self.ids[slot] = self.rows[last], self.ids[last]
                    self.slots[int(self.ids[slot])] = slot
                    del self.slots[fact]
                    self.count = last
                continue
            if slot is None:
                if self.count == len(self.rows):
                    self.rows, self.ids = _grown(self.rows, self.count), _grown(self.ids, self.count)
                slot, self.count = self.count, self.count + 1
                self.slots[fact] = slot
                self.ids[slot] = fact
            vector = np.frombuffer(_joined([blob], dimension), dtype="<f4").reshape(1, dimension)
            self.rows[slot] = _unit(vector)[0]


def candidates(approx: Any, wanted: int, margin: float, finite: int) -> tuple[Any, float]:
    """The rows within `margin` of the `wanted`-th smallest approximate distance (every finite
    one when `wanted` reaches them all), and that cut-off."""
    import numpy as np

    if wanted >= finite or wanted == 0:
        return np.flatnonzero(np.isfinite(approx)), float("inf")
    cutoff = float(np.partition(approx, wanted - 1)[wanted - 1]) + margin
    return np.flatnonzero(approx <= cutoff), cutoff


# Ids bound to one statement, under SQLite's limit on bound parameters.
BATCH = 10_000


def _stored(conn: apsw.Connection, ids: Sequence[int] | None) -> list[tuple[int, bytes]]:
    """(id, float32 bytes) of the stored vectors of `ids`, or of every one: from the plain table
    in which vec0 0.1 keeps them, as vectors.distances reads them, or through vec0."""
    if ids is None:
        try:
            return list(conn.execute("SELECT rowid, value00 FROM facts_vec_auxiliary"))
        except apsw.SQLError:
            return list(conn.execute("SELECT rowid, embedding FROM facts_vec"))
    found: list[tuple[int, bytes]] = []
    for start in range(0, len(ids), BATCH):
        batch = list(ids[start : start + BATCH])
        where = f" WHERE rowid IN ({','.join('?' * len(batch))})"
        try:
            found += conn.execute(f"SELECT rowid, value00 FROM facts_vec_auxiliary{where}", batch)
        except apsw.SQLError:
            found += conn.execute(f"SELECT rowid, embedding FROM facts_vec{where}", batch)
    return found


def _grown(array: Any, count: int) -> Any:
    """`array` with room for twice its `count` rows, those copied."""
    import numpy as np

    grown = np.empty((max(16, 2 * count),) + array.shape[1:], dtype=array.dtype)
    grown[:count] = array[:count]
    return grown


def _joined(blobs: Any, dimension: int) -> bytes:
    blobs = list(blobs)
    joined = b"".join(blobs)
    if len(joined) != 4 * dimension * len(blobs):
        raise ValueError(f"a stored vector is not of {dimension} float32 values")
    return joined


def _unit(rows: Any) -> Any:
    """The rows scaled to unit length, as a new float32 array; a zero row becomes NaN."""
    import numpy as np

    with np.errstate(invalid="ignore", divide="ignore"):
        return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32, copy=False)
