"""The vector index beside the facts: sqlite-vec's vec0, filled from gate.search.embeddings.

One vec0 table (schema.sql, "template vectors"), rowid = fact id, made when the first vectors
arrive; their dimension and model name go in `meta`, and vectors of another kind are refused
with the mend (`memory-gate reindex`). Vectors are unit length, so cosine distance is the
measure. Up to EXACT_LIMIT vectors, search computes the exact distance to each; past it, a
Hamming scan over one bit per dimension (set where the vector lies above the "center", the mean
of the model's REFERENCE vectors) picks about POOL candidates and the exact distance ranks those.
The center depends on the model alone and the pool on the stored vectors alone (every vector
strictly nearer in Hamming distance than the POOL-th, see `within_edge`), so the same facts
answer the same whether they arrived one by one, in an import or by a reindex, on either engine.

Facts are canonical; the index is derived. `facts_to_embed` lists every fact whose vector is
missing or stale (schema triggers keep it true on every connection), and search never trusts a
vector it lists. Requests happen before the caller's transaction, never under the write lock:
`prepare` embeds ahead (new and changed facts plus a few still waiting), `sync` stores inside
the transaction, by the exact text each vector embeds, so a fact another session changed in
between is not given a vector of its old text. Each vector stored or dropped is noted in
`vector_changes` in that transaction, for the copies servers keep (gate.search.matrix).
"""

from __future__ import annotations

import base64
import operator
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import apsw

from gate.engine import store
from gate.search import reference as reference_texts
from gate.search.embeddings import DOCUMENT, Endpoint, VectorError, Vectors

# Facts still waiting for a vector that ride along with a write's request, newest first.
WAITING_BATCH = 8
WAITING_CHARS = 3000
# Exact distances while the index holds at most this many vectors; past it, the Hamming
# prefilter keeps about POOL candidates for exact rescoring. Exact is no dearer than the
# prefilter up to about 1,500 vectors of 384 dimensions (the installed model's) and dearer from
# 2,000 on: docs/search.md ("By meaning") has the table, each way timed in one run.
# The pool: with multilingual-e5-small on LoCoMo's development half (2,760 turns, its 999
# questions), the share of the exact 30 nearest it keeps with the REFERENCE center: 0.943 at 350,
# 0.955 at 400, 0.965 at 450, 0.971 at 500 (the mean of all 2,760 vectors as center: 0.975 at 450).
# Its cost grows with its size (vec0 picks the k best in O(n k)): at 10k vectors, 450 costs about
# 1.4 times 300, and a little more than exact brute force over a vec0 float column would.
EXACT_LIMIT = 1500
POOL = 450
# A fact's vector changed: its place in the order of all changes (schema.sql, "version 11").
CHANGED = (
    "INSERT INTO vector_changes (id, seq) SELECT ?, coalesce(max(seq), 0) + 1 FROM vector_changes WHERE true"
    " ON CONFLICT (id) DO UPDATE SET seq = excluded.seq"
)
_last_center: list[tuple[object, tuple[float, ...] | None]] = [(None, None)]  # center_of's rows, center


def fact_text(topic: str, text: str) -> str:
    """What is embedded for a fact: its subject, then the fact."""
    return f"{topic}\n{text}"


# -- the index ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Space:
    """What the stored vectors are: which model made them, their dimension, and the center
    their bits are taken against (None while the index is small enough for exact search)."""

    model: str
    dimension: int
    center: tuple[float, ...] | None


def space(conn: apsw.Connection) -> Space | None:
    """The stored vectors' space, or None while memory has none."""
    meta = dict(conn.execute("SELECT key, value FROM meta WHERE key LIKE 'vector\\_%' ESCAPE '\\'"))
    if "vector_model" not in meta or not has_table(conn):
        return None
    center = meta.get("vector_center")
    return Space(
        meta["vector_model"],
        int(meta["vector_dimension"]),
        unpack(base64.b64decode(center)) if center else None,
    )


