"""Shared fixtures: databases (in memory and on disk), an isolated home, a fact writer."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from gate import ledger, store, tools

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"


@pytest.fixture
def conn():
    """A private in-memory database, schema applied."""
    connection = store.connect(":memory:")
    yield connection
    connection.close()


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "memory" / "memory.db"


@pytest.fixture
def file_conn(db_path):
    connection = store.connect(db_path)
    yield connection
    connection.close()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """MEMORY_GATE_HOME in a temp folder, Claude Code's variables cleared, cwd a project."""
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("MEMORY_GATE_HOME", str(tmp_path / "home"))
    for name in list(os.environ):
        if name.startswith(("CLAUDE", "MEMORY_GATE_")) and name != "MEMORY_GATE_HOME":
            monkeypatch.delenv(name)
    monkeypatch.chdir(project)
    return tmp_path / "home"


def child_env(home: Path, **extra: str) -> dict[str, str]:
    """Environment for a subprocess of the product: this interpreter's PATH, the isolated home."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("CLAUDE", "MEMORY_GATE_"))
    }
    env["MEMORY_GATE_HOME"] = str(home)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(extra)
    return env


class Writer:
    """Writes facts the way the agent does, through one session's turns."""

    def __init__(self, conn, log: Path | None = None, session: str = "s-test"):
        self.conn = conn
        self.log = log
        self.caller = tools.Caller(session)

    def insert(self, topic: str, text: str, kind: str = "state", date: str | None = None) -> int:
        op = {"op": "insert", "topic": topic, "kind": kind, "text": text}
        if date is not None:
            op["date"] = date
        answer = tools.memory_write(self.conn, [op], [], self.caller, log=self.log)
        return answer.outcome.new_ids[0]

    def write(self, ops, kept=(), caller: tools.Caller | None = None):
        return tools.memory_write(self.conn, list(ops), list(kept), caller or self.caller, log=self.log)

    def search(self, terms: str, caller: tools.Caller | None = None):
        return tools.memory_search(self.conn, terms, caller or self.caller)

    def turn(self, caller: tools.Caller | None = None) -> ledger.Turn:
        return (caller or self.caller).attribute(self.conn)


@pytest.fixture
def writer(conn):
    return Writer(conn)


@pytest.fixture
def file_writer(file_conn, db_path):
    from gate import audit

    return Writer(file_conn, audit.log_path(db_path))
