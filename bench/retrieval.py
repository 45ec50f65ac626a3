"""Retrieval quality on the public claude-mem-lite benchmark, beside the baseline it committed.

    python bench/retrieval.py [--data ../shared/data/claude-mem-lite]

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

from gate import search, store  # noqa: E402

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
    args = parser.parse_args(argv)

    observations = json.loads((args.data / "seed-data.json").read_text())["observations"]
    queries = json.loads((args.data / "test-queries.json").read_text())["queries"]
    baseline = {row["id"]: row["result_ids"] for row in json.loads((args.data / "baseline.json").read_text())["perQuery"]}

    conn = store.connect(":memory:")
    trimmed = build(conn, observations)
    print(f"{len(observations)} observations -> {len(observations)} facts ({trimmed} trimmed to {LIMIT} characters)")

    systems = {"baseline": lambda q: baseline[q["id"]], "words": lambda q: search.by_words(conn, q["query"])}
    table: dict[str, dict[str, list[dict[str, float]]]] = defaultdict(lambda: defaultdict(list))
    timings = []
    for q in queries:
        category = q.get("category", "standard")
        for name, run in systems.items():
            started = time.perf_counter()
            results = run(q)
            if name != "baseline":
                timings.append(time.perf_counter() - started)
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
    timings.sort()
    print(f"\nwords search: p50 {1000 * timings[len(timings) // 2]:.2f} ms over {len(timings)} queries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
