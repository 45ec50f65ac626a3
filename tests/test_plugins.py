"""The two plugins and the settings hooks agree: one set of hook definitions (hooks/hooks.json),
one launcher, and every command Claude Code runs goes through it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from claude_harness import Sandbox, needs_claude
from conftest import REPO

from gate.claude import entries

LAUNCHER = '"${CLAUDE_PLUGIN_ROOT}/bin/memory-gate"'
PLUGINS = ("memory-gate", "injected-context")


def plugin_file(plugin: str, *path: str):
    return REPO.joinpath("mods", plugin, *path)


def test_the_plugins_hooks_are_hooks_json_under_the_plugins_names():
    plugin = plugin_file("memory-gate", "hooks", "hooks.json").read_text()
    as_settings = plugin.replace(LAUNCHER.replace('"', '\\"'), "memory-gate").replace("mcp__plugin_memory-gate_memory__", entries.TOOLS)
    assert json.loads(as_settings)["hooks"] == entries.settings_hooks()


def test_install_writes_hooks_json_with_the_executables_path():
    groups = entries.hook_groups("/opt/mg/bin/memory-gate")
    assert set(groups) == set(entries.settings_hooks())
    for event, (group,) in entries.settings_hooks().items():
        commands = [hook["command"] for hook in groups[event]["hooks"]]
        assert commands == [hook["command"].replace("memory-gate", "/opt/mg/bin/memory-gate", 1) for hook in group["hooks"]]


@pytest.mark.parametrize("plugin", PLUGINS)
def test_every_command_a_plugin_runs_goes_through_its_launcher(plugin):
    hooks = json.loads(plugin_file(plugin, "hooks", "hooks.json").read_text())["hooks"]
    commands = [hook["command"] for groups in hooks.values() for group in groups for hook in group["hooks"]]
    assert commands and all(command.startswith(LAUNCHER + " ") for command in commands)
    assert '$.process.run([launcher(env), ' in plugin_file(plugin, "hooks", "register.js").read_text()
    assert '"memory-gate"' not in plugin_file(plugin, "hooks", "register.js").read_text().replace('"/bin/memory-gate"', "").replace(': "memory-gate"', "")
    launcher = plugin_file(plugin, "bin", "memory-gate")
    assert os.access(launcher, os.X_OK)
    assert launcher.read_bytes() == plugin_file("memory-gate", "bin", "memory-gate").read_bytes(), "the two launchers are one file"


def test_the_plugins_server_runs_through_the_launcher():
    server = json.loads(plugin_file("memory-gate", ".mcp.json").read_text())["mcpServers"]["memory"]
    # alwaysLoad: the memory tools in front, never announced to the model as deferred (2.1.332).
    assert server == {"command": "${CLAUDE_PLUGIN_ROOT}/bin/memory-gate", "args": ["serve"], "alwaysLoad": True}


def launch(tmp_path, *argv, path="/usr/bin:/bin", installed=None, env=None, stdin=None):
    """Run a copy of the launcher, as Claude Code would, with the given PATH (and `env` beside
    it, `stdin` as the hook's input)."""
    folder = tmp_path / "plugin" / "bin"
    folder.mkdir(parents=True, exist_ok=True)
    launcher = folder / "memory-gate"
    launcher.write_bytes(plugin_file("memory-gate", "bin", "memory-gate").read_bytes())
    launcher.chmod(0o755)
    if installed is not None:
        (folder / "installed").write_text(f"{installed}\n")
    return subprocess.run(
        [str(launcher), *argv], capture_output=True, text=True, env={"PATH": path, **(env or {})},
        timeout=10, **({"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}),
    )


def fake_memory_gate(folder, name="memory-gate"):
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text(f'#!/bin/sh\necho "{folder} $*"\n')
    script.chmod(0o755)
    return script


def test_the_launcher_runs_the_recorded_command_first(tmp_path):
    recorded = fake_memory_gate(tmp_path / "venv" / "bin")
    on_path = fake_memory_gate(tmp_path / "elsewhere")
    result = launch(tmp_path, "hook", "Stop", path=f"{on_path.parent}:/usr/bin:/bin", installed=recorded)
    assert result.returncode == 0 and result.stdout == f"{recorded.parent} hook Stop\n"


def test_the_launcher_falls_back_to_path_and_never_to_itself(tmp_path):
    on_path = fake_memory_gate(tmp_path / "elsewhere")
    itself = tmp_path / "plugin" / "bin"
    result = launch(tmp_path, "serve", path=f"{itself}:{on_path.parent}:/usr/bin:/bin", installed=tmp_path / "gone")
    assert result.returncode == 0 and result.stdout == f"{on_path.parent} serve\n"


def python_command(folder, lean: bool):
    """A command like bin/memory-gate as pip installs it (its first line this Python), saying
    whether it was started without site; `lean`: with bin/memory-gate's second line."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "memory-gate"
    marker = "# memory-gate: lean under -S\n" if lean else ""
    script.write_text(f"#!{sys.executable}\n{marker}import sys\nprint(sys.flags.no_site, *sys.argv[1:])\n")
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("lean, argv, without_site", [
    (True, ("hook", "PreToolUse"), 1),
    (True, ("inject", "Submit"), 1),
    (True, ("serve",), 0),  # the server's packages may need what site does
    (True, ("doctor",), 0),
    (False, ("hook", "PreToolUse"), 0),  # a command that does not say it can: as it is
])
def test_the_launcher_starts_a_hook_without_site_when_the_command_says_it_can(tmp_path, lean, argv, without_site):
    recorded = python_command(tmp_path / "venv" / "bin", lean)
    result = launch(tmp_path, *argv, installed=recorded)
    assert result.returncode == 0 and result.stdout == f"{without_site} {' '.join(argv)}\n", result.stderr
    on_path = launch(tmp_path, *argv, path=f"{recorded.parent}:/usr/bin:/bin", installed=tmp_path / "gone")
    assert on_path.stdout == result.stdout, on_path.stderr


SESSION = "0f3c2a1e-5b7d-4e8f-9a6b-1c2d3e4f5a6b"


@pytest.mark.parametrize("event", ["PreToolUse", "Stop"])
def test_a_hook_the_mod_marked_done_is_answered_without_memory_gate(tmp_path, event):
    """The mod did the hook's work and left its mark: the launcher takes the mark and answers,
    with the command it would run never started; the next run of the hook, unmarked, runs it."""
    recorded = fake_memory_gate(tmp_path / "venv" / "bin")
    data = tmp_path / "data"
    mark = data / "done" / f"{event}-{SESSION}"
    mark.parent.mkdir(parents=True)
    mark.write_text("1")
    env = {"CLAUDE_PLUGIN_DATA": str(data), "CLAUDE_CODE_SESSION_ID": SESSION}
    payload = json.dumps({"session_id": SESSION, "last_assistant_message": "x" * 200_000})  # past a pipe's buffer
    result = launch(tmp_path, "hook", event, installed=recorded, env=env, stdin=payload)
    assert (result.returncode, result.stdout, result.stderr) == (0, '{"suppressOutput": true}\n', "")
    assert mark.read_text() == ""  # taken
    again = launch(tmp_path, "hook", event, installed=recorded, env=env, stdin=payload)
    assert again.stdout == f"{recorded.parent} hook {event}\n"


@pytest.mark.parametrize("argv, env", [
    (("hook", "UserPromptSubmit"), {}),  # no other hook is ever skipped
    (("hook", "Hold"), {}),
    (("hook", "Stop"), {"CLAUDE_CODE_SESSION_ID": "../../etc/x"}),  # a session id that is no plain name
    (("hook", "Stop"), {"CLAUDE_CODE_SESSION_ID": ""}),
    (("hook", "Stop"), {"CLAUDE_PLUGIN_DATA": ""}),  # outside the plugin
])
def test_a_mark_is_honoured_only_for_its_hook_and_a_plain_session(tmp_path, argv, env):
    recorded = fake_memory_gate(tmp_path / "venv" / "bin")
    data = tmp_path / "data"
    (data / "done").mkdir(parents=True)
    for hook in ("UserPromptSubmit", "Hold", "Stop", "PreToolUse"):
        (data / "done" / f"{hook}-{SESSION}").write_text("1")
    (data / "done" / "Stop-..").mkdir()  # where done/Stop-../../etc/x would lead, a mark
    (data / "done" / "etc").mkdir()
    (data / "done" / "etc" / "x").write_text("1")
    full = {"CLAUDE_PLUGIN_DATA": str(data), "CLAUDE_CODE_SESSION_ID": SESSION, **env}
    result = launch(tmp_path, *argv, installed=recorded, env=full)
    assert result.stdout == f"{recorded.parent} {' '.join(argv)}\n", result.stderr


def test_an_empty_mark_runs_the_hook(tmp_path):
    recorded = fake_memory_gate(tmp_path / "venv" / "bin")
    data = tmp_path / "data"
    (data / "done").mkdir(parents=True)
    (data / "done" / f"Stop-{SESSION}").write_text("")  # the mod cleared it: a new step began
    env = {"CLAUDE_PLUGIN_DATA": str(data), "CLAUDE_CODE_SESSION_ID": SESSION}
    assert launch(tmp_path, "hook", "Stop", installed=recorded, env=env).stdout == f"{recorded.parent} hook Stop\n"


def test_without_memory_gate_the_prompt_hook_says_memory_is_off(tmp_path):
    result = launch(tmp_path, "hook", "UserPromptSubmit", "--tools", "x", installed=tmp_path / "gone")
    assert result.returncode == 0
    message = json.loads(result.stdout)["systemMessage"]
    assert "memory is off" in message and "scripts/install" in message and f"recorded {tmp_path / 'gone'}" in message
    for event in ("UserPromptSubmit", "Submit"):  # the settings hook's event, the mod's
        result = launch(tmp_path, "inject", event)
        assert "injected-context is off" in json.loads(result.stdout)["systemMessage"]


def _off_message(launcher: Path) -> str:
    result = subprocess.run([str(launcher), "hook", "UserPromptSubmit"], capture_output=True, text=True,
                            env={"PATH": "/usr/bin:/bin"}, stdin=subprocess.DEVNULL, timeout=10)
    return json.loads(result.stdout)["systemMessage"]


def _checkout(root: Path) -> Path:
    """A checkout's layout: scripts/install beside mods/memory-gate/bin/memory-gate."""
    (root / "scripts").mkdir(parents=True)
    (root / "scripts" / "install").write_text("#!/bin/sh\n")
    (root / "scripts" / "install").chmod(0o755)
    folder = root / "mods" / "memory-gate" / "bin"
    folder.mkdir(parents=True)
    (folder / "memory-gate").write_bytes(plugin_file("memory-gate", "bin", "memory-gate").read_bytes())
    (folder / "memory-gate").chmod(0o755)
    return folder / "memory-gate"


def test_memory_off_names_a_mend_the_owner_can_run_from_where_they_are(tmp_path):
    # The plugin run from a checkout: that checkout's scripts/install, by its full path.
    message = _off_message(_checkout(tmp_path / "checkout"))
    assert f"To mend: run {tmp_path / 'checkout' / 'scripts' / 'install'} " in message
    assert "memory-gate doctor" not in message  # not a mend while memory-gate is not installed
    # A copy scripts/install made, told which checkout it came from: that one, while it is there.
    copy = launch(tmp_path / "copy", "hook", "UserPromptSubmit", installed=tmp_path / "gone")
    launcher = tmp_path / "copy" / "plugin" / "bin" / "memory-gate"
    (launcher.parent / "checkout").write_text(f"{tmp_path / 'checkout'}\n")
    assert f"To mend: run {tmp_path / 'checkout' / 'scripts' / 'install'} " in _off_message(launcher)
    (launcher.parent / "checkout").write_text(f"{tmp_path / 'moved'}\n")
    assert "To mend: run scripts/install in a memory-gate checkout" in _off_message(launcher)
    assert "To mend: run scripts/install in a memory-gate checkout" in json.loads(copy.stdout)["systemMessage"]


@pytest.mark.parametrize("argv", [("hook", "Stop"), ("hook", "Hold"), ("inject", "Answered")])
def test_without_memory_gate_the_other_hooks_stay_out_of_the_way(tmp_path, argv):
    result = launch(tmp_path, *argv)
    assert (result.returncode, result.stdout) == (0, "")


def test_without_memory_gate_the_server_exits_naming_the_mend(tmp_path):
    result = launch(tmp_path, "serve")
    assert result.returncode == 1 and "memory is off" in result.stderr and "scripts/install" in result.stderr


# -- real Claude Code, with no memory-gate on its PATH ------------------------------------------

BARE_PATH = "/usr/bin:/bin"  # no venv: what a fresh account's Claude Code has


def copied_plugin(tmp_path, installed=None):
    """The plugin as scripts/install leaves it: a copy, told where memory-gate is."""
    import shutil

    copy = tmp_path / "plugins" / "memory-gate"
    shutil.copytree(plugin_file("memory-gate"), copy, ignore=shutil.ignore_patterns("types", "installed"))
    if installed is not None:
        (copy / "bin" / "installed").write_text(f"{installed}\n")
    return copy


def memory_is_off(run) -> list[str]:
    return [event["content"] for event in run.of_type("system", "informational") if "memory is off" in event.get("content", "")]


@needs_claude
def test_the_plugin_finds_the_recorded_memory_gate_whatever_the_path(tmp_path):
    import sys

    from fake_anthropic import reply, tool_use

    plugin = copied_plugin(tmp_path, installed=os.path.join(os.path.dirname(sys.executable), "memory-gate"))
    tools = "mcp__plugin_memory-gate_memory__"
    with Sandbox(tmp_path / "box") as box:
        box.fake.add(
            reply(tool_use(tools + "memory_search", {"terms": "deploy"})),
            reply(tool_use(tools + "memory_write", {"ops": [{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}], "kept": []})),
            "Noted.",
        )
        run = box.run("Remember that deploys go through staging.", plugin_dirs=[plugin], env={"PATH": BARE_PATH})
        assert run.result_text == "Noted.", run.explain()
        servers = {server["name"]: server["status"] for server in run.of_type("system", "init")[0]["mcp_servers"]}
        assert servers["plugin:memory-gate:memory"] == "connected" and memory_is_off(run) == []
        assert [result.get("is_error", False) for result in run.tool_results()] == [False, False]
        assert box.fake.errors == []


@needs_claude
def test_with_memory_off_the_session_tells_one_story(tmp_path):
    """No memory-gate where the plugin can find it: the memory server fails and each prompt says
    memory is off, with a mend to run from here; the mod's own gate tool is never registered, so
    /mcp does not show it connected beside the failed server, and no request offers it."""
    plugin = copied_plugin(tmp_path)
    (plugin / "bin" / "checkout").write_text(f"{REPO}\n")
    with Sandbox(tmp_path / "box") as box:
        box.fake.add("First answer.", "Second answer.")
        with box.session(plugin_dirs=[plugin], env={"PATH": BARE_PATH}, debug=True) as session:
            first = session.send("Hello?")
            second = session.send("And again?")
        for run in (first, second):
            assert run.result_text in ("First answer.", "Second answer."), run.explain()
            [message] = memory_is_off(run)
            assert f"To mend: run {REPO / 'scripts' / 'install'} " in message and "memory-gate doctor" not in message
        assert second.requests and all(
            not any(tool.get("name", "").startswith("mcp__memory-gate__") for tool in body.get("tools", []))
            for body in first.requests + second.requests
        )
        servers = {server["name"]: server["status"] for server in first.of_type("system", "init")[0]["mcp_servers"]}
        assert servers == {"plugin:memory-gate:memory": "failed"}, servers
        assert box.fake.errors == []


@needs_claude
def test_without_memory_gate_the_session_says_memory_is_off_and_the_turn_goes_on(tmp_path):
    plugin = copied_plugin(tmp_path)
    with Sandbox(tmp_path / "box") as box:
        box.fake.add("Plain answer.")
        run = box.run("Hello?", plugin_dirs=[plugin], env={"PATH": BARE_PATH})
        assert run.returncode == 0 and run.result_text == "Plain answer.", run.explain()
        [message] = memory_is_off(run)
        assert message.startswith("UserPromptSubmit says: memory-gate: memory is off") and "scripts/install" in message
        servers = {server["name"]: server["status"] for server in run.of_type("system", "init")[0]["mcp_servers"]}
        assert servers["plugin:memory-gate:memory"] == "failed"
        assert box.fake.errors == []
