import json
from pathlib import Path
import subprocess
import sys

import pytest
from conftest import REPO, Writer, child_env

from gate import config
from gate.cli import main as cli
from gate.engine import store
from gate.memory import audit, ledger


@pytest.fixture
def memory(home):
    """The project database of the isolated home, with a few facts written by a turn."""
    path = Path(config.find_database(config.load()))
    conn = store.connect(path)
    ledger.open_turn(conn, "s-cli", "p-1", "remember how deploys work")
    writer = Writer(conn, audit.log_path(path), session="s-cli")
    ids = [
        writer.insert("deploy", "Deploys go through the staging branch."),
        writer.insert("database", "The test DB is reset before migrations.", kind="trap"),
    ]
    writer.search("deploy")
    writer.write([{"op": "update", "id": ids[0], "text": "Deploys go through prod."}])
    yield path, ids
    conn.close()


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_every_command_has_help_with_an_example_and_is_in_the_readme(capsys, command):
    with pytest.raises(SystemExit) as exited:
        cli.main([command, "--help"])
    out = capsys.readouterr().out
    assert exited.value.code == 0
    assert "Example:" in out and f"memory-gate {command}" in out
    assert f"memory-gate {command}" in (REPO / "README.md").read_text()


def test_no_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main([])
    assert exited.value.code == 2


def test_search_prints_facts(capsys, memory):
    code, out, _ = run(capsys, "search", "deploy")
    assert code == 0 and "deploy | " in out and "Deploys go through prod." in out


def test_search_json(capsys, memory):
    _, ids = memory
    code, out, _ = run(capsys, "search", "--json", "DB")
    assert code == 0
    assert json.loads(out) == [
        {
            "id": ids[1],
            "topic": "database",
            "kind": "trap",
            "text": "The test DB is reset before migrations.",
            "date": json.loads(out)[0]["date"],
        }
    ]


def test_search_explain_needs_no_database(capsys, home):
    code, out, _ = run(capsys, "search", "--explain", "C++ node.js")
    assert code == 0 and out.splitlines()[0] == 'match  "c" OR "node" OR "node"* OR "js" OR "javascript"'
    # The rule that drops what one signal alone offers when words and meaning disagree is named.
    assert any(line.startswith("drop ") and "ranking.vouched" in line for line in out.splitlines())


def test_search_records_nothing(capsys, memory):
    path, _ = memory
    conn = store.connect(path)
    before = conn.execute("SELECT count(*) FROM reads").fetchone()[0]
    run(capsys, "search", "deploy")
    assert conn.execute("SELECT count(*) FROM reads").fetchone()[0] == before


def test_no_database_is_a_user_error_with_the_mend(capsys, home):
    code, _, err = run(capsys, "search", "deploy")
    assert code == 1 and "created by the first memory_write" in err and "--db" in err


def test_log_shows_changes_with_why(capsys, memory):
    _, ids = memory
    code, out, _ = run(capsys, "log", "--fact", str(ids[0]))
    assert code == 0
    assert "insert [1] deploy (state)" in out and "update [1]" in out
    assert "before: Deploys go through the staging branch." in out
    assert "after:  Deploys go through prod." in out
    assert "why: remember how deploys work" in out


def test_log_json_filters(capsys, memory):
    code, out, _ = run(capsys, "log", "--json", "--session", "s-cli", "--limit", "1")
    entries = json.loads(out)
    assert code == 0 and len(entries) == 1 and entries[0]["op"] == "update" and entries[0]["committed"]


def test_log_marks_lines_that_never_committed(capsys, memory):
    path, _ = memory
    audit.append(audit.log_path(path), [{"time": "2026-01-01T00:00:00Z", "write": "gone", "op": "insert", "id": 99}])
    code, out, _ = run(capsys, "log")
    assert "(never committed)" in out


def test_doctor_reports_and_passes(capsys, memory):
    code, out, _ = run(capsys, "doctor", "--json", "--no-claude")
    report = json.loads(out)
    assert code == 0 and report["problems"] == []
    assert report["integrity"] == "ok" and report["schema_version"] == report["schema_latest"]
    assert report["facts"] == {"state": 1, "event": 0, "decision": 0, "trap": 1}
    assert report["write_log"]["lines"] == 3


def test_doctor_flags_a_log_that_lost_lines(capsys, memory):
    path, _ = memory
    audit.log_path(path).write_text("")
    code, out, _ = run(capsys, "doctor", "--no-claude")
    assert code == 1 and "PROBLEM" in out and "lack log lines" in out


def test_doctor_without_a_database(capsys, home):
    code, out, _ = run(capsys, "doctor", "--no-claude")
    assert code == 0 and "no database yet" in out


def test_bad_setting_is_a_user_error(capsys, home, monkeypatch):
    monkeypatch.setenv("MEMORY_GATE_MAX_DISTANCE", "far")
    code, _, err = run(capsys, "doctor", "--no-claude")
    assert code == 1 and "MEMORY_GATE_MAX_DISTANCE" in err


