"""Search latency, in-process, at 1k, 10k and 100k facts: by words, and by words and meaning.

    python bench/latency.py [--sizes 1000 10000 100000] [--queries 300] [--dimension 1024]
    python bench/latency.py --against 2f49e5a --sizes 10000 100000 [--rounds 5]

Queries are what an agent asks about things in memory: 1-4 words of one fact. Two figures per
size: `by_words` (the ranking alone: tiers, bm25, coverage check) and `memory_search` (what the
tool does: ranking, loading the facts, recording the reads and what the session was shown, in
one write transaction on a file database). Targets on a 2-core machine: memory_search p50 at
most 2 ms at 10k and 10 ms at 100k. A last column times the worst case, queries made only of
the most frequent words (no target: bm25 is computed for every matching fact). `python -c pass`
is timed in the same run as a yardstick for how fast this machine is right now.

The second table gives every fact a synthetic vector (bench/_vectors.py: 1024 dimensions, spread
like a real model's; `--dimension 384` for the installed model's) and times search by meaning
with the query vector already computed (the model's or the endpoint's cost, not memory's): the
vector side alone (`nearest`, no cut-off), the ranking (`hybrid`), and the whole `memory_search`
tool. Twenty-four more synthetic vectors stand for the model's REFERENCE vectors, whose mean
centers the bits past vectors.EXACT_LIMIT. Beside them, two exact answers over the same vectors:
`exact knn`, vec0's brute force over a float32 column (k = 30), and `exact scan`, the index's own
exact path (the cosine to every vector, as it searches up to vectors.EXACT_LIMIT); the ratio of
`nearest` to `exact knn`, and the vector side's recall@30 of the exact answer. Targets on a
2-core machine: hybrid memory_search p50 at most 5 ms at 10k facts and 25 ms at 100k, with
recall@30 at least 0.95. The recall of real vectors is another matter (vectors.POOL says it).
A third table times the same from the matrix a server keeps of the vectors (gate.search.matrix:
exact, every answer checked against `exact scan`), each query searched by both ways in turns,
the first alternating, with the ratio of the hybrid p50s; the load average is printed before and
after.

`--against REF` times words only beside another git ref, in the same run: the ref's gate/ and
schema.sql (git archive, no worktree made) and this tree each in a process of their own, over the
same facts, the same queries and the same interpreter, taking turns a slice of the queries at a
time (which tree goes first alternates), `--rounds` times over the whole query set, so that both
meet the same load on a shared machine. It prints each tree's p50 and p95 of `by_words` and of
`memory_search`, wall time and the process's CPU time (which another process's load disturbs
less), the ratio of the p50s and the median of the per-query ratios (the same query in both trees),
and the machine's load before and after. The search by meaning table is left out.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import _corpus  # noqa: E402
import _vectors  # noqa: E402

from gate.engine import store  # noqa: E402
from gate.search import embeddings, fulltext as search, lookup, matrix, ranking, vectors  # noqa: E402
from gate.serve import tools  # noqa: E402


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def python_start() -> float:
    runs = []
    for _ in range(10):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        runs.append(time.perf_counter() - started)
    return statistics.median(runs) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--dimension", type=int, default=1024, help="vector dimension; 0 skips search by meaning")
    parser.add_argument(
        "--max-distance",
        type=float,
        default=None,
        help="a fixed cut-off for the hybrid columns (default: the adaptive judgement)",
    )
    parser.add_argument(
        "--against", metavar="REF", help="time words only beside this git ref in the same run (e.g. 2f49e5a)"
    )
    parser.add_argument("--rounds", type=int, default=5, help="with --against: times over the whole query set")
    args = parser.parse_args(argv)
    if args.against:
        return compare(args)

    load = os.getloadavg()
    print(
        f"python -c pass: {python_start():.1f} ms (this machine, now); load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print(
        f"{'facts':>7}  {'build s':>7}  {'by_words p50':>12} {'p95':>7}  {'memory_search p50':>17} {'p95':>7}"
        f"  {'hits/query':>10}  {'common words p50':>16} {'p95':>7}"
    )
    common = _corpus.common_queries(max(20, args.queries // 5))
    meaning_rows = []
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as folder:
            conn = store.connect(Path(folder) / "memory.db")
            started = time.perf_counter()
            rows = _corpus.load(conn, size)
            built = time.perf_counter() - started
            queries = _corpus.queries(rows, args.queries)
            for typed in queries[:20]:  # warm the page cache
                search.by_words(conn, typed)
            ranking, full, hits = [], [], 0
            caller = tools.Caller("bench")
            for typed in queries:
                started = time.perf_counter()
                found = search.by_words(conn, typed)
                ranking.append((time.perf_counter() - started) * 1000)
                hits += min(len(found), search.RESULTS)
                started = time.perf_counter()
                tools.memory_search(conn, typed, caller)
                full.append((time.perf_counter() - started) * 1000)
            worst = []
            for typed in common:
                started = time.perf_counter()
                tools.memory_search(conn, typed, caller)
                worst.append((time.perf_counter() - started) * 1000)
            if args.dimension:
                meaning_rows.append(meaning(conn, rows, size, queries, args))
            conn.close()
        print(
            f"{size:>7}  {built:>7.1f}  {statistics.median(ranking):>9.2f} ms {percentile(ranking, 0.95):>7.2f}"
            f"  {statistics.median(full):>14.2f} ms {percentile(full, 0.95):>7.2f}  {hits / len(queries):>10.1f}"
            f"  {statistics.median(worst):>13.2f} ms {percentile(worst, 0.95):>7.2f}"
        )
    if meaning_rows:
        print(
            f"\nby meaning, {args.dimension} dimensions, query vector ready (ms, p50 / p95):\n"
            f"{'facts':>7}  {'build s':>7}  {'nearest':>13}  {'exact knn':>13}  {'exact scan':>13}  {'ratio':>5}"
            f"  {'recall@30':>9}  {'hybrid':>13}  {'memory_search':>13}"
        )
        for row in meaning_rows:
            print(
                f"{row['size']:>7}  {row['build']:>7.1f}  {fmt(row['nearest'])}  {fmt(row['exact'])}  {fmt(row['scan'])}"
                f"  {statistics.median(row['nearest']) / statistics.median(row['exact']):>5.2f}  {row['recall']:>9.3f}"
                f"  {fmt(row['hybrid'])}  {fmt(row['tool'])}"
            )
        print(
            "\nthe same, from the matrix a server keeps (gate.search.matrix; numpy "
            f"{numpy_version()}), in turns with vec0 above:\n"
            f"{'facts':>7}  {'nearest':>13}  {'ratio':>5}  {'recall@30':>9}  {'hybrid':>13}  {'memory_search':>13}"
            f"  {'hybrid / vec0 hybrid':>20}"
        )
        for row in meaning_rows:
            print(
                f"{row['size']:>7}  {fmt(row['matrix nearest'])}"
                f"  {statistics.median(row['matrix nearest']) / statistics.median(row['exact']):>5.2f}"
                f"  {row['matrix recall']:>9.3f}  {fmt(row['matrix hybrid'])}  {fmt(row['matrix tool'])}"
                f"  {statistics.median(row['matrix hybrid']) / statistics.median(row['hybrid']):>20.2f}"
            )
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (after)")
    return 0


def numpy_version() -> str:
    import numpy

    return numpy.__version__


# One tree's side of `--against`: builds its memory, then times the slices of queries it is sent.
# The modules are looked for where gate/ keeps them now and where it kept them before.
WORKER = r"""
import importlib, json, sys, tempfile, time
from pathlib import Path
tree, bench, size, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sys.path[:0] = [tree, bench]

