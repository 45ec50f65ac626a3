"""The vector index: made from schema.sql's template, kept true to the facts in their own
transaction, exact while small, a centred bit prefilter with exact rescoring when large."""

import base64
import contextlib
import math
import random

import pytest

from gate.engine import store
from gate.search import backfill, embeddings, vectors
from gate.search.embeddings import Endpoint, VectorError, Vectors


@pytest.fixture
def vconn(conn):
    if not store.load_vectors(conn):
        pytest.skip("sqlite-vec cannot be loaded here")
    return conn


def unit(values):
    norm = math.sqrt(sum(v * v for v in values))
    return tuple(v / norm for v in values)


def add(conn, text, vector, model="m"):
    """A fact inserted and given `vector`, as a write does."""
    fact = conn.execute(
        "INSERT INTO facts (topic, kind, text, date, created, updated, confirmed)"
        " VALUES ('t', 'state', ?, '2026-01-01', '', '', '') RETURNING id",
        (text,),
    ).fetchone()[0]
    prepared = vectors.Prepared(Vectors(model, [unit(vector)]), {vectors.fact_text("t", text): unit(vector)}, [])
    with store.writing(conn):
        vectors.sync(conn, [fact], prepared)
    return fact


def query(vector, model="m"):
    return Vectors(model, [unit(vector)])


def test_the_table_comes_from_the_schema_template(vconn):
    assert not vectors.has_table(vconn)  # applying schema.sql does not make it
    sql = store.schema_template("vectors", bits=16)
    assert "bit[16]" in sql and "{" not in sql
    vconn.execute(sql)
    assert vectors.has_table(vconn)


@pytest.mark.parametrize("dimension", [8, 24, 384])
def test_bits_are_packed_as_sqlite_vec_packs_them(vconn, dimension):
    rng = random.Random(dimension)
    vector = [rng.uniform(-1, 1) for _ in range(dimension)]
    ours = vectors.bits(vector)
    theirs = vconn.execute("SELECT vec_quantize_binary(?)", (vectors.pack(vector),)).fetchone()[0]
    assert ours == theirs


def test_bits_of_an_odd_dimension_are_padded():
    assert vectors.bits([1.0] * 12) == bytes([0xFF, 0x0F])
    assert vectors.bits([0.2, 0.1], center=[0.15, 0.15]) == bytes([0x01])


def test_first_vectors_make_the_index_and_record_their_kind(vconn):
    fact = add(vconn, "deploys go through staging", [1, 0, 0, 0, 0, 0, 0, 0])
    assert vectors.space(vconn) == vectors.Space("m", 8, None)
    assert vectors.missing(vconn) == 0
    assert vectors.nearest(vconn, query([1, 0.1, 0, 0, 0, 0, 0, 0]), max_distance=0.5, limit=30) == [fact]


def test_the_cut_off_keeps_what_is_far_out(vconn):
    add(vconn, "a", [1, 0, 0, 0, 0, 0, 0, 0])
    assert vectors.nearest(vconn, query([0, 1, 0, 0, 0, 0, 0, 0]), max_distance=0.5, limit=30) == []


def test_vectors_of_another_kind_are_refused_with_the_mend(vconn):
    add(vconn, "a", [1, 0, 0, 0, 0, 0, 0, 0])
    with pytest.raises(VectorError, match="have 4 dimensions, memory's 8: run `memory-gate reindex`"):
        vectors.nearest(vconn, query([1, 0, 0, 0]), max_distance=0.5, limit=30)
    with pytest.raises(VectorError, match="model is e5, memory's vectors are m's: run `memory-gate reindex`"):
        vectors.nearest(vconn, query([1, 0, 0, 0, 0, 0, 0, 0], model="e5"), max_distance=0.5, limit=30)
    fact = add(vconn, "b", [1, 0, 0, 0], model="m")  # stored nowhere: it waits
    assert vectors.missing(vconn) == 1 and fact not in vectors.nearest(
        vconn, query([1, 0, 0, 0, 0, 0, 0, 0]), max_distance=2, limit=30
    )


