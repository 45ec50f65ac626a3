"""Faults a team meets, on a real PostgreSQL: no member can stall another.

A half-dead network path (a loopback proxy that accepts and relays nothing), a member paused in
the middle of a write (its process stopped with SIGSTOP, as a closed laptop lid stops it), a
member holding the project's lock too long, and a COMMIT that reaches the server after its
deadline. Each call ends within memory-gate's own deadline, says what happened (an outage, or
which member holds the project), and a write refused is never applied later."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import psycopg
import pytest

from gate.engine import postgres
from gate.engine.teamfacts import TeamFacts, Who, project

FACT = {"topic": "deploy", "kind": "state", "text": "Deploys go through staging.", "date": "2026-12-01"}
STAMP = "2026-12-01T00:00:00Z"


class Proxy:
    """A loopback TCP proxy to `port` that can stall: while stalled it keeps reading both ways and
    relays nothing (a half-dead path: connections are accepted, bytes acknowledged, none arrive),
    and when resumed it delivers what it held, as a network path coming back does."""

    def __init__(self, port: int, *, stalled: bool = False):
        self.target = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.flowing = threading.Event()
        # Set once bytes arrived while stalled: a call is waiting on the path now.
        self.holding = threading.Event()
        if not stalled:
            self.flowing.set()
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def stall(self) -> None:
        self.flowing.clear()

    def resume(self) -> None:
        self.flowing.set()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target))
            self.sockets += [client, server]
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        held: list[bytes] = []
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            held.append(data)
            if data and not self.flowing.is_set():
                self.holding.set()
            self.flowing.wait()
            try:
                for chunk in held:
                    if chunk:
                        sink.sendall(chunk)
                    else:
                        sink.shutdown(socket.SHUT_WR)
                        return
            except OSError:
                return
            held = []

    def close(self) -> None:
        # shutdown() before close(): a close() alone leaves a socket open while a pump thread is
        # blocked reading it (Linux releases it when that read returns), so the server would never
        # see the path end and the member's session would live on.
        self.flowing.set()
        self.listener.close()
        for sock in self.sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already ended by its peer
            sock.close()


def database(url: str) -> str:
    return url.rsplit("/", 1)[1]


def port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


def facts_of(conn, member: str, deadline: float) -> TeamFacts:
    with conn.transaction():
        key = project(conn, "acme-api", STAMP)
    return TeamFacts(conn, key, Who(member, "s1"), deadline=deadline)


def insert(facts: TeamFacts, text: str = FACT["text"]) -> int:
    with facts.transaction():
        facts.existing([])  # the project's lock, as every write takes it first
        return facts.insert({**FACT, "text": text}, stamp=STAMP)


def team_facts(url: str) -> list[str]:
    with psycopg.connect(url) as admin:
        return [text for (text,) in admin.execute("SELECT text FROM memory_gate.facts ORDER BY id")]


def backends(url: str, name: str) -> int:
    """How many sessions on the server carry this application_name."""
    with psycopg.connect(url) as admin:
        return admin.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)).fetchone()[0]


def figure(what: str, seconds: float) -> None:
    """A fault's figure, for docs/team-memory.md: `pytest -s tests/test_team_faults.py` shows them."""
    print(f"\n{what}: {seconds * 1000:.1f} ms")


def test_a_path_that_accepts_and_relays_nothing_fails_the_connection_within_the_deadline(postgres_url):
    postgres.connect(postgres_url).close()  # the schema, made
    proxy = Proxy(port(postgres_url), stalled=True)
    try:
        started = time.monotonic()
        with pytest.raises(postgres.Unreachable) as refused:
            postgres.connect(proxy.url(database(postgres_url)), "ana@laptop", deadline=2.0)
        took = time.monotonic() - started
    finally:
        proxy.close()
    figure("a path relaying nothing, connecting with a 2 s deadline: refused after", took)
    assert took < 2.0 + 1.0, took
    assert "cannot reach the team database" in str(refused.value)


def test_a_path_going_half_dead_mid_write_fails_within_the_deadline_and_the_write_never_lands(postgres_url):
    proxy = Proxy(port(postgres_url))
    conn = postgres.connect(proxy.url(database(postgres_url)), "ana@laptop", deadline=2.0)
    try:
        facts = facts_of(conn, "ana@laptop", 2.0)
        insert(facts, "Written before the path went half dead.")
        proxy.stall()
        started = time.monotonic()
        with pytest.raises(postgres.Unreachable) as refused:
            insert(facts, "Refused for its deadline.")
        took = time.monotonic() - started
        proxy.resume()  # the path comes back: what it held reaches the server now
    finally:
        conn.close()
        proxy.close()
    # Once the member's session on the server has ended, what it held has been committed or not:
    # then, and not before, the facts say whether the late write was applied.
    gone = time.monotonic() + 30
    while backends(postgres_url, postgres.application_name("ana@laptop")):
        assert time.monotonic() < gone, "the member's session never ended on the server"
        time.sleep(0.05)
    figure("a path gone half dead mid-write, a 2 s deadline: refused after", took)
    assert took < 2.0 + 1.0, took
    assert "no answer within 2 s" in refused.value.reason
    assert team_facts(postgres_url) == ["Written before the path went half dead."]


