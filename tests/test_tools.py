"""The two tools end to end in-process: what a turn sees and what it must answer for."""

from gate.memory import ledger
from gate.serve import tools


def test_search_records_every_returned_fact_as_read(conn, writer):
    a = writer.insert("deploy", "Deploys go through staging.")
    b = writer.insert("deploy", "Deploy freezes on Fridays.")
    answer = writer.search("deploy")
    assert answer.structured()["must_answer"] == [r.fact.id for r in answer.results]
    assert set(ledger.unanswered(conn, writer.turn().id)) == {a, b}


def test_a_fact_shown_before_comes_back_as_its_id(conn, writer):
    a = writer.insert("deploy", "Deploys go through staging.")
    first = writer.search("deploy")
    writer.write([], [a])
    second = writer.search("deploy staging")
    assert first.results[0].full and not second.results[0].full
    assert second.structured()["facts"] == [{"id": a, "shown_before": True}]
    assert f"[{a}] shown earlier in this session, unchanged" in second.text
    assert "Deploys go through staging." not in second.text
    # Shown as an id only, it is still read: it must be answered for.
    assert ledger.unanswered(conn, writer.turn().id) == [a]


def test_a_fact_changed_since_it_was_shown_comes_back_in_full(conn, writer):
    a = writer.insert("deploy", "Deploys go through staging.")
    writer.search("deploy")
    writer.write([{"op": "update", "id": a, "text": "Deploys go through prod."}])
    again = writer.search("deploy")
    assert again.results[0].full and "Deploys go through prod." in again.text


def test_another_session_sees_it_in_full(conn, writer):
    writer.insert("deploy", "Deploys go through staging.")
    writer.search("deploy")
    other = tools.memory_search(conn, "deploy", tools.Caller("other"))
    assert other.results[0].full


def test_after_compaction_facts_come_back_in_full(conn, writer):
    a = writer.insert("deploy", "Deploys go through staging.")
    writer.search("deploy")
    writer.write([], [a])
    ledger.forget_shown(conn, writer.caller.session)
    assert writer.search("deploy").results[0].full


def test_the_owner_words_close_the_result(conn):
    ledger.open_turn(conn, "s1", "p1", "Deploys now go through prod, not staging.")
    caller = tools.Caller("s1")
    answer = tools.memory_search(conn, "deploy", caller)
    assert answer.owner_words == "Deploys now go through prod, not staging."
    assert "The owner wrote this turn:\n    Deploys now go through prod, not staging." in answer.text


def test_at_most_eight_results(conn, writer):
    for i in range(12):
        writer.insert("deploy", f"Deploy note {i}.")
    assert len(writer.search("deploy").results) == 8


def test_no_database_yet_answers_empty():
    answer = tools.memory_search(None, "deploy", tools.Caller("s"))
    assert answer.results == [] and "Memory holds nothing" in answer.text


def test_a_write_says_whether_the_gated_turn_still_owes_a_search(conn):
    ledger.open_turn(conn, "s1", "p1", "remember the deploy branch")
    caller = tools.Caller("s1")
    first = tools.memory_write(conn, [{"op": "insert", "topic": "deploy", "kind": "state", "text": "Staging."}], [],
                               caller, log=None)
    assert first.structured()["next"].startswith("This turn has not searched memory yet")
    tools.memory_search(conn, "deploy", caller)
    second = tools.memory_write(conn, [], [1], caller, log=None)
    assert second.structured()["next"] == "Nothing owed for this turn: answer the owner."
    assert second.text.endswith("Nothing owed for this turn: answer the owner.")


def test_without_hooks_a_write_owes_nothing(conn, writer):
    answer = writer.write([{"op": "insert", "topic": "t", "kind": "state", "text": "x"}])
    assert answer.structured()["next"].startswith("Nothing owed")


def test_a_fact_is_shown_once_per_context_that_saw_it(conn, writer):
    """Subagents share the session id; so do two processes resuming one session at once. Each
    gets a fact's text the first time it searches, whoever saw it before."""
    a = writer.insert("deploy", "Deploys go through staging.")
    ledger.open_turn(conn, "s1", "p1", "how do deploys work?")
    for call, agent in (("toolu_main1", None), ("toolu_main2", None), ("toolu_sub1", "agent-7"),
                        ("toolu_sub2", "agent-7"), ("toolu_other", "agent-8")):
        ledger.record_tool_call(conn, call, "s1", "p1", "mcp__memory__memory_search", agent)

    def full(call, process="proc-A"):
        return tools.memory_search(conn, "deploy", tools.Caller("s1", call, process)).results[0].full

    assert full("toolu_main1") and not full("toolu_main2")  # the main agent: once
    assert full("toolu_sub1") and not full("toolu_sub2")  # its subagent has its own context
    assert full("toolu_other")  # and so has another subagent
    assert full("toolu_main2", process="proc-B")  # a second process resuming the session
    assert tools.memory_search(conn, "deploy", tools.Caller("s1", "toolu_main1", "proc-A")).structured()["facts"] == [
        {"id": a, "shown_before": True}]
