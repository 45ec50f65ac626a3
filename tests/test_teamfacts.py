"""A change set over a team's PostgreSQL changes facts as over the local SQLite file, and records
each change, with the member who made it, in the same transaction (gate/engine/teamfacts.py)."""

from __future__ import annotations

import threading
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate import config
from gate.engine import store
from gate.engine.teamfacts import TeamFacts, Who, project
from gate.memory import audit, changeset, stores

WHO = Who("ana@laptop", "session-1", "toolu_01")
DAY = "2026-12-01"


@pytest.fixture
def team(postgres_url):
    from gate.engine import postgres

    conn = postgres.connect(postgres_url)
    yield conn
    conn.close()


def team_changes(team, key=None, who=WHO, local=None):
    with team.transaction():
        pid = project(team, key or f"p-{uuid.uuid4().hex[:8]}", "2026-12-01T00:00:00Z")
    return pid, stores.TeamStore(TeamFacts(team, pid, who)).change_set(local, changeset.Author(who.session, "turn", None))


def fact_rows(team, pid):
    return [tuple(row) for row in team.execute(
        "SELECT id, topic, kind, text, date, rev, changed_by FROM facts WHERE project = %s ORDER BY id", (pid,))]


def change_rows(team, pid):
    return [tuple(row) for row in team.execute(
        "SELECT op, fact, rev, before, after, member, session, tool_use_id FROM changes WHERE project = %s ORDER BY seq",
        (pid,))]


def counters(team, pid):
    """What schema-postgres.sql section 2's trigger keeps for bm25: the project's totals and the
    facts holding each word."""
    totals = tuple(team.execute("SELECT facts, words FROM projects WHERE id = %s", (pid,)).fetchone())
    words = dict(team.execute("SELECT lexeme, docs FROM lexemes WHERE project = %s", (pid,)).fetchall())
    lengths = dict(team.execute("SELECT id, length FROM facts WHERE project = %s", (pid,)).fetchall())
    return totals, words, lengths


def recounted(team, pid):
    """The same, counted afresh from the facts."""
    lengths = dict(team.execute(
        "SELECT id, (SELECT coalesce(sum(cardinality(positions)), 0) FROM unnest(words)) FROM facts WHERE project = %s",
        (pid,)).fetchall())
    words = dict(team.execute(
        "SELECT u.lexeme, count(*) FROM facts f, unnest(f.words) u WHERE f.project = %s GROUP BY u.lexeme",
        (pid,)).fetchall())
    return (len(lengths), sum(lengths.values())), words, lengths


def fields(topic, text, kind="state"):
    return {"topic": topic, "kind": kind, "text": text, "date": DAY}


# -- the same changes, the same facts, the same record ----------------------------------------------

texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=40).filter(str.strip)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), texts, st.sampled_from(["state", "event", "decision", "trap"]), texts),
        st.tuples(st.just("update"), st.integers(0, 20), texts),
        st.tuples(st.just("delete"), st.integers(0, 20)),
        st.tuples(st.just("confirm"), st.integers(0, 20)),
    ),
    min_size=1, max_size=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=steps)
