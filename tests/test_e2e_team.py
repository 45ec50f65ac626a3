"""Team memory in real Claude Code 2.1.332 (the plugin and the settings install), headless and
offline against the scripted fake API, the facts on a real PostgreSQL: a compliant turn keeps
them there, and with the database out of reach the turn still ends, the owner told why."""

from __future__ import annotations

import psycopg
import pytest
from claude_harness import Sandbox, needs_claude
from test_e2e_gate import Gate, held_messages, told_owner

pytestmark = needs_claude()


@pytest.fixture(params=["plugin", "settings"])
def gate(request, tmp_path):
    with Sandbox(tmp_path) as box:
        yield Gate(box, request.param)
        assert box.fake.errors == []


def test_a_compliant_turn_keeps_its_facts_in_the_teams_memory(gate, postgres_url):
    gate.box.fake.add(
        gate.search("deploy"),
        gate.write([{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}]),
        "Done: noted how deploys work.",
    )
    team = {"MEMORY_GATE_DB": postgres_url, "MEMORY_GATE_PROJECT": "acme-api", "MEMORY_GATE_MEMBER": "ana@laptop"}
    run = gate.run("Remember that deploys go through staging.", env=team)
    assert run.returncode == 0, run.explain()
    assert run.result_text == "Done: noted how deploys work." and held_messages(run, gate) == []
    [turn] = gate.turns()
    assert (turn["searched"], turn["wrote"], turn["outcome"]) == (1, 1, "met")
    assert gate.facts() == []  # the local file is the ledger only
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT id, topic, text, changed_by FROM memory_gate.facts").fetchall() == [
            (1, "deploy", "Deploys go through staging.", "ana@laptop")]
        assert conn.execute("SELECT op, member, line->>'words' FROM memory_gate.changes").fetchall() == [
            ("insert", "ana@laptop", "Remember that deploys go through staging.")]


def test_a_team_out_of_reach_lets_the_turn_end_and_tells_the_owner_why(gate):
    gate.box.fake.add(
        gate.search("deploy"),
        gate.write([{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}]),
        "Answered without memory.",
        *["Answered without memory."] * 3,  # should the gate hold it after all
    )
    down = {"MEMORY_GATE_DB": "postgresql://ana@127.0.0.1:1/team", "MEMORY_GATE_PROJECT": "acme-api"}
    run = gate.run("How do deploys work?", env=down)
    assert run.returncode == 0, run.explain()
    assert run.result_text == "Answered without memory."
    assert held_messages(run, gate) == []  # no hold: no write could have freed it
    [turn] = gate.turns()
    assert turn["outcome"] == "released" and "could not be reached" in turn["excused"]
    [line] = [line for line in told_owner(run) if "could not be reached" in line]
    assert line.startswith("memory-gate: this answer went out without memory kept up to date: the team's memory")
