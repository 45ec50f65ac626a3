"""Team memory on PostgreSQL beside the local SQLite file, in one run: search by words, and writes.

    python bench/team.py [--sizes 10000 100000] [--queries 200] [--members 8] [--writes 50]
                         [--dimension 1024] [--no-meaning]

Search: the same facts (bench/_corpus.py) in a SQLite memory and in one project of a team
database, the same queries (1-4 words of one fact), timed in turns so that both meet the same
load: `by_words` over the local FTS5 index beside `by_words_in` over gate/search/team.py's
TeamIndex (the same tiers and judgement; PostgreSQL's GIN index for the match, FTS5's bm25
computed in Python), and beside them the member's mirror of the team's words (gate/search/mirror.py:
caught up with the team's record in one round trip, then FTS5 in this process), p50 and p95, with the
ratio of the p50s; memory_search as the server calls it (gate/serve/tools.py: the ledger's
records, the team's transaction and loading the facts included) on the local memory and on the
team's, with the mirror and without; then the mirror again with another member's write before each
search, so that each catch-up applies a change. PostgreSQL runs on this machine
over loopback TCP (tests/postgres_server.py, pgserver's binaries), so its figures include a
round trip per statement and no network beyond it.

Meaning (unless `--no-meaning`): the same facts given the same vectors on both engines, as
writes store them (vectors.sync / teamvectors.sync: past vectors.EXACT_LIMIT both are centered on
the mean of 24 vectors standing for the model's REFERENCE ones, and keep a bit a dimension), `--dimension` wide, drawn in a narrow cone as e5's are and around 200
subjects, no model needed; then the neighbourhood a search by meaning reads (vectors.neighbourhood over sqlite-vec
beside teamvectors.neighbourhood over pgvector), p50 and p95, how many answers' nearest facts
differ (none should but for near-ties in cosine: both engines rank the same pool), and
each engine's recall of the exact nearest (numpy over the same vectors).

Writes: `--members` threads, each a member with a connection of its own, each inserting
`--writes` facts one transaction at a time through a change set (gate/engine/teamfacts.py: the
fact, its words and its record in `changes`, with its line), beside as many threads doing the same to one
local SQLite file (each its own connection, store.writing). Printed: writes a second in all, and
each write's p50 and p95.

No target is met or missed here; the figures say where the team engine stands.
"""

from __future__ import annotations

import argparse
import math
import random
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
import numpy  # noqa: E402  (the recall of search by meaning; a test dependency)
import _team  # noqa: E402

from gate.engine import postgres, store  # noqa: E402
from gate.engine.teamfacts import TeamFacts, Who, project  # noqa: E402
from gate.memory import changeset, ledger  # noqa: E402
from gate.search import fulltext as search, lookup, mirror, teamvectors, vectors  # noqa: E402
from gate.search.embeddings import Vectors  # noqa: E402
from gate.search.mirror import Mirror  # noqa: E402
from gate.search.team import TeamIndex  # noqa: E402
from gate.serve import tools  # noqa: E402


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def search_round(size: int, queries_count: int, url: str, dimension: int) -> None:
    rows = _corpus.facts(size)
    queries = _corpus.queries(rows, queries_count)
    with tempfile.TemporaryDirectory() as folder:
        local = store.connect(Path(folder) / "memory.db")
        started = time.perf_counter()
        _corpus.load(local, size)
        built_local = time.perf_counter() - started
        team = postgres.connect(url)
        started = time.perf_counter()
        pid = _team.load(
            team,
            [(number, topic, kind, text, "2026-01-01") for number, (topic, kind, text) in enumerate(rows, start=1)],
        )
        built_team = time.perf_counter() - started
        index = TeamIndex(team, pid)
        # The member's mirror of the team's words (gate/search/mirror.py): built once, then caught
        # up with the team's record in one round trip before each search, searched by FTS5 here.
        facts = TeamFacts(team, pid, Who("bench", "bench"))
        words_mirror = Mirror(mirror.path_for(str(Path(folder) / "member.db")))
        started = time.perf_counter()
        with team.transaction():
            team.execute("SET LOCAL statement_timeout = 0")
            words_mirror.build(facts)
        built_mirror = time.perf_counter() - started

        def mirrored(typed: str) -> list[int]:  # as memory_search does: the catch-up in a statement of its own
            return search.by_words_in(words_mirror.index(facts), typed)

        for typed in queries[:10]:  # warm the caches
            search.by_words(local, typed)
            search.by_words_in(index, typed)
            mirrored(typed)
        mine, theirs, copied, differ, differ_copied = [], [], [], 0, 0
        for number, typed in enumerate(queries):
            found = {}
            for which in ((0, 1, 2), (1, 2, 0), (2, 0, 1))[number % 3]:
                started = time.perf_counter()
                if which == 0:
                    found[0] = search.by_words(local, typed)
                    mine.append((time.perf_counter() - started) * 1000)
                elif which == 1:
                    found[1] = search.by_words_in(index, typed)
                    team.rollback()
                    theirs.append((time.perf_counter() - started) * 1000)
                else:
                    found[2] = mirrored(typed)
                    copied.append((time.perf_counter() - started) * 1000)
            differ += found[0] != found[1]
            differ_copied += found[0] != found[2]
        line(size, built_local, built_team, mine, theirs, differ, "words (gate/search/team.py)")
        line(size, built_local, built_mirror, mine, copied, differ_copied, "words (mirror: catch-up + FTS5)")
        through_server(local, team, pid, Path(folder), queries, words_mirror, size, built_local, built_mirror)
        # Another member writes a fact before each search: the catch-up then applies one change.
        other = postgres.connect(url)
        writer = TeamFacts(other, pid, Who("bench-other", "bench-other"))
        mine, copied = [], []
        for number, typed in enumerate(queries):
            with other.transaction():
                writer.insert(
                    {
                        "topic": "bench",
                        "kind": "event",
                        "text": f"another member's fact {number}",
                        "date": "2026-12-01",
                    },
                    stamp="2026-12-01T00:00:00Z",
                )
            for which in ((0, 2), (2, 0))[number % 2]:
                started = time.perf_counter()
                if which == 0:
                    search.by_words(local, typed)
                    mine.append((time.perf_counter() - started) * 1000)
                else:
                    mirrored(typed)
                    copied.append((time.perf_counter() - started) * 1000)
        other.close()
        # Not compared: the team holds facts the local memory does not.
        line(size, built_local, built_mirror, mine, copied, None, "words (mirror, a change before each)")
        words_mirror.close()
        if dimension:
            line(size, *meaning_round(local, team, pid, rows, len(queries), dimension), "meaning")
        local.close()
        team.close()