def test_a_change_set_leaves_the_same_facts_and_record_on_both_engines(team, tmp_path, script):
    path = tmp_path / uuid.uuid4().hex / "memory.db"  # write.log beside it: one an example
    path.parent.mkdir()
    local = store.connect(path)
    log = audit.log_path(path)
    pid, remote = team_changes(team, local=local)
    with store.writing(local), team.transaction():
        turn = changeset.cli_turn(local, "test")
        mine = changeset.ChangeSet(local, changeset.author(turn), log)
        alive: list[int] = []
        for step in script:
            for changes in (mine, remote):
                if step[0] == "insert":
                    made = changes.insert(fields(step[1], step[3], step[2]))
                    if changes is remote:
                        alive.append(made)
                elif alive:
                    target = alive[step[1] % len(alive)]
                    before = changes.snapshot(target)
                    if step[0] == "update":
                        changes.update(target, before, {**before, "text": step[2]})
                    elif step[0] == "delete":
                        changes.delete(target, before)
                    else:
                        changes.confirm(target)
            if step[0] == "delete" and alive:
                alive.remove(alive[step[1] % len(alive)])
        mine.finish(turn, digest="d", answer="{}")
        remote.finish(turn, digest="d", answer="{}")
    ours = [tuple(row) for row in local.execute("SELECT id, topic, kind, text, date, rev FROM facts ORDER BY id")]
    theirs = [row[:6] for row in fact_rows(team, pid)]
    assert theirs == ours
    logged = [(e["op"], e["id"], e.get("before"), e.get("after")) for e in audit.entries(log)]
    recorded = change_rows(team, pid)
    assert [(op, fact, before, after) for op, fact, _, before, after, *_ in recorded] == logged
    assert {row[5:] for row in recorded} <= {(WHO.member, WHO.session, WHO.tool_use_id)}
    # Each change carries its line as write.log holds it, its write's and its member's.
    keys = ("op", "id", "topic", "kind", "before", "after")
    lines = [row[0] for row in team.execute("SELECT line FROM changes WHERE project = %s ORDER BY seq", (pid,))]
    assert [{key: line.get(key) for key in keys} for line in lines] == [
        {key: entry.get(key) for key in keys} for entry in audit.entries(log)
    ]
    assert all(line["member"] == WHO.member and line["write"] == remote.write_id for line in lines)
    assert counters(team, pid) == recounted(team, pid)
    # Each change's rev is the revision it made (a delete: the one it removed).
    revs: dict[int, int] = {}
    for op, fact, rev, *_ in recorded:
        assert rev == (1 if op == "insert" else revs[fact] + (op == "update"))
        revs[fact] = rev
    local.close()


def test_the_parity_test_sees_a_record_that_differs(team):
    """Its comparison is of real content: a change recorded with another text differs."""
    pid, remote = team_changes(team)
    with team.transaction():
        fact = remote.insert(fields("deploy", "Deploys go through staging."))
        remote.update(fact, remote.snapshot(fact), fields("deploy", "Deploys go through prod."))
    assert change_rows(team, pid)[1][3:5] == (
        fields("deploy", "Deploys go through staging."), fields("deploy", "Deploys go through prod."))
    assert fact_rows(team, pid) == [(fact, "deploy", "state", "Deploys go through prod.", DAY, 2, WHO.member)]


# -- ids, projects, transactions ------------------------------------------------------------------


def test_projects_keep_their_facts_and_ids_apart(team):
    first, a = team_changes(team, "repo-a")
    second, b = team_changes(team, "repo-b")
    with team.transaction():
        assert [a.insert(fields("t", "a one")), a.insert(fields("t", "a two"))] == [1, 2]
        assert b.insert(fields("t", "b one")) == 1
    assert [row[3] for row in fact_rows(team, first)] == ["a one", "a two"]
    assert [row[3] for row in fact_rows(team, second)] == ["b one"]
    assert b.snapshot(2) is None and project(team, "repo-a", "later") == first


def test_an_id_is_never_handed_out_again_after_a_delete(team):
    pid, changes = team_changes(team)
    with team.transaction():
        one = changes.insert(fields("t", "one"))
        two = changes.insert(fields("t", "two"))
        changes.delete(two, changes.snapshot(two))
        assert changes.insert(fields("t", "three")) == 3
        assert changes.insert(fields("t", "restored"), fact_id=10) == 10
        assert changes.insert(fields("t", "after it")) == 11
    assert [row[0] for row in fact_rows(team, pid)] == [one, 3, 10, 11]


def test_a_change_refused_by_the_schema_leaves_no_fact_no_record_and_no_id(team):
    import psycopg

    pid, changes = team_changes(team)
    with team.transaction():
        changes.insert(fields("t", "kept"))
    with pytest.raises(psycopg.errors.CheckViolation):
        with team.transaction():
            changes.insert(fields("t", "never kept"))
            changes.insert(fields("t", "x" * 601))  # longer than a fact may be
    assert [row[3] for row in fact_rows(team, pid)] == ["kept"]
    assert [row[0] for row in change_rows(team, pid)] == ["insert"]
    with team.transaction():
        assert changes.insert(fields("t", "next")) == 2