def has_table(conn: apsw.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'facts_vec'").fetchone() is not None


def check(found: Space, vectors: Vectors) -> None:
    """Raise VectorError, naming the mend, when `vectors` are not of the stored kind."""
    if vectors.dimension != found.dimension:
        raise VectorError(
            f"the endpoint's vectors have {vectors.dimension} dimensions, memory's {found.dimension}:"
            " run `memory-gate reindex`"
        )
    if vectors.model != found.model:
        raise VectorError(
            f"the endpoint's model is {vectors.model}, memory's vectors are {found.model}'s: run `memory-gate reindex`"
        )


def waiting(
    conn: apsw.Connection, *, limit: int = WAITING_BATCH, chars: int = WAITING_CHARS, after: int | None = None
) -> list[tuple[int, str]]:
    """(id, text to embed) of facts waiting for a vector: the newest first, as many as fit in
    `limit` facts and about `chars` characters; or with `after`, the oldest above that id."""
    if after is None:
        sql = (
            "SELECT f.id, f.topic, f.text FROM facts_to_embed w JOIN facts f ON f.id = w.id ORDER BY w.id DESC LIMIT ?"
        )
        rows = conn.execute(sql, (limit,))
    else:
        sql = (
            "SELECT f.id, f.topic, f.text FROM facts_to_embed w JOIN facts f ON f.id = w.id"
            " WHERE w.id > ? ORDER BY w.id LIMIT ?"
        )
        rows = conn.execute(sql, (after, limit))
    found: list[tuple[int, str]] = []
    total = 0
    for fact_id, topic, text in rows:
        item = fact_text(topic, text)
        if found and total + len(item) > chars:
            break
        found.append((fact_id, item))
        total += len(item)
    return found


def _owed(conn: apsw.Connection, ids: Sequence[int]) -> set[int]:
    """Those of `ids` listed in facts_to_embed."""
    if not ids:
        return set()
    marks = ",".join("?" * len(ids))
    return {row[0] for row in conn.execute(f"SELECT id FROM facts_to_embed WHERE id IN ({marks})", list(ids))}


def missing(conn: apsw.Connection) -> int:
    """How many facts lack a current vector."""
    return conn.execute("SELECT count(*) FROM facts_to_embed").get


@dataclass
class Prepared:
    """Vectors asked for ahead of a write's transaction, by the exact text each embeds, and the
    waiting facts that rode along."""

    vectors: Vectors
    by_text: dict[str, tuple[float, ...]]
    waiting: list[int]


def prepare(
    endpoint: Endpoint, texts: Iterable[str], waiting_ids: Sequence[int] = (), *, timeout: float | None = None
) -> Prepared | None:
    """Embed `texts` in one request; None when there is nothing to embed or the endpoint fails
    (the facts then wait for a later write)."""
    unique = list(dict.fromkeys(texts))
    if not unique:
        return None
    try:
        answer = endpoint.embed(unique, role=DOCUMENT, timeout=timeout or endpoint.write_timeout)
    except VectorError:
        return None
    return Prepared(answer, dict(zip(unique, answer.rows)), list(waiting_ids))


def sync(conn: apsw.Connection, ids: Iterable[int], prepared: Prepared | None) -> int:
    """Bring the vectors of these facts up to date inside the caller's transaction: drop those of
    facts gone or changed, store `prepared` ones whose text still matches. Returns how many were
    stored. A no-op without sqlite-vec; facts_to_embed still lists what is owed."""
    if not store.vectors_loaded(conn):
        return 0
    wanted = sorted(set(ids) | set(prepared.waiting if prepared else ()))
    if not wanted:
        return 0
    marks = ",".join("?" * len(wanted))
    current = {
        row[0]: fact_text(row[1], row[2])
        for row in conn.execute(f"SELECT id, topic, text FROM facts WHERE id IN ({marks})", wanted)
    }
    owed = _owed(conn, wanted)
    stale = [fact for fact in wanted if fact not in current or fact in owed]
    if has_table(conn):
        for fact in stale:
            conn.execute("DELETE FROM facts_vec WHERE rowid = ?", (fact,))
    # Each vector dropped or stored below, noted for the copies servers keep (gate.search.matrix).
    conn.executemany(CHANGED, [(fact,) for fact in stale])
    if prepared is None:
        return 0
    try:
        found = _ensure_space(conn, prepared.vectors)
    except VectorError:
        return 0
    stored = 0
    for fact in stale:
        vector = prepared.by_text.get(current.get(fact, ""))
        if vector is not None:
            _insert(conn, fact, vector, found.center)
            conn.execute("DELETE FROM facts_to_embed WHERE id = ?", (fact,))
            stored += 1
    if stored and needs_center(conn):
        recenter(conn)
    return stored


def _ensure_space(conn: apsw.Connection, vectors: Vectors) -> Space:
    found = space(conn)
    if found is None:
        conn.execute("DROP TABLE IF EXISTS facts_vec")
        conn.execute(store.schema_template("vectors", bits=_bytes(vectors.dimension) * 8))
        conn.execute("DELETE FROM meta WHERE key LIKE 'vector\\_%' ESCAPE '\\'")
        conn.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?)",
            [("vector_model", vectors.model), ("vector_dimension", str(vectors.dimension))],
        )
        return Space(vectors.model, vectors.dimension, None)
    check(found, vectors)
    return found


