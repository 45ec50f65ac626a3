"""The owner's commands on a team's memory: the same story told by a local memory and by a
team's (real PostgreSQL), and `search`, `show`, `review`, `log`, `history`, `undo`, `export` and
`stats` giving the same answers on both, apart from the write ids and times they were made at."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gate import config
from gate.cli import main as cli
from gate.engine import postgres, store
from gate.engine.teamfacts import TeamFacts, Who, project
from gate.memory import audit, ledger, stores
from gate.search import lookup
from gate.serve import tools

KEY = "github.com/acme/api"


def tell(path: Path, team: TeamFacts | None) -> None:
    """Fact 1 inserted then updated, fact 2 inserted then deleted, over two turns."""
    conn = store.connect(path)
    log = audit.log_path(path) if team is None else None
    caller = tools.Caller("s-cmd")
    ledger.open_turn(conn, "s-cmd", "p-1", "remember how deploys work")
    tools.memory_search(conn, "deploy", caller, search=lookup.TeamSearch(team) if team else None)
    tools.memory_write(conn, [
        {"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through the staging branch."},
        {"op": "insert", "topic": "database", "kind": "trap", "text": "The test DB is reset before migrations."},
    ], [], caller, log=log, memory=stores.TeamStore(team) if team else None)
    ledger.open_turn(conn, "s-cmd", "p-2", "deploys go through prod now, and forget the DB trap")
    tools.memory_search(conn, "deploy DB", caller, search=lookup.TeamSearch(team) if team else None)
    tools.memory_write(conn, [{"op": "update", "id": 1, "text": "Deploys go through prod."}, {"op": "delete", "id": 2}],
                       [], caller, log=log, memory=stores.TeamStore(team) if team else None)
    conn.close()


@pytest.fixture
def both(tmp_path, postgres_url, monkeypatch):
    """run(*argv) on the local memory and on the team's: (code, out, err) of each."""
    project_dir = tmp_path / "project"
    project_dir.mkdir()
    monkeypatch.chdir(project_dir)
    for name in [name for name in os.environ if name.startswith(("MEMORY_GATE_", "CLAUDE"))]:
        monkeypatch.delenv(name)
    local_home, team_home = tmp_path / "local", tmp_path / "team"
    tell(Path(config.database_for(local_home, project_dir)), None)
    conn = postgres.connect(postgres_url)
    with conn.transaction():
        pid = project(conn, KEY, "2026-12-01T00:00:00Z")
    tell(Path(config.database_for(team_home, project_dir)), TeamFacts(conn, pid, Who("ana@laptop", "s-cmd")))
    # Fact 1 last confirmed long ago, on both: for review.
    with conn.transaction():
        conn.execute("UPDATE facts SET confirmed = '2020-01-01T00:00:00Z' WHERE project = %s AND id = 1", (pid,))
    conn.close()
    local = store.connect(config.database_for(local_home, project_dir))
    with store.writing(local):
        local.execute("UPDATE facts SET confirmed = '2020-01-01T00:00:00Z' WHERE id = 1")
    local.close()

    def run(capsys, *argv):
        results = []
        for env in ({"MEMORY_GATE_HOME": str(local_home)},
                    {"MEMORY_GATE_HOME": str(team_home), "MEMORY_GATE_DB": postgres_url, "MEMORY_GATE_PROJECT": KEY}):
            with monkeypatch.context() as patched:
                for name, value in env.items():
                    patched.setenv(name, value)
                code = cli.main(list(argv))
            out, err = capsys.readouterr()
            results.append((code, out, err))
        return results

    return run


STABLE = ("op", "id", "topic", "kind", "before", "after", "session", "turn", "words", "committed", "undoes")


def stable(entries: list[dict]) -> list[dict]:
    return [{key: entry.get(key) for key in STABLE} for entry in entries]


