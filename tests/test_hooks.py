"""The hooks as Claude Code runs them: a process, JSON on stdin, JSON (or nothing) on stdout."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import child_env
from loaded import REPO, loaded_by, module_source

from gate import config
from gate.claude import hooks
from gate.engine import store
from gate.memory import ledger, witness
from gate.serve import sightings, tools

PREFIX = "mcp__plugin_memory-gate_memory__"


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


def database(home, project) -> Path:
    return Path(config.database_for(home, project))


def hook(home, project, event, payload, *extra, raw=None, timeout=15, env=None):
    """Run `memory-gate hook EVENT` as Claude Code does; return (exit code, parsed stdout, stderr)."""
    data = raw if raw is not None else json.dumps({"cwd": str(project), **payload})
    result = subprocess.run(
        [sys.executable, "-m", "gate", "hook", event, *extra], input=data, text=True,
        capture_output=True, cwd=project, env=child_env(home, CLAUDE_PROJECT_DIR=str(project), **(env or {})),
        timeout=timeout,
    )
    out = result.stdout.strip()
    return result.returncode, (json.loads(out) if out else None), result.stderr


def prompt(home, project, prompt_id="p1", text="fix the deploy script", session="s1"):
    return hook(home, project, "UserPromptSubmit", {"session_id": session, "prompt_id": prompt_id, "prompt": text},
                "--tools", PREFIX)


def stop(home, project, prompt_id="p1", active=False, session="s1", env=None):
    return hook(home, project, "Stop", {"session_id": session, "prompt_id": prompt_id, "stop_hook_active": active},
                "--tools", PREFIX, env=env)


def turn(home, project, prompt_id="p1"):
    conn = store.connect(database(home, project))
    row = conn.execute("SELECT searched, wrote, holds, outcome, prompt FROM turns WHERE prompt_id = ?", (prompt_id,)).fetchone()
    conn.close()
    return row


def test_user_prompt_submit_opens_the_turn_and_states_the_contract(home, project):
    code, out, _ = prompt(home, project)
    assert code == 0
    context = out["hookSpecificOutput"]["additionalContext"]
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert f"{PREFIX}memory_search" in context and f"{PREFIX}memory_write" in context
    assert turn(home, project) == (0, 0, 0, None, "fix the deploy script")


@pytest.mark.parametrize("unit", ["key=", "password is ", "Authorization: ", "sshpass -p ", "a: QUJD\n"])
def test_a_hostile_paste_as_prompt_is_answered_within_the_hook_timeout(home, project, unit):
    """The prompt is redacted on the hook path: every credential shape must take linear time,
    whatever repeats (`key=key=…` once took quadratic time and hung the hook). 10 s is the
    timeout the settings install gives the hook; it needs well under one."""
    text = (unit * (200_000 // len(unit) + 1))[:200_000]
    code, out, _ = hook(home, project, "UserPromptSubmit", {"session_id": "s1", "prompt_id": "p1", "prompt": text},
                        "--tools", PREFIX, timeout=10)
    assert code == 0 and out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"


def test_pre_tool_use_maps_the_call_to_the_turn_and_allows_it(home, project):
    prompt(home, project)
    code, out, _ = hook(home, project, "PreToolUse", {
        "session_id": "s1", "prompt_id": "p1", "tool_use_id": "toolu_1", "tool_name": PREFIX + "memory_search",
        "tool_input": {"terms": "deploy"}})
    assert code == 0 and out["hookSpecificOutput"]["permissionDecision"] == "allow"
    conn = store.connect(database(home, project))
    assert ledger.turn_of_tool_call(conn, "toolu_1").prompt_id == "p1"


def test_pre_tool_use_ignores_other_tools(home, project):
    code, out, _ = hook(home, project, "PreToolUse", {
        "session_id": "s1", "prompt_id": "p1", "tool_use_id": "toolu_2", "tool_name": "Bash", "tool_input": {}})
    assert code == 0 and out is None


@pytest.mark.parametrize("active", [False, True])
def test_stop_counts_its_own_blocks_whatever_stop_hook_active_says(home, project, active):
    prompt(home, project)
    for _ in range(hooks.MAX_HOLDS):
        code, out, _ = stop(home, project, active=active)
        assert code == 0 and out["decision"] == "block"
        assert "has not searched memory" in out["reason"] and f"{PREFIX}memory_search" in out["reason"]
        assert out["systemMessage"] == hooks.LEDGER_ONLY  # no server to ask: said at every ruling
    code, out, _ = stop(home, project, active=active)
    assert code == 0 and out == {"systemMessage": f"{hooks.RELEASED}\n{hooks.LEDGER_ONLY}"}
    assert turn(home, project)[2:4] == (hooks.MAX_HOLDS, "released")


@pytest.mark.parametrize("cap, blocks", [("1", 1), ("0", 0), ("20", hooks.MAX_HOLDS), ("lots", hooks.MAX_HOLDS)])
def test_stop_stays_within_the_block_cap_the_owner_set(home, project, cap, blocks):
    prompt(home, project)
    env = {"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": cap}
    answers = [stop(home, project, env=env)[1] for _ in range(blocks + 1)]
    assert [("decision" in out) for out in answers] == [True] * blocks + [False]
    assert turn(home, project)[2:4] == (blocks, "released")


def _search_and_write(home, project, *, write=True):
    conn = store.connect(database(home, project))
    caller = tools.Caller("s1")
    tools.memory_write(conn, [{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}], [], caller, log=None)
    tools.memory_search(conn, "deploy", caller)
    if write:
        tools.memory_write(conn, [], [1], caller, log=None)
    conn.close()


def test_stop_names_unanswered_facts(home, project):
    prompt(home, project)
    _search_and_write(home, project, write=False)
    _, out, _ = stop(home, project)
    assert out["decision"] == "block" and "Fact 1 read this turn is not answered for" in out["reason"]


def test_stop_counts_a_team_read_owed_though_the_ledger_holds_no_facts(home, project):
    """A team member's file holds the turn ledger, not the facts: a read no write answered for is
    owed there though no fact of that id is in the file (a local memory would call it gone)."""
    prompt(home, project)
    conn = store.connect(database(home, project))
    with store.writing(conn):
        [turn_id] = conn.execute("SELECT id FROM turns WHERE prompt_id = 'p1'").fetchone()
        conn.execute("UPDATE turns SET searched = 1, wrote = 1 WHERE id = ?", (turn_id,))
        conn.execute("INSERT INTO reads (turn, fact, rev) VALUES (?, 42, 1)", (turn_id,))
    conn.close()
    assert "decision" not in (stop(home, project)[1] or {})  # a local memory: fact 42 is gone, nothing owed
    Path(config.team_setting(str(database(home, project)))).write_text("{}")
    prompt(home, project, prompt_id="p2")
    conn = store.connect(database(home, project))
    with store.writing(conn):
        [turn_id] = conn.execute("SELECT id FROM turns WHERE prompt_id = 'p2'").fetchone()
        conn.execute("UPDATE turns SET searched = 1, wrote = 1 WHERE id = ?", (turn_id,))
        conn.execute("INSERT INTO reads (turn, fact, rev) VALUES (?, 42, 1)", (turn_id,))
    conn.close()
    _, out, _ = stop(home, project, prompt_id="p2")
    assert out["decision"] == "block" and "Fact 42 read this turn is not answered for" in out["reason"]


def test_stop_lets_a_met_turn_through(home, project):
    prompt(home, project)
    _search_and_write(home, project)
    code, out, _ = stop(home, project)
    assert code == 0 and out == {"systemMessage": hooks.LEDGER_ONLY}  # no server: judged on the ledger
    assert turn(home, project)[3] == "met"


# -- the Stop hook asks the memory server what the turn did (gate.memory.witness) -----------------


@pytest.fixture
def server(home, project):
    """A memory server's witness for the project's database, as `memory-gate serve` runs one."""
    found = sightings.Witness.listen(witness.folder(str(database(home, project))))
    yield found
    found.close()


def _ledger_turn(home, project, prompt_id="p1"):
    conn = store.connect(database(home, project))
    try:
        return ledger.prompt_turn(conn, "s1", prompt_id)
    finally:
        conn.close()


def test_stop_rules_on_what_the_server_saw_not_on_an_edited_ledger(home, project, server):
    prompt(home, project)
    _edit_ledger(home, project, "UPDATE turns SET searched = 1, wrote = 1, outcome = 'released'")
    code, out, _ = stop(home, project)
    assert code == 0 and out == {"decision": "block", "reason": out["reason"]}  # and nothing said of the ledger
    assert "has not searched memory" in out["reason"]
    server.record.searched(_ledger_turn(home, project), [])
    server.record.wrote(_ledger_turn(home, project), [])
    assert stop(home, project)[1] is None
    assert turn(home, project)[3] == "met"


def test_stop_owes_what_the_server_saw_a_search_return_though_the_reads_were_struck(home, project, server):
    prompt(home, project)
    _search_and_write(home, project)  # the ledger: searched, wrote, fact 1 answered
    server.record.searched(_ledger_turn(home, project), [1])
    server.record.wrote(_ledger_turn(home, project), [])
    _, out, _ = stop(home, project)
    assert out["decision"] == "block" and "Fact 1 read this turn is not answered for" in out["reason"]


def test_stop_opens_again_a_turn_row_a_command_deleted(home, project, server):
    prompt(home, project)
    _edit_ledger(home, project, "DELETE FROM turns")
    _, out, _ = stop(home, project)
    assert out["decision"] == "block"
    assert turn(home, project)[2] == 1


def test_stop_with_a_server_that_hangs_judges_on_the_ledger_within_a_second(home, project):
    prompt(home, project)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # accepts, never answers
    folder = Path(witness.folder(str(database(home, project))))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "1-hung").write_text(witness.address(listener.getsockname()[1], "abc"))
    try:
        started = time.monotonic()
        _, out, _ = stop(home, project)
        took = time.monotonic() - started
    finally:
        listener.close()
    assert out["decision"] == "block" and out["systemMessage"] == hooks.LEDGER_ONLY
    assert took < witness.DEADLINE + 2.0  # the hook's own start included


def test_hold_holds_at_most_three_times_then_releases(home, project):
    prompt(home, project)
    payload = {"session_id": "s1", "prompt_id": "p1"}
    actions = [hook(home, project, "Hold", payload, "--tools", PREFIX)[1]["action"] for _ in range(5)]
    assert actions == ["hold", "hold", "hold", "release", "pass"]
    assert turn(home, project)[2:4] == (3, "released")
    # The Stop hook then lets the released answer out.
    assert stop(home, project)[1] is None


def _seen(searched=False, wrote=False, unanswered=(), holds=0, released=False):
    return {"searched": searched, "wrote": wrote, "unanswered": list(unanswered), "holds": holds, "released": released}


def _edit_ledger(home, project, sql):
    conn = store.connect(database(home, project))
    conn.execute(sql)
    conn.close()


def test_hold_rules_on_the_mods_record_not_an_edited_ledger(home, project):
    prompt(home, project)
    _edit_ledger(home, project, "UPDATE turns SET searched = 1, wrote = 1, holds = 9, outcome = 'released'")
    payload = {"session_id": "s1", "prompt_id": "p1", "seen": _seen()}
    _, out, _ = hook(home, project, "Hold", payload, "--tools", PREFIX)
    assert out["action"] == "hold" and "has not searched memory" in out["reason"]
    payload["seen"] = _seen(searched=True, wrote=True, unanswered=[4])
    _, out, _ = hook(home, project, "Hold", payload, "--tools", PREFIX)
    assert out["action"] == "hold" and "Fact 4 read this turn is not answered for" in out["reason"]
    payload["seen"] = _seen(searched=True, wrote=True)
    assert hook(home, project, "Hold", payload, "--tools", PREFIX)[1] == {"action": "pass"}
    assert turn(home, project)[3] == "met"


def test_hold_counts_the_mods_holds_and_knows_its_release(home, project):
    prompt(home, project)
    payload = {"session_id": "s1", "prompt_id": "p1", "seen": _seen(holds=3)}
    assert hook(home, project, "Hold", payload, "--tools", PREFIX)[1]["action"] == "release"
    payload["seen"] = _seen(released=True)
    assert hook(home, project, "Hold", payload, "--tools", PREFIX)[1] == {"action": "pass"}


def test_a_dry_hold_rules_without_counting_a_hold(home, project):
    """The mod asks dry before its gate tool is registered: Claude Code may refuse the tool, and
    then no hold happened. The Stop hook, ruling next, still has all three holds."""
    prompt(home, project)
    payload = {"session_id": "s1", "prompt_id": "p1", "seen": _seen(), "dry": True}
    _, out, _ = hook(home, project, "Hold", payload, "--tools", PREFIX)
    assert out["action"] == "hold" and "has not searched memory" in out["reason"]
    assert turn(home, project)[2:4] == (0, None)
    del payload["dry"]
    assert hook(home, project, "Hold", payload, "--tools", PREFIX)[1]["action"] == "hold"
    assert turn(home, project)[2] == 1


def test_hold_reopens_a_turn_row_that_is_gone(home, project):
    prompt(home, project)
    _edit_ledger(home, project, "DELETE FROM turns")
    payload = {"session_id": "s1", "prompt_id": "p1", "seen": _seen()}
    assert hook(home, project, "Hold", payload, "--tools", PREFIX)[1]["action"] == "hold"
    assert turn(home, project)[2] == 1


@pytest.mark.parametrize("seen", [[], {"searched": "yes"}, {**_seen(), "unanswered": ["1"]}])
def test_a_record_not_the_mods_shape_fails_open_loudly(home, project, seen):
    prompt(home, project)
    code, out, _ = hook(home, project, "Hold", {"session_id": "s1", "prompt_id": "p1", "seen": seen}, "--tools", PREFIX)
    assert code == 0 and "seen" in out["systemMessage"]


def test_status_reports_without_holding(home, project):
    prompt(home, project)
    _, out, _ = hook(home, project, "Status", {"session_id": "s1", "prompt_id": "p1"})
    assert out["met"] is False and "has not searched memory" in out["reason"]
    assert turn(home, project)[2] == 0


def test_compaction_resets_what_the_session_was_shown(home, project):
    prompt(home, project)
    _search_and_write(home, project)
    conn = store.connect(database(home, project))
    assert ledger.shown_revisions(conn, "s1", [1]) == {1: 1}
    code, out, _ = hook(home, project, "SessionStart", {"session_id": "s1", "source": "compact"})
    assert code == 0 and out is None
    assert ledger.shown_revisions(conn, "s1", [1]) == {}


def test_a_task_notification_is_not_gated(home, project):
    code, out, _ = prompt(home, project, text="<task-notification>\n<task-id>a1</task-id>\n</task-notification>")
    assert code == 0 and out is None
    assert stop(home, project)[1] is None


@pytest.mark.parametrize("raw, expected", [
    ("not json", "input is not JSON"),
    ("[1, 2]", "not a JSON object"),
    ("{}", "has no session_id"),
    ('{"session_id": 5, "prompt_id": "p"}', "has no session_id"),
    ("", "not a JSON object"),
])
def test_malformed_input_fails_open_with_one_warning(home, project, raw, expected):
    code, out, stderr = hook(home, project, "Stop", {}, raw=raw)
    assert code == 0
    assert expected in out["systemMessage"] and out["systemMessage"].startswith("memory-gate:")
    assert len(stderr.strip().splitlines()) == 1


def test_unknown_event_fails_open(home, project):
    code, out, _ = hook(home, project, "PostToolUse", {"session_id": "s1"})
    assert code == 0 and "unknown hook event" in out["systemMessage"]


def test_no_database_yet_lets_stop_through_silently(home, project):
    code, out, _ = stop(home, project)
    assert code == 0 and out is None
    assert not database(home, project).exists()


def test_a_corrupt_database_fails_open_and_stays_as_it_was(home, project):
    path = database(home, project)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"garbage" * 1000)
    for code, out, _ in (prompt(home, project), stop(home, project)):
        assert code == 0 and "memory is off" in out["systemMessage"] and "damaged" in out["systemMessage"]
    assert path.read_bytes() == b"garbage" * 1000


@pytest.mark.slow
def test_a_locked_database_fails_open_within_the_hook_timeout(home, project):
    prompt(home, project)
    holder = store.connect(database(home, project))
    holder.execute("BEGIN EXCLUSIVE")
    started = time.monotonic()
    code, out, _ = prompt(home, project, prompt_id="p2")
    elapsed = time.monotonic() - started
    holder.execute("ROLLBACK")
    assert code == 0 and "memory is busy" in out["systemMessage"]
    assert elapsed < hooks.BUSY_MS / 1000 + 5  # well inside the hooks' 10 s timeout


def test_the_hook_path_imports_the_standard_library_and_apsw_only(home, project):
    """Every module the hook itself loads comes from the standard library or apsw, or is one of
    memory-gate's hook-path modules (tests/loaded.py: what the interpreter loaded before the hook
    ran, a distribution's sitecustomize among it, is not the hook's doing)."""
    payload = {"session_id": "s", "prompt_id": "p", "prompt": "x", "cwd": str(project)}
    result, by_source = loaded_by(["hook", "UserPromptSubmit"], payload, child_env(home))
    assert set(by_source) == {"stdlib", "apsw", "gate"}, by_source
    assert by_source["gate"] <= MODULES["hook UserPromptSubmit"]
    assert not set().union(*by_source.values()) & {"mcp", "pydantic", "httpx", "numpy", "anyio", "sqlite_vec"}


def test_module_source_tells_the_standard_library_from_what_is_installed():
    import json as stdlib_json

    import apsw
    import pytest as installed

    assert module_source("json", stdlib_json.__spec__.origin) == "stdlib"
    assert module_source("sys", "built-in") == "stdlib"
    assert module_source("apsw", apsw.__spec__.origin) == "apsw"
    assert module_source("gate.config", str(REPO / "gate" / "config.py")) == "gate"
    assert module_source("pytest", installed.__spec__.origin) == str(Path(installed.__spec__.origin).resolve())
    assert module_source("gate", installed.__spec__.origin) != "gate"  # a name alone proves nothing


# -- the command Claude Code runs loads nothing it does not need ---------------------------------


HOOK_FILES = [REPO / "hooks" / "hooks.json", REPO / "mods" / "memory-gate" / "hooks" / "hooks.json",
              REPO / "mods" / "injected-context" / "hooks" / "hooks.json"]
HOOK_PATH = {"gate", "gate.cli", "gate.cli.entry", "gate.config", "gate.claude", "gate.claude.hookio", "gate.jsonlite",
             "gate.engine", "gate.engine.store", "gate.engine.files", "_json"}
# What each hook needs for its work in the test's situation below (a turn opened, nothing searched):
# gate.credentials only where a prompt is stored, and of it only the front and its triggers for a
# prompt no shape can match (gate.credentials.triggers), as most are; gate.claude.maxturns only
# where an answer may be held.
GATE = HOOK_PATH | {"gate.claude.hooks", "gate.memory", "gate.memory.ledger", "gate.clock"}
CREDENTIALS = {"gate.credentials", "gate.credentials.triggers"}
MODULES = {
    "hook UserPromptSubmit": GATE | CREDENTIALS,
    "hook PreToolUse": GATE,
    "hook SessionStart": GATE,
    # The Stop hook asks the memory servers what the turn did (gate.memory.witness), over _socket,
    # which it loads only when one is listed (here none is running).
    "hook Stop": GATE | {"gate.claude.maxturns", "gate.memory.witness"},
    "inject": HOOK_PATH | {"gate.context", "gate.context.hook", "gate.context.classify", "gate.context.inject",
                           "gate.context.rules", "gate.context.state", "gate.clock", "__future__"} | CREDENTIALS,
}


def imported(argv: list[str], env: dict, stdin: str = "") -> set[str]:
    """Every module the process imported, as Python's own import profiler names them."""
    result = subprocess.run(argv, input=stdin, text=True, capture_output=True, env={**env, "PYTHONPROFILEIMPORTTIME": "1"})
    assert result.returncode == 0, result.stderr[-2000:]
    return {
        line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines()
        if line.startswith("import time:") and not line.rstrip().endswith("imported package")
    }