def through_server(
    local,
    team,
    pid: int,
    folder: Path,
    queries: list[str],
    words_mirror,
    size: int,
    built_local: float,
    built_mirror: float,
) -> None:
    """memory_search as the server runs it (gate/serve/tools.py), words only, each search in a
    turn of its own whose owner's words are the query: on the local memory, and on the team's
    with the member's mirror and without it (gate/search/team.py), taken in turns. The team's
    includes all it asks of PostgreSQL (the mirror's catch-up, the transaction, loading the facts)
    and the member's ledger; the local one its ledger in the same file."""
    member = store.connect(folder / "member.db")
    facts = TeamFacts(team, pid, Who("bench", "bench-session"))
    caller = tools.Caller("bench-session")
    times: dict[int, list[float]] = {0: [], 1: [], 2: []}
    differ = {1: 0, 2: 0}
    for number, typed in enumerate(queries):
        found = {}
        for which in ((0, 1, 2), (1, 2, 0), (2, 0, 1))[number % 3]:
            conn = local if which == 0 else member
            ledger.open_turn(conn, "bench-session", f"p{number}-{which}", typed)
            started = time.perf_counter()
            if which == 0:
                answer = tools.memory_search(local, typed, caller)
            else:
                answer = tools.memory_search(
                    member, typed, caller, search=lookup.TeamSearch(facts, words_mirror if which == 1 else None)
                )
            times[which].append((time.perf_counter() - started) * 1000)
            found[which] = [result.fact.id for result in answer.results]
        differ[1] += found[0] != found[1]
        differ[2] += found[0] != found[2]
    member.close()
    line(size, built_local, built_mirror, times[0], times[1], differ[1], "memory_search (mirror)")
    line(size, built_local, 0.0, times[0], times[2], differ[2], "memory_search (gate/search/team.py)")


def line(
    size: int,
    built_local: float,
    built_team: float,
    mine: list[float],
    theirs: list[float],
    differ: int | None,
    what: str,
) -> None:
    p50_local, p50_team = statistics.median(mine), statistics.median(theirs)
    compared = f"{differ:>4}/{len(mine):<4}" if differ is not None else f"{'-':>4} {'':<4}"
    print(
        f"{size:>7}  {built_local:>6.1f} / {built_team:<6.1f}  {p50_local:>8.2f} {percentile(mine, 0.95):>7.2f}"
        f"  {p50_team:>8.2f} {percentile(theirs, 0.95):>7.2f}  {p50_team / p50_local:>6.1f}  {compared}"
        f"  {what}",
        flush=True,
    )


