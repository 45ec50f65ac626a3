"""Question 5: search p50 at 10k facts, PostgreSQL (GIN on the tsvector) beside SQLite FTS5, one run.

    .venv/bin/python spike/s5_bench.py [--facts 10000] [--queries 200]

Facts and queries are bench/_corpus.py's (the speed benchmarks' synthetic facts; queries: 1-4
words of a random fact, and a worst case of 2-4 of the most frequent words). No tuning: default
server settings (fsync off, as a test server), psycopg's default automatic prepare.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT), str(ROOT / "bench")]
import _corpus  # noqa: E402
import pg  # noqa: E402
import pgwords  # noqa: E402

from gate.engine import store  # noqa: E402
from gate.search import query as fts  # noqa: E402
from gate.search import fulltext as search  # noqa: E402


def timed(run, queries: list[str]) -> tuple[list[float], list[list[int]]]:
    times, answers = [], []
    for typed in queries[:10]:
        run(typed)  # warm caches and prepared statements
    for typed in queries:
        started = time.perf_counter()
        answers.append(run(typed))
        times.append(1000 * (time.perf_counter() - started))
    return times, answers


def fmt(times: list[float]) -> str:
    ordered = sorted(times)
    return f"p50 {statistics.median(ordered):7.2f} ms  p95 {ordered[int(0.95 * len(ordered))]:7.2f} ms"


def jaccard(a: list[int], b: list[int]) -> float:
    sa, sb = set(a), set(b)
    return 1.0 if not sa and not sb else len(sa & sb) / len(sa | sb)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--covering", action="store_true",
                        help="add the covering index (term, fact) INCLUDE (freq, ntokens) on postings, then VACUUM")
    parser.add_argument("--only", nargs="*", default=None, help="the systems to run, by the start of their names")
    args = parser.parse_args()
    rows = _corpus.facts(args.facts)
    sets = {"fact words": _corpus.queries(rows, args.queries), "common words": _corpus.common_queries(40)}
    runs = []
    for _ in range(5):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        runs.append(1000 * (time.perf_counter() - began))
    print(f"python -c pass: {statistics.median(runs):.0f} ms (how busy the machine is)")

    with tempfile.TemporaryDirectory(dir="/tmp") as folder, pg.Server() as server, \
            psycopg.connect(server.url(), autocommit=True) as conn:
        lite = store.connect(Path(folder) / "memory.db")
        began = time.perf_counter()
        _corpus.load(lite, args.facts)
        print(f"SQLite: {args.facts} facts loaded in {time.perf_counter() - began:.1f} s")
        began = time.perf_counter()
        pgwords.load(conn, [(i + 1, topic, text) for i, (topic, _, text) in enumerate(rows)])
        size = conn.execute("SELECT pg_size_pretty(pg_total_relation_size('facts'))").fetchone()[0]
        gin = conn.execute("SELECT pg_size_pretty(pg_relation_size('facts_words'))").fetchone()[0]
        postings = conn.execute("SELECT count(*), pg_size_pretty(pg_total_relation_size('postings')) FROM postings").fetchone()
        print(f"PostgreSQL postings: {postings[0]} rows, {postings[1]} with its primary key")
        print(f"PostgreSQL: {args.facts} facts loaded (GIN built, vocab from ts_stat) in "
              f"{time.perf_counter() - began:.1f} s; table {size}, GIN index {gin}")

        if args.covering:
            conn.execute("CREATE INDEX postings_covering ON postings (term, fact) INCLUDE (freq, ntokens)")
            conn.execute("VACUUM (ANALYZE) postings")
            conn.execute("VACUUM (ANALYZE) facts")
            print("postings: covering index (term, fact) INCLUDE (freq, ntokens), vacuumed")

        def one_statement(typed: str) -> list[int]:
            """The any-term tier alone, ranked by ts_rank in one statement: the floor of a round trip."""
            parsed = fts.parse(typed)
            if not parsed:
                return []
            expression = pgwords.Expression(parsed)
            return [row[0] for row in conn.execute(
                f"SELECT id FROM facts WHERE words @@ %s::tsquery ORDER BY ts_rank('{pgwords.WEIGHTS}', words, %s::tsquery) DESC LIMIT 60",
                (expression.text, expression.text))]

        systems = {
            "SQLite FTS5 by_words (gate)": lambda q: search.by_words(lite, q),
            "PG by_words, bm25 in Python": lambda q: pgwords.by_words(conn, q, ranker="bm25"),
            "PG by_words, bm25 in SQL": lambda q: pgwords.by_words(conn, q, ranker="bm25_sql"),
            "PG by_words, bm25 from postings": lambda q: pgwords.by_words(conn, q, ranker="bm25_postings"),
            "PG by_words, bm25 from postings, 1 count statement, counters row": lambda q: pgwords.by_words(conn, q, ranker="bm25_fast"),
            "PG by_words, ts_rank": lambda q: pgwords.by_words(conn, q, ranker="ts_rank"),
            "PG one statement (OR tier, ts_rank, 60)": one_statement,
        }
        if args.only:
            systems = {name: run for name, run in systems.items()
                       if name.startswith("SQLite") or any(name.startswith(prefix) for prefix in args.only)}
        for name, queries in sets.items():
            print(f"\n{len(queries)} queries, {name}:")
            answers = {}
            for system, run in systems.items():
                times, answers[system] = timed(run, queries)
                print(f"  {system:<62} {fmt(times)}")
            base = answers["SQLite FTS5 by_words (gate)"]
            for system in [name for name in systems if name.startswith("PG by_words")]:
                js = [jaccard(a, b) for a, b in zip(base, answers[system])]
                print(f"  top-8 agreement with SQLite, {system}: mean Jaccard {statistics.mean(js):.3f}, "
                      f"{sum(j == 1 for j in js)}/{len(js)} the same set")
        explain = conn.execute(
            "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) SELECT id FROM facts WHERE words @@ %s::tsquery",
            (pgwords.Expression(fts.parse(sets["fact words"][0])).text,)).fetchall()
        print("\nplan of one tier's match:", " / ".join(row[0].strip() for row in explain[:4]))
        lite.close()


if __name__ == "__main__":
    main()
