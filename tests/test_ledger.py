from gate.memory import ledger
from gate.serve import tools


def test_tool_call_id_wins_over_a_wrong_session_id(conn):
    """Under --continue the server's session variable is a fresh id nothing else uses."""
    hook_turn = ledger.open_turn(conn, "real-session", "prompt-1", "fix the build")
    ledger.record_tool_call(conn, "toolu_A", "real-session", "prompt-1", "mcp__memory__memory_search")
    turn = ledger.attribute(conn, tool_use_id="toolu_A", session="wrong-session-id")
    assert turn.id == hook_turn.id and turn.prompt == "fix the build"


def test_session_id_gives_its_latest_hook_turn(conn):
    ledger.open_turn(conn, "s1", "p1", "first")
    second = ledger.open_turn(conn, "s1", "p2", "second")
    assert ledger.attribute(conn, tool_use_id="unknown", session="s1").id == second.id
    assert ledger.attribute(conn, tool_use_id=None, session="s1").id == second.id


def test_a_hook_turn_stays_current_across_writes(conn):
    turn = ledger.open_turn(conn, "s1", "p1", "first")
    tools.memory_write(conn, [], [], tools.Caller("s1"), log=None)
    tools.memory_write(conn, [], [], tools.Caller("s1"), log=None)
    assert ledger.current_turn(conn, "s1").id == turn.id


def test_server_turns_run_from_write_to_write(conn):
    first = ledger.current_turn(conn, "proc")
    assert ledger.current_turn(conn, "proc").id == first.id  # no write yet: same turn
    tools.memory_write(conn, [{"op": "insert", "topic": "a", "kind": "state", "text": "b"}], [], tools.Caller("proc"), log=None)
    second = ledger.current_turn(conn, "proc")
    assert second.id != first.id and second.prompt_id is None


def test_open_turn_is_idempotent_and_fills_the_prompt_later(conn):
    # PreToolUse may arrive for a turn whose UserPromptSubmit hook did not run.
    ledger.record_tool_call(conn, "toolu_B", "s1", "p1", "mcp__memory__memory_search")
    turn = ledger.open_turn(conn, "s1", "p1", "the words")
    assert turn.prompt == "the words"
    assert ledger.open_turn(conn, "s1", "p1", "the words").id == turn.id
    assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 1


def test_reads_and_answers(conn, writer):
    a = writer.insert("x", "alpha")
    b = writer.insert("x", "beta")
    turn = writer.turn()
    ledger.record_search(conn, turn, [(a, 1), (b, 1)])
    assert ledger.unanswered(conn, turn.id) == [a, b]
    ledger.record_write(conn, turn)
    assert ledger.unanswered(conn, turn.id) == []
    ledger.record_search(conn, turn, [(a, 1)])  # read again: must be answered again
    assert ledger.unanswered(conn, turn.id) == [a]


def test_forget_shown(conn, writer):
    a = writer.insert("x", "alpha")
    turn = writer.turn()
    ledger.record_search(conn, turn, [(a, 1)])
    assert ledger.shown_revisions(conn, turn.session, [a]) == {a: 1}
    ledger.forget_shown(conn, turn.session)
    assert ledger.shown_revisions(conn, turn.session, [a]) == {}


def test_a_prompt_sqlite_cannot_store_still_opens_its_turn(conn):
    turn = ledger.open_turn(conn, "s1", "p1", "fix \ud800 the build \udfff")
    assert turn.prompt == "fix \ufffd the build \ufffd"
    assert ledger.gate(conn, "s1", "p1").met is False
    assert ledger.storable("plain 🙂") == "plain 🙂"
