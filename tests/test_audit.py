import json
import os
import stat

from gate.memory import audit


def test_append_creates_a_private_file_and_adds_lines(tmp_path):
    path = tmp_path / "write.log"
    audit.append(path, [{"a": 1}])
    audit.append(path, [{"b": "é"}, {"c": 3}])
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    read = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [{k: v for k, v in entry.items() if k not in ("prev", "hash")} for entry in read] == [{"a": 1}, {"b": "é"}, {"c": 3}]


def test_a_torn_last_line_is_sealed_off_and_reported(tmp_path):
    path = tmp_path / "write.log"
    audit.append(path, [{"a": 1}])
    with open(path, "a") as handle:
        handle.write('{"write": "w9", "op": "ins')  # a writer killed mid-line
    audit.append(path, [{"b": 2}])
    found = list(audit.lines(path))
    assert [line.entry and line.entry.get("a", line.entry.get("b")) for line in found] == [1, None, 2]
    assert list(audit.entries(path)) == [{"a": 1}, {"b": 2}]


def test_entries_filter_by_fact_session_and_time(tmp_path):
    path = tmp_path / "write.log"
    audit.append(path, [
        {"id": 1, "session": "s1", "time": "2026-01-01T10:00:00Z"},
        {"id": 2, "session": "s2", "time": "2026-02-01T10:00:00Z"},
        {"id": 1, "session": "s2", "time": "2026-03-01T10:00:00Z"},
    ])
    assert [e["time"][:7] for e in audit.entries(path, fact=1)] == ["2026-01", "2026-03"]
    assert [e["id"] for e in audit.entries(path, session="s2")] == [2, 1]
    assert [e["id"] for e in audit.entries(path, since="2026-02-01")] == [2, 1]


def test_missing_log_reads_as_empty(tmp_path):
    assert list(audit.entries(tmp_path / "none.log")) == []


def test_check_tells_committed_uncommitted_torn_and_missing(file_conn, file_writer, db_path):
    file_writer.insert("deploy", "Deploys go through staging.")
    path = audit.log_path(db_path)
    assert audit.check(file_conn, path).ok
    audit.append(path, [{"write": "never-committed", "op": "insert", "id": 99}])
    with open(path, "a") as handle:
        handle.write('{"torn')
    result = audit.check(file_conn, path)
    assert result.ok and len(result.uncommitted) == 1 and len(result.torn) == 1
    assert any("never committed" in note for note in result.advice())
    path.write_text("")  # the log was lost
    result = audit.check(file_conn, path)
    assert not result.ok and any("lack log lines" in note for note in result.advice())
