"""Storage faults: a read-only or full disk, a lock held too long, a corrupt file.

Search answers or says clearly why not; a write fails whole with a message naming the mend;
nothing stored is damaged. (Hooks failing open on the same faults: tests/test_hooks.py.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from gate.engine import health, store
from gate.memory import audit, write
from gate.serve import tools

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def seed(path: Path) -> None:
    conn = store.connect(path)
    tools.memory_write(conn, [{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}],
                       [], tools.Caller("seed"), log=audit.log_path(path))
    conn.close()


def contents(path: Path) -> list:
    conn = store.connect(path)
    rows = list(conn.execute("SELECT id, topic, kind, text FROM facts ORDER BY id"))
    assert health.check_integrity(conn) == []
    assert audit.check(conn, audit.log_path(path)).ok
    conn.close()
    return rows


def protect(paths: list[Path]) -> None:
    """Make files or folders unwritable: immutable as root (root ignores modes), modes otherwise."""
    if IS_ROOT:
        if not shutil.which("chattr"):
            pytest.skip("running as root needs chattr to make files read-only")
        result = subprocess.run(["chattr", "+i", *map(str, paths)], capture_output=True)
        if result.returncode:
            pytest.skip(f"chattr +i not permitted here: {result.stderr.decode().strip()}")
    else:
        for path in paths:
            path.chmod(0o500 if path.is_dir() else 0o400)


def unprotect(paths: list[Path]) -> None:
    if IS_ROOT:
        subprocess.run(["chattr", "-i", *map(str, paths)], check=True)
    else:
        for path in paths:
            path.chmod(0o700 if path.is_dir() else 0o600)


@pytest.fixture
def read_only(tmp_path):
    """A memory database file nothing may write (its folder still writable)."""
    path = tmp_path / "memory" / "memory.db"
    seed(path)
    protect([path])
    yield path
    unprotect([path])


def test_a_read_only_folder_is_explained(tmp_path):
    folder = tmp_path / "memory"
    path = folder / "memory.db"
    seed(path)
    protect([path, folder])
    try:
        with pytest.raises((store.StoreError, apsw.Error)) as caught:
            conn = store.connect(path)
            tools.memory_search(conn, "deploy", tools.Caller("s"))
        message = store.explain(caught.value)
        assert "read-only" in message or "cannot be opened" in message
    finally:
        unprotect([path, folder])
    assert contents(path)[0][3] == "Deploys go through staging."


def test_read_only_memory_still_answers_a_search_and_refuses_a_write_clearly(read_only):
    before = read_only.read_bytes()
    conn = store.connect(read_only)
    answer = tools.memory_search(conn, "deploy", tools.Caller("s"))
    assert [r.fact.text for r in answer.results] == ["Deploys go through staging."]
    assert "read-only" in answer.text and "not recorded" in answer.text and "permissions" in answer.text
    with pytest.raises(apsw.ReadOnlyError) as caught:
        tools.memory_write(conn, [{"op": "insert", "topic": "t", "kind": "state", "text": "x"}], [],
                           tools.Caller("s"), log=audit.log_path(read_only))
    assert "check their permissions" in store.explain(caught.value)
    conn.close()
    assert read_only.read_bytes() == before


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MB filesystem (tmpfs, root only) holding the memory folder."""
    if not IS_ROOT or sys.platform != "linux":
        pytest.skip("a small filesystem needs root on Linux (mount -t tmpfs); CI runs as root")
    mount = tmp_path / "disk"
    mount.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True)
    if result.returncode:
        pytest.skip(f"mount not permitted here: {result.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


def test_a_full_disk_fails_the_write_whole_and_damages_nothing(small_disk):
    path = small_disk / "memory" / "memory.db"
    seed(path)
    before = contents(path)
    conn = store.connect(path)  # open before the disk fills, as a running server's is
    filler = small_disk / "filler"
    with open(filler, "wb") as handle:  # take every free byte
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass
    caller = tools.Caller("full")
    failures = 0
    for attempt in range(20):  # the last free blocks may let a small write through first
        ops = [{"op": "insert", "topic": "big", "kind": "event", "text": f"{attempt} " + "x" * 590}]
        try:
            tools.memory_write(conn, ops, [], caller, log=audit.log_path(path))
        except (apsw.Error, OSError) as error:
            failures += 1
            assert "free some space" in store.explain(error)
    assert failures
    answer = tools.memory_search(conn, "deploy", caller)  # reading still works, and says what did not
    assert [r.fact.topic for r in answer.results][:1] == ["deploy"]
    assert any("not recorded" in note for note in answer.notes) or not failures
    conn.close()
    filler.unlink()
    after = contents(path)
    assert after[: len(before)] == before  # what was stored is intact
    assert all(row[1] == "big" for row in after[len(before):])  # and only whole writes were added


def test_a_lock_held_too_long_is_a_busy_error_naming_the_mend(tmp_path):
    path = tmp_path / "memory.db"
    seed(path)
    holder = store.connect(path)
    holder.execute("BEGIN EXCLUSIVE")
    waiter = store.connect(path, busy_ms=100)
    with pytest.raises(apsw.BusyError) as caught:
        tools.memory_write(waiter, [], [], tools.Caller("w"), log=None)
    assert "call again in a moment" in store.explain(caught.value)
    holder.execute("ROLLBACK")
    assert contents(path)[0][3] == "Deploys go through staging."


def test_a_corrupt_file_is_refused_with_the_mend_and_left_as_it_was(tmp_path):
    path = tmp_path / "memory.db"
    path.write_bytes(b"not a database at all" * 500)
    with pytest.raises(store.StoreError) as caught:
        store.connect(path)
    assert "damaged" in store.explain(caught.value) and "doctor" in store.explain(caught.value)
    assert path.read_bytes() == b"not a database at all" * 500


def test_a_failed_log_append_applies_nothing(tmp_path, monkeypatch):
    path = tmp_path / "memory.db"
    seed(path)
    conn = store.connect(path)

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(audit, "append", disk_full)
    with pytest.raises(OSError) as caught:
        tools.memory_write(conn, [{"op": "insert", "topic": "t", "kind": "state", "text": "never"}], [],
                           tools.Caller("s"), log=audit.log_path(path))
    assert "disk is full" in store.explain(caught.value)
    assert [row[3] for row in conn.execute("SELECT * FROM facts")] == ["Deploys go through staging."]


def test_files_and_folders_are_private_from_creation(tmp_path):
    path = tmp_path / "a" / "memory" / "memory.db"
    seed(path)
    conn = store.connect(path)  # -wal and -shm exist while a connection is open
    assert (path.parent.stat().st_mode & 0o777, (tmp_path / "a").stat().st_mode & 0o777) == (0o700, 0o700)
    for file in (path, audit.log_path(path), Path(str(path) + "-wal"), Path(str(path) + "-shm")):
        assert file.stat().st_mode & 0o777 == 0o600, file
    conn.close()


def test_refusals_are_not_exceptions_of_the_store(tmp_path):
    """A refused write is the agent's to mend, not a storage fault: it says what to change."""
    path = tmp_path / "memory.db"
    seed(path)
    conn = store.connect(path)
    with pytest.raises(write.Refused):
        tools.memory_write(conn, [{"op": "delete", "id": 99}], [], tools.Caller("s"), log=audit.log_path(path))
