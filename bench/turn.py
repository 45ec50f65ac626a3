"""One compliant turn in real Claude Code: with the plugin, with the settings hooks, and with no
memory-gate at all, in one run, beside the floors that show where the time goes.

    python bench/turn.py [--runs 10] [--modes plugin modfloor settings server floor steps bare]
                         [--load] [--against CHECKOUT]

Each run is a fresh `claude -p` (tests/claude_harness.py) against the scripted Messages API
(tests/fake_anthropic.py), in a fresh project, timed from spawn to the `result` event (what the
owner waits for) and to the process's exit. With memory-gate the model searches, writes (keeping
what the search returned) and answers; with none (`bare`) it answers at once: the same prompt and
the same answer, without memory. The modes:
- `plugin`: memory-gate's plugin (its MCP server, its hooks, its mod), as an owner runs it;
- `modfloor`: the same plugin with a mod that does nothing but let the memory tools run (what
  having a mod at all costs a `claude -p`: Claude Code starts the mods' worker);
- `settings`: `memory-gate install`'s settings hooks and server, no mod;
- `hookfloor`: the settings hooks, each replaced by `cat > /dev/null` (what Claude Code spends on
  running a hook process at all), and the server;
- `server`: the server alone, no hook;
- `floor`: in place of the server, bench/_floor_server.py, which lists the same two tools and
  answers each call at once with a canned result (what Claude Code spends on any stdio server
  and two tool calls);
- `floorcat`, `floormcp`: that server, with the turn's four hook runs doing nothing, as processes
  (`cat > /dev/null`) or as `mcp_tool` hooks answered by the server (what a hook run costs in
  Claude Code, whatever runs it);
- `steps`: no server, the same three model requests, with two read-only built-in tool calls;
- `bare`: no memory, one model request.
The modes take turns run by run, so that the machine's moods fall on all alike. Claude Code's own
wait for MCP servers is left at its default (about 2 s in `-p`), as an owner has it; each run also
records whether the memory tools were in the first model request. Target: the plugin at most 1.5x
bare (medians). `--load` keeps both CPUs busy with two spinning processes meanwhile. `python -c
pass` is timed in the same run as the yardstick. `--against CHECKOUT` adds a mode `against`: the
plugin of another checkout (its mods/ and the memory-gate of its .venv), e.g. the code before a
change, in the same rotation.
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
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from claude_harness import CLAUDE, SKIP_REASON, Sandbox, parse_events  # noqa: E402
from fake_anthropic import last_tool_result_text, reply, tool_use  # noqa: E402
from startup import python_start, saturated  # noqa: E402

PLUGIN = ROOT / "mods" / "memory-gate"
PLUGIN_TOOLS = "mcp__plugin_memory-gate_memory__"
SETTINGS_TOOLS = "mcp__memory-gate__"
BIN = str(Path(sys.executable).parent)
PROMPT = "Remember that deploys go through staging."
ANSWER = "Done: noted how deploys work."
MODES = ("plugin", "modfloor", "settings", "hookfloor", "server", "floormcp", "floorcat", "floor", "steps", "bare")
AGAINST: Path | None = None  # --against: another checkout, for the mode `against`


def settings_install(prefix: str = SETTINGS_TOOLS) -> dict:
    """What `memory-gate install` gives Claude Code: hooks/hooks.json's hooks and the allow rules."""
    declared = json.loads((ROOT / "hooks" / "hooks.json").read_text())["hooks"]
    return {"hooks": declared, "permissions": {"allow": [f"{prefix}memory_search", f"{prefix}memory_write"]}}


def script(mode: str) -> list:
    if mode == "bare":
        return [ANSWER]
    if mode == "steps":
        # The compliant turn's shape without memory-gate: two read-only built-in tool calls (no
        # permission asked), then the answer. Three model requests, as with memory.
        return [reply(tool_use("Glob", {"pattern": "*.md"})), reply(tool_use("Glob", {"pattern": "*.txt"})), ANSWER]
    tools = SETTINGS_TOOLS if mode in ("settings", "hookfloor", "server", "floormcp", "floorcat", "floor") else PLUGIN_TOOLS

    def write(body: dict):
        kept = json.loads(last_tool_result_text(body))["must_answer"]
        ops = [{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}]
        return reply(tool_use(tools + "memory_write", {"ops": ops, "kept": kept}))

    return [reply(tool_use(tools + "memory_search", {"terms": "deploy staging"})), write, ANSWER]


# The least mod memory-gate's plugin could have: it only lets the memory tools run without a
# prompt (plugins cannot ship permission rules), so that the turn goes as scripted.
LEAST_MOD = """const MEMORY_TOOLS = "mcp__plugin_memory-gate_memory__";
export function register(on) {
  on("tool.check", async ($, e, next) => (e.tool.startsWith(MEMORY_TOOLS) ? { decision: "allow" } : next(e)));
}
"""
MOD_FLOOR: Path | None = None  # the plugin with LEAST_MOD, made in main() when asked for


def least_mod_plugin(folder: Path) -> Path:
    """A copy of the plugin whose mod does nothing but allow the memory tools."""
    import shutil

    copy = folder / "modfloor" / "memory-gate"
    shutil.copytree(PLUGIN, copy, ignore=shutil.ignore_patterns("types", "installed"))
    (copy / "hooks" / "register.js").write_text(LEAST_MOD, encoding="utf-8")
    return copy


