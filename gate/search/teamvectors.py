"""A team's vectors on pgvector: gate.search.vectors's index, over a project in a team database.

The same contract as the local index: a fact's vector embeds vectors.fact_text, vectors are
unit length and cosine distance is the measure, `facts_to_embed` lists every fact whose vector
is missing or stale (schema-postgres.sql section 4, kept by triggers whoever changes a fact) and
search never trusts a vector it lists. Requests to the endpoint happen outside the team's
transactions; `sync` stores, inside the write's, the vectors whose text is still the fact's.

Near is measured as locally too: exactly up to vectors.EXACT_LIMIT vectors (pgvector's `<=>`
over every row: no approximate index is made); past it, by the same bits (one per dimension,
against the same center, the mean of the model's REFERENCE vectors, schema-postgres.sql section
5), kept in a PostgreSQL bit string since pgvector 0.6 has none, a Hamming ranking whose
candidates strictly nearer than the vectors.POOL-th (vectors.within_edge) the exact distance then
ranks. How far memory at large lies from a query is estimated from the same vectors as locally
(all of them up to vectors.EXACT_LIMIT, else vectors.sample_ids' evenly spread SAMPLE), with the
same REFERENCE vectors, so that `search.near` judges both engines' neighbourhoods alike. So the
same facts with the same vectors answer the same on both engines, however they arrived.

Every function takes a TeamFacts (gate.engine.teamfacts): its connection and project. This
module never imports psycopg.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager as ContextManager

from gate.search import backfill, reference as reference_texts, vectors
from gate.search.embeddings import Endpoint, VectorError, Vectors

NO_PGVECTOR = (
    "the team database has no pgvector (its server lacks it, or no one has run CREATE EXTENSION vector "
    "there): `memory-gate doctor` says which"
)


def literal(vector: Sequence[float]) -> str:
    """A vector as pgvector reads it: '[0.1,0.2,...]'. repr keeps every digit of a float, and
    pgvector rounds it to float4 as the local index packs it."""
    return "[" + ",".join(map(repr, vector)) + "]"


def available(team) -> bool:
    """Whether the team database holds vectors at all (facts_vec, made by schema section 4's
    memory_gate_vectors() where pgvector can be installed). Asks again each time: once the
    database's owner has installed pgvector, the next call makes the table."""
    return bool(team.conn.execute("SELECT memory_gate_vectors()").fetchone()[0])


def space(team) -> vectors.Space | None:
    """The project's vector space (center None: search is exact), or None while it has none."""
    row = team.conn.execute(
        "SELECT model, dimension, center FROM vector_spaces WHERE project = %s", (team.project,)
    ).fetchone()
    if not row:
        return None
    return vectors.Space(row[0], row[1], vectors.unpack(bytes(row[2])) if row[2] is not None else None)


def bit_string(vector: Sequence[float], center: Sequence[float] | None) -> str:
    """vectors.bits as PostgreSQL's bit string text ('0110...'), for facts_vec.bits."""
    return "".join(format(byte, "08b") for byte in vectors.bits(vector, center))


def hamming_pool(team, vector: Sequence[float], center: Sequence[float], size: int) -> list[tuple[int, int]]:
    """The `size` vectors of the project nearest `vector` by Hamming distance over the bits
    against `center` (ties by id): (id, distance), nearest first."""
    return team.conn.execute(
        "SELECT id, bit_count(bits # %s::varbit) AS hamming FROM facts_vec WHERE project = %s"
        " ORDER BY hamming, id LIMIT %s",
        (bit_string(vector, center), team.project, size),
    ).fetchall()