def test_a_commit_reaching_the_server_after_its_deadline_is_not_applied(postgres_url):
    """The server's side of the promise: even a COMMIT delivered late (its client long gone)
    is refused once the deadline the transaction set has passed."""
    conn = postgres.connect(postgres_url, "ana@laptop", deadline=1.0)
    try:
        facts = facts_of(conn, "ana@laptop", 1.0)
        with pytest.raises(psycopg.errors.QueryCanceled, match="after its deadline"):
            with conn.transaction():
                conn.deadline, facts.deadline = time.monotonic() + 60, None
                postgres.bound(conn)
                conn.execute("SELECT set_config('memory_gate.deadline', (clock_timestamp() + interval '0.3 s')::text, true)")
                facts.existing([])
                facts.insert(FACT, stamp=STAMP)
                time.sleep(0.6)
    finally:
        conn.close()
    assert team_facts(postgres_url) == []


def stopped(pid: int) -> bool | None:
    """Whether the process is stopped (None where /proc cannot say)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return None


HOLDER = textwrap.dedent("""
    import os, signal, sys
    from gate.engine import postgres
    from gate.engine.teamfacts import TeamFacts, Who, project

    conn = postgres.connect(sys.argv[1], "ana@laptop")
    with conn.transaction():
        key = project(conn, "acme-api", "2026-12-01T00:00:00Z")
    facts = TeamFacts(conn, key, Who("ana@laptop", "s1"))
    try:
        with facts.transaction():
            facts.existing([])
            facts.insert({"topic": "deploy", "kind": "state", "text": "Ana's write, paused.", "date": "2026-12-01"},
                         stamp="2026-12-01T00:00:00Z")
            print("holding", flush=True)
            os.kill(os.getpid(), signal.SIGSTOP)  # the lid closes mid-write
        print("committed", flush=True)
    except postgres.Unreachable as error:
        print("refused:", error.reason, flush=True)
