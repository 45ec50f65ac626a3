"""`memory-gate doctor` on Claude Code's side, against the real Claude Code: each way memory can
be off or doubled is a problem with its mend, and a sound install is all well."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from claude_harness import CLAUDE, OFFLINE_ENV, needs_claude
from conftest import REPO

from gate.doctor import checks as doctor, wiring

BIN = Path(sys.executable).parent
# The memory-gate under test, also where BIN's is another checkout's editable install.
CODE = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}


def test_the_tested_version_is_the_one_the_tests_pin():
    pinned = json.loads((REPO / "package.json").read_text())["devDependencies"]["@anthropic-ai/claude-code"]
    assert wiring.TESTED == pinned


def test_a_finding_states_the_fact_then_the_mend():
    finding = doctor.Finding("fact 12 is gone", doctor.WARNING, "Run `memory-gate undo`")
    assert finding.line() == "WARNING: fact 12 is gone. Run `memory-gate undo`"
    assert finding.to_json() == {"what": "fact 12 is gone", "severity": "warning", "mend": "Run `memory-gate undo`"}


class User:
    """An empty HOME with Claude Code and memory-gate, and a project; runs doctor there."""

    def __init__(self, root: Path):
        self.home, self.project = root / "home", root / "project"
        self.home.mkdir()
        self.project.mkdir()
        self.env = {"HOME": str(self.home), "PATH": os.pathsep.join([str(BIN), "/usr/bin", "/bin"]), **OFFLINE_ENV, **CODE}

    def run(self, *argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(argv, cwd=self.project, capture_output=True, text=True, env=self.env, timeout=120)

    def doctor(self) -> tuple[int, dict, list[dict]]:
        done = self.run(str(BIN / "memory-gate"), "doctor", "--json", "--claude", CLAUDE)
        report = json.loads(done.stdout)
        return done.returncode, report["claude_code"], report["findings"]

    def plugin_from(self, folder: Path) -> None:
        assert self.run(CLAUDE, "plugin", "marketplace", "add", str(folder)).returncode == 0
        assert self.run(CLAUDE, "plugin", "install", "memory-gate@memory-gate").returncode == 0


def problems(findings: list[dict]) -> list[str]:
    return [f"{finding['what']}. {finding['mend']}" for finding in findings if finding["severity"] == "problem"]


def marketplace_copy(root: Path, installed: str | None) -> Path:
    """The plugins as scripts/install leaves them: copied, each told where memory-gate is."""
    copy = root / "marketplace"
    shutil.copytree(REPO / ".claude-plugin", copy / ".claude-plugin")
    shutil.copytree(REPO / "mods", copy / "mods", ignore=shutil.ignore_patterns("types", "installed"))
    if installed:
        for plugin in (copy / "mods").iterdir():
            (plugin / "bin" / "installed").write_text(installed + "\n")
    return copy


@needs_claude
def test_no_plugin_and_no_settings_is_memory_off(tmp_path):
    code, report, findings = User(tmp_path).doctor()
    assert code == 1 and report["version"] == wiring.TESTED
    assert problems(findings) == ["Claude Code has no memory-gate: no plugin enabled, no settings install, so memory is off "
                                  "in every session. Run scripts/install (the plugin), or `memory-gate install` (settings, no plugin)"]


@needs_claude
def test_a_settings_install_is_all_well_and_its_server_lists_the_tools(tmp_path):
    user = User(tmp_path)
    assert user.run(str(BIN / "memory-gate"), "install").returncode == 0
    code, report, findings = user.doctor()
    assert (code, findings) == (0, [])
    assert report["servers"] == {str(BIN / "memory-gate"): {"way": "settings (user)", "tools": ["memory_search", "memory_write"]}}


@needs_claude
def test_the_installed_plugin_is_all_well_and_install_refuses_to_wire_it_twice(tmp_path):
    user = User(tmp_path)
    user.plugin_from(marketplace_copy(tmp_path, str(BIN / "memory-gate")))
    assert user.run(str(BIN / "memory-gate"), "install", "--plugin").returncode == 0  # as scripts/install does
    code, report, findings = user.doctor()
    assert (code, findings) == (0, []), findings
    assert report["plugin"]["runs"] == {"command": str(BIN / "memory-gate"), "found": "recorded by scripts/install"}
    assert list(report["servers"].values()) == [{"way": "plugin", "tools": ["memory_search", "memory_write"]}]
    # Beside the enabled plugin, install refuses (its server would take the name the mod's gate
    # tool needs), so memory is never wired in twice; doctor stays clean.
    refused = user.run(str(BIN / "memory-gate"), "install")
    assert refused.returncode == 1 and "plugin" in refused.stderr + refused.stdout
    code, _, findings = user.doctor()
    assert (code, findings) == (0, []), findings


@needs_claude
def test_a_plugin_read_from_a_checkout_that_moved_fails_and_says_how_to_mend(tmp_path):
    user = User(tmp_path)
    checkout = marketplace_copy(tmp_path, None)
    user.plugin_from(checkout)
    _, _, findings = user.doctor()
    assert any(finding["severity"] == "warning" and "read in place from" in finding["what"] for finding in findings)
    checkout.rename(tmp_path / "moved")
    code, _, findings = user.doctor()
    [failed, *_] = problems(findings)
    assert code == 1 and "fails to load" in failed and "run scripts/install" in failed


@needs_claude
def test_a_plugin_that_cannot_find_memory_gate_is_memory_off(tmp_path):
    user = User(tmp_path)
    user.plugin_from(marketplace_copy(tmp_path, str(tmp_path / "gone" / "memory-gate")))
    user.env["PATH"] = "/usr/bin:/bin"
    done = user.run(str(BIN / "memory-gate"), "doctor", "--json", "--claude", CLAUDE)
    found = problems(json.loads(done.stdout)["findings"])
    assert done.returncode == 1 and any("cannot find memory-gate" in problem and "which is gone" in problem for problem in found), found


def test_without_claude_code_doctor_warns_and_checks_memory(tmp_path):
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "MEMORY_GATE_HOME": str(tmp_path / "mg"),
           **CODE}
    done = subprocess.run([str(BIN / "memory-gate"), "doctor"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0 and "WARNING: Claude Code (`claude`) is not on PATH" in done.stdout and "no problems" in done.stdout
    assert "install_clash:" not in done.stdout  # nothing clashes: no heading over nothing


def test_a_claude_named_with_claude_that_is_not_there_is_a_problem(tmp_path):
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "MEMORY_GATE_HOME": str(tmp_path / "mg"),
           **CODE}
    done = subprocess.run([str(BIN / "memory-gate"), "doctor", "--claude", "/nonexistent"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 1 and "no problems" not in done.stdout and "not on PATH" not in done.stdout
    assert "PROBLEM: --claude /nonexistent names no command that can be run" in done.stdout


def test_a_claude_code_too_old_for_the_mod_is_a_problem_with_the_exact_mend(tmp_path):
    fake = tmp_path / "claude"
    fake.write_text('#!/bin/sh\ncase "$1" in --version) echo "2.1.197 (Claude Code)";; plugin) echo "[]";; esac\n')
    fake.chmod(0o755)
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", **CODE}
    done = subprocess.run([str(BIN / "memory-gate"), "doctor", "--json", "--claude", str(fake)], capture_output=True, text=True, env=env, cwd=tmp_path)
    found = problems(json.loads(done.stdout)["findings"])
    assert done.returncode == 1
    assert any(problem.startswith("Claude Code 2.1.197 cannot run memory-gate's mod (mods need 2.1.287 or later)")
               and problem.endswith(f"Run: npm install -g @anthropic-ai/claude-code@{wiring.TESTED}") for problem in found), found


@needs_claude
def test_doctor_says_whether_claude_codes_auto_memory_is_in_force(tmp_path):
    user = User(tmp_path)
    folder = user.home / ".claude" / "projects" / config_key(user.project) / "memory"
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("Tests run with -q.\n")
    user.plugin_from(marketplace_copy(tmp_path, str(BIN / "memory-gate")))
    code, report, findings = user.doctor()
    assert report["auto_memory"] == {"on": True, "by": "Claude Code's default (no setting)", "files": ["MEMORY.md"]}
    assert [finding["severity"] for finding in findings] == ["warning", "note"], findings
    assert "memory-gate install --plugin" in findings[0]["mend"] and "memory-gate import-auto-memory" in findings[1]["mend"]
    assert user.run(str(BIN / "memory-gate"), "install", "--plugin").returncode == 0
    code, report, findings = user.doctor()
    assert report["auto_memory"]["on"] is False and "autoMemoryEnabled: false in" in report["auto_memory"]["by"]
    assert code == 0 and [finding["severity"] for finding in findings] == ["note"], findings


def config_key(folder: Path) -> str:
    from gate import config

    return config.project_key(folder)