def recenter(team) -> int:
    """vectors.recenter over the project: the mean of the model's REFERENCE vectors as the
    center, and every row's bits against it; a no-op without them (search stays exact). Returns
    the rows."""
    conn, project = team.conn, team.project
    found = space(team)
    center = vectors.center_of(reference(team, found)) if found else None
    if center is None:
        return 0
    conn.execute("SET LOCAL statement_timeout = 0")  # reading every vector: seconds past 10k facts
    rows = [
        (fact, vectors.as_float32(values))
        for fact, values in conn.execute(
            "SELECT id, embedding::real[] FROM facts_vec WHERE project = %s ORDER BY id", (project,)
        )
    ]
    conn.execute("UPDATE vector_spaces SET center = %s WHERE project = %s", (vectors.pack(center), project))
    with conn.cursor() as cursor:
        cursor.executemany(
            "UPDATE facts_vec SET bits = %s::varbit WHERE project = %s AND id = %s",
            [(bit_string(vector, center), project, fact) for fact, vector in rows],
        )
    return len(rows)


def missing(team) -> int:
    """How many of the project's facts lack a current vector."""
    return team.conn.execute("SELECT count(*) FROM facts_to_embed WHERE project = %s", (team.project,)).fetchone()[0]


def stored(team) -> int:
    return team.conn.execute("SELECT count(*) FROM facts_vec WHERE project = %s", (team.project,)).fetchone()[0]


def waiting(
    team, *, limit: int = vectors.WAITING_BATCH, chars: int = vectors.WAITING_CHARS, after: int | None = None
) -> list[tuple[int, str]]:
    """vectors.waiting over the project: (id, text to embed), the newest first, or with
    `after` the oldest above that id."""
    order, bound = ("DESC", "") if after is None else ("", " AND w.id > %s")
    params = (team.project,) + (() if after is None else (after,)) + (limit,)
    rows = team.conn.execute(
        "SELECT f.id, f.topic, f.text FROM facts_to_embed w JOIN facts f ON f.project = w.project AND f.id = w.id"
        f" WHERE w.project = %s{bound} ORDER BY w.id {order} LIMIT %s",
        params,
    ).fetchall()
    found: list[tuple[int, str]] = []
    total = 0
    for fact_id, topic, text in rows:
        item = vectors.fact_text(topic, text)
        if found and total + len(item) > chars:
            break
        found.append((fact_id, item))
        total += len(item)
    return found


def _owed(team, ids: Sequence[int]) -> set[int]:
    rows = team.conn.execute(
        "SELECT id FROM facts_to_embed WHERE project = %s AND id = ANY(%s)", (team.project, list(ids))
    )
    return {row[0] for row in rows}


def embed_ahead(team, endpoint: Endpoint, texts: list[str], touched: Iterable[int]) -> vectors.Prepared | None:
    """changeset.embed_ahead for a team's write: the texts it will store and a few facts still
    waiting, embedded in one request. The waiting facts are read in a transaction of their own,
    before the write's; none of it when the database holds no vectors."""
    with team.transaction():
        if not available(team):
            return None
        skip = set(touched)
        riding = [(fact, text) for fact, text in waiting(team) if fact not in skip]
    return vectors.prepare(endpoint, texts + [text for _, text in riding], [fact for fact, _ in riding])


def sync(team, ids: Iterable[int], prepared: vectors.Prepared | None) -> int:
    """vectors.sync inside the team's transaction, whose change set holds the project's lock:
    drop the vectors of facts changed, store `prepared` ones whose text is still the fact's, and
    take those facts off facts_to_embed. Returns how many were stored."""
    wanted = sorted(set(ids) | set(prepared.waiting if prepared else ()))
    if not wanted or not available(team):
        return 0
    conn, project = team.conn, team.project
    current = {
        row[0]: vectors.fact_text(row[1], row[2])
        for row in conn.execute(
            "SELECT id, topic, text FROM facts WHERE project = %s AND id = ANY(%s)", (project, wanted)
        )
    }
    owed = _owed(team, wanted)
    stale = [fact for fact in wanted if fact in owed]  # a fact gone took its vector with it
    conn.execute("DELETE FROM facts_vec WHERE project = %s AND id = ANY(%s)", (project, stale))
    if prepared is None or not stale:
        return 0
    try:
        found = _ensure_space(team, prepared.vectors)
    except VectorError:
        return 0
    rows = []
    for fact in stale:
        vector = prepared.by_text.get(current.get(fact, ""))
        if vector is not None:
            bits = bit_string(vector, found.center) if found.center is not None else None
            rows.append((project, fact, literal(vector), bits))
    if rows:
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO facts_vec (project, id, embedding, bits) VALUES (%s, %s, %s::vector, %s::varbit)", rows
            )
        conn.execute(
            "DELETE FROM facts_to_embed WHERE project = %s AND id = ANY(%s)",
            (project, [fact for _, fact, _, _ in rows]),
        )
        if stored(team) <= RECENTER_IN_A_WRITE and needs_center(team):
            recenter(team)
    return len(rows)