""")


def test_a_member_paused_mid_write_costs_the_others_a_few_seconds_once(postgres_url, tmp_path):
    postgres.connect(postgres_url).close()
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    ana = subprocess.Popen([sys.executable, str(script), postgres_url], stdout=subprocess.PIPE, text=True,
                           env={**os.environ})
    conn = postgres.connect(postgres_url, "bo@desk")
    try:
        assert ana.stdout.readline().strip() == "holding"
        deadline = time.monotonic() + 10
        while stopped(ana.pid) is False and time.monotonic() < deadline:
            time.sleep(0.05)
        bo = facts_of(conn, "bo@desk", postgres.CALL_DEADLINE_S)

        started = time.monotonic()
        with bo.transaction():  # a search's read never waits on the lock
            bo.conn.execute("SELECT count(*) FROM facts WHERE project = %s", (bo.project,)).fetchone()
        searched = time.monotonic() - started

        started = time.monotonic()
        insert(bo, "Bo's write, after ana paused.")
        first = time.monotonic() - started
        started = time.monotonic()
        insert(bo, "Bo's next write.")
        second = time.monotonic() - started
    finally:
        os.kill(ana.pid, signal.SIGCONT)
        told = ana.communicate(timeout=30)[0]
        conn.close()
    figure("a member paused mid-write: another's read took", searched)
    figure("a member paused mid-write: another's first write took", first)
    figure("a member paused mid-write: another's next write took", second)
    assert searched < 0.5, searched
    # The server let ana's idle transaction go after IDLE_IN_TRANSACTION_MS; bo waited that once.
    assert first < postgres.LOCK_WAIT_MS / 1000 + 1.5, first
    assert second < 0.5, second
    # Ana, resumed, is told her write did not go in, and it never does.
    assert told.startswith("refused:"), told
    assert team_facts(postgres_url) == ["Bo's write, after ana paused.", "Bo's next write."]


def test_a_lock_held_too_long_is_refused_naming_the_member_who_holds_it(postgres_url):
    postgres.connect(postgres_url).close()
    ana = postgres.connect(postgres_url, "ana@laptop", deadline=30)
    bo = postgres.connect(postgres_url, "bo@desk")
    try:
        held = facts_of(ana, "ana@laptop", None)
        busy = threading.Event()

        def hold() -> None:
            with ana.transaction():
                ana.execute("SET LOCAL statement_timeout = 0")
                ana.execute("SELECT 1 FROM projects WHERE id = %s FOR UPDATE", (held.project,))
                busy.set()
                ana.execute("SELECT pg_sleep(%s)", (postgres.LOCK_WAIT_MS / 1000 + 1.5,))

        holder = threading.Thread(target=hold)
        holder.start()
        busy.wait(10)
        started = time.monotonic()
        with pytest.raises(postgres.Held) as refused:
            insert(facts_of(bo, "bo@desk", postgres.CALL_DEADLINE_S))
        took = time.monotonic() - started
        holder.join(30)
    finally:
        ana.close()
        bo.close()
    figure("a lock held too long: refused naming its holder after", took)
    assert took < postgres.LOCK_WAIT_MS / 1000 + 1.0, took
    assert refused.value.holder == "ana@laptop"
    assert "held by ana@laptop" in refused.value.reason and "could not be reached" not in str(refused.value)


def test_a_held_project_is_told_as_busy_naming_the_holder_and_the_write_is_asked_again():
    from gate.memory.team import Team
    from gate.serve import tools

    team = Team("postgresql://bo@127.0.0.1:5432/team", "acme-api", "MEMORY_GATE_DB")
    held = postgres.Held("busy", "the project is held by ana@laptop, whose write did not finish within 4 s", "ana@laptop")
    why = tools.unreachable(held, team)
    assert "is busy" in why and "held by ana@laptop" in why and "could not be reached" not in why
    assert "again" in tools.unreachable_write(why, held=True) and "Do not try again" not in tools.unreachable_write(why, held=True)


def test_maintenance_from_psql_with_its_own_search_path_runs_the_triggers(postgres_url):
    conn = postgres.connect(postgres_url, "ana@laptop")
    try:
        insert(facts_of(conn, "ana@laptop", postgres.CALL_DEADLINE_S))
    finally:
        conn.close()
    with psycopg.connect(postgres_url) as admin:  # search_path "$user", public, as psql has it
        admin.execute("UPDATE memory_gate.facts SET words = %s::tsvector", ("'deploy':1A",))
        admin.execute("DELETE FROM memory_gate.facts")
        assert admin.execute("SELECT facts, words FROM memory_gate.projects").fetchone() == (0, 0)


def postmaster_and_children(data) -> list[int]:
    """The server's processes: the postmaster (postmaster.pid's first line) and its children."""
    postmaster = int((data / "postmaster.pid").read_text().split()[0])
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    if int(handle.read().rsplit(")", 1)[1].split()[1]) == postmaster:
                        children.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    return [postmaster, *children]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the server's processes in /proc")
def test_a_server_killed_mid_write_fails_the_write_at_once_and_comes_back_with_nothing_half_written():
    """SIGKILL to every process of the server (a crash, the OOM killer) while a member's write is
    open: the write fails at once as an outage, a call while it is down fails within the deadline,
    and the server, started again, holds what committed before and nothing of the write."""
    import postgres_server as pg

    found = pg.binaries()
    if found is None:
        pytest.skip("needs pgserver's PostgreSQL (pip install -e '.[test]')")
    server = pg.Server(found).start()
    try:
        conn = postgres.connect(server.url(), "ana@laptop")
        facts = facts_of(conn, "ana@laptop", postgres.CALL_DEADLINE_S)
        insert(facts, "Committed before the crash.")
        started = time.monotonic()
        with pytest.raises(postgres.Unreachable):
            with facts.transaction():
                facts.existing([])
                facts.insert({**FACT, "text": "Open when the server was killed."}, stamp=STAMP)
                killed = postmaster_and_children(server.data)
                for pid in killed:
                    os.kill(pid, signal.SIGKILL)
                started = time.monotonic()
        failed = time.monotonic() - started
        conn.close()
        server.running = False
        started = time.monotonic()
        with pytest.raises(postgres.Unreachable, match="cannot reach the team database"):
            postgres.connect(server.url(), "ana@laptop")
        down = time.monotonic() - started
        deadline = time.monotonic() + 30
        while any(os.path.exists(f"/proc/{pid}") for pid in killed) and time.monotonic() < deadline:
            time.sleep(0.05)  # until the kernel has reaped them: a postmaster.pid naming a live pid stops a start
        server.start_again()  # crash recovery, then it accepts connections
        started = time.monotonic()
        conn = postgres.connect(server.url(), "ana@laptop")
        insert(facts_of(conn, "ana@laptop", postgres.CALL_DEADLINE_S), "Written after the restart.")
        back = time.monotonic() - started
        conn.close()
        held = team_facts(server.url())
    finally:
        server.remove()
    print(f"\nkilled server: the open write failed in {failed * 1000:.1f} ms, a connect while down in "
          f"{down * 1000:.1f} ms, the first write after the restart took {back * 1000:.1f} ms")
    assert len(killed) > 1
    assert failed < 1.0, failed
    assert down < postgres.CALL_DEADLINE_S, down
    assert held == ["Committed before the crash.", "Written after the restart."]


MEMBER_ROLES = ("mg_ana", "mg_bo")


@pytest.fixture
def members(postgres_url):
    """Two member roles set up by `team grant`'s statements, each with a connection: ana has
    written one fact."""
    from gate.engine import teamroles

    owner = postgres.connect(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        for role in MEMBER_ROLES:
            admin.execute(f"DROP ROLE IF EXISTS {role}")
            admin.execute(f"CREATE ROLE {role} LOGIN")
    for role in MEMBER_ROLES:
        teamroles.grant(owner, role)
    owner.close()
    opened = {}
    for role, name in zip(MEMBER_ROLES, ("ana@laptop", "bo@desk")):
        opened[name] = facts_of(postgres.connect(postgres_url.replace("postgres@", f"{role}@"), name), name,
                                postgres.CALL_DEADLINE_S)
    with opened["ana@laptop"].transaction():
        opened["ana@laptop"].existing([])
        fact = opened["ana@laptop"].insert(FACT, stamp=STAMP)
        opened["ana@laptop"].record_lines([{"op": "insert", "id": fact, "write": "w1", "member": "ana@laptop"}])
    yield opened
    for facts in opened.values():
        facts.conn.close()
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        for role in MEMBER_ROLES:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


def refused(conn, statement: str, *args) -> str:
    """The server's refusal of `statement` run as the connection's role, in a transaction of its
    own (committed, so that deferred checks run too)."""
    with pytest.raises(psycopg.Error) as error, conn.transaction():
        conn.execute(statement, args)
    return str(error.value)


def test_a_member_cannot_pass_as_another_by_role_name_line_or_fact(members, postgres_url):
    """Bo, a member role, tries every way to act or be recorded as ana: take her role, claim her
    name for his role or for hers, sign a change's line with her name, make a fact say she changed
    it. Each is refused by the server, and the record still names each change's own member."""
    bo = members["bo@desk"]
    assert "permission denied" in refused(bo.conn, "SET ROLE mg_ana")
    assert "permission" in refused(bo.conn, "SET SESSION AUTHORIZATION mg_ana")
    assert "may not write as role mg_ana" in refused(bo.conn, "SELECT memory_gate_claim('dan@home', 'mg_ana')")
    assert "belongs to the database role mg_ana" in refused(
        bo.conn, "SELECT memory_gate_claim('ana@laptop', 'mg_bo')")
    # A change of his own whose line names ana: history reads the line.
    with pytest.raises(psycopg.Error, match="line"), bo.transaction():
        bo.existing([])
        fact = bo.insert({**FACT, "text": "Bo's fact, signed as ana."}, stamp=STAMP)
        signed = json.dumps({"op": "insert", "id": fact, "write": "w2", "member": "ana@laptop"})
        assert bo.conn.execute("UPDATE changes SET line = %s::jsonb WHERE project = %s AND fact = %s",
                               (signed, bo.project, fact)).rowcount == 1
    # A fact made to say ana changed it, with no change: the next stale keep would name her.
    assert "no change recorded" in refused(bo.conn, "UPDATE facts SET changed_by = 'ana@laptop', updated = 'x'")
    # A change of his recorded, and the fact it made naming ana.
    with pytest.raises(psycopg.Error, match="no change recorded"), bo.transaction():
        bo.existing([])
        fact = bo.insert({**FACT, "text": "Bo's fact."}, stamp=STAMP)
        bo.conn.execute("UPDATE facts SET changed_by = 'ana@laptop' WHERE project = %s AND id = %s",
                        (bo.project, fact))
    with psycopg.connect(postgres_url) as admin:
        assert admin.execute(
            "SELECT member, role, line->>'member' FROM memory_gate.changes ORDER BY seq").fetchall() == [
            ("ana@laptop", "mg_ana", "ana@laptop")]
        assert admin.execute("SELECT text, changed_by FROM memory_gate.facts").fetchall() == [
            (FACT["text"], "ana@laptop")]
