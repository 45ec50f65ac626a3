"""`memory-gate view` on a large memory: how long a page takes, through the real server.

    python bench/view.py [--facts 100000] [--repeat 30]

Builds a memory of synthetic facts (bench/_corpus.py; changed and confirmed at times spread over
a year, one write.log line each), starts the real `memory-gate view` on a free port and times
whole HTTP requests over a keep-alive connection: routing, the token check, the query and the
HTML. Pages are timed as they are seen again (the page cache warm, each text's credential check
remembered) and, for the list, page after page seen once. Target on a 2-core machine: every list and search page under 200 ms (p95). Beside each
figure, the library call alone (gate/view/reading.py, in this process) as the baseline, so
the cost of serving and rendering shows apart from the query's. The fact page streams the whole
write.log (gate/history.py), so it grows with the log; it is timed too, with no target.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import _corpus  # noqa: E402

from gate import audit, store  # noqa: E402
from gate.view import reading  # noqa: E402

TARGET_MS = 200.0


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def build(db: Path, count: int) -> list[tuple[str, str, str]]:
    conn = store.connect(db)
    rows = _corpus.load(conn, count)
    with store.writing(conn):
        # A year of changes, the newest fact changed last; confirmed up to 90 days after.
        conn.execute(
            "UPDATE facts SET created = strftime('%Y-%m-%dT%H:%M:%SZ', '2025-12-01', (id * 31536000 / ?) || ' seconds'),"
            " updated = strftime('%Y-%m-%dT%H:%M:%SZ', '2025-12-01', (id * 31536000 / ?) || ' seconds')",
            (count, count),
        )
        conn.execute("UPDATE facts SET confirmed = strftime('%Y-%m-%dT%H:%M:%SZ', updated, ((id % 90) || ' days'))")
    lines, write_id = [], None
    with store.writing(conn):
        for fact_id, topic, kind, text, date, created in conn.execute("SELECT id, topic, kind, text, date, created FROM facts"):
            if write_id is None or fact_id % 1000 == 1:
                write_id = uuid.uuid4().hex
                conn.execute(
                    "INSERT INTO writes (id, session, turn, seq, digest, changes, answer, at) VALUES (?, 'bench', 0, ?, '', 1000, '{}', ?)",
                    (write_id, fact_id, created),
                )
            lines.append({"time": created, "write": write_id, "op": "insert", "id": fact_id, "topic": topic, "kind": kind,
                          "after": {"topic": topic, "kind": kind, "text": text, "date": date},
                          "session": "bench", "turn": "bench", "words": None})
    audit.append(audit.log_path(db), lines)
    conn.close()
    return rows


def timed(call, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "memory.db"
        started = time.perf_counter()
        rows = build(db, args.facts)
        print(f"{args.facts} facts and {args.facts} write.log lines built in {time.perf_counter() - started:.1f} s")
        # How busy the machine is now: figures on a shared machine move with it.
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"python -c pass: {(time.perf_counter() - started) * 1000:.1f} ms; load average {load:.1f}")
        queries = _corpus.queries(rows, args.repeat, seed=5)
        topic = rows[len(rows) // 2][0].split()[0]
        middle = args.facts // reading.PER_PAGE // 2
        cases = [
            ("facts, pages 1-N, each seen once", "pages", {}, None),
            ("facts, first page again", "/", {}, lambda c: reading.facts_page(c, reading.Filters())),
            (f"facts, page {middle}", f"/?page={middle}", {}, lambda c: reading.facts_page(c, reading.Filters(), middle)),
            ("facts, one kind", "/?kind=trap", {}, lambda c: reading.facts_page(c, reading.Filters(kind="trap"))),
            (f"facts, topic word '{topic}'", f"/?topic={quote(topic)}", {}, lambda c: reading.facts_page(c, reading.Filters(topic=topic))),
            ("facts, not confirmed in 30 days", "/?stale=30", {}, lambda c: reading.facts_page(c, reading.Filters(stale=30))),
            ("search (1-4 words of a fact)", None, {}, None),
            ("fact page (streams write.log)", f"/facts/{args.facts // 2}", {}, lambda c: reading.story(c, audit.log_path(db), args.facts // 2)),
        ]
        viewer = subprocess.Popen(
            [sys.executable, "-m", "gate", "--db", str(db), "view", "--no-browser"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=folder,
        )
        try:
            url = viewer.stdout.readline().split()[-1]
            host, token = url.split("//")[1].split("/")[0], url.split("t=")[1]
            connection = None

            def get(path: str) -> None:
                connection.request("GET", path + ("&" if "?" in path else "?") + f"t={token}")
                answer = connection.getresponse()
                body = answer.read()
                if answer.status != 200:
                    raise SystemExit(f"{path}: {answer.status} {body[:200]!r}")

            conn = store.connect(db, create=False)
            print(f"\n{'page':<36} {'HTTP p50':>9} {'p95':>7}   {'library p50':>11} {'p95':>7}   target")
            failed = False
            for label, path, _, library in cases:
                # A fresh keep-alive connection per case: uvicorn drops one idle for 5 s, and the
                # library's timings run between the cases.
                if connection is not None:
                    connection.close()
                connection = http.client.HTTPConnection(host, timeout=60)
                if path == "pages":  # a new page each time: nothing on it was shown before
                    numbers = iter(range(2, 2 * args.repeat + 2))
                    numbers_lib = iter(range(2, 2 * args.repeat + 2))
                    web = timed(lambda: get(f"/?page={next(numbers)}"), args.repeat)
                    lib = timed(lambda: reading.facts_page(conn, reading.Filters(), next(numbers_lib)), args.repeat)
                elif path is None:  # search: a different query each time
                    paths = iter([f"/search?q={quote(q)}" for q in queries] * 2)
                    terms = iter(queries * 2)
                    get("/search?q=warm")
                    web = timed(lambda: get(next(paths)), args.repeat)
                    lib = timed(lambda: reading.find(conn, next(terms), None), args.repeat)
                else:
                    get(path)  # warm the page cache
                    # The fact page reads the whole log: a few repeats say what it costs.
                    repeat = 5 if label.startswith("fact page") else args.repeat
                    web = timed(lambda: get(path), repeat)
                    lib = timed(lambda: library(conn), repeat)
                goal = "" if label.startswith("fact page") else f"< {TARGET_MS:.0f} ms"
                met = "" if not goal else (" met" if percentile(web, 0.95) < TARGET_MS else " MISSED")
                failed |= met == " MISSED"
                print(
                    f"{label:<36} {statistics.median(web):>6.1f} ms {percentile(web, 0.95):>7.1f}"
                    f"   {statistics.median(lib):>8.1f} ms {percentile(lib, 0.95):>7.1f}   {goal}{met}"
                )
            conn.close()
            connection.close()
        finally:
            viewer.terminate()
            viewer.wait(10)
            viewer.stdout.close()
            viewer.stderr.close()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
