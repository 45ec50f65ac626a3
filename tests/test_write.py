import json

import pytest

from gate.memory import audit, ledger, write
from gate.serve import tools


def facts(conn):
    return sorted(conn.execute("SELECT id, topic, kind, text, date FROM facts"))


def ins(topic="deploy", kind="state", text="Deploys go through staging.", **extra):
    return {"op": "insert", "topic": topic, "kind": kind, "text": text, **extra}


def refused(writer, ops, kept=()):
    before = facts(writer.conn)
    with pytest.raises(write.Refused) as caught:
        tools.memory_write(writer.conn, ops, kept, writer.caller, log=None)
    assert facts(writer.conn) == before, "a refused write must change nothing"
    return str(caught.value)


# -- refusals: each names the problem and its mend --------------------------------------------


@pytest.mark.parametrize(
    "ops, kept, expected",
    [
        ([ins(text="x" * 601)], [], ["text is 601 characters", "at most 600", "One subject per fact"]),
        ([ins(topic="  ")], [], ["topic is empty", 'e.g. "deploy"']),
        ([ins(text="")], [], ["text is empty"]),
        ([ins(kind="note")], [], ['kind "note"', "state", "event", "decision", "trap"]),
        ([{"op": "insert", "kind": "state", "text": "x"}], [], ["insert needs topic"]),
        ([{"op": "update", "id": 999, "text": "x"}], [], ["there is no fact 999", "insert a new fact"]),
        ([{"op": "delete", "id": 999}], [], ["there is no fact 999"]),
        ([], [999], ["kept: there is no fact 999", "take it out of kept"]),
        ([{"op": "upsert"}], [], ['"op" is "upsert"', 'use "insert", "update" or "delete"']),
        (["insert"], [], ["ops[0] is \"insert\", not a change", "give an object"]),
        ([ins(title="x")], [], ['remove "title"', "insert takes topic, kind, text, date"]),
        ([{"op": "update", "id": "1", "text": "x"}], [], ["needs the id of the fact, an integer"]),
        ([{"op": "update", "id": True, "text": "x"}], [], ["an integer (got true)"]),
        ([ins(text=42)], [], ["text must be a string (got 42)"]),
        ([ins(date="yesterday")], [], ['date "yesterday" is not a day', "YYYY-MM-DD"]),
        ([ins(date="2026-02-30")], [], ["is not a day"]),
        ([ins(date="9999-12-31")], [], ["date 9999-12-31 is outside 1900-01-01 to 2099-12-31"]),
        ([ins(topic="two\nlines")], [], ["topic must be one line"]),
        ([ins(topic="t" * 101)], [], ["topic is 101 characters", "at most 100"]),
        ([ins(text="bell \x07")], [], ["control character (U+0007)", "remove it"]),
        ([ins(text="bad \ud800")], [], ["lone surrogate", "remove it"]),
        ({"op": "insert"}, [], ["ops must be a list", "or []"]),
        ([], "12", ["kept must be a list of fact ids", "e.g. [12, 15]"]),
        ([], [1.5], ["kept[0] is 1.5, not a fact id"]),
    ],
)
def test_refusal_names_the_mend(writer, ops, kept, expected):
    writer.insert("deploy", "Deploys go through staging.")
    message = refused(writer, ops, kept)
    assert message.startswith("memory_write refused, nothing was changed.")
    for part in expected:
        assert part in message


def test_all_problems_are_named_at_once(writer):
    message = refused(writer, [ins(text="x" * 700), ins(kind="note"), {"op": "delete", "id": 5}], ["a"])
    assert message.count("\n- ") == 4


def test_update_that_changes_nothing_says_to_keep(writer):
    fact = writer.insert("deploy", "Deploys go through staging.")
    message = refused(writer, [{"op": "update", "id": fact}])
    assert f"put {fact} in kept if it still holds" in message


def test_same_fact_twice_in_ops(writer):
    fact = writer.insert("deploy", "Deploys go through staging.")
    message = refused(writer, [{"op": "update", "id": fact, "text": "a"}, {"op": "delete", "id": fact}])
    assert "ops[0] and ops[1] both change fact" in message and "merge them into one op" in message


