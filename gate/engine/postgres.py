"""Open a team's memory on PostgreSQL and bring its schema up to date.

The team engine's base: the connection (TCP keepalives, a statement timeout, and
`Unreachable` for a server that is down, cut off or too slow, so that the server, the gate and
the commands can say so in one line), and the schema (schema-postgres.sql, applied in numbered
sections as gate.engine.store applies schema.sql). A fact's words and the matching ranked by
them are gate.engine.teamwords.

psycopg is imported here and only here, when a team database is opened: never by the hooks,
which keep each member's ledger in a local SQLite file and never wait on the network. It is an
optional dependency (`pip install 'memory-gate[team]'`).

Credentials come through libpq's own means (PGPASSWORD, ~/.pgpass, a service file, sslmode in
the URL); memory-gate never stores one, and every message that names a database shows its URL
with the password masked.
"""

import time

from gate.engine.store import SchemaFile, StoreError

# The PostgreSQL schema memory-gate's tables live in, so that a database other software uses too
# is shared without a clash.
SCHEMA = "memory_gate"
SCHEMA_FILE = "schema-postgres.sql"
# pg_advisory_xact_lock's key for schema upgrades: two members opening a fresh database at once
# take turns, and the second finds the sections applied.
_UPGRADE_LOCK = 0x6D656D67  # "memg"
CONNECT_TIMEOUT_S = 5


SCHEMA_SQL = SchemaFile(SCHEMA_FILE, StoreError)


def schema_path() -> str:
    """schema-postgres.sql: beside this module in a wheel, at the repository root in a checkout."""
    return SCHEMA_SQL.path()


def schema_steps(source: str | None = None) -> list[tuple[int, str, str]]:
    """The numbered sections of schema-postgres.sql, in order: (version, title, sql)."""
    return SCHEMA_SQL.steps(source)


def schema_template(name: str, **values: object) -> str:
    """The SQL of a "-- template NAME" section, its {placeholders} filled in."""
    return SCHEMA_SQL.template(name, **values)


def shown(url: str) -> str:
    """The URL or connection string as a message may show it: any password masked."""
    from urllib.parse import urlsplit, urlunsplit

    if "://" in url:
        parts = urlsplit(url)
        if parts.password is not None:
            user = parts.username or ""
            host = parts.hostname or ""
            if ":" in host:
                host = f"[{host}]"
            netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port else "")
            parts = parts._replace(netloc=netloc)
        query = "&".join(
            f"{key}=***" if key.lower() == "password" else f"{key}={value}" if value or "=" in pair else key
            for pair in parts.query.split("&")
            if pair
            for key, _, value in [pair.partition("=")]
        )
        return urlunsplit(parts._replace(query=query))
    # key=value form: mask the value of password=..., quoted or not.
    import re

    return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", url, flags=re.IGNORECASE)


