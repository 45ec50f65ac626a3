"""`memory-gate doctor` on the damage it is there to diagnose, as the owner runs it: it names the
damage and the mend, exits 1, and never crashes; the mend it names works."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from conftest import child_env

from gate.engine import store
from gate.memory import audit
from gate.serve import tools


def memory_gate(home, *argv):
    return subprocess.run(
        [sys.executable, "-m", "gate", *argv], capture_output=True, text=True, env=child_env(home), timeout=120,
    )


def seed(db, count, start=0, caller=None):
    conn = store.connect(db)
    caller = caller or tools.Caller("seed")
    for i in range(start, start + count):
        tools.memory_write(conn, [{"op": "insert", "topic": f"topic {i}", "kind": "state",
                                   "text": f"fact number {i} about the deploy pipeline " * 4}],
                           [], caller, log=audit.log_path(db))
    return conn


@pytest.fixture
def db(tmp_path):
    return tmp_path / "memory" / "memory.db"


@pytest.mark.slow
def test_a_word_index_fts5_cannot_open_is_named_and_reindex_mends_it(tmp_path, db):
    conn = seed(db, 5)
    conn.execute("UPDATE facts_fts_config SET v = 99 WHERE k = 'version'")  # "invalid fts5 file format"
    conn.close()
    doctor = memory_gate(tmp_path, "--db", str(db), "doctor")
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr, doctor.stderr
    assert "the word index is damaged" in doctor.stdout and "run `memory-gate reindex`" in doctor.stdout
    reindex = memory_gate(tmp_path, "--db", str(db), "reindex")
    assert reindex.returncode == 0, reindex.stderr
    again = memory_gate(tmp_path, "--db", str(db), "doctor", "--json")
    assert json.loads(again.stdout)["integrity"] == "ok"
    found = memory_gate(tmp_path, "--db", str(db), "search", "--json", "number", "3")
    assert [fact["topic"] for fact in json.loads(found.stdout)] == ["topic 3"]


def restored_beside_a_stale_wal(db, tmp_path):
    """An old backup copied over memory.db while the -wal of the newer file stayed beside it."""
    conn = seed(db, 20)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    backup = tmp_path / "backup.db"
    shutil.copy(db, backup)
    seed(db, 300, start=20).close()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    seed(db, 60, start=320).close()  # these pages live in the -wal only
    stale = tmp_path / "stale-wal"
    shutil.copy(f"{db}-wal", stale)
    conn.close()  # the last close checkpoints and removes the -wal: put it back, as it was
    shutil.copy(backup, db)
    shutil.copy(stale, f"{db}-wal")
    return backup


@pytest.mark.slow
def test_a_backup_restored_beside_a_stale_wal_is_named_with_how_to_restore(tmp_path, db):
    backup = restored_beside_a_stale_wal(db, tmp_path)
    doctor = memory_gate(tmp_path, "--db", str(db), "doctor")
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr, doctor.stderr
    assert "the database is damaged" in doctor.stdout
    assert "delete memory.db-wal and memory.db-shm" in doctor.stdout and "memory.db-wal stayed" in doctor.stdout
    as_json = memory_gate(tmp_path, "--db", str(db), "doctor", "--json")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["problems"]

    # The mend as doctor words it: the -wal and -shm go first, then the backup is copied over.
    for suffix in ("-wal", "-shm"):
        (db.parent / f"memory.db{suffix}").unlink(missing_ok=True)
    shutil.copy(backup, db)
    mended = memory_gate(tmp_path, "--db", str(db), "doctor", "--json")
    report = json.loads(mended.stdout)
    assert report["integrity"] == "ok" and report["facts"]["state"] == 20
