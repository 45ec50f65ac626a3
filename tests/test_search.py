"""Search by words (gate.search.fulltext) on both engines: each behavioural test searches the
facts it seeds in a local SQLite memory and in a team's project on PostgreSQL (`memory`), and
expects the same facts, in the same order, and the same ones left out. The tests of SQLite's own
machinery (FTS5's vocabulary counts, its fast paths, a malformed FTS5 expression) run on SQLite
only; tests/test_postgres.py holds the two indexes' internals equal."""

from __future__ import annotations

import contextlib
import unicodedata
import os
import uuid

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conftest import Writer
from gate.engine import store, tokens
from gate.search import query, fulltext as search

PITFALLS = ["C++", "e-mail", "node.js", "-O2", "topic:deploy", "NOT", '"', "(", "*", "", " ", "\t\n",
            "😀", "it's", "AND OR", "^word", "NEAR(a b)", "a*b", "col:", "{topic}: x", "'", "\x00", "\ud800"]

# -- the memory searched: either engine ------------------------------------------------------


class LocalMemory:
    """A local SQLite memory: facts written as the agent writes them (conftest's Writer),
    searched through search.by_words."""

    engine = "sqlite"

    def __init__(self, conn):
        self.conn, self.writer, self.index = conn, Writer(conn), search.Index(conn)

    def insert(self, topic: str, text: str) -> int:
        return self.writer.insert(topic, text)

    def load(self, rows: list[tuple[str, str]]) -> None:
        """Many facts at once, straight into the table (ids 1, 2, ... in a fresh memory)."""
        self.conn.execute("BEGIN")
        self.conn.executemany("INSERT INTO facts (topic, kind, text, date, created, updated, confirmed)"
                              " VALUES (?, 'state', ?, '2026-01-01', '', '', '')", rows)
        self.conn.execute("COMMIT")

    def find(self, typed: str, limit: int = search.RESULTS) -> list[int]:
        return search.by_words(self.conn, typed, limit=limit)

    def words(self, typed: str, limit: int = search.RESULTS) -> search.WordHits:
        return search.words(self.conn, typed, limit=limit)

    def match(self, parsed: query.Query, limit: int, after: int = 0, *, phrases: bool = True, **tier):
        """The index's ranked rows (id, bm25 rank, matched phrases) for `parsed` (`tier`: every,
        exact_only)."""
        return self.index.match(self.index.expression(parsed, **tier), limit, after, phrases=phrases)


class TeamMemory:
    """A project of its own in a team's database on PostgreSQL: facts inserted by the team's
    write path (TeamFacts.insert, a change and its record in one transaction), searched through
    TeamIndex in a transaction of its own, as the server and the CLI search a team's memory."""

    engine = "postgresql"
    STAMP = "2026-01-01T00:00:00Z"

    def __init__(self, conn, key: str):
        from gate.engine.teamfacts import TeamFacts, Who, project
        from gate.search.team import TeamIndex

        with conn.transaction():
            pid = project(conn, key, self.STAMP)
        self.facts, self.index = TeamFacts(conn, pid, Who("ana@laptop", "s-test")), TeamIndex(conn, pid)

    def insert(self, topic: str, text: str) -> int:
        return self._insert([(topic, text)])[0]

    def load(self, rows: list[tuple[str, str]]) -> None:
        self._insert(rows)

    def _insert(self, rows: list[tuple[str, str]]) -> list[int]:
        with self.facts.transaction():
            return [self.facts.insert({"topic": topic, "kind": "state", "text": text, "date": "2026-01-01"},
                                      stamp=self.STAMP) for topic, text in rows]

    def find(self, typed: str, limit: int = search.RESULTS) -> list[int]:
        with self.facts.transaction():
            return search.by_words_in(self.index, typed, limit=limit)

    def words(self, typed: str, limit: int = search.RESULTS) -> search.WordHits:
        """search.words over TeamIndex (by_words_in, telling the strong hits from the loose)."""
        with self.facts.transaction():
            return search.judge(search.candidates_in(self.index, typed, wanted=limit)).first(limit)

    def match(self, parsed: query.Query, limit: int, after: int = 0, *, phrases: bool = True, **tier):
        with self.facts.transaction():
            return self.index.match(self.index.expression(parsed, **tier), limit, after, phrases=phrases)


