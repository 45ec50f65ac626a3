import json

import pytest

from conftest import Writer

from gate.engine import store
from gate.memory import ledger, searches, stats
from gate.serve import render, tools


def hook_turn(conn, prompt_id, *, holds=0, outcome=None, session="s-stats"):
    turn = ledger.open_turn(conn, session, prompt_id, f"prompt {prompt_id}")
    for _ in range(holds):
        ledger.hold(conn, turn.id)
    if outcome:
        ledger.settle(conn, turn.id, outcome)
    return turn


def test_facts_by_kind(writer):
    writer.insert("a", "one")
    writer.insert("b", "two", kind="trap")
    writer.insert("c", "three", kind="trap")
    assert stats.report(writer.conn)["facts"] == {"state": 1, "event": 0, "decision": 0, "trap": 2, "total": 3}


def test_turns_gated_complied_at_once_or_after_a_hold_and_released(conn):
    hook_turn(conn, "p1", outcome="met")
    hook_turn(conn, "p2", outcome="met")
    hook_turn(conn, "p3", holds=1, outcome="met")
    hook_turn(conn, "p4", holds=3, outcome="released")
    hook_turn(conn, "p5")  # still running, or never ruled on
    ledger.current_turn(conn, "plain-client")  # no hooks: not gated
    ledger.open_turn(conn, "cli", "cli-1", "memory-gate undo 3b8747aa:1")  # the command line's own
    assert stats.report(conn)["turns"] == {
        "gated": 4, "complied": 3, "complied_at_once": 2, "complied_after_hold": 1,
        "released_unmet": 1, "complied_share": 75.0, "unsettled": 1, "without_hooks": 1,
    }


def test_an_empty_memory_divides_by_nothing(conn):
    report = stats.report(conn)
    assert report["turns"]["complied_share"] is None
    assert report["reads"]["per_turn"] == 0.0 and report["searches"]["tokens_per_search"] == 0
    json.dumps(report)  # plain values only


def test_facts_read_per_turn_and_the_cost_of_a_search(writer):
    for i in range(4):
        writer.insert("deploy", f"Deploy fact number {i}.")
    first = writer.search("deploy")  # 4 facts, in full
    writer.write([], [r.fact.id for r in first.results])
    ledger.open_turn(writer.conn, "s-test", "p2", "again")
    second = writer.search("deploy")  # shown before: ids only
    writer.write([], [r.fact.id for r in second.results])
    writer.search("nothing matches this")
    rows = list(writer.conn.execute("SELECT facts, full, chars FROM searches ORDER BY id"))
    assert [row[:2] for row in rows] == [(4, 4), (4, 0), (0, 0)]
    # The size recorded is the structured answer the model reads.
    assert rows[0][2] == searches.answer_chars(first.structured()) == len(
        json.dumps(render.search_data(first.results, None), ensure_ascii=False, separators=(",", ":")))
    assert rows[1][2] < rows[0][2]
    report = stats.report(writer.conn)
    assert report["reads"] == {"turns_that_searched": 2, "facts_read": 8, "per_turn": 4.0}
    recorded = report["searches"]
    mean = sum(row[2] for row in rows) / 3
    assert recorded["total"] == recorded["recorded"] == 3
    assert recorded["chars_per_search"] == round(mean, 1) and recorded["tokens_per_search"] == round(mean / 4)
    assert recorded["facts_per_search"] == round(8 / 3, 1) and recorded["in_full_per_search"] == round(4 / 3, 1)


def test_a_search_that_could_not_be_recorded_records_no_cost(writer, monkeypatch):
    import apsw

    writer.insert("deploy", "Deploys go through staging.")

    def read_only(*args, **kwargs):
        raise apsw.ReadOnlyError("attempt to write a readonly database")

    monkeypatch.setattr(tools.ledger, "record_search", read_only)
    assert "not recorded" in writer.search("deploy").text
    assert writer.conn.execute("SELECT count(*) FROM searches").fetchone()[0] == 0


@pytest.mark.parametrize("chars, expected", [(0, 0), (3, 1), (400, 100), (1001, 250)])
def test_tokens_are_estimated_at_four_characters(chars, expected):
    assert stats.tokens(chars) == expected


def test_how_often_search_fell_back_to_words(conn, fake_embeddings, down_url):
    from gate.engine import store
    from gate.search.embeddings import Endpoint

    store.load_vectors(conn)
    writer = Writer(conn)
    up = Endpoint(fake_embeddings.url, "m")
    tools.memory_write(conn, [{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys use staging."}],
                       [], writer.caller, log=None, endpoint=up)
    tools.memory_search(conn, "deploy", writer.caller, endpoint=up)
    tools.memory_search(conn, "deploy", writer.caller, endpoint=Endpoint(down_url, "m"))
    tools.memory_search(conn, "deploy", writer.caller, endpoint=Endpoint(down_url, "m"))
    tools.memory_search(conn, "deploy", writer.caller)  # no endpoint: the owner's choice, not counted
    meaning = stats.report(conn)["searches"]["meaning"]
    assert meaning["with_meaning"] == 1 and meaning["words_only"] == 2 and meaning["words_only_share"] == 66.7
    assert meaning["reasons"] == [{"reason": "embeddings endpoint unreachable (connection refused)", "searches": 2}]


def test_a_search_records_its_terms_but_never_a_credential(writer):
    writer.insert("deploy", "Deploys go through staging.")
    writer.search("deploy staging")
    writer.search("deploy with ghp_" + "a1B2" * 9)  # an agent pasting a token into a query
    writer.search("x" * 1000)
    terms = [row[0] for row in writer.conn.execute("SELECT terms FROM searches ORDER BY id")]
    assert terms == ["deploy staging", None, "x" * searches.TERMS_KEPT]


def test_the_viewers_own_turns_are_left_out_like_the_command_lines(writer):
    from gate.memory import changeset

    for session in (changeset.CLI_SESSION, changeset.VIEWER_SESSION):
        with store.writing(writer.conn):
            changeset.cli_turn(writer.conn, "memory-gate view: edited fact 1", session)
    turns = stats.report(writer.conn)["turns"]
    assert turns["unsettled"] == 0 and turns["without_hooks"] == 0