def test_a_fact_changed_where_sqlite_vec_is_missing_is_not_found_by_its_old_vector(vconn, db_path):
    conn = store.connect(db_path)
    store.load_vectors(conn)
    fact = add(conn, "deploys go through staging", [1, 0, 0, 0, 0, 0, 0, 0])
    plain = store.connect(db_path)  # no sqlite-vec: the schema's triggers still keep track
    assert not store.vectors_loaded(plain)
    plain.execute("UPDATE facts SET text = 'the office cat sleeps on the printer' WHERE id = ?", (fact,))
    assert vectors.waiting(conn) == [(fact, "t\nthe office cat sleeps on the printer")]
    assert vectors.nearest(conn, query([1, 0, 0, 0, 0, 0, 0, 0]), max_distance=0.5, limit=30) == []
    gone = add(conn, "another", [0, 1, 0, 0, 0, 0, 0, 0])
    plain.execute("DELETE FROM facts WHERE id = ?", (gone,))
    assert vectors.nearest(conn, query([0, 1, 0, 0, 0, 0, 0, 0]), max_distance=0.5, limit=30) == []


def test_sync_drops_the_vector_of_a_deleted_or_changed_fact(vconn):
    fact = add(vconn, "a", [1, 0, 0, 0, 0, 0, 0, 0])
    vconn.execute("UPDATE facts SET text = 'b' WHERE id = ?", (fact,))
    with store.writing(vconn):
        vectors.sync(vconn, [fact], None)
    assert vconn.execute("SELECT count(*) FROM facts_vec").fetchone()[0] == 0
    assert vectors.missing(vconn) == 1


def test_a_vector_of_an_older_text_is_not_stored(vconn):
    """Embedded before the transaction; another session changed the fact in between."""
    fact = add(vconn, "a", [1, 0, 0, 0, 0, 0, 0, 0])
    vconn.execute("UPDATE facts SET text = 'c' WHERE id = ?", (fact,))
    stale = vectors.Prepared(
        Vectors("m", [unit([0, 1, 0, 0, 0, 0, 0, 0])]), {"t\nb": unit([0, 1, 0, 0, 0, 0, 0, 0])}, []
    )
    with store.writing(vconn):
        assert vectors.sync(vconn, [fact], stale) == 0
    assert vectors.missing(vconn) == 1