@pytest.fixture(scope="module")
def team_db(postgres_server):
    """One team database for the module; each memory is a project of it, whose facts, ids and
    word counts are its own, so that no test sees another's facts."""
    import psycopg

    from gate.engine import postgres

    name = f"t_search_{os.getpid()}"
    with psycopg.connect(postgres_server.url(), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    conn = postgres.connect(postgres_server.url(name))
    yield conn
    conn.close()
    with psycopg.connect(postgres_server.url(), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request):
    return request.param


@pytest.fixture
def new_memory(engine, request):
    """Opens another empty memory of the engine under test, for as long as its `with` block."""
    team = request.getfixturevalue("team_db") if engine == "postgresql" else None

    @contextlib.contextmanager
    def opened():
        if team is not None:
            yield TeamMemory(team, f"p-{uuid.uuid4().hex}")
            return
        conn = store.connect(":memory:")
        try:
            yield LocalMemory(conn)
        finally:
            conn.close()
    return opened


@pytest.fixture
def memory(engine, request):
    """An empty memory of the engine under test: on SQLite the `conn` fixture's, on PostgreSQL a
    new project of the module's team database."""
    if engine == "sqlite":
        return LocalMemory(request.getfixturevalue("conn"))
    return TeamMemory(request.getfixturevalue("team_db"), f"p-{uuid.uuid4().hex}")


def examples(engine: str, count: int) -> settings:
    """A property's settings: `count` examples on SQLite, a fifth as many on PostgreSQL, where a
    search is a few round trips to a server."""
    return settings(max_examples=count if engine == "sqlite" else count // 5, deadline=None)


# -- what a search finds, in what order, and what it leaves out -------------------------------


@pytest.fixture
def seeded(memory):
    ids = {
        "cpp": memory.insert("build", "The C++ build needs -O2 and node.js 20 for the e-mail templates."),
        "deploy": memory.insert("deploy", "Deploys go through the staging branch; main is protected."),
        "sp": memory.insert("escritório", "O escritório de São Paulo cuida da configuração do servidor."),
        "tokyo": memory.insert("会議", "東京都庁の会議は毎週月曜日です"),
        "k8s": memory.insert("cluster", "The Kubernetes cluster runs on three nodes."),
        "hooks": memory.insert("frontend", "React components were converted to hooks."),
        "react": memory.insert("frontend", "React Router handles navigation."),
        "db": memory.insert("storage", "The database is PostgreSQL 16."),
    }
    return memory, ids


@pytest.mark.parametrize("typed", PITFALLS)
def test_pitfall_inputs_never_raise(seeded, typed):
    memory, _ = seeded
    assert isinstance(memory.find(typed), list)


@pytest.mark.parametrize(
    "typed, key",
    [
        ("C++", "cpp"),
        ("node.js", "cpp"),
        ("-O2", "cpp"),
        ("e-mail", "cpp"),
        ("configuracao", "sp"),  # accents folded on both sides
        ("sao paulo", "sp"),
        ("ESCRITORIO", "sp"),
        ("会議", "tokyo"),  # a 2-character word inside unsegmented Japanese
        ("月曜日", "tokyo"),
        ("K8s", "k8s"),  # abbreviation
        ("DB", "db"),
        ("hook", "hooks"),  # another form of the word
        ("deployment", "deploy"),
    ],
)
def test_finds_the_fact(seeded, typed, key):
    memory, ids = seeded
    assert ids[key] in memory.find(typed)


def test_cjk_phrase_needs_adjacent_characters(seeded):
    memory, _ = seeded
    assert memory.find("会曜") == []


def test_stop_words_are_dropped(seeded):
    memory, ids = seeded
    assert memory.find("where do the deploys go") == [ids["deploy"]]
    assert memory.find("como é a configuração do servidor") == [ids["sp"]]


def test_and_before_or(seeded):
    memory, ids = seeded
    ranked = memory.find("React hooks")
    assert ranked[0] == ids["hooks"]


def test_one_shared_word_of_several_is_not_a_match(seeded):
    memory, ids = seeded
    # "staging" is in the deploy fact, but the query's other words, which memory holds, are not.
    assert memory.find("staging React navigation") == [ids["react"]]


def test_a_word_memory_never_saw_does_not_hide_the_rest(seeded):
    memory, ids = seeded
    assert memory.find("deploy script") == [ids["deploy"]]


def test_a_question_about_what_memory_never_heard_of_is_not_answered_by_its_one_known_word(seeded):
    memory, ids = seeded
    # Memory holds "deploy" and none of the other three: they still count in the share of the
    # question a fact covers (each as much as an average word memory holds), and a quarter of
    # it is too little. One unseen word of two leaves half: still a match (the test above).
    assert memory.find("deploy tournament livestream sponsors") == []
    assert memory.find("deploy tournament") == [ids["deploy"]]


def test_loose_match_needs_half_the_terms_with_weight(seeded):
    memory, ids = seeded
    # No fact has all three; the deploy fact has two of them.
    assert memory.find("deploys staging kafka") == [ids["deploy"]]


def test_topic_outweighs_text(memory):
    in_text = memory.insert("misc", "We talked about the deploy window and the rollback once.")
    # The longer of the two, so that only the topic's weight can put it first.
    in_topic = memory.insert("deploy", "Friday freezes apply to the rollback of every service we run.")
    assert memory.find("deploy rollback") == [in_topic, in_text]


def test_a_fact_holding_far_less_than_the_best_covered_is_left_out(memory):
    both = memory.insert("deploy", "The rollback of a deploy takes two minutes.")
    one = memory.insert("misc", "We talked about the rollback once.")
    memory.insert("misc", "Unrelated: the coffee machine is fixed.")
    # "deploy" and "rollback" weigh alike; the second fact holds half of what the first holds.
    assert memory.find("deploy rollback") == [both]
    assert one in memory.find("rollback")


def test_a_loose_fact_about_another_subject_is_left_out_when_the_query_names_one(memory):
    passing = memory.insert("gina", "The dance studio next door is loud.")
    memory.insert("billing", "The rent is due on the first.")
    # No fact holds all three words, and none names them in its topic: the loose match stays.
    assert memory.find("dance studio rent") == [passing]
    about = memory.insert("studio", "The dance floor was sanded in May.")
    # Now one fact holding as much of the query is about a studio: the other mentions one in passing.
    assert memory.find("dance studio rent") == [about]
    every = memory.insert("gina", "The dance studio rent went up.")
    # A fact holding every term is kept whatever its topic, and comes first.
    assert memory.find("dance studio rent") == [every, about]


def test_the_index_tells_a_term_in_the_topic_from_one_in_the_text(memory):
    memory.insert("deploy", "The rollback takes two minutes.")
    # Three bare words, no other forms: `"deploy" OR "rollback" OR "kafka"` on SQLite.
    bare = query.Query(tuple(query.Term(word, (word,), None) for word in ("deploy", "rollback", "kafka")))
    [(_, _, matched)] = memory.match(bare, 8)
    assert matched == bytes([store.IN_TOPIC, store.IN_TEXT, store.ABSENT])


def test_each_share_of_the_judgement_leaves_out_what_it_names():
    C = search.Candidate
    best = C(1, score=10.0, coverage=1.0, tier=2, named=True)
    kept = C(2, score=search.RELATIVE * 10.0, coverage=search.LEAD, tier=2, named=True)
    far_behind = C(3, score=search.RELATIVE * 10.0 - 0.01, coverage=1.0, tier=2, named=True)
    narrow = C(4, score=10.0, coverage=search.LEAD - 0.01, tier=2, named=True)
    unnamed = C(5, score=10.0, coverage=1.0, tier=2, named=False)
    every_term = C(6, score=1.0, coverage=1.0, tier=1)  # far behind: a share leaves it out too
    hits = search.judge([best, kept, far_behind, narrow, unnamed, every_term])
    assert hits.ranked() == [1, 2]
    weak = C(7, score=10.0, coverage=0.25, tier=2, named=True)  # the best of its search, and too weak
    assert search.COVERAGE > 0.25 and search.judge([weak]).ranked() == []
    # Without a loose candidate about the subject, the unnamed ones are judged by the shares.
    assert search.judge([unnamed, C(8, score=9.0, coverage=0.9, tier=2)]).ranked() == [5, 8]


def test_at_most_limit(memory):
    memory.load([("deploy", f"Deploy note number {i}.") for i in range(40)])
    assert len(memory.find("deploy")) == search.RESULTS
    assert len(memory.find("deploy", limit=5)) == 5


def test_empty_database(memory):
    assert memory.find("anything") == []


def test_a_project_finds_none_of_another_projects_facts(new_memory):
    with new_memory() as ours, new_memory() as theirs:
        theirs.insert("deploy", "Deploys go through the staging branch.")
        mine = ours.insert("cache", "The cache is flushed on deploy.")
        assert ours.find("deploy staging") == [mine] and theirs.find("cache") == []


def test_any_string_gives_a_list(seeded):
    memory, _ = seeded

    @examples(memory.engine, 400)
    @given(st.text(max_size=200))
    def check(typed):
        result = memory.find(typed)
        assert isinstance(result, list) and all(isinstance(rowid, int) for rowid in result)

    check()


def test_any_mix_of_syntax_gives_a_list(seeded):
    memory, _ = seeded

    @examples(memory.engine, 200)
    @given(st.lists(st.sampled_from(PITFALLS + ["deploy", "AND", "OR", "NOT", "NEAR", "*", ":", "-", "^"]), max_size=8))
    def check(parts):
        assert isinstance(memory.find(" ".join(parts)), list)

    check()


def test_words_split_strong_from_loose(seeded):
    memory, ids = seeded
    hits = memory.words("React hooks")
    assert hits == search.WordHits(strong=[ids["hooks"]], loose=[])
    # No fact holds both words: the loose tier finds the facts holding the weightier one.
    hits = memory.words("Kubernetes navigation cluster")
    assert hits.strong == [] and hits.loose and memory.find("Kubernetes navigation cluster") == hits.ranked()


# -- every script: the parser folds exactly as the tokenizer does ----------------------------

LETTERS = st.characters(categories=["Lu", "Ll", "Lt", "Lm", "Lo"])


@pytest.mark.slow
def test_any_word_of_any_script_is_found_as_stored(engine, new_memory):
    # Typed exactly as stored, or case-folded as the index folds it. (SQLite's case table
    # predates some letters, such as U+A796 LATIN CAPITAL LETTER B WITH FLOURISH: the index keeps
    # them as written, so their Python lower case is another word to it.) Its letter table is
    # also older than Python's: letters it does not know, such as U+19B0 NEW TAI LUE VOWEL SIGN
    # VOWEL SHORTENER, are separators to it, and a word made only of them is no word to the index
    # at all (docs/search.md says so); a word with some letters it knows is found by those.
    # PostgreSQL holds the words gate/engine/tokens.py cuts, the SQLite index's own.
    @examples(engine, 300)
    @given(st.text(alphabet=LETTERS, min_size=1, max_size=12), st.booleans())
    def check(word, folded):
        assume(tokens.tokens(word))
        with new_memory() as memory:
            # A word from another fact beside it, so that the one stored is not all of memory.
            memory.load([("other", "an unrelated note"), ("note", f"we wrote {word} here")])  # ids 1 and 2
            typed = tokens.fold(word) if folded else word
            assert 2 in memory.find(typed)

    check()


@pytest.mark.parametrize("word", ["йогурт", "ёлка", "країна", "διαρροής", "ΔΙΑΡΡΟΉΣ", "straße", "Ærø"])
def test_words_the_tokenizer_keeps_accented_are_found(memory, word):
    fact = memory.insert("note", f"the {word} case")
    assert memory.find(word) == [fact]


# SQLite only: PostgreSQL is given tsquery text by Query.tsquery, never an FTS5 expression.
def test_a_malformed_expression_is_a_bug_the_tests_see(conn, writer, monkeypatch):
    writer.insert("deploy", "Deploys go through staging.")
    # Break the builder: an unquoted phrase FTS5 cannot parse.
    monkeypatch.setattr(query.Term, "phrases", lambda self: [(self.word + ' AND (', True)])
    with pytest.raises(search.MalformedQuery):
        search.by_words(conn, "deploy")


# -- exact speed-ups: the fast paths answer as the plain ones do ------------------------------

TIED = ["deploy", "staging", "branch", "cache", "token", "deployment", "deploys", "redis", "database", "queue"]
# Facts that tie in bm25 again and again: texts of the same length, some word for word the same,
# and topics in common; and a few words in other forms and scripts.
TIED_ROWS = [(TIED[i % 4], " ".join(TIED[(i * k) % len(TIED)] for k in (1, 3, 7, 1, 3)) if i % 3
              else "deploy the staging cache now") for i in range(400)]
TIED_ROWS += [("auth", "authentication and authorization of databases"), ("review", "the pull request for k8s"),
              ("会議", "東京都庁の会議は毎週月曜日です"), ("ёлка", "ёлка и straße"), ("kubernetes", "deployer caching")]


@pytest.fixture
def tied(conn):
    """A SQLite memory holding TIED_ROWS."""
    LocalMemory(conn).load(TIED_ROWS)
    return conn


def test_the_first_tier_ranks_as_fts5_does_ties_included(tied, memory):
    # On SQLite `memory` is `tied` itself (its fast path against FTS5's own ORDER BY rank); on
    # PostgreSQL, the same facts under the same ids in a team's project.
    if memory.engine != "sqlite":
        memory.load(TIED_ROWS)
    plain = ("SELECT rowid, rank FROM facts_fts WHERE facts_fts MATCH ? AND rowid > ? ORDER BY rank LIMIT ?")
    ties = 0
    for typed in [*TIED, "deploy staging", "cache token", "db redis", "deploys branch queue", "staging"]:
        parsed = query.parse(typed)
        expression = parsed.expression(every=True, exact_only=True)
        for limit in (1, 8, 60, 1000):
            for after in (0, 150):
                fast = memory.match(parsed, limit, after, phrases=False, every=True, exact_only=True)
                expected = list(tied.execute(plain, (expression.text, after, limit)))
                assert [rowid for rowid, _, _ in fast] == [rowid for rowid, _ in expected], (typed, limit, after)
                # PostgreSQL sums the same bm25 in another order: equal to the last bits or so.
                assert [rank for _, rank, _ in fast] == pytest.approx([rank for _, rank in expected], rel=1e-9)
                ties += len(expected) - len({rank for _, rank in expected})
    assert ties > 1000  # the order of equal ranks was really put to the test


# SQLite only from here: FTS5's vocabulary counts and the fast paths over FTS5 (TeamIndex has
# its own counters, which tests/test_postgres.py holds equal to these).


def _frequencies_form_by_form(conn, parsed):
    """search._frequencies as first written: each form looked up on its own, the stem's range
    summed apart."""
    size = max(conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'facts'").fetchone()[0], 1)
    counts, exact = [], []
    for term in parsed.terms:
        docs, phrase = 0, False
        if term.cjk:
            docs = conn.execute("SELECT count(*) FROM facts_fts WHERE facts_fts MATCH ?", (term.phrases()[0][0],)).fetchone()[0]
        for form in () if term.cjk else term.forms:
            if " " in form:
                phrase = True
            else:
                row = conn.execute("SELECT doc FROM facts_vocab WHERE term = ?", (form,)).fetchone()
                docs += row[0] if row else 0
        exact.append(size if phrase else min(docs, size))
        if term.prefix is not None:
            docs = max(docs, conn.execute("SELECT coalesce(sum(doc), 0) FROM facts_vocab WHERE term >= ? AND term < ?",
                                          (term.prefix, term.prefix + "\U0010ffff")).fetchone()[0])
        counts.append(min(docs, size))
    return size, counts, exact


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["deploy", "deployment", "deploys", "db", "database", "databases", "auth", "pr",
                                 "k8s", "kubernetes", "cache", "caching", "redis", "token", "会議", "東京", "ёлка",
                                 "straße", "nothing", "x", "deployer"]), min_size=1, max_size=5))