def test_fact_in_kept_and_in_ops(writer):
    fact = writer.insert("deploy", "Deploys go through staging.")
    message = refused(writer, [{"op": "delete", "id": fact}], [fact])
    assert "take it out of kept" in message


def test_600_characters_fit_601_do_not(writer):
    fits = writer.insert("limit", "é" * 600)  # characters, not bytes
    assert len(writer.conn.execute("SELECT text FROM facts WHERE id = ?", (fits,)).fetchone()[0]) == 600
    refused(writer, [ins(text="é" * 601)])


def test_text_is_trimmed_before_it_is_measured(writer):
    fact = writer.insert("deploy", "  " + "x" * 600 + "\n")
    assert writer.conn.execute("SELECT length(text) FROM facts WHERE id = ?", (fact,)).fetchone()[0] == 600


# -- the contract: every fact read this turn answered for --------------------------------------


def test_unanswered_reads_are_listed_and_nothing_applies(writer):
    a = writer.insert("deploy", "Deploys go through staging.")
    b = writer.insert("deploy", "Deploy freezes on Fridays.")
    assert {r.fact.id for r in writer.search("deploy").results} == {a, b}
    message = refused(writer, [ins(topic="other", text="New fact.")], [a])
    assert f"fact {b} read this turn is not answered for: put it in kept" in message
    message = refused(writer, [ins(topic="other", text="New fact.")])
    assert f"facts {a}, {b} read this turn are not answered for: put each in kept" in message


def test_only_facts_read_this_turn_may_be_kept(writer):
    """Keeping confirms a fact: a turn cannot confirm what it never looked at."""
    a = writer.insert("deploy", "Deploys go through staging.")
    b = writer.insert("freeze", "Deploy freezes on Fridays.")
    writer.conn.execute("UPDATE facts SET confirmed = '2020-01-01T00:00:00Z'")
    assert {r.fact.id for r in writer.search("staging").results} == {a}
    message = refused(writer, [], [a, b])
    assert f"kept: fact {b} was not read this turn; only facts a memory_search returned this turn can be kept" in message
    assert f"fact {a}" not in message.replace(f"fact {b}", "")
    confirmed = dict(writer.conn.execute("SELECT id, confirmed FROM facts"))
    assert confirmed == {a: "2020-01-01T00:00:00Z", b: "2020-01-01T00:00:00Z"}  # nothing confirmed
    assert writer.write([], [a]).outcome.kept == [a]


def test_keep_update_delete_each_answer(writer):
    a = writer.insert("deploy", "Deploys go through staging.")
    b = writer.insert("deploy", "Deploy freezes on Fridays.")
    c = writer.insert("deploy", "Deploy script lives in ops/.")
    writer.search("deploy")
    answer = writer.write([{"op": "update", "id": b, "text": "Deploy freezes on Thursdays."}, {"op": "delete", "id": c}], [a])
    assert answer.outcome.kept == [a]
    assert [item["op"] for item in answer.outcome.done] == ["update", "delete"]
    assert facts(writer.conn) == [
        (a, "deploy", "state", "Deploys go through staging.", facts(writer.conn)[0][4]),
        (b, "deploy", "state", "Deploy freezes on Thursdays.", facts(writer.conn)[1][4]),
    ]


def test_a_plain_client_cannot_write_past_its_search(conn, writer):
    """No hooks, no session id: the server's own turns still hold the contract."""
    a = writer.insert("deploy", "Deploys go through staging.")
    caller = tools.Caller("mcp-plain")
    tools.memory_search(conn, "deploy", caller)
    with pytest.raises(write.Refused, match=f"fact {a} read this turn"):
        tools.memory_write(conn, [], [], caller, log=None)
    tools.memory_write(conn, [], [a], caller, log=None)
    # The accepted write closed the turn: the next write starts a fresh one with nothing read.
    tools.memory_write(conn, [ins(topic="x", text="y")], [], caller, log=None)


