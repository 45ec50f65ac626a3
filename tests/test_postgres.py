"""Team memory's engine on a real PostgreSQL with pgvector (tests/postgres_server.py): the schema,
its checks beside SQLite's, and what a member is told when the database is not there."""

from __future__ import annotations

import threading

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.engine import postgres, store, teamwords


def tables(url: str) -> set[str]:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (postgres.SCHEMA,)).fetchall()
    return {name for (name,) in rows}


def test_the_schema_applies_to_a_fresh_database_and_again_changes_nothing(postgres_url):
    conn = postgres.connect(postgres_url)
    assert postgres.version(conn) == len(postgres.schema_steps())
    conn.close()
    assert tables(postgres_url) == {"memory_gate_schema", "projects", "facts", "changes", "lexemes",
                                    "vector_spaces", "facts_to_embed", "facts_vec", "members"}
    again = postgres.connect(postgres_url)
    assert postgres.version(again) == len(postgres.schema_steps())
    assert again.execute("SELECT count(*) FROM memory_gate_schema").fetchone() == (1,)
    # The connection finds the tables by their plain names: its search_path is memory-gate's schema.
    assert again.execute("SELECT count(*) FROM facts").fetchone() == (0,)
    again.close()


def test_members_opening_a_fresh_database_at_once_all_get_it(postgres_url):
    found, errors = [], []

    def member():
        try:
            conn = postgres.connect(postgres_url)
            found.append(postgres.version(conn))
            conn.close()
        except Exception as error:  # the assertion below names it
            errors.append(error)

    threads = [threading.Thread(target=member) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == [] and found == [len(postgres.schema_steps())] * 4


VALID = {"topic": "deploy", "kind": "state", "text": "Deploys go through staging.", "date": "2026-12-01"}


@pytest.mark.parametrize("field, value", [
    ("topic", ""), ("topic", "   "), ("topic", "t" * 101), ("kind", "note"), ("text", ""),
    ("text", "x" * 601), ("date", "2026-1-01"), ("date", "yesterday"),
])
def test_a_fact_sqlite_refuses_postgresql_refuses_too(postgres_url, field, value):
    import psycopg

    row = {**VALID, field: value}
    local = store.connect(":memory:")
    with pytest.raises(apsw.ConstraintError):
        local.execute(
            "INSERT INTO facts (topic, kind, text, date, created, updated, confirmed) VALUES (?, ?, ?, ?, '', '', '')",
            (row["topic"], row["kind"], row["text"], row["date"]),
        )
    team = postgres.connect(postgres_url)
    project = team.execute("INSERT INTO projects (key, created) VALUES ('p', '') RETURNING id").fetchone()[0]
    team.commit()
    insert = ("INSERT INTO facts (project, id, topic, kind, text, date, created, updated, confirmed, changed_by, words)"
              " VALUES (%s, 1, %s, %s, %s, %s, '', '', '', 'me', ''::tsvector)")
    with pytest.raises(psycopg.errors.CheckViolation):
        team.execute(insert, (project, row["topic"], row["kind"], row["text"], row["date"]))
    team.rollback()
    # The valid fact goes in on both: it is the field, not the row, that is refused.
    team.execute(insert, (project, VALID["topic"], VALID["kind"], VALID["text"], VALID["date"]))
    team.commit()
    team.close()


def test_the_schema_makes_a_pgvector_table_whose_vectors_go_with_their_facts(postgres_url):
    conn = postgres.connect(postgres_url)
    assert conn.execute("SELECT memory_gate_vectors()").fetchone()[0] is True
    project = conn.execute("INSERT INTO projects (key, created) VALUES ('p', '') RETURNING id").fetchone()[0]
    for fact, vector in ((1, "[1,0,0]"), (2, "[0,1,0]")):
        conn.execute(
            "INSERT INTO facts (project, id, topic, kind, text, date, created, updated, confirmed, changed_by, words)"
            " VALUES (%s, %s, 't', 'state', 'x', '2026-12-01', '', '', '', 'me', ''::tsvector)", (project, fact))
        conn.execute("INSERT INTO facts_vec (project, id, embedding) VALUES (%s, %s, %s)", (project, fact, vector))
    assert conn.execute("SELECT count(*) FROM facts_to_embed").fetchone()[0] == 2  # new facts wait
    nearest = conn.execute("SELECT id FROM facts_vec ORDER BY embedding <=> '[0.1,0.9,0]' LIMIT 1").fetchone()
    assert nearest == (2,)
    conn.execute("DELETE FROM facts_to_embed")
    conn.execute("UPDATE facts SET confirmed = 'now' WHERE id = 1")  # no new text: nothing owed
    assert conn.execute("SELECT count(*) FROM facts_to_embed").fetchone()[0] == 0
    conn.execute("UPDATE facts SET text = 'y' WHERE id = 1")  # a new text owes a new vector
    assert conn.execute("SELECT id FROM facts_to_embed").fetchall() == [(1,)]
    conn.execute("DELETE FROM facts WHERE id = 2")  # a fact's vector goes with it
    assert conn.execute("SELECT id FROM facts_vec").fetchall() == [(1,)]
    conn.close()


def test_vectors_stored_before_the_bits_get_the_column_on_upgrade(postgres_url):
    """Section 5 gives a facts_vec made by section 4 its bits column, and every project's space a
    center, as a fresh database has them."""
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {postgres.SCHEMA}")
        conn.execute(f"SET search_path TO {postgres.SCHEMA}, public")
        for number, _, sql in postgres.schema_steps()[:4]:
            conn.execute(sql)
            conn.execute("UPDATE memory_gate_schema SET version = %s", (number,))
        assert "bits" not in columns(conn, "facts_vec")
    upgraded = postgres.connect(postgres_url)
    assert {"bits"} <= columns(upgraded, "facts_vec") and {"center"} <= columns(upgraded, "vector_spaces")
    upgraded.close()


def columns(conn, table: str) -> set[str]:
    return {name for (name,) in conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s",
        (postgres.SCHEMA, table))}


