"""The viewer's web application and its server: `memory-gate view`.

One connection to the project's memory serves every page, one request at a time under a lock
(pages read in milliseconds; a change is one short transaction): the local file, or on a team's
memory the member's connection to the team's database (opened again after a failure) beside
their local ledger. Each live-update stream polls connections of its own (reading.Watcher): a
local file's `PRAGMA data_version`, which moves whenever any other connection commits (a running
agent's search or write, a hook, `memory-gate undo`, or this page's own edits), and on a team the
project's newest change in the team's record, whichever member made it. The page then fetches
its main part again (the `X-Part: main` header) and swaps it in.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import sys
import threading
import webbrowser
from collections.abc import Callable

import anyio
import apsw
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from gate import config, stopping
from gate.credentials import find as find_credential, marker
from gate.engine import store
from gate.memory import checking, opening
from gate.memory.changeset import VIEWER_SESSION
from gate.search import embeddings, sources
from gate.view import editing, pages, reading
from gate.view.access import TOKEN, Guard, Refused
from gate.view.markup import e, frame
from gate.view.redact import redact

# How often a live stream looks for another connection's commit.
POLL_SECONDS = 0.25
READ_ONLY = "this page is read-only: run `memory-gate view --edit` to edit, delete and undo"


class View:
    """Everything the pages need: the memory, the guard, and whether changes are allowed."""

    def __init__(
        self,
        memory: opening.Opened,
        guard: Guard,
        *,
        editable: bool,
        endpoint: embeddings.Endpoint | None,
        meaning: str = "words only",
    ):
        self.memory, self.guard, self.editable, self.endpoint = memory, guard, editable, endpoint
        self.meaning = meaning  # what search's meaning comes from (gate.search.sources.named), or why none
        self.path = memory.path
        self.lock = threading.Lock()
        member = memory.member
        self.where = (
            str(self.path)
            if member is None
            else (
                f"the team's memory {member.team.shown}, project {member.team.project}, as {member.member}; "
                f"your own turns in {self.path}"
            )
        )

    def _current(self) -> opening.Opened:
        """The memory, its team connection opened again if it was lost (postgres.Unreachable,
        a StoreError, when it cannot be), and the member's ledger once it exists."""
        memory = self.memory
        if memory.member is not None:
            memory.team = memory.member.facts(VIEWER_SESSION)
            if memory.conn is None and memory.path.exists():
                memory.conn = store.connect(memory.path, create=False)
        return memory

    async def run(self, work: Callable, *args, **kwargs):
        """`work(memory, ...)` in a worker thread, one at a time on the view's connection."""

        def locked():
            with self.lock:
                return work(self._current(), *args, **kwargs)

        # Abandoned when a stop cancels the request: its thread may be waiting on an embeddings
        # endpoint, and a write it has not begun can no longer begin (store.close_writes).
        return await anyio.to_thread.run_sync(locked, abandon_on_cancel=True)

    def page(self, request: Request, *, title: str, body: str, here: str, status: int = 200) -> Response:
        # same-origin: the token in the URL never goes out in a Referer, yet the page's own forms
        # still carry their Origin (no-referrer would make it "null" and every change refused).
        headers = {"Cache-Control": "no-store", "Referrer-Policy": "same-origin"}
        if request.headers.get("x-part") == "main":
            return HTMLResponse(body, status, headers=headers)
        nonce = secrets.token_urlsafe(16)
        headers["Content-Security-Policy"] = (
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; "
            f"script-src 'nonce-{nonce}'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        )
        html = frame(
            self.guard, title=title, body=body, here=here, editable=self.editable, nonce=nonce, database=self.where
        )
        return HTMLResponse(html, status, headers=headers)


def _is_day(text: str) -> bool:
    """YYYY-MM-DD, a real day."""
    from datetime import date

    try:
        return len(text) == 10 and bool(date.fromisoformat(text))
    except ValueError:
        return False


def _int(text: str | None, default: int = 0) -> int:
    return int(text) if text and text.isdigit() and len(text) < 10 else default


def build(view: View) -> Guarded:
    guard = view.guard

    async def facts(request: Request) -> Response:
        query = request.query_params
        kind = query.get("kind", "")
        since = query.get("since", "").strip()
        filters = reading.Filters(
            topic=query.get("topic", "").strip()[:100],
            kind=kind if kind in ("state", "event", "decision", "trap") else "",
            since=since if _is_day(since) else "",
            stale=_int(query.get("stale")),
        )
        page = await view.run(reading.facts_page, filters, _int(query.get("page"), 1))
        body = pages.facts(guard, page, filters)
        if since and not filters.since:  # said, not ignored: the list below is not narrowed by it
            body = (
                f'<p class="notice error" role="alert">changed since “{e(since[:40])}” is not a day: '
                "write YYYY-MM-DD (the date field does); the list below is not narrowed by it.</p>"
            ) + body
            return view.page(request, title="Facts", body=body, here="/", status=400)
        return view.page(request, title="Facts", body=body, here="/")

    async def search(request: Request) -> Response:
        terms = request.query_params.get("q", "")
        found = await view.run(reading.find, terms, view.endpoint) if terms.strip() else None
        return view.page(request, title="Search", body=pages.search(guard, found, view.meaning), here="/search")

    async def fact(
        request: Request,
        *,
        message: str | None = None,
        error: str | None = None,
        draft: dict | None = None,
        status: int = 200,
    ) -> Response:
        fact_id = request.path_params["fact"]
        if not checking.is_id(fact_id):
            return PlainTextResponse(f"no fact {fact_id}: ids are whole numbers below 2**63", 404)
        story = await view.run(reading.story, fact_id)
        message = message or request.query_params.get("done")
        body = pages.fact(guard, fact_id, story, editable=view.editable, message=message, error=error, draft=draft)
        found = story.fact is not None or story.changes
        return view.page(request, title=f"Fact {fact_id}", body=body, here="", status=status if found else 404)

    async def change(request: Request) -> Response:
        """POST /facts/N/edit, /delete, /undo: checked, made, then back to the fact's page."""
        form = await request.form()
        try:
            # A file sent as a field fails further on, as it always did.
            guard.check_change(request.headers, form.get("csrf"))  # type: ignore[arg-type]
        except Refused as refused:
            return PlainTextResponse(str(refused), 403)
        if not view.editable:
            return PlainTextResponse(READ_ONLY, 403)
        fact_id, action = request.path_params["fact"], request.path_params["action"]
        if not checking.is_id(fact_id):
            return PlainTextResponse(f"no fact {fact_id}: ids are whole numbers below 2**63", 404)
        rev = _int(form.get("rev"))  # type: ignore[arg-type]  # a file sent as rev fails, as it always did
        fields = {key: str(form.get(key, "")) for key in ("topic", "kind", "text", "date")}
        try:
            if action == "edit":
                done = await view.run(_edit, fact_id, fields, rev, view.endpoint)
            elif action == "delete":
                done = await view.run(editing.delete, fact_id, rev=rev)
            elif action == "undo":
                done = await view.run(
                    editing.revert, str(form.get("entry", "")), fact_id=fact_id, endpoint=view.endpoint
                )
            else:
                return PlainTextResponse(f"no such change: {action}", 404)
        except editing.Refused as refused:
            draft = fields if action == "edit" else None
            return await fact(request, error=str(refused), draft=draft, status=400)
        except (apsw.BusyError, apsw.Error, store.StoreError, OSError) as error:
            return await fact(request, error=f"nothing was changed: {store.explain(error)}", status=503)
        return RedirectResponse(guard.url(f"/facts/{fact_id}", done=done), 303)

    shared = view.memory.store.shared  # the team's memory: the page says whose turns it shows

    async def turns(request: Request) -> Response:
        before = _int(request.query_params.get("before")) or None
        found = await view.run(reading.turns_page, before)
        older = found[-1].id if len(found) == reading.TURNS_PER_PAGE else None
        newer = await view.run(reading.newer_turns, found[0].id) if found and before else None
        body = pages.turns(guard, found, older, newer, shared=shared, first_page=not (found and before))
        return view.page(request, title="Turns", body=body, here="/turns")

    async def figures(request: Request) -> Response:
        def read(memory):
            report = reading.stats_report(memory)
            conn = memory.ledger()
            return report, reading.outcomes_by_day(conn), reading.search_cost_by_day(conn)

        report, days, cost = await view.run(read)
        return view.page(request, title="Stats", body=pages.stats(report, days, cost, shared=shared), here="/stats")

    async def events(request: Request) -> Response:
        from sse_starlette import EventSourceResponse

        async def stream():
            watcher = reading.Watcher(view.memory)
            try:
                seen = await anyio.to_thread.run_sync(watcher.version)
                yield {"event": "hello", "data": "live"}
                while True:
                    await anyio.sleep(POLL_SECONDS)
                    now = await anyio.to_thread.run_sync(watcher.version)
                    if now != seen:
                        seen = now
                        yield {"event": "change", "data": str(now)}
            finally:
                watcher.close()

        return EventSourceResponse(stream(), ping=15, headers={"Cache-Control": "no-store"})

    routes = [
        Route("/", facts),
        Route("/search", search),
        Route("/facts/{fact:int}", fact),
        Route("/facts/{fact:int}/{action}", change, methods=["POST"]),
        Route("/turns", turns),
        Route("/stats", figures),
        Route("/events", events),
    ]

    async def unreachable(request: Request, error: Exception) -> Response:
        """A page whose memory could not be read: the team's database out of reach, said with its
        mend (postgres.Unreachable), or a local file that cannot be read."""
        body = f'<h1>Memory could not be read</h1><p class="notice error" role="alert">{e(store.explain(error))}</p>'
        return view.page(request, title="Unreachable", body=body, here="", status=503)

    return Guarded(Starlette(routes=routes, exception_handlers={store.StoreError: unreachable}), guard)


def _edit(memory, fact_id, fields, rev, endpoint):
    """The edit form shows the text with credentials masked: a text sent back unchanged keeps
    what memory holds, rather than storing the mask."""
    held_now = reading.fact(memory, fact_id)
    if held_now is not None:
        for key, held in (("topic", held_now.topic), ("text", held_now.text)):
            if fields.get(key, "").replace("\r\n", "\n").strip() == redact(held).strip():
                fields[key] = held
                found = find_credential(held)
                if found:
                    # The owner changed something else and sent the masked text back: the
                    # credential is memory's, from before the checks, not something they typed.
                    raise editing.Refused(
                        f"the {key} holds {found} from old data, shown masked as "
                        f"{marker(found)}: the fact cannot be saved with it. Take the mask "
                        "out of the " + key + " (say where the credential is kept instead), then save."
                    )
    fields["text"] = fields.get("text", "").replace("\r\n", "\n")
    return editing.edit(memory, fact_id, fields, rev=rev, endpoint=endpoint)


def _open(url: str) -> None:
    """Open the page in the owner's browser, unless the only one there is a terminal browser
    (lynx, w3m: Python falls back to them without a display), which would take over this
    terminal and its Ctrl-C."""
    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        browser = None
    if browser is None or type(browser) is webbrowser.GenericBrowser:
        print("  no graphical browser here: open the address above in yours", flush=True)
        return
    browser.open(url)


class Guarded:
    """ASGI middleware: nothing is served, not even a 404, without the right Host and token."""

    def __init__(self, app, guard: Guard):
        self.app, self.guard = app, guard

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        request = Request(scope)
        try:
            self.guard.check(request.headers.get("host"), request.query_params.get(TOKEN))
        except Refused as refused:
            return await PlainTextResponse(str(refused), 403)(scope, receive, send)
        return await self.app(scope, receive, send)


def listen(port: int) -> socket.socket:
    """The page's socket on 127.0.0.1. Made as an explicit TCP socket: asyncio turns Nagle's
    algorithm off only on connections whose socket says IPPROTO_TCP (proto 0 does not), and with
    Nagle on, every page after the first on a kept-alive connection (a browser's navigation, each
    live refresh) waits about 40 ms for the client's delayed ACK of the response's headers."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
    except OSError as error:
        listener.close()
        raise opening.UserError(
            f"cannot listen on 127.0.0.1:{port} ({error.strerror}): choose another port with --port N, "
            "or leave --port out for a free one"
        ) from error
    listener.listen(64)
    return listener


def serve(settings: config.Settings, *, port: int, editable: bool, open_browser: bool) -> int:
    import uvicorn

    _Server = _server_class()
    memory = opening.open_memory(settings, session=VIEWER_SESSION)
    memory.store.index.prepare()  # vectors kept in step with edits, and search by meaning, when sqlite-vec loads
    listener = listen(port)
    guard = Guard(port=listener.getsockname()[1])
    # A person waits seconds for a search or an edit, not a turn's fraction of one.
    endpoint = opening.patient_endpoint(settings)
    if endpoint is not None:
        endpoint.search_timeout = opening.PATIENT_TIMEOUT
    said = sources.named(endpoint) if endpoint is not None else f"words only: {sources.why_words_only(settings)}"
    view = View(memory, guard, editable=editable, endpoint=endpoint, meaning=said)
    url = guard.origin + guard.url("/")
    mode = "editing on" if editable else "read-only (--edit to edit, delete and undo)"
    print(f"memory-gate view: {url}", flush=True)
    print(f"  {view.where}; {mode}. Ctrl-C stops it.", flush=True)
    if open_browser:
        _open(url)
    server = _Server(
        uvicorn.Config(
            build(view),
            log_level="critical",
            lifespan="off",
            access_log=False,
            # uvicorn takes a fraction of a second too (asyncio.wait_for), though typed int.
            timeout_graceful_shutdown=SHUTDOWN_GRACE,  # type: ignore[arg-type]
        )
    )
    try:
        server.run(sockets=[listener])
    finally:
        # A request still running in its thread (waiting on an embeddings endpoint) was let go:
        # the process ends without it, once any write under way has committed.
        closed = view.lock.acquire(timeout=CLOSE_WAIT)
        if closed:
            memory.close()
            view.lock.release()
        store.writes_done(CLOSE_WAIT)
        listener.close()
    print("memory-gate view: stopped", file=sys.stderr, flush=True)
    sys.stdout.flush()
    # Without the interpreter's teardown of the web stack (and of a thread let go): a stop ends it
    # within a second.
    os._exit(0)


# Once stopped, how long the requests under way may take to finish (a page's live updates never
# do), and how long a request's thread is waited for to let go of the connection.
SHUTDOWN_GRACE = 0.4
CLOSE_WAIT = 0.1


def _server_class():
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, stopped by SIGINT, SIGTERM and SIGHUP alike (gate.stopping), without
        raising the signal again once stopped (uvicorn would, and the process die of it)."""

        @contextlib.contextmanager
        def capture_signals(self):
            previous = {signum: signal.signal(signum, self.stop) for signum in stopping.SIGNALS}
            try:
                yield
            finally:
                for signum, handler in previous.items():
                    signal.signal(signum, handler)

        def stop(self, signum, frame) -> None:
            store.close_writes()  # a write waiting for the lock gives up; none begins
            self.force_exit = self.should_exit  # a second signal waits for nothing
            self.should_exit = True
            try:
                from sse_starlette.sse import AppStatus

                AppStatus.should_exit = True  # the live updates end now
            except ImportError:
                pass

    return Server