def test_console_script_runs(tmp_path):
    """The installed entry point, as a user runs it."""
    result = subprocess.run(
        [sys.executable, "-m", "gate", "--help"], capture_output=True, text=True, env=child_env(tmp_path)
    )
    assert result.returncode == 0 and "memory-gate" in result.stdout


def test_doctor_reports_meaning(capsys, memory, fake_embeddings, monkeypatch):
    monkeypatch.setenv("MEMORY_GATE_EMBED_URL", fake_embeddings.url)
    monkeypatch.setenv("MEMORY_GATE_MEANING", "on")
    code, out, _ = run(capsys, "doctor", "--json", "--no-claude")
    meaning = json.loads(out)["meaning"]
    assert code == 0 and meaning["endpoint"] == fake_embeddings.url and meaning["model"] == "bge-m3"
    assert meaning["sqlite_vec"].startswith("v0.") and meaning["answers"] == "fake-embed, 64 dimensions"
    assert meaning["facts_without_vector"] == 2 and "memory-gate reindex" in meaning["advice"]


def test_reindex_embeds_every_fact_and_doctor_sees_it(capsys, memory, fake_embeddings, monkeypatch):
    monkeypatch.setenv("MEMORY_GATE_EMBED_URL", fake_embeddings.url)
    monkeypatch.setenv("MEMORY_GATE_MEANING", "on")
    code, out, _ = run(capsys, "reindex")
    assert code == 0
    assert out.splitlines() == [
        "word index: rebuilt from 2 facts",
        "vectors: 2/2 facts",
        "vectors: 2 of 2 facts embedded by fake-embed (64 dimensions)",
    ]
    meaning = json.loads(run(capsys, "doctor", "--json", "--no-claude")[1])["meaning"]
    assert meaning["facts_without_vector"] == 0
    assert meaning["stored"] == {"model": "fake-embed", "dimension": 64, "vectors": 2, "search": "exact"}


def test_doctor_names_the_mend_when_the_endpoint_changed_kind(capsys, memory, fake_embeddings, monkeypatch):
    monkeypatch.setenv("MEMORY_GATE_EMBED_URL", fake_embeddings.url)
    monkeypatch.setenv("MEMORY_GATE_MEANING", "on")
    run(capsys, "reindex")
    fake_embeddings.mode = "dimension"
    code, out, _ = run(capsys, "doctor", "--no-claude")
    assert (
        code == 1
        and "PROBLEM: the endpoint's vectors have 80 dimensions, memory's 64: run `memory-gate reindex`" in out
    )


def test_doctor_flags_an_endpoint_that_does_not_answer(capsys, memory, down_url, monkeypatch):
    monkeypatch.setenv("MEMORY_GATE_EMBED_URL", down_url)
    monkeypatch.setenv("MEMORY_GATE_MEANING", "on")
    code, out, _ = run(capsys, "doctor", "--no-claude")
    assert code == 1 and "PROBLEM: embeddings endpoint unreachable (connection refused): start it" in out


def test_reindex_without_meaning_rebuilds_the_words(capsys, memory):
    code, out, _ = run(capsys, "reindex")
    assert code == 0 and "word index: rebuilt from 2 facts" in out
    assert "vectors: nothing to embed: MEMORY_GATE_MEANING=off: search runs on words only" in out
    assert json.loads(run(capsys, "search", "--json", "DB")[1])[0]["topic"] == "database"


def test_reindex_with_the_endpoint_down_keeps_the_vectors(capsys, memory, down_url, monkeypatch):
    monkeypatch.setenv("MEMORY_GATE_EMBED_URL", down_url)
    monkeypatch.setenv("MEMORY_GATE_MEANING", "on")
    code, _, err = run(capsys, "reindex")
    assert code == 1 and "unreachable" in err and "left as they were" in err


def test_install_refuses_beside_the_plugin_and_doctor_names_the_clash(capsys, home, tmp_path, monkeypatch):
    """The plugin and a settings install together leave the mod unable to hold answers: the
    second way refuses, and doctor names the clash when both are there anyway."""
    claude = tmp_path / "claude-config"
    claude.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    (claude / "settings.json").write_text(json.dumps({"enabledPlugins": {"memory-gate@memory-gate": True}}))
    before = sorted(path.name for path in claude.iterdir())
    code, out, err = run(capsys, "install")
    assert code == 1 and "the memory-gate plugin is enabled in" in err and "Nothing was changed." in err
    assert "memory-gate uninstall" in err and "claude plugin uninstall memory-gate@" in err
    assert sorted(path.name for path in claude.iterdir()) == before
    assert run(capsys, "doctor")[0] == 0  # the plugin alone is fine
    # A settings install made before the plugin: doctor names the clash.
    server = {"type": "stdio", "command": "memory-gate", "args": ["serve"], "env": {}}
    (claude / ".claude.json").write_text(json.dumps({"mcpServers": {"memory-gate": server}}))
    code, out, _ = run(capsys, "doctor")
    assert code == 1 and "PROBLEM: the memory-gate plugin is enabled in" in out and "cannot hold answers" in out
    (claude / "settings.json").write_text(json.dumps({"enabledPlugins": {"memory-gate@memory-gate": False}}))
    assert run(capsys, "install")[0] == 0
