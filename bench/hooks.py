"""Hook process wall time, beside `python -c pass` measured in the same run.

    python bench/hooks.py [--runs 40] [--against CHECKOUT]

Each hook is a process Claude Code starts on every turn, so its cost is the interpreter's start
plus imports plus a few SQLite statements. Each is timed through the command Claude Code really
runs: `/bin/sh -c` with the plugin's hooks.json command, the plugin's launcher
(mods/memory-gate/bin/memory-gate) finding this environment's installed `memory-gate` (bin/memory-gate,
as pip installs it) and starting it as `python -S`. Beside them, `python -c pass`, the same
command started with `site` (as the settings hooks run it), the console script pip would generate,
and the floor of any hook that keeps its ledger in SQLite itself: the interpreter, `import apsw`,
one write transaction in WAL mode, with and without `site`. Targets on a 2-core machine: every
hook at most 1.3x `python -c pass` and at most 30 ms p50; all hooks of a compliant turn
(UserPromptSubmit, two PreToolUse, Stop) at most 100 ms together. With the plugin the mod asks
`Hold` only of an answer that may owe memory: in a compliant turn the write's own answer
("nothing owed") lets it out, so its hook processes are the same four; a held turn adds one Hold
per hold. The database is a file in a temporary home with 1,000 facts, as a project's memory
would be, and a memory server's witness (gate.serve.sightings, here in this process) answers the
Stop hook's question; the Stop hook is timed again with no server answering, when it judges on the
ledger. The UserPromptSubmit hook is timed again with a prompt naming a token, which the credential
detector reads (most prompts hold no trigger of a shape they could match: gate.credentials.triggers).
Each process is timed right after a `python -c pass` of its own: "paired x" is the median
of those pairs' ratios, the figure least moved by other work on a shared machine. `--against` times
another checkout's plugin hooks in the same run (its mods/ and its .venv), e.g. the code before a
change.
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

from gate import config  # noqa: E402
from gate.engine import store  # noqa: E402
from gate.memory import witness  # noqa: E402
from gate.serve import sightings, tools  # noqa: E402

PREFIX = "mcp__plugin_memory-gate_memory__"
PLUGIN = ROOT / "mods" / "memory-gate"
# A prompt that reaches the credential detector (gate.credentials.triggers): it names a token.
WORDY = "UserPromptSubmit, naming a token"
FLOOR = (
    "import apsw, sys\n"
    "conn = apsw.Connection(sys.argv[1])\n"
    "conn.execute('PRAGMA journal_mode = WAL')\n"
    "conn.execute('BEGIN IMMEDIATE; CREATE TABLE IF NOT EXISTS t(a); INSERT INTO t VALUES (1); COMMIT')\n"
)


import compileall  # noqa: E402


def compile_package() -> None:
    """An installed package has its bytecode compiled (pip does it); a checkout may not, above
    all under PYTHONDONTWRITEBYTECODE, and compiling the hooks' modules on every run would be
    measured as hook time."""
    compileall.compile_dir(str(ROOT / "gate"), quiet=1)


def timed(argv: list[str], stdin: str, env: dict, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, input=stdin.encode(), env=env, capture_output=True, check=True)
        times.append((time.perf_counter() - started) * 1000)
    return times


def plugin_commands() -> dict[str, str]:
    """The plugin's hook commands by event, ${CLAUDE_PLUGIN_ROOT} left for the shell to expand."""
    declared = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    return {event: groups[0]["hooks"][0]["command"] for event, groups in declared.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--against", metavar="CHECKOUT",
                        help="also time the hooks of another checkout (its mods/ and its .venv), e.g. the code before a change")
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
                WORDY: {"prompt": "the deploy token expired again: rotate it and rerun the release pipeline"},
                "PreToolUse": {"tool_use_id": f"toolu_{run}", "tool_name": PREFIX + "memory_search", "tool_input": {}},
                "Stop": {"stop_hook_active": False},
                "Hold": {},
            }[event]
            return json.dumps({**base, "prompt_id": prompt_id, **extra})

        # Every turn the hooks see is a compliant one (searched and written), as most are. The Stop
        # hook asks the memory server what the turn did (gate.memory.witness): one answers here,
        # with the record a server keeps of these calls.
        server = sightings.Witness.listen(witness.folder(config.database_for(home, project)))
        for run in range(args.runs):
            subprocess.run([command, "hook", "UserPromptSubmit"], input=payload("UserPromptSubmit", run).encode(),
                           env=env, capture_output=True, check=True)
            caller = tools.Caller("bench")
            answer = tools.memory_search(conn, "deploy main", caller)
            wrote = tools.memory_write(conn, [], [r.fact.id for r in answer.results], caller, log=None)
            server.record.searched(answer.turn, [r.fact.id for r in answer.results])
            server.record.wrote(wrote.turn, wrote.answered)
        [address] = [Path(witness.folder(config.database_for(home, project))) / name
                     for name in os.listdir(witness.folder(config.database_for(home, project)))]

        # The plugin's launcher finds `memory-gate` on PATH, as in a checkout (scripts/install
        # records the same command beside it instead).
        env["PATH"] = str(Path(command).parent) + os.pathsep + env.get("PATH", "")
        env["CLAUDE_PLUGIN_ROOT"] = str(PLUGIN)
        commands = plugin_commands()
        commands["Hold"] = f'"{PLUGIN}/bin/memory-gate" hook Hold --tools {PREFIX}'  # the mod's question
        floor_db = str(Path(folder) / "floor.db")
        # What `memory-gate` was before bin/memory-gate: the wrapper pip generates for a
        # [project.scripts] entry point (its template, word for word), and Python's own shutdown.
        wrapper = Path(folder) / "console-script"
        wrapper.write_text(
            f"#!{sys.executable}\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom gate.cli.entry import main\n"
            "if __name__ == '__main__':\n"
            "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
            "    sys.exit(main())\n"
        )
        wrapper.chmod(0o755)
        events = ("UserPromptSubmit", "PreToolUse", "Stop", "Hold")
        lean_floor = f"import sys; sys.path += {sys.path!r}\n" + FLOOR
        rows: dict[str, tuple[list[str], str | None]] = {
            "floor: python, apsw, one commit": ([sys.executable, "-c", FLOOR, floor_db], None),
            "floor under -S (no site)": ([sys.executable, "-S", "-c", lean_floor, floor_db], None),
            "hook PreToolUse, pip's console script": ([str(wrapper), "hook", "PreToolUse"], "PreToolUse"),
            "hook PreToolUse, bin/memory-gate with site": ([command, "hook", "PreToolUse"], "PreToolUse"),
        }
        for event in events:
            rows[f"hook {event} (as Claude Code runs it)"] = (["/bin/sh", "-c", commands[event]], event)
        wordy = (["/bin/sh", "-c", commands["UserPromptSubmit"]], WORDY)
        rows["hook UserPromptSubmit naming a token"] = wordy
        # The Stop hook with no server to ask: it judges on the ledger, and says so.
        UNASKED = "hook Stop, no server answering (the ledger)"
        rows[UNASKED] = (["/bin/sh", "-c", commands["Stop"]], "Stop")
        if args.against:
            # The other checkout's plugin launcher and its own installed command, on the same database.
            other = Path(args.against).resolve()
            compileall.compile_dir(str(other / "gate"), quiet=1)
            other_env = {**env, "CLAUDE_PLUGIN_ROOT": str(other / "mods" / "memory-gate"),
                         "PATH": str(other / ".venv" / "bin") + os.pathsep + os.environ.get("PATH", "")}
            for event in (*events, WORDY):
                hook = "UserPromptSubmit" if event == WORDY else event
                other_command = commands[hook].replace("${CLAUDE_PLUGIN_ROOT}", str(other / "mods" / "memory-gate"))
                name = "UserPromptSubmit naming a token" if event == WORDY else event
                rows[f"hook {name}, {other.name}"] = (["/bin/sh", "-c", other_command], event, other_env)
        baseline: list[float] = []
        times: dict[str, list[float]] = {name: [] for name in rows}
        ratios: dict[str, list[float]] = {name: [] for name in rows}
        for run in range(args.runs):  # interleaved, so that the machine's moods fall on all alike
            for name, (argv, event, *own_env) in rows.items():
                # Each process right after a `python -c pass` of its own: the ratio of the pair
                # is the figure least moved by the other work on the machine.
                [started] = timed([sys.executable, "-c", "pass"], "", env, 1)
                if name == UNASKED:
                    address.rename(address.parent.parent / "away")  # out of the folder the hook reads
                [took] = timed(argv, payload(event, run) if event else "", own_env[0] if own_env else env, 1)
                if name == UNASKED:
                    (address.parent.parent / "away").rename(address)
                baseline.append(started)
                times[name].append(took)
                ratios[name].append(took / started)
        conn.close()
        server.close()

    pass_p50 = statistics.median(baseline)
    print(f"{'process':<48} {'p50 ms':>7} {'p95 ms':>7} {'x python':>9} {'paired x':>9}")
    print(f"{'python -c pass':<48} {pass_p50:>7.1f} {sorted(baseline)[int(0.95 * len(baseline))]:>7.1f} {1:>9.2f} {1:>9.2f}")
    p50s = {}
    for name, took in times.items():
        p50s[name] = statistics.median(took)
        print(f"{name:<48} {p50s[name]:>7.1f} {sorted(took)[int(0.95 * len(took))]:>7.1f} "
              f"{p50s[name] / pass_p50:>9.2f} {statistics.median(ratios[name]):>9.2f}")
    p50 = {event: p50s[f"hook {event} (as Claude Code runs it)"] for event in events}
    settings = p50["UserPromptSubmit"] + 2 * p50["PreToolUse"] + p50["Stop"]
    print(f"a compliant turn (UserPromptSubmit, 2 x PreToolUse, Stop; the mod asks no Hold): {settings:.1f} ms")
    print(f"a turn whose answer the mod had to check once more (+ Hold): {settings + p50['Hold']:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
