"""The two tools over a team's memory: facts in PostgreSQL, each member's turn ledger in a local
file of its own. A member who keeps, updates or deletes a fact another member changed since
they read it is refused, told who changed it, when, and what it says now."""

from __future__ import annotations

import apsw
import pytest

from gate.engine import postgres, store
from gate.engine.teamfacts import TeamFacts, Who, project
from gate.memory import ledger, stores, write
from gate.search import lookup
from gate.serve import tools


class Member:
    """One member: a ledger file of their own, a connection of their own to the team database."""

    def __init__(self, name: str, folder, url: str, key: str):
        folder.mkdir()
        self.name, self.ledger = name, store.connect(folder / "memory.db")
        self.team = postgres.connect(url)
        with self.team.transaction():
            self.project = project(self.team, key, "2026-12-01T00:00:00Z")
        self.session, self.turns = f"session-{name}", 0

    def turn(self, prompt: str) -> None:
        self.turns += 1
        ledger.open_turn(self.ledger, self.session, f"{self.name}-p{self.turns}", prompt)

    def facts(self, tool_use_id: str | None = None) -> TeamFacts:
        return TeamFacts(self.team, self.project, Who(self.name, self.session, tool_use_id))

    def search(self, terms: str) -> tools.SearchAnswer:
        return tools.memory_search(self.ledger, terms, tools.Caller(self.session), search=lookup.TeamSearch(self.facts()))

    def write(self, ops, kept=()) -> tools.WriteAnswer:
        return tools.memory_write(self.ledger, list(ops), list(kept), tools.Caller(self.session), log=None, memory=stores.TeamStore(self.facts()))

    def close(self) -> None:
        self.ledger.close()
        self.team.close()


@pytest.fixture
def members(postgres_url, tmp_path):
    made = [Member(name, tmp_path / name, postgres_url, "shared-repo") for name in ("ana@laptop", "bo@desk")]
    yield made
    for member in made:
        member.close()


def test_a_change_another_member_made_since_the_read_is_refused_with_who_when_and_now(members):
    ana, bo = members
    ana.turn("remember how deploys work")
    ana.search("deploy")
    [done] = ana.write([{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}]).outcome.done
    fact = done["id"]

    ana.turn("do deploys still go through staging?")
    assert [r.fact.id for r in ana.search("deploy staging").results] == [fact]
    bo.turn("deploys go through prod now")
    [seen] = bo.search("deploy").results
    assert seen.fact.text == "Deploys go through staging." and seen.full
    bo.write([{"op": "update", "id": fact, "text": "Deploys go through prod."}])

    with pytest.raises(write.Refused) as refused:
        ana.write([], [fact])  # ana read revision 1; bo's update made revision 2
    message = str(refused.value)
    assert f"fact {fact} was changed after this turn read it, by bo@desk (revision 1 then, 2 since" in message
    assert '[deploy] "Deploys go through prod." Answer for it as it is now' in message
    # Shown the fact as it is now, ana answers for that revision, and nothing was lost.
    assert ana.write([], [fact]).outcome.kept == [fact]
    rows = ana.team.execute(
        "SELECT op, fact, rev, member, after->>'text' FROM changes WHERE project = %s ORDER BY seq", (ana.project,)
    ).fetchall()
    assert rows == [("insert", fact, 1, "ana@laptop", "Deploys go through staging."),
                    ("update", fact, 2, "bo@desk", "Deploys go through prod.")]


def test_members_inserting_never_clash_and_each_sees_the_others_facts(members):
    ana, bo = members
    ana.turn("note the freeze")
    ana.search("freeze")
    bo.turn("note the staging rule")
    bo.search("staging")
    [a] = ana.write([{"op": "insert", "topic": "release", "kind": "decision", "text": "Code freeze on Fridays."}]).outcome.done
    [b] = bo.write([{"op": "insert", "topic": "deploy", "kind": "state", "text": "Staging first."}]).outcome.done
    assert (a["id"], b["id"]) == (1, 2)
    bo.turn("when is the freeze?")
    [found] = bo.search("freeze").results
    assert (found.fact.id, found.fact.text) == (1, "Code freeze on Fridays.")
    # What a member was shown is their own ledger's: ana never searched for bo's fact.
    assert ledger.shown_revisions(ana.ledger, ana.session, [1, 2]) == {}
    assert ledger.shown_revisions(bo.ledger, bo.session, [1, 2]) == {1: 1}


