"""write.log proves itself: each line names the one before it (gate.memory.chain), so the first
line edited, removed, repeated or rewritten is named, undo refuses what such a line says, a log
from before the chain is taken in as its start, and replaying the log still gives the database."""

import json
import subprocess
import sys

import pytest

from gate.engine import store
from gate.memory import audit, chain, history, ledger, transfer, undo
from gate.memory.stores import LocalStore
from gate.serve import tools


def log_lines(path):
    return path.read_text(encoding="utf-8").splitlines()


def written(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "write.log"
    for number in range(1, 6):
        audit.append(path, [{"write": f"w{number}", "op": "insert", "id": number, "after": {"text": f"fact {number}"}}])
    return path


def test_appended_lines_are_chained_from_the_first(log):
    found = audit.verify(log)
    assert found.ok and found.start == 1 and found.before == 0 and found.lines == 5
    first, second = (json.loads(line) for line in log_lines(log)[:2])
    assert first["prev"] == chain.START and second["prev"] == first["hash"]
    assert list(first)[-2:] == ["prev", "hash"]


def test_entries_leave_the_chain_out(log):
    assert [set(entry) for entry in audit.entries(log)] == [{"write", "op", "id", "after"}] * 5


def test_an_edited_line_is_named(log):
    lines = log_lines(log)
    lines[2] = lines[2].replace("fact 3", "fact three")
    written(log, lines)
    found = audit.verify(log)
    assert not found.ok and found.first() == "line 3 was edited after it was written (it no longer matches its hash)"
    assert found.breaks == 1  # the line after it still names what line 3 said it was


def test_a_removed_line_is_named_where_it_was(log):
    lines = log_lines(log)
    del lines[1]
    written(log, lines)
    assert audit.verify(log).first().startswith("line 2 does not follow the line before it (a line was removed there")


def test_a_repeated_line_is_named_with_the_line_it_repeats(log):
    lines = log_lines(log)
    written(log, lines + [lines[1]])
    assert audit.verify(log).first() == "line 6 repeats line 2"


def test_a_line_rewritten_with_its_hash_recomputed_breaks_the_next(log):
    lines = log_lines(log)
    entry = json.loads(lines[2])
    entry["after"]["text"] = "forged"
    lines[2] = chain.seal(entry, entry["prev"])[0]
    written(log, lines)
    found = audit.verify(log)
    assert found.edited == [] and found.broken == [4]


def test_a_line_added_by_hand_after_the_chain_began_is_named(log):
    written(log, log_lines(log) + ['{"write": "w9", "op": "delete", "id": 1}'])
    assert audit.verify(log).first().startswith("line 6 carries no link though the chain began at line 1")


def test_a_log_from_before_the_chain_is_its_start_and_nothing_is_lost(tmp_path):
    path = tmp_path / "write.log"
    old = [json.dumps({"write": f"old{n}", "op": "insert", "id": n, "after": {"text": f"old {n}"}}) for n in (1, 2, 3)]
    written(path, old)
    assert audit.verify(path).ok and audit.verify(path).start is None
    audit.append(path, [{"write": "new", "op": "update", "id": 1, "after": {"text": "new"}}])
    found = audit.verify(path)
    assert found.ok and (found.start, found.before) == (4, 3)
    assert log_lines(path)[:3] == old  # not rewritten
    assert [entry["write"] for entry in audit.entries(path)] == ["old1", "old2", "old3", "new"]
    assert audit.unproven(path, 2) is None  # the chain's start is taken in
    # Editing the last old line is caught by the first chained line, which names it.
    written(path, old[:2] + [old[2].replace("old 3", "changed")] + log_lines(path)[3:])
    assert audit.verify(path).first().startswith("line 4 does not follow the line before it")


@pytest.mark.parametrize("tail, added", [
    ('{"write": "w9", "op": "ins', False),  # torn: a writer killed mid-line, harmless
    ("x" * 200_000, False),  # torn, and longer than a read
    ('{"write": "w9", "op": "insert", "id": 9} \r', True),  # trailing white space, no newline
    ('{"write": "w9"}\n\n   \n', True),  # blank lines at the end
])
def test_the_line_before_an_append_is_linked_whatever_it_is(tmp_path, tail, added):
    path = tmp_path / "write.log"
    audit.append(path, [{"write": "w1"}])
    with open(path, "a", encoding="utf-8", newline="") as handle:
        handle.write(tail)
    audit.append(path, [{"write": "w2"}, {"write": "w3"}])
    found = audit.verify(path)
    assert (found.breaks, found.unchained) == ((1, [2]) if added else (0, []))
    assert [line.entry and line.entry.get("write") for line in audit.lines(path)][-2:] == ["w2", "w3"]
    assert all(audit.unproven(path, line.number) is None for line in audit.lines(path) if line.number > 2)


def test_writers_in_two_processes_keep_one_chain(tmp_path):
    path = tmp_path / "write.log"
    code = ("import sys\nfrom gate.memory import audit\n"
            "for n in range(150): audit.append(sys.argv[1], [{'write': sys.argv[2] + str(n)}, {'write': 'x'}])\n")
    writers = [subprocess.Popen([sys.executable, "-c", code, str(path), name]) for name in ("a", "b")]
    assert [writer.wait() for writer in writers] == [0, 0]
    found = audit.verify(path)
    assert found.ok and found.lines == 600


# -- doctor and undo -------------------------------------------------------------------------


@pytest.fixture
def memory(file_conn, file_writer, db_path):
    ledger.open_turn(file_conn, "s-chain", "p1", "remember deploys")
    file_writer.caller = tools.Caller("s-chain")
    a = file_writer.insert("deploy", "Deploys go through staging.")
    b = file_writer.insert("cache", "The cache lives in Redis.")
    ledger.open_turn(file_conn, "s-chain", "p2", "deploys go through prod now")
    file_writer.search("deploy cache")
    file_writer.write([{"op": "update", "id": a, "text": "Deploys go through prod."}, {"op": "delete", "id": b}],
                      kept=[])
    return {"a": a, "b": b}


def doctor_findings(db_path, monkeypatch):
    from gate import config
    from gate.doctor import checks as doctor

    monkeypatch.setenv("MEMORY_GATE_DB", str(db_path))
    return doctor.memory(config.load())


def names(db_path):
    return [history.entry_name(entry["write"], entry["id"]) for entry in audit.entries(audit.log_path(db_path))]


def run_undo(conn, db_path, name):
    return undo.undo(conn, audit.log_path(db_path), name, command=f"memory-gate undo {name}")


def test_undo_refuses_a_forged_before_text(file_conn, db_path, memory):
    path = audit.log_path(db_path)
    lines = log_lines(path)
    lines[-1] = lines[-1].replace("The cache lives in Redis.", "The cache lives in Memcached.")
    written(path, lines)
    message = str(pytest.raises(undo.CannotUndo, run_undo, file_conn, db_path, names(db_path)[-1]).value)
    assert "line 4 was edited after it was written" in message and "Restore write.log from a backup" in message
    assert file_conn.execute("SELECT count(*) FROM facts WHERE id = ?", (memory["b"],)).fetchone()[0] == 0


def test_undo_refuses_a_line_rewritten_with_its_hash_recomputed(file_conn, db_path, memory):
    path = audit.log_path(db_path)
    lines = log_lines(path)
    entry = json.loads(lines[2])
    entry["before"]["text"] = "Deploys go through a forged branch."
    lines[2] = chain.seal(entry, entry["prev"])[0]
    written(path, lines)
    with pytest.raises(undo.CannotUndo, match="the line after line 3 does not name it"):
        run_undo(file_conn, db_path, names(db_path)[2])


def test_undo_takes_a_line_from_before_the_chain(file_conn, db_path, memory):
    path = audit.log_path(db_path)
    lines = [json.dumps({key: value for key, value in json.loads(line).items() if key not in chain.FIELDS})
             for line in log_lines(path)]
    written(path, lines)  # the same log as an older memory-gate wrote it
    done = run_undo(file_conn, db_path, names(db_path)[-1])
    assert done.op == "insert" and audit.verify(path).ok and audit.verify(path).start == 5


def test_doctor_names_the_first_line_that_breaks_the_chain(db_path, memory, monkeypatch):
    path = audit.log_path(db_path)
    lines = log_lines(path)
    written(path, lines[:1] + lines[2:] + [lines[3]])  # line 2 removed, the last repeated
    report, findings = doctor_findings(db_path, monkeypatch)
    said = [finding.message() for finding in findings if "changed after it was written" in finding.what]
    assert len(said) == 1 and "line 2 does not follow the line before it" in said[0]
    assert "1 more line(s) after it break the chain too" in said[0] and "Restore write.log from a backup" in said[0]
    assert report["write_log"]["chain"]["breaks"] == 2


def test_doctor_says_where_an_old_log_starts_the_chain(db_path, memory, monkeypatch):
    path = audit.log_path(db_path)
    lines = log_lines(path)
    written(path, [json.dumps({k: v for k, v in json.loads(line).items() if k not in chain.FIELDS}) for line in lines[:2]]
            + lines[2:])
    report, findings = doctor_findings(db_path, monkeypatch)
    assert report["write_log"]["chain"]["breaks"] == 1  # line 3 named line 2 as it was
    written(path, [json.dumps({k: v for k, v in json.loads(line).items() if k not in chain.FIELDS}) for line in lines])
    run_undo(store.connect(db_path), db_path, names(db_path)[-1])
    report, findings = doctor_findings(db_path, monkeypatch)
    assert [(f.severity, f.what) for f in findings if "chain" in f.what] == [
        ("note", (f"{path}: lines before line 5 (4) were written before write.log was chained: they are the "
                  "chain's start, read as ever, though nothing proves them"))]
    assert report["write_log"]["chain"] == {"from_line": 5, "lines_before_it": 4, "breaks": 0, "first_break": None}


# -- replay ----------------------------------------------------------------------------------


def test_replaying_the_log_gives_the_database(file_conn, db_path, memory, tmp_path):
    run_undo(file_conn, db_path, names(db_path)[-1])  # b comes back
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"topic": "ci", "kind": "trap", "text": "CI caches node_modules.", "date": "2026-11-30"}) + "\n")
    with open(source) as handle:
        transfer.import_into(file_conn, handle, LocalStore(file_conn, audit.log_path(db_path)), command="memory-gate import in.jsonl")
    assert audit.verify(audit.log_path(db_path)).ok
    facts = {row[0]: dict(zip(("topic", "kind", "text", "date", "rev"), row[1:]))
             for row in file_conn.execute("SELECT id, topic, kind, text, date, rev FROM facts")}
    ids = {entry["id"] for entry in audit.entries(audit.log_path(db_path))}
    replayed = {}
    for fact in ids:
        life = history.replay(list(history.changes(file_conn, audit.log_path(db_path), fact)))
        if life.fields is not None:
            replayed[fact] = {**life.fields, "rev": life.rev}
    assert replayed == facts and len(facts) == 3


def test_the_example_log_is_chained():
    from conftest import REPO

    found = audit.verify(REPO / "write.log.example")
    assert found.ok and found.start == 1 and found.lines == 4
