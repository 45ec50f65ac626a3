"""Run the real Claude Code headless and offline, against the scripted fake Messages API.

`Sandbox` owns one fake API server, an empty HOME and a project directory. `run()` is one
`claude -p PROMPT --output-format stream-json --verbose` process; `session()` keeps one process
open with `--input-format stream-json` and sends prompts one at a time (mod module state lives
per process, and `/compact` is sent as a plain user message `"/compact"`).

The child environment is built from scratch (PATH, locale, TMPDIR and the offline variables),
so nothing from a surrounding Claude Code session (CLAUDECODE, CLAUDE_CODE_SESSION_ID,
ANTHROPIC_*) leaks into the run under test.

    with Sandbox(tmp_path, ["Hello."]) as box:
        run = box.run("say hi")
        assert run.result_text == "Hello."
"""

from __future__ import annotations

import json
import os
import queue
import shlex
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

try:
    from .fake_anthropic import FakeAnthropic, Recorded, Step
except ImportError:  # tests/ run as rootdir-relative modules (no package)
    from fake_anthropic import FakeAnthropic, Recorded, Step

REPO = Path(__file__).resolve().parent.parent

OFFLINE_ENV = {
    "ANTHROPIC_API_KEY": "sk-ant-fake-key",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    # `-p` sends its first request once stdio MCP servers from settings are connected or about
    # 2 s have passed; on a busy machine the server (importing the MCP SDK) can take longer, and
    # the first request then lacks the memory tools. Wait for the connection itself (Claude Code
    # goes on the moment it is up), bounded inside a test's time-out; and give the server as long
    # to connect (MCP_TIMEOUT): with both CPUs saturated it was seen 'failed' at the default.
    "CLAUDE_CODE_MCP_STARTUP_WAIT_MS": "45000",
    "MCP_TIMEOUT": "45000",
}
# PYTHONPATH: the memory-gate under test, also where PATH's is another checkout's editable install.
# MEMORY_GATE_MEANING: the suite's choice (tests/conftest.py) reaches the servers Claude Code starts.
PASSTHROUGH_ENV = ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ", "SYSTEMROOT",
                   "MEMORY_GATE_MEANING")
DEFAULT_TIMEOUT = 60.0


def find_claude() -> str | None:
    """$MEMORY_GATE_CLAUDE, then node_modules/.bin/claude under the repo, then `claude` on PATH."""
    explicit = os.environ.get("MEMORY_GATE_CLAUDE")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    local = REPO / "node_modules" / ".bin" / "claude"
    if os.access(local, os.X_OK):
        return str(local)
    return shutil.which("claude")


CLAUDE = find_claude()
SKIP_REASON = (
    f"MEMORY_GATE_CLAUDE={os.environ['MEMORY_GATE_CLAUDE']!r} is not an executable"
    if os.environ.get("MEMORY_GATE_CLAUDE") and CLAUDE is None else
    "Claude Code not found: set MEMORY_GATE_CLAUDE, `npm install @anthropic-ai/claude-code@2.1.332` "
    "in the repo, or put `claude` on PATH"
)


def claude_version(claude: str | None = None) -> str | None:
    """`claude --version`'s number ("2.1.332"), or None."""
    binary = claude or CLAUDE
    if not binary:
        return None
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    return out.split()[0] if out.strip() else None


def needs_claude(func=None):
    """pytest marker: skip when no Claude Code binary is available."""
    import pytest

    mark = pytest.mark.skipif(CLAUDE is None, reason=SKIP_REASON)
    return mark(func) if func is not None else mark


# --- results ---------------------------------------------------------------------------------

