"""`memory-gate doctor` on a project whose memory is a team's (real PostgreSQL): the connection,
the schema, the member's rights on each table, pgvector; each problem with its mend."""

from __future__ import annotations

import json
import subprocess
import sys

import psycopg
import pytest
from conftest import child_env


def doctor(project, home, url, **env):
    done = subprocess.run(
        [sys.executable, "-m", "gate", "doctor", "--no-claude", "--json"], cwd=project, capture_output=True, text=True,
        env=child_env(home, MEMORY_GATE_DB=url, MEMORY_GATE_PROJECT="acme-api", **env), timeout=60,
    )
    return done.returncode, json.loads(done.stdout) if done.stdout else None, done.stderr


def test_a_sound_team_database_is_reported_with_no_problem(postgres_url, project, tmp_path):
    code, report, err = doctor(project, tmp_path / "home", postgres_url)
    assert code == 0, (report, err)
    team = report["team"]
    assert team["used"] is True and team["project"] == "acme-api" and team["schema"] == team["schema_latest"] >= 3
    assert team["pgvector"]  # pgserver ships it
    assert any("has no project acme-api yet" in f["what"] for f in report["findings"])


def test_a_member_without_the_rights_to_write_is_told_which_grant_is_missing(postgres_url, project, tmp_path):
    doctor(project, tmp_path / "home", postgres_url)  # the schema, made by its owner
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute("DROP ROLE IF EXISTS reader")
        admin.execute("CREATE ROLE reader LOGIN")
        admin.execute("GRANT USAGE ON SCHEMA memory_gate TO reader")
        admin.execute("GRANT SELECT ON ALL TABLES IN SCHEMA memory_gate TO reader")
    try:
        reader = postgres_url.replace("postgres@", "reader@")
        code, report, err = doctor(project, tmp_path / "home", reader)
        assert code == 1, (report, err)
        [facts] = [f for f in report["findings"] if "memory_gate.facts, " in f["what"]]
        assert facts["severity"] == "problem" and "may not INSERT, UPDATE, DELETE" in facts["what"]
        assert facts["mend"] == "have the database's owner run GRANT INSERT, UPDATE, DELETE ON memory_gate.facts TO reader"
        # and each table a write touches is named, facts_vec and facts_to_embed among them
        named = {f["what"].split(" on ")[1].split(",")[0] for f in report["findings"] if " may not " in f["what"]}
        assert {"memory_gate.facts_vec", "memory_gate.facts_to_embed", "memory_gate.vector_spaces"} <= named
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("DROP OWNED BY reader")
            admin.execute("DROP ROLE reader")


def test_a_role_that_may_not_even_read_the_schema_gets_a_line_not_a_traceback(postgres_url, project, tmp_path):
    doctor(project, tmp_path / "home", postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute("DROP ROLE IF EXISTS stranger")
        admin.execute("CREATE ROLE stranger LOGIN")
    try:
        code, report, err = doctor(project, tmp_path / "home", postgres_url.replace("postgres@", "stranger@"))
        assert code == 1 and "Traceback" not in err, err
        assert any("stranger" in f["what"] or "permission" in f["what"] for f in report["findings"]), report["findings"]
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("DROP OWNED BY stranger")
            admin.execute("DROP ROLE stranger")


def test_an_unreachable_team_database_is_a_problem_with_the_mend(project, tmp_path):
    code, report, err = doctor(project, tmp_path / "home", "postgresql://ana@127.0.0.1:1/team")
    assert code == 1
    [problem] = [f for f in report["findings"] if f["severity"] == "problem"]
    assert problem["what"].startswith("cannot reach the team database")


def test_a_password_in_memory_gate_db_is_refused_with_libpqs_own_means_and_never_shown(project, tmp_path):
    code, report, err = doctor(project, tmp_path / "home", "postgresql://ana:s3cret@127.0.0.1:1/team")
    assert code == 1 and "s3cret" not in json.dumps(report) + err
    [problem] = [f for f in report["findings"] if f["severity"] == "problem"]
    assert "holds a password" in problem["what"] and "~/.pgpass" in problem["what"]


def test_after_a_members_team_writes_doctor_finds_their_lines_in_the_teams_record(postgres_url, tmp_path):
    """A team write's lines are the team's `changes`, not write.log: doctor must not cry that the
    ledger's committed writes lack log lines and send the member to a backup."""
    from test_server import run_client

    folder = tmp_path / "repo"
    folder.mkdir()
    home = tmp_path / "home"
    env = {"MEMORY_GATE_DB": postgres_url, "MEMORY_GATE_PROJECT": "acme-api", "MEMORY_GATE_MEMBER": "ana@laptop"}

    async def script(client):
        await client.call_tool("memory_search", {"terms": "deploy"})
        return await client.call_tool("memory_write", {"ops": [
            {"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}], "kept": []})

    assert not run_client(folder, home, script, **env).is_error
    code, report, err = doctor(folder, home, postgres_url)
    assert code == 0, (report["findings"], err)
    assert "lack log lines" not in json.dumps(report)
    assert report["write_log"]["writes_missing_lines"] == 0
    assert report["write_log"]["writes_in_team_record"] == 1