def test_frequencies_count_what_the_vocabulary_counts(tied, typed):
    conn = tied
    parsed = query.parse(" ".join(typed))
    assert search._frequencies(conn, parsed) == _frequencies_form_by_form(conn, parsed)



def _answer(conn, typed, limit):
    """What words return for `typed` (the judgement's ids) and every candidate behind them."""
    pool = search.candidates_in(search.Index(conn), typed, wanted=limit or search.POOL)
    return search.judge(pool).first(limit or search.POOL).ranked(), pool


def _slow_ranking(conn, typed, limit, monkeypatch):
    """_answer with every fast path off: frequencies form by form, every tier ranked by
    FTS5 with gate_phrases, no tier skipped for falling short of what is asked."""
    match = search._match
    with monkeypatch.context() as patch:
        patch.setattr(search, "_frequencies", _frequencies_form_by_form)
        patch.setattr(search, "_match", lambda conn, expression, limit, after=0, phrases=True:
                      match(conn, expression, limit, after, phrases=True))
        patch.setattr(search, "_reaches", lambda *args, **kwargs: True)
        return _answer(conn, typed, limit)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from([*TIED, "deploying", "db", "auth", "k8s", "pull", "request", "cach", "会議", "ёлка",
                                 "nothing", "now", "the"]), min_size=1, max_size=5), st.sampled_from([1, 3, 8, None]))
