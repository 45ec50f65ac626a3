"""One ranking for every search: the agent's terms and the owner's words, by words and by meaning.

Memory stays true only when the search of a turn that corrects a fact brings that fact back: the
gate then makes the turn update or delete it. The agent's keywords often miss it (they name the
subject in other words than the fact does, or in another language), but the turn also knows what
the owner wrote, and a correction's own words are the best query for what it contradicts. So a
search asks up to two queries, the terms and the owner's words of the turn, and each by two
signals:

- words: bm25 over topic and text (gate.search.fulltext's candidates, before its judgement), as a
  share of the best fact's score, so that 1 is the best word match of that query;
- meaning: how many standard deviations closer to the query a fact's vector stands than memory
  at large does (gate.search.vectors.Neighbourhood), the scale on which search by meaning calls
  a fact near at STAND_OUT.

A fact's score adds them up, a word share counting WORD_WEIGHT times, which is STAND_OUT: the
best word match of a query weighs what a fact meaning just calls near does. The answer is every fact
scoring at least SHARE of the best, at most `limit`, best first: a fact that stands out on every
signal returns alone, a subject several facts share returns them together. And whatever the
agent's terms find by words alone (gate.search.fulltext's judgement) always comes back, in the
fused order: meaning and the owner's words add facts and order them, but never take away one the
terms' words found (that cost claude-mem-lite's coding queries a fifth of their recall). But only when memory
holds something on the subject at all: some query's words pass gate.search.fulltext's judgement,
or meaning calls a fact near (STAND_OUT standard deviations), or both queries' words find one
same fact, or one query's words and meaning agree (a fact among the AGREE best of each: two
signals that pick it by different means). Otherwise nothing comes back, rather than the least
bad of unrelated facts. The last rule is for a correction in the owner's own long sentence, which
covers no fact well enough for the judgement, nor brings one STAND_OUT near: searched with the
owner's words alone, the truth set found 0.72 of its corrections (plain FTS5, 0.88), and the
rule was chosen there (docs/search.md).

The two signals agreeing (those last two rules) also says whether the rest of the answer can be
trusted to either one alone. When they disagree, each naming other facts as its best, the
subject is in doubt and the share of the best takes in the tail of both: facts words alone found
in passing and facts meaning alone places a little nearer than the rest, on LoCoMo an answer
at most three times in a hundred. Then, beyond the terms' word hits, a fact comes back only if meaning
calls it near or both signals offer it (some query's words find it and meaning places it nearer
than memory at large). Questions memory holds no answer for got 4.13 facts, 2.79 with it; the
truth set lost nothing, LoCoMo's recall 0.612 -> 0.607 on its tuning half (bench/unanswerable.py
chose it, with the truth set and that half; docs/search.md has the figures).

Without vectors (MEMORY_GATE_MEANING=off, no model installed, an endpoint down) it is the same
with words alone. SHARE and the rule were chosen on the truth-maintenance development set
(shared/data/truth) and checked on LoCoMo conversations 26, 30 and 41 (bench/locomo.py), where
the judgement's topic rule and a larger word weight bought LoCoMo recall at the cost of
corrections found, and were left out: held-out sets judge the choice. docs/search.md has the
figures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gate.search import fulltext
from gate.search.embeddings import Vectors
from gate.search.vectors import Neighbourhood

# A fact returns when it scores at least this share of the best fact's score.
SHARE = 0.5
# How much a query's best word match weighs against meaning's standard deviations: as much as a
# fact meaning calls near (gate.search.fulltext.STAND_OUT).
WORD_WEIGHT = fulltext.STAND_OUT
# Facts each signal offers to the fusion, per query.
POOL = fulltext.POOL
# Words and meaning agree on the subject when one fact is among the AGREE best of each.
AGREE = 5


@dataclass(frozen=True)
class Ranked:
    """A search's answer (`ids`, best first) and why: each fact's fused score, the candidates
    the agent's terms found by words (`candidates`, with the share of the query each holds), and
    every fact some query's words found (`by_words`: a fact of the answer not in it came by
    meaning alone)."""

    ids: list[int]
    scores: dict[int, float] = field(default_factory=dict)
    candidates: dict[int, fulltext.Candidate] = field(default_factory=dict)
    by_words: set[int] = field(default_factory=set)
    meaning: bool = False  # whether any query was ranked by meaning


Near = Callable[[Vectors], "Neighbourhood | None"]


def rank(
    index,
    queries: Sequence[str],
    vectors: Sequence[Vectors | None] = (),
    near: Near | None = None,
    *,
    max_distance: float | None = None,
    limit: int = fulltext.RESULTS,
    words: Words | None = None,
) -> Ranked:
    """The facts for `queries` (the agent's terms first, then the owner's words if any), best
    first. `vectors[i]` is query i's vector (None: words only for it), `near` finds a vector's
    neighbourhood in this memory (gate.search.vectors.neighbourhood, or a team's). `index` is
    where words are looked up (gate.search.fulltext.Index, or a team's), unless `words` holds
    what they found already (`words_of` the same queries and limit: a server looks them up
    while the model computes the queries' vectors, gate.search.lookup.LocalSearch)."""
    scores: dict[int, float] = {}
    candidates: dict[int, fulltext.Candidate] = {}
    used_meaning = False
    something = False  # memory holds something on the subject (see the module docstring)
    agreed = False  # two signals name one same fact as among their best (see the module docstring)
    offered: set[int] = set()  # facts meaning places nearer the query than memory at large
    called_near: set[int] = set()  # facts meaning calls near (STAND_OUT)
    by_words: list[set[int]] = []
    word_hits: list[int] = []  # what words alone return for the agent's terms: never taken away
    if words is None:
        words = words_of(index, queries, limit=limit)
    assert (words.queries, words.limit) == (distinct(queries), limit), "words found for other queries"
    for position, pool in enumerate(words.pools):
        judged = fulltext.judge(pool).ranked()
        something = something or bool(judged)
        if position == 0:
            candidates = {candidate.id: candidate for candidate in pool}
            word_hits = judged[:limit]
        by_words.append({candidate.id for candidate in pool})
        for fact, share in word_shares(pool):
            scores[fact] = scores.get(fact, 0.0) + WORD_WEIGHT * share
        vector = vectors[position] if position < len(vectors) else None
        if vector is None or near is None:
            continue
        found = near(vector)
        if found is None:
            continue
        used_meaning = True
        stood = standing(found, max_distance=max_distance)
        for fact, stands in stood:
            scores[fact] = scores.get(fact, 0.0) + stands
            offered.add(fact)
            if stands >= fulltext.STAND_OUT:
                called_near.add(fact)
        best_by_words = {candidate.id for candidate in pool[:AGREE]}
        agreed = agreed or any(fact in best_by_words for fact, _ in stood[:AGREE])
    agreed = agreed or (len(by_words) > 1 and bool(by_words[0] & by_words[1]))
    something = something or bool(called_near) or agreed
    found_by_words = set().union(*by_words)
    if not scores or not something:
        return Ranked([], scores, candidates, found_by_words, used_meaning)
    order = sorted(scores, key=lambda fact: (-scores[fact], fact))
    top = scores[order[0]]
    chosen = set(word_hits)
    for fact in order:
        if len(chosen) >= limit or scores[fact] < SHARE * top:
            break
        if used_meaning and not agreed and not vouched(fact, found_by_words, offered, called_near):
            continue  # the signals disagree and this fact has only one of them (module docstring)
        chosen.add(fact)
    ids = [fact for fact in order if fact in chosen]
    return Ranked(ids, scores, candidates, found_by_words, used_meaning)


@dataclass(frozen=True)
class Words:
    """What words find for each distinct query, in order (gate.search.fulltext's candidates,
    before its judgement): the first half of `rank`, which needs no vector."""

    queries: tuple[str, ...]
    limit: int
    pools: list[list[fulltext.Candidate]]


def words_of(index, queries: Sequence[str], *, limit: int = fulltext.RESULTS) -> Words:
    """The word candidates of each distinct, non-blank query, as `rank` takes them."""
    asked = distinct(queries)
    return Words(asked, limit, [fulltext.candidates_in(index, text, wanted=limit) for text in asked])


def distinct(queries: Sequence[str]) -> tuple[str, ...]:
    """The queries `rank` asks, in order: each once, the blank ones left out."""
    return tuple(dict.fromkeys(query for query in queries if query and query.strip()))


def vouched(fact: int, by_words: set[int], offered: set[int], called_near: set[int]) -> bool:
    """Whether a fact may fill the answer when words and meaning disagree on the subject:
    meaning calls it near, or both signals offer it (some query's words find it and meaning
    places it nearer the query than memory at large)."""
    return fact in called_near or (fact in by_words and fact in offered)


def word_shares(pool: list[fulltext.Candidate]) -> list[tuple[int, float]]:
    """Each candidate's word score as a share of the best (bm25 weighed by the share of the
    query it holds), in the candidates' order: facts holding every term as typed first, then
    every term in some form, then some (gate.search.fulltext). A fact of a better tier scores at
    least what any fact after it scores, so a short fact repeating one term never outweighs a
    fact that holds the whole query."""
    floor, shares = 0.0, []
    for candidate in reversed(pool):
        floor = max(floor, candidate.score)
        shares.append((candidate.id, floor))
    best = floor
    return [(fact, score / best) for fact, score in reversed(shares)] if best > 0 else []


def standing(found: Neighbourhood, *, max_distance: float | None = None) -> list[tuple[int, float]]:
    """How far each of the nearest facts stands out from memory at large, in standard deviations
    of the query's distances (only those closer than the mean); with a fixed cut-off
    (MEMORY_GATE_MAX_DISTANCE), only the facts under it count."""
    if found.spread <= 0.0:
        return []  # a handful of facts: nothing stands out
    out = []
    for fact, distance in found.nearest:
        if max_distance is not None and distance >= max_distance:
            continue
        stands = (found.mean - distance) / found.spread
        if stands > 0:
            out.append((fact, stands))
    return out
