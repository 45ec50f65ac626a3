"""Files that could be redirected: memory never writes through a symbolic link, nor into another
user's file in a folder others can write. Through the real `memory-gate serve` over stdio."""

from __future__ import annotations

import os

import apsw
import pytest
from test_server import run_client

from gate.engine import store

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
INSERT = {"ops": [{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}], "kept": []}


def write_twice(project, home, between=None, **env):
    """Two memory_writes by one server; `between()` runs once the first has answered."""

    async def script(client):
        first = await client.call_tool("memory_write", INSERT)
        if between is not None:
            between()
        second = await client.call_tool("memory_write", {**INSERT, "ops": [{**INSERT["ops"][0], "text": "Second."}]})
        return first, second

    return run_client(project, home, script, **env)


@pytest.fixture
def victim(tmp_path):
    """A file of the owner's that a planted link points at."""
    path = tmp_path / "victim" / "bashrc"
    path.parent.mkdir()
    path.write_text("export PATH=/usr/bin\n")
    return path


def facts(db):
    conn = apsw.Connection(str(db))  # not store.connect: it refuses the planted link too
    try:
        return [row[0] for row in conn.execute("SELECT text FROM facts ORDER BY id")]
    finally:
        conn.close()


def test_write_log_planted_as_a_link_is_refused_with_the_mend(project, tmp_path, victim):
    db = tmp_path / "memory" / "memory.db"
    store.connect(db).close()
    (db.parent / "write.log").symlink_to(victim)
    first, second = write_twice(project, tmp_path / "home", MEMORY_GATE_DB=str(db))
    for result in (first, second):
        assert result.is_error and "symbolic link" in result.content[0].text
        assert "Remove the link" in result.content[0].text
    assert victim.read_text() == "export PATH=/usr/bin\n"
    assert facts(db) == []


def test_a_link_planted_while_the_server_runs_is_not_followed(project, tmp_path, victim):
    db = tmp_path / "memory" / "memory.db"
    log = db.parent / "write.log"

    def plant():
        log.unlink()
        log.symlink_to(victim)

    first, second = write_twice(project, tmp_path / "home", between=plant, MEMORY_GATE_DB=str(db))
    assert not first.is_error
    assert second.is_error and "symbolic link" in second.content[0].text
    assert victim.read_text() == "export PATH=/usr/bin\n"
    assert facts(db) == ["Deploys go through staging."]  # the refused write applied nothing


def test_a_dangling_link_does_not_create_its_target(project, tmp_path):
    db = tmp_path / "memory" / "memory.db"
    store.connect(db).close()
    target = tmp_path / "elsewhere" / "created-by-memory"
    target.parent.mkdir()
    (db.parent / "write.log").symlink_to(target)
    first, _ = write_twice(project, tmp_path / "home", MEMORY_GATE_DB=str(db))
    assert first.is_error and "symbolic link" in first.content[0].text
    assert not target.exists()


@pytest.fixture
def sticky(tmp_path):
    """A shared folder like /tmp: everyone may create files, each only removes their own."""
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o1777)
    return folder


def plant_link(link, target):
    link.symlink_to(target)
    if IS_ROOT:
        os.lchown(link, 65534, 65534)  # another user's link, as it would be in /tmp


@pytest.mark.parametrize("name", ["memory.db", "memory.db-wal", "write.log"])
def test_links_planted_in_a_shared_folder_are_refused(project, tmp_path, sticky, victim, name):
    plant_link(sticky / name, victim)
    first, _ = write_twice(project, tmp_path / "home", MEMORY_GATE_DB=str(sticky / "memory.db"))
    assert first.is_error and "symbolic link" in first.content[0].text, first.content[0].text
    assert victim.read_text() == "export PATH=/usr/bin\n"


@pytest.mark.skipif(not IS_ROOT, reason="a file of another user can only be made as root")
def test_another_users_file_in_a_shared_folder_is_not_written(project, tmp_path, sticky):
    planted = sticky / "write.log"
    planted.write_text("")
    planted.chmod(0o666)
    os.chown(planted, 65534, 65534)
    first, _ = write_twice(project, tmp_path / "home", MEMORY_GATE_DB=str(sticky / "memory.db"))
    assert first.is_error and "belongs to another user" in first.content[0].text
    assert planted.read_text() == ""


@pytest.mark.parametrize("name", ["memory.db", "memory.db-wal", "memory.db-journal"])
def test_a_database_or_companion_that_is_not_a_regular_file_is_refused(tmp_path, name):
    """MEMORY_GATE_DB=/dev/null once had SQLite, as root, create /dev/null-journal: a database
    (or a file SQLite writes beside it) that is a device or a pipe is refused, nothing created."""
    folder = tmp_path / "memory"
    folder.mkdir()
    os.mkfifo(folder / name)
    if name != "memory.db":
        (folder / "memory.db").touch()
    with pytest.raises(store.StoreError, match="is not a regular file"):
        store.connect(folder / "memory.db")
    assert sorted(path.name for path in folder.iterdir()) == sorted({name, "memory.db"})
