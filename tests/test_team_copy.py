"""`memory-gate team push` and `team pull` on a real PostgreSQL: a local memory with a history
(inserts, an update, a delete, an undo) pushed into a team's project and pulled back into a new
file, and every command telling the same story of each."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_team_commands import stable, tell

from gate import config
from gate.cli import main as cli

KEY = "github.com/acme/api"


@pytest.fixture
def memory(tmp_path, postgres_url, monkeypatch):
    project_dir = tmp_path / "project"
    project_dir.mkdir()
    monkeypatch.chdir(project_dir)
    for name in [name for name in os.environ if name.startswith(("MEMORY_GATE_", "CLAUDE"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("MEMORY_GATE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MEMORY_GATE_MEMBER", "ana@laptop")
    tell(Path(config.database_for(tmp_path / "home", project_dir)), None)
    return postgres_url


def run(capsys, monkeypatch, *argv, team: str | None = None):
    with monkeypatch.context() as patched:
        if team:
            patched.setenv("MEMORY_GATE_DB", team)
            patched.setenv("MEMORY_GATE_PROJECT", KEY)
        code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_push_copies_facts_and_history_and_pull_copies_them_back(capsys, monkeypatch, memory, tmp_path):
    url = memory
    code, out, err = run(capsys, monkeypatch, "log", "--json")
    [entry] = [e for e in json.loads(out) if e["op"] == "update"]
    assert run(capsys, monkeypatch, "undo", entry["entry"])[0] == 0  # an undo, with its `undoes`, in the story

    code, out, err = run(capsys, monkeypatch, "team", "push", team=url)
    assert code == 0, err
    assert "pushed 1 facts and 5 logged changes" in out

    for argv in (["show", "--json"], ["log", "--json"], ["history", "1", "--json"], ["history", "2", "--json"]):
        local = json.loads(run(capsys, monkeypatch, *argv)[1])
        team = json.loads(run(capsys, monkeypatch, *argv, team=url)[1])
        if argv[0] == "show":
            assert team == local  # ids, texts and bookkeeping as they were
        elif argv[0] == "log":
            assert stable(team) == stable(local) and [e["entry"] for e in team] == [e["entry"] for e in local]
            assert {e["member"] for e in team} == {"ana@laptop"}
        else:
            assert [(c["entry"], c["op"], c.get("after")) for c in team] == [(c["entry"], c["op"], c.get("after")) for c in local]

    # An entry pushed can be undone on the team; a new fact never takes a deleted fact's id.
    lines = tmp_path / "new.jsonl"
    lines.write_text(json.dumps({"topic": "ci", "kind": "state", "text": "CI runs on every push."}) + "\n")
    code, out, err = run(capsys, monkeypatch, "import", "--json", str(lines), team=url)
    assert code == 0 and json.loads(out)["ids"] == [3, 3], err

    code, out, err = run(capsys, monkeypatch, "team", "push", team=url)
    assert code == 1 and "already holds 2 facts" in err and "--new-ids" in err

    copy = tmp_path / "copy.db"
    code, out, err = run(capsys, monkeypatch, "team", "pull", "--to", str(copy), team=url)
    assert code == 0 and "pulled 2 facts and 6 changes" in out, err
    team_log = json.loads(run(capsys, monkeypatch, "log", "--json", team=url)[1])
    copy_log = json.loads(run(capsys, monkeypatch, "--db", str(copy), "log", "--json")[1])
    assert stable(copy_log) == stable(team_log) and all(e["committed"] for e in copy_log)
    assert json.loads(run(capsys, monkeypatch, "--db", str(copy), "show", "--json")[1]) == \
        json.loads(run(capsys, monkeypatch, "show", "--json", team=url)[1])
    # The copy is a sound memory: write.log agrees with its writes, and its index finds the facts.
    code, out, err = run(capsys, monkeypatch, "--db", str(copy), "doctor", "--no-claude")
    assert code == 0, out + err
    found = json.loads(run(capsys, monkeypatch, "--db", str(copy), "search", "--json", "ci")[1])
    assert [f["id"] for f in found] == [3]

    code, out, err = run(capsys, monkeypatch, "team", "pull", "--to", str(copy), team=url)
    assert code == 1 and "already holds a memory" in err


def test_push_and_pull_need_a_team(capsys, monkeypatch, memory):
    code, _, err = run(capsys, monkeypatch, "team", "push")
    assert code == 1 and "team connect URL` first" in err