# A write that takes the project past vectors.EXACT_LIMIT sets its center, which reads every
# vector: a few ms for a project just past it. A project already far past it (one of an earlier
# memory-gate, whose vectors were never given bits or were centered on its first vectors) is
# centered by the member's server between turns, or by a reindex, never inside a write the agent
# waits on (a minute at 100k facts).
RECENTER_IN_A_WRITE = 4 * vectors.EXACT_LIMIT


def needs_center(team) -> bool:
    """vectors.needs_center over the project: past vectors.EXACT_LIMIT with the REFERENCE vectors
    known, its bits not against their center."""
    found = space(team)
    return found is not None and vectors.center_due(found, reference(team, found), stored(team)) is not None


def center_if_due(team) -> None:
    """Center a project that needs_center, under the project's lock (the member's server between
    turns, and reindex), in the caller's transaction."""
    if needs_center(team):
        team.conn.execute("SELECT 1 FROM projects WHERE id = %s FOR UPDATE", (team.project,))
        recenter(team)


def _ensure_space(team, answer: Vectors) -> vectors.Space:
    """The project's space, made from `answer` if it has none; VectorError when the answer is of
    another kind. Under the project's lock, so two members' first vectors make one space."""
    team.conn.execute("SELECT 1 FROM projects WHERE id = %s FOR UPDATE", (team.project,))
    found = space(team)
    if found is None:
        team.conn.execute(
            "INSERT INTO vector_spaces (project, model, dimension) VALUES (%s, %s, %s)",
            (team.project, answer.model, answer.dimension),
        )
        return vectors.Space(answer.model, answer.dimension, None)
    vectors.check(found, answer)
    return found


def forget(team) -> None:
    """Drop the project's vectors and space, and owe every fact a vector (reindex starts here)."""
    conn, project = team.conn, team.project
    conn.execute("DELETE FROM facts_vec WHERE project = %s", (project,))
    conn.execute("DELETE FROM vector_spaces WHERE project = %s", (project,))
    conn.execute(
        "INSERT INTO facts_to_embed (project, id) SELECT project, id FROM facts WHERE project = %s"
        " ON CONFLICT DO NOTHING",
        (project,),
    )


def reference(team, found: vectors.Space) -> list[tuple[float, ...]]:
    row = team.conn.execute("SELECT reference FROM vector_spaces WHERE project = %s", (team.project,)).fetchone()
    return reference_texts.unpack(bytes(row[0]), found.dimension) if row and row[0] is not None else []


def needs_reference(team) -> bool:
    found = space(team)
    return found is not None and not reference(team, found)


def store_reference(team, answer: Vectors) -> bool:
    """Keep the REFERENCE vectors if they are of the project's space; returns whether kept."""
    found = space(team)
    if found is None or len(answer.rows) != len(vectors.REFERENCE):
        return False
    try:
        vectors.check(found, answer)
    except VectorError:
        return False
    team.conn.execute(
        "UPDATE vector_spaces SET reference = %s WHERE project = %s",
        (reference_texts.pack(answer.rows), team.project),
    )
    return True


