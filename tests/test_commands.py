"""The owner's everyday commands, run as `memory-gate ...` runs them (in-process)."""

import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Writer, child_env

from gate import config
from gate.cli import main as cli
from gate.engine import store
from gate.memory import audit, ledger
from gate.serve import tools


@pytest.fixture
def memory(home):
    """The project's database: fact a inserted then updated, fact b inserted then deleted."""
    path = Path(config.find_database(config.load()))
    conn = store.connect(path)
    ledger.open_turn(conn, "s-cmd", "p-1", "remember how deploys work")
    writer = Writer(conn, audit.log_path(path), session="s-cmd")
    a = writer.insert("deploy", "Deploys go through the staging branch.")
    b = writer.insert("database", "The test DB is reset before migrations.", kind="trap")
    ledger.open_turn(conn, "s-cmd", "p-2", "deploys go through prod now, and forget the DB trap")
    writer.search("deploy DB")
    writer.write([{"op": "update", "id": a, "text": "Deploys go through prod."}, {"op": "delete", "id": b}])
    yield path, a, b, conn
    conn.close()


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def entry_names(capsys, fact):
    _, out, _ = run(capsys, "log", "--json", "--fact", str(fact))
    return [entry["entry"] for entry in json.loads(out)]


# -- show, review, stats --------------------------------------------------------------------------


def test_show_prints_facts_newest_first(capsys, memory):
    code, out, _ = run(capsys, "show")
    assert code == 0
    assert out.splitlines()[0].startswith("[1] state | deploy | ") and "revision 2" in out
    assert "    Deploys go through prod." in out and "test DB" not in out


def test_show_filters_and_json(capsys, memory):
    _, a, _, conn = memory
    Writer(conn, session="s-cmd").insert("release", "v2 shipped.", kind="event", date="2026-03-01")
    facts = json.loads(run(capsys, "show", "--json", "--kind", "event")[1])
    assert [fact["topic"] for fact in facts] == ["release"]
    assert set(facts[0]) == {"id", "topic", "kind", "text", "date", "created", "updated", "confirmed", "rev"}
    assert json.loads(run(capsys, "show", "--json", "--topic", "DEPL")[1])[0]["id"] == a
    assert run(capsys, "show", "--since", "2999-01-01")[1] == "no facts that match\n"


@pytest.mark.parametrize("argv", [["show", "--kind", "note"], ["show", "--since", "yesterday"],
                                  ["review", "--days", "-3"], ["history", "x"], ["undo", "12"]])
def test_malformed_arguments_are_usage_errors(capsys, memory, argv):
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2


def test_review_lists_what_no_turn_confirmed_lately(capsys, memory):
    _, a, _, conn = memory
    code, out, _ = run(capsys, "review")
    assert code == 0 and out == "every fact was kept or updated by a turn in the last 30 days\n"
    conn.execute("UPDATE facts SET confirmed = '2020-01-01T00:00:00Z' WHERE id = ?", (a,))
    code, out, _ = run(capsys, "review", "--days", "7")
    assert code == 0 and "1 fact no turn has kept or updated in 7 days" in out
    assert "[1] state | deploy" in out and "last confirmed 2020-01-01 00:00:00" in out
    assert [fact["id"] for fact in json.loads(run(capsys, "review", "--json")[1])] == [a]


def test_stats_prints_every_figure(capsys, memory):
    _, _, _, conn = memory
    turn = ledger.open_turn(conn, "s-cmd", "p-3", "next")
    ledger.settle(conn, turn.id, "met")
    code, out, _ = run(capsys, "stats")
    assert code == 0
    assert "facts: 1 (state 1, event 0, decision 0, trap 0)" in out
    # p-2 complied when its write left nothing owed; p-3 was settled by hand above.
    assert "turns gated: 2" in out and "complied: 2 (100.0%): 2 at once, 0 after" in out
    # The search of p-2 read both facts: the owner's words name the deploys and the DB trap.
    assert "released unmet: 0" in out and "facts read per turn that searched: 2.0" in out
    assert "a search costs the context " in out and " tokens " in out
    report = json.loads(run(capsys, "stats", "--json")[1])
    assert report["searches"]["recorded"] == 1 and report["searches"]["chars_per_search"] > 100


