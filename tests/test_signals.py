"""SIGINT, SIGTERM and SIGHUP end `memory-gate serve` and `memory-gate view` within a second in
every state: idle, in the middle of a call (its embeddings endpoint holding it), in the middle of a
write (another connection holding the lock). Every call accepted is answered, or rolled back and
said so; never a traceback. The tests wait on state (a request arrived, a lock is held), never on
a sleep."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import child_env
from fake_embeddings import FakeEmbeddings
from wire_process import RawServer

from gate import config
from gate.engine import store

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
LIMIT = 1.0
# Holds the database's write lock until its stdin closes.
HOLDER = ("import sys, apsw\nc = apsw.Connection(sys.argv[1])\nc.execute('BEGIN IMMEDIATE')\n"
          "print('held', flush=True)\nsys.stdin.read()\n")
WRITE = {"ops": [{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}], "kept": []}


class HeldEmbeddings(FakeEmbeddings):
    """An embeddings endpoint that, once told to hold, says when a request arrives and keeps it."""

    def __init__(self):
        self.hold = threading.Event()
        self.arrived = threading.Event()
        self.release = threading.Event()
        super().__init__()

    def answer(self, handler, body):
        if self.hold.is_set():
            self.arrived.set()
            self.release.wait(30)
        super().answer(handler, body)

    def close(self):
        self.release.set()
        super().close()


def stopped_within(server: RawServer, signum: int) -> tuple[float, int | None]:
    started = time.monotonic()
    server.signal(signum)
    code = server.exited(10)
    return time.monotonic() - started, code


def assert_clean(server: RawServer, took: float, code: int | None) -> None:
    print(f"serve stopped in {took:.3f} s")  # the figure docs/reliability.md gives (pytest -s)
    assert code == 0, f"exit {code}\n{server.stderr[-3000:]}"
    assert took < LIMIT, f"took {took:.2f} s\n{server.stderr[-2000:]}"
    assert "Traceback" not in server.stderr and "KeyboardInterrupt" not in server.stderr, server.stderr[-3000:]


def facts(home, project) -> list[str]:
    conn = store.connect(config.database_for(home, project))
    try:
        return [row[0] for row in conn.execute("SELECT text FROM facts")]
    finally:
        conn.close()


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_serve_idle(project, tmp_path, signum):
    server = RawServer(project, child_env(tmp_path / "home"))
    try:
        server.start()
        assert server.call(1, "memory_search", {"terms": "deploy"})["id"] == 1
        assert_clean(server, *stopped_within(server, signum))
    finally:
        server.close()


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_serve_mid_call_answers_it(project, tmp_path, signum):
    endpoint = HeldEmbeddings()
    home = tmp_path / "home"
    server = RawServer(project, child_env(home, MEMORY_GATE_EMBED_URL=endpoint.url, MEMORY_GATE_EMBED_MODEL="fake-embed"))
    try:
        server.start()
        written = server.call(1, "memory_write", WRITE)
        assert not written["result"]["isError"], written
        endpoint.hold.set()
        server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "memory_search", "arguments": {"terms": "deploy staging"}}})
        assert endpoint.arrived.wait(60), server.stderr[-2000:]
        took, code = stopped_within(server, signum)
        answer = server.receive(5)
        assert answer is not None and answer["id"] == 2, (answer, server.stderr[-2000:])
        assert_clean(server, took, code)
    finally:
        server.close()
        endpoint.close()


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_serve_mid_write_rolls_it_back_and_says_so(project, tmp_path, signum):
    """A write waiting for the lock another process holds: refused at the stop, nothing written."""
    home = tmp_path / "home"
    path = config.database_for(home, project)
    store.connect(path).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    server = RawServer(project, child_env(home))
    try:
        server.start()
        assert holder.stdout.readline().strip() == "held"
        server.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_write", "arguments": WRITE}})
        # The write is waiting for the lock once the server's connection asked for it: SQLite's
        # busy handler runs; no answer can come before the holder lets go or the stop.
        assert server.receive(0.3) is None
        took, code = stopped_within(server, signum)
        answer = server.receive(5)
        assert answer is not None and answer["id"] == 1, (answer, server.stderr[-2000:])
        text = answer["error"]["message"] if "error" in answer else answer["result"]["content"][0]["text"]
        assert "stopping" in text and "nothing was written" in text, text
        assert_clean(server, took, code)
    finally:
        server.close()
        holder.stdin.close()
        holder.wait(10)
        holder.stdout.close()
    assert facts(home, project) == []


# -- memory-gate view --------------------------------------------------------------------------


class View:
    """`memory-gate view --edit --no-browser` in a child process, its URL read from its first line."""

    def __init__(self, db, env):
        self.process = subprocess.Popen([sys.executable, "-m", "gate", "--db", str(db), "view", "--edit", "--no-browser"],
                                        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = self.process.stdout.readline()
        assert first.startswith("memory-gate view: http://"), first + self.process.stderr.read()
        self.url = first.split(": ", 1)[1].strip()
        self.origin, _, rest = self.url.partition("/?")
        self.token = rest.partition("t=")[2].partition("&")[0]

    def get(self, path: str, **params):
        import urllib.parse
        import urllib.request

        query = urllib.parse.urlencode({"t": self.token, **params})
        return urllib.request.urlopen(f"{self.origin}{path}?{query}", timeout=30)

    def stop(self, signum) -> tuple[float, int | None, str]:
        started = time.monotonic()
        self.process.send_signal(signum)
        try:
            code = self.process.wait(10)
        except subprocess.TimeoutExpired:
            code = None
        took = time.monotonic() - started
        self.process.kill()
        self.process.wait()
        err = self.process.stderr.read()
        self.process.stdout.close()
        self.process.stderr.close()
        return took, code, err


def assert_view_stopped(took, code, err):
    print(f"view stopped in {took:.3f} s")
    assert code == 0 and "memory-gate view: stopped" in err, f"exit {code}\n{err[-3000:]}"
    assert took < LIMIT, f"took {took:.2f} s\n{err[-2000:]}"
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_view_idle_with_a_live_page_open(tmp_path, signum):
    db = tmp_path / "memory.db"
    store.connect(db).close()
    view = View(db, child_env(tmp_path / "home"))
    events = view.get("/events")  # a page's live updates: a request that never ends by itself
    try:
        assert_view_stopped(*view.stop(signum))
    finally:
        events.close()


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_view_mid_search_answers_or_closes(tmp_path, signum):
    endpoint = HeldEmbeddings()
    db = tmp_path / "memory.db"
    store.connect(db).close()
    view = View(db, child_env(tmp_path / "home", MEMORY_GATE_EMBED_URL=endpoint.url, MEMORY_GATE_EMBED_MODEL="fake-embed"))
    endpoint.hold.set()
    result: list = []

    def search():
        try:
            result.append(view.get("/search", q="deploy staging").status)
        except OSError as error:  # the answer, or the connection closed: either way not held
            result.append(type(error).__name__)

    asking = threading.Thread(target=search)
    asking.start()
    try:
        assert endpoint.arrived.wait(60), "the search never asked the endpoint"
        assert_view_stopped(*view.stop(signum))
        asking.join(5)
        assert result, "the search was left hanging"
    finally:
        endpoint.close()


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_view_mid_edit_rolls_it_back(tmp_path, signum):
    """An edit waiting for the lock another process holds: let go at the stop, nothing written."""
    import re
    import urllib.parse
    import urllib.request

    from conftest import Writer

    db = tmp_path / "memory.db"
    conn = store.connect(db)
    fact = Writer(conn).insert("deploy", "Deploys go through staging.")
    conn.close()
    view = View(db, child_env(tmp_path / "home"))
    page = view.get(f"/facts/{fact}").read().decode()
    form = {"csrf": re.search(r'name="csrf" value="([^"]+)"', page).group(1),
            "rev": re.search(r'name="rev" value="([^"]+)"', page).group(1),
            "date": re.search(r'name="date" value="([^"]+)"', page).group(1),
            "topic": "deploy", "kind": "state", "text": "Deploys go through prod."}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    result: list = []

    def edit():
        request = urllib.request.Request(f"{view.origin}/facts/{fact}/edit?t={view.token}", method="POST",
                                         data=urllib.parse.urlencode(form).encode(), headers={"Origin": view.origin})
        try:
            result.append(urllib.request.urlopen(request, timeout=30).status)
        except OSError as error:  # an answer saying so, or the connection closed
            result.append(f"{type(error).__name__} {getattr(error, 'code', '')} {getattr(error, 'read', lambda: b'')()[:300]!r}")

    try:
        assert holder.stdout.readline().strip() == "held"
        editing = threading.Thread(target=edit)
        editing.start()
        # The edit cannot finish while the lock is held: once it is asked, the stop finds it waiting.
        editing.join(0.3)
        assert not result, result
        assert_view_stopped(*view.stop(signum))
        editing.join(5)
        assert result, "the edit was left hanging"
    finally:
        holder.stdin.close()
        holder.wait(10)
        holder.stdout.close()
    conn = store.connect(db)
    assert [row[0] for row in conn.execute("SELECT text FROM facts")] == ["Deploys go through staging."]
    conn.close()