def test_the_fast_paths_change_no_answer(tied, monkeypatch, typed, limit):
    # The ids in order, and every candidate's score, coverage and tier.
    terms = " ".join(typed)
    assert _answer(tied, terms, limit) == _slow_ranking(tied, terms, limit, monkeypatch)


# -- word forms and typos: a term memory holds in no form finds the words it nearly is ---------

# Letters of scripts written with spaces, lower case (a capital's lower case may be two letters).
SCRIPTS = {
    "latin": "abcdefghijklmnopqrstuvwxyz",
    "cyrillic": "абвгдежзиклмнопрстуфхцчшщыэюя",
    "greek": "αβγδεζηθικλμνξοπρστυφχψω",
    "armenian": "աբգդեզէըթժիլխծկհձղճմյնշոչպջռսվտրցւփքօֆ",
    "georgian": "აბგდევზთიკლმნოპჟრსტუფქღყშჩცძწჭხჯჰ",
    "hebrew": "אבגדהוזחטיכלמנסעפצקרשת",
}
# Marks a letter of any of those scripts may carry; the owner or the agent may leave them out.
MARKS = "\u0301\u0308\u0306\u0300"


def word_of(script: str, size: tuple[int, int] = (6, 10)):
    return st.text(alphabet=SCRIPTS[script], min_size=size[0], max_size=size[1])


