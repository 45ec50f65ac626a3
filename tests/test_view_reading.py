"""What the viewer's pages read (gate/view/reading.py), over a real SQLite memory."""

from pathlib import Path

from gate.engine import store
from gate.memory.opening import Opened
from gate.search import lookup
from gate.view import reading


def test_why_a_fact_matched_comes_from_the_candidates_the_ranking_judged(conn):
    # Nine long facts hold both words; 160 short ones repeat only one of them. The ranking stops
    # at "every word as typed" (enough facts hold both); a wider pool of candidates, ranked by
    # bm25 over "any word", is filled by the short repeats and holds none of the nine.
    filler = " ".join(f"filler{i}" for i in range(40))
    rows = [("notes", "state", f"alpha beta {filler} number {i}") for i in range(9)]
    rows += [(word, "state", f"{word} {word} {word} {word} item{i}") for word in ("alpha", "beta") for i in range(80)]
    with store.writing(conn):
        conn.executemany(
            "INSERT INTO facts (topic, kind, text, date, created, updated, confirmed) VALUES (?, ?, ?, '2026-01-01', '', '', '')",
            rows,
        )
    found = reading.find(Opened(Path(":memory:"), conn), "alpha beta", None)
    assert [hit.fact.id for hit in found.hits] == [fact.id for fact in lookup.rank(lookup.LocalSearch(conn), "alpha beta").facts]
    assert len(found.hits) == 8 and all(hit.fact.id <= 9 for hit in found.hits)
    assert [(hit.words, hit.share) for hit in found.hits] == [("exact", 1.0)] * 8


def test_counts_are_said_in_english():
    from gate.view.markup import plural

    assert [plural(1, "search"), plural(11, "search"), plural(2, "fact"), plural(0, "turn")] == [
        "1 search", "11 searches", "2 facts", "0 turns"]