def neighbourhood(team, query: Vectors, *, limit: int) -> vectors.Neighbourhood | None:
    """vectors.neighbourhood over the project's vectors, in the caller's transaction: the
    `limit` trusted facts nearest the query, closest first (ties by id, as locally), with the
    spread of its distances to memory at large; None while the project holds no vectors. Raises
    VectorError when the query is not of the project's kind."""
    if not available(team):
        return None
    found = space(team)
    if found is None:
        return None
    vectors.check(found, query)
    conn, project, vector = team.conn, team.project, literal(query.rows[0])
    count = stored(team)
    size = max(vectors.POOL, limit)
    pool = None
    if found.center is not None and count > vectors.EXACT_LIMIT:
        pool = vectors.within_edge(hamming_pool(team, query.rows[0], found.center, size), size)
    if pool is None:
        nearest = conn.execute(
            "SELECT v.id, v.embedding <=> %s::vector AS distance FROM facts_vec v WHERE v.project = %s"
            " AND NOT EXISTS (SELECT 1 FROM facts_to_embed w WHERE w.project = v.project AND w.id = v.id)"
            " ORDER BY distance, v.id LIMIT %s",
            (vector, project, limit),
        ).fetchall()
    else:
        # The pool ranked exactly; a vector not trusted is left out after, as locally, so that
        # both engines rank the same pool.
        ranked = conn.execute(
            "SELECT v.id, v.embedding <=> %s::vector AS distance, EXISTS (SELECT 1 FROM facts_to_embed w"
            "  WHERE w.project = v.project AND w.id = v.id) FROM facts_vec v WHERE v.project = %s AND v.id = ANY(%s)"
            " ORDER BY distance, v.id",
            (vector, project, pool),
        ).fetchall()
        nearest = [(fact, distance) for fact, distance, waits in ranked if not waits][:limit]
    if count <= vectors.EXACT_LIMIT:  # every stored vector, trusted or not, as locally
        sample = [
            row[0]
            for row in conn.execute(
                "SELECT embedding <=> %s::vector FROM facts_vec WHERE project = %s", (vector, project)
            )
        ]
    else:
        top = conn.execute("SELECT last_fact FROM projects WHERE id = %s", (project,)).fetchone()[0]
        sample = [
            row[0]
            for row in conn.execute(
                "SELECT embedding <=> %s::vector FROM facts_vec WHERE project = %s AND id = ANY(%s)",
                (vector, project, vectors.sample_ids(top)),
            )
        ]
    measured = vectors.spread_of(query.rows[0], sample, reference(team, found))
    if measured is None:
        return None
    return vectors.Neighbourhood([(fact, distance) for fact, distance in nearest], *measured)


# -- catching up and rebuilding ---------------------------------------------------------------


def catch_up(
    team,
    endpoint: Endpoint,
    *,
    hold: Callable[[], ContextManager[object]],
    batch: int = backfill.CATCH_UP_BATCH,
    timeout: float = backfill.CATCH_UP_TIMEOUT,
    until: float | None = None,
) -> int:
    """gate.search.backfill.catch_up_in over the project: the facts still waiting embedded a few
    a request, each batch stored in a team transaction of its own under `hold()`, never across a
    request; the project centered when due; then the REFERENCE vectors if the project lacks them
    (not for a search, which passes `until`). Returns how many facts were stored."""
    return backfill.catch_up_in(TeamVectors(team), endpoint, hold=hold, batch=batch, timeout=timeout, until=until)


