"""The memory server as the gate's witness: its own record of each turn's memory calls, the
loopback port the Stop hook asks it on, and the question (gate.serve.sightings,
gate.memory.witness)."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from gate.memory import ledger, witness
from gate.serve import sightings


def turn(prompt_id: str | None = "p1", session: str = "s1") -> ledger.Turn:
    return ledger.Turn(1, session, prompt_id, "the owner's words", 0, 0, 0, None)


@pytest.fixture
def database(tmp_path) -> str:
    return str(tmp_path / "projects" / "key" / "memory" / "memory.db")


@pytest.fixture
def server(database):
    found = sightings.Witness.listen(witness.folder(database))
    yield found
    found.close()


def test_a_turn_owes_what_its_searches_returned_until_a_write_answers_for_it():
    record = sightings.Record()
    assert record.answer("s1", "p1") == {"searched": False, "wrote": False, "unanswered": []}
    record.searched(turn(), [3, 1])
    record.wrote(turn(), [1])
    assert record.answer("s1", "p1") == {"searched": True, "wrote": True, "unanswered": [3]}
    record.searched(turn(), [1])  # read again: owed again
    assert record.answer("s1", "p1")["unanswered"] == [1, 3]
    assert record.answer("s1", "p2") == {"searched": False, "wrote": False, "unanswered": []}
    assert record.answer("s2", "p1")["searched"] is False


def test_a_fact_another_session_deleted_is_owed_no_more_after_the_turns_write(tmp_path):
    """The record learns from the write's answer which facts the turn read are gone: no write can
    answer for them, and the Stop hook would hold the turn for them three times for nothing."""
    from gate.engine import store
    from gate.serve import tools

    conn = store.connect(str(tmp_path / "memory.db"))
    record = sightings.Record()
    other = tools.Caller("s2")

    def mine(call: str, tool: str) -> tools.Caller:  # a call of turn p1, as the PreToolUse hook maps it
        with store.writing(conn):
            ledger.record_tool_call(conn, call, "s1", "p1", f"mcp__memory-gate__{tool}", None)
        return tools.Caller("s1", tool_use_id=call)

    new = {"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}
    tools.memory_write(conn, [new], [], other, log=None)
    found = tools.memory_search(conn, "deploy", mine("t1", "memory_search"))
    record.searched(found.turn, [result.fact.id for result in found.results])
    [fact] = record.answer("s1", "p1")["unanswered"]
    tools.memory_search(conn, "deploy", other)
    tools.memory_write(conn, [{"op": "delete", "id": fact}], [], other, log=None)
    written = tools.memory_write(conn, [], [], mine("t2", "memory_write"), log=None)
    record.wrote(written.turn, written.answered)
    assert record.answer("s1", "p1") == {"searched": True, "wrote": True, "unanswered": []}


def test_a_server_turn_is_not_recorded_and_old_turns_go_first(monkeypatch):
    record = sightings.Record()
    record.searched(turn(None), [1])
    assert record._turns == {}
    monkeypatch.setattr(sightings, "MAX_TURNS", 2)
    for prompt_id in ("p1", "p2", "p3"):
        record.searched(turn(prompt_id), [])
    assert list(record._turns) == [("s1", "p2"), ("s1", "p3")]


def test_the_hook_asks_the_running_server_and_gets_its_record(server, database):
    server.record.searched(turn(), [7])
    found = witness.ask(database, "s1", "p1")
    assert (found.searched, found.wrote, found.unanswered) == (True, False, [7])
    never = witness.ask(database, "s1", "p9")
    assert (never.searched, never.wrote, never.unanswered) == (False, False, [])


def test_the_address_is_private_and_goes_with_the_server(database):
    server = sightings.Witness.listen(witness.folder(database))
    [name] = os.listdir(witness.folder(database))
    path = Path(witness.folder(database)) / name
    assert path.stat().st_mode & 0o777 == 0o600
    assert Path(witness.folder(database)).stat().st_mode & 0o777 == 0o700
    server.close()
    assert not path.exists()
    assert witness.ask(database, "s1", "p1") is None


def test_every_server_of_the_folder_is_asked_and_their_records_merged(server, database):
    other = sightings.Witness.listen(witness.folder(database))
    try:
        server.record.searched(turn(), [1, 2])
        other.record.wrote(turn(), [])
        found = witness.ask(database, "s1", "p1")
        assert (found.searched, found.wrote, found.unanswered) == (True, True, [1, 2])
    finally:
        other.close()


def test_a_question_without_the_servers_token_gets_no_answer(server):
    assert server.reply(witness.question("0" * 32, "s1", "p1")) is None
    assert server.reply(b"not json\n") is None
    assert server.reply(b'{"token": 1}\n') is None


def listening(database: str, answer) -> tuple[socket.socket, threading.Event]:
    """A port that is not a memory server, listed as one: it answers `answer` (bytes, or None to
    hold the connection open), as whatever took a dead server's port might."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    done = threading.Event()

    def run():
        conn, _ = listener.accept()
        with conn:
            conn.recv(4096)
            if answer is not None:
                conn.sendall(answer)
            done.wait(5)

    threading.Thread(target=run, daemon=True).start()
    folder = Path(witness.folder(database))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "1-stranger").write_text(witness.address(listener.getsockname()[1], "abc"))
    return listener, done


@pytest.mark.parametrize("answer", [None, b"HTTP/1.1 400 Bad Request\r\n\r\n", b'{"searched": "yes"}\n'])
def test_a_port_that_hangs_or_answers_garbage_is_no_answer_within_the_deadline(database, answer):
    listener, done = listening(database, answer)
    try:
        started = time.monotonic()
        assert witness.ask(database, "s1", "p1", deadline=0.3) is None
        assert time.monotonic() - started < 1.0
    finally:
        done.set()
        listener.close()


def test_a_server_that_is_gone_is_swept_by_the_next_one(database):
    folder = Path(witness.folder(database))
    folder.mkdir(parents=True)
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    (folder / "1-gone").write_text(witness.address(port, "abc"))
    assert witness.ask(database, "s1", "p1") is None
    server = sightings.Witness.listen(str(folder))
    try:
        assert not (folder / "1-gone").exists()
    finally:
        server.close()


@pytest.mark.parametrize("text", ["", "80", "x abc", "0 abc", "70000 abc", "80 a/b", "80 abc extra"])
def test_an_address_file_that_is_not_one_is_passed_over(text):
    assert witness.parse_address(text) is None


@pytest.mark.parametrize("how", ["the client leaves", "SIGINT"])
def test_memory_gate_serve_answers_on_its_port_and_takes_its_address_away_when_it_ends(tmp_path, database, how):
    import signal
    import subprocess
    import sys

    from conftest import child_env

    folder = Path(witness.folder(database))
    with subprocess.Popen(
        [sys.executable, "-m", "gate", "--db", database, "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=child_env(tmp_path / "home"),
    ) as server:
        try:
            deadline = time.monotonic() + 60
            while not (folder.is_dir() and [name for name in os.listdir(folder) if not name.endswith(".new")]):
                assert time.monotonic() < deadline and server.poll() is None, "no address was written"
                time.sleep(0.01)
            found = witness.ask(database, "s1", "p1")
            assert (found.searched, found.wrote, found.unanswered) == (False, False, [])
        finally:
            if how == "SIGINT":
                server.send_signal(signal.SIGINT)
            else:
                server.stdin.close()
            assert server.wait(30) == 0
    assert os.listdir(folder) == []
    assert witness.ask(database, "s1", "p1") is None