def test_a_database_newer_than_this_memory_gate_is_refused_with_the_mend(postgres_url):
    conn = postgres.connect(postgres_url)
    conn.execute("UPDATE memory_gate_schema SET version = 99")
    conn.commit()
    conn.close()
    with pytest.raises(store.StoreError, match="upgrade memory-gate"):
        postgres.connect(postgres_url)


def test_an_unreachable_server_names_the_mend_and_never_the_password():
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(store.StoreError) as raised:
        postgres.connect(f"postgresql://alice:s3cret-pw@127.0.0.1:{port}/team")
    message = str(raised.value)
    assert "cannot reach the team database" in message and "PGPASSWORD" in message
    assert "s3cret-pw" not in message and f"alice:***@127.0.0.1:{port}" in message


def test_a_malformed_connection_string_says_how_to_write_one():
    with pytest.raises(store.StoreError, match="postgresql://USER@HOST:PORT/DATABASE"):
        postgres.connect("host=127.0.0.1 port=notaport =broken")


@pytest.mark.parametrize("given, expected", [
    ("postgresql://alice:pw@db.example:5432/team", "postgresql://alice:***@db.example:5432/team"),
    ("postgresql://alice@db.example/team?sslmode=require", "postgresql://alice@db.example/team?sslmode=require"),
    ("postgresql://db.example/team?password=pw&sslmode=require", "postgresql://db.example/team?password=***&sslmode=require"),
    ("postgresql://alice:p%40ss@[::1]:5432/team", "postgresql://alice:***@[::1]:5432/team"),
    ("host=db.example password=pw dbname=team", "host=db.example password=*** dbname=team"),
    ("host=db.example password='p w' dbname=team", "host=db.example password=*** dbname=team"),
])
def test_a_url_is_shown_with_its_password_masked(given, expected):
    assert postgres.shown(given) == expected