def test_a_write_another_member_deleted_the_fact_of_is_refused(members):
    ana, bo = members
    ana.turn("x")
    ana.search("deploy")
    [done] = ana.write([{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}]).outcome.done
    ana.turn("y")
    ana.search("deploy")
    bo.turn("forget the deploy fact")
    bo.search("deploy")
    bo.write([{"op": "delete", "id": done["id"]}])
    with pytest.raises(write.Refused, match=f"fact {done['id']} was deleted .* after this turn read it"):
        ana.write([{"op": "update", "id": done["id"], "text": "Deploys go through prod."}])
    assert ana.team.execute("SELECT count(*) FROM facts WHERE project = %s", (ana.project,)).fetchone()[0] == 0
    # Left out, it is accepted and said to be gone: the turn owes it no more (the mod's record, the server's).
    answer = ana.write([])
    assert answer.outcome.gone == [done["id"]] and answer.structured()["gone"] == [done["id"]]


def test_a_refused_write_leaves_the_team_database_as_it_was(members):
    ana, _ = members
    ana.turn("x")
    ana.search("deploy")
    with pytest.raises(write.Refused):
        ana.write([{"op": "insert", "topic": "deploy", "kind": "state", "text": "ok"},
                   {"op": "update", "id": 99, "text": "no such fact"}])
    assert ana.team.execute("SELECT count(*) FROM facts").fetchone()[0] == 0
    assert ana.team.execute("SELECT count(*) FROM changes").fetchone()[0] == 0
    assert ana.team.execute("SELECT last_fact FROM projects WHERE id = %s", (ana.project,)).fetchone()[0] == 0


