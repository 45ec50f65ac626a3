"""Where PostgreSQL's words search spends its time at 10k facts: statements and round trips per
search, time by statement kind, for the bm25-from-postings ranker and for ts_rank.

    .venv/bin/python spike/s5_profile.py
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import psycopg

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parent / "bench")]
import _corpus  # noqa: E402
import pg  # noqa: E402
import pgwords  # noqa: E402


class Timed:
    """A connection whose execute() is timed by the statement's first words."""

    def __init__(self, conn):
        self.conn, self.spent, self.calls = conn, defaultdict(float), defaultdict(int)

    def execute(self, sql, params=None):
        kind = ("bm25 main" if sql.startswith("WITH hits") else "ts_rank main" if "ts_rank(" in sql else
                "idf: postings count" if "count(DISTINCT fact)" in sql else "idf/cjk: GIN count" if "count(*) FROM facts WHERE words" in sql
                else "avgdl: count+sum" if "sum(ntokens)" in sql else "vocab lookups" if "vocab" in sql else "size: max(id)" if "max(id)" in sql else sql[:30])
        began = time.perf_counter()
        cursor = self.conn.execute(sql, params)
        rows = cursor.fetchall()
        self.spent[kind] += time.perf_counter() - began
        self.calls[kind] += 1

        class Done:
            def fetchone(self):
                return rows[0] if rows else None

            def fetchall(self):
                return rows

            def __iter__(self):
                return iter(rows)
        return Done()


def main() -> None:
    rows = _corpus.facts(10000)
    queries = _corpus.queries(rows, 100)
    with pg.Server() as server, psycopg.connect(server.url(), autocommit=True) as conn:
        pgwords.load(conn, [(i + 1, topic, text) for i, (topic, _, text) in enumerate(rows)])
        variants = [("bm25_postings", None), ("ts_rank", None),
                    ("bm25_postings", "CREATE INDEX postings_covering ON postings (term, fact) INCLUDE (freq, ntokens);"
                                      " VACUUM (ANALYZE) postings; VACUUM (ANALYZE) facts")]
        for ranker, change in variants:
            if change:
                for statement in change.split(";"):
                    conn.execute(statement)
                print(f"after: {change}")
            timed = Timed(conn)
            for typed in queries[:10]:
                pgwords.by_words(conn, typed, ranker=ranker)
            began = time.perf_counter()
            for typed in queries:
                pgwords.by_words(timed, typed, ranker=ranker)
            total = time.perf_counter() - began
            calls = sum(timed.calls.values())
            print(f"{ranker}: {len(queries)} searches in {total:.2f} s, {calls / len(queries):.1f} statements a search")
            for kind, spent in sorted(timed.spent.items(), key=lambda item: -item[1]):
                print(f"  {kind:<22} {1000 * spent / len(queries):7.2f} ms a search over {timed.calls[kind] / len(queries):.1f} statements")
        began = time.perf_counter()
        for _ in range(200):
            conn.execute("SELECT 1").fetchone()
        print(f"one round trip (SELECT 1) on 127.0.0.1: {1000 * (time.perf_counter() - began) / 200:.3f} ms")


if __name__ == "__main__":
    main()
