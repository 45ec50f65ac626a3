"""Every command on memory in a bad state: locked, read-only, corrupt, another program's file,
empty, a damaged word index, a tampered write.log. Each answers with what happened and the mend,
exits 1 (doctor: with the true cause), never prints a traceback, and never writes into a file
that is not memory-gate's.

In-process through gate.cli.main.main: the boundary is the command, not the process.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import apsw
import pytest
from conftest import child_env

from gate.cli import main as cli
from gate.engine import files, store
from gate.memory import audit
from gate.serve import tools

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def seed(path: Path) -> None:
    conn = store.connect(path)
    for topic in ("deploy", "tests"):
        tools.memory_write(conn, [{"op": "insert", "topic": topic, "kind": "state", "text": f"The {topic} go through staging."}],
                           [], tools.Caller("seed"), log=audit.log_path(path))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def first_entry(path: Path) -> str:
    for line in audit.log_path(path).read_text().splitlines():
        entry = json.loads(line)
        return f"{entry['write'][:8]}:{entry['id']}"
    raise AssertionError("no log line")


def immutable(paths: list[Path]):
    """Make files unwritable, root included (chattr +i), or skip."""
    if IS_ROOT:
        if not shutil.which("chattr"):
            pytest.skip("running as root needs chattr to make files read-only")
        if subprocess.run(["chattr", "+i", *map(str, paths)], capture_output=True).returncode:
            pytest.skip("chattr +i not permitted here")
    else:
        for path in paths:
            path.chmod(0o400)


def mutable(paths: list[Path]):
    if IS_ROOT:
        subprocess.run(["chattr", "-i", *map(str, paths)], check=True)
    else:
        for path in paths:
            path.chmod(0o600)


# Each state: (make it, the words the answer must hold, whether the file is memory-gate's).
# A state's maker returns a function that undoes what must be undone for tmp_path's removal.


def locked(db: Path, monkeypatch):
    monkeypatch.setattr(store, "BUSY_TIMEOUT_MS", 100)
    holder = apsw.Connection(str(db))
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("SELECT count(*) FROM facts").fetchall()
    return holder.close


def read_only(db: Path, monkeypatch):
    paths = [db, audit.log_path(db)]
    immutable(paths)
    return lambda: mutable(paths)


def read_only_log(db: Path, monkeypatch):
    paths = [audit.log_path(db)]
    immutable(paths)
    return lambda: mutable(paths)


def corrupt_header(db: Path, monkeypatch):
    data = bytearray(db.read_bytes())
    data[:100] = os.urandom(100)
    db.write_bytes(bytes(data))


def corrupt_pages(db: Path, monkeypatch):
    data = bytearray(db.read_bytes())
    page = 4096
    for start in range(page, len(data), page):  # every page after the first: the tables' roots
        data[start : start + 64] = os.urandom(64)
    db.write_bytes(bytes(data))


def word_index(db: Path, monkeypatch):
    conn = store.connect(db)
    conn.execute("UPDATE facts_fts_config SET v = 99 WHERE k = 'version'")
    conn.close()


def foreign(db: Path, monkeypatch):
    for name in (db, *(Path(f"{db}{suffix}") for suffix in files.COMPANIONS)):
        name.unlink(missing_ok=True)
    conn = apsw.Connection(str(db))
    conn.execute("CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url TEXT); INSERT INTO moz_places (url) VALUES ('https://example.org')")
    conn.close()


def foreign_versioned(db: Path, monkeypatch):
    foreign(db, monkeypatch)
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA user_version = 3")
    conn.close()


def empty(db: Path, monkeypatch):
    for name in (db, *(Path(f"{db}{suffix}") for suffix in files.COMPANIONS)):
        name.unlink(missing_ok=True)
    db.write_bytes(b"")


def nested_log(db: Path, monkeypatch):
    with audit.log_path(db).open("a") as log:
        log.write("[" * 100_000 + "]" * 100_000 + "\n")


STATES = {
    "locked": (locked, "busy"),
    "read-only": (read_only, "read-only"),
    "read-only write.log": (read_only_log, "write.log"),
    "corrupt header": (corrupt_header, "not a SQLite database"),
    "corrupt pages": (corrupt_pages, "damaged"),
    "damaged word index": (word_index, "reindex"),
    "another program's file": (foreign, "not memory-gate's"),
    "another program's file, versioned": (foreign_versioned, "not memory-gate's"),
    "empty file": (empty, "empty"),
    "deeply nested write.log line": (nested_log, "write.log"),
}

# Which states each command may live through (exit 0): a reader of facts needs no write, no
# word index, no write.log; a reader of write.log needs no database write.
PASSES = {
    "search": {"read-only", "read-only write.log", "deeply nested write.log line"},
    "show": {"read-only", "read-only write.log", "damaged word index", "deeply nested write.log line"},
    "review": {"read-only", "read-only write.log", "damaged word index", "deeply nested write.log line"},
    "stats": {"read-only", "read-only write.log", "damaged word index", "deeply nested write.log line"},
    "export": {"read-only", "read-only write.log", "damaged word index", "deeply nested write.log line"},
    "log": {"read-only", "read-only write.log", "damaged word index", "deeply nested write.log line"},
    "history": {"read-only", "read-only write.log", "damaged word index", "deeply nested write.log line"},
    "undo": {"deeply nested write.log line"},
    "import": {"deeply nested write.log line"},
    "reindex": {"read-only write.log", "damaged word index", "deeply nested write.log line"},
    "doctor": set(),
}


def argv(command: str, db: Path, entry: str, tmp_path: Path) -> list[str]:
    if command == "import":
        source = tmp_path / "in.jsonl"
        source.write_text(json.dumps({"topic": "new", "kind": "state", "text": "A new fact to import.", "date": "2026-11-01"}) + "\n")
        return ["--db", str(db), "import", str(source)]
    extra = {"search": ["deploy"], "history": ["1"], "undo": [entry], "doctor": ["--no-claude"]}.get(command, [])
    return ["--db", str(db), command, *extra]


def digest(db: Path) -> dict[str, str]:
    return {name.name: hashlib.sha256(name.read_bytes()).hexdigest()
            for name in db.parent.iterdir() if name.is_file()}


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("command", PASSES)
def test_a_command_on_memory_in_a_bad_state_says_what_and_the_mend(tmp_path, home, monkeypatch, capsys, state, command):
    db = tmp_path / "memory" / "memory.db"
    seed(db)
    entry = first_entry(db)
    make, words = STATES[state]
    restore = make(db, monkeypatch)
    before = digest(db)
    try:
        code = cli.main(argv(command, db, entry, tmp_path))
        out, err = capsys.readouterr()
    finally:
        if restore:
            restore()
    said = out + err
    assert "Traceback" not in said
    if state in PASSES[command]:
        assert code == 0, said
        return
    assert code == 1, said
    assert words in said, said
    if state == "damaged word index":
        assert "backup" not in said, "a word index is rebuilt by reindex, not restored"
    if state in ("locked", "read-only"):
        assert "damaged" not in said, "a lock or a read-only file is no damage"
    if command != "doctor":
        assert err.startswith("memory-gate: ") and err.count("\n") == 1, err
    if state.startswith(("another program", "empty", "corrupt")):
        assert digest(db) == before, "a file that is not memory-gate's memory was written"


def test_a_process_shown_another_programs_database_leaves_it_as_it_was(tmp_path):
    places = tmp_path / "places.sqlite"
    foreign(places, None)
    before = places.read_bytes()
    shown = subprocess.run([sys.executable, "-m", "gate", "--db", str(places), "show"],
                           capture_output=True, text=True, env=child_env(tmp_path / "home"), timeout=60)
    assert shown.returncode == 1 and "Traceback" not in shown.stderr
    assert "not memory-gate's memory" in shown.stderr and "moz_places" in shown.stderr
    assert places.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["places.sqlite"]