def test_without_psycopg_opening_a_team_database_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg now raises ImportError
    with pytest.raises(store.StoreError, match=r"memory-gate\[team\]"):
        postgres.connect("postgresql://alice@127.0.0.1/team")


def test_the_schema_sections_are_numbered_like_sqlites():
    assert [number for number, _, _ in postgres.schema_steps()] == list(range(1, len(postgres.schema_steps()) + 1))
    with pytest.raises(store.StoreError, match="numbered 1, 2, 3"):
        postgres.schema_steps("-- version 1: a\nSELECT 1;\n-- version 3: c\nSELECT 1;\n")


# -- a fact's words: the SQLite index's, stored as a tsvector ---------------------------------------


@pytest.fixture(scope="module")
def words_db(postgres_server):
    """One database for the words tests (they only read literals back): made once, dropped after."""
    import psycopg

    with psycopg.connect(postgres_server.url(), autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS t_words")
        admin.execute("CREATE DATABASE t_words")
    conn = psycopg.connect(postgres_server.url("t_words"), autocommit=True)
    yield conn
    conn.close()
    with psycopg.connect(postgres_server.url(), autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS t_words WITH (FORCE)")


def sqlite_terms(topic: str, text: str) -> set[str]:
    local = store.connect(":memory:")
    local.execute(
        "INSERT INTO facts (topic, kind, text, date, created, updated, confirmed) VALUES (?, 'state', ?, '2026-12-01', '', '', '')",
        (topic, text),
    )
    found = {term for (term,) in local.execute("SELECT term FROM facts_vocab")}
    local.close()
    return found


def postgres_terms(conn, topic: str, text: str) -> dict[str, str]:
    rows = conn.execute("SELECT lexeme, weights FROM unnest(%s::tsvector)", (teamwords.words(topic, text),)).fetchall()
    return {lexeme: "".join(sorted(set(weights))) for lexeme, weights in rows}



WORDISH = st.text(st.characters(categories=["L", "M", "N", "P", "S", "Zs"]), min_size=1, max_size=60).filter(str.strip)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(topic=WORDISH, text=WORDISH)
def test_postgresql_holds_exactly_the_words_the_sqlite_index_holds(words_db, topic, text):
    assert set(postgres_terms(words_db, topic, text)) == sqlite_terms(topic, text)


@pytest.mark.parametrize("topic, text, expected", [
    ("Déploiement", "O escritório de São Paulo", {"deploiement": "A", "o": "D", "escritorio": "D", "de": "D", "sao": "D", "paulo": "D"}),
    ("ёлка", "διαρροής 'quoted' back\\slash", {"ёлка": "A", "διαρροήσ": "D", "quoted": "D", "back": "D", "slash": "D"}),
])
def test_words_are_folded_as_the_index_folds_them_topic_first(words_db, topic, text, expected):
    assert postgres_terms(words_db, topic, text) == expected


def test_a_cjk_word_inside_unspaced_text_is_a_phrase_of_its_characters(words_db):
    vector = teamwords.words("会議", "東京都庁の会議は毎週月曜日です")
    [(inside,)] = words_db.execute("SELECT %s::tsvector @@ %s::tsquery", (vector, "'月' <-> '曜' <-> '日'")).fetchall()
    [(apart,)] = words_db.execute("SELECT %s::tsvector @@ %s::tsquery", (vector, "'会' <-> '月'")).fetchall()
    assert inside is True and apart is False
    # No phrase spans the topic and the text: the columns sit GAP positions apart.
    [(across,)] = words_db.execute("SELECT %s::tsvector @@ %s::tsquery",
                                   (teamwords.words("deploy", "staging"), "'deploy' <-> 'staging'")).fetchall()
    assert across is False


# -- a query finds the same facts on both engines ----------------------------------------------------

CORPUS = [
    ("deploy", "Deploys go through the staging branch; main is protected."),
    ("deployment", "The deployment pipeline runs on every push to main."),
    ("build", "The C++ build needs -O2 and node.js 20 for the e-mail templates."),
    ("escritório", "O escritório de São Paulo cuida da configuração do servidor."),
    ("会議", "東京都庁の会議は毎週月曜日です"),
    ("cluster", "The Kubernetes cluster (k8s) runs on three nodes."),
    ("storage", "The database is PostgreSQL 16; the db backups run nightly."),
    ("frontend", "React components were converted to hooks; React Router handles navigation."),
    ("ёлка", "Новогодняя ёлка стоит в офисе до января."),
    ("διαρροή", "Η διαρροής μνήμης στο worker διορθώθηκε."),
    ("review", "A pull request needs two approvals before it merges."),
    ("auth", "Authentication tokens expire after one hour; refresh them early."),
    # Spaced apart, 会 and 議 are no word 会議: FTS5 looks CJK up in its cjk column only.
    ("spaced", "会 議 written apart"),
]
VOCABULARY = sorted({word for topic, text in CORPUS for word in (topic + " " + text).replace(";", " ").split()} |
                    {"deploying", "deployments", "nodes", "auth", "database", "pr", "会", "東京", "曜日", "zzz"})


@pytest.fixture(scope="module")
def both_engines(postgres_server):
    """The corpus in a local SQLite memory and in a team database: (sqlite conn, postgres conn)."""
    import psycopg

    with psycopg.connect(postgres_server.url(), autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS t_parity")
        admin.execute("CREATE DATABASE t_parity")
    url = postgres_server.url("t_parity")
    team = postgres.connect(url)
    project = team.execute("INSERT INTO projects (key, created) VALUES ('p', '') RETURNING id").fetchone()[0]
    local = store.connect(":memory:")
    for fact, (topic, text) in enumerate(CORPUS, start=1):
        local.execute(
            "INSERT INTO facts (id, topic, kind, text, date, created, updated, confirmed)"
            " VALUES (?, ?, 'state', ?, '2026-12-01', '', '', '')", (fact, topic, text))
        team.execute(
            "INSERT INTO facts (project, id, topic, kind, text, date, created, updated, confirmed, changed_by, words)"
            " VALUES (%s, %s, %s, 'state', %s, '2026-12-01', '', '', '', 'me', %s::tsvector)",
            (project, fact, topic, text, teamwords.words(topic, text)))
    team.execute("UPDATE projects SET last_fact = %s WHERE id = %s", (len(CORPUS), project))
    team.commit()
    yield local, team
    team.close()
    local.close()
    with psycopg.connect(postgres_server.url(), autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS t_parity WITH (FORCE)")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=4), every=st.booleans(), exact_only=st.booleans())
def test_a_query_finds_the_same_facts_on_both_engines(both_engines, words, every, exact_only):
    from gate.search import query

    local, team = both_engines
    parsed = query.parse(" ".join(words))
    fts, ts = parsed.expression(every=every, exact_only=exact_only), parsed.tsquery(every=every, exact_only=exact_only)
    if fts is None:
        assert ts is None
        return
    assert (ts.owners, ts.exact) == (fts.owners, fts.exact)  # the same phrases, numbered alike
    in_sqlite = {row[0] for row in local.execute("SELECT rowid FROM facts_fts WHERE facts_fts MATCH ?", (fts.text,))}
    in_postgres = {row[0] for row in team.execute("SELECT id FROM facts WHERE words @@ %s::tsquery", (ts.text,))}
    assert in_postgres == in_sqlite, (fts.text, ts.text)


def test_the_parity_test_sees_a_query_that_finds_something(both_engines):
    """So that the property above is no vacuous truth over empty answers."""
    from gate.search import query

    local, team = both_engines
    for typed, expected in (("deploying", {1, 2}), ("月曜日", {5}), ("ёлка", {9}), ("db", {7}), ("configuracao servidor", {4})):
        ts = query.parse(typed).tsquery(every=True)
        assert {row[0] for row in team.execute("SELECT id FROM facts WHERE words @@ %s::tsquery", (ts.text,))} == expected, typed


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=4), every=st.booleans(), exact_only=st.booleans())
def test_a_query_ranks_the_same_facts_alike_on_both_engines(both_engines, words, every, exact_only):
    """FTS5's bm25 and the phrases each fact holds, and where (topic or text), as PostgreSQL computes them."""
    from gate.search import query, fulltext as search

    local, team = both_engines
    parsed = query.parse(" ".join(words))
    fts, ts = parsed.expression(every=every, exact_only=exact_only), parsed.tsquery(every=every, exact_only=exact_only)
    if fts is None:
        return
    in_sqlite = search._match(local, fts.text, 60)
    in_postgres = teamwords.match(team, 1, ts, 60)
    assert [fact for fact, _, _ in in_postgres] == [fact for fact, _, _ in in_sqlite], (fts.text, in_sqlite, in_postgres)
    assert [matched for _, _, matched in in_postgres] == [matched for _, _, matched in in_sqlite]
    for (_, mine, _), (_, theirs, _) in zip(in_postgres, in_sqlite):
        assert mine == pytest.approx(theirs, rel=1e-9, abs=1e-12)


def test_the_ranking_parity_sees_ranks_that_differ(both_engines):
    """The property above compares real rankings: a query whose facts rank apart."""
    from gate.search import query

    _, team = both_engines
    ts = query.parse("deploy main").tsquery()
    ranked = teamwords.match(team, 1, ts, 8)
    assert len({rank for _, rank, _ in ranked}) >= 2 and ranked[0][2][0] == store.IN_TOPIC


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=4), limit=st.integers(1, 8))
def test_a_search_by_words_returns_the_same_facts_on_both_engines(both_engines, words, limit):
    """The tiers, the common words, the judgement: gate.search.fulltext's whole word search, on either index."""
    from gate.search import fulltext as search, team as team_words

    local, team = both_engines
    typed = " ".join(words)
    index = team_words.TeamIndex(team, 1)
    assert search.by_words_in(index, typed, limit=limit) == search.by_words(local, typed, limit=limit), typed
    mine, theirs = search.candidates_in(index, typed, wanted=limit), search._candidates(local, typed, wanted=limit)
    assert [(c.id, c.tier, c.named) for c in mine] == [(c.id, c.tier, c.named) for c in theirs]
    for a, b in zip(mine, theirs):
        assert a.score == pytest.approx(b.score, rel=1e-9) and a.coverage == pytest.approx(b.coverage, rel=1e-12)