def module(*names):
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise SystemExit(f"no module {names[-1]} in {tree}")

search = module("gate.search.fulltext", "gate.search")
store = module("gate.engine.store", "gate.store")
tools = module("gate.serve.tools", "gate.tools")
import _corpus

assert Path(search.__file__).resolve().is_relative_to(Path(tree).resolve()), search.__file__
folder = tempfile.mkdtemp()
conn = store.connect(Path(folder) / "memory.db")
started = time.perf_counter()
rows = _corpus.load(conn, size)
built = time.perf_counter() - started
queries = _corpus.queries(rows, count)
for typed in queries[:20]:  # warm the page cache
    search.by_words(conn, typed)
caller = tools.Caller("bench")
print(json.dumps({"built": built}), flush=True)
for line in sys.stdin:
    start, stop = map(int, line.split())
    times = {"by_words": [], "by_words cpu": [], "memory_search": [], "memory_search cpu": []}
    for typed in queries[start:stop]:
        wall, cpu = time.perf_counter(), time.process_time()
        search.by_words(conn, typed)
        times["by_words"].append((time.perf_counter() - wall) * 1000)
        times["by_words cpu"].append((time.process_time() - cpu) * 1000)
        wall, cpu = time.perf_counter(), time.process_time()
        tools.memory_search(conn, typed, caller)
        times["memory_search"].append((time.perf_counter() - wall) * 1000)
        times["memory_search cpu"].append((time.process_time() - cpu) * 1000)
    print(json.dumps(times), flush=True)
