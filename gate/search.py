"""Rank facts for a search: by words, by meaning when vectors are available, fused.

Words: the tiers of gate/query.py against the FTS5 index, bm25 within a tier (topic weighs five
times the text: a fact's subject says more than a word in passing). Precision matters doubly
here, since every fact returned costs the agent context and a decision in its write, so the loose
tier admits a fact only if the terms it shares carry at least half of the query's weight.

Meaning: the nearest vectors under a distance cut-off (gate/vectors.py). Both lists are fused by
reciprocal rank, which needs no comparable scores, only ranks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import apsw

from gate import query as fts
from gate import text

CANDIDATES = 30
RESULTS = 8
RRF_K = 60
# Share of the query's weight (idf) that a loose candidate's shared terms must carry.
LOOSE_COVERAGE = 0.5


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


def by_words(conn: apsw.Connection, typed: str | fts.Query, *, limit: int = CANDIDATES) -> list[int]:
    """Fact ids ranked by words, best first: at most `limit`, possibly none. Never raises for
    anything the agent can type."""
    parsed = fts.parse(typed) if isinstance(typed, str) else typed
    ranked: list[int] = []
    for tier, expression in parsed.tiers():
        if len(ranked) >= limit:
            break
        found = [
            rowid
            for rowid in _match(conn, expression, limit + len(ranked))
            if rowid not in ranked
        ]
        if tier == "loose":
            found = _covering(conn, parsed, found)
        ranked.extend(found[: limit - len(ranked)])
    return ranked


def _match(conn: apsw.Connection, expression: str, limit: int) -> list[int]:
    sql = "SELECT rowid FROM facts_fts WHERE facts_fts MATCH ? ORDER BY rank LIMIT ?"
    try:
        return [row[0] for row in conn.execute(sql, (expression, limit))]
    except apsw.SQLError:
        # The expression is built from quoted words only; if FTS5 still refuses it, the honest
        # answer to the agent is "nothing found", not a traceback.
        return []


def _covering(conn: apsw.Connection, parsed: fts.Query, candidates: list[int]) -> list[int]:
    """The loose candidates whose shared terms carry enough of the query's weight."""
    weights = [_idf(conn, term) for term in parsed.terms]
    total = sum(weights)
    facts = load(conn, candidates)
    kept = []
    for rowid in candidates:
        fact = facts.get(rowid)
        if fact is None:
            continue
        raw = f"{fact.topic} {fact.text}"
        words = text.words(raw)
        joined = " " + " ".join(words) + " "
        shared = [
            weight
            for term, weight in zip(parsed.terms, weights)
            if term.matches(set(words), joined, raw)
        ]
        if len(shared) >= 2 and sum(shared) >= LOOSE_COVERAGE * total:
            kept.append(rowid)
    return kept


def _idf(conn: apsw.Connection, term: fts.Term) -> float:
    """bm25's inverse document frequency of a term, its forms counted together."""
    total = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'facts'").fetchone()
    size = max(total[0] if total else 0, 1)
    docs = 0
    for form in term.forms if not term.cjk else ():
        if " " not in form:
            row = conn.execute("SELECT doc FROM facts_vocab WHERE term = ?", (form,)).fetchone()
            docs += row[0] if row else 0
    if term.prefix is not None:
        row = conn.execute(
            "SELECT coalesce(sum(doc), 0) FROM facts_vocab WHERE term >= ? AND term < ?",
            (term.prefix, term.prefix + "\U0010ffff"),
        ).fetchone()
        docs = max(docs, row[0])
    docs = min(docs, size)
    return math.log((size - docs + 0.5) / (docs + 0.5) + 1)


def fuse(rankings: Sequence[Sequence[int]], *, k: int = RRF_K) -> list[int]:
    """Reciprocal-rank fusion: each list gives 1/(k + rank); ties keep first-seen order."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, rowid in enumerate(ranking, start=1):
            scores[rowid] = scores.get(rowid, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda rowid: -scores[rowid])
