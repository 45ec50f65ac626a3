"""A team's memory through the real server: `memory-gate serve` processes of two members, over
stdio with the official SDK's client, each with a home and a ledger of their own, sharing the
facts of one project on a real PostgreSQL; `memory-gate team connect/status/disconnect`; and
the team's database going away in the middle of a session and coming back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from conftest import child_env
from test_server import run_client as serve

from gate import config
from gate.engine import store
from gate.memory import ledger
from gate.memory import team as memory_team

INSERT = {"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}


def command(project: Path, home: Path, *argv: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gate", *argv], cwd=project, env=child_env(home, **env),
                          capture_output=True, text=True, timeout=60)


def text(result) -> str:
    return result.content[0].text


@pytest.fixture
def repo(tmp_path):
    """A project folder with a git remote, as each member's clone would have it."""
    folder = tmp_path / "repo"
    (folder / ".git").mkdir(parents=True)
    (folder / ".git" / "config").write_text(
        '[core]\n\tbare = false\n[remote "origin"]\n\turl = git@github.com:acme/api.git\n'
        '\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
    )
    return folder


def test_two_members_servers_share_facts_and_a_stale_keep_is_refused_naming_who(postgres_url, repo, tmp_path):
    ana = {"MEMORY_GATE_DB": postgres_url, "MEMORY_GATE_MEMBER": "ana@laptop"}
    bo = {"MEMORY_GATE_DB": postgres_url, "MEMORY_GATE_MEMBER": "bo@desk"}

    async def ana_inserts(client):
        await client.call_tool("memory_search", {"terms": "deploy"})
        return await client.call_tool("memory_write", {"ops": [INSERT], "kept": []})

    wrote = serve(repo, tmp_path / "ana", ana_inserts, **ana)
    assert not wrote.is_error, text(wrote)
    [fact] = wrote.structured_content["new_ids"]

    # Ana's next session reads the fact; meanwhile bo's server changes it.
    async def ana_reads_then_keeps(client):
        found = await client.call_tool("memory_search", {"terms": "deploy staging"})

        async def bo_updates(other):
            seen = await other.call_tool("memory_search", {"terms": "deploy"})
            changed = await other.call_tool(
                "memory_write", {"ops": [{"op": "update", "id": fact, "text": "Deploys go through prod."}], "kept": []}
            )
            return seen, changed

        seen, changed = await anyio.to_thread.run_sync(lambda: serve(repo, tmp_path / "bo", bo_updates, **bo))
        stale = await client.call_tool("memory_write", {"ops": [], "kept": [fact]})
        again = await client.call_tool("memory_write", {"ops": [], "kept": [fact]})
        return found, seen, changed, stale, again

    found, seen, changed, stale, again = serve(repo, tmp_path / "ana", ana_reads_then_keeps, **ana)
    assert [f["text"] for f in found.structured_content["facts"]] == ["Deploys go through staging."]
    assert [f["id"] for f in seen.structured_content["facts"]] == [fact]
    assert not changed.is_error, text(changed)
    assert stale.is_error
    assert f"fact {fact} was changed after this turn read it, by bo@desk" in text(stale)
    assert '"Deploys go through prod."' in text(stale)
    assert not again.is_error and again.structured_content["kept"] == [fact]

    # The facts are the team's, under the git remote's name; each ledger is its member's own file.
    import psycopg

    with psycopg.connect(postgres_url) as team:
        assert team.execute("SELECT key FROM memory_gate.projects").fetchall() == [("github.com/acme/api",)]
        record = team.execute("SELECT op, fact, rev, member FROM memory_gate.changes ORDER BY seq").fetchall()
    assert record == [("insert", fact, 1, "ana@laptop"), ("update", fact, 2, "bo@desk")]
    for who in ("ana", "bo"):
        local = store.connect(config.database_for(tmp_path / who, repo), create=False)
        assert local.execute("SELECT count(*) FROM facts").fetchone()[0] == 0  # no facts kept locally
        assert local.execute("SELECT count(*) FROM reads").fetchone()[0] >= 1
        local.close()
    assert not list((tmp_path / "ana").rglob("write.log"))  # the team's record is `changes`


