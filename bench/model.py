"""What meaning out of the box costs: the model installed with memory-gate, in the real server.

    python bench/model.py [--facts 300] [--searches 60] [--starts 10] [--load] [--against REF]

The real `memory-gate serve` of this tree, over stdio as Claude Code speaks to it, in two modes
in one run: with nothing configured (search by words and meaning, the query embedded by
multilingual-e5-small in the server's own process, gate/search/local.py) and with
MEMORY_GATE_MEANING=off (words only). One server writes the facts (the model embeds them), and
every server then opens a copy of that memory. Each search is asked with terms not searched
before, then asked again (the server remembers a query's vector by its text, so the second
search is the first without the model's work). Printed:

- a search's time, p50 and p95, in each mode, with new terms and asked again; the difference of
  the p50s with new terms: what meaning adds to a search. Target: at most 25 ms in all, at 10k
  facts (a search by words at most 3 ms in process: bench/latency.py).
- the query's vector in the server, p50: what a search with new terms costs over the same
  search again, less what asking again saves by words alone. Target: at most 20 ms.
- the server's resident memory (VmRSS, Linux) after the searches, in each mode, and that of the
  server that wrote the facts, after writing. Target: with its model, at most 300 MB.
- spawn to the answer of `tools/list`, p50 over `--starts` starts, in each mode: the model loads
  in a thread, and must not keep the tools out of Claude Code's first request (bench/startup.py
  has the target: p50 at most 0.35 s idle).

`--against REF` adds a third server, words and meaning as another git ref has them (its gate/
and schema.sql by git archive, bench/latency.py `checkout`), over the same memory and the same
searches, and prints the ratio of this tree's p50 to it and the median of the per-search ratios.
`--load` keeps both CPUs busy with two spinning processes meanwhile. The servers take turns (one
search each, the first one rotating) so that all meet the same load; `python -c pass` is timed
in the same run as the machine's yardstick.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from latency import percentile, python_start  # noqa: E402  the same yardstick as the other benches
from startup import AFTER_PROBE, PROBE, Reader, request, saturated  # noqa: E402

SUBJECTS = [
    "deploy",
    "staging",
    "database",
    "billing",
    "invoices",
    "frontend",
    "react",
    "tests",
    "cluster",
    "backups",
    "logging",
    "payments",
    "search",
    "cache",
    "queue",
    "auth",
    "tokens",
    "emails",
    "mobile",
    "fonts",
]
VERBS = ["runs on", "moved to", "is kept in", "depends on", "was replaced by", "waits for", "is checked by"]


def facts(count: int) -> list[dict]:
    out = []
    for i in range(count):
        a, b = SUBJECTS[i % len(SUBJECTS)], SUBJECTS[(i * 7 + 3) % len(SUBJECTS)]
        out.append(
            {
                "op": "insert",
                "topic": a,
                "kind": "state",
                "text": f"The {a} service {VERBS[i % len(VERBS)]} the {b} node number {i}.",
            }
        )
    return out


class Server:
    """One `memory-gate serve` spoken to over stdio."""

    def __init__(self, command: list[str], env: dict, cwd: str):
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd
        )
        self.reader, self.next = Reader(self.proc), 100

    def send(self, payload: bytes) -> None:
        self.proc.stdin.write(payload)
        self.proc.stdin.flush()

    def start(self) -> None:
        self.send(PROBE)
        self.reader.until("server-discover-probe-1")
        self.send(AFTER_PROBE)
        self.reader.until(3)

    def call(self, tool: str, arguments: dict) -> tuple[float, dict]:
        self.next += 1
        started = time.perf_counter()
        self.send(request(self.next, "tools/call", name=tool, arguments=arguments))
        answer = self.reader.until(self.next, timeout=120)
        took = time.perf_counter() - started
        if answer.get("error") or answer["result"].get("isError"):
            raise RuntimeError(f"{tool} failed: {json.dumps(answer)[:500]}")
        return took, answer["result"]

    def rss_mb(self) -> float | None:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return None

    def stop(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()
        self.proc.stderr.close()


def time_to_tools(command: list[str], env: dict, cwd: str) -> float:
    started = time.perf_counter()
    server = Server(command, env, cwd)
    try:
        server.start()
        return time.perf_counter() - started
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--facts", type=int, default=300)
    parser.add_argument("--searches", type=int, default=60)
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--load", action="store_true", help="keep both CPUs busy meanwhile")
    parser.add_argument("--against", metavar="REF", help="also words and meaning as another git ref has them")
    args = parser.parse_args(argv)

    command = [shutil.which("memory-gate", path=str(Path(sys.executable).parent)) or "memory-gate", "serve"]
    meaning, words = "words and meaning", "words only"
    # Each mode: its settings and the tree whose gate/ it runs (this one, or REF's checkout).
    modes: dict[str, tuple[dict, Path]] = {meaning: ({}, ROOT), words: ({"MEMORY_GATE_MEANING": "off"}, ROOT)}
    with tempfile.TemporaryDirectory() as folder:
        if args.against:
            from latency import checkout

            modes[f"{meaning} at {args.against}"] = ({}, checkout(args.against, Path(folder) / "against"))
        envs, projects = {}, {}
        for mode, (extra, tree) in modes.items():
            project = Path(folder) / mode.replace(" ", "-")
            project.mkdir()
            env = {key: value for key, value in os.environ.items() if not key.startswith("MEMORY_GATE_")}
            envs[mode] = {
                **env,
                **extra,
                "PYTHONPATH": str(tree),
                "MEMORY_GATE_HOME": str(Path(folder) / "home"),
                "CLAUDE_PROJECT_DIR": str(project),
                "MEMORY_GATE_DB": str(project / "memory.db"),
            }
            projects[mode] = str(project)
        # One server writes (and embeds) the facts; every mode opens a copy of that memory.
        writer = Server(command, envs[meaning], projects[meaning])
        writer.start()
        written = facts(args.facts)
        for start in range(0, len(written), 20):
            writer.call("memory_write", {"ops": written[start : start + 20], "kept": []})
        written_rss = writer.rss_mb()
        writer.stop()
        for mode in modes:
            if mode != meaning:
                for part in Path(projects[meaning]).glob("memory.db*"):
                    shutil.copy(part, Path(projects[mode]) / part.name)
        servers = {}
        for mode in modes:
            servers[mode] = Server(command, envs[mode], projects[mode])
            servers[mode].start()
            servers[mode].call("memory_search", {"terms": "warm up"})
        new: dict[str, list[float]] = {mode: [] for mode in modes}
        again: dict[str, list[float]] = {mode: [] for mode in modes}
        with saturated(args.load):
            yardstick = python_start()
            turns = list(modes)
            for i in range(args.searches):
                terms = f"{SUBJECTS[i % len(SUBJECTS)]} {VERBS[i % len(VERBS)].split()[0]} node {i} question"
                order = turns[i % len(turns) :] + turns[: i % len(turns)]
                for times in (new, again):
                    for mode in order:
                        took, _ = servers[mode].call("memory_search", {"terms": terms})
                        times[mode].append(took * 1000)
            rss = {mode: servers[mode].rss_mb() for mode in modes}
            for server in servers.values():
                server.stop()
            starts = {
                mode: [time_to_tools(command, envs[mode], projects[mode]) for _ in range(args.starts)] for mode in modes
            }

    load = "both CPUs saturated" if args.load else "idle"
    print(
        f"memory-gate serve over stdio, {args.facts} facts, {args.searches} searches a mode, {load}; "
        f"python -c pass {yardstick:.0f} ms"
    )
    print(f"{'mode':<32}{'search p50':>12}{'p95':>10}{'again p50':>12}{'RSS':>10}{'to tools/list p50':>20}")
    p50 = statistics.median
    for mode in modes:
        shown_rss = f"{rss[mode]:.0f} MB" if rss[mode] is not None else "n/a"
        print(
            f"{mode:<32}{p50(new[mode]):>10.1f}ms{percentile(new[mode], 0.95):>8.1f}ms{p50(again[mode]):>10.1f}ms"
            f"{shown_rss:>10}{p50(starts[mode]) * 1000:>18.0f}ms"
        )
    added = p50(new[meaning]) - p50(new[words])
    vector = p50([a - b for a, b in zip(new[meaning], again[meaning])]) - p50(
        [a - b for a, b in zip(new[words], again[words])]
    )
    print(
        f"meaning adds {added:.1f} ms to a search's p50 (search with meaning: target at most 25 ms); "
        f"the query's vector {vector:.1f} ms in the server (target: at most 20 ms); "
        f"server with its model {rss[meaning] or 0:.0f} MB, {written_rss or 0:.0f} MB in the one that wrote "
        "the facts (target: at most 300 MB)"
    )
    if args.against:
        other = f"{meaning} at {args.against}"
        ratios = [a / b for a, b in zip(new[meaning], new[other])]
        print(
            f"this tree / {args.against}, words and meaning, new terms: p50 ratio {p50(new[meaning]) / p50(new[other]):.2f}, "
            f"median per-search ratio {p50(ratios):.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
