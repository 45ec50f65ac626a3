"""A team's bulk paths on a real PostgreSQL: `import` moves its facts in short batches, so that
another member's write waits for one batch at most, never for the whole file; an import cut off
mid-way keeps what went in, each fact with its change, and the same import run again adds the
rest. Their speed is bench/team_bulk.py's."""

from __future__ import annotations

import json
import time

import psycopg
import pytest

from gate.engine import postgres, store, teamfacts
from gate.engine.teamfacts import TeamFacts, Who, project
from gate.memory import transfer
from gate.memory.stores import TeamStore

STAMP = "2026-12-01T00:00:00Z"


def member(url: str, name: str, deadline: float = postgres.CALL_DEADLINE_S) -> TeamFacts:
    conn = postgres.connect(url, name, deadline)
    with conn.transaction():
        key = project(conn, "acme-api", STAMP)
    return TeamFacts(conn, key, Who(name, "s1"), deadline=deadline)


def lines(count: int) -> list[str]:
    return [json.dumps({"topic": f"topic {i}", "kind": "state", "text": f"Imported fact number {i}.",
                        "date": "2026-12-01"}) + "\n" for i in range(count)]


def write(facts: TeamFacts, text: str) -> float:
    started = time.monotonic()
    with facts.transaction():
        facts.existing([])
        facts.insert({"topic": "meanwhile", "kind": "event", "text": text, "date": "2026-12-01"}, stamp=STAMP)
    return time.monotonic() - started


def record(url: str) -> tuple[list[tuple], list[tuple]]:
    with psycopg.connect(url) as admin:
        facts = admin.execute("SELECT id, text, changed_by FROM memory_gate.facts ORDER BY id").fetchall()
        changes = admin.execute(
            "SELECT fact, op, member, line->>'member', line->>'op', (line->>'id')::bigint FROM memory_gate.changes"
            " ORDER BY seq").fetchall()
    return facts, changes


def test_another_members_write_goes_in_between_an_imports_batches(postgres_url, tmp_path, monkeypatch):
    monkeypatch.setattr(teamfacts, "BATCH", 40)
    ana, bo = member(postgres_url, "ana@laptop", postgres.COMMAND_DEADLINE_S), member(postgres_url, "bo@desk")
    ledger = store.connect(tmp_path / "memory.db")
    waits, seen = [], []

    def meanwhile(done: int, wanted: int) -> None:
        seen.append(done)
        if done < wanted:  # the import is mid-way: bo writes now, and is not held
            waits.append(write(bo, f"Bo's write after {done} imported."))

    try:
        result = transfer.import_into(ledger, iter(lines(200)), TeamStore(ana), command="memory-gate import",
                                       new_ids=True, progress=meanwhile)
    finally:
        ana.conn.close()
        bo.conn.close()
        ledger.close()
    assert result.inserted == 200 and seen == [40, 80, 120, 160, 200]
    assert len(waits) == 4 and max(waits) < 1.0, waits
    facts, changes = record(postgres_url)
    # Bo's writes sit between the batches, and each fact has its change, named as its own member.
    assert [text for _, text, _ in facts if text.startswith("Bo's")] == [
        f"Bo's write after {done} imported." for done in (40, 80, 120, 160)]
    assert len(facts) == len(changes) == 204 and len({fact for fact, _, _ in facts}) == 204
    assert all(who == line_member and op == line_op == "insert" and fact == line_fact
               for fact, op, who, line_member, line_op, line_fact in changes if line_member is not None)
    assert {(fact, by) for fact, _, by in facts} == {(fact, who) for fact, _, who, *_ in changes}


def test_an_import_cut_off_mid_way_keeps_its_batches_and_run_again_adds_the_rest(postgres_url, tmp_path,
                                                                                 monkeypatch):
    monkeypatch.setattr(teamfacts, "BATCH", 50)
    ana = member(postgres_url, "ana@laptop", postgres.COMMAND_DEADLINE_S)
    ledger = store.connect(tmp_path / "memory.db")

    def cut_off(done: int, wanted: int) -> None:
        if done == 100:
            ana.conn.pgconn.finish()  # the connection lost between two batches

    with pytest.raises(postgres.Unreachable, match="100 of the file's 250 new facts went in before") as told:
        transfer.import_into(ledger, iter(lines(250)), TeamStore(ana), command="memory-gate import", new_ids=True,
                             progress=cut_off)
    assert "run the same import again" in str(told.value)
    assert len(record(postgres_url)[0]) == 100

    ana = member(postgres_url, "ana@laptop", postgres.COMMAND_DEADLINE_S)
    try:
        again = transfer.import_into(ledger, iter(lines(250)), TeamStore(ana), command="memory-gate import",
                                      new_ids=True)
    finally:
        ana.conn.close()
        ledger.close()
    assert (again.inserted, again.skipped) == (150, 100)
    facts, changes = record(postgres_url)
    assert sorted(text for _, text, _ in facts) == sorted(f"Imported fact number {i}." for i in range(250))
    assert len(changes) == 250