def test_keeping_confirms(conn, writer):
    fact = writer.insert("deploy", "Deploys go through staging.")
    conn.execute("UPDATE facts SET confirmed = '2000-01-01T00:00:00Z' WHERE id = ?", (fact,))
    writer.search("deploy")
    writer.write([], [fact])
    confirmed = conn.execute("SELECT confirmed FROM facts WHERE id = ?", (fact,)).fetchone()[0]
    assert confirmed > "2000-01-01"


def test_update_bumps_revision_and_confirms(conn, writer):
    fact = writer.insert("deploy", "Deploys go through staging.")
    conn.execute("UPDATE facts SET confirmed = '2000-01-01T00:00:00Z' WHERE id = ?", (fact,))
    writer.write([{"op": "update", "id": fact, "kind": "decision"}])
    rev, kind, confirmed = conn.execute("SELECT rev, kind, confirmed FROM facts WHERE id = ?", (fact,)).fetchone()
    assert (rev, kind) == (2, "decision") and confirmed > "2000"


def test_a_fact_deleted_elsewhere_after_it_was_read(conn, writer):
    fact = writer.insert("deploy", "Deploys go through staging.")
    writer.search("deploy")
    other = tools.Caller("other-session")
    tools.memory_search(conn, "deploy", other)
    tools.memory_write(conn, [{"op": "delete", "id": fact}], [], other, log=None)
    # Keeping it is accepted with a note; it no longer needs answering for at all.
    answer = writer.write([], [fact])
    assert "deleted by another session" in answer.outcome.notes[0]


@pytest.mark.parametrize("kept_it", [False, True])
def test_a_write_says_which_facts_read_this_turn_are_gone(conn, writer, kept_it):
    """Another session deleted a fact this turn was shown: no write can answer for it, so the
    accepted write says it is gone, and the server's record and the mod's owe it no more."""
    fact = writer.insert("deploy", "Deploys go through staging.")
    other_fact = writer.insert("build", "Builds use make.")
    writer.search("deploy")
    other = tools.Caller("other-session")
    tools.memory_search(conn, "deploy", other)
    tools.memory_write(conn, [{"op": "delete", "id": fact}], [], other, log=None)
    # A write changing it is refused: the write's answer is where the turn learns it is gone.
    assert "was deleted (by another session)" in refused(writer, [{"op": "delete", "id": fact}], [])
    answer = writer.write([], [fact] if kept_it else [])
    assert answer.outcome.gone == [fact] and fact in answer.answered and other_fact not in answer.answered
    assert answer.structured()["gone"] == [fact]
    assert f"nothing to answer for: [{fact}]" in answer.text


def test_a_write_with_nothing_gone_says_no_gone(conn, writer):
    fact = writer.insert("deploy", "Deploys go through staging.")
    writer.search("deploy")
    answer = writer.write([], [fact])
    assert answer.outcome.gone == [] and "gone" not in answer.structured()


def test_insert_date_defaults_to_today_and_can_be_given(conn, writer):
    fact = writer.insert("release", "v2 shipped.", kind="event", date="2026-03-01")
    assert conn.execute("SELECT date FROM facts WHERE id = ?", (fact,)).fetchone()[0] == "2026-03-01"


def test_ids_are_never_reused(conn, writer):
    first = writer.insert("a", "one")
    writer.write([{"op": "delete", "id": first}])
    assert writer.insert("b", "two") == first + 1


# -- retries --------------------------------------------------------------------------------


def test_the_same_call_delivered_twice_applies_once(conn, writer):
    caller = tools.Caller("s-retry", tool_use_id="toolu_01")
    ops = [ins(topic="retry", text="Only once.")]
    first = tools.memory_write(conn, ops, [], caller, log=None)
    second = tools.memory_write(conn, ops, [], caller, log=None)
    assert second.outcome.replayed and not first.outcome.replayed
    assert second.outcome.new_ids == first.outcome.new_ids
    assert conn.execute("SELECT count(*) FROM facts WHERE topic = 'retry'").fetchone()[0] == 1
    assert "already applied" in second.text


def test_a_retry_without_call_id_applies_once(conn, writer):
    ops = [ins(topic="retry", text="Only once.")]
    writer.write(ops)
    assert writer.write(ops).outcome.replayed
    assert conn.execute("SELECT count(*) FROM facts WHERE topic = 'retry'").fetchone()[0] == 1


