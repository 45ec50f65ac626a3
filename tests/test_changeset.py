"""The one path every change takes: lines before the commit, in batches when there are many."""

import json

import pytest

from gate.engine import store
from gate.memory import audit, changeset


def cli_changes(conn, log):
    turn = changeset.cli_turn(conn, "memory-gate import many.jsonl")
    return turn, changeset.ChangeSet(conn, changeset.author(turn), log)


def test_many_changes_are_logged_in_batches_and_all_commit(file_conn, db_path, monkeypatch):
    log = audit.log_path(db_path)
    appends = []
    real = audit.append
    monkeypatch.setattr(audit, "append", lambda path, lines: (appends.append(len(lines)), real(path, lines)))
    count = changeset.FLUSH_LINES * 2 + 5
    with store.writing(file_conn):
        turn, changes = cli_changes(file_conn, log)
        for i in range(count):
            changes.insert({"topic": "t", "kind": "state", "text": f"fact {i}", "date": "2026-01-01"})
        changes.finish(turn, digest="d", answer="{}")
    assert appends == [changeset.FLUSH_LINES, changeset.FLUSH_LINES, 5]
    check = audit.check(file_conn, log)
    assert check.ok and check.lines == count and not check.uncommitted
    assert file_conn.execute("SELECT changes FROM writes WHERE id = ?", (changes.write_id,)).fetchone()[0] == count


def test_lines_of_a_change_set_that_rolls_back_read_as_never_committed(file_conn, db_path):
    log = audit.log_path(db_path)
    with pytest.raises(RuntimeError):
        with store.writing(file_conn):
            _, changes = cli_changes(file_conn, log)
            for i in range(changeset.FLUSH_LINES + 1):
                changes.insert({"topic": "t", "kind": "state", "text": f"fact {i}", "date": "2026-01-01"})
            raise RuntimeError("killed before the commit")
    check = audit.check(file_conn, log)
    assert check.ok and len(check.uncommitted) == changeset.FLUSH_LINES  # flushed, never committed
    assert file_conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 0


def test_an_insert_with_its_own_id_and_bookkeeping(conn):
    bookkeeping = {"created": "2020-01-01T00:00:00Z", "updated": "2021-01-01T00:00:00Z",
                   "confirmed": "2022-01-01T00:00:00Z", "rev": 4}
    with store.writing(conn):
        turn, changes = cli_changes(conn, None)
        fact = changes.insert({"topic": "t", "kind": "event", "text": "x", "date": "2019-05-05"}, fact_id=40,
                              bookkeeping=bookkeeping, extra={"undoes": "w:40"})
        line = changes._pending[-1]
        changes.finish(turn, digest="d", answer="{}")
    assert fact == 40
    assert conn.execute("SELECT created, updated, confirmed, rev FROM facts WHERE id = 40").fetchone() == tuple(bookkeeping.values())
    assert line["bookkeeping"] == bookkeeping and line["undoes"] == "w:40"
    assert list(line)[:6] == ["time", "write", "op", "id", "topic", "kind"]
    # The next id a write takes is past it: ids are never handed out twice.
    with store.writing(conn):
        turn, changes = cli_changes(conn, None)
        assert changes.insert({"topic": "t", "kind": "event", "text": "y", "date": "2019-05-05"}) == 41
        changes.finish(turn, digest="d", answer="{}")


def test_memory_write_lines_keep_their_shape(file_conn, file_writer, db_path):
    """No bookkeeping, no extras: exactly what write.log.example shows."""
    file_writer.insert("deploy", "Deploys go through staging.")
    line = json.loads(audit.log_path(db_path).read_text())
    assert list(line) == ["time", "write", "op", "id", "topic", "kind", "after", "session", "turn", "words", "prev", "hash"]