# -- log, history, undo -----------------------------------------------------------------------------


def test_log_names_each_change_so_it_can_be_copied(capsys, memory):
    names = entry_names(capsys, 1)
    code, out, _ = run(capsys, "log", "--fact", "1")
    assert code == 0 and out.startswith(f"{names[0]}  ") and f"\n{names[1]}  " in out
    assert all(len(name.split(":")[0]) == 8 for name in names)


def test_history_shows_every_version_with_who_when_and_why(capsys, memory):
    insert, update = entry_names(capsys, 1)
    code, out, _ = run(capsys, "history", "1")
    assert code == 0
    assert f"{insert}  " in out and f"{update}  " in out and out.index(insert) < out.index(update)
    assert "update: text" in out and "by session s-cmd, turn p-1" in out
    assert "why: remember how deploys work" in out and "why: deploys go through prod now" in out
    assert "    Deploys go through the staging branch." in out and "    Deploys go through prod." in out
    assert out.rstrip().endswith("fact 1 is in memory as its last version above.")
    versions = json.loads(run(capsys, "history", "--json", "2")[1])
    assert [v["op"] for v in versions] == ["insert", "delete"] and versions[1]["turn"] == "p-2"


def test_history_of_no_such_fact_is_a_user_error(capsys, memory):
    code, out, err = run(capsys, "history", "99")
    assert code == 1 and out == "" and "no committed change to fact 99" in err and "memory-gate show" in err


def test_undo_of_an_update_a_delete_and_an_insert(capsys, memory):
    path, a, b, conn = memory
    insert_a, update_a = entry_names(capsys, a)
    _, delete_b = entry_names(capsys, b)
    code, out, _ = run(capsys, "undo", update_a)
    assert code == 0 and f"undid {update_a}: fact {a} reads as before it again:" in out
    assert "Deploys go through the staging branch." in out and "redoes the change" in out
    code, out, _ = run(capsys, "undo", "--json", delete_b)
    assert code == 0 and json.loads(out)["op"] == "insert" and json.loads(out)["undone"] == delete_b
    assert conn.execute("SELECT text FROM facts WHERE id = ?", (b,)).fetchone()[0] == "The test DB is reset before migrations."
    new = Writer(conn, audit.log_path(path), session="s-cmd").insert("cache", "Redis.")
    code, out, _ = run(capsys, "undo", entry_names(capsys, new)[0])
    assert code == 0 and f"fact {new}, which it inserted, is deleted" in out
    line = json.loads(audit.log_path(path).read_text().splitlines()[-1])
    assert line["session"] == "cli" and line["words"] == f"memory-gate undo {entry_names(capsys, new)[0]}"
    assert run(capsys, "doctor", "--no-claude")[0] == 0


def test_undo_refused_names_the_later_change_and_changes_nothing(capsys, memory):
    path, a, _, _ = memory
    insert_a, update_a = entry_names(capsys, a)
    log = audit.log_path(path).read_text()
    code, out, err = run(capsys, "undo", insert_a)
    assert code == 1 and out == ""
    assert f"cannot undo {insert_a}: fact {a} changed after it ({update_a} (update" in err
    assert f"`memory-gate undo {update_a}`" in err
    assert audit.log_path(path).read_text() == log


# -- export, import ----------------------------------------------------------------------------------


def test_export_to_standard_output_and_to_a_private_file(capsys, memory, tmp_path):
    code, out, err = run(capsys, "export")
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [fact["id"] for fact in lines] == [1] and lines[0]["rev"] == 2
    assert err.splitlines() == ["export: 1/1 facts", "exported 1 fact to standard output; memory is unchanged "
                                "(write.log records changes only)"]
    target = tmp_path / "facts.jsonl"
    target.write_text("old")
    code, out, err = run(capsys, "export", "--output", str(target))
    assert code == 0 and f"exported 1 fact to {target}" in out
    assert target.read_text().splitlines()[0] == json.dumps(lines[0], ensure_ascii=False)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".facts")] == []