def test_the_same_content_after_new_activity_is_a_new_write(conn, writer):
    ops = [ins(topic="again", text="Twice on purpose.")]
    writer.write(ops)
    writer.search("nothing here")
    assert not writer.write(ops).outcome.replayed
    assert conn.execute("SELECT count(*) FROM facts WHERE topic = 'again'").fetchone()[0] == 2


def test_empty_writes_in_successive_hook_turns_both_count(conn):
    for prompt_id in ("p1", "p2"):
        ledger.open_turn(conn, "s-hook", prompt_id, "hello")
        answer = tools.memory_write(conn, [], [], tools.Caller("s-hook"), log=None)
        assert not answer.outcome.replayed
    assert [row[0] for row in conn.execute("SELECT wrote FROM turns ORDER BY id")] == [1, 1]


# -- write.log --------------------------------------------------------------------------------


def test_every_change_is_logged_with_before_after_who_and_why(file_conn, file_writer, db_path):
    ledger.open_turn(file_conn, "s-log", "prompt-1", "the owner asked to fix the deploy docs")
    caller = tools.Caller("s-log")
    a = file_writer.write([ins()], caller=caller).outcome.new_ids[0]
    file_writer.search("deploy", caller=caller)
    file_writer.write([{"op": "update", "id": a, "text": "Deploys go through prod now."}], caller=caller)
    file_writer.search("deploy", caller=caller)
    file_writer.write([{"op": "delete", "id": a}], caller=caller)
    lines = [json.loads(line) for line in audit.log_path(db_path).read_text().splitlines()]
    assert [line["op"] for line in lines] == ["insert", "update", "delete"]
    insert, update, delete = lines
    assert insert["after"]["text"] == "Deploys go through staging." and "before" not in insert
    assert update["before"]["text"] == "Deploys go through staging."
    assert update["after"]["text"] == "Deploys go through prod now."
    assert delete["before"]["text"] == "Deploys go through prod now." and "after" not in delete
    for line in lines:
        assert line["id"] == a and line["topic"] == "deploy" and line["kind"] == "state"
        assert line["session"] == "s-log" and line["turn"] == "prompt-1"
        assert line["words"] == "the owner asked to fix the deploy docs"
        assert line["time"].endswith("Z")
        assert audit.is_committed(file_conn, line["write"])


def test_a_refused_write_logs_nothing(file_writer, db_path):
    with pytest.raises(write.Refused):
        file_writer.write([ins(kind="bad")])
    assert not audit.log_path(db_path).exists()


def test_keep_only_writes_log_nothing(file_conn, file_writer, db_path):
    fact = file_writer.insert("deploy", "x")
    file_writer.search("deploy")
    file_writer.write([], [fact])
    assert len(audit.log_path(db_path).read_text().splitlines()) == 1


def test_write_log_example_has_the_shape_the_code_writes(file_conn, file_writer, db_path):
    """write.log.example at the repo root shows real lines: same fields for each op."""
    from conftest import REPO

    fact = file_writer.insert("deploy", "Deploys go through staging.")
    file_writer.search("deploy")
    file_writer.write([{"op": "update", "id": fact, "text": "Deploys go through prod."}])
    file_writer.search("deploy")
    file_writer.write([{"op": "delete", "id": fact}])
    written = {line["op"]: line for line in map(json.loads, audit.log_path(db_path).read_text().splitlines())}
    example = {line["op"]: line for line in map(json.loads, (REPO / "write.log.example").read_text().splitlines())}
    assert set(example) == {"insert", "update", "delete"}
    for op, line in example.items():
        assert list(line) == list(written[op]), op
        for side in ("before", "after"):
            if side in line:
                assert list(line[side]) == list(written[op][side])


@pytest.mark.parametrize("field", ["text", "topic"])
def test_a_credential_is_refused_by_kind_and_never_repeated(writer, field):
    token = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
    op = ins(**{field: f"bot token {token}"})
    message = refused(writer, [op])
    assert f"ops[0]: {field} holds what looks like a GitHub token" in message
    assert token not in message and "ghp_" not in message
    assert "Say where it is kept instead" in message