"""
SLICE = 10


def checkout(ref: str, into: Path) -> Path:
    """`ref`'s gate/ and schema.sql, by git archive (no worktree made)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "gate", "schema.sql"], capture_output=True)
    if archive.returncode:
        raise SystemExit(f"git archive {ref} failed: {archive.stderr.decode().strip()}")
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def compare(args) -> int:
    """This tree beside `args.against`, words only, taking turns slice by slice (see the docstring)."""
    load = os.getloadavg()
    print(
        f"python -c pass: {python_start():.1f} ms (this machine, now); load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    count = args.queries * args.rounds
    with tempfile.TemporaryDirectory() as folder:
        trees = {"this tree": ROOT, args.against: checkout(args.against, Path(folder) / "against")}
        print(
            f"{count} queries ({args.rounds} x {args.queries}), each searched once by each tree, in slices of {SLICE}"
            f" that the trees take in turns, the first alternating; ms"
        )
        print(
            f"{'facts':>7}  {'figure':<18} {'this p50':>8} {'p95':>6}  {args.against[:10] + ' p50':>14} {'p95':>6}"
            f"  {'ratio':>5} {'paired':>6}"
        )
        for size in args.sizes:
            workers = {}
            for name, tree in trees.items():  # built one after the other: the build is not timed
                workers[name] = subprocess.Popen(
                    [sys.executable, "-c", WORKER, str(tree), str(ROOT / "bench"), str(size), str(count)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
                ready = workers[name].stdout.readline()
                if not ready:
                    raise SystemExit(f"the worker of {name} stopped before its memory was built")
            times: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
            for index, start in enumerate(range(0, count, SLICE)):
                order = list(workers.items())
                for name, worker in order if index % 2 == 0 else order[::-1]:
                    worker.stdin.write(f"{start} {min(start + SLICE, count)}\n")
                    worker.stdin.flush()
                    for figure, values in json.loads(worker.stdout.readline()).items():
                        times[name].setdefault(figure, []).extend(values)
            for worker in workers.values():
                worker.stdin.close()
                worker.wait()
            mine, theirs = times.values()
            for figure in mine:
                ours, before = statistics.median(mine[figure]), statistics.median(theirs[figure])
                paired = statistics.median(a / b for a, b in zip(mine[figure], theirs[figure]))
                print(
                    f"{size:>7}  {figure:<18} {ours:>8.2f} {percentile(mine[figure], 0.95):>6.2f}  {before:>14.2f}"
                    f" {percentile(theirs[figure], 0.95):>6.2f}  {ours / before:>5.2f} {paired:>6.2f}"
                )
    load = os.getloadavg()
    print(
        f"load after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; ratio: this p50 / {args.against} p50; paired: the"
        f" median over the queries of this tree's time / {args.against}'s for the same query"
    )
    return 0


def fmt(times: list[float]) -> str:
    return f"{statistics.median(times):>6.2f}/{percentile(times, 0.95):<6.2f}"


class Ready(embeddings.Endpoint):
    """An endpoint whose answers are already computed: times memory, not the model."""

    def __init__(self, answers: dict[str, tuple[float, ...]], max_distance: float | None):
        super().__init__("http://127.0.0.1:9/v1/embeddings", "bench", max_distance=max_distance)
        self.answers = answers

    def embed(self, texts, *, role, timeout):
        return embeddings.Vectors("bench", [self.answers[text] for text in texts])


def meaning(conn, rows, size: int, queries: list[str], args) -> dict:
    """Give every fact a vector the way writes do (vectors.sync), then time the meaning side."""
    space = _vectors.Space(args.dimension)
    store.load_vectors(conn)
    started = time.perf_counter()
    made = space.vectors(size)
    ids = [row[0] for row in conn.execute("SELECT id FROM facts ORDER BY id")]
    texts = {row[0]: vectors.fact_text(row[1], row[2]) for row in conn.execute("SELECT id, topic, text FROM facts")}
    for start in range(0, size, 2000):
        batch = ids[start : start + 2000]
        chosen = made[start : start + 2000]
        prepared = vectors.Prepared(
            embeddings.Vectors("bench", chosen), {texts[i]: v for i, v in zip(batch, chosen)}, []
        )
        with store.writing(conn):
            vectors.sync(conn, batch, prepared)
    with store.writing(conn):  # centers the bits past vectors.EXACT_LIMIT
        vectors.store_reference(conn, embeddings.Vectors("bench", space.vectors(len(vectors.REFERENCE))))
    built = time.perf_counter() - started
    # Exact brute force over the same vectors, in the float32 vec0 table the prefilter replaces.
    conn.execute(
        f"CREATE VIRTUAL TABLE bench_exact USING vec0(embedding float[{args.dimension}] distance_metric=cosine, chunk_size=1024)"
    )
    with store.writing(conn):
        conn.executemany(
            "INSERT INTO bench_exact (rowid, embedding) VALUES (?, ?)",
            ((i, vectors.pack(v)) for i, v in zip(ids, made)),
        )
    probes = space.rewordings(made, min(len(queries), 100))
    answers = dict(zip(queries, probes))
    held = matrix.Matrix()
    for vector in probes[:10]:  # warm the page cache, and load the matrix (not timed)
        vectors.nearest(conn, embeddings.Vectors("bench", [vector]), max_distance=2.0, limit=30)
        held.neighbourhood(conn, embeddings.Vectors("bench", [vector]), limit=30)
    figures: dict = {"size": size, "build": built, "nearest": [], "exact": [], "scan": [], "hybrid": [], "tool": []}
    figures.update({"matrix nearest": [], "matrix hybrid": [], "matrix tool": [], "matrix recall": 0.0})
    hits = 0
    for vector in probes:
        packed = vectors.pack(vector)
        started = time.perf_counter()
        truth = {
            row[0]
            for row in conn.execute("SELECT rowid FROM bench_exact WHERE embedding MATCH ? AND k = 30", (packed,))
        }
        figures["exact"].append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        scanned = sorted((d, i) for i, d in vectors.distances(conn, packed))[:30]
        figures["scan"].append((time.perf_counter() - started) * 1000)
        assert len({i for _, i in scanned} & truth) >= 29  # the same exact answer, but for float ties
        started = time.perf_counter()
        near = vectors.nearest(conn, embeddings.Vectors("bench", [vector]), max_distance=2.0, limit=30)
        figures["nearest"].append((time.perf_counter() - started) * 1000)
        hits += len(truth & set(near))
        started = time.perf_counter()
        found = held.neighbourhood(conn, embeddings.Vectors("bench", [vector]), limit=30)
        figures["matrix nearest"].append((time.perf_counter() - started) * 1000)
        assert found is not None and [fact for fact, _ in found.nearest] == [i for _, i in scanned]  # exact
        figures["matrix recall"] += len(truth & {fact for fact, _ in found.nearest}) / (30 * len(probes))
    figures["recall"] = hits / (30 * len(probes))
    endpoint = Ready(answers, args.max_distance)
    caller = tools.Caller("bench-meaning")
    ways = {"": vectors.neighbourhood, "matrix ": held.neighbourhood}
    for index, (typed, vector) in enumerate(answers.items()):
        query = embeddings.Vectors("bench", [vector])
        # vec0 and the matrix take turns going first: both meet the same load.
        for way, neighbourhood in list(ways.items())[:: 1 if index % 2 else -1]:
            started = time.perf_counter()
            ranking.rank(
                search.Index(conn),
                [typed],
                [query],
                lambda vector, near=neighbourhood: near(conn, vector, limit=ranking.POOL),
                max_distance=args.max_distance,
            )
            figures[f"{way}hybrid"].append((time.perf_counter() - started) * 1000)
            local = lookup.LocalSearch(conn, held if way else None)
            started = time.perf_counter()
            tools.memory_search(conn, typed, caller, endpoint=endpoint, search=local)
            figures[f"{way}tool"].append((time.perf_counter() - started) * 1000)
    return figures


if __name__ == "__main__":
    raise SystemExit(main())
