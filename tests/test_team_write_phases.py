"""A team write in two phases: the team's transaction, with no lock of the member's ledger held
while the network answers, then a short ledger transaction (gate.memory.write's _apply_team).

While a write waits on a stalled path, the member's hooks and other sessions take the ledger's
write lock at once. A member killed between the team's commit and the ledger's is settled at the
session's next call (gate.memory.pending): the ledger shows the write once, the team's record
once, and the same call sent again answers as it did."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import apsw
import pytest
from test_team_faults import Proxy, database, port

from gate.engine import postgres, store
from gate.engine.teamfacts import TeamFacts, Who, project
from gate.memory import ledger, pending, stores, write
from gate.search import lookup
from gate.serve import tools

KEY = "acme-api"
STAMP = "2026-12-01T00:00:00Z"
SESSION = "session-ana"
INSERT = {"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}


class Ana:
    """One member: her ledger file and her connection to the team database (at `url`)."""

    def __init__(self, folder: Path, url: str, deadline: float = postgres.CALL_DEADLINE_S):
        folder.mkdir(exist_ok=True)
        self.path = folder / "memory.db"
        self.ledger = store.connect(self.path)
        self.team = postgres.connect(url, "ana@laptop", deadline=deadline)
        with self.team.transaction():
            self.project = project(self.team, KEY, STAMP)
        self.turns = 0

    def turn(self, prompt: str) -> None:
        self.turns += 1
        with store.writing(self.ledger):
            ledger.open_turn(self.ledger, SESSION, f"ana-p{self.turns}", prompt)

    def facts(self, tool_use_id: str | None = None) -> TeamFacts:
        return TeamFacts(self.team, self.project, Who("ana@laptop", SESSION, tool_use_id))

    def search(self, terms: str) -> tools.SearchAnswer:
        return tools.memory_search(self.ledger, terms, tools.Caller(SESSION), search=lookup.TeamSearch(self.facts()))

    def write(self, ops, kept=(), tool_use_id: str | None = None) -> write.Outcome:
        caller = tools.Caller(SESSION, tool_use_id=tool_use_id)
        return tools.memory_write(
            self.ledger, list(ops), list(kept), caller, log=None, memory=stores.TeamStore(self.facts(tool_use_id))
        ).outcome

    def changes(self) -> list[tuple]:
        with self.team.transaction():
            return self.team.execute(
                "SELECT op, fact, rev, line->>'write' FROM changes WHERE project = %s ORDER BY seq", (self.project,)
            ).fetchall()

    def writes(self) -> list[str]:
        return [row[0] for row in self.ledger.execute("SELECT id FROM writes ORDER BY seq")]

    def noted(self) -> list[str]:
        return [row[0] for row in self.ledger.execute("SELECT id FROM team_writes")]

    def close(self) -> None:
        self.ledger.close()
        self.team.close()


def test_a_team_write_waiting_on_a_stalled_path_leaves_the_ledger_free_for_others(postgres_url, tmp_path):
    postgres.connect(postgres_url).close()  # the schema, made
    proxy = Proxy(port(postgres_url))
    ana = Ana(tmp_path / "ana", proxy.url(database(postgres_url)))
    try:
        ana.turn("remember how deploys work")
        ana.search("deploy")
        proxy.stall()
        answered: list = []
        writer = threading.Thread(target=lambda: answered.append(ana.write([INSERT])))
        writer.start()
        assert proxy.holding.wait(10), "the write never reached the path"
        assert writer.is_alive()  # waiting on the network now

        # Another connection (a hook, another session) takes the ledger's write lock at once.
        other = apsw.Connection(str(ana.path))
        other.setbusytimeout(0)
        started = time.monotonic()
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
        took = time.monotonic() - started
        hook = store.connect(ana.path)
        started = time.monotonic()
        with store.writing(hook):  # a hook's own write: a turn of another session opened
            ledger.open_turn(hook, "session-bo", "bo-p1", "what is the release day?")
        hooked = time.monotonic() - started
        assert writer.is_alive()  # all that while the write still waited on the path

        proxy.resume()
        writer.join(30)
        other.close()
        hook.close()
        changes, writes, noted = ana.changes(), ana.writes(), ana.noted()
    finally:
        ana.close()
        proxy.close()
    print(
        f"\na team write waiting on a stalled path: BEGIN IMMEDIATE on its ledger took {took * 1000:.1f} ms, "
        f"a hook's ledger write {hooked * 1000:.1f} ms"
    )
    assert took < 0.5 and hooked < 0.5, (took, hooked)
    [outcome] = answered  # the path came back within the deadline: the write went through, once
    [(op, fact, rev, written)] = changes
    assert (op, rev, written) == ("insert", 1, outcome.write_id) and outcome.new_ids == [fact]
    assert writes == [outcome.write_id] and noted == []


KILLED = textwrap.dedent("""
    import os, signal, sys
    from gate.engine import postgres, store
    from gate.engine.teamfacts import TeamFacts, Who, project
    from gate.memory import stores, write
    from gate.serve import tools

    url, path, session, tool_use_id, fact = sys.argv[1:]
    conn = store.connect(path)
    team = postgres.connect(url, "ana@laptop")
    with team.transaction():
        key = project(team, "acme-api", "2026-12-01T00:00:00Z")

    def killed(*args, **kwargs):
        print("team committed", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # between the team's commit and the ledger's transaction

    write._into_ledger = killed
    ops = [{"op": "update", "id": int(fact), "text": "Deploys go through prod."},
           {"op": "insert", "topic": "release", "kind": "decision", "text": "Code freeze on Fridays."}]
    tools.memory_write(conn, ops, [], tools.Caller(session, tool_use_id=tool_use_id), log=None,
                       memory=stores.TeamStore(TeamFacts(team, key, Who("ana@laptop", session, tool_use_id))))
    print("the ledger took it", flush=True)
""")

CRASHED_OPS = [
    {"op": "update", "id": 1, "text": "Deploys go through prod."},
    {"op": "insert", "topic": "release", "kind": "decision", "text": "Code freeze on Fridays."},
]


def killed_between_the_commits(ana: Ana, tmp_path: Path, url: str, tool_use_id: str) -> str:
    """Ana's write of CRASHED_OPS in a process of its own, killed once the team committed it and
    before its ledger transaction; returns the write's id, as the team's record holds it."""
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    run = subprocess.run(
        [sys.executable, str(script), url, str(ana.path), SESSION, tool_use_id, "1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == -signal.SIGKILL, run.stderr
    assert run.stdout == "team committed\n"
    [(_, _, _, write_id), *rest] = ana.changes()[1:]
    assert rest and all(row[3] == write_id for row in rest)
    return write_id


@pytest.fixture
def ana_read_a_fact(postgres_url, tmp_path):
    """Ana wrote fact 1, then in a new turn read it: her next write answers for it."""
    ana = Ana(tmp_path / "ana", postgres_url)
    ana.turn("remember how deploys work")
    ana.search("deploy")
    assert ana.write([INSERT]).new_ids == [1]
    ana.turn("deploys go through prod now, and freeze on Fridays")
    assert [result.fact.id for result in ana.search("deploy").results] == [1]
    yield ana
    ana.close()


def test_a_member_killed_between_the_teams_commit_and_the_ledgers_is_settled_once_at_the_next_call(
    ana_read_a_fact, postgres_url, tmp_path
):
    ana = ana_read_a_fact
    write_id = killed_between_the_commits(ana, tmp_path, postgres_url, "toolu_crash")
    turn = ledger.latest_turn(ana.ledger, SESSION)
    assert write_id not in ana.writes() and ana.noted() == [write_id]  # the team has it, the ledger not yet
    assert ledger.read_revisions(ana.ledger, turn.id) == {1: 1}

    # The agent, whose call never answered, sends it again under the same id: it is answered as
    # applied, from the team's record, and nothing is applied a second time.
    again = ana.write(CRASHED_OPS, tool_use_id="toolu_crash")
    assert again.replayed and again.write_id == write_id
    assert again.done == [{"op": "update", "id": 1}, {"op": "insert", "id": 2, "topic": "release"}]
    assert ana.changes()[1:] == [("update", 1, 2, write_id), ("insert", 2, 1, write_id)]
    assert ana.writes().count(write_id) == 1 and ana.noted() == []
    # The turn answered for fact 1, at the revision the write left it; it wrote once.
    assert ledger.read_revisions(ana.ledger, turn.id) == {1: 2}
    assert ana.ledger.execute("SELECT wrote FROM turns WHERE id = ?", (turn.id,)).fetchone() == (1,)
    # Sent once more, still the same answer, and still once in each.
    assert ana.write(CRASHED_OPS, tool_use_id="toolu_crash").done == again.done
    assert len(ana.changes()) == 3 and ana.writes().count(write_id) == 1


def test_a_killed_write_is_taken_in_before_the_sessions_next_different_write_is_checked(
    ana_read_a_fact, postgres_url, tmp_path
):
    ana = ana_read_a_fact
    write_id = killed_between_the_commits(ana, tmp_path, postgres_url, "toolu_crash")
    # A new call of the same turn: fact 1 is answered for already (by the write taken in), and the
    # revision the turn holds is the one that write left, so keeping it is no stale keep.
    outcome = ana.write([{"op": "insert", "topic": "ci", "kind": "state", "text": "CI runs on every push."}])
    assert not outcome.replayed and outcome.new_ids == [3]
    assert ana.writes()[-2:] == [write_id, outcome.write_id] and ana.noted() == []
    assert [row[:3] for row in ana.changes()] == [
        ("insert", 1, 1),
        ("update", 1, 2),
        ("insert", 2, 1),
        ("insert", 3, 1),
    ]
    ana.turn("does the freeze still hold?")
    ana.search("freeze")
    assert ana.write([], [2]).kept == [2]


def test_a_write_another_call_settled_on_its_way_to_the_ledger_is_recorded_once(ana_read_a_fact, monkeypatch):
    """Between the team's commit and the ledger's transaction, another call of the session takes
    the write in from its note (it cannot tell a write on its way from one whose process died):
    the write then finds itself in the ledger and records nothing again."""
    ana = ana_read_a_fact
    into_ledger = write._into_ledger
    settled: list[str] = []

    def late(conn, changes, *args, **kwargs):
        settled.extend(pending.settle(conn, ana.facts(), SESSION, writing="another call"))
        return into_ledger(conn, changes, *args, **kwargs)

    monkeypatch.setattr(write, "_into_ledger", late)
    ops = [{"op": "update", "id": 1, "text": INSERT["text"]}, CRASHED_OPS[1]]  # fact 1 unchanged: no line
    outcome = ana.write(ops, tool_use_id="toolu_late")
    assert settled == [outcome.write_id] and not outcome.replayed
    assert outcome.done == [{"op": "unchanged", "id": 1}, {"op": "insert", "id": 2, "topic": "release"}]
    assert ana.writes().count(outcome.write_id) == 1 and ana.noted() == []
    turn = ledger.latest_turn(ana.ledger, SESSION)
    assert ana.ledger.execute("SELECT wrote FROM turns WHERE id = ?", (turn.id,)).fetchone() == (1,)
    assert ledger.read_revisions(ana.ledger, turn.id) == {1: 1}
    # Sent again, it answers as it did, the op that left no line in the team's record included.
    again = ana.write(ops, tool_use_id="toolu_late")
    assert again.replayed and again.done == outcome.done
    assert [row[:3] for row in ana.changes()] == [("insert", 1, 1), ("insert", 2, 1)]