def test_the_search_parity_sees_searches_that_find_facts(both_engines):
    from gate.search import fulltext as search, team as team_words

    local, team = both_engines
    index = team_words.TeamIndex(team, 1)
    for typed in ("deploying main", "会議", "React hooks", "db backups", "configuracao"):
        found = search.by_words_in(index, typed)
        assert found and found == search.by_words(local, typed), typed


# -- the rarest phrases first: the same answer without ranking every fact a common word holds ---------

SKEWED_WORDS = ["common", "often", "deploy", "deploys", "deployment", "staging", "rollback", "canary",
                "postgres", "pager", "quota", "zebra"]


@pytest.fixture(scope="module")
def skewed(postgres_server):
    """300 facts in both engines: `common` in nine of ten, `often` in four of ten (and often* in
    about half), the rest rarer
    and rarer, so that idf's floor, a phrase a third of the facts hold, and rare ones all meet."""
    import random

    import psycopg

    rng = random.Random(5)
    corpus = []
    for _ in range(300):
        # `oftener` makes the prefix often* two words, its commonest held by under half the facts.
        words = [word for word, share in (("common", 0.9), ("often", 0.4), ("oftener", 0.1)) if rng.random() < share]
        words += rng.sample(SKEWED_WORDS[2:], rng.randint(0, 2)) + ["filler"] * rng.randint(0, 12)
        rng.shuffle(words)
        corpus.append(("notes" if rng.random() < 0.7 else rng.choice(SKEWED_WORDS), " ".join(words) or "filler"))
    with psycopg.connect(postgres_server.url(), autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS t_skewed")
        admin.execute("CREATE DATABASE t_skewed")
    team = postgres.connect(postgres_server.url("t_skewed"))
    project = team.execute("INSERT INTO projects (key, created) VALUES ('p', '') RETURNING id").fetchone()[0]
    local = store.connect(":memory:")
    for fact, (topic, text) in enumerate(corpus, start=1):
        local.execute("INSERT INTO facts (id, topic, kind, text, date, created, updated, confirmed)"
                      " VALUES (?, ?, 'state', ?, '2026-12-01', '', '', '')", (fact, topic, text))
        team.execute(
            "INSERT INTO facts (project, id, topic, kind, text, date, created, updated, confirmed, changed_by, words)"
            " VALUES (%s, %s, %s, 'state', %s, '2026-12-01', '', '', '', 'me', %s::tsvector)",
            (project, fact, topic, text, teamwords.words(topic, text)))
    team.commit()
    yield local, team, project
    team.close()
    local.close()
    with psycopg.connect(postgres_server.url(), autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS t_skewed WITH (FORCE)")


def _rankings(monkeypatch) -> list[str]:
    """Each ranking match() runs, in order: "rarest" (of the rarest phrases' facts) or "all"."""
    kinds: list[str] = []
    ranked = teamwords._ranked_in_sql

    def spy(*args, among=None, **kwargs):
        kinds.append("all" if among is None else "rarest")
        return ranked(*args, among=among, **kwargs)

    monkeypatch.setattr(teamwords, "_ranked_in_sql", spy)
    return kinds


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(SKEWED_WORDS + ["deplo", "rollbacks"]), min_size=2, max_size=4, unique=True),
       limit=st.sampled_from([1, 8, 60]), after=st.sampled_from([0, 150]))