def _insert(conn: apsw.Connection, fact: int, vector: Sequence[float], center: Sequence[float] | None) -> None:
    conn.execute(
        "INSERT INTO facts_vec (rowid, bits, embedding) VALUES (?, vec_bit(?), ?)",
        (fact, bits(vector, center), pack(vector)),
    )


def recenter(conn: apsw.Connection) -> int:
    """Take the center from the model's REFERENCE vectors and set every row's bits against it.
    Runs when the index outgrows exact search with the REFERENCE vectors known, when they arrive
    past it, and after a reindex; a no-op without them (search stays exact). Returns the rows."""
    found = space(conn)
    center = center_of(reference(conn, found)) if found else None
    if center is None:
        return 0
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('vector_center', ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (base64.b64encode(pack(center)).decode(),),
    )
    rows = [(rowid, unpack(blob)) for rowid, blob in conn.execute("SELECT rowid, embedding FROM facts_vec")]
    for rowid, vector in rows:
        # vec0 0.1.9 cannot UPDATE a bit column: delete and insert (the same vector: no change noted).
        conn.execute("DELETE FROM facts_vec WHERE rowid = ?", (rowid,))
        _insert(conn, rowid, vector, center)
    return len(rows)


def needs_center(conn: apsw.Connection) -> bool:
    """Whether the index is past EXACT_LIMIT with the REFERENCE vectors known but its bits not
    (yet) against their center: never centered, or centered by an earlier memory-gate on the
    mean of its first vectors."""
    found = space(conn)
    return found is not None and center_due(found, reference(conn, found), stored_count(conn)) is not None


def stored_count(conn: apsw.Connection) -> int:
    """How many vectors the index holds. vec0 0.1's count(*) reads every chunk (8 ms at 10k
    vectors); its rowids table, one row per vector, answers in microseconds."""
    try:
        return conn.execute("SELECT count(*) FROM facts_vec_rowids").get
    except apsw.SQLError:
        return conn.execute("SELECT count(*) FROM facts_vec").get


def mean(stored: Iterable[Sequence[float]]) -> tuple[float, ...]:
    """The mean of vectors, summed in the order given. At least one vector."""
    total: list[float] = []
    count = 0
    for vector in stored:
        total = list(map(float.__add__, total, vector)) if total else list(vector)
        count += 1
    return tuple(value / count for value in total)


def center_of(known: Sequence[Sequence[float]]) -> tuple[float, ...] | None:
    """The center the bits are taken against: the mean of the model's REFERENCE vectors (as
    float32, as both engines keep them), or None while they are not known. It depends on the
    model alone, never on which facts came first (a center taken from the stored vectors was
    fixed by the first ones, so the same facts answered differently written one by one than
    reindexed). Recall with it: the POOL comment. Kept for the last rows asked (3 ms a mean)."""
    last = _last_center[0]
    if last[0] is not known:  # one assignment: a thread reads the pair whole
        last = _last_center[0] = (known, as_float32(mean(as_float32(row) for row in known)) if known else None)
    return last[1]


def center_due(found: Space, known: Sequence[Sequence[float]], count: int) -> tuple[float, ...] | None:
    """The center an index of `count` vectors in space `found` must be given now, or None when
    it has the right one, is small enough for exact search, or the REFERENCE vectors `known`
    are not there yet. Both engines ask it."""
    if count <= EXACT_LIMIT:
        return None
    center = center_of(known)
    return center if center is not None and center != found.center else None