@dataclass
class ClaudeRun:
    """One `claude -p` process, or one turn of a session."""

    argv: list[str]
    returncode: int | None
    events: list[dict]
    stdout: str = ""
    stderr: str = ""
    records: list[Recorded] = field(default_factory=list)
    debug_file: Path | None = None
    elapsed: float = 0.0

    @property
    def result(self) -> dict | None:
        """The final `{"type": "result", ...}` event (subtype, result, session_id, is_error...)."""
        results = [e for e in self.events if e.get("type") == "result"]
        return results[-1] if results else None

    @property
    def result_text(self) -> str | None:
        return self.result.get("result") if self.result else None

    @property
    def session_id(self) -> str | None:
        for e in self.events:
            if e.get("session_id"):
                return e["session_id"]
        return None

    @property
    def requests(self) -> list[dict]:
        """Main-loop Messages request bodies sent during this run."""
        return [r.body for r in self.records if r.kind == "main"]

    @property
    def all_requests(self) -> list[dict]:
        return [r.body for r in self.records if r.kind in ("main", "side", "compact")]

    def of_type(self, type_: str, subtype: str | None = None) -> list[dict]:
        return [e for e in self.events
                if e.get("type") == type_ and (subtype is None or e.get("subtype") == subtype)]

    def assistant_blocks(self, kind: str | None = None) -> list[dict]:
        blocks = [b for e in self.of_type("assistant") for b in e["message"].get("content", [])]
        return [b for b in blocks if kind is None or b.get("type") == kind]

    def tool_results(self) -> list[dict]:
        """tool_result blocks Claude Code reported in `user` events."""
        out = []
        for e in self.of_type("user"):
            content = e["message"].get("content")
            if isinstance(content, list):
                out.extend(b for b in content if b.get("type") == "tool_result")
        return out

    def debug_log(self) -> str:
        if self.debug_file and self.debug_file.exists():
            return self.debug_file.read_text(errors="replace")
        return ""

    def load_errors(self) -> list[str]:
        """Debug-log lines saying a plugin or mod failed to load (needs debug=True).

        A mod that fails Claude Code's static check is dropped with only an [ERROR] line in the
        debug log; the run goes on without it and `init` still lists the plugin.
        """
        return [line for line in self.debug_log().splitlines()
                if "failed to load" in line or "did not load" in line or "Plugin loading errors" in line]

    def ui_logs(self, plugin: str | None = None) -> list[str]:
        """Lines a mod wrote with `$.ui.log(text)`: `-p` prints them as system/ui_log events."""
        return [e.get("text", "") for e in self.of_type("system", "ui_log")
                if plugin is None or e.get("plugin") == plugin]

    def explain(self) -> str:
        """A short dump for assertion messages."""
        kinds = [f"{e.get('type')}/{e.get('subtype', '')}" for e in self.events]
        return (f"rc={self.returncode} result={self.result!r}\nevents={kinds}\n"
                f"stderr={self.stderr[-2000:]}")


# --- the sandbox -----------------------------------------------------------------------------

