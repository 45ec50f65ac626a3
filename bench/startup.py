"""How soon `memory-gate serve` answers what Claude Code asks first, from the moment it is spawned.

    python bench/startup.py [--runs 30] [--load] [--command CMD ...]

Claude Code 2.1.332 starts the server and sends, as it does (recorded from a real session):
`server/discover` (a probe), waits for its answer, then `subscriptions/listen`, `server/discover`,
`prompts/list`, `resources/list` and `tools/list` together. `-p` sends its first model request
once the tools are listed or about 2 s have passed, so the figure that matters is spawn to the
answer of `tools/list`. A second column times the first `tools/call` (a search in an empty project)
sent with the listings, as a model that answers at once would: the front serves it (gate/serve/tools.py),
without waiting for the MCP SDK.
Targets on a 2-core machine, idle: p50 at most 0.35 s and p95 at most 0.6 s to the tool list.
`--load` keeps both CPUs busy with two spinning processes meanwhile. `python -c pass` is timed in
the same run as the machine's yardstick.
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from latency import percentile, python_start  # noqa: E402  the same yardstick as the other benches

PROTOCOL = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
    "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "title": "Claude Code", "version": "2.1.332"},
    "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": True}, "elicitation": {"form": {}, "url": {}}},
}


def request(request_id, method: str, **params) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"_meta": META, **params}}) + "\n").encode()


PROBE = request("server-discover-probe-1", "server/discover")
AFTER_PROBE = b"".join([
    request("listen:0", "subscriptions/listen", notifications={"toolsListChanged": True}),
    request(0, "server/discover"),
    request(1, "prompts/list"),
    request(2, "resources/list"),
    request(3, "tools/list"),
])
SEARCH = request(4, "tools/call", name="memory_search", arguments={"terms": "deploy"})


class Reader:
    """The server's answers, line by line, with a deadline."""

    def __init__(self, proc: subprocess.Popen):
        self.proc, self.buffer = proc, b""
        self.selector = selectors.DefaultSelector()
        self.selector.register(proc.stdout, selectors.EVENT_READ)

    def until(self, request_id, timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                message = json.loads(line)
                if message.get("id") == request_id:
                    return message
            if not self.selector.select(max(0.0, deadline - time.monotonic())):
                raise TimeoutError(f"no answer to {request_id!r} within {timeout} s")
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                raise EOFError(f"the server ended before answering {request_id!r}: {self.proc.stderr.read().decode()[-2000:]}")
            self.buffer += chunk


def one_start(argv: list[str], env: dict, cwd: str) -> tuple[float, float]:
    """Seconds from spawn to the tool list, and to the first search's answer."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd)
    try:
        reader = Reader(proc)
        proc.stdin.write(PROBE)
        proc.stdin.flush()
        reader.until("server-discover-probe-1")
        proc.stdin.write(AFTER_PROBE + SEARCH)
        proc.stdin.flush()
        listed = reader.until(3)
        listed_at = time.perf_counter() - started
        assert [tool["name"] for tool in listed["result"]["tools"]] == ["memory_search", "memory_write"], listed
        found = reader.until(4)
        assert not found["result"].get("isError"), found
        return listed_at, time.perf_counter() - started
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()


@contextmanager
def saturated(on: bool):
    """Both CPUs kept busy by two other processes, for the length of the block."""
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 if on else 0)
    ]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--load", action="store_true", help="keep both CPUs busy meanwhile")
    parser.add_argument("--command", nargs="+", help="the server command (default: this venv's memory-gate serve)")
    args = parser.parse_args(argv)

    command = args.command or [
        shutil.which("memory-gate", path=str(Path(sys.executable).parent)) or "memory-gate", "serve"
    ]
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder) / "project"
        project.mkdir()
        env = {**os.environ, "MEMORY_GATE_HOME": str(Path(folder) / "home"), "CLAUDE_PROJECT_DIR": str(project)}
        one_start(command, env, str(project))  # bytecode compiled, files in the page cache
        with saturated(args.load):
            yardstick = python_start()
            runs = [one_start(command, env, str(project)) for _ in range(args.runs)]
    listed = [run[0] for run in runs]
    searched = [run[1] for run in runs]
    print(f"server: {' '.join(command)}  ({args.runs} starts{', both CPUs busy' if args.load else ''})")
    print(f"python -c pass: {yardstick:.1f} ms")
    print(f"{'spawn to':<26} {'p50 s':>7} {'p95 s':>7} {'max s':>7}")
    for name, values in (("tools/list answered", listed), ("first search answered", searched)):
        print(f"{name:<26} {statistics.median(values):>7.3f} {percentile(values, 0.95):>7.3f} {max(values):>7.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
