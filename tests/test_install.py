"""`memory-gate install` and `uninstall`: the pure merges, the files, the CLI, and real Claude Code
using what install wrote (no --settings, no --mcp-config, no plugin)."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from claude_harness import Sandbox, needs_claude
from fake_anthropic import last_user_text, reply, tool_use

from gate import config
from gate.claude import entries, install, scopes
from gate.claude.install import InstallError, add_server, add_to_settings, remove_from_settings, remove_server
from gate.claude.settingsfile import FileError, pointer, render, unpointer
from gate.cli import main as cli

EXE = "/opt/memory gate/bin/memory-gate"  # a space: the hook command must quote it
QUOTED = "'/opt/memory gate/bin/memory-gate'"
TOOLS = "mcp__memory-gate__"


def expected_hooks(quoted: str = QUOTED) -> dict:
    """What tests/test_e2e_gate.py's settings_only() gives Claude Code, with the executable's path."""
    def group(event, tools=True, matcher=None):
        command = f"{quoted} hook {event}" + (f" --tools {TOOLS}" if tools else "")
        return [({"matcher": matcher} if matcher else {}) | {"hooks": [{"type": "command", "command": command, "timeout": 10}]}]

    return {
        "UserPromptSubmit": group("UserPromptSubmit"),
        "PreToolUse": group("PreToolUse", False, f"{TOOLS}memory_(search|write)"),
        "SessionStart": group("SessionStart", False, "compact|clear"),
        "Stop": group("Stop"),
    }


RULES = [f"{TOOLS}memory_search", f"{TOOLS}memory_write"]
AUTO_MEMORY_OFF = "+ autoMemoryEnabled: false (Claude Code's own file memory off: the model is told of one memory, memory-gate's)"
USER_STOP = {"hooks": [{"type": "command", "command": "notify-send done"}]}
BUSY_SETTINGS = {
    "model": "opus",
    "hooks": {"Stop": [USER_STOP], "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}]},
    "permissions": {"allow": ["Bash(git status:*)"], "deny": ["Read(.env)"]},
    "env": {"FOO": "1"},
}


def install_then_uninstall(data: dict) -> tuple[dict, dict | None]:
    added = add_to_settings(data, EXE)
    removed = remove_from_settings(added.data, set(added.added))
    return added.data, removed.data


# -- the settings merge ----------------------------------------------------------------------


def test_fresh_settings_get_the_four_hooks_and_the_two_rules():
    edit = add_to_settings({}, EXE)
    assert edit.data == {"hooks": expected_hooks(), "permissions": {"allow": RULES}, "autoMemoryEnabled": False}
    assert edit.changes == [
        "+ hook UserPromptSubmit", "+ hook PreToolUse", "+ hook SessionStart", "+ hook Stop",
        f"+ allow {RULES[0]}", f"+ allow {RULES[1]}", AUTO_MEMORY_OFF,
    ]
    assert {("hooks",), ("hooks", "Stop"), ("hooks", "Stop", install.HOOK), ("permissions", "allow", RULES[0])} <= set(edit.added)


def test_what_is_there_stays_in_its_order_and_ours_goes_last():
    before = json.loads(json.dumps(BUSY_SETTINGS))
    data = add_to_settings(BUSY_SETTINGS, EXE).data
    assert BUSY_SETTINGS == before, "the merge must not change its input"
    assert list(data) == ["model", "hooks", "permissions", "env", "autoMemoryEnabled"]
    assert list(data["hooks"]) == ["Stop", "PostToolUse", "UserPromptSubmit", "PreToolUse", "SessionStart"]
    assert data["hooks"]["Stop"] == [USER_STOP, *expected_hooks()["Stop"]]
    assert data["hooks"]["PostToolUse"] == BUSY_SETTINGS["hooks"]["PostToolUse"]
    assert data["permissions"] == {"allow": ["Bash(git status:*)", *RULES], "deny": ["Read(.env)"]}


def test_installing_twice_changes_nothing():
    once = add_to_settings(BUSY_SETTINGS, EXE)
    twice = add_to_settings(once.data, EXE)
    assert twice.changes == [] and twice.data == once.data and twice.added == []


def test_a_new_path_replaces_ours_in_place_never_twice():
    old = add_to_settings({"hooks": {"Stop": [USER_STOP]}}, "/old/venv/bin/memory-gate").data
    old["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "after"}]})
    edit = add_to_settings(old, EXE)
    assert "~ hook Stop" in edit.changes and "+ hook Stop" not in edit.changes
    stop = edit.data["hooks"]["Stop"]
    assert stop[0] == USER_STOP and stop[1] == expected_hooks()["Stop"][0] and stop[2]["hooks"][0]["command"] == "after"


def test_a_hand_written_memory_gate_hook_is_taken_over_and_its_neighbours_kept():
    mixed = {"hooks": [{"type": "command", "command": "memory-gate hook Stop"}, {"type": "command", "command": "say hi"}]}
    data = add_to_settings({"hooks": {"Stop": [mixed], "PostToolUse": [{"hooks": [{"type": "command", "command": "memory-gate hook PostToolUse"}]}]}}, EXE)
    assert data.data["hooks"]["Stop"] == [*expected_hooks()["Stop"], {"hooks": [{"type": "command", "command": "say hi"}]}]
    assert "PostToolUse" not in data.data["hooks"], "an event memory-gate no longer hooks is cleared"
    assert "- hook PostToolUse (memory-gate no longer uses it)" in data.changes


@pytest.mark.parametrize("data", [
    {},
    BUSY_SETTINGS,
    {"permissions": {"allow": []}, "hooks": {"Stop": []}},
    {"permissions": {}, "hooks": {}},
    {"permissions": {"allow": [RULES[0]]}},
])
def test_uninstall_is_the_exact_inverse(data):
    _, back = install_then_uninstall(data)
    assert back == data and json.dumps(back) == json.dumps(data), "key order too"


def test_uninstall_removes_a_created_file_only_when_nothing_else_came_in():
    added = add_to_settings({}, EXE)
    created = set(added.added) | {()}
    assert remove_from_settings(added.data, created).data is None
    kept = remove_from_settings({**added.data, "model": "opus"}, created)
    assert kept.data == {"model": "opus"}


def test_uninstall_keeps_what_the_user_added_meanwhile_to_lists_install_created():
    added = add_to_settings({}, EXE)
    data = json.loads(json.dumps(added.data))
    data["permissions"]["allow"].append("Bash(ls)")
    data["hooks"]["Stop"].append(USER_STOP)
    back = remove_from_settings(data, set(added.added) | {()}).data
    assert back == {"hooks": {"Stop": [USER_STOP]}, "permissions": {"allow": ["Bash(ls)"]}}


def test_entries_there_before_install_stay_until_uninstall_runs_without_a_record():
    before = add_to_settings({"permissions": {"allow": [RULES[1]]}}, "memory-gate").data  # by hand, from PATH
    before["hooks"]["Stop"] = [USER_STOP]
    added = add_to_settings(before, EXE)
    assert added.changes == ["~ hook UserPromptSubmit", "~ hook PreToolUse", "~ hook SessionStart", "+ hook Stop"]
    first = remove_from_settings(added.data, set(added.added))
    hooks = expected_hooks()
    assert first.data == {
        "permissions": {"allow": [RULES[1], RULES[0]]},
        "hooks": {"UserPromptSubmit": hooks["UserPromptSubmit"], "PreToolUse": hooks["PreToolUse"], "SessionStart": hooks["SessionStart"], "Stop": [USER_STOP]},
        "autoMemoryEnabled": False,
    }
    [note] = first.notes
    assert note.startswith("left hook UserPromptSubmit, hook PreToolUse, hook SessionStart, allow") and "again" in note
    # Nothing marks the setting as memory-gate's: without a record it stays, and uninstall says so.
    second = remove_from_settings(first.data, None)
    assert second.data == {"hooks": {"Stop": [USER_STOP]}, "autoMemoryEnabled": False}
    assert second.notes[0].startswith("left autoMemoryEnabled: false: no record")


def test_without_a_record_uninstall_removes_only_what_it_empties():
    data = add_to_settings({"permissions": {"deny": ["Read(.env)"]}}, EXE).data
    assert remove_from_settings(data, None).data == {"permissions": {"deny": ["Read(.env)"]}, "autoMemoryEnabled": False}


def test_uninstall_with_nothing_installed_changes_nothing():
    edit = remove_from_settings(BUSY_SETTINGS, None)
    assert edit.changes == [] and edit.data == BUSY_SETTINGS


@pytest.mark.parametrize("data, named", [
    ({"hooks": []}, "hooks is not an object"),
    ({"hooks": {"Stop": {"command": "x"}}}, "hooks.Stop is not a list"),
    ({"permissions": {"allow": "Bash"}}, "permissions.allow is not a list"),
    ({"permissions": []}, "permissions is not an object"),
])
def test_a_wrong_shape_is_refused_naming_where(data, named):
    with pytest.raises(FileError, match=named):
        add_to_settings(data, EXE)


def test_another_events_odd_value_is_not_ours_to_judge():
    data = {"hooks": {"Notification": "whatever"}}
    assert add_to_settings(data, EXE).data["hooks"]["Notification"] == "whatever"


def test_an_enabled_plugin_is_pointed_out():
    edit = add_to_settings({"enabledPlugins": {"memory-gate@memory-gate": True}}, EXE)
    assert any("plugin is enabled" in note for note in edit.notes)


# -- the server merge --------------------------------------------------------------------------


SERVER = {"type": "stdio", "command": EXE, "args": ["serve"], "env": {}, "alwaysLoad": True}
STATE = {"numStartups": 7, "mcpServers": {"other": {"command": "x"}}, "projects": {"/p": {"allowedTools": []}}, "userID": "u"}


def test_the_user_server_goes_into_top_level_mcp_servers_and_nothing_else_moves():
    edit = add_server(STATE, EXE)
    assert edit.data == {**STATE, "mcpServers": {"other": {"command": "x"}, "memory-gate": SERVER}}
    assert list(edit.data) == list(STATE) and edit.changes == [f"+ MCP server memory-gate: {EXE} serve"]
    back = remove_server(edit.data, (), set(edit.added))
    assert back.data == STATE and json.dumps(back.data) == json.dumps(STATE)


def test_the_project_server_goes_into_the_projects_local_entry():
    edit = add_server(STATE, EXE, ("projects", "/p"))
    assert edit.data["projects"]["/p"] == {"allowedTools": [], "mcpServers": {"memory-gate": SERVER}}
    assert edit.data["mcpServers"] == STATE["mcpServers"]
    assert remove_server(edit.data, ("projects", "/p"), set(edit.added)).data == STATE
    fresh = add_server({}, EXE, ("projects", "/q"))
    assert fresh.added == [("projects",), ("projects", "/q"), ("projects", "/q", "mcpServers"), ("projects", "/q", "mcpServers", "memory-gate")]
    assert remove_server(fresh.data, ("projects", "/q"), set(fresh.added) | {()}).data is None


def test_our_server_is_updated_keeping_the_users_env():
    mine = {"command": "/old/memory-gate", "args": ["serve"], "env": {"MEMORY_GATE_EMBED_URL": "http://127.0.0.1:1"}}
    edit = add_server({"mcpServers": {"memory-gate": mine}}, EXE)
    assert edit.data["mcpServers"]["memory-gate"] == {**mine, "command": EXE, "alwaysLoad": True}
    assert edit.changes[0].startswith("~ MCP server memory-gate") and add_server(edit.data, EXE).changes == []


def test_a_server_there_before_install_stays():
    data = {"mcpServers": {"memory-gate": SERVER}}
    assert add_server(data, EXE).changes == []
    kept = remove_server(data, (), set())
    assert kept.data == data and "there before install" in kept.notes[0]
    assert remove_server(data, (), None).data is None, "without a record: every memory-gate entry, and the file it emptied"


def test_json_pointers_round_trip():
    path = ("projects", "/home/me/a~b", "mcpServers")
    assert pointer(path) == "/projects/~1home~1me~1a~0b/mcpServers" and unpointer(pointer(path)) == path
    assert pointer(()) == "" and unpointer("") == ()


def test_a_foreign_server_named_memory_gate_is_refused_and_left_by_uninstall():
    foreign = {"mcpServers": {"memory-gate": {"command": "npx", "args": ["some-other-memory"]}}}
    with pytest.raises(InstallError, match="does not run `memory-gate serve`"):
        add_server(foreign, EXE)
    edit = remove_server(foreign, (), None)
    assert edit.data == foreign and edit.notes


# -- files ---------------------------------------------------------------------------------------


@pytest.fixture
def where(tmp_path):
    """A user scope in a temp home, and the record beside it."""
    home = tmp_path / "home"
    home.mkdir()
    scope = scopes.user_scope(home / ".claude", home / ".claude.json")
    return scope, home / ".claude" / install.RECORD_NAME


def tree(root: Path) -> dict[str, bytes | None]:
    return {str(path.relative_to(root)): (path.read_bytes() if path.is_file() else None) for path in sorted(root.rglob("*"))}


def test_a_fresh_home_gets_both_files_and_uninstall_leaves_it_as_it_was(where, tmp_path):
    scope, record = where
    before = tree(tmp_path)
    report = install.install(scope, EXE, record=record)
    assert [change.action for change in report.files] == ["created", "created"]
    assert json.loads(scope.settings.read_text()) == {"hooks": expected_hooks(), "permissions": {"allow": RULES}, "autoMemoryEnabled": False}
    assert json.loads(scope.state.read_text()) == {"mcpServers": {"memory-gate": SERVER}}
    assert stat.S_IMODE(scope.settings.stat().st_mode) == 0o600 and stat.S_IMODE(scope.state.stat().st_mode) == 0o600
    assert record.exists()
    again = install.install(scope, EXE, record=record)
    assert not again.changed and "already installed" in again.lines()[0]
    install.uninstall(scope, record=record)
    assert tree(tmp_path) == before


def test_existing_files_come_back_byte_for_byte(where, tmp_path):
    scope, record = where
    scope.settings.parent.mkdir()
    settings = json.dumps(BUSY_SETTINGS, indent=4).encode()  # four spaces, no final newline
    state = json.dumps(STATE, indent=2).replace("\n", "\r\n").encode() + b"\r\n"
    scope.settings.write_bytes(settings)
    scope.state.write_bytes(state)
    os.chmod(scope.settings, 0o640)
    report = install.install(scope, EXE, record=record)
    assert [change.action for change in report.files] == ["changed", "changed"]
    written = scope.settings.read_text()
    assert written.startswith('{\n    "model"') and not written.endswith("\n")
    assert scope.state.read_bytes().endswith(b"}\r\n") and b"\n  \"numStartups\"" in scope.state.read_bytes()
    assert stat.S_IMODE(scope.settings.stat().st_mode) == 0o640
    backup = scope.settings.with_name("settings.json.memory-gate-backup")
    assert backup.read_bytes() == settings and stat.S_IMODE(backup.stat().st_mode) == 0o640
    assert f"backup of the previous file: {backup}" in "\n".join(report.lines())
    install.uninstall(scope, record=record)
    assert scope.settings.read_bytes() == settings and scope.state.read_bytes() == state
    assert stat.S_IMODE(scope.settings.stat().st_mode) == 0o640
    assert sorted(tree(tmp_path)) == ["home", "home/.claude", "home/.claude.json", "home/.claude/settings.json"]


def test_a_one_line_file_is_indented_and_restored_as_it_was(where):
    scope, record = where
    scope.state.write_text('{"numStartups":1}')
    install.install(scope, EXE, record=record)
    assert scope.state.read_text().startswith('{\n  "numStartups": 1,')
    install.uninstall(scope, record=record)
    assert scope.state.read_text() == '{"numStartups":1}'


def test_changes_made_after_install_survive_uninstall_which_backs_up_first(where):
    scope, record = where
    scope.state.write_text(json.dumps(STATE, indent=2))
    install.install(scope, EXE, record=record)
    state = json.loads(scope.state.read_text())
    state["numStartups"] = 8  # Claude Code writes this file all the time
    scope.state.write_text(json.dumps(state, indent=2))
    report = install.uninstall(scope, record=record)
    assert json.loads(scope.state.read_text()) == {**STATE, "numStartups": 8}
    backup = scope.state.with_name(".claude.json.memory-gate-backup")
    assert json.loads(backup.read_text())["mcpServers"]["memory-gate"] == SERVER
    assert report.files[1].backup == backup


@pytest.mark.parametrize("content, message", [
    (b'{"hooks": {,}', "is not valid JSON"),
    (b"[1, 2]", "holds a JSON list, not an object"),
    (b'{"a": NaN}', "is not valid JSON"),
    (b"\xff\xfe{}", "is not valid JSON"),
])
def test_a_file_that_is_not_a_json_object_is_refused_and_nothing_is_written(where, tmp_path, content, message):
    scope, record = where
    scope.settings.parent.mkdir()
    scope.settings.write_bytes(content)
    before = tree(tmp_path)
    with pytest.raises(FileError, match=message):
        install.install(scope, EXE, record=record)
    with pytest.raises(FileError, match=message):
        install.uninstall(scope, record=record)
    assert tree(tmp_path) == before


def test_a_settings_file_that_is_a_pipe_is_refused_and_stays_a_pipe(where, tmp_path):
    """Read, a pipe would hang the install; renamed over, a device (settings linked to /dev/null)
    would become a plain file."""
    scope, record = where
    scope.settings.parent.mkdir()
    os.mkfifo(scope.settings)
    with pytest.raises(FileError, match="is not a regular file"):
        install.install(scope, EXE, record=record)
    with pytest.raises(FileError, match="is not a regular file"):
        install.uninstall(scope, record=record)
    assert stat.S_ISFIFO(os.lstat(scope.settings).st_mode)


def test_a_wrong_shape_in_the_second_file_stops_both(where, tmp_path):
    scope, record = where
    scope.state.write_text('{"mcpServers": []}')
    before = tree(tmp_path)
    with pytest.raises(InstallError, match=r"\.claude\.json: mcpServers is not an object.*Nothing was changed"):
        install.install(scope, EXE, record=record)
    assert tree(tmp_path) == before


def test_an_empty_file_counts_as_an_empty_object(where):
    scope, record = where
    scope.state.write_bytes(b"")
    install.install(scope, EXE, record=record)
    install.uninstall(scope, record=record)
    assert scope.state.read_bytes() == b""


def test_a_symlinked_settings_file_stays_a_link(where, tmp_path):
    scope, record = where
    dotfiles = tmp_path / "dotfiles" / "settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"model": "opus"}\n')
    scope.settings.parent.mkdir()
    scope.settings.symlink_to(dotfiles)
    install.install(scope, EXE, record=record)
    assert scope.settings.is_symlink() and "hooks" in json.loads(dotfiles.read_text())
    install.uninstall(scope, record=record)
    assert scope.settings.is_symlink() and dotfiles.read_text() == '{"model": "opus"}\n'


def test_dry_run_writes_nothing(where, tmp_path):
    scope, record = where
    before = tree(tmp_path)
    report = install.install(scope, EXE, record=record, dry_run=True)
    assert report.changed and "would create" in "\n".join(report.lines())
    assert tree(tmp_path) == before
    install.install(scope, EXE, record=record)
    installed = tree(tmp_path)
    assert "would delete" in "\n".join(install.uninstall(scope, record=record, dry_run=True).lines())
    assert tree(tmp_path) == installed


def test_uninstall_without_an_install_says_so(where, tmp_path):
    scope, record = where
    report = install.uninstall(scope, record=record)
    assert not report.changed and "not installed" in report.lines()[0]
    assert tree(tmp_path) == {"home": None}


def test_render_keeps_tabs_and_unicode():
    assert render({"a": {"b": "ç"}}, b'{\n\t"a": 1\n}\n') == '{\n\t"a": {\n\t\t"b": "ç"\n\t}\n}\n'.encode()


# -- project scope -------------------------------------------------------------------------------


def test_a_project_is_keyed_by_its_git_root(tmp_path):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "src" / "deep").mkdir(parents=True)
    scope = scopes.project_scope(root / "src" / "deep", tmp_path / ".claude.json")
    assert scope.settings == root.resolve() / ".claude" / "settings.local.json"
    assert scope.server_at == ("projects", str(root.resolve())) and "git root" in scope.label
    plain = tmp_path / "plain"
    plain.mkdir()
    assert scopes.project_scope(plain, tmp_path / ".claude.json").server_at == ("projects", str(plain.resolve()))
    with pytest.raises(InstallError, match="no such folder"):
        scopes.project_scope(tmp_path / "missing", tmp_path / ".claude.json")


def test_a_project_install_creates_and_uninstall_removes_its_folder(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    state = tmp_path / ".claude.json"
    state.write_text(json.dumps(STATE, indent=2))
    record = tmp_path / "record.json"
    before = tree(tmp_path)
    scope = scopes.project_scope(project, state)
    install.install(scope, EXE, record=record)
    assert json.loads((project / ".claude" / "settings.local.json").read_text())["permissions"] == {"allow": RULES}
    assert json.loads(state.read_text())["projects"][str(project.resolve())] == {"mcpServers": {"memory-gate": SERVER}}
    install.uninstall(scope, record=record)
    assert tree(tmp_path) == before


def test_a_project_file_git_would_commit_is_pointed_out(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    scope = scopes.project_scope(tmp_path, tmp_path / "state.json")
    report = install.install(scope, EXE, record=tmp_path / "record.json")
    assert any("git does not ignore .claude/settings.local.json" in line for line in report.lines())
    (tmp_path / ".gitignore").write_text(".claude/*.local.json*\nstate.json*\nrecord.json\n")
    report = install.install(scopes.project_scope(tmp_path, tmp_path / "state.json"), "/new/memory-gate", record=tmp_path / "record.json")
    assert not any("git does not ignore" in line for line in report.lines())


# -- the executable and the CLI -------------------------------------------------------------------


def test_the_executable_is_the_running_one_as_an_absolute_path(tmp_path, monkeypatch):
    script = tmp_path / "bin" / "memory-gate"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    assert entries.executable("bin/memory-gate", "/usr/bin/python3") == str(script)
    assert entries.executable("/x/gate/__main__.py", str(tmp_path / "bin" / "python")) == str(script)


def test_the_default_executable_is_this_venvs():
    assert entries.executable("pytest", sys.executable) == str(Path(sys.executable).parent / "memory-gate")


def test_claude_code_folders_follow_claude_config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert (config.claude_dir({}), config.claude_state_file({})) == (f"{tmp_path}/.claude", f"{tmp_path}/.claude.json")
    assert (config.claude_dir({"CLAUDE_CONFIG_DIR": "/c"}), config.claude_state_file({"CLAUDE_CONFIG_DIR": "/c"})) == ("/c", "/c/.claude.json")


@pytest.fixture
def user_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in list(os.environ):
        if name.startswith(("CLAUDE", "MEMORY_GATE_")):
            monkeypatch.delenv(name)
    return home


def test_cli_install_and_uninstall(capsys, user_home):
    assert cli.main(["install", "--command", "memory-gate"]) == 0
    out = capsys.readouterr().out
    assert f"created {user_home}/.claude/settings.json" in out and f"created {user_home}/.claude.json" in out
    assert "hooks and server run `memory-gate` from PATH" in out
    assert json.loads((user_home / ".claude" / "settings.json").read_text())["hooks"] == expected_hooks("memory-gate")
    assert cli.main(["install", "--user", "--command", "memory-gate"]) == 0
    assert "already installed" in capsys.readouterr().out
    assert cli.main(["uninstall"]) == 0
    assert "deleted" in capsys.readouterr().out
    assert tree(user_home) == {}


def test_cli_refuses_a_broken_file_with_exit_1(capsys, user_home):
    (user_home / ".claude.json").write_text("{oops")
    assert cli.main(["install"]) == 1
    assert "is not valid JSON" in capsys.readouterr().err
    assert not (user_home / ".claude").exists()


def test_cli_project_and_user_are_exclusive(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["install", "--user", "--project", "."])
    assert exited.value.code == 2


# -- real Claude Code, with nothing but what install wrote ----------------------------------------


BIN = Path(sys.executable).parent


def path_without_venv() -> str:
    """PATH without this venv: hooks and server must be found through install's absolute path."""
    return os.pathsep.join(part for part in os.environ.get("PATH", "").split(os.pathsep) if Path(part) != BIN)