def installed_hook_commands() -> list[tuple[str, str]]:
    """(event, command) for every command hook the plugins and the settings install run."""
    return [
        (event, entry["command"])
        for path in HOOK_FILES
        for event, groups in json.loads(path.read_text())["hooks"].items()
        for group in groups for entry in group["hooks"]
    ]


@pytest.mark.parametrize("event, command", installed_hook_commands())
def test_the_installed_hook_command_imports_only_what_its_work_needs(home, project, event, command):
    # The command exactly as Claude Code runs it (through /bin/sh, the plugin's launcher finding
    # this environment's `memory-gate` on PATH, the settings install naming it), in a project
    # whose database exists, as it does after the first prompt.
    prompt(home, project)
    env = child_env(home, CLAUDE_PROJECT_DIR=str(project), CLAUDE_PLUGIN_ROOT=str(REPO / ("mods/injected-context" if " inject " in command else "mods/memory-gate")))
    payload = json.dumps({
        "session_id": "s1", "prompt_id": "p1", "prompt": "fix the deploy script", "cwd": str(project),
        "tool_use_id": "toolu_1", "tool_name": PREFIX + "memory_search", "tool_input": {"terms": "deploy"},
        "stop_hook_active": False, "source": "compact", "hook_event_name": event,
    })
    loaded = imported(["/bin/sh", "-c", command], env, payload)
    python = Path(sys.executable).parent / "python"
    # What the interpreter loads for nothing, and what the SQLite binding brings with it.
    baseline = imported([str(python), "-c", "import apsw"], env)
    words = command.split()
    assert loaded - baseline == MODULES["inject" if words[1] == "inject" else f"hook {event}"]
    # apsw is loaded without the collections package it would import (gate/cli/entry.py).
    assert "apsw" in loaded and not loaded & {"collections", "collections.abc", "operator", "reprlib", "keyword"}
    if "${CLAUDE_PLUGIN_ROOT}" in command:
        # The plugin's launcher starts the hook without site (bin/memory-gate sets up sys.path).
        assert not loaded & {"site", "_sitebuiltins", "_distutils_hack"}, "the plugin's hook ran with site"
    assert not loaded & {"re", "json", "enum", "typing", "pathlib", "dataclasses", "datetime", "mcp", "pydantic"}


def test_an_apsw_that_wants_more_of_collections_is_still_loaded(tmp_path):
    # The hook path imports apsw with a stand-in `collections` that holds only `abc`; an apsw
    # wanting more must still load, with the real package, and the hook must not fail for it.
    fake = tmp_path / "apsw"
    fake.mkdir()
    (fake / "__init__.py").write_text("from collections import OrderedDict\nLOADED = OrderedDict(ok=True)\n")
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from gate.cli import entry\n"
        "entry._load_binding()\n"
        "import apsw, collections\n"
        "print(apsw.__file__.startswith(sys.argv[1]), apsw.LOADED['ok'], hasattr(collections, 'deque'))\n"
    )
    out = subprocess.run([sys.executable, "-S", "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "True"]
