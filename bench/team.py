"""Team memory on PostgreSQL beside the local SQLite file, in one run: search by words, and writes.

    python bench/team.py [--sizes 10000 100000] [--queries 200] [--members 8] [--writes 50]

Search: the same facts (bench/_corpus.py) in a SQLite memory and in one project of a team
database, the same queries (1-4 words of one fact), timed in turns so that both meet the same
load: `by_words` over the local FTS5 index beside `by_words_in` over gate/search/team.py's
TeamIndex (the same tiers and judgement; PostgreSQL's GIN index for the match, FTS5's bm25
computed in Python), p50 and p95, with the ratio of the p50s. PostgreSQL runs on this machine
over loopback TCP (tests/postgres_server.py, pgserver's binaries), so its figures include a
round trip per statement and no network beyond it.

Writes: `--members` threads, each a member with a connection of its own, each inserting
`--writes` facts one transaction at a time through a change set (gate/engine/teamfacts.py: the
fact, its words and its record in `changes`, with its line), beside as many threads doing the same to one
local SQLite file (each its own connection, store.writing). Printed: writes a second in all, and
each write's p50 and p95.

No target is met or missed here; the figures say where the team engine stands (issue 17).
"""

from __future__ import annotations

import argparse
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
from gate.memory import changeset  # noqa: E402
from gate.search import search  # noqa: E402
from gate.search.team import TeamIndex  # noqa: E402


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def search_round(size: int, queries_count: int, url: str) -> None:
    rows = _corpus.facts(size)
    queries = _corpus.queries(rows, queries_count)
    with tempfile.TemporaryDirectory() as folder:
        local = store.connect(Path(folder) / "memory.db")
        started = time.perf_counter()
        _corpus.load(local, size)
        built_local = time.perf_counter() - started
        team = postgres.connect(url)
        started = time.perf_counter()
        pid = _team.load(team, [(number, topic, kind, text, "2026-01-01") for number, (topic, kind, text) in enumerate(rows, start=1)])
        built_team = time.perf_counter() - started
        index = TeamIndex(team, pid)
        for typed in queries[:10]:  # warm both caches
            search.by_words(local, typed)
            search.by_words_in(index, typed)
        mine, theirs, differ = [], [], 0
        for number, typed in enumerate(queries):
            order = (0, 1) if number % 2 == 0 else (1, 0)
            found = {}
            for which in order:
                started = time.perf_counter()
                if which == 0:
                    found[0] = search.by_words(local, typed)
                    mine.append((time.perf_counter() - started) * 1000)
                else:
                    found[1] = search.by_words_in(index, typed)
                    team.rollback()
                    theirs.append((time.perf_counter() - started) * 1000)
            differ += found[0] != found[1]
        local.close()
        team.close()
    p50_local, p50_team = statistics.median(mine), statistics.median(theirs)
    print(
        f"{size:>7}  {built_local:>6.1f} / {built_team:<6.1f}  {p50_local:>8.2f} {percentile(mine, 0.95):>7.2f}"
        f"  {p50_team:>8.2f} {percentile(theirs, 0.95):>7.2f}  {p50_team / p50_local:>6.1f}  {differ:>4}/{len(queries)}"
    )


def writes(members: int, each: int, url: str) -> None:
    def run(target) -> tuple[float, list[float]]:
        times: list[list[float]] = [[] for _ in range(members)]
        failures: list[BaseException] = []
        gate = threading.Barrier(members + 1)

        def member(k: int) -> None:
            try:
                target(k, times[k], gate)
            except BaseException as error:  # noqa: BLE001 - reported below
                failures.append(error)
                gate.abort()

        threads = [threading.Thread(target=member, args=(k,)) for k in range(members)]
        for thread in threads:
            thread.start()
        gate.wait()
        started = time.perf_counter()
        for thread in threads:
            thread.join()
        if failures:
            raise failures[0]
        return time.perf_counter() - started, [t for each_times in times for t in each_times]

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memory.db"
        store.connect(path).close()

        def local_member(k: int, times: list[float], gate) -> None:
            conn = store.connect(path)
            gate.wait()
            for i in range(each):
                started = time.perf_counter()
                with store.writing(conn):
                    turn = changeset.cli_turn(conn, f"bench {k}")
                    changes = changeset.ChangeSet(conn, changeset.author(turn), None)
                    changes.insert({"topic": "bench", "kind": "event", "text": f"member {k} write {i}", "date": "2026-12-01"})
                times.append((time.perf_counter() - started) * 1000)
            conn.close()

        local_wall, local_times = run(local_member)

    setup = postgres.connect(url)
    with setup.transaction():
        pid = project(setup, f"writes-{uuid.uuid4().hex[:8]}", "2026-12-01T00:00:00Z")
    setup.close()

    def team_member(k: int, times: list[float], gate) -> None:
        conn = postgres.connect(url)
        changes = changeset.ChangeSet(None, changeset.Author(f"m{k}", "turn", None), None,
                                      TeamFacts(conn, pid, Who(f"m{k}@bench", f"session-{k}")))
        gate.wait()
        for i in range(each):
            started = time.perf_counter()
            with conn.transaction():
                changes.insert({"topic": "bench", "kind": "event", "text": f"member {k} write {i}", "date": "2026-12-01"})
                changes.flush()  # the change's line in the team's record, as finish() writes it
            times.append((time.perf_counter() - started) * 1000)
        conn.close()

    team_wall, team_times = run(team_member)
    total = members * each
    print(f"\nwrites: {members} members x {each} inserts, one transaction each")
    print(f"{'engine':<12} {'writes/s':>9} {'p50 ms':>8} {'p95 ms':>8}")
    for name, wall, times in (("sqlite", local_wall, local_times), ("postgresql", team_wall, team_times)):
        print(f"{name:<12} {total / wall:>9.0f} {statistics.median(times):>8.2f} {percentile(times, 0.95):>8.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--members", type=int, default=8)
    parser.add_argument("--writes", type=int, default=50, help="inserts per member")
    args = parser.parse_args(argv)
    started = _team.start("bench/team.py")
    if started is None:
        return 2
    server, admin = started
    admin.close()
    try:
        url = server.url()
        print(f"PostgreSQL 16 on 127.0.0.1 (pgserver), {args.queries} queries a size, taken in turns")
        print(f"{'facts':>7}  {'build s sqlite / pg':>19}  {'sqlite p50':>10} {'p95':>7}  {'pg p50':>8} {'p95':>7}"
              f"  {'ratio':>6}  {'differ':>9}")
        for size in args.sizes:
            search_round(size, args.queries, url)
        writes(args.members, args.writes, url)
    finally:
        server.stop()
        server.remove()
    return 0


if __name__ == "__main__":
    sys.exit(main())