@pytest.mark.parametrize("bad", [0, -3, 1 << 63, 10**30])
def test_ids_out_of_range_are_not_fact_ids(writer, bad):
    assert "not a fact id" in refused(writer, [], [bad])
    assert "needs the id of the fact" in refused(writer, [{"op": "delete", "id": bad}])


@pytest.mark.parametrize("name", [{"a": 1}, ["insert"], 3, None])
def test_an_op_name_that_is_not_a_string_is_refused(writer, name):
    assert '"op" is' in refused(writer, [{"op": name}])


# -- a fact changed by another session after this turn read it ------------------------------------


def _read_then_changed_elsewhere(conn, writer):
    fact = writer.insert("deploy", "Deploys go through staging.")
    writer.search("deploy")  # this turn reads revision 1
    other = tools.Caller("other-session")
    tools.memory_search(conn, "deploy", other)
    tools.memory_write(conn, [{"op": "update", "id": fact, "text": "Deploys go straight to main now."}], [], other, log=None)
    return fact


def _fact(conn, fact):
    return conn.execute("SELECT rev, text, confirmed FROM facts WHERE id = ?", (fact,)).fetchone()


@pytest.mark.parametrize("how", ["kept", "update", "delete"])
def test_a_fact_changed_elsewhere_after_it_was_read_is_refused_with_its_text_now(conn, writer, how):
    fact = _read_then_changed_elsewhere(conn, writer)
    before = _fact(conn, fact)
    ops = {"kept": [], "update": [{"op": "update", "id": fact, "text": "Deploys need a review."}],
           "delete": [{"op": "delete", "id": fact}]}[how]
    with pytest.raises(write.Refused) as refused:
        writer.write(ops, [fact] if how == "kept" else [])
    message = str(refused.value)
    assert f"fact {fact} was changed after this turn read it" in message
    assert "revision 1 then, 2 since" in message and '"Deploys go straight to main now."' in message
    assert _fact(conn, fact) == before  # the other session's change stands, untouched
    # The refusal showed the fact as it is now: the next write answers for that revision.
    answer = writer.write(ops, [fact] if how == "kept" else [])
    assert not answer.outcome.replayed
    if how == "delete":
        assert conn.execute("SELECT count(*) FROM facts WHERE id = ?", (fact,)).fetchone() == (0,)
    else:
        assert _fact(conn, fact)[0] == (3 if how == "update" else 2)


def test_a_turn_answers_for_its_own_update_in_a_later_write(conn, writer):
    fact = writer.insert("deploy", "Deploys go through staging.")
    ledger.open_turn(conn, "s-test", "p1", "how do deploys go?")  # a turn of several writes
    writer.search("deploy")
    writer.write([{"op": "update", "id": fact, "text": "Deploys go through staging, then canary."}])
    # Its own revision 2 is what the turn now holds: keeping it again is no conflict.
    writer.write([], [fact])
    assert _fact(conn, fact)[0] == 2


def test_a_search_again_after_the_other_change_clears_the_way(conn, writer):
    fact = _read_then_changed_elsewhere(conn, writer)
    writer.search("deploy")  # revision 2 now
    writer.write([], [fact])
    assert _fact(conn, fact)[:2] == (2, "Deploys go straight to main now.")


def test_a_refusal_for_other_reasons_alone_keeps_nothing_of_the_write(conn, writer):
    fact = writer.insert("deploy", "Deploys go through staging.")
    writer.search("deploy")
    revisions = conn.execute("SELECT fact, rev, answered FROM reads ORDER BY fact").fetchall()
    with pytest.raises(write.Refused, match="not answered for"):
        writer.write([{"op": "insert", "topic": "x", "kind": "state", "text": "y"}], [])
    assert conn.execute("SELECT fact, rev, answered FROM reads ORDER BY fact").fetchall() == revisions
    assert conn.execute("SELECT count(*) FROM facts").fetchone() == (1,)


def test_reads_from_before_revisions_were_recorded_are_not_checked(conn, writer):
    fact = _read_then_changed_elsewhere(conn, writer)
    conn.execute("UPDATE reads SET rev = NULL")  # as an upgraded database holds them
    writer.write([], [fact])  # the later write wins, as it did before