def clustered(rng, count, dimension, offset):
    """Vectors the way embedding models spread them: in clusters, all inside one cone."""
    centers = [[rng.gauss(0, 1) for _ in range(dimension)] for _ in range(count // 20)]
    rows = []
    for _ in range(count):
        center = rng.choice(centers)
        rows.append(unit([o + c + rng.gauss(0, 1) for o, c in zip(offset, center)]))
    return rows


def exact(rows, vector, k):
    return sorted(range(len(rows)), key=lambda i: 1 - sum(a * b for a, b in zip(rows[i], vector)))[:k]


def test_past_the_exact_limit_the_centred_prefilter_keeps_recall(vconn, monkeypatch):
    monkeypatch.setattr(vectors, "EXACT_LIMIT", 60)
    monkeypatch.setattr(vectors, "POOL", 60)
    rng = random.Random(5)
    dimension = 128
    offset = [6.0 * rng.gauss(0, 1) for _ in range(dimension)]  # a narrow cone, like e5's
    rows = clustered(rng, 400, dimension, offset)
    ids = [add(vconn, f"fact {i}", row) for i, row in enumerate(rows[:10])]
    known = clustered(rng, 40, dimension, offset)[: len(vectors.REFERENCE)]  # the model's REFERENCE vectors
    with store.writing(vconn):
        vectors.store_reference(vconn, Vectors("m", known))
    assert vectors.space(vconn).center is None  # exact while small
    ids += [add(vconn, f"fact {i}", row) for i, row in enumerate(rows[10:], start=10)]
    center = vectors.space(vconn).center
    assert center == vectors.center_of(known)  # set once the index outgrew exact search
    found, raw = 0, 0
    for _ in range(20):
        target = rows[rng.randrange(len(rows))]
        near = unit([t + 0.01 * rng.gauss(0, 1) for t in target])  # a rewording of one fact
        truth = {ids[i] for i in exact(rows, near, 10)}
        found += len(truth & set(vectors.nearest(vconn, query(near), max_distance=2.0, limit=10)))
        # The same prefilter on signs taken against zero, as vec_quantize_binary takes them.
        signs = [int.from_bytes(vectors.bits(row), "little") for row in rows]
        mine = int.from_bytes(vectors.bits(near), "little")
        pool = sorted(range(len(rows)), key=lambda i: (signs[i] ^ mine).bit_count())[:60]
        raw += len(truth & {ids[i] for i in pool})
    assert found / 200 >= 0.95 and raw / 200 < 0.8


def test_the_same_facts_answer_the_same_however_they_arrived(vconn, tmp_path, monkeypatch):
    """Past EXACT_LIMIT, a memory written fact by fact (the REFERENCE vectors arriving early,
    some facts deleted and others written after, so that vec0 holds the vectors in another order)
    and one whose vectors all came at once, as a reindex or an import stores them, answer every
    query alike: the center is the model's, and the pool holds the vectors nearer than its edge,
    whatever order vec0 meets the ones tied at the edge in."""
    monkeypatch.setattr(vectors, "POOL", 40)  # a small pool: which vectors it holds decides answers
    rng = random.Random(11)
    dimension = 48
    offset = [6.0 * rng.gauss(0, 1) for _ in range(dimension)]
    rows = clustered(rng, vectors.EXACT_LIMIT + 210, dimension, offset)
    known = clustered(rng, 40, dimension, offset)[: len(vectors.REFERENCE)]
    texts = [f"fact {i}" for i in range(len(rows))]
    gone = range(1, 61)  # deleted once the memory is past the limit; later facts take their places

    written = vconn
    for i, row in enumerate(rows[:-60]):
        add(written, texts[i], row)
        if i == 9:
            with store.writing(written):
                vectors.store_reference(written, Vectors("m", known))
    for fact in gone:
        written.execute("DELETE FROM facts WHERE id = ?", (fact,))
        with store.writing(written):
            vectors.sync(written, [fact], None)
    for i, row in enumerate(rows[-60:], start=len(rows) - 60):
        add(written, texts[i], row)

    rebuilt = store.connect(tmp_path / "rebuilt.db")
    store.load_vectors(rebuilt)
    for text in texts:
        rebuilt.execute(
            "INSERT INTO facts (topic, kind, text, date, created, updated, confirmed)"
            " VALUES ('t', 'state', ?, '2026-01-01', '', '', '')",
            (text,),
        )
    rebuilt.execute("DELETE FROM facts WHERE id <= 60")
    by_text = {vectors.fact_text("t", text): row for text, row in zip(texts, rows)}
    with store.writing(rebuilt):
        vectors.sync(rebuilt, range(61, len(texts) + 1), vectors.Prepared(Vectors("m", rows[60:]), by_text, []))
        vectors.store_reference(rebuilt, Vectors("m", known))

    assert vectors.space(written).center == vectors.space(rebuilt).center == vectors.center_of(known)
    kept = rows[60:]
    differs_from_exact = 0
    for _ in range(40):
        near = query([t + 0.3 * rng.gauss(0, 1) for t in rng.choice(kept)])
        # As many as the pool holds: every fact in it is in the answer.
        one, other = vectors.neighbourhood(written, near, limit=40), vectors.neighbourhood(rebuilt, near, limit=40)
        assert one == other
        differs_from_exact += [fact for fact, _ in one.nearest[:30]] != [i + 61 for i in exact(kept, near.rows[0], 30)]
    assert differs_from_exact  # the prefilter was at work, not exact search
    rebuilt.close()


def test_rebuild_embeds_every_fact_again(vconn, fake_embeddings, monkeypatch):
    monkeypatch.setattr(vectors, "EXACT_LIMIT", 5)
    texts = [f"note {i} about deploys and staging {i % 3}" for i in range(12)]
    for text in texts:
        vconn.execute(
            "INSERT INTO facts (topic, kind, text, date, created, updated, confirmed)"
            " VALUES ('deploy', 'state', ?, '2026-01-01', '', '', '')",
            (text,),
        )
    seen = []
    rebuilt = backfill.rebuild(
        vconn, Endpoint(fake_embeddings.url, "m"), batch=5, progress=lambda done, total: seen.append((done, total))
    )
    assert rebuilt.embedded == 12 and rebuilt.failed == [] and seen[-1] == (12, 12)
    assert vectors.missing(vconn) == 0 and rebuilt.space.center is not None
    # The facts a batch a request, then the model's reference texts once.
    assert [len(r["input"]) for r in fake_embeddings.requests] == [5, 5, 2, len(vectors.REFERENCE)]
    assert not vectors.needs_reference(vconn)


def test_rebuild_retries_a_refused_batch_one_fact_at_a_time(vconn, fake_embeddings):
    for text in ("a", "b", "c"):
        vconn.execute(
            "INSERT INTO facts (topic, kind, text, date, created, updated, confirmed)"
            " VALUES ('t', 'state', ?, '2026-01-01', '', '', '')",
            (text,),
        )
    endpoint = Endpoint(fake_embeddings.url, "m")
    original = endpoint.embed
    calls = []

    def refuse_b(texts, **kwargs):
        calls.append(list(texts))
        if "t\nc" in texts:
            raise VectorError("embeddings endpoint answered HTTP 500")
        return original(texts, **kwargs)

    endpoint.embed = refuse_b
    vconn.execute(
        "INSERT INTO facts (topic, kind, text, date, created, updated, confirmed)"
        " VALUES ('t', 'state', 'd', '2026-01-01', '', '', '')"
    )
    rebuilt = backfill.rebuild(vconn, endpoint, batch=2)
    assert rebuilt.embedded == 3 and rebuilt.failed == [3]
    assert calls == [["t\na", "t\nb"], ["t\nc", "t\nd"], ["t\nc"], ["t\nd"], list(vectors.REFERENCE)]
    assert [fact for fact, _ in vectors.waiting(vconn)] == [3]


def test_rebuild_keeps_the_old_vectors_when_the_endpoint_is_down(vconn, down_url):
    add(vconn, "a", [1, 0, 0, 0, 0, 0, 0, 0])
    with pytest.raises(VectorError, match="unreachable"):
        backfill.rebuild(vconn, Endpoint(down_url, "m"))
    assert vectors.space(vconn) is not None and vectors.missing(vconn) == 0


def test_waiting_is_newest_first_and_bounded(vconn):
    for i in range(20):
        vconn.execute(
            "INSERT INTO facts (topic, kind, text, date, created, updated, confirmed)"
            " VALUES ('t', 'state', ?, '2026-01-01', '', '', '')",
            ("x" * 500 + str(i),),
        )
    found = vectors.waiting(vconn)
    assert [fact for fact, _ in found] == [20, 19, 18, 17, 16] and len(found) <= vectors.WAITING_BATCH
    assert [fact for fact, _ in vectors.waiting(vconn, limit=3, after=4)] == [5, 6, 7]


def test_embeddings_module_stays_off_the_database():
    assert not hasattr(embeddings, "apsw")


def test_the_neighbourhood_knows_how_far_memory_lies_from_the_query(vconn, monkeypatch):
    rng = random.Random(5)
    # A crowd of facts around one direction, and one fact near the query.
    crowd = [add(vconn, f"crowd {i}", [1, *(rng.uniform(-0.3, 0.3) for _ in range(7))]) for i in range(40)]
    near = add(vconn, "near", [0, 1, 0.05, 0, 0, 0, 0, 0])
    found = vectors.neighbourhood(vconn, query([0, 1, 0, 0, 0, 0, 0, 0]), limit=5)
    assert found.nearest[0][0] == near and len(found.nearest) == 5
    exact = [1 - sum(a * b for a, b in zip(unit([0, 1, 0, 0, 0, 0, 0, 0]), row)) for row in _stored(vconn)]
    assert found.mean == pytest.approx(sum(exact) / len(exact), abs=1e-6)
    # Past exact search, the mean comes from a sample of the stored vectors, spread over them.
    monkeypatch.setattr(vectors, "EXACT_LIMIT", 5)
    monkeypatch.setattr(vectors, "SAMPLE", 10)
    with store.writing(vconn):
        vectors.recenter(vconn)
    sampled = vectors.neighbourhood(vconn, query([0, 1, 0, 0, 0, 0, 0, 0]), limit=5)
    assert sampled.nearest[0][0] == near
    assert sampled.mean == pytest.approx(found.mean, abs=0.05) and sampled.spread > 0
    assert crowd[0] not in [fact for fact, _ in sampled.nearest[:1]]


def test_the_reference_vectors_join_the_background(vconn):
    add(vconn, "only", [1, 0, 0, 0, 0, 0, 0, 0])
    alone = vectors.neighbourhood(vconn, query([1, 0, 0, 0, 0, 0, 0, 0]), limit=5)
    assert alone.spread == 0.0  # one fact: no spread to judge by
    rng = random.Random(9)
    rows = [unit([rng.uniform(-1, 1) for _ in range(8)]) for _ in vectors.REFERENCE]
    with store.writing(vconn):
        assert vectors.store_reference(vconn, Vectors("m", rows))
    assert not vectors.needs_reference(vconn)
    joined = vectors.neighbourhood(vconn, query([1, 0, 0, 0, 0, 0, 0, 0]), limit=5)
    assert joined.spread > 0 and joined.nearest == alone.nearest
    # Of another model, they are not kept.
    with store.writing(vconn):
        assert not vectors.store_reference(vconn, Vectors("other", rows))


def _stored(conn):
    return [vectors.unpack(blob) for (blob,) in conn.execute("SELECT embedding FROM facts_vec")]


def test_an_index_centered_by_an_earlier_memory_gate_is_centered_again_in_the_background(vconn, monkeypatch):
    """An earlier memory-gate centered the bits on the mean of the first vectors stored: the
    server's catch-up (settle) centers them on the REFERENCE vectors, and then answers as a
    reindexed memory would."""
    monkeypatch.setattr(vectors, "EXACT_LIMIT", 20)
    rng = random.Random(3)
    offset = [6.0 * rng.gauss(0, 1) for _ in range(16)]
    rows = clustered(rng, 60, 16, offset)
    for i, row in enumerate(rows):
        add(vconn, f"fact {i}", row)
    known = clustered(rng, 40, 16, offset)[: len(vectors.REFERENCE)]
    old = vectors.mean(rows[:21])
    with store.writing(vconn):
        vectors.store_reference(vconn, Vectors("m", known))
        vconn.execute(
            "UPDATE meta SET value = ? WHERE key = 'vector_center'", (base64.b64encode(vectors.pack(old)).decode(),)
        )
    assert vectors.needs_center(vconn)
    backfill.LocalVectors(vconn).settle(contextlib.nullcontext)
    assert not vectors.needs_center(vconn) and vectors.space(vconn).center == vectors.center_of(known)
    center = vectors.space(vconn).center
    stored = dict(vconn.execute("SELECT rowid, bits FROM facts_vec"))
    assert all(stored[i + 1] == vectors.bits(vectors.as_float32(row), center) for i, row in enumerate(rows))


def test_the_center_of_other_reference_vectors_is_taken_anew():
    """center_of keeps the last center it took (every call of the server asks it of the same
    rows): other rows, even equal ones in another object, get their own."""
    first = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0))
    second = ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0))
    assert vectors.center_of(first) == (0.5, 0.5, 0.0)
    assert vectors.center_of(first) == (0.5, 0.5, 0.0)
    assert vectors.center_of(second) == (0.0, 0.5, 0.5)
    assert vectors.center_of([list(row) for row in first]) == (0.5, 0.5, 0.0)
    assert vectors.center_of(()) is None
