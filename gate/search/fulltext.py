"""The word side of a search: the candidates a query's words find, and the judgement of which
are worth the agent's context. gate.search.ranking fuses them with meaning and the owner's words.

Words: FTS5 finds the facts holding any form of any term (gate.search.query), bm25 ranks them
(topic weighs five times the text: a fact's subject says more than a word in passing), and each
score is weighed by the share of the query's weight (idf) the fact's terms carry, so that facts
about the whole question rank above one that repeats a single rare word. Facts holding every term
as typed come first, then those holding every term in some form, then the rest. Precision
matters doubly here, since every fact returned costs the agent context and a decision in its
write: `judge` keeps a candidate only if its terms carry a fair share of the query, not far less
than the best-covered candidate's, and its score is not far behind the best. All three are
shares, so they hold whatever the size of memory and the length of the query. The share of the
query counts the words no fact holds as well, each as much as the average word memory does hold:
a question about something memory never heard of, of which it knows one word in four, is not
covered by the fact that holds that one word, while "deploy script" still finds the deploy fact
(half of it). Counted as nothing, they let such questions through on their one known word
(bench/unanswerable.py: 2.21 facts a search by words, 0.96 with them counted). And a topic says
what a fact is about: when the query names the topic of some facts that hold only part of it,
such a fact whose topic it does not name holds those words in passing, and is left out (a fact
holding every term is kept whatever its topic). The shares and the rule were chosen on LoCoMo
conversations 26, 30 and 41 (bench/locomo.py) and are reported on 42 and 43.

Meaning's judgement of what is near (`near`, STAND_OUT standard deviations nearer the query than
memory at large, gate.search.vectors `neighbourhood`) is kept here beside the words' for the one
search that must run without words (a malformed expression, a bug: gate.search.lookup).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import apsw

from gate.engine import store
from gate.search import embeddings, query as fts, spelling, vectors

CANDIDATES = 30
RESULTS = 8
# Facts bm25 ranks before the judgement (gate.search.fulltext `judge`) picks the ones worth returning.
POOL = 60
# The judgement's shares, chosen on LoCoMo conversations 26, 30 and 41 (bench/locomo.py), never
# on the sets they are reported on.
RELATIVE = 0.4
COVERAGE = 0.3
LEAD = 0.5
# How many standard deviations of the query's distances to memory a fact must stand closer than
# their mean for meaning to call it near; chosen on the same LoCoMo conversations.
STAND_OUT = 3.0
# A term held by more than this share of facts, and by more than COMMON_ROWS of them, is left
# out of the MATCH while other terms remain: it narrows nothing and bm25 would run for each.
COMMON_SHARE = 0.5
COMMON_ROWS = 2000
# When every term of a query is held by more facts than this, the query ranks among this many
# newest facts.
RECENT_WINDOW = 5000


@dataclass(frozen=True)
class WordHits:
    """Facts found by words, best first: `strong` hold every term (in some form), `loose` only
    the share of them that the loose tier asks for."""

    strong: list[int]
    loose: list[int]

    def ranked(self) -> list[int]:
        return self.strong + self.loose

    def first(self, count: int) -> WordHits:
        return WordHits(self.strong[:count], self.loose[: max(count - len(self.strong), 0)])


def by_words(conn: apsw.Connection, typed: str | fts.Query, *, limit: int = RESULTS) -> list[int]:
    """Fact ids ranked by words, best first: at most `limit`, possibly none. Never raises for
    anything the agent can type (MalformedQuery is a bug of the query builder)."""
    return words(conn, typed, limit=limit).ranked()


def words(conn: apsw.Connection, typed: str | fts.Query, *, limit: int = RESULTS) -> WordHits:
    """by_words, telling the strong hits from the loose ones."""
    return judge(_candidates(conn, typed, wanted=limit)).first(limit)


def by_words_in(index, typed: str | fts.Query, *, limit: int = RESULTS) -> list[int]:
    """by_words over any Index (gate.search.team: a team's memory on PostgreSQL)."""
    return judge(candidates_in(index, typed, wanted=limit)).first(limit).ranked()


@dataclass(frozen=True)
class Candidate:
    """A fact that holds some form of some term: its bm25 score (higher is better) and the share
    of the query's weight that the terms it holds carry."""

    id: int
    score: float
    coverage: float
    tier: int  # 0: every term as typed, 1: every term in some form, 2: some of the terms
    named: bool = False  # (tier 2 only) its topic holds a term of the query: the query names its subject


class Index:
    """Where words are looked up: the SQLite memory's FTS5 index. gate.search.team is the
    same for a team's memory on PostgreSQL; the tiers and the judgement above are shared."""

    def __init__(self, conn: apsw.Connection):
        self.conn = conn

    def frequencies(self, parsed: fts.Query) -> tuple[int, list[int], list[int]]:
        return _frequencies(self.conn, parsed)

    def expression(self, parsed: fts.Query, *, every: bool = False, exact_only: bool = False) -> fts.Expression | None:
        return parsed.expression(every=every, exact_only=exact_only)

    def vocabulary(self, letter: str) -> list[tuple[str, int]]:
        return _vocabulary(self.conn, letter)

    def reaches(self, expression: fts.Expression, count: int, after: int) -> bool:
        return _reaches(self.conn, expression.text, count, after)

    def match(self, expression: fts.Expression, limit: int, after: int, *, phrases: bool) -> list:
        return _match(self.conn, expression.text, limit, after, phrases=phrases)


def _candidates(conn: apsw.Connection, typed: str | fts.Query, *, wanted: int = RESULTS) -> list[Candidate]:
    """The POOL best facts by bm25 that hold any form of any term, best first. When at least
    `wanted` facts hold every term (as typed, or in some form), those are all the answer can
    hold (they rank first), and the costlier searches are skipped."""
    return candidates_in(Index(conn), typed, wanted=wanted)


def candidates_in(index, typed: str | fts.Query, *, wanted: int = RESULTS) -> list[Candidate]:
    """_candidates over any Index."""
    parsed = fts.parse(typed) if isinstance(typed, str) else typed
    if not parsed:
        return []
    size, docs, exact_docs = index.frequencies(parsed)
    found = _pool(index, parsed, size, docs, exact_docs, wanted)
    if judge(found).ranked():
        return found
    # Nothing better matches: a term memory holds in no form is looked for as the words it
    # nearly is, a typo, a dropped accent, another inflection (gate.search.spelling).
    near = {
        i: words
        for i, (term, count) in enumerate(zip(parsed.terms, docs))
        if not count and not term.cjk and (words := spelling.words_near(term.word, index.vocabulary))
    }
    if not near:
        return found
    parsed = parsed.widened(near)
    size, docs, exact_docs = index.frequencies(parsed)
    return _pool(index, parsed, size, docs, exact_docs, wanted)


def _pool(index, parsed: fts.Query, size: int, docs: list[int], exact_docs: list[int], wanted: int) -> list[Candidate]:
    """candidates_in for a parsed query whose frequencies are known."""
    weights = [_idf(size, count) for count in docs]
    # A word nearly every fact of a large memory holds narrows nothing and costs the most (bm25
    # runs for every fact that holds it): leave such words out while others remain.
    common = {i for i, count in enumerate(docs) if count > COMMON_ROWS and count > COMMON_SHARE * size}
    if len(common) == len(parsed.terms):
        common = set()
    focused = parsed.without(common)
    kept = [weight for i, weight in enumerate(weights) if i not in common]
    held = [count for i, count in enumerate(docs) if i not in common]
    held_exact = [count for i, count in enumerate(exact_docs) if i not in common]
    # Words memory has never seen weigh nothing: no fact can hold them.
    known = sum(weight for weight, count in zip(kept, held) if count)
    if not known:
        return []
    # A word no fact holds is still part of what the query asks: it counts as much as the
    # average word memory holds (module docstring), so a fact holding the one word memory knows of
    # a question about something else does not cover the whole of it.
    seen = sum(1 for count in held if count)
    asked = known * len(held) / seen
    # Even the rarest word is in thousands of facts: bm25 for all of them would cost tens of
    # ms and tell them apart little, so rank among the newest facts only.
    after = size - RECENT_WINDOW if min(held) > RECENT_WINDOW else 0
    # Cheapest first: every term as typed (no prefix to expand), then in any form, then any term.
    # A tier that cannot reach `wanted` facts (its rarest term is in fewer) would be thrown away
    # for the next one, so it is not run: bm25 is the cost of a search.
    # With one term, "every term in some form" is "any term". Facts holding every term as typed
    # all hold the whole query: the best `wanted` of them by bm25 are the answer, no more needed.
    tiers = [(index.expression(focused, every=True, exact_only=True), min(held_exact), wanted)]
    if len(focused.terms) > 1:
        tiers.append((index.expression(focused, every=True), min(held), POOL))
    tiers.append((index.expression(focused), size, POOL))
    tried: set[str] = set()
    for expression, most, fetch in tiers:
        if expression.text in tried or (most < wanted and expression is not tiers[-1][0]):
            continue
        tried.add(expression.text)
        first, last = expression is tiers[0][0], expression is tiers[-1][0]
        # A tier other than the last that finds fewer than `wanted` facts is thrown away: ask
        # first whether it reaches them, which costs a third of ranking them (no bm25, no sort,
        # no auxiliary function, and the scan stops at `wanted`). Not for the first tier, which
        # is cheaper to rank than the others and mostly reaches them.
        if not (first or last) and not index.reaches(expression, wanted, after):
            continue
        # A fact the first tier finds holds every term as typed: which phrases it matched would
        # tell nothing, and without asking, the tier is ranked at half the cost (`_match`).
        rows = index.match(expression, fetch, after, phrases=not first)
        if len(rows) >= wanted:
            break
    found = []
    judged: dict[bytes | None, tuple[float, int, bool]] = {}  # the pool's facts match a few patterns of phrases
    for rowid, rank, matched in rows:
        if matched not in judged:
            hits = matched or bytes([store.IN_TEXT]) * len(expression.owners)
            terms = {owner for owner, hit in zip(expression.owners, hits) if hit}
            exact = {owner for owner, hit, same in zip(expression.owners, hits, expression.exact) if hit and same}
            tier = 0 if len(exact) == len(kept) else 1 if len(terms) == len(kept) else 2
            judged[matched] = (sum(kept[term] for term in terms) / asked, tier, tier == 2 and store.IN_TOPIC in hits)
        coverage, tier, named = judged[matched]
        # bm25 adds up what each term earns, so a fact that says one rare word many times can
        # outscore one that holds most of the query; weighing it by the share of the query it
        # holds ranks the facts about the whole question first.
        found.append(Candidate(rowid, -rank * coverage, coverage, tier, named))
    # Facts holding every term as typed come first, then those holding every term in some form.
    found.sort(key=lambda candidate: (candidate.tier, -candidate.score))
    return found


TIERS = ("exact", "forms", "some")  # Candidate.tier's names


def judge(candidates: list[Candidate]) -> WordHits:
    """The candidates worth the agent's context, best first. A fact holding only a weak share of
    the query is a poor match, and one far behind the best is noise: keep a candidate whose terms
    carry at least COVERAGE of the query's weight and at least LEAD of what the best-covered
    candidate carries, and whose score is at least RELATIVE of the best score. All three are
    shares, so they hold whatever the size of memory and the length of the query. Before them, a
    loose candidate (tier 2) whose topic holds no term of the query is left out when another loose
    one's topic does: the query names a subject, and that fact is not about it."""
    if not candidates:
        return WordHits([], [])
    candidates = on_subject(candidates)
    best = max(candidate.score for candidate in candidates)
    widest = max(candidate.coverage for candidate in candidates)
    chosen = [
        candidate
        for candidate in candidates
        if candidate.score >= RELATIVE * best and candidate.coverage >= COVERAGE and candidate.coverage >= LEAD * widest
    ]
    return WordHits([c.id for c in chosen if c.tier < 2], [c.id for c in chosen if c.tier == 2])


def on_subject(candidates: list[Candidate]) -> list[Candidate]:
    """The topic rule: when the query names the topic of some facts that hold only part of it,
    another such fact, whose topic it does not name, holds those words in passing, and is left
    out. A fact holding every term stays whatever its topic."""
    if any(candidate.named for candidate in candidates):
        return [candidate for candidate in candidates if candidate.tier < 2 or candidate.named]
    return candidates


def by_meaning(
    conn: apsw.Connection, query: embeddings.Vectors, *, max_distance: float | None = None, limit: int = CANDIDATES
) -> list[int]:
    """Fact ids near the query's vector, closest first. Near means under `max_distance` when one
    is set (MEMORY_GATE_MAX_DISTANCE), else standing out from memory at large: at least
    STAND_OUT standard deviations closer to the query than the mean of its distances to memory's
    facts. Embedding models differ in scale (e5-small puts unrelated texts at cosine distance
    0.14-0.23, bge-m3 around 0.5-0.7), but a fact that stands out from the rest does so in
    every model's own scale, so the judgement needs no cut-off per model. Raises
    embeddings.VectorError when the query vector is not of the kind memory holds."""
    return near(vectors.neighbourhood(conn, query, limit=limit), max_distance=max_distance)


def near(found: vectors.Neighbourhood | None, *, max_distance: float | None = None) -> list[int]:
    """by_meaning's judgement of a neighbourhood, whichever engine measured it (gate.search.teamvectors
    on a team's memory)."""
    if found is None:
        return []
    if max_distance is not None:
        return [fact for fact, distance in found.nearest if distance < max_distance]
    # Too few facts for a spread to mean anything: nothing stands out from a handful.
    if found.spread <= 0.0:
        return []
    bound = found.mean - STAND_OUT * found.spread
    return [fact for fact, distance in found.nearest if distance <= bound]


class MalformedQuery(Exception):
    """FTS5 refused an expression gate.search.query built: a bug in the builder, never the agent's
    fault. Raised so that tests see it; memory_search answers by meaning alone and says so."""


def _match(
    conn: apsw.Connection, expression: str, limit: int, after: int = 0, *, phrases: bool = True
) -> list[tuple[int, float, bytes | None]]:
    """(rowid, bm25 rank: lower is better, matched phrases: one byte each, None without
    `phrases`) of the best `limit` rows with a rowid above `after`, best first, equal ranks in
    rowid order."""
    if phrases:
        # FTS5 sorts by itself and calls gate_phrases for the `limit` rows returned only.
        sql = (
            "SELECT rowid, rank, gate_phrases(facts_fts) FROM facts_fts WHERE facts_fts MATCH ?"
            " AND rowid > ? ORDER BY rank LIMIT ?"
        )
    else:
        # `+rank` is no column FTS5 is asked to sort by, so SQLite sorts: it keeps only the best
        # `limit` while FTS5 scans, and bm25 runs once a row, where FTS5's own ORDER BY rank sorts
        # every match and runs bm25 twice for each (once to sort, once for the rank column): half
        # the time. The same rows in the same order (tests/test_search.py holds the two
        # together, ties included), but SQLite would call an auxiliary function for every match.
        sql = "SELECT rowid, rank, NULL FROM facts_fts WHERE facts_fts MATCH ? AND rowid > ? ORDER BY +rank LIMIT ?"
    with _refused(expression):
        return list(conn.execute(sql, (expression, after, limit)))


def _reaches(conn: apsw.Connection, expression: str, count: int, after: int = 0) -> bool:
    """Whether at least `count` rows with a rowid above `after` match."""
    sql = "SELECT count(*) FROM (SELECT rowid FROM facts_fts WHERE facts_fts MATCH ? AND rowid > ? LIMIT ?)"
    with _refused(expression):
        return conn.execute(sql, (expression, after, count)).get >= count


@contextlib.contextmanager
def _refused(expression: str):
    """MalformedQuery for an expression FTS5 cannot read."""
    try:
        yield
    except apsw.SQLError as error:
        if "fts5" in str(error) or "syntax" in str(error) or "no such column" in str(error):
            raise MalformedQuery(f"FTS5 refused {expression!r}: {error}") from error
        raise


def _frequencies(conn: apsw.Connection, parsed: fts.Query) -> tuple[int, list[int], list[int]]:
    """How many facts there are (at most), how many hold each term in any of its forms, and at
    most how many hold it in an exact form (as typed, or a known abbreviation or expansion)."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'facts'").fetchone()
    size = max(row[0] if row else 0, 1)
    counts, exact = [], []
    for term in parsed.terms:
        docs, phrase = 0, False
        if term.cjk:
            # A run inside unsegmented text is no vocabulary entry: count the facts holding it.
            docs = conn.execute("SELECT count(*) FROM facts_fts WHERE facts_fts MATCH ?", (term.phrases()[0][0],)).get
        # Every vocabulary entry sharing the stem, with its count, in one pass. fts5vocab counts
        # a word's facts by reading its whole list of them, so the forms this pass covers (the
        # word as typed starts with its stem) are taken from it rather than read a second time:
        # for a word most facts hold, that second read was a quarter of the search.
        stemmed: dict[str, int] | None = None
        if term.prefix is not None:
            low, high = term.prefix, term.prefix + "\U0010ffff"
            stemmed = dict(conn.execute("SELECT term, doc FROM facts_vocab WHERE term >= ? AND term < ?", (low, high)))
        for form in () if term.cjk else term.forms:
            if " " in form:
                phrase = True  # "pull request" is no vocabulary entry: its facts are not counted
            elif stemmed is not None and low <= form < high:
                docs += stemmed.get(form, 0)
            else:
                row = conn.execute("SELECT doc FROM facts_vocab WHERE term = ?", (form,)).fetchone()
                docs += row[0] if row else 0
        exact.append(size if phrase else min(docs, size))
        if stemmed is not None:
            docs = max(docs, sum(stemmed.values()))
        for word in term.near:
            row = conn.execute("SELECT doc FROM facts_vocab WHERE term = ?", (word,)).fetchone()
            docs += row[0] if row else 0
        counts.append(min(docs, size))
    return size, counts, exact


def _vocabulary(conn: apsw.Connection, letter: str) -> list[tuple[str, int]]:
    """The index's words beginning with `letter`, and how many facts hold each."""
    return list(
        conn.execute("SELECT term, doc FROM facts_vocab WHERE term >= ? AND term < ?", (letter, letter + "\U0010ffff"))
    )


def _idf(size: int, docs: int) -> float:
    """bm25's inverse document frequency."""
    return math.log((size - docs + 0.5) / (docs + 0.5) + 1)


# The word index's on-disk format that its table options give (FTS5's own version number).
FTS_FORMAT = 4


def rebuild_words(conn: apsw.Connection) -> None:
    """Rebuild the word index from the facts (it is derived from them).

    FTS5 cannot even open an index whose config is damaged ("invalid fts5 file format"), so its
    own 'rebuild' fails there too: the config is then reset to what schema.sql made (the format,
    and the rank function kept) and the index rebuilt on it."""
    try:
        conn.execute("INSERT INTO facts_fts (facts_fts) VALUES ('rebuild')")
        return
    except apsw.Error:
        pass
    conn.execute("DELETE FROM facts_fts_config WHERE k <> 'rank'")
    conn.execute("INSERT INTO facts_fts_config (k, v) VALUES ('version', ?)", (FTS_FORMAT,))
    conn.execute("INSERT INTO facts_fts (facts_fts) VALUES ('rebuild')")