def options(mode: str) -> dict:
    if mode == "plugin":
        return {"plugin_dirs": [PLUGIN]}
    if mode == "modfloor":
        return {"plugin_dirs": [MOD_FLOOR]}
    if mode == "against":
        return {"plugin_dirs": [AGAINST / "mods" / "memory-gate"]}
    if mode in ("settings", "hookfloor", "server"):
        settings = settings_install()
        if mode == "server":  # the MCP server alone: no hook runs
            del settings["hooks"]
        if mode == "hookfloor":  # the same hooks, each one a process that reads its input and exits
            for groups in settings["hooks"].values():
                for group in groups:
                    for hook in group["hooks"]:
                        hook["command"] = "cat > /dev/null"
        return {"settings": settings, "mcp_config": {"mcpServers": {"memory-gate": {"command": "memory-gate", "args": ["serve"]}}}}
    if mode in ("floor", "floorcat", "floormcp"):  # a server answering at once with canned results
        server = {"command": sys.executable, "args": [str(ROOT / "bench" / "_floor_server.py")]}
        settings = {"permissions": settings_install()["permissions"]}
        if mode != "floor":  # the four hook runs of a compliant turn, each doing nothing
            server["args"].append("--hook-tool")
            settings["permissions"]["allow"].append(SETTINGS_TOOLS + "hook")
            handler = ({"type": "command", "command": "cat > /dev/null"} if mode == "floorcat" else
                       {"type": "mcp_tool", "server": "memory-gate", "tool": "hook", "input": {"prompt_id": "${prompt_id}"}})
            settings["hooks"] = {
                event: [{**({"matcher": matcher} if matcher else {}), "hooks": [handler]}]
                for event, matcher in (("UserPromptSubmit", None), ("PreToolUse", SETTINGS_TOOLS + "memory_(search|write)"),
                                       ("Stop", None))
            }
        return {"settings": settings, "mcp_config": {"mcpServers": {"memory-gate": server}}}
    return {}


def one_turn(folder: Path, mode: str) -> dict:
    """Seconds to the result and to the exit, and whether the turn went as scripted."""
    with Sandbox(folder, script(mode)) as box:
        folder_of_bin = str(AGAINST / ".venv" / "bin") if mode == "against" else BIN
        env = box.env({"PATH": folder_of_bin + os.pathsep + os.environ.get("PATH", "")})
        for wait in ("CLAUDE_CODE_MCP_STARTUP_WAIT_MS", "MCP_TIMEOUT"):  # the tests' patience, not an owner's
            env.pop(wait, None)
        argv = box.argv(PROMPT, **options(mode))
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=box.project, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        lines, answered = [], None
        for line in proc.stdout:
            lines.append(line)
            if answered is None and '"type":"result"' in line.replace(" ", ""):
                answered = time.perf_counter() - started
        proc.wait(timeout=120)
        ended = time.perf_counter() - started
        proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
        events = parse_events("".join(lines))
        result = next((event for event in events if event.get("type") == "result"), {})
        requests = [record.body for record in box.fake.records if record.kind == "main"]
        first = json.dumps(requests[0]) if requests else ""
        return {
            "answered": answered if answered is not None else ended,
            "ended": ended,
            "ok": result.get("result") == ANSWER and len(requests) == len(script(mode)) and not box.fake.errors,
            "tools_first": "memory_search" in first,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--load", action="store_true", help="keep both CPUs busy meanwhile")
    parser.add_argument("--against", metavar="CHECKOUT", help="also run the plugin of another checkout (mode `against`)")
    args = parser.parse_args(argv)
    if args.against:
        global AGAINST
        AGAINST = Path(args.against).resolve()
        args.modes = [*args.modes, "against"]
    if CLAUDE is None:
        print(SKIP_REASON, file=sys.stderr)
        return 1

    results: dict[str, list[dict]] = {mode: [] for mode in args.modes}
    with tempfile.TemporaryDirectory() as folder:
        global MOD_FLOOR
        MOD_FLOOR = least_mod_plugin(Path(folder))
        for mode in args.modes:  # a first turn each, unmeasured: bytecode, page cache, Claude Code's own caches
            one_turn(Path(folder) / f"warm-{mode}", mode)
        with saturated(args.load):
            yardstick = python_start()
            for run in range(args.runs):
                for mode in args.modes:
                    results[mode].append(one_turn(Path(folder) / f"{mode}-{run}", mode))

    print(f"claude: {CLAUDE}  ({args.runs} turns a mode{', both CPUs busy' if args.load else ''})")
    print(f"python -c pass: {yardstick:.1f} ms")
    base = statistics.median(run["answered"] for run in results["bare"]) if "bare" in results else None
    print(f"{'mode':<10} {'to answer s':>12} {'p95 s':>7} {'to exit s':>10} {'x bare':>7} {'as scripted':>12} {'tools in 1st request':>21}")
    for mode, runs in results.items():
        answered = sorted(run["answered"] for run in runs)
        p50 = statistics.median(answered)
        ratio = f"{p50 / base:.2f}" if base else "-"
        tools = "-" if mode == "bare" else f"{sum(run['tools_first'] for run in runs)}/{len(runs)}"
        print(
            f"{mode:<10} {p50:>12.3f} {answered[min(len(answered) - 1, int(0.95 * len(answered)))]:>7.3f} "
            f"{statistics.median(run['ended'] for run in runs):>10.3f} {ratio:>7} "
            f"{sum(run['ok'] for run in runs):>6}/{len(runs):<5} {tools:>21}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