def test_team_connect_writes_a_setting_with_no_password_and_the_server_uses_it(postgres_url, repo, tmp_path):
    home = tmp_path / "home"
    with_password = postgres_url.replace("postgres@", "postgres:s3cret@")
    refused = command(repo, home, "team", "connect", with_password)
    assert refused.returncode == 1 and "never stores one" in refused.stderr and "~/.pgpass" in refused.stderr
    assert "s3cret" not in refused.stderr + refused.stdout

    done = command(repo, home, "team", "connect", postgres_url, "--project", "acme-api")
    assert done.returncode == 0, done.stderr
    setting = Path(memory_team.setting_path(config.database_for(home, repo)))
    assert json.loads(setting.read_text()) == {"url": postgres_url, "project": "acme-api"}
    assert setting.stat().st_mode & 0o777 == 0o600 and setting.parent.stat().st_mode & 0o777 == 0o700

    async def script(client):
        await client.call_tool("memory_search", {"terms": "deploy"})
        return await client.call_tool("memory_write", {"ops": [INSERT], "kept": []})

    assert not serve(repo, home, script).is_error
    status = command(repo, home, "team", "status", "--json")
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert report["memory"] == "team" and report["project"] == "acme-api" and report["facts"] == 1
    assert report["reachable"] is True and report["set_by"] == str(setting)

    # The owner's commands read the team's memory (the memory page too: tests/test_view_team.py).
    shown = command(repo, home, "show")
    assert shown.returncode == 0 and "Deploys go through staging." in shown.stdout, shown.stderr

    assert command(repo, home, "team", "disconnect").returncode == 0
    assert not setting.exists()
    assert json.loads(command(repo, home, "team", "status", "--json").stdout)["memory"] == "local"


def test_a_project_with_no_name_a_team_shares_is_told_how_to_name_it(postgres_url, project, tmp_path):
    refused = command(project, tmp_path / "home", "team", "connect", postgres_url)
    assert refused.returncode == 1 and "--project" in refused.stderr

    async def script(client):
        return await client.call_tool("memory_search", {"terms": "deploy"})

    answer = serve(project, tmp_path / "home", script, MEMORY_GATE_DB=postgres_url)
    assert answer.is_error and "MEMORY_GATE_PROJECT" in text(answer)


def test_the_team_database_going_away_mid_session_excuses_the_turn_and_coming_back_rearms_it(repo, tmp_path):
    """The server stopped while a member's session runs: the search says so in one line, the write
    is refused with the mend and nothing is half written, the gate lets the answer out with the
    reason on screen; started again, the next search reaches it and the turn owes as usual."""
    import postgres_server as pg

    found = pg.binaries()
    if found is None:
        pytest.skip("needs pgserver's PostgreSQL (pip install -e '.[test]')")
    server = pg.Server(found).start()
    home = tmp_path / "home"
    env = {"MEMORY_GATE_DB": server.url(), "MEMORY_GATE_PROJECT": "acme-api", "CLAUDE_CODE_SESSION_ID": "s1"}
    ledger_path = config.database_for(home, repo)

    def open_turn(prompt_id: str) -> None:
        conn = store.connect(ledger_path)
        with store.writing(conn):
            ledger.open_turn(conn, "s1", prompt_id, "how do deploys work?")
        conn.close()

    def gate(prompt_id: str) -> dict:
        done = subprocess.run(
            [sys.executable, "-m", "gate", "hook", "Hold"], cwd=repo, env=child_env(home, **env), capture_output=True,
            text=True, timeout=60, input=json.dumps({"session_id": "s1", "prompt_id": prompt_id, "cwd": str(repo)}),
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    try:
        open_turn("p1")

        async def script(client):
            first = await client.call_tool("memory_search", {"terms": "deploy"})
            wrote = await client.call_tool("memory_write", {"ops": [INSERT], "kept": []})
            await anyio.to_thread.run_sync(lambda: open_turn("p2"))
            await anyio.to_thread.run_sync(server.stop)
            down_search = await client.call_tool("memory_search", {"terms": "deploy"})
            down_write = await client.call_tool(
                "memory_write", {"ops": [{"op": "update", "id": 1, "text": "Deploys go through prod."}], "kept": []}
            )
            verdict_down = await anyio.to_thread.run_sync(lambda: gate("p2"))
            await anyio.to_thread.run_sync(server.start_again)
            await anyio.to_thread.run_sync(lambda: open_turn("p3"))
            back = await client.call_tool("memory_search", {"terms": "deploy"})
            verdict_back = await anyio.to_thread.run_sync(lambda: gate("p3"))
            return first, wrote, down_search, down_write, verdict_down, back, verdict_back

        first, wrote, down_search, down_write, verdict_down, back, verdict_back = serve(repo, home, script, **env)
    finally:
        server.remove()

    assert not first.is_error and not wrote.is_error
    # Down: the search answers, with nothing, in one line saying why.
    assert not down_search.is_error and down_search.structured_content["facts"] == []
    [note] = down_search.structured_content["notes"]
    assert "could not be reached" in note and "\n" not in note and "project acme-api" in note
    # and its `next` agrees with the note: no write this turn
    assert "do not call memory_write" in down_search.structured_content["next"]
    # The write is refused with the mend, and the gate lets the answer out with the reason.
    assert down_write.is_error and "nothing was written" in text(down_write) and "team status" in text(down_write)
    assert verdict_down["action"] == "release" and "could not be reached" in verdict_down["reason"]
    # Back: the fact is there as first written (the refused update left nothing), and the turn owes.
    assert [(f["id"], f["text"]) for f in back.structured_content["facts"]] == [(1, "Deploys go through staging.")]
    assert verdict_back["action"] == "hold"