def test_ranking_the_rarest_phrases_first_gives_fts5s_answer(skewed, words, limit, after):
    from gate.search import query, fulltext as search

    local, team, project = skewed
    parsed = query.parse(" ".join(words))
    fts, ts = parsed.expression(), parsed.tsquery()
    in_sqlite = search._match(local, fts.text, limit, after)
    in_postgres = teamwords.match(team, project, ts, limit, after)
    assert [rank for _, rank, _ in in_postgres] == pytest.approx([rank for _, rank, _ in in_sqlite], rel=1e-9)
    # Facts this corpus ties exactly can land a last bit apart (float sums in another order), and so
    # swap places: the same facts with the same phrases in each run of equal ranks, but the last
    # run, which the limit may cut at a different fact.
    runs = _runs_of_equal_rank(in_sqlite)
    for run, (start, end) in enumerate(runs):
        mine = {(fact, matched) for fact, _, matched in in_postgres[start:end]}
        theirs = {(fact, matched) for fact, _, matched in in_sqlite[start:end]}
        assert mine == theirs or (run == len(runs) - 1 and len(in_sqlite) == limit), (start, end)


def _runs_of_equal_rank(rows) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for number, (_, rank, _) in enumerate(rows):
        if runs and rank == pytest.approx(rows[runs[-1][0]][1], rel=1e-12):
            runs[-1] = (runs[-1][0], number + 1)
        else:
            runs.append((number, number + 1))
    return runs


def test_the_rarest_phrases_settle_some_answers_and_give_way_on_others(skewed, monkeypatch):
    """So that the property above is no vacuous truth: both ways out are taken on this corpus."""
    from gate.search import query

    _, team, project = skewed
    kinds = _rankings(monkeypatch)
    runs = []
    for typed, limit in (("common zebra", 8), ("common often", 60), ("often zebra", 60), ("common often zebra", 8)):
        kinds.clear()
        teamwords.match(team, project, query.parse(typed).tsquery(), limit)
        runs.append(tuple(kinds))
    settled = [run for run in runs if run[-1] == "rarest"]
    gave_way = [run for run in runs if "rarest" in run[:-1] or (run[-1] == "all" and "rarest" in run)]
    assert settled and gave_way, runs
