"""Rank facts for a search: by words, by meaning when vectors are available, fused.

Words: the tiers of gate/query.py against the FTS5 index, bm25 within a tier (topic weighs five
times the text: a fact's subject says more than a word in passing). Precision matters doubly
here, since every fact returned costs the agent context and a decision in its write, so the loose
tier admits a fact only if the terms it shares carry at least half of the query's weight.

Meaning: the nearest vectors under a distance cut-off (gate/vectors.py): facts worded otherwise
than the query, or written in another language.

Together (`hybrid`): facts that hold every term of the query (the exact and word-form tiers) come
first, in bm25 order; then reciprocal-rank fusion (k = 60) of the loose word matches and the
nearest facts, where a loose match counts only if meaning finds it near too. Plain fusion of the
two lists was measured first (bench/retrieval.py) and cost more than it gave: a small model such
as multilingual-e5-small ranks facts that share the query's words worse than bm25 does, and
letting it reorder them dropped nDCG@10 from 0.988 to 0.957 on the public benchmark. Where words
are weak (the loose tier, or nothing at all) meaning is the better judge, and there it decides.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import apsw

from gate import query as fts
from gate import embeddings, vectors

CANDIDATES = 30
RESULTS = 8
RRF_K = 60
# Share of the query's weight (idf) that a loose candidate's shared terms must carry.
LOOSE_COVERAGE = 0.5
# A term held by more than this share of facts is left out while other terms remain; only in
# memories large enough for shares to mean something.
COMMON_SHARE = 0.5
MIN_FOR_COMMON = 50
# When every term of a query is held by more facts than this, the query ranks among this many
# newest facts.
RECENT_WINDOW = 5000


@dataclass(frozen=True)
class Fact:
    id: int
    topic: str
    kind: str
    text: str
    date: str
    rev: int
    created: str
    updated: str
    confirmed: str


FACT_COLUMNS = "id, topic, kind, text, date, rev, created, updated, confirmed"


def load(conn: apsw.Connection, ids: Sequence[int]) -> dict[int, Fact]:
    """The facts with these ids that exist, by id."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = conn.execute(f"SELECT {FACT_COLUMNS} FROM facts WHERE id IN ({marks})", tuple(ids))
    return {row[0]: Fact(*row) for row in rows}


@dataclass(frozen=True)
class WordHits:
    """Facts found by words, best first: `strong` hold every term (in some form), `loose` only
    the share of them that the loose tier asks for."""

    strong: list[int]
    loose: list[int]

    def ranked(self) -> list[int]:
        return self.strong + self.loose


def by_words(conn: apsw.Connection, typed: str | fts.Query, *, limit: int = CANDIDATES) -> list[int]:
    """Fact ids ranked by words, best first: at most `limit`, possibly none. Never raises for
    anything the agent can type."""
    return words(conn, typed, limit=limit).ranked()


def words(conn: apsw.Connection, typed: str | fts.Query, *, limit: int = CANDIDATES) -> WordHits:
    """by_words, telling the strong hits from the loose ones."""
    parsed = fts.parse(typed) if isinstance(typed, str) else typed
    if not parsed:
        return WordHits([], [])
    size, docs = _frequencies(conn, parsed)
    weights = [_idf(size, count) for count in docs]
    # A word most facts hold narrows nothing and costs the most (bm25 runs for every fact that
    # holds it): leave such words out while others remain.
    common = {i for i, count in enumerate(docs) if size >= MIN_FOR_COMMON and count > COMMON_SHARE * size}
    if len(common) < len(parsed.terms):
        focused = parsed.without(common)
        kept = [weights[i] for i in range(len(weights)) if i not in common]
        rarest = min(count for i, count in enumerate(docs) if i not in common)
    else:
        focused, kept, rarest = parsed, weights, min(docs)
    # Even the rarest word is in thousands of facts: bm25 for all of them would cost tens of
    # ms and tell them apart little, so rank among the newest facts only.
    after = size - RECENT_WINDOW if rarest > RECENT_WINDOW else 0
    order = sorted(range(len(kept)), key=lambda i: -kept[i])
    ranked: list[int] = []
    strong = 0
    for tier in focused.tiers(order):
        if len(ranked) >= limit:
            break
        rows = _match(conn, tier.expression, limit + len(ranked), after)
        if tier.name == "loose":
            # Words memory has never seen weigh nothing here: no fact can share them.
            known = sum(weight for weight, count in zip(weights, docs) if count)
            rows = [
                (rowid, matched)
                for rowid, matched in rows
                if _carried(tier.owners, kept, matched) >= LOOSE_COVERAGE * known
            ]
        found = [rowid for rowid, _ in rows if rowid not in ranked]
        ranked.extend(found[: limit - len(ranked)])
        if tier.name != "loose":
            strong = len(ranked)
    return WordHits(ranked[:strong], ranked[strong:])