class Unreachable(StoreError):
    """The team database cannot be reached now: down, cut off, or too slow to answer. The
    message names the database (its password masked) and the reason; `reason` alone is short
    enough for one line of a search's answer."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def _reason(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _unreachable(url: str, error: BaseException) -> Unreachable:
    reason = _reason(error)
    return Unreachable(
        f"cannot reach the team database {shown(url)}: {reason}. Check that the server is up and "
        "the URL (MEMORY_GATE_DB or `memory-gate team connect`) is right; a password comes from "
        "PGPASSWORD, ~/.pgpass or a service file, never from memory-gate",
        reason,
    )


class Held(Unreachable):
    """Another member's write holds the project, and this call would not wait longer for it:
    the team's memory is reachable, only busy. `holder` names that member (their connection's
    application_name) when the server says who, and `reason` says so in one line."""

    def __init__(self, message: str, reason: str, holder: str | None):
        super().__init__(message, reason)
        self.holder = holder


class DeadlineExceeded(Exception):
    """A team call outlived the deadline memory-gate gives it."""


class reaching:
    """A block of team database work in which a lost connection, a server gone or a statement
    cut short by a time-out raises Unreachable, and a lock wait cut short raises Held (a context
    manager; imports psycopg on entry). Given `conn` and `seconds`, the block has a deadline that
    memory-gate enforces itself (see _connection_class): when it passes, the connection is closed
    and Unreachable says so, whatever the network or the server are doing. An inner block keeps
    the outer one's deadline."""

    def __init__(self, url: str, conn=None, seconds: float | None = None):
        self.url, self.conn, self.seconds = url, conn, seconds
        self._armed = False

    def __enter__(self):
        conn = self.conn
        if conn is not None and self.seconds is not None and hasattr(conn, "budget") and conn.deadline is None:
            conn.deadline = time.monotonic() + self.seconds
            conn.budget, conn.expired = self.seconds, None
            self._armed = True
        return self

    def __exit__(self, kind, error, trace) -> None:
        if self._armed:
            self.conn.deadline = None
        if error is None or isinstance(error, Unreachable):
            return None
        import psycopg

        if isinstance(error, psycopg.errors.LockNotAvailable) and self.conn is not None:
            holder = holder_of_project(self.conn)
            who = f"by {holder}" if holder else "by another member"
            reason = (
                f"the project is held {who}, whose write did not finish within "
                f"{LOCK_WAIT_MS / 1000:g} s; nothing of this call was applied"
            )
            raise Held(
                f"the team's memory at {shown(self.url)} is reachable, but {reason}: try again in a "
                "few seconds; a member who stays paused is let go by the server within seconds",
                reason,
                holder,
            ) from None
        if isinstance(error, psycopg.errors.IdleInTransactionSessionTimeout):
            # This member stalled mid-transaction (paused, a lid closed): the server let its locks go.
            raise _unreachable(
                self.url,
                DeadlineExceeded(
                    f"the server ended this call's transaction, idle past {IDLE_IN_TRANSACTION_MS / 1000:g} s "
                    "(this process was paused or stalled mid-write); nothing of it was applied"
                ),
            ) from None
        if isinstance(error, (psycopg.OperationalError, psycopg.InterfaceError)):
            late = getattr(self.conn, "expired", None) if self.conn is not None else None
            raise _unreachable(self.url, DeadlineExceeded(late) if late else error) from None
        return None


def holder_of_project(conn) -> str | None:
    """Who holds a row lock on the team's projects now, the longest first: the member their
    connection's application_name names (every role sees the others' application_name). Asked
    after a lock wait was cut short, once the caller's transaction has ended."""
    try:
        if conn.closed or conn.broken:
            return None
        conn.rollback()
        row = conn.execute(
            "SELECT a.application_name, a.usename FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
            " WHERE l.locktype = 'relation' AND l.relation = %s::regclass AND l.granted"
            " AND l.mode IN ('RowShareLock', 'RowExclusiveLock') AND l.pid <> pg_backend_pid()"
            " ORDER BY a.backend_start LIMIT 1",
            (f"{SCHEMA}.projects",),
        ).fetchone()
        conn.rollback()
    except Exception:  # who holds it is a courtesy; the refusal stands without it
        return None
    if row is None:
        return None
    name, role = row
    name = (name or "").removeprefix(APPLICATION).strip()
    return name or role


# How long one team transaction of a member's server may take (a search's ranking, a write):
# memory-gate closes the connection when it passes, whatever the network does (a path that
# accepts and relays nothing hangs a statement past any server-side time-out and any TCP
# keepalive). No longer than the hooks' 5 s wait for the ledger (gate.claude.hooks.BUSY_MS), which a
# write holds through its team transaction, at most. A command a person runs (import, reindex, push)
# gets COMMAND_DEADLINE_S.
CALL_DEADLINE_S = 5.0
COMMAND_DEADLINE_S = 600.0
# Inside each transaction, set on the server (SET LOCAL): how long one statement may run; how
# long a wait for another member's lock may last before the call is refused naming them; and how
# long a transaction may sit idle (its member paused or gone: a closed laptop lid) before the
# server ends it and frees its locks. A paused member so costs the others one wait, once.
STATEMENT_TIMEOUT_MS = 4_000
LOCK_WAIT_MS = 2_500
IDLE_IN_TRANSACTION_MS = 2_000
# TCP keepalives, so that a server gone without a word (a laptop leaving the network) is noticed
# in seconds rather than at the kernel's two hours; tcp_user_timeout, so that data the other end
# never acknowledges fails the connection; a URL that sets its own keeps them.
KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 3,
    "tcp_user_timeout": 8_000,
}
APPLICATION = "memory-gate"


