"""Claude Code's own auto memory beside memory-gate's (gate.claude.automemory): the setting install
writes and uninstall takes out, what doctor reads as in force, and the files taken in as facts.
Its effect on the real Claude Code is checked end to end in tests/test_e2e_host.py."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from gate import config
from gate.claude import automemory, install
from gate.cli import main as cli

EXE = "/opt/mg/bin/memory-gate"


def test_install_turns_auto_memory_off_and_uninstall_takes_out_only_what_it_added():
    added = install.add_to_settings({"model": "opus"}, EXE)
    assert added.data["autoMemoryEnabled"] is False and ("autoMemoryEnabled",) in added.added
    back = install.remove_from_settings(added.data, set(added.added))
    assert back.data is None or back.data == {"model": "opus"}


def test_an_owners_own_false_stays_through_uninstall():
    added = install.add_to_settings({"autoMemoryEnabled": False}, EXE)
    assert ("autoMemoryEnabled",) not in added.added
    assert install.remove_from_settings(added.data, set(added.added)).data["autoMemoryEnabled"] is False


def test_an_owners_true_is_turned_off_and_said():
    added = install.add_to_settings({"autoMemoryEnabled": True}, EXE, plugin=True)
    assert added.data == {"autoMemoryEnabled": False}
    assert added.changes[0].startswith("~ autoMemoryEnabled: false, was true")


def test_a_value_the_owner_changed_after_install_stands():
    data, changes, notes = automemory.turn_back({"autoMemoryEnabled": True}, {("autoMemoryEnabled",)})
    assert data == {"autoMemoryEnabled": True} and changes == [] and "changed after install" in notes[0]


def test_beside_the_plugin_only_the_setting_goes_in():
    edit = install.add_to_settings({}, EXE, plugin=True)
    assert edit.data == {"autoMemoryEnabled": False} and edit.added == [("autoMemoryEnabled",)]


@pytest.mark.parametrize(("env", "files", "on", "by"), [
    ({}, [], True, "default"),
    ({}, [{"autoMemoryEnabled": False}], False, "settings-0.json"),
    ({}, [{"autoMemoryEnabled": False}, {"autoMemoryEnabled": True}], True, "settings-1.json"),
    ({automemory.ENV: "1"}, [{"autoMemoryEnabled": True}], False, automemory.ENV),
    ({automemory.ENV: "0"}, [{"autoMemoryEnabled": False}], True, "forces it on"),
])
def test_in_force_reads_as_claude_code_does(tmp_path, env, files, on, by):
    paths = []
    for index, data in enumerate(files):
        paths.append(tmp_path / f"settings-{index}.json")
        paths[-1].write_text(json.dumps(data))
    found = automemory.in_force([tmp_path / "absent.json", *paths], env)
    assert found.on is on and by in found.by


AUTO_FILE = """---
name: deploy-flow
description: How deploys work
metadata:
  type: feedback
---

Deploys go through staging.

**Why:** main is protected.
"""


def test_a_file_becomes_a_fact_named_and_kinded_by_its_front_matter(tmp_path):
    (tmp_path / "deploy.md").write_text(AUTO_FILE)
    [fact] = automemory.read(tmp_path / "deploy.md", 600).facts
    assert fact == {"topic": "deploy-flow", "kind": "decision",
                    "text": "How deploys work\n\nDeploys go through staging.\n\n**Why:** main is protected."}


def test_the_index_keeps_its_own_lines_not_its_pointers(tmp_path):
    (tmp_path / "MEMORY.md").write_text("- [Deploy](deploy.md) - how deploys work\nTests run with -q.\n")
    (tmp_path / "deploy.md").write_text(AUTO_FILE)
    assert [path.name for path in automemory.files(tmp_path)] == ["MEMORY.md", "deploy.md"]
    assert automemory.read(tmp_path / "MEMORY.md", 600).facts == [{"topic": "MEMORY", "kind": "state", "text": "Tests run with -q."}]


def test_long_text_is_cut_between_paragraphs_then_words():
    pieces = automemory.split("a " * 200 + "\n\n" + "b" * 50 + "\n\n" + "word " * 300, 600)
    assert all(len(piece) <= 600 for piece in pieces) and len(pieces) >= 3
    assert " ".join(" ".join(pieces).split()) == " ".join(("a " * 200 + "b" * 50 + " " + "word " * 300).split())


@pytest.fixture
def owner(tmp_path, monkeypatch):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    for name in list(os.environ):
        if name.startswith(("CLAUDE", "MEMORY_GATE_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    folder = home / ".claude" / "projects" / config.project_key(project) / "memory"
    folder.mkdir(parents=True)
    return folder


def test_import_auto_memory_takes_each_file_in_logged_once_and_leaves_the_files(owner, capsys):
    (owner / "MEMORY.md").write_text("- [Deploy](deploy.md) - how deploys work\n")
    (owner / "deploy.md").write_text(AUTO_FILE)
    (owner / "token.md").write_text("---\nname: token\n---\nthe token is ghp_abcdefghijklmnopqrstuvwxyz0123456789\n")
    before = {path.name: path.read_bytes() for path in owner.iterdir()}
    assert cli.main(["import-auto-memory"]) == 0
    out = capsys.readouterr().out
    assert "imported 1 fact" in out and "token.md: 0 facts; left out: text holds what looks like a GitHub token" in out
    with sqlite3.connect(owner / "memory.db") as conn:
        assert list(conn.execute("SELECT topic, kind FROM facts")) == [("deploy-flow", "decision")]
    [line] = (owner / "write.log").read_text().splitlines()
    assert json.loads(line)["after"]["topic"] == "deploy-flow"
    assert cli.main(["import-auto-memory"]) == 0
    assert "imported 0 facts" in capsys.readouterr().out and len((owner / "write.log").read_text().splitlines()) == 1
    assert {path.name: path.read_bytes() for path in owner.iterdir() if path.suffix == ".md"} == before


def test_install_beside_the_plugin_and_uninstall_through_the_cli(owner, capsys):
    settings = owner.parents[2] / "settings.json"
    assert cli.main(["install", "--plugin"]) == 0
    assert json.loads(settings.read_text()) == {"autoMemoryEnabled": False}
    assert not (owner.parents[3] / ".claude.json").exists(), "the plugin brings the server"
    assert cli.main(["uninstall"]) == 0
    assert not settings.exists()