def test_a_confirmation_is_no_change(team):
    pid, changes = team_changes(team)
    with team.transaction():
        fact = changes.insert(fields("t", "holds"))
        changes.confirm(fact)
    assert [row[0] for row in change_rows(team, pid)] == ["insert"]
    assert team.execute("SELECT confirmed FROM facts WHERE project = %s", (pid,)).fetchone()[0] == changes.stamp


def test_members_inserting_at_once_never_clash(postgres_url, team):
    """Four members, each on a connection of its own, insert into one project at once: every
    insert lands, under an id of its own, with its own record."""
    from gate.engine import postgres

    pid, _ = team_changes(team, "shared")
    each = 25
    failures: list[BaseException] = []

    def member(name: str) -> None:
        try:
            conn = postgres.connect(postgres_url)
        except BaseException as error:  # noqa: BLE001 - reported below
            failures.append(error)
            return
        try:
            changes = changeset.ChangeSet(None, changeset.Author(name, "turn", None), None,
                                          TeamFacts(conn, pid, Who(name, f"session-{name}")))
            for i in range(each):
                with conn.transaction():
                    changes.insert(fields("t", f"{name} {i}"))
        except BaseException as error:  # noqa: BLE001 - reported below
            failures.append(error)
        finally:
            conn.close()

    threads = [threading.Thread(target=member, args=(f"m{k}",)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    rows = fact_rows(team, pid)
    assert [row[0] for row in rows] == list(range(1, 4 * each + 1))
    assert sorted(row[6] for row in rows) == sorted(f"m{k}" for k in range(4) for _ in range(each))
    assert len(change_rows(team, pid)) == 4 * each
    assert team.execute("SELECT last_fact FROM projects WHERE id = %s", (pid,)).fetchone()[0] == 4 * each


def test_the_words_of_a_changed_fact_follow_its_text(team):
    pid, changes = team_changes(team)
    with team.transaction():
        fact = changes.insert(fields("deploy", "staging"))
        changes.update(fact, changes.snapshot(fact), fields("deploy", "production"))
    words = team.execute("SELECT words::text FROM facts WHERE project = %s", (pid,)).fetchone()[0]
    assert "production" in words and "staging" not in words


# -- the member's name ------------------------------------------------------------------------------


def test_a_member_is_named_by_the_setting_else_by_user_and_host():
    import os

    assert config.member({"MEMORY_GATE_MEMBER": "  ana@laptop "}) == "ana@laptop"
    assert config.member({"USER": "ana"}) == f"ana@{os.uname().nodename}"
    assert config.member({"LOGNAME": "bo"}).startswith("bo@")
    assert config.member({}).endswith(f"@{os.uname().nodename}")


@pytest.mark.parametrize("name", ["x" * 101, "ana\nlaptop", "ana\x00"])
def test_a_member_name_the_record_cannot_carry_is_refused_with_the_mend(name):
    with pytest.raises(config.ConfigError, match="MEMORY_GATE_MEMBER .* at most 100 characters on one line"):
        config.member({"MEMORY_GATE_MEMBER": name})


def test_a_database_of_the_first_schema_gets_its_counters_on_upgrade(postgres_url):
    """Section 2 counts what section 1's facts already hold, and the trigger keeps it right."""
    import psycopg

    from gate.engine import postgres, teamwords

    [(number, _, first)] = postgres.schema_steps()[:1]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {postgres.SCHEMA}")
        conn.execute(f"SET search_path TO {postgres.SCHEMA}")
        conn.execute(first)
        conn.execute("UPDATE memory_gate_schema SET version = 1")
        pid = conn.execute("INSERT INTO projects (key, created) VALUES ('old', '') RETURNING id").fetchone()[0]
        for number, (topic, text) in enumerate([("deploy", "staging first"), ("deploy", "freeze on fridays")], start=1):
            conn.execute(
                "INSERT INTO facts (project, id, topic, kind, text, date, created, updated, confirmed, changed_by, words)"
                " VALUES (%s, %s, %s, 'state', %s, '2026-12-01', '', '', '', 'ana', %s::tsvector)",
                (pid, number, topic, text, teamwords.words(topic, text)))
    team = postgres.connect(postgres_url)
    assert postgres.version(team) == len(postgres.schema_steps())
    assert counters(team, pid) == recounted(team, pid)
    assert counters(team, pid)[1]["deploy"] == 2
    team.close()