def application_name(member: str | None) -> str:
    """The connection's application_name: memory-gate and the member, so that a member refused
    for a lock learns who holds it. ASCII, at most 63 bytes, as PostgreSQL keeps it."""
    name = f"{APPLICATION} {member}" if member else APPLICATION
    return name.encode("ascii", "replace").decode("ascii")[:63]


_CONNECTION = None


def _connection_class():
    """psycopg's Connection with a deadline: every wait on the server (each statement, commit,
    rollback) is cut off at `deadline` (time.monotonic()), the connection then closed, since it
    is mid-protocol and unusable, and `expired` set to say why."""
    global _CONNECTION
    if _CONNECTION is not None:
        return _CONNECTION
    import psycopg
    from psycopg import errors

    timed_out = getattr(errors, "_WaitTimeout", None)

    class Connection(psycopg.Connection):
        deadline: float | None = None
        budget: float = 0.0
        expired: str | None = None

        def wait(self, gen, interval=0.1, timeout=None):
            if self.deadline is None or timed_out is None:
                return super().wait(gen, interval, timeout)
            left = self.deadline - time.monotonic()
            if left <= 0:
                self._expire()
            try:
                return super().wait(gen, interval, left if timeout is None else min(timeout, left))
            except timed_out:
                self._expire()

        def _expire(self):
            self.expired = f"no answer within {self.budget:g} s, memory-gate's deadline for one call"
            self.deadline = None
            self.pgconn.finish()  # the socket closed: the server sees the client gone and rolls back
            raise psycopg.OperationalError(self.expired)

    _CONNECTION = Connection
    return Connection


def bound(conn) -> None:
    """Bound the transaction just begun on the server too (SET LOCAL): its statements, its lock
    waits, its idle time, and its commit: memory_gate.deadline, checked at commit by the
    triggers of schema-postgres.sql section 6, so that a write whose client gave up (a COMMIT
    held up on the network and delivered later) is never applied. The server's deadline runs
    from when it read this statement, so the client's is pushed to match once the answer is
    back: the client never says "nothing was written" while the server could still commit."""
    left = getattr(conn, "deadline", None)
    seconds = max(left - time.monotonic(), 0.001) if left is not None else None
    statement = STATEMENT_TIMEOUT_MS if seconds is None else min(STATEMENT_TIMEOUT_MS, int(seconds * 1000) + 1)
    conn.execute(
        "SELECT set_config('statement_timeout', %s, true), set_config('lock_timeout', %s, true),"
        " set_config('idle_in_transaction_session_timeout', %s, true),"
        " set_config('memory_gate.deadline', CASE WHEN %s::float8 IS NULL THEN '' ELSE"
        " (clock_timestamp() + %s::float8 * interval '1 second')::text END, true)",
        (str(statement), str(LOCK_WAIT_MS), str(IDLE_IN_TRANSACTION_MS), seconds, seconds),
    )
    if seconds is not None and conn.deadline is not None:
        conn.deadline = max(conn.deadline, time.monotonic() + seconds + 0.05)