def test_show_search_and_export_give_the_same_facts(capsys, both):
    (code, local, _), (team_code, team, err) = both(capsys, "show", "--json")
    assert code == team_code == 0, err
    keys = ("id", "topic", "kind", "text", "date", "rev")
    assert [{k: f[k] for k in keys} for f in json.loads(team)] == [{k: f[k] for k in keys} for f in json.loads(local)]
    assert [f["text"] for f in json.loads(team)] == ["Deploys go through prod."]

    (_, local, _), (_, team, _) = both(capsys, "search", "--json", "deploy", "prod")
    assert json.loads(team) == json.loads(local) and json.loads(team)[0]["id"] == 1

    (_, local, _), (_, team, err) = both(capsys, "export")
    strip = lambda text: [{k: v for k, v in json.loads(line).items() if k not in ("created", "updated", "confirmed")}
                          for line in text.splitlines()]
    assert strip(team) == strip(local) and len(strip(team)) == 1
    assert "exported 1 fact to standard output" in err

    (_, local, _), (_, team, _) = both(capsys, "review", "--days", "30", "--json")
    assert [f["id"] for f in json.loads(team)] == [f["id"] for f in json.loads(local)] == [1]
    (_, local, _), (_, team, _) = both(capsys, "review")
    assert team == local and "1 fact no turn has kept or updated in 30 days" in team


def test_log_and_history_tell_the_same_story_and_the_team_names_its_member(capsys, both):
    (code, local, _), (team_code, team, err) = both(capsys, "log", "--json")
    assert code == team_code == 0, err
    assert stable(json.loads(team)) == stable(json.loads(local))
    assert [e["op"] for e in json.loads(team)] == ["insert", "insert", "update", "delete"]
    assert {e["member"] for e in json.loads(team)} == {"ana@laptop"}
    assert all(e["entry"].endswith(f":{e['id']}") for e in json.loads(team))

    (_, local, _), (_, team, _) = both(capsys, "log", "--fact", "2")
    assert "by ana@laptop" in team and "why: deploys go through prod now" in team and "was: The test DB" in team

    (_, local, _), (_, team, err) = both(capsys, "history", "1", "--json")
    keys = ("op", "session", "turn", "why", "before", "after")
    assert [{k: c.get(k) for k in keys} for c in json.loads(team)] == [{k: c.get(k) for k in keys} for c in json.loads(local)]
    (_, _, _), (_, team, _) = both(capsys, "history", "1")
    assert "fact 1 is in memory as its last version above." in team


def test_undo_on_the_team_reverts_in_its_record_and_can_be_redone(capsys, both):
    (_, local, _), (_, team, _) = both(capsys, "log", "--json", "--fact", "1")
    names = [json.loads(local)[-1]["entry"], json.loads(team)[-1]["entry"]]
    results = []
    for name in names:  # each memory undoes its own entry (the write ids differ)
        results.append(both(capsys, "undo", "--json", name))
    local_undo, team_undo = results[0][0], results[1][1]
    assert local_undo[0] == 0 and team_undo[0] == 0, team_undo[2]
    assert json.loads(team_undo[1])["op"] == "update"
    (_, local, _), (_, team, _) = both(capsys, "show", "--json")
    assert [f["text"] for f in json.loads(team)] == [f["text"] for f in json.loads(local)] == ["Deploys go through the staging branch."]
    (_, local, _), (_, team, _) = both(capsys, "log", "--json", "--fact", "1")
    assert json.loads(team)[-1]["undoes"].startswith(names[1].split(":")[0])
    assert json.loads(team)[-1]["session"] == "cli" and json.loads(team)[-1]["member"]
    # Undoing an older change is refused on the team as locally, naming the later one.
    (_, _, _), (code, _, err) = both(capsys, "undo", names[1])
    assert code == 1 and "changed after it" in err


def test_stats_count_the_teams_facts_and_the_members_own_turns(capsys, both):
    (_, local, _), (code, team, err) = both(capsys, "stats", "--json")
    assert code == 0, err
    assert json.loads(team)["facts"] == json.loads(local)["facts"] == {"state": 1, "event": 0, "decision": 0, "trap": 0, "total": 1}
    assert json.loads(team)["turns"] == json.loads(local)["turns"]


