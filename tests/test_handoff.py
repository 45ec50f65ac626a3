"""The plugin's mod hands the server a memory tool call's turn as a note (gate/serve/handoff.py):
claimed once, in the call's own transaction, and never trusted beyond what the ledger keeps."""

from __future__ import annotations

import json
import os

import pytest

from gate.memory import ledger
from gate.serve import handoff, tools

SEARCH = "mcp__plugin_memory-gate_memory__memory_search"
WRITE = "mcp__plugin_memory-gate_memory__memory_write"


def note(folder, tool_use_id, **fields):
    folder.mkdir(parents=True, exist_ok=True)
    body = {"session_id": "hook-session", "prompt_id": "p1", "tool_name": SEARCH, "agent_id": None, **fields}
    path = folder / f"{tool_use_id}.json"
    path.write_text(json.dumps(body))
    return path


def test_a_note_is_claimed_once(tmp_path):
    path = note(tmp_path, "toolu_01", agent_id="agent-7")
    assert handoff.claim(tmp_path, "toolu_01") == handoff.Note("hook-session", "p1", SEARCH, "agent-7")
    assert not path.exists()
    assert handoff.claim(tmp_path, "toolu_01") is None


@pytest.mark.parametrize("raw", [
    b"", b"not json", b"[1, 2]", b'"text"',
    json.dumps({"prompt_id": "p1", "tool_name": SEARCH}).encode(),  # no session
    json.dumps({"session_id": "", "tool_name": SEARCH}).encode(),
    json.dumps({"session_id": "s", "tool_name": "Bash"}).encode(),  # not a memory tool
    json.dumps({"session_id": 7, "tool_name": SEARCH}).encode(),
    json.dumps({"session_id": "s", "tool_name": SEARCH, "pad": "x" * handoff.MAX_BYTES}).encode(),
    b"[" * 100_000,
])
def test_a_note_that_is_not_one_is_ignored_and_removed(tmp_path, raw):
    (tmp_path / "toolu_01.json").write_bytes(raw)
    assert handoff.claim(tmp_path, "toolu_01") is None
    assert not (tmp_path / "toolu_01.json").exists()


def test_fields_of_the_wrong_type_are_left_out_not_trusted(tmp_path):
    note(tmp_path, "toolu_01", prompt_id=12, agent_id=["a"])
    assert handoff.claim(tmp_path, "toolu_01") == handoff.Note("hook-session", None, SEARCH, None)


@pytest.mark.parametrize("tool_use_id", ["../toolu_01", "toolu/01", "", ".", "toolu_01\x00", "t" * 129, "tölu"])
def test_a_call_id_that_is_no_plain_name_never_names_a_path(tmp_path, tool_use_id):
    inner = tmp_path / "calls"
    note(tmp_path, "toolu_01")  # where "../toolu_01" would lead from calls/
    assert handoff.claim(inner, tool_use_id) is None
    assert (tmp_path / "toolu_01.json").exists()


def test_the_sweep_takes_notes_a_day_old_only(tmp_path):
    old, new = note(tmp_path, "toolu_old"), note(tmp_path, "toolu_new")
    other = tmp_path / "keep.txt"
    other.write_text("not a note")
    day_ago = old.stat().st_mtime - handoff.STALE_AFTER - 1
    os.utime(old, (day_ago, day_ago))
    os.utime(other, (day_ago, day_ago))
    assert handoff.sweep(tmp_path) == 1
    assert not old.exists() and new.exists() and other.exists()
    assert handoff.sweep(tmp_path / "missing") == 0


def test_the_sweep_takes_the_marks_of_sessions_long_over(tmp_path):
    done = handoff.marks(str(tmp_path))
    done.mkdir()
    old, new = done / "Stop-old-session", done / "Stop-new-session"
    old.write_text("")
    new.write_text("1")
    day_ago = old.stat().st_mtime - handoff.STALE_AFTER - 1
    os.utime(old, (day_ago, day_ago))
    assert handoff.sweep(done, suffix="") == 1
    assert not old.exists() and new.exists()


def test_a_search_is_put_on_the_turn_and_context_the_note_names(conn, tmp_path):
    """The server's own session variable is wrong here (as under --continue): the note's session
    and prompt put the call on the hook's turn, and its agent gives the subagent its own context."""
    fact = tools.memory_write(conn, [{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}], [], tools.Caller("setup"), log=None)
    fact_id = fact.outcome.done[0]["id"]
    turn = ledger.open_turn(conn, "hook-session", "p1", "how do deploys work?")
    calls = tmp_path / "calls"
    note(calls, "toolu_main")
    note(calls, "toolu_sub", agent_id="agent-7")
    main = tools.memory_search(conn, "deploy", tools.Caller("wrong-session", "toolu_main", "proc", calls))
    sub = tools.memory_search(conn, "deploy", tools.Caller("wrong-session", "toolu_sub", "proc", calls))
    assert main.results[0].full and sub.results[0].full  # the subagent's context never saw it
    assert ledger.turn_of_tool_call(conn, "toolu_main").id == turn.id
    assert ledger.turn_of_tool_call(conn, "toolu_sub").id == turn.id
    assert ledger.get_turn(conn, turn.id).searched == 2 and ledger.unanswered(conn, turn.id) == [fact_id]
    assert list(calls.iterdir()) == []
    # Without a note, the same call falls back on the session it names.
    tools.memory_search(conn, "deploy", tools.Caller("wrong-session", "toolu_none", "proc", calls))
    assert ledger.turn_of_tool_call(conn, "toolu_none") is None
    assert ledger.get_turn(conn, turn.id).searched == 2


def test_a_write_answering_nothing_owed_settles_the_turn_met_and_a_search_unsettles_it(conn, tmp_path):
    """The mod lets such an answer out with no gate process and no Stop hook: the write itself
    records that the turn complied."""
    turn = ledger.open_turn(conn, "hook-session", "p1", "note the deploy rule")
    calls = tmp_path / "calls"
    note(calls, "toolu_1")
    note(calls, "toolu_2", tool_name=WRITE)
    note(calls, "toolu_3")
    caller = lambda call: tools.Caller("wrong-session", call, "proc", calls)  # noqa: E731
    tools.memory_search(conn, "deploy", caller("toolu_1"))
    assert ledger.get_turn(conn, turn.id).outcome is None
    tools.memory_write(conn, [{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}], [], caller("toolu_2"), log=None)
    assert ledger.get_turn(conn, turn.id).outcome == "met"
    tools.memory_search(conn, "deploy", caller("toolu_3"))
    assert ledger.get_turn(conn, turn.id).outcome is None  # owes an answer for what it read


def test_a_write_before_any_search_leaves_the_turn_unsettled(conn):
    turn = ledger.open_turn(conn, "s1", "p1", "note the deploy rule")
    tools.memory_write(conn, [{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}], [], tools.Caller("s1"), log=None)
    assert ledger.get_turn(conn, turn.id).outcome is None  # it still owes a search


def test_a_released_turn_stays_released(conn):
    turn = ledger.open_turn(conn, "s1", "p1", "note the deploy rule")
    tools.memory_search(conn, "deploy", tools.Caller("s1"))
    ledger.settle(conn, turn.id, "released")
    tools.memory_write(conn, [], [], tools.Caller("s1"), log=None)
    assert ledger.get_turn(conn, turn.id).outcome == "released"
