"""A team's bulk paths on PostgreSQL: `import` and `team push` of many facts, and what another
member's writes wait meanwhile.

    python bench/team_bulk.py [--sizes 10000 100000] [--no-push]

For each size, on a fresh PostgreSQL on loopback (tests/postgres_server.py, pgserver's binaries):

- import: a file of that many facts (bench/_corpus.py, as `memory-gate export` writes them)
  imported into a team's project through the library `memory-gate import` calls
  (gate.memory.transfer.import_into with the member's TeamStore), while another member writes
  one fact a transaction into the same project the whole time. Printed: the import's seconds,
  facts a second and seconds per 1,000 (equal across sizes when the path is linear), and the
  other member's writes during it: how many, p50, and the longest wait.
- push (unless --no-push): a local memory of that many facts, each with its line in write.log,
  copied into an empty project (gate.memory.teamcopy.push), while the other member writes into
  another project. Printed as above.

No target is met or missed here: the figures are for docs/team-memory.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import _corpus  # noqa: E402
import _team  # noqa: E402

from gate.engine import postgres, store  # noqa: E402
from gate.engine.teamfacts import TeamFacts, Who, project  # noqa: E402
from gate.memory import audit, changeset, teamcopy, transfer  # noqa: E402
from gate.memory.stores import LocalStore, TeamStore  # noqa: E402

STAMP = "2026-12-01T00:00:00Z"


def member(url: str, key: str, name: str, deadline: float = postgres.CALL_DEADLINE_S) -> TeamFacts:
    conn = postgres.connect(url, name, deadline)
    with conn.transaction():
        pid = project(conn, key, STAMP)
    return TeamFacts(conn, pid, Who(name, "bench"), deadline=deadline)


class Writer(threading.Thread):
    """Another member writing one fact a transaction into `key`, as an agent's writes do, until
    stopped; each write's milliseconds kept, and any refusal."""

    def __init__(self, url: str, key: str):
        super().__init__(daemon=True)
        self.facts = member(url, key, "bo@desk")
        self.times: list[float] = []
        self.refused: list[str] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        changes = changeset.ChangeSet(None, changeset.Author("bo", "turn", None), None, self.facts)
        i = 0
        while not self.stopping.is_set():
            started = time.perf_counter()
            try:
                with self.facts.transaction():
                    self.facts.existing([])
                    changes.insert({"topic": "meanwhile", "kind": "event", "text": f"bo's write {i}", "date": "2026-12-01"})
                    changes.flush()
            except postgres.Unreachable as error:
                self.refused.append(error.reason)
            self.times.append((time.perf_counter() - started) * 1000)
            i += 1

    def stop(self) -> None:
        self.stopping.set()
        self.join()
        self.facts.conn.close()

    def figures(self) -> str:
        if not self.times:
            return "no writes"
        return (f"{len(self.times)} writes, p50 {statistics.median(self.times):.1f} ms, longest "
                f"{max(self.times):.0f} ms, refused {len(self.refused)}")


def export_lines(rows) -> list[str]:
    return [json.dumps({"topic": topic, "kind": kind, "text": text, "date": "2026-01-01"}) + "\n"
            for topic, kind, text in rows]


def bench_import(url: str, size: int, rows) -> None:
    key = f"import-{uuid.uuid4().hex[:8]}"
    ana = member(url, key, "ana@laptop", postgres.COMMAND_DEADLINE_S)
    writer = Writer(url, key)
    with tempfile.TemporaryDirectory() as folder:
        ledger = store.connect(Path(folder) / "memory.db")
        writer.start()
        started = time.perf_counter()
        result = transfer.import_into(ledger, iter(export_lines(rows)), TeamStore(ana), command="memory-gate import",
                                      new_ids=True)
        took = time.perf_counter() - started
        writer.stop()
        ledger.close()
    ana.conn.close()
    assert result.inserted == size, result
    print(f"import {size:>7,} facts: {took:7.1f} s, {size / took:6,.0f} facts/s, {took / size * 1000:.2f} s per 1,000; "
          f"another member meanwhile: {writer.figures()}")


def bench_push(url: str, size: int, rows) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memory.db"
        local = store.connect(path)
        transfer.import_into(local, iter(export_lines(rows)), LocalStore(local, audit.log_path(path)), command="bench",
                             new_ids=True)
        ana = member(url, f"push-{uuid.uuid4().hex[:8]}", "ana@laptop", postgres.COMMAND_DEADLINE_S)
        writer = Writer(url, f"other-{uuid.uuid4().hex[:8]}")
        writer.start()
        started = time.perf_counter()
        copied = teamcopy.push(local, audit.log_path(path), ana)
        took = time.perf_counter() - started
        writer.stop()
        ana.conn.close()
        local.close()
    assert copied.facts == size, copied
    print(f"push   {size:>7,} facts: {took:7.1f} s, {size / took:6,.0f} facts/s, {took / size * 1000:.2f} s per 1,000; "
          f"a member writing to another project meanwhile: {writer.figures()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--no-push", action="store_true")
    args = parser.parse_args()
    team = _team.start("team bulk paths")
    if team is None:
        return
    server, _ = team
    try:
        for size in args.sizes:
            rows = _corpus.facts(size)
            bench_import(server.url(), size, rows)
            if not args.no_push:
                bench_push(server.url(), size, rows)
    finally:
        _team.stop(team)


if __name__ == "__main__":
    main()