def test_export_into_a_pipe_or_through_a_symlink_leaves_the_file_what_it_was(capsys, memory, tmp_path):
    """Renamed over, a pipe (or, as root, /dev/null) would become a plain file: an export writes
    straight into what is not a regular file, and through a symlink into its target."""
    import threading

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    got = []
    reader = threading.Thread(target=lambda: got.append(pipe.read_text()))
    reader.start()
    code, out, _ = run(capsys, "export", "--output", str(pipe))
    reader.join(timeout=30)
    assert code == 0 and f"exported 1 fact to {pipe}" in out
    assert stat.S_ISFIFO(os.lstat(pipe).st_mode) and json.loads(got[0])["id"] == 1
    target = tmp_path / "real.jsonl"
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    code, _, _ = run(capsys, "export", "-o", str(link))
    assert code == 0 and link.is_symlink() and json.loads(target.read_text())["id"] == 1


def test_export_to_dev_null_leaves_it_a_device(capsys, memory):
    code, _, _ = run(capsys, "export", "-o", os.devnull)
    assert code == 0 and stat.S_ISCHR(os.lstat(os.devnull).st_mode)


def test_export_import_round_trip_through_the_command_line(capsys, memory, tmp_path, monkeypatch):
    dump = tmp_path / "facts.jsonl"
    run(capsys, "export", "-o", str(dump))
    other = tmp_path / "other" / "memory.db"
    code, out, _ = run(capsys, "--db", str(other), "import", str(dump))  # no database yet: made
    assert code == 0 and "imported 1 fact (id 1), logged in write.log as write " in out
    assert "import: 1/1 facts" in out
    code, out, _ = run(capsys, "--db", str(other), "export")
    assert out == dump.read_text()
    code, out, _ = run(capsys, "--db", str(other), "import", str(dump))
    assert code == 0 and "imported 0 facts" in out and "skipped 1 already in memory (the same topic, kind and text): line 1" in out
    monkeypatch.setattr("sys.stdin", io.StringIO(dump.read_text()))
    report = json.loads(run(capsys, "--db", str(other), "import", "--json", "-")[1])
    assert report["imported"] == 0 and report["skipped"] == 1 and report["write"] is None


def test_import_refuses_a_bad_file_whole(capsys, memory, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"topic": "fine", "kind": "state", "text": "Fine."}) + "\n"
                    + json.dumps({"topic": "t", "kind": "state", "text": "x" * 601}) + "\n")
    before = audit.log_path(memory[0]).read_text()
    code, out, err = run(capsys, "import", str(path))
    assert code == 1 and "import refused, nothing was changed" in err and "line 2: text is 601 characters" in err
    assert audit.log_path(memory[0]).read_text() == before
    code, _, err = run(capsys, "import", str(tmp_path / "missing.jsonl"))
    assert code == 1 and "cannot read" in err
    path.write_bytes(b'{"topic": "t", "kind": "state", "text": "\xff"}\n')
    code, _, err = run(capsys, "import", str(path))
    assert code == 1 and "is not UTF-8 text (line 1" in err


def test_an_import_refusal_prints_one_problem_a_line_and_as_json_with_json(capsys, memory, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"topic": "t", "kind": "bad", "text": "x"}) + "\n"
                    + json.dumps({"id": 2**63 - 1, "topic": "t", "kind": "state", "text": "x"}) + "\n")
    code, out, err = run(capsys, "import", str(path))
    assert code == 1 and out == "" and "\\n" not in err
    assert err.splitlines()[0] == "memory-gate: import refused, nothing was changed. Fix the file and run it again:"
    assert err.splitlines()[1].startswith('- line 1: kind "bad" is not one of the four')
    assert err.splitlines()[2].startswith("- line 2: id 9223372036854775807 is past 2147483647")
    code, out, err = run(capsys, "import", "--json", str(path))
    report = json.loads(out)
    assert code == 1 and report["refused"] is True and report["imported"] == 0 and len(report["problems"]) == 2