def connect(url: str, member: str | None = None, deadline: float = CALL_DEADLINE_S):
    """A psycopg connection to the team database at `url`, its schema up to date, in the
    transaction mode the engine's writes rely on (READ COMMITTED, explicit transactions), named
    after `member` (application_name), with a deadline for each call (see reaching): connecting
    and bringing the schema up to date take at most `deadline` seconds too, but for applying
    sections the database lacks. Raises StoreError with the mend when psycopg is missing or the
    server cannot be reached."""
    try:
        import psycopg
    except ImportError as error:
        raise StoreError(
            "team memory on PostgreSQL needs psycopg, which is not installed: "
            "pip install 'memory-gate[team]' (into memory-gate's environment)"
        ) from error
    try:
        given = psycopg.conninfo.conninfo_to_dict(url)
        extra = {key: value for key, value in KEEPALIVES.items() if key not in given}
        # psycopg enforces connect_timeout itself, for the whole of the startup (a path that
        # accepts and answers nothing included).
        conn = _connection_class().connect(
            url,
            connect_timeout=min(CONNECT_TIMEOUT_S, max(int(deadline), 2)),
            application_name=application_name(member),
            **extra,
        )
    except psycopg.OperationalError as error:
        raise _unreachable(url, error) from None
    except psycopg.ProgrammingError as error:  # a malformed connection string
        raise StoreError(
            f"MEMORY_GATE_DB is not a PostgreSQL connection string ({error}): "
            "write it as postgresql://USER@HOST:PORT/DATABASE"
        ) from None
    try:
        with reaching(url, conn, deadline):
            migrate(conn)
            conn.execute(f"SET statement_timeout = {STATEMENT_TIMEOUT_MS}")
            conn.commit()
    except psycopg.errors.InsufficientPrivilege as error:  # reading the schema at all
        conn.close()
        user = psycopg.conninfo.conninfo_to_dict(url).get("user") or "this member's role"
        raise StoreError(
            f"the team database {shown(url)} does not let {user} use memory-gate's tables "
            f"({_reason(error)}): have its owner run `memory-gate team grant {user}` (or its statements, "
            f"`memory-gate team grant {user} --sql`, in psql)"
        ) from None
    except BaseException:
        conn.close()
        raise
    return conn


def version(conn) -> int:
    """The last section of schema-postgres.sql applied to this database (0: none)."""
    with conn.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s)", (f"{SCHEMA}.memory_gate_schema",))
        if cursor.fetchone()[0] is None:
            return 0
        cursor.execute(f"SELECT version FROM {SCHEMA}.memory_gate_schema")
        row = cursor.fetchone()
        return row[0] if row else 0


def migrate(conn) -> int:
    """Apply the sections this database lacks, each in its own transaction, and set the
    connection's search_path to memory-gate's schema. Returns the version now applied. Raises
    StoreError when the database is newer than this memory-gate, or the member may not create
    what the schema needs."""
    import psycopg

    steps = schema_steps()
    with conn.cursor() as cursor:
        cursor.execute(f"SET search_path TO {SCHEMA}, public")
    conn.commit()
    current = version(conn)
    conn.rollback()
    if current > len(steps):
        raise StoreError(
            f"the team database is at schema version {current}, newer than this memory-gate knows "
            f"({len(steps)}): upgrade memory-gate (scripts/install) on this machine"
        )
    if current == len(steps):
        return current
    # A session lock, taken in a transaction of its own: the transactions that check and apply
    # the sections start after it is held, and a transaction's start is where PostgreSQL takes in
    # what other sessions committed to the catalogs meanwhile (a lock taken inside the same
    # transaction left a waiting member blind to the tables the first one had just made).
    if getattr(conn, "deadline", None) is not None:  # applying sections may take minutes, once
        conn.deadline = time.monotonic() + COMMAND_DEADLINE_S
    conn.execute("SELECT pg_advisory_lock(%s)", (_UPGRADE_LOCK,))
    conn.commit()
    try:
        for number, title, sql in steps:
            try:
                with conn.transaction(), conn.cursor() as cursor:
                    if version(conn) >= number:  # applied before, or by another member meanwhile
                        continue
                    cursor.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
                    cursor.execute(sql)
                    cursor.execute(f"UPDATE {SCHEMA}.memory_gate_schema SET version = %s", (number,))
            except psycopg.errors.InsufficientPrivilege as error:
                raise StoreError(
                    f"the team database's schema needs section {number} ({title}), and this member may not "
                    f"create it ({str(error).strip().splitlines()[0]}): have its owner run "
                    "`memory-gate doctor` once with a role that may, or grant CREATE on the database"
                ) from None
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (_UPGRADE_LOCK,))
        conn.commit()
    return len(steps)
