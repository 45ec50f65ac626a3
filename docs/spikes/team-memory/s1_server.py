"""Question 1: pgserver's PostgreSQL here: start/stop times, pgvector, missing contrib, psycopg.

    .venv/bin/python spike/s1_server.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

import psycopg

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import pg  # noqa: E402

RUNS = 5
WANTED = ["vector", "unaccent", "pg_trgm", "btree_gin", "btree_gist", "fuzzystrmatch", "pgcrypto",
          "citext", "pg_stat_statements", "plpgsql", "dict_int", "uuid-ossp"]


def p50(values: list[float]) -> str:
    return f"{1000 * statistics.median(values):.0f} ms (min {1000 * min(values):.0f}, max {1000 * max(values):.0f})"


def main() -> None:
    inits, starts, stops, firsts = [], [], [], []
    for _ in range(RUNS):
        server = pg.Server()
        try:
            inits.append(server.initdb())
            starts.append(server.start())
            began = time.perf_counter()
            with psycopg.connect(server.url(), connect_timeout=5) as conn:
                conn.execute("SELECT 1").fetchone()
            firsts.append(time.perf_counter() - began)
            stops.append(server.stop())
        finally:
            server.remove()
    print(f"initdb           p50 {p50(inits)}")
    print(f"pg_ctl -w start  p50 {p50(starts)}")
    print(f"first connect    p50 {p50(firsts)}")
    print(f"pg_ctl -w stop   p50 {p50(stops)}")
    print(f"fresh server up and down (initdb+start+stop) p50 "
          f"{1000 * statistics.median([a + b + c for a, b, c in zip(inits, starts, stops)]):.0f} ms over {RUNS}")

    # A test session can pay initdb once and copy its data directory for every fresh server.
    template = pg.Server()
    template.initdb()
    clones, cstarts, cstops = [], [], []
    try:
        for _ in range(RUNS):
            server = pg.Server()
            try:
                clones.append(server.clone(template))
                cstarts.append(server.start())
                with psycopg.connect(server.url(), connect_timeout=5) as conn:
                    conn.execute("SELECT 1").fetchone()
                cstops.append(server.stop())
            finally:
                server.remove()
    finally:
        template.remove()
    print(f"copy of an initdb'd template p50 {p50(clones)}; start {p50(cstarts)}; stop {p50(cstops)}")

    with pg.Server() as server:
        with psycopg.connect(server.url(), autocommit=True) as conn:
            print("server:", conn.execute("SELECT version()").fetchone()[0])
            print("listen_addresses:", conn.execute("SHOW listen_addresses").fetchone()[0],
                  "| datctype:", conn.execute("SELECT datctype FROM pg_database WHERE datname = 'postgres'").fetchone()[0],
                  "| psycopg", psycopg.__version__, "libpq", psycopg.pq.version(), psycopg.pq.__impl__)
            available = {name: version for name, version in conn.execute(
                "SELECT name, default_version FROM pg_available_extensions")}
            print("available extensions:", ", ".join(f"{n} {v}" for n, v in sorted(available.items())))
            print("missing:", ", ".join(name for name in WANTED if name not in available))
            conn.execute("CREATE EXTENSION vector")
            print("CREATE EXTENSION vector ->", conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0])
            conn.execute("CREATE TABLE v (id int, e vector(3))")
            conn.execute("INSERT INTO v VALUES (1, '[1,0,0]'), (2, '[0,1,0]'), (3, '[0.9,0.1,0]')")
            conn.execute("CREATE INDEX ON v USING hnsw (e vector_cosine_ops)")
            near = conn.execute("SELECT id, round((e <=> '[1,0,0]')::numeric, 4) FROM v ORDER BY e <=> '[1,0,0]' LIMIT 2").fetchall()
            print("hnsw cosine nearest to [1,0,0]:", near)
            for name in ("unaccent", "pg_trgm"):
                try:
                    conn.execute(f"CREATE EXTENSION {name}")
                    print(f"CREATE EXTENSION {name}: ok")
                except psycopg.Error as error:
                    print(f"CREATE EXTENSION {name}: {type(error).__name__}: {str(error).strip()}")
            made, dropped = [], []
            for i in range(RUNS):
                began = time.perf_counter()
                conn.execute(f"CREATE DATABASE t{i} TEMPLATE template0")
                made.append(time.perf_counter() - began)
                began = time.perf_counter()
                conn.execute(f"DROP DATABASE t{i}")
                dropped.append(time.perf_counter() - began)
            print(f"CREATE DATABASE p50 {p50(made)}; DROP DATABASE p50 {p50(dropped)}")
            configs = [row[0] for row in conn.execute("SELECT cfgname FROM pg_ts_config ORDER BY 1")]
            print("text search configurations:", " ".join(configs))

    walls = []
    for _ in range(5):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        walls.append(time.perf_counter() - began)
    print(f"baseline: wall of `python -c pass` p50 {p50(walls)}")
    # What importing the driver costs a process (the hooks must never pay it).
    for module in ("psycopg", "apsw"):
        cumulative = []
        for _ in range(5):
            out = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"],
                                 capture_output=True, text=True).stderr.splitlines()
            last = [line for line in out if line.rstrip().endswith(f"| {module}")][-1]
            cumulative.append(int(last.split("|")[1]))
        walls = []
        for _ in range(5):
            began = time.perf_counter()
            subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
            walls.append(time.perf_counter() - began)
        print(f"import {module}: wall of `python -c 'import {module}'` p50 {p50(walls)}")
        print(f"import {module}: cumulative {statistics.median(cumulative) / 1000:.1f} ms p50 of 5 (-X importtime)")


if __name__ == "__main__":
    main()