def within_edge(pool: Sequence[tuple[int, float]], size: int) -> list[int] | None:
    """The ids of a Hamming pool, (id, Hamming distance) of the `size` nearest in any order,
    that lie strictly nearer than its farthest: a set that depends on the stored vectors alone,
    not on which of the vectors tied at the edge the engine took (vec0 takes them in its storage
    order, which follows the order they arrived in). The whole pool when it holds every vector
    (fewer than `size`); None when every vector in it is tied (the caller then searches exactly)."""
    if len(pool) < size:
        return [fact for fact, _ in pool]
    edge = max(distance for _, distance in pool)
    inside = [fact for fact, distance in pool if distance < edge]
    return inside or None


def forget(conn: apsw.Connection) -> None:
    """Drop the index and owe every fact a vector (reindex starts here)."""
    conn.execute("DROP TABLE IF EXISTS facts_vec")
    conn.execute("DELETE FROM meta WHERE key LIKE 'vector\\_%' ESCAPE '\\'")
    conn.execute("INSERT OR IGNORE INTO facts_to_embed (id) SELECT id FROM facts")


@dataclass(frozen=True)
class Neighbourhood:
    """The facts nearest a query vector, closest first, as (id, cosine distance), and how far
    the query lies from memory at large: the mean and standard deviation of its distance to
    every stored vector (to a fixed sample of SAMPLE of them once the index outgrows exact
    search). The second part is what lets search judge "near" without a cut-off per model."""

    nearest: list[tuple[int, float]]
    mean: float
    spread: float


# Stored vectors whose distance to the query estimates how far memory at large lies from it.
SAMPLE = 256

# Facts of no particular project, embedded once per model (meta `vector_reference`): how far
# "unrelated" is for this model, and the center of the bits (gate.search.reference).
REFERENCE = reference_texts.TEXTS


def neighbourhood(conn: apsw.Connection, query: Vectors, *, limit: int) -> Neighbourhood | None:
    """The `limit` facts nearest the query vector with memory's spread of distances, or None
    while memory holds no vectors. Raises VectorError when the query is not of the stored kind."""
    found = space(conn)
    if found is None:
        return None
    check(found, query)
    vector = pack(query.rows[0])
    count = stored_count(conn)
    rows = None
    if found.center is not None and count > EXACT_LIMIT:
        size = max(POOL, limit)
        pool = conn.execute(
            "SELECT rowid, distance FROM facts_vec WHERE bits MATCH vec_bit(?) AND k = ?",
            (bits(query.rows[0], found.center), size),
        )
        inside = within_edge(list(pool), size)
        if inside is not None:
            rows = distances(conn, vector, inside)
    if rows is None:  # small enough, not centered yet, or a pool all tied: every vector
        rows = distances(conn, vector)
    ids = sample_of(conn, count)
    sample = [distance for _, distance in (rows if ids is None else distances(conn, vector, ids))]
    measured = spread_of(query.rows[0], sample, reference(conn, found))
    return Neighbourhood(trusted_nearest(conn, rows, limit), *measured) if measured else None


def sample_of(conn: apsw.Connection, count: int) -> list[int] | None:
    """The stored vectors whose distances estimate how far memory at large lies from a query:
    every one (None) while the index holds at most EXACT_LIMIT (`count`), else SAMPLE ids spread
    evenly over memory's whole range, the same for every query."""
    if count <= EXACT_LIMIT:
        return None
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'facts'").fetchone()
    return sample_ids(row[0] if row else 0)


def trusted_nearest(
    conn: apsw.Connection, rows: Iterable[tuple[int, float | None]], limit: int
) -> list[tuple[int, float]]:
    """The `limit` nearest of (id, distance) `rows`, closest first, ties by id, leaving out a vector
    whose fact is gone or changed (by a connection without sqlite-vec)."""
    ranked = sorted((distance, fact) for fact, distance in rows if distance is not None)
    if not ranked:
        return []
    marks = ",".join("?" * len(ranked))
    sql = f"SELECT id FROM facts WHERE id IN ({marks}) AND id NOT IN (SELECT id FROM facts_to_embed)"
    trusted = {row[0] for row in conn.execute(sql, [fact for _, fact in ranked])}
    return [(fact, distance) for distance, fact in ranked if fact in trusted][:limit]


