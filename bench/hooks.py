"""Hook process wall time, beside `python -c pass` measured in the same run.

    python bench/hooks.py [--runs 40]

Each hook is a process Claude Code starts on every turn, so its cost is the interpreter's start
plus imports plus a few SQLite statements. Targets on a 2-core machine: every hook at most 2.5x
`python -c pass` and at most 30 ms p50; all hooks of a compliant turn (UserPromptSubmit, two
PreToolUse, Stop) at most 100 ms together. With the plugin the mod asks `Hold` only of an answer
that may owe memory: in a compliant turn the write's own answer ("nothing owed") lets it out, so
its hook processes are the same four; a held turn adds one Hold per hold. The database is a file in a
temporary home with 1,000 facts, as a project's memory would be.
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
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import _corpus  # noqa: E402

from gate import config, store, tools  # noqa: E402

PREFIX = "mcp__plugin_memory-gate_memory__"


def compile_package() -> None:
    """An installed package has its bytecode compiled (pip does it); a checkout may not, above
    all under PYTHONDONTWRITEBYTECODE, and compiling the hooks' modules on every run would be
    measured as hook time."""
    import compileall

    compileall.compile_dir(str(ROOT / "gate"), quiet=1)


def timed(argv: list[str], stdin: str, env: dict, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, input=stdin.encode(), env=env, capture_output=True, check=True)
        times.append((time.perf_counter() - started) * 1000)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args(argv)

    compile_package()
    command = shutil.which("memory-gate", path=str(Path(sys.executable).parent)) or "memory-gate"
    with tempfile.TemporaryDirectory() as folder:
        home, project = Path(folder) / "home", Path(folder) / "project"
        project.mkdir()
        env = {**os.environ, "MEMORY_GATE_HOME": str(home), "CLAUDE_PROJECT_DIR": str(project)}
        conn = store.connect(config.database_for(home, project))
        _corpus.load(conn, 1000)
        base = {"session_id": "bench", "cwd": str(project)}

        def payload(event: str, run: int) -> str:
            prompt_id = f"p{run}"
            extra = {
                "UserPromptSubmit": {"prompt": "why does the deploy fail on main?"},
                "PreToolUse": {"tool_use_id": f"toolu_{run}", "tool_name": PREFIX + "memory_search", "tool_input": {}},
                "Stop": {"stop_hook_active": False},
                "Hold": {},
            }[event]
            return json.dumps({**base, "prompt_id": prompt_id, **extra})

        # Every turn the hooks see is a compliant one (searched and written), as most are.
        for run in range(args.runs):
            subprocess.run([command, "hook", "UserPromptSubmit"], input=payload("UserPromptSubmit", run).encode(),
                           env=env, capture_output=True, check=True)
            caller = tools.Caller("bench")
            answer = tools.memory_search(conn, "deploy main", caller)
            tools.memory_write(conn, [], [r.fact.id for r in answer.results], caller, log=None)

        baseline = timed([sys.executable, "-c", "pass"], "", env, args.runs)
        rows = []
        for event in ("UserPromptSubmit", "PreToolUse", "Stop", "Hold"):
            times = []
            for run in range(args.runs):
                started = time.perf_counter()
                subprocess.run([command, "hook", event, "--tools", PREFIX], input=payload(event, run).encode(),
                               env=env, capture_output=True, check=True)
                times.append((time.perf_counter() - started) * 1000)
            rows.append((event, times))
        conn.close()

    pass_p50 = statistics.median(baseline)
    print(f"{'process':<22} {'p50 ms':>7} {'p95 ms':>7} {'x python':>9}")
    print(f"{'python -c pass':<22} {pass_p50:>7.1f} {sorted(baseline)[int(0.95 * len(baseline))]:>7.1f} {1.0:>9.2f}")
    p50s = {}
    for event, times in rows:
        p50s[event] = statistics.median(times)
        print(f"{'hook ' + event:<22} {p50s[event]:>7.1f} {sorted(times)[int(0.95 * len(times))]:>7.1f} {p50s[event] / pass_p50:>9.2f}")
    settings = p50s["UserPromptSubmit"] + 2 * p50s["PreToolUse"] + p50s["Stop"]
    print(f"a compliant turn (UserPromptSubmit, 2 x PreToolUse, Stop; the mod asks no Hold): {settings:.1f} ms")
    print(f"a turn whose answer the mod had to check once more (+ Hold): {settings + p50s['Hold']:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