def test_a_team_out_of_reach_is_one_line_with_the_mend(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMORY_GATE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MEMORY_GATE_DB", "postgresql://ana@127.0.0.1:1/team")
    monkeypatch.setenv("MEMORY_GATE_PROJECT", KEY)
    code = cli.main(["show"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("memory-gate: cannot reach the team database") and err.count("\n") == 1
    assert "PGPASSWORD" in err
    # A password in MEMORY_GATE_DB is refused before any connection, and never shown.
    monkeypatch.setenv("MEMORY_GATE_DB", "postgresql://ana:s3cret@127.0.0.1:1/team")
    code = cli.main(["show"])
    err = capsys.readouterr().err
    assert code == 1 and "holds a password" in err and "s3cret" not in err and err.count("\n") == 1


def test_import_into_the_team_skips_duplicates_and_refuses_taken_ids_as_locally(capsys, both, tmp_path):
    lines = tmp_path / "in.jsonl"
    lines.write_text(
        json.dumps({"topic": "deploy", "kind": "state", "text": "Deploys go through prod."}) + "\n"
        + json.dumps({"topic": "ci", "kind": "decision", "text": "CI runs on every push, to catch breaks early."}) + "\n"
    )
    (_, local, _), (code, team, err) = both(capsys, "import", "--json", str(lines))
    assert code == 0, err
    strip = lambda text: {k: v for k, v in json.loads(text).items() if k not in ("write", "vectors")}
    assert strip(team) == strip(local) and json.loads(team)["imported"] == 1 and json.loads(team)["skipped"] == 1
    (_, local, _), (_, team, _) = both(capsys, "show", "--json", "--topic", "ci")
    assert [(f["id"], f["text"]) for f in json.loads(team)] == [(f["id"], f["text"]) for f in json.loads(local)] == [
        (3, "CI runs on every push, to catch breaks early.")]

    taken = tmp_path / "taken.jsonl"
    taken.write_text(json.dumps({"id": 1, "topic": "x", "kind": "state", "text": "Another fact with id 1."}) + "\n")
    (local_code, _, local_err), (code, _, err) = both(capsys, "import", str(taken))
    assert local_code == code == 1 and err == local_err and "id 1 is another fact's here" in err
    (_, _, _), (code, team, _) = both(capsys, "import", "--new-ids", "--json", str(taken))
    assert code == 0 and json.loads(team)["ids"] == [4, 4]
    (_, _, _), (_, team, _) = both(capsys, "log", "--json", "--fact", "4")
    assert [e["op"] for e in json.loads(team)] == ["insert"] and json.loads(team)[0]["session"] == "cli"


def test_reindex_on_the_team_mends_its_words_and_counters(capsys, tmp_path, postgres_url, monkeypatch):
    from test_teamfacts import counters, recounted

    monkeypatch.chdir(tmp_path)
    for name in [name for name in os.environ if name.startswith(("MEMORY_GATE_", "CLAUDE"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("MEMORY_GATE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MEMORY_GATE_DB", postgres_url)
    monkeypatch.setenv("MEMORY_GATE_PROJECT", KEY)
    conn = postgres.connect(postgres_url)
    with conn.transaction():
        pid = project(conn, KEY, "2026-12-01T00:00:00Z")
    tell(Path(config.database_for(tmp_path / "home", tmp_path)), TeamFacts(conn, pid, Who("ana@laptop", "s-cmd")))
    # A hand-made change the counters never saw, and a fact whose words were lost.
    with conn.transaction():
        conn.execute("ALTER TABLE facts DISABLE TRIGGER USER")
        conn.execute("UPDATE facts SET words = ''::tsvector WHERE project = %s AND id = 1", (pid,))
        conn.execute("ALTER TABLE facts ENABLE TRIGGER USER")
        conn.execute("UPDATE lexemes SET docs = docs + 7 WHERE project = %s", (pid,))
    assert counters(conn, pid)[1] != recounted(conn, pid)[1]
    assert json.loads(run_cli(capsys, "search", "--json", "deploy")) == []
    assert run_cli(capsys, "reindex").startswith("word index: rebuilt from 1 facts of the team's project")
    assert counters(conn, pid) == recounted(conn, pid)
    assert [f["id"] for f in json.loads(run_cli(capsys, "search", "--json", "deploy"))] == [1]
    conn.close()


def run_cli(capsys, *argv) -> str:
    assert cli.main(list(argv)) == 0
    return capsys.readouterr().out
