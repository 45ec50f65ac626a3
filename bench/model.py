"""What meaning out of the box costs: the model installed with memory-gate, in the real server.

    python bench/model.py [--facts 300] [--searches 60] [--starts 10] [--load]

The same real `memory-gate serve`, over stdio as Claude Code speaks to it, twice in one run: with
nothing configured (search by words and meaning, the query embedded by multilingual-e5-small in
the server's own process, gate/search/local.py) and with MEMORY_GATE_MEANING=off (words only).
Each writes the same facts, then answers the same searches, each with terms not searched
before (a query vector is never served from a cache). Printed:

- a search's time, p50 and p95, in each mode, and the difference of the p50s: what meaning adds
  to a search, the query's vector and its nearest facts. Target: at most 20 ms (p50).
- the server's resident memory (VmRSS, Linux) after the searches, in each mode. Target: with
  its model, at most 300 MB.
- spawn to the answer of `tools/list`, p50 over `--starts` starts, in each mode: the model loads
  in a thread, and must not keep the tools out of Claude Code's first request (bench/startup.py
  has the target: p50 at most 0.35 s idle).

`--load` keeps both CPUs busy with two spinning processes meanwhile. The modes take turns (one
search each, alternately) so that both meet the same load; `python -c pass` is timed in the same
run as the machine's yardstick.
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

SUBJECTS = ["deploy", "staging", "database", "billing", "invoices", "frontend", "react", "tests", "cluster",
            "backups", "logging", "payments", "search", "cache", "queue", "auth", "tokens", "emails", "mobile", "fonts"]
VERBS = ["runs on", "moved to", "is kept in", "depends on", "was replaced by", "waits for", "is checked by"]


def facts(count: int) -> list[dict]:
    out = []
    for i in range(count):
        a, b = SUBJECTS[i % len(SUBJECTS)], SUBJECTS[(i * 7 + 3) % len(SUBJECTS)]
        out.append({"op": "insert", "topic": a, "kind": "state",
                    "text": f"The {a} service {VERBS[i % len(VERBS)]} the {b} node number {i}."})
    return out


class Server:
    """One `memory-gate serve` spoken to over stdio."""

    def __init__(self, command: list[str], env: dict, cwd: str):
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env, cwd=cwd)
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
    args = parser.parse_args(argv)

    command = [shutil.which("memory-gate", path=str(Path(sys.executable).parent)) or "memory-gate", "serve"]
    modes = {"words and meaning": {}, "words only": {"MEMORY_GATE_MEANING": "off"}}
    with tempfile.TemporaryDirectory() as folder:
        servers, envs, projects = {}, {}, {}
        for mode, extra in modes.items():
            project = Path(folder) / mode.replace(" ", "-")
            project.mkdir()
            env = {key: value for key, value in os.environ.items() if not key.startswith("MEMORY_GATE_")}
            envs[mode] = {**env, **extra, "MEMORY_GATE_HOME": str(Path(folder) / "home"), "CLAUDE_PROJECT_DIR": str(project)}
            projects[mode] = str(project)
            servers[mode] = Server(command, envs[mode], str(project))
            servers[mode].start()
            written = facts(args.facts)
            for start in range(0, len(written), 20):
                servers[mode].call("memory_write", {"ops": written[start:start + 20], "kept": []})
            servers[mode].call("memory_search", {"terms": "warm up"})
        times: dict[str, list[float]] = {mode: [] for mode in modes}
        with saturated(args.load):
            yardstick = python_start()
            for i in range(args.searches):
                terms = f"{SUBJECTS[i % len(SUBJECTS)]} {VERBS[i % len(VERBS)].split()[0]} node {i} question"
                for mode in (modes if i % 2 == 0 else reversed(list(modes))):
                    took, _ = servers[mode].call("memory_search", {"terms": terms})
                    times[mode].append(took)
            rss = {mode: servers[mode].rss_mb() for mode in modes}
            for server in servers.values():
                server.stop()
            starts = {mode: [time_to_tools(command, envs[mode], projects[mode]) for _ in range(args.starts)]
                      for mode in modes}

    load = "both CPUs saturated" if args.load else "idle"
    print(f"memory-gate serve over stdio, {args.facts} facts, {args.searches} searches a mode, {load}; "
          f"python -c pass {yardstick:.0f} ms")
    print(f"{'mode':<20}{'search p50':>12}{'search p95':>12}{'RSS':>10}{'to tools/list p50':>20}")
    for mode in modes:
        ms = sorted(t * 1000 for t in times[mode])
        shown_rss = f"{rss[mode]:.0f} MB" if rss[mode] is not None else "n/a"
        print(f"{mode:<20}{statistics.median(ms):>10.1f}ms{percentile(ms, 0.95):>10.1f}ms{shown_rss:>10}"
              f"{statistics.median(starts[mode]) * 1000:>18.0f}ms")
    added = statistics.median(t * 1000 for t in times["words and meaning"]) - statistics.median(
        t * 1000 for t in times["words only"])
    print(f"meaning adds {added:.1f} ms to a search's p50 (target: at most 20 ms); "
          f"server with its model {rss['words and meaning'] or 0:.0f} MB (target: at most 300 MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