class TeamVectors:
    """A project's vectors as gate.search.backfill.catch_up_in keeps them: each step a team
    transaction of its own, each store under the project's lock."""

    faults: tuple[type[Exception], ...] = ()  # a team out of reach is the caller's to say (postgres.Unreachable)

    def __init__(self, team):
        self.facts = team  # a TeamFacts

    def reading(self) -> ContextManager[object]:
        return self.facts.transaction()

    def changing(self) -> ContextManager[object]:
        return self.facts.transaction()

    def available(self) -> bool:
        return available(self.facts)

    def waiting(self, *, limit: int, chars: int, after: int | None = None) -> list[tuple[int, str]]:
        return waiting(self.facts, limit=limit, chars=chars, after=after)

    def owed(self, ids: list[int]) -> set[int]:
        return _owed(self.facts, ids)

    def require(self) -> None:
        if not available(self.facts):
            raise VectorError(NO_PGVECTOR)

    def count(self) -> int:
        row = self.facts.conn.execute("SELECT count(*) FROM facts WHERE project = %s", (self.facts.project,))
        return row.fetchone()[0]

    def first(self, batch: int) -> list[tuple[int, str]]:
        rows = self.facts.conn.execute(
            "SELECT id, topic, text FROM facts WHERE project = %s ORDER BY id LIMIT %s", (self.facts.project, batch)
        )
        return [(row[0], vectors.fact_text(row[1], row[2])) for row in rows]

    def forget(self) -> None:
        self.facts.conn.execute("SELECT 1 FROM projects WHERE id = %s FOR UPDATE", (self.facts.project,))
        forget(self.facts)

    def finish(self, endpoint: Endpoint, batch: int, timeout: float) -> vectors.Space | None:
        """After a rebuild: the REFERENCE vectors asked for a batch a request, the project
        centered when due; the space it is in."""
        known = backfill.reference_vectors(endpoint, batch, timeout)
        with self.facts.transaction():
            if known is not None:
                store_reference(self.facts, known)
            center_if_due(self.facts)
            return space(self.facts)

    def missing(self) -> int:
        return missing(self.facts)

    def sync(self, ids: list[int], prepared: vectors.Prepared) -> int:
        self.facts.conn.execute("SELECT 1 FROM projects WHERE id = %s FOR UPDATE", (self.facts.project,))
        return sync(self.facts, ids, prepared)

    def settle(self, hold: Callable[[], ContextManager[object]]) -> None:
        """Center the project if it is due (a background chore, never a search's)."""
        with hold(), self.facts.transaction():
            center_if_due(self.facts)

    def needs_reference(self) -> bool:
        return needs_reference(self.facts)

    def store_reference(self, answer: Vectors) -> bool:
        """Keep the REFERENCE vectors, and center the project on them if it is past the limit."""
        kept = store_reference(self.facts, answer)
        center_if_due(self.facts)
        return kept


def rebuild(
    team,
    endpoint: Endpoint,
    *,
    progress: Callable[[int, int], None] | None = None,
    batch: int = backfill.REINDEX_BATCH,
    timeout: float = backfill.REINDEX_TIMEOUT,
) -> backfill.Rebuilt:
    """gate.search.backfill.rebuild_in over the project (`memory-gate reindex` on a team): the
    first batch is asked for before the project's vectors are dropped, so an endpoint that does
    not answer leaves them as they were (VectorError); then every fact embedded again, a batch a
    request and a transaction, a refused batch retried a fact at a time. The database must hold
    vectors (VectorError naming the mend otherwise)."""
    return backfill.rebuild_in(TeamVectors(team), endpoint, progress=progress, batch=batch, timeout=timeout)


# -- reporting ----------------------------------------------------------------------------------


def status(team) -> dict:
    """What doctor says of a team project's vectors, in the caller's transaction."""
    if not available(team):
        return {"pgvector": "not installed in the database", "facts_without_vector": missing(team)}
    found = space(team)
    report: dict = {"facts_without_vector": missing(team)}
    if found is not None:
        prefilter = found.center is not None and stored(team) > vectors.EXACT_LIMIT
        search = f"bit prefilter, about {vectors.POOL} rescored (pgvector)" if prefilter else "exact (pgvector)"
        report["stored"] = {
            "model": found.model,
            "dimension": found.dimension,
            "vectors": stored(team),
            "search": search,
        }
    return report