def memory_gate(box: Sandbox, *argv: str) -> str:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("CLAUDE", "MEMORY_GATE_", "ANTHROPIC"))}
    env.update(HOME=str(box.home), PATH=path_without_venv())
    result = subprocess.run([str(BIN / "memory-gate"), *argv], capture_output=True, text=True, env=env, cwd=box.project)
    assert result.returncode == 0, result.stderr
    return result.stdout


def held(run) -> list[str]:
    """What the Stop hook told the model when it held an answer."""
    return [last_user_text(body).split("Stop hook feedback:\n", 1)[1] for body in run.requests if "Stop hook feedback:\n" in last_user_text(body)]


def turns(box: Sandbox) -> list[tuple]:
    database = config.database_for(box.home / ".claude", box.project)
    with sqlite3.connect(database) as conn:
        return list(conn.execute("SELECT prompt, searched, wrote, holds, outcome FROM turns ORDER BY id"))


def search(terms: str):
    return reply(tool_use(f"{TOOLS}memory_search", {"terms": terms}))


def write(ops=(), kept=()):
    return reply(tool_use(f"{TOOLS}memory_write", {"ops": list(ops), "kept": list(kept)}))


def gated_turns(box: Sandbox) -> None:
    """A compliant turn goes straight through; an answer without a search is held once."""
    env = {"PATH": path_without_venv()}
    box.fake.add(search("deploy"), write([{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}]), "Noted.")
    run = box.run("Remember that deploys go through staging.", env=env)
    assert run.returncode == 0 and run.result_text == "Noted.", run.explain()
    assert len(run.requests) == 3 and held(run) == []
    # The init event may come before a slow server has connected ("pending" on a busy machine, on
    # 2.1.328 and 2.1.332 alike): the turn above, which used its tools, is the proof it connected.
    servers = run.of_type("system", "init")[0]["mcp_servers"]
    assert [server["name"] for server in servers] == ["memory-gate"], servers
    box.fake.add("A draft that skipped memory.", search("build"), write(), "The real answer.")
    run = box.run("Why does the build fail?", env=env)
    assert run.returncode == 0 and run.result_text == "The real answer.", run.explain()
    [message] = held(run)
    assert "has not searched memory" in message and f"{TOOLS}memory_search" in message
    assert turns(box) == [
        ("Remember that deploys go through staging.", 1, 1, 0, "met"),
        ("Why does the build fail?", 1, 1, 1, "met"),
    ]


