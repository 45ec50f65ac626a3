"""Search latency, words only, in-process, at 1k, 10k and 100k facts.

    python bench/latency.py [--sizes 1000 10000 100000] [--queries 300]

Queries are what an agent asks about things in memory: 1-4 words of one fact. Two figures per
size: `by_words` (the ranking alone: tiers, bm25, coverage check) and `memory_search` (what the
tool does: ranking, loading the facts, recording the reads and what the session was shown, in
one write transaction on a file database). Targets on a 2-core machine: memory_search p50 at
most 2 ms at 10k and 10 ms at 100k. A last column times the worst case, queries made only of
the most frequent words (no target: bm25 is computed for every matching fact). `python -c pass`
is timed in the same run as a yardstick for how fast this machine is right now.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import _corpus  # noqa: E402

from gate import search, store, tools  # noqa: E402


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def python_start() -> float:
    runs = []
    for _ in range(10):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        runs.append(time.perf_counter() - started)
    return statistics.median(runs) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args(argv)

    print(f"python -c pass: {python_start():.1f} ms (this machine, now)")
    print(
        f"{'facts':>7}  {'build s':>7}  {'by_words p50':>12} {'p95':>7}  {'memory_search p50':>17} {'p95':>7}"
        f"  {'hits/query':>10}  {'common words p50':>16} {'p95':>7}"
    )
    common = _corpus.common_queries(max(20, args.queries // 5))
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as folder:
            conn = store.connect(Path(folder) / "memory.db")
            started = time.perf_counter()
            rows = _corpus.load(conn, size)
            built = time.perf_counter() - started
            queries = _corpus.queries(rows, args.queries)
            for typed in queries[:20]:  # warm the page cache
                search.by_words(conn, typed)
            ranking, full, hits = [], [], 0
            caller = tools.Caller("bench")
            for typed in queries:
                started = time.perf_counter()
                found = search.by_words(conn, typed)
                ranking.append((time.perf_counter() - started) * 1000)
                hits += min(len(found), search.RESULTS)
                started = time.perf_counter()
                tools.memory_search(conn, typed, caller)
                full.append((time.perf_counter() - started) * 1000)
            worst = []
            for typed in common:
                started = time.perf_counter()
                tools.memory_search(conn, typed, caller)
                worst.append((time.perf_counter() - started) * 1000)
            conn.close()
        print(
            f"{size:>7}  {built:>7.1f}  {statistics.median(ranking):>9.2f} ms {percentile(ranking, 0.95):>7.2f}"
            f"  {statistics.median(full):>14.2f} ms {percentile(full, 0.95):>7.2f}  {hits / len(queries):>10.1f}"
            f"  {statistics.median(worst):>13.2f} ms {percentile(worst, 0.95):>7.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
