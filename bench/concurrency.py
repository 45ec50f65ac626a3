"""Eight sessions of one project writing and searching one database at once.

    python bench/concurrency.py [--sessions 8] [--writes 200]

Each session is a process (bench/_load.py) running turns of: open the turn, search, write one
fact keeping what the search returned. Two more sessions run the real hook processes of their
turns meanwhile (UserPromptSubmit, PreToolUse, Stop), as Claude Code would. Prints throughput and latency under that load, and checks
what must hold: no write lost, no error, the word index consistent with the facts, every change
in write.log exactly once.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gate.engine import health, store  # noqa: E402
from gate.memory import audit  # noqa: E402


def run(db: Path, sessions: int, writes: int, hook_sessions: int = 2) -> tuple[list[dict], float]:
    started = time.perf_counter()
    load = str(ROOT / "bench" / "_load.py")
    workers = [
        subprocess.Popen([sys.executable, load, "worker", str(db), f"s{i}", str(writes)], stdout=subprocess.PIPE, text=True)
        for i in range(sessions)
    ] + [
        subprocess.Popen([sys.executable, load, "hooks", str(db), f"h{i}", str(max(1, writes // 10))],
                         stdout=subprocess.PIPE, text=True)
        for i in range(hook_sessions)
    ]
    results = [json.loads(worker.communicate()[0]) for worker in workers]
    return results, time.perf_counter() - started


def verify(db: Path, results: list[dict]) -> list[str]:
    """What went wrong, if anything."""
    problems = [f"{r['session']}: {error}" for r in results for error in r["errors"]]
    conn = store.connect(db)
    written = sorted(fact for r in results for fact in r["facts"])
    stored = [row[0] for row in conn.execute("SELECT id FROM facts ORDER BY id")]
    if written != stored:
        problems.append(f"{len(written)} facts written, {len(stored)} stored")
    problems += [f"integrity: {p}" for p in health.check_integrity(conn)]
    check = audit.check(conn, audit.log_path(db))
    if not check.ok or check.uncommitted or check.torn:
        problems.append(f"write.log: {check.advice()}")
    inserts = [e["id"] for e in audit.entries(audit.log_path(db)) if e["op"] == "insert"]
    if sorted(inserts) != written:
        problems.append("write.log does not hold every insert exactly once")
    conn.close()
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--writes", type=int, default=200)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "memory.db"
        store.connect(db).close()
        results, elapsed = run(db, args.sessions, args.writes)
        problems = verify(db, results)
    turns = sorted(latency for r in results if r["session"].startswith("s") for latency in r["latencies"])
    hook_runs = sorted(latency for r in results if r["session"].startswith("h") for latency in r["latencies"])
    print(f"{args.sessions} sessions x {args.writes} turns (search + write): {len(turns)} turns in {elapsed:.1f} s")
    print(f"throughput {len(turns) / elapsed:.0f} turns/s; turn latency p50 {statistics.median(turns):.1f} ms, "
          f"p95 {turns[int(0.95 * len(turns))]:.1f} ms, max {turns[-1]:.1f} ms")
    if hook_runs:
        print(f"meanwhile {len(hook_runs)} hook processes: p50 {statistics.median(hook_runs):.1f} ms, "
              f"p95 {hook_runs[int(0.95 * len(hook_runs))]:.1f} ms")
    print("checks: " + ("all hold (no write lost, no error, index consistent, log exact)" if not problems else "FAILED"))
    for problem in problems[:10]:
        print(f"  {problem}")
    if len(problems) > 10:
        print(f"  ... and {len(problems) - 10} more")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