def _json_arg(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


class Sandbox:
    """A fake API, an empty HOME and a project dir under `root`; runs Claude Code in them."""

    def __init__(
        self,
        root: Path | str,
        script: Iterable[Step] = (),
        *,
        fake: FakeAnthropic | None = None,
        claude: str | None = None,
        env: Mapping[str, str] | None = None,
    ):
        self.root = Path(root)
        self.home = self.root / "home"
        self.project = self.root / "project"
        self.home.mkdir(parents=True, exist_ok=True)
        self.project.mkdir(parents=True, exist_ok=True)
        self.fake = fake or FakeAnthropic(script)
        self._own_fake = fake is None
        self.claude = claude or CLAUDE
        self.extra_env = dict(env or {})
        self._debug_counter = 0
        if self._own_fake:
            self.fake.start()

    def close(self) -> None:
        if self._own_fake:
            self.fake.stop()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = {k: os.environ[k] for k in PASSTHROUGH_ENV if k in os.environ}
        env.update(OFFLINE_ENV)
        env["HOME"] = str(self.home)
        env["ANTHROPIC_BASE_URL"] = self.fake.base_url
        env.update(self.extra_env)
        env.update(extra or {})
        return env

    def new_debug_file(self) -> Path:
        self._debug_counter += 1
        return self.root / f"debug-{self._debug_counter}.txt"

    def argv(
        self,
        prompt: str | None,
        *,
        plugin_dirs: Sequence[Path | str] = (),
        settings: Mapping | str | Path | None = None,
        resume: str | None = None,
        continue_: bool = False,
        allowed_tools: Sequence[str] = (),
        mcp_config: Mapping | str | Path | None = None,
        debug_file: Path | str | None = None,
        input_stream: bool = False,
        args: Sequence[str] = (),
    ) -> list[str]:
        if self.claude is None:
            raise RuntimeError(SKIP_REASON)
        argv = [self.claude, "-p"]
        if prompt is not None:
            argv.append(prompt)
        argv += ["--output-format", "stream-json", "--verbose"]
        if input_stream:
            argv += ["--input-format", "stream-json"]
        for d in plugin_dirs:
            argv += ["--plugin-dir", str(d)]
        if settings is not None:
            argv += ["--settings", _json_arg(settings)]
        if resume:
            argv += ["--resume", resume]
        if continue_:
            argv.append("--continue")
        if allowed_tools:
            argv += ["--allowedTools", ",".join(allowed_tools)]
        if mcp_config is not None:
            argv += ["--mcp-config", _json_arg(mcp_config)]
        if debug_file:
            argv += ["--debug-file", str(debug_file)]
        argv += list(args)
        return argv

    def run(
        self,
        prompt: str,
        *,
        cwd: Path | str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        debug: bool = False,
        debug_file: Path | str | None = None,
        **options: Any,
    ) -> ClaudeRun:
        """One `claude -p PROMPT` process. `debug=True` writes a fresh debug file under root."""
        if debug and not debug_file:
            debug_file = self.new_debug_file()
        argv = self.argv(prompt, debug_file=debug_file, **options)
        first = len(self.fake.records)
        started = time.monotonic()
        proc = subprocess.run(argv, cwd=str(cwd or self.project), env=self.env(env),
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
        elapsed = time.monotonic() - started
        return ClaudeRun(argv, proc.returncode, parse_events(proc.stdout), proc.stdout, proc.stderr,
                         self.fake.records[first:], Path(debug_file) if debug_file else None, elapsed)

    def session(
        self,
        *,
        cwd: Path | str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        debug: bool = False,
        debug_file: Path | str | None = None,
        **options: Any,
    ) -> "ClaudeSession":
        """One long-lived process reading prompts as stream-json from stdin."""
        if debug and not debug_file:
            debug_file = self.new_debug_file()
        argv = self.argv(None, input_stream=True, debug_file=debug_file, **options)
        return ClaudeSession(self, argv, cwd=cwd or self.project, env=self.env(env), timeout=timeout,
                             debug_file=Path(debug_file) if debug_file else None)


def parse_events(stdout: str) -> list[dict]:
    events = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            events.append(json.loads(line))
        except ValueError:
            events.append({"type": "_unparsed", "line": line})
    return events


class ClaudeSession:
    """`claude -p --input-format stream-json`: several turns in one process.

    `send(prompt)` writes `{"type":"user","message":{"role":"user","content":prompt}}` and reads
    events up to that turn's `result`. `compact()` sends `/compact` the same way: Claude Code
    runs the slash command (PreCompact, the summary request, SessionStart source=compact,
    PostCompact) and answers with a `result` whose text is empty.
    """

    def __init__(self, box: Sandbox, argv: list[str], *, cwd, env, timeout: float, debug_file: Path | None):
        self.box = box
        self.argv = argv
        self.timeout = timeout
        self.debug_file = debug_file
        self.turns: list[ClaudeRun] = []
        self.stderr_lines: list[str] = []
        self._events: "queue.Queue[dict | None]" = queue.Queue()
        self._leftover: list[dict] = []
        self.proc = subprocess.Popen(argv, cwd=str(cwd), env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self._readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for t in self._readers:
            t.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip():
                self._events.put(parse_events(line)[0])
        self._events.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_lines.append(line)

    @property
    def session_id(self) -> str | None:
        for turn in self.turns:
            if turn.session_id:
                return turn.session_id
        return None

    def send(self, content: str | list, *, timeout: float | None = None) -> ClaudeRun:
        """Send one user message; return its turn once the `result` event arrives."""
        assert self.proc.stdin is not None
        first = len(self.box.fake.records)
        started = time.monotonic()
        message = {"type": "user", "message": {"role": "user", "content": content}}
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        events = self._leftover
        self._leftover = []
        deadline = started + (timeout or self.timeout)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no result within {timeout or self.timeout}s; events so far: "
                                   f"{[e.get('type') for e in events]}\n{''.join(self.stderr_lines)[-2000:]}")
            try:
                event = self._events.get(timeout=remaining)
            except queue.Empty:
                continue
            if event is None:  # the process ended before answering
                self.proc.wait(timeout=10)
                break
            events.append(event)
            if event.get("type") == "result":
                break
        turn = ClaudeRun(self.argv, self.proc.returncode, events, "", "".join(self.stderr_lines),
                         self.box.fake.records[first:], self.debug_file, time.monotonic() - started)
        self.turns.append(turn)
        return turn

    def compact(self, instructions: str = "", **kw: Any) -> ClaudeRun:
        return self.send(f"/compact {instructions}".rstrip(), **kw)

    def close(self, timeout: float = 30.0) -> int:
        """Close stdin (Claude Code then ends the session: Stop/SessionEnd hooks) and wait."""
        if self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        for t in self._readers:
            t.join(timeout=5)
        while True:  # keep events that came after the last result (SessionEnd hook output etc.)
            try:
                event = self._events.get_nowait()
            except queue.Empty:
                break
            if event is not None:
                self._leftover.append(event)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()
        return rc

    @property
    def trailing_events(self) -> list[dict]:
        """Events printed after the last turn's result (read after close())."""
        return list(self._leftover)

    def __enter__(self) -> "ClaudeSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --- plugin scaffolding ----------------------------------------------------------------------

def write_plugin(
    root: Path,
    name: str,
    *,
    mcp_servers: Mapping[str, dict] | None = None,
    hooks: Mapping | None = None,
    modules: Sequence[str] | None = None,
    files: Mapping[str, str] | None = None,
    version: str = "0.0.1",
) -> Path:
    """Write a plugin dir: `.claude-plugin/plugin.json`, optional `.mcp.json` and `hooks/hooks.json`.

    `hooks` is the settings-hooks mapping (`{"Stop": [...]}`); `modules` makes it a mod
    (`{"modules": ["./register.js"]}`); both may be given. `files` are extra files by relative path.
    """
    root = Path(root)
    (root / ".claude-plugin").mkdir(parents=True, exist_ok=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps(
        {"name": name, "version": version, "description": f"{name} (test plugin)"}, indent=2))
    if mcp_servers:
        (root / ".mcp.json").write_text(json.dumps({"mcpServers": dict(mcp_servers)}, indent=2))
    if hooks is not None or modules is not None:
        hooks_json: dict = {}
        if hooks is not None:
            hooks_json["hooks"] = dict(hooks)
        if modules is not None:
            hooks_json["modules"] = list(modules)
        (root / "hooks").mkdir(exist_ok=True)
        (root / "hooks" / "hooks.json").write_text(json.dumps(hooks_json, indent=2))
    for rel, content in (files or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return root


def command_hook(command: str, timeout: int = 10) -> list[dict]:
    """One settings-hook matcher group running `command` (for `{"hooks": {Event: command_hook(...)}}`)."""
    return [{"hooks": [{"type": "command", "command": command, "timeout": timeout}]}]


def recording_hooks(log: Path, events: Iterable[str]) -> dict:
    """Settings whose hooks append each event's stdin JSON, one line per run, to `log`."""
    command = f"cat >> {shlex.quote(str(log))}; echo >> {shlex.quote(str(log))}"
    return {"hooks": {event: command_hook(command) for event in events}}


def read_hook_log(log: Path) -> list[dict]:
    """The hook inputs `recording_hooks` wrote, in order of completion."""
    if not Path(log).exists():
        return []
    return [json.loads(line) for line in Path(log).read_text().splitlines() if line.strip()]