def one_typo(draw, word: str) -> str:
    """`word` with one letter after the first left out, added, changed, or swapped with the next."""
    at = draw(st.integers(1, len(word) - 2))
    letter = draw(st.sampled_from(sorted(set(word))))
    return draw(st.sampled_from([
        word[:at] + word[at + 1:],
        word[:at] + letter + word[at:],
        word[:at] + letter + word[at + 1:],
        word[:at] + word[at + 1] + word[at] + word[at + 2:],
    ]))


def found_as(new_memory, stored: str, typed: str) -> bool:
    """Whether a search for `typed` finds the fact holding `stored`, beside another fact."""
    with new_memory() as memory:
        memory.load([("other", "an unrelated note"), ("note", f"we wrote {stored} here")])  # ids 1 and 2
        return 2 in memory.find(typed)


@pytest.mark.parametrize("stored, typed", [
    ("deploy", "deplyo"),  # two letters swapped
    ("клиент", "клиенты"),  # another inflection
    ("Ελληνικά", "Ελληνικα"),  # the accent left out, in a script the index does not fold
    ("Datenbank", "Datenbanken"),
    ("configuration", "configuraton"),  # a letter left out
    ("йогурт", "иогурт"),  # a mark left out of the first letter
])
def test_a_typo_a_dropped_accent_or_another_inflection_is_found(memory, stored, typed):
    memory.insert("other", "an unrelated note")
    fact = memory.insert("note", f"we wrote {stored} here")
    assert memory.find(typed) == [fact]


