"""Members' database roles on a real PostgreSQL: the rights `memory-gate team grant` gives, and
the record of changes no member can rewrite. Each change carries the role that made it, a member
name belongs to one role, a fact changed with no change recorded is refused, and doctor names
rights beyond a member's."""

from __future__ import annotations

import json
import subprocess
import sys

import psycopg
import pytest
from conftest import child_env

from gate.engine import postgres, teamroles
from gate.engine.teamfacts import TeamFacts, Who, project

FACT = {"topic": "deploy", "kind": "state", "text": "Deploys go through staging.", "date": "2026-12-01"}
STAMP = "2026-12-01T00:00:00Z"
ROLES = ("mg_ana", "mg_bo")


@pytest.fixture
def team(postgres_url, tmp_path):
    """The schema made by its owner (postgres), two member roles granted by `team grant`."""
    owner = postgres.connect(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        for role in ROLES:
            admin.execute(f"DROP ROLE IF EXISTS {role}")
            admin.execute(f"CREATE ROLE {role} LOGIN")
    for role in ROLES:
        done = cli(tmp_path, postgres_url, "team", "grant", role)
        assert done.returncode == 0, done.stderr
    yield postgres_url
    owner.close()
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        for role in ROLES:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


def cli(tmp_path, url, *argv, **env) -> subprocess.CompletedProcess:
    folder = tmp_path / "repo"
    folder.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "gate", *argv], cwd=folder, capture_output=True, text=True, timeout=60,
                          env=child_env(tmp_path / "home", MEMORY_GATE_DB=url, MEMORY_GATE_PROJECT="acme-api", **env))


def as_role(url: str, role: str) -> str:
    return url.replace("postgres@", f"{role}@")


def member(url: str, role: str, name: str) -> TeamFacts:
    conn = postgres.connect(as_role(url, role), name)
    with conn.transaction():
        key = project(conn, "acme-api", STAMP)
    return TeamFacts(conn, key, Who(name, "s1"))


def write(facts: TeamFacts, text: str = FACT["text"]) -> int:
    with facts.transaction():
        facts.existing([])
        fact = facts.insert({**FACT, "text": text}, stamp=STAMP)
        facts.record_lines([{"op": "insert", "id": fact, "write": "w-" + text[:8]}])
    return fact


def test_each_change_records_the_role_that_made_it_and_a_member_may_not_rewrite_the_record(team):
    ana, bo = member(team, "mg_ana", "ana@laptop"), member(team, "mg_bo", "bo@desk")
    try:
        write(ana)
        with psycopg.connect(team) as admin:
            assert admin.execute("SELECT member, role, line->>'member' FROM memory_gate.changes").fetchall() == [
                ("ana@laptop", "mg_ana", "ana@laptop")]
        # bo may neither rewrite ana's change nor delete it, nor even his own once recorded.
        write(bo, "Bo's own fact.")
        for statement in ("UPDATE memory_gate.changes SET member = 'bo@desk'", "DELETE FROM memory_gate.changes",
                          "TRUNCATE memory_gate.changes"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                with bo.conn.transaction():
                    bo.conn.execute(statement)
        with bo.conn.transaction():
            assert bo.conn.execute("UPDATE memory_gate.changes SET line = '{}'::jsonb").rowcount == 0
        with psycopg.connect(team) as admin:
            assert admin.execute("SELECT member, role FROM memory_gate.changes ORDER BY seq").fetchall() == [
                ("ana@laptop", "mg_ana"), ("bo@desk", "mg_bo")]
    finally:
        ana.conn.close()
        bo.conn.close()


def test_a_member_may_not_write_under_another_members_name(team):
    ana = member(team, "mg_ana", "ana@laptop")
    write(ana)
    ana.conn.close()
    impostor = member(team, "mg_bo", "ana@laptop")
    try:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="belongs to the database role mg_ana"):
            write(impostor, "Written as ana by bo.")
    finally:
        impostor.conn.close()
    with psycopg.connect(team) as admin:
        assert admin.execute("SELECT count(*) FROM memory_gate.changes").fetchone()[0] == 1


def test_a_fact_changed_by_hand_with_no_change_recorded_is_refused(team):
    ana, bo = member(team, "mg_ana", "ana@laptop"), member(team, "mg_bo", "bo@desk")
    try:
        fact = write(ana)
        for statement in ("UPDATE memory_gate.facts SET text = 'Quietly changed.', rev = rev + 1",
                          "DELETE FROM memory_gate.facts"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="no change recorded"):
                with bo.conn.transaction():
                    bo.conn.execute(statement)
        with bo.conn.transaction():  # a keep (a confirmation) is no change
            bo.conn.execute("UPDATE memory_gate.facts SET confirmed = %s WHERE id = %s", ("2026-12-02T00:00:00Z", fact))
    finally:
        ana.conn.close()
        bo.conn.close()
    with psycopg.connect(team) as admin:
        assert admin.execute("SELECT text FROM memory_gate.facts").fetchall() == [(FACT["text"],)]


def test_doctor_passes_a_granted_member_and_names_rights_beyond_a_members(team, tmp_path):
    def doctor():
        done = cli(tmp_path, as_role(team, "mg_bo"), "doctor", "--no-claude", "--json")
        return done.returncode, json.loads(done.stdout)

    code, report = doctor()
    assert code == 0, report["findings"]
    assert not [f for f in report["findings"] if f["severity"] != "note"], report["findings"]
    with psycopg.connect(team, autocommit=True) as admin:
        admin.execute("GRANT ALL ON ALL TABLES IN SCHEMA memory_gate TO mg_bo")
    code, report = doctor()
    warned = [f for f in report["findings"] if f["severity"] == "warning"]
    assert any("may UPDATE, DELETE, TRUNCATE the team's record of changes" in f["what"] for f in warned), warned
    assert any("REVOKE UPDATE, DELETE, TRUNCATE ON memory_gate.changes FROM mg_bo" in f["mend"] for f in warned)
    assert any("write under another member's name" in f["what"] for f in warned)


def test_grant_prints_its_statements_and_refuses_a_role_that_does_not_own_the_tables(team, tmp_path):
    printed = cli(tmp_path, team, "team", "grant", "ana", "--sql")
    assert printed.returncode == 0 and printed.stdout.splitlines() == [s + ";" for s in teamroles.grants("ana")]
    refused = cli(tmp_path, as_role(team, "mg_bo"), "team", "grant", "mg_ana")
    assert refused.returncode == 1 and "does not own memory-gate's tables" in refused.stderr