def meaning_round(local, team, pid: int, rows, count: int, dimension: int):
    """Vectors for every fact on both engines, stored through each engine's sync (the first
    EXACT_LIMIT + 1 alone, after the REFERENCE vectors, so that each centers as a growing memory
    does), then `count` neighbourhoods asked of each in turns: (build s local, build s team,
    local ms, team ms, differ)."""
    rng = random.Random(17)
    cone = [rng.gauss(0, 1) for _ in range(dimension)]
    # Subjects: texts about one lie near each other, as a model's vectors of them do.
    subjects = [[rng.gauss(0, 1) for _ in range(dimension)] for _ in range(200)]

    def unit() -> tuple[float, ...]:
        subject = rng.choice(subjects)
        raw = [3 * c + 1.5 * s + rng.gauss(0, 0.7) for c, s in zip(cone, subject)]
        norm = math.sqrt(sum(x * x for x in raw))
        return tuple(x / norm for x in raw)

    ids = list(range(1, len(rows) + 1))
    texts = [vectors.fact_text(topic, text) for topic, _, text in rows]
    answer = Vectors("bench-cone", [unit() for _ in ids])
    prepared = vectors.Prepared(answer, dict(zip(texts, answer.rows)), [])
    facts = TeamFacts(team, pid, Who("bench", "bench"))
    first = vectors.EXACT_LIMIT + 1
    store.load_vectors(local)
    known = Vectors("bench-cone", [unit() for _ in vectors.REFERENCE])  # the model's REFERENCE vectors
    started = time.perf_counter()
    with store.writing(local):
        vectors.sync(local, ids[:1], prepared)
        vectors.store_reference(local, known)
    for start, end in [(0, first)] + [(at, at + 500) for at in range(first, len(ids), 500)]:
        with store.writing(local):  # in batches, as a change set syncs (one SQL variable a fact)
            vectors.sync(local, ids[start:end], prepared)
    built_local = time.perf_counter() - started
    started = time.perf_counter()
    with team.transaction():
        teamvectors.sync(facts, ids[:1], prepared)
        teamvectors.store_reference(facts, known)
    for start, end in [(0, first)] + [(at, at + 2000) for at in range(first, len(ids), 2000)]:
        with team.transaction():
            team.execute("SET LOCAL statement_timeout = 0")
            teamvectors.sync(facts, ids[start:end], prepared)
    team.execute("ANALYZE facts_vec")
    team.commit()
    built_team = time.perf_counter() - started
    matrix = numpy.array(answer.rows, dtype=numpy.float32)
    mine, theirs, differ, recall = [], [], 0, [0, 0]
    for number in range(count):
        query = Vectors("bench-cone", [unit()])
        found = {}
        for which in (0, 1) if number % 2 == 0 else (1, 0):
            started = time.perf_counter()
            if which == 0:
                found[0] = vectors.neighbourhood(local, query, limit=search.CANDIDATES)
                mine.append((time.perf_counter() - started) * 1000)
            else:
                with team.transaction():
                    found[1] = teamvectors.neighbourhood(facts, query, limit=search.CANDIDATES)
                theirs.append((time.perf_counter() - started) * 1000)
        differ += [fact for fact, _ in found[0].nearest] != [fact for fact, _ in found[1].nearest]
        # The exact nearest (ids are rows + 1): how many of them each engine's prefilter kept.
        exact = set(
            (
                numpy.argsort(-(matrix @ numpy.array(query.rows[0], dtype=numpy.float32)))[: search.CANDIDATES] + 1
            ).tolist()
        )
        for which in (0, 1):
            recall[which] += len(exact & {fact for fact, _ in found[which].nearest})
    total = count * search.CANDIDATES
    print(
        f"{'':>7}  recall@{search.CANDIDATES} of exact search by meaning: sqlite {recall[0] / total:.3f},"
        f" postgresql {recall[1] / total:.3f}"
    )
    return built_local, built_team, mine, theirs, differ


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
                    changes.insert(
                        {"topic": "bench", "kind": "event", "text": f"member {k} write {i}", "date": "2026-12-01"}
                    )
                times.append((time.perf_counter() - started) * 1000)
            conn.close()

        local_wall, local_times = run(local_member)

    setup = postgres.connect(url)
    with setup.transaction():
        pid = project(setup, f"writes-{uuid.uuid4().hex[:8]}", "2026-12-01T00:00:00Z")
    setup.close()

    def team_member(k: int, times: list[float], gate) -> None:
        conn = postgres.connect(url)
        changes = changeset.ChangeSet(
            None,
            changeset.Author(f"m{k}", "turn", None),
            None,
            TeamFacts(conn, pid, Who(f"m{k}@bench", f"session-{k}")),
        )
        gate.wait()
        for i in range(each):
            started = time.perf_counter()
            with conn.transaction():
                changes.insert(
                    {"topic": "bench", "kind": "event", "text": f"member {k} write {i}", "date": "2026-12-01"}
                )
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
    parser.add_argument("--dimension", type=int, default=1024, help="the vectors' width (bge-m3's: 1024)")
    parser.add_argument("--no-meaning", action="store_true", help="words and writes only")
    args = parser.parse_args(argv)
    started = _team.start("bench/team.py")
    if started is None:
        return 2
    server, admin = started
    admin.close()
    try:
        url = server.url()
        print(f"PostgreSQL 16 on 127.0.0.1 (pgserver), {args.queries} queries a size, taken in turns")
        print(
            f"{'facts':>7}  {'build s sqlite / pg':>19}  {'sqlite p50':>10} {'p95':>7}  {'pg p50':>8} {'p95':>7}"
            f"  {'ratio':>6}  {'differ':>9}"
        )
        for size in args.sizes:
            search_round(size, args.queries, url, 0 if args.no_meaning else args.dimension)
        writes(args.members, args.writes, url)
    finally:
        server.stop()
        server.remove()
    return 0


if __name__ == "__main__":
    sys.exit(main())