def test_a_word_memory_holds_is_never_taken_for_one_it_nearly_is(memory):
    near = memory.insert("note", "the deploy script")
    exact = memory.insert("note", "the deplyo typo lives in the old runbook")
    assert memory.find("deplyo") == [exact] and near not in memory.find("deplyo")


@pytest.mark.parametrize("stored, typed", [
    ("test", "tset"),  # one typo turns too many short words into others: none looked for
    ("config", "confirm"),  # they share a beginning, but too little of the longer word
    ("deploy", "eploy"),  # a typo in the first letter is not looked for
    ("py311", "py312"),  # identifiers and versions are found as typed or not at all
])
def test_what_is_not_taken_for_a_near_word(memory, stored, typed):
    memory.insert("note", f"we wrote {stored} here")
    assert memory.find(typed) == []


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_one_typo_in_any_script_is_found(engine, new_memory, script):
    @examples(engine, 60)
    @given(st.data())
    def check(data):
        word = data.draw(word_of(script))
        typed = one_typo(data.draw, word)
        assume(typed != word and tokens.words(typed) == [typed])
        assert found_as(new_memory, word, typed)

    check()


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_accents_left_out_or_added_in_any_script_are_found(engine, new_memory, script):
    @examples(engine, 60)
    @given(word_of(script, (2, 10)), st.data(), st.booleans())
    def check(word, data, stored_bare):
        marked = "".join(letter + (data.draw(st.sampled_from(MARKS)) if data.draw(st.booleans()) else "")
                         for letter in word)
        accented = unicodedata.normalize("NFC", marked)
        assume(accented != word and len(tokens.words(accented)) == 1)
        stored, typed = (word, accented) if stored_bare else (accented, word)
        assert found_as(new_memory, stored, typed)

    check()


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_another_inflection_in_any_script_is_found(engine, new_memory, script):
    @examples(engine, 60)
    @given(word_of(script, (5, 10)), st.text(alphabet=SCRIPTS[script], min_size=1, max_size=1), st.booleans())
    def check(stem, ending, stored_longer):
        stored, typed = (stem + ending, stem) if stored_longer else (stem, stem + ending)
        assert found_as(new_memory, stored, typed)

    check()
