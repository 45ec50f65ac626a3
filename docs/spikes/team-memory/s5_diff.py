"""The one query of s5_bench.py's 200 where bm25-in-SQL and FTS5 disagreed: which, and why.

    .venv/bin/python spike/s5_diff.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import psycopg

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parent / "bench")]
import _corpus  # noqa: E402
import pg  # noqa: E402
import pgwords  # noqa: E402

from gate.engine import store  # noqa: E402
from gate.search import fulltext as search  # noqa: E402

rows = _corpus.facts(10000)
queries = _corpus.queries(rows, 200)
with tempfile.TemporaryDirectory(dir="/tmp") as folder, pg.Server() as server, \
        psycopg.connect(server.url(), autocommit=True) as conn:
    lite = store.connect(Path(folder) / "memory.db")
    _corpus.load(lite, 10000)
    pgwords.load(conn, [(i + 1, topic, text) for i, (topic, _, text) in enumerate(rows)])
    for typed in queries:
        for ranker in ("bm25_sql", "bm25_postings"):
            mine, theirs = search.by_words(lite, typed), pgwords.by_words(conn, typed, ranker=ranker)
            if mine != theirs:
                print(f"{ranker} {typed!r}: SQLite {mine} | PG {theirs}")
                a = {c.id: c for c in search._candidates(lite, typed)}
                b = {c.id: c for c in pgwords.candidates(conn, typed, ranker=ranker)}
                for fid in sorted(set(mine) ^ set(theirs)) or mine[:3]:
                    ca, cb = a.get(fid), b.get(fid)
                    print(f"  fact {fid}: SQLite {ca and (ca.tier, ca.score, ca.coverage)} | PG {cb and (cb.tier, cb.score, cb.coverage)}")
                best_a = max(c.score for c in a.values())
                best_b = max(c.score for c in b.values())
                print(f"  best score SQLite {best_a!r} PG {best_b!r}; RELATIVE cut {search.RELATIVE * best_a!r} / {search.RELATIVE * best_b!r}")
    print("done")