def test_an_embeddings_endpoint_that_is_down_leaves_a_team_search_on_words_saying_why(members, down_url):
    from gate.search import embeddings

    ana, _ = members
    ana.turn("how do deploys work?")
    ana.write([{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys run from main"}])
    endpoint = embeddings.Endpoint(down_url, "bge-m3")
    answer = tools.memory_search(ana.ledger, "deploy", tools.Caller(ana.session), endpoint=endpoint, search=lookup.TeamSearch(ana.facts()))
    assert [result.fact.topic for result in answer.results] == ["deploy"]
    assert len(answer.notes) == 1 and answer.notes[0].startswith("words only: ")


def test_a_second_write_of_a_turn_answers_for_a_change_another_member_made_after_the_first(members):
    """The ledger keeps the revision each read fact was left at by a write, from the team's facts
    (a local memory's come from its own file), so that the turn's next write is checked as the first."""
    ana, bo = members
    ana.turn("remember how deploys work")
    ana.search("deploy")
    [done] = ana.write([{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}]).outcome.done
    fact = done["id"]
    ana.turn("do deploys still go through staging?")
    ana.search("deploy staging")
    ana.write([], [fact])
    bo.turn("deploys go through prod now")
    bo.search("deploy")
    bo.write([{"op": "update", "id": fact, "text": "Deploys go through prod."}])
    with pytest.raises(write.Refused) as refused:  # ana's turn goes on, and would overwrite bo's text unseen
        ana.write([{"op": "update", "id": fact, "text": "Deploys go through staging, then prod."}])
    assert f"fact {fact} was changed after this turn read it, by bo@desk (revision 1 then, 2 since" in str(refused.value)


class CommitFails:
    """The member's ledger refuses its next commit once the team has committed a change: the gap
    between the two commits of a team write (a full disk, an I/O error, a server killed)."""

    def __init__(self, member: Member):
        self.member, self.failed = member, 0
        self.before = self._changes()
        member.ledger.set_commit_hook(self._hook)

    def _changes(self) -> int:
        with postgres.connect(self.member.team.info.dsn) as conn:
            return conn.execute("SELECT count(*) FROM changes").fetchone()[0]

    def _hook(self) -> bool:
        if self.failed or self._changes() == self.before:
            return False
        self.failed += 1
        return True  # the commit becomes a rollback

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.member.ledger.set_commit_hook(None)


def team_rows(member: Member) -> list[tuple]:
    with member.team.transaction():  # and over: the member's next write is a transaction, not a savepoint
        return member.team.execute(
            "SELECT op, fact, rev, after->>'text' FROM changes WHERE project = %s ORDER BY seq", (member.project,)).fetchall()


def test_a_write_the_team_committed_and_the_ledger_lost_is_taken_in_and_not_applied_twice(members):
    ana, _ = members
    ana.turn("remember how deploys work")
    ana.search("deploy")
    insert = {"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}
    with CommitFails(ana) as fault, pytest.raises(apsw.ConstraintError):
        ana.write([insert])
    assert fault.failed == 1
    [(_, fact, _, _)] = team_rows(ana)  # the team has it; the ledger does not
    assert ana.ledger.execute("SELECT count(*) FROM writes").fetchone() == (0,)
    assert ana.ledger.execute("SELECT count(*) FROM team_writes").fetchone() == (1,)

    again = ana.write([insert])  # the agent, told the write failed, sends it again
    assert again.outcome.replayed and again.outcome.new_ids == [fact]
    assert team_rows(ana) == [("insert", fact, 1, "Deploys go through staging.")]  # one copy
    assert ana.ledger.execute("SELECT count(*) FROM team_writes").fetchone() == (0,)
    [(wrote,)] = ana.ledger.execute("SELECT wrote FROM turns ORDER BY id DESC LIMIT 1").fetchall()
    assert wrote == 1

    # An update lost the same way is taken in too: sent again, it is no change "since the read".
    ana.turn("deploys go through prod now")
    ana.search("deploy")
    update = {"op": "update", "id": fact, "text": "Deploys go through prod."}
    with CommitFails(ana), pytest.raises(apsw.ConstraintError):
        ana.write([update])
    assert ana.write([update]).outcome.replayed
    assert team_rows(ana)[1:] == [("update", fact, 2, "Deploys go through prod.")]
    assert ledger.unanswered(ana.ledger, ledger.latest_turn(ana.ledger, ana.session).id) == []


def test_a_noted_write_the_team_never_committed_is_forgotten(members):
    """A note whose write never reached the team (the connection lost before its commit) is
    dropped at the next write, and nothing is taken in for it."""
    from gate.memory import pending

    ana, _ = members
    ana.turn("remember how deploys work")
    ana.search("deploy")
    with store.writing(ana.ledger):
        pending.note(ana.ledger, "never-sent", ledger.latest_turn(ana.ledger, ana.session), tool_use_id=None,
                     digest="d", kept=[])
    ana.write([{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}])
    assert ana.ledger.execute("SELECT id FROM team_writes").fetchall() == []
    assert [row[0] for row in ana.ledger.execute("SELECT id FROM writes")] != ["never-sent"]
    assert ana.ledger.execute("SELECT count(*) FROM writes WHERE id = 'never-sent'").fetchone() == (0,)


def test_a_fact_a_team_search_returned_must_be_answered_for(members):
    """The gate's rule holds on a team as on a file: a write that leaves a fact the turn's search
    returned unanswered (not kept, updated or deleted) is refused, and the Stop hook's ledger
    counts it owed."""
    from gate.memory import write

    ana, _ = members
    ana.turn("remember how deploys work")
    ana.search("deploy")
    insert = {"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}
    [fact] = ana.write([insert]).outcome.new_ids
    ana.turn("add that releases are tagged")
    assert fact in [result.fact.id for result in ana.search("deploy staging").results]
    turn = ledger.latest_turn(ana.ledger, ana.session).id
    assert ledger.unanswered(ana.ledger, turn, facts_here=False) == [fact]  # as the Stop hook counts it
    with pytest.raises(write.Refused) as refused:
        ana.write([{"op": "insert", "topic": "release", "kind": "state", "text": "Releases are tagged vX.Y.Z."}])
    assert f"fact {fact} read this turn is not answered for" in str(refused.value.problems)