def by_meaning(conn: apsw.Connection, query: embeddings.Vectors, *, max_distance: float,
               limit: int = CANDIDATES) -> list[int]:
    """Fact ids nearest the query's vector under the cut-off, closest first. Raises
    embeddings.VectorError when the query vector is not of the kind memory holds."""
    return vectors.nearest(conn, query, max_distance=max_distance, limit=limit)


def hybrid(conn: apsw.Connection, typed: str, query: embeddings.Vectors | None, *, max_distance: float,
           limit: int | None = RESULTS) -> list[int]:
    """What memory_search returns: by words alone without a query vector, else by words and
    meaning together (see the module docstring). `limit` None: the whole ranking."""
    if query is None:
        return by_words(conn, typed)[:limit]
    near = by_meaning(conn, query, max_distance=max_distance)
    hits = words(conn, typed)
    return combine(hits, near, unjudged=vectors.without_vector(conn, hits.loose))[:limit]


def combine(hits: WordHits, near: Sequence[int], *, unjudged: Iterable[int] = ()) -> list[int]:
    """Strong word hits first; then the fusion of the nearest facts with the loose hits that
    meaning confirms, or could not judge (no vector yet)."""
    keep = set(near) | set(unjudged)
    weak = [rowid for rowid in hits.loose if rowid in keep]
    first = set(hits.strong)
    return hits.strong + [rowid for rowid in fuse([weak, near]) if rowid not in first]


def _match(conn: apsw.Connection, expression: str, limit: int, after: int = 0) -> list[tuple[int, bytes]]:
    """(rowid, matched phrases: one byte each) of the best `limit` rows with a rowid above
    `after`."""
    sql = (
        "SELECT rowid, gate_phrases(facts_fts) FROM facts_fts WHERE facts_fts MATCH ?"
        " AND rowid > ? ORDER BY rank LIMIT ?"
    )
    try:
        return list(conn.execute(sql, (expression, after, limit)))
    except apsw.SQLError:
        # The expression is built from quoted words only; if FTS5 still refuses it, the honest
        # answer to the agent is "nothing found", not a traceback.
        return []


def _carried(owners: tuple[int, ...], weights: list[float], matched: bytes) -> float:
    """The weight of the terms whose phrases matched."""
    shared = {owner for owner, hit in zip(owners, matched) if hit}
    return sum(weights[term] for term in shared)


def _frequencies(conn: apsw.Connection, parsed: fts.Query) -> tuple[int, list[int]]:
    """How many facts there are (at most), and how many hold each term in any of its forms."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'facts'").fetchone()
    size = max(row[0] if row else 0, 1)
    counts = []
    for term in parsed.terms:
        docs = 0
        for form in () if term.cjk else term.forms:
            if " " not in form:
                row = conn.execute("SELECT doc FROM facts_vocab WHERE term = ?", (form,)).fetchone()
                docs += row[0] if row else 0
        if term.prefix is not None:
            row = conn.execute(
                "SELECT coalesce(sum(doc), 0) FROM facts_vocab WHERE term >= ? AND term < ?",
                (term.prefix, term.prefix + "\U0010ffff"),
            ).fetchone()
            docs = max(docs, row[0])
        counts.append(min(docs, size))
    return size, counts


def _idf(size: int, docs: int) -> float:
    """bm25's inverse document frequency."""
    return math.log((size - docs + 0.5) / (docs + 0.5) + 1)


def fuse(rankings: Sequence[Sequence[int]], *, k: int = RRF_K) -> list[int]:
    """Reciprocal-rank fusion: each list gives 1/(k + rank); ties keep first-seen order."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, rowid in enumerate(ranking, start=1):
            scores[rowid] = scores.get(rowid, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda rowid: -scores[rowid])


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