def not_gated(box: Sandbox) -> None:
    box.fake.add("Plain answer.")
    run = box.run("Hello?", env={"PATH": path_without_venv()})
    assert run.result_text == "Plain answer." and held(run) == [] and len(run.requests) == 1
    assert run.of_type("system", "init")[0]["mcp_servers"] == []


@needs_claude
def test_claude_code_runs_the_gate_from_a_user_install(tmp_path):
    with Sandbox(tmp_path) as box:
        settings = box.home / ".claude" / "settings.json"
        settings.parent.mkdir()
        settings.write_text(json.dumps({"env": {"KEEP": "me"}, "permissions": {"allow": ["Bash(git status:*)"], "deny": []}}, indent=4))
        state = box.home / ".claude.json"
        state.write_text(json.dumps({"numStartups": 3, "mcpServers": {}}, indent=2))
        before = settings.read_bytes()
        out = memory_gate(box, "install", "--user")
        assert f"changed {settings}" in out and f"changed {state}" in out and str(BIN / "memory-gate") in out
        gated_turns(box)
        out = memory_gate(box, "uninstall")
        assert f"changed {settings}" in out and "- MCP server memory-gate" in out
        assert settings.read_bytes() == before
        # No backup or record left behind (Claude Code's own dotfiles, e.g. .last-cleanup, may come).
        assert sorted(path.name for path in settings.parent.iterdir() if path.is_file() and not path.name.startswith(".")) == ["settings.json"]
        assert json.loads(state.read_text())["mcpServers"] == {}
        not_gated(box)
        assert box.fake.errors == []


@needs_claude
def test_claude_code_runs_the_gate_from_a_project_install_in_an_untrusted_folder(tmp_path):
    with Sandbox(tmp_path) as box:
        out = memory_gate(box, "install", "--project", str(box.project))
        assert f"created {box.project}/.claude/settings.local.json" in out
        state = json.loads((box.home / ".claude.json").read_text())
        assert state["projects"][str(box.project.resolve())]["mcpServers"]["memory-gate"]["args"] == ["serve"]
        gated_turns(box)
        trust = json.loads((box.home / ".claude.json").read_text())["projects"][str(box.project.resolve())]
        assert not trust.get("hasTrustDialogAccepted"), "the folder was never trusted"
        memory_gate(box, "uninstall", "--project", str(box.project))
        assert not (box.project / ".claude").exists()
        assert "mcpServers" not in json.loads((box.home / ".claude.json").read_text()).get("projects", {}).get(str(box.project.resolve()), {})
        not_gated(box)
        assert box.fake.errors == []