def test_import_of_a_file_without_line_breaks_is_refused_at_its_first_line(memory, home):
    # A process of its own, its memory capped: import reading /dev/zero whole must fail this
    # test, not take the machine's memory.
    def cap():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31))

    done = subprocess.run([sys.executable, "-m", "gate", "--db", str(memory[0]), "import", "/dev/zero"],
                          capture_output=True, text=True, env=child_env(home), timeout=60, preexec_fn=cap)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "line 1: more than 20000 characters, import's limit for one line" in done.stderr


def test_import_dry_run_and_new_ids(capsys, memory, tmp_path):
    path = tmp_path / "other.jsonl"
    path.write_text(json.dumps({"id": 1, "topic": "cache", "kind": "decision", "text": "Redis, for its streams."}) + "\n")
    code, _, err = run(capsys, "import", str(path))
    assert code == 1 and "id 1 is another fact's here ([1] deploy)" in err and "--new-ids" in err
    code, out, _ = run(capsys, "import", "--new-ids", "--dry-run", str(path))
    assert code == 0 and "would import 1 fact" in out and "nothing was changed (--dry-run)" in out
    code, out, _ = run(capsys, "import", "--new-ids", str(path))
    assert code == 0 and "imported 1 fact (id 3)" in out  # 2 was used once: ids are never reused


def test_import_embeds_what_it_brought_in(capsys, memory, tmp_path, fake_embeddings, monkeypatch):
    if not store.load_vectors(store.connect(":memory:")):
        pytest.skip("sqlite-vec cannot be loaded here")
    dump = tmp_path / "facts.jsonl"
    run(capsys, "export", "-o", str(dump))
    monkeypatch.setenv("MEMORY_GATE_EMBED_URL", fake_embeddings.url)
    monkeypatch.setenv("MEMORY_GATE_MEANING", "on")
    report = json.loads(run(capsys, "--db", str(tmp_path / "v" / "memory.db"), "import", "--json", str(dump))[1])
    assert report["vectors"] == {"embedded": 1, "waiting": 0}
    doctor = json.loads(run(capsys, "--db", str(tmp_path / "v" / "memory.db"), "doctor", "--json", "--no-claude")[1])
    assert doctor["meaning"]["facts_without_vector"] == 0


def test_import_says_when_vectors_wait(capsys, memory, tmp_path, down_url, monkeypatch):
    if not store.load_vectors(store.connect(":memory:")):
        pytest.skip("sqlite-vec cannot be loaded here")
    dump = tmp_path / "facts.jsonl"
    run(capsys, "export", "-o", str(dump))
    monkeypatch.setenv("MEMORY_GATE_EMBED_URL", down_url)
    monkeypatch.setenv("MEMORY_GATE_MEANING", "on")
    code, out, _ = run(capsys, "--db", str(tmp_path / "v" / "memory.db"), "import", str(dump))
    assert code == 0 and "1 facts wait for a vector" in out and "memory-gate reindex" in out


def test_a_search_after_an_import_counts_in_stats(capsys, memory, tmp_path):
    dump = tmp_path / "facts.jsonl"
    run(capsys, "export", "-o", str(dump))
    other = tmp_path / "o" / "memory.db"
    run(capsys, "--db", str(other), "import", str(dump))
    conn = store.connect(other)
    tools.memory_search(conn, "deploy", tools.Caller("s-after"))
    report = json.loads(run(capsys, "--db", str(other), "stats", "--json")[1])
    # The import's own turn is the command line's, not a gated or ungated agent turn.
    assert report["turns"]["unsettled"] == 0 and report["turns"]["without_hooks"] == 1
    assert report["searches"]["recorded"] == 1