def distances(conn: apsw.Connection, vector: bytes, ids: Sequence[int] | None = None) -> list[tuple[int, float]]:
    """(id, cosine distance to the packed `vector`) of the stored vectors of `ids`, or of every
    one. Read from the plain table in which vec0 0.1 keeps the `+embedding` column
    (facts_vec_auxiliary: rowid, value00): one B-tree lookup a vector, where reading it through
    vec0 costs about 30 microseconds each. Through vec0 where that table is not there."""
    marks = ",".join("?" * len(ids)) if ids is not None else ""
    where = f" WHERE rowid IN ({marks})" if ids is not None else ""
    try:
        sql = f"SELECT rowid, vec_distance_cosine(value00, ?) FROM facts_vec_auxiliary{where}"
        return list(conn.execute(sql, (vector, *(ids or ()))))
    except apsw.SQLError:
        sql = f"SELECT rowid, vec_distance_cosine(embedding, ?) FROM facts_vec{where}"
        return list(conn.execute(sql, (vector, *(ids or ()))))


def spread_of(
    query: Sequence[float], sample: Iterable[float | None], known: Sequence[Sequence[float]]
) -> tuple[float, float] | None:
    """The mean and standard deviation of the query's distances to memory's `sample` and to
    the REFERENCE vectors `known`; None with neither. Both engines judge "near" by it."""
    distances = [distance for distance in sample if distance is not None]
    distances += [1.0 - sum(map(operator.mul, query, row)) for row in known]
    if not distances:
        return None
    mean = sum(distances) / len(distances)
    return mean, (sum((distance - mean) ** 2 for distance in distances) / len(distances)) ** 0.5


def sample_ids(top: int) -> list[int]:
    """SAMPLE ids spread evenly over 1..top (the highest fact id handed out): the stored
    vectors whose distances estimate memory at large, the same for every query."""
    step = max(top // SAMPLE, 1)
    return list(range(step, top + 1, step))[:SAMPLE]


def reference(conn: apsw.Connection, found: Space) -> Sequence[tuple[float, ...]]:
    """The REFERENCE vectors of the stored model, or none while they are not made yet."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'vector_reference'").fetchone()
    if row is None:
        return []
    return reference_texts.decoded(row[0], found.dimension)


def needs_reference(conn: apsw.Connection) -> bool:
    """Whether memory has vectors but not yet the REFERENCE ones of their model."""
    found = space(conn)
    return found is not None and not reference(conn, found)


def store_reference(conn: apsw.Connection, answer: Vectors) -> bool:
    """Keep the REFERENCE vectors (an answer for exactly those texts) if they are of the stored
    kind; returns whether they were kept."""
    found = space(conn)
    if found is None or len(answer.rows) != len(REFERENCE):
        return False
    try:
        check(found, answer)
    except VectorError:
        return False
    packed = reference_texts.pack(answer.rows)
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('vector_reference', ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (base64.b64encode(packed).decode(),),
    )
    if needs_center(conn):
        recenter(conn)
    return True


def nearest(conn: apsw.Connection, query: Vectors, *, max_distance: float, limit: int) -> list[int]:
    """Fact ids nearest the query vector, closest first, at most `limit`, all under the cut-off.
    Raises VectorError when the query is not of the stored kind."""
    found = neighbourhood(conn, query, limit=limit)
    return [fact for fact, distance in found.nearest if distance < max_distance] if found else []


def bits(vector: Sequence[float], center: Sequence[float] | None = None) -> bytes:
    """One bit per dimension, set where the vector lies above the center (above 0 without one),
    least significant bit first as sqlite-vec's vec_quantize_binary packs them."""
    packed = 0
    if center is None:
        for index, value in enumerate(vector):
            if value > 0.0:
                packed |= 1 << index
    else:
        for index, (value, middle) in enumerate(zip(vector, center)):
            if value > middle:
                packed |= 1 << index
    return packed.to_bytes(_bytes(len(vector)), "little")


def _bytes(dimension: int) -> int:
    return (dimension + 7) // 8


def pack(vector: Sequence[float]) -> bytes:
    """A vector as float32 bytes, little-endian: how both engines keep a center, and this one its vectors."""
    return struct.pack(f"<{len(vector)}f", *vector)


def unpack(blob: bytes) -> tuple[float, ...]:
    return struct.unpack(f"<{len(blob) // 4}f", blob)


def as_float32(values: Sequence[float]) -> tuple[float, ...]:
    """The values as float32 holds them: what this index reads back of a stored vector."""
    return unpack(pack(values))
