"""Open a memory database and bring its schema up to date.

SQLite comes through apsw rather than the standard library's sqlite3: apsw bundles a current
SQLite with FTS5 and can load extensions (sqlite-vec) on Linux, macOS and Windows, where many
Python builds' sqlite3 cannot. apsw is not DB-API: transactions are explicit, as they should be
here, because a write and its ledger and index updates must commit together or not at all.

Every connection runs in WAL mode with a busy timeout, so that parallel sessions of one project
wait for each other's short write transactions instead of failing.
"""

import os
import time

import apsw

from gate.engine import files

# This module is on the hooks' per-turn path: cheap imports only (no pathlib, dataclasses, or
# re until a schema upgrade needs it).

# Long enough to outwait another session's write transaction, short enough that a wedged lock
# costs a hook or a tool call seconds, not the owner's patience.
BUSY_TIMEOUT_MS = 5000

# A session waiting for the write lock sleeps 1, 2, 4 ms... between tries, never more than this.
BUSY_POLL_S = 0.010


def _patient(limit_ms: int):
    """A busy handler that tries again at least every BUSY_POLL_S until `limit_ms` have passed.

    SQLite's own busy timeout sleeps longer the longer it waits (up to 100 ms a try), so under
    many writers a session that has waited a while tries rarely, and the others, trying often,
    keep taking the lock before it: with 8 sessions writing flat out, a hook waited out its 5 s
    and failed while the others wrote hundreds of times. Trying at an even, short pace gives
    every waiter about the same chance each time the lock comes free (at 2 ms the tries
    themselves cost the lock holder its CPU: throughput fell by 40%)."""
    deadline = 0.0

    def busy(tries: int) -> bool:
        nonlocal deadline
        now = time.monotonic()
        if tries == 0:  # the first call of each wait
            deadline = now + limit_ms / 1000
        if now >= deadline or writes_closed():
            return False
        time.sleep(min(0.001 * (1 << min(tries, 8)), BUSY_POLL_S))
        return True

    return busy


# A write refused because memory-gate is stopping (gate.stopping, then close_writes).
STOPPING = "memory-gate is stopping: nothing was written; call again once it runs"
_closed: list[bool] = []


def close_writes() -> None:
    """No write transaction of this process begins from now on, and one waiting for the lock
    gives up: a stopping server's calls still in flight after its grace."""
    _closed.append(True)


def writes_closed() -> bool:
    return bool(_closed)


class StoreError(Exception):
    """The database cannot be opened or used; the message says what to do about it."""


_MARK = "-- version "


class SchemaFile:
    """One schema file, read the same way for both engines (schema.sql here, schema-postgres.sql
    in gate.engine.postgres): numbered sections applied in order, and templates. Found beside
    this package in a wheel or at the repository root in a checkout, exactly one either way.
    `error`: the exception its problems raise."""

    def __init__(self, name: str, error: type[Exception]):
        self.name, self.error = name, error

    def path(self) -> str:
        here = os.path.dirname(os.path.realpath(__file__))
        root = os.path.dirname(os.path.dirname(here))
        for candidate in (os.path.join(here, self.name), os.path.join(root, self.name)):
            if os.path.isfile(candidate):
                return candidate
        raise self.error(f"{self.name} is missing beside {here}: reinstall memory-gate")

    def source(self) -> str:
        with open(self.path(), encoding="utf-8") as handle:
            return handle.read()

    def steps(self, source: str | None = None) -> list[tuple[int, str, str]]:
        """The numbered sections, in order: (version, title, sql)."""
        found = [
            (int(number), title, sql)
            for kind, number, title, sql in sections(self.source() if source is None else source)
            if kind == "version"
        ]
        versions = [version for version, _, _ in found]
        if versions != list(range(1, len(found) + 1)):
            raise self.error(f"{self.name} sections must be numbered 1, 2, 3...; found {versions}")
        return found

    def template(self, name: str, **values: object) -> str:
        """The SQL of the "-- template NAME" section, its {placeholders} filled in."""
        for kind, found, _, sql in sections(self.source()):
            if kind == "template" and found == name:
                return sql.strip().format(**values)
        raise self.error(f"{self.name} has no template {name!r}: reinstall memory-gate")

    def latest(self) -> int:
        """How many numbered sections the file has, counted without parsing it."""
        source = self.source()
        return source.count("\n" + _MARK) + source.startswith(_MARK)


def sections(sql: str) -> list[tuple[str, str, str, str]]:
    """Every "-- version N: title" and "-- template NAME: title" section: (kind, N or NAME,
    title, sql up to the next section)."""
    import re

    marks = list(re.finditer(r"^-- (version|template) (\w+): (.+)$", sql, re.MULTILINE))
    return [
        (
            mark.group(1),
            mark.group(2),
            mark.group(3).strip(),
            sql[mark.end() : marks[index + 1].start() if index + 1 < len(marks) else len(sql)],
        )
        for index, mark in enumerate(marks)
    ]


SCHEMA = SchemaFile("schema.sql", StoreError)


def schema_path() -> str:
    """schema.sql: beside this module in a wheel, at the repository root in a checkout."""
    return SCHEMA.path()


def schema_steps(source: str | None = None) -> list[tuple[int, str, str]]:
    """The numbered sections of schema.sql, in order: (version, title, sql)."""
    return SCHEMA.steps(source)


def schema_template(name: str, **values: object) -> str:
    """The SQL of schema.sql's "-- template NAME" section, its {placeholders} filled in: for a
    table whose shape is only known later (the vector index needs the embedding dimension)."""
    return SCHEMA.template(name, **values)


def latest_version() -> int:
    """How many sections schema.sql has, counted without parsing it (checked on every open)."""
    return SCHEMA.latest()


def connect(path: str | os.PathLike, *, create: bool = True, busy_ms: int | None = None) -> apsw.Connection:
    """Open (and with `create`, make) the database at `path`, schema applied.

    ':memory:' gives a private in-memory database. A new file is created private to the user
    (0600, folders 0700) before SQLite touches it; SQLite gives its -wal and -shm files the
    same mode.
    """
    path = os.fspath(path)
    flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    if path != ":memory:":
        if not os.path.exists(path):
            if not create:
                raise StoreError(f"no memory database at {path}")
            files.create_private(path)
        refuse_planted(path)
        files.keep_private(path)
        # The check above leaves a moment in which a link could appear: SQLite then refuses it.
        flags |= apsw.SQLITE_OPEN_NOFOLLOW
    conn = None
    try:
        conn = apsw.Connection(path, flags=flags)
        conn.set_busy_handler(_patient(BUSY_TIMEOUT_MS if busy_ms is None else busy_ms))
        # apsw's stub types a function of any SQLite values; the FTS triggers call it on text.
        conn.create_scalar_function("gate_cjk", _cjk_chars, 1, deterministic=True)  # type: ignore[arg-type]
        conn.execute("PRAGMA foreign_keys = ON")
        # In WAL mode NORMAL syncs at checkpoints, not at every commit: a killed process loses
        # nothing, a power cut may lose the last commits. write.log is fsynced before each write
        # commits, so after a power cut the log still tells what the database lost.
        conn.execute("PRAGMA synchronous = NORMAL")
        if path != ":memory:" and user_version(conn) != latest_version():
            refuse_foreign(conn, path, create=create)
        migrate(conn)
        # After the first read: on a file that is not a database, this would fail first, with a
        # message about FTS5 instead of the truth.
        # apsw's stub expects extra SQL arguments; gate_phrases takes none.
        conn.register_fts5_function("gate_phrases", _matched_phrases)  # type: ignore[arg-type]
    except StoreError:
        if conn is not None:
            conn.close()
        raise
    except apsw.Error as error:
        if conn is not None:
            conn.close()
        raise StoreError(f"cannot open {path}: {explain(error)}") from error
    return conn


def refuse_foreign(conn: apsw.Connection, path: str, *, create: bool) -> None:
    """Raise StoreError, before anything is written, when the file at `path` is not memory-gate's
    memory: another program's SQLite database (migrating would add memory's tables to it and
    switch it to WAL), or, for a command that reads memory (`create` False), a file with no
    tables at all, which an empty memory would hide: memory.db truncated, or never made.
    Checked only when the schema is not current, so a current memory pays nothing more."""
    tables = [
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        )
    ]
    if "facts" in tables:
        return
    if tables:
        shown = ", ".join(tables[:5]) + (f" and {len(tables) - 5} more" if len(tables) > 5 else "")
        raise StoreError(
            f"{path} is not memory-gate's memory: it is another program's SQLite database (tables "
            f"{shown}), and memory-gate leaves it unchanged. Point --db or MEMORY_GATE_DB at a "
            "memory-gate database, e.g. ./memory.db"
        )
    if user_version(conn) == 0 and create:
        return  # memory being made: by this open or, a moment ago, another session's
    size = os.path.getsize(path)
    raise StoreError(
        f"{path} is empty ({size} bytes, no tables): it holds no memory, and memory-gate writes "
        "nothing into it. If memory was there, restore memory.db from a backup (write.log beside "
        "it holds every change); if not, delete the file and the next memory_write makes a new one"
    )


def _cjk_chars(value: str | None) -> str:
    """gate_cjk() for the FTS triggers (gate.engine.tokens), imported when a fact is first written:
    the hooks, which never write one, do not pay for unicodedata."""
    from gate.engine import tokens

    return tokens.cjk_chars(value)


# gate_phrases' bytes: a phrase the row does not hold, holds in its text only, holds in its topic.
ABSENT, IN_TEXT, IN_TOPIC = 0, 1, 2


def _matched_phrases(api: apsw.FTS5ExtensionApi) -> bytes:
    """FTS5 auxiliary function: which of the query's phrases this row matches, and where, one
    byte per phrase (ABSENT, IN_TEXT, IN_TOPIC: the topic is column 0). Under `ORDER BY rank
    LIMIT n` FTS5 sorts by itself and SQLite calls this for the n rows returned only."""
    found = []
    for phrase in range(api.phrase_count):
        columns = api.phrase_columns(phrase)
        found.append(IN_TOPIC if 0 in columns else IN_TEXT if columns else ABSENT)
    return bytes(found)


def refuse_planted(path: str) -> None:
    """Raise StoreError when a file memory-gate would write for the database at `path` is a
    symbolic link (memory-gate makes none: one there was put by someone, maybe another user in a
    shared folder, to make memory overwrite what it points at), or, in a folder others can write
    or do not own for us, belongs to another user (who could read what memory writes into it)."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        shared = files.shared_folder(os.stat(folder))
    except OSError:
        return  # SQLite's open says what is wrong with the folder
    for name in (path, *(path + suffix for suffix in files.COMPANIONS), os.path.join(folder, files.LOG_NAME)):
        try:
            found = os.lstat(name)
        except OSError:
            continue
        problem = files.planted(name, found, shared)
        if problem:
            raise StoreError(problem)


class writing:
    """`with store.writing(conn):` one write transaction, taken with BEGIN IMMEDIATE; every
    write transaction of the product is taken here.

    A deferred transaction (apsw's `with conn:`) that reads first and writes later cannot wait
    for another writer: when it tries to upgrade, SQLite answers busy at once, whatever the busy
    timeout, because waiting could deadlock. Taking the write lock up front lets parallel
    sessions queue for it instead of failing.

    Any exception (an interrupt included) rolls back. A block that has nothing to keep may roll
    back itself (`store.rollback`) and leave: nothing is then left to commit.

    `lock=False` begins a deferred transaction, for a block that reads memory as one snapshot or
    writes temporary tables only (export, import's loading): it takes no write lock on memory.
    """

    __slots__ = ("conn", "begin")

    def __init__(self, conn: apsw.Connection, *, lock: bool = True):
        self.conn, self.begin = conn, "BEGIN IMMEDIATE" if lock else "BEGIN"

    def __enter__(self) -> apsw.Connection:
        if writes_closed():
            raise StoreError(STOPPING)
        self.conn.execute(self.begin)
        _open.append(self)
        return self.conn

    def __exit__(self, kind, error, trace) -> None:
        try:
            if kind is not None:
                rollback(self.conn)
            elif not self.conn.get_autocommit():
                self.conn.execute("COMMIT")
        finally:
            _open.remove(self)


_open: list[writing] = []  # the write transactions under way in this process


def writes_open() -> int:
    """How many write transactions this process has under way (a stop waits for them)."""
    return len(_open)


def writes_done(limit_s: float) -> bool:
    """Wait up to `limit_s` for the write transactions under way to end; whether they did."""
    deadline = time.monotonic() + limit_s
    while _open and time.monotonic() < deadline:
        time.sleep(0.005)
    return not _open


def rollback(conn: apsw.Connection) -> None:
    """Roll back the open transaction, if SQLite has not already: a COMMIT that fails on a full
    disk rolls back by itself, and a second ROLLBACK would hide that error behind its own."""
    if not conn.get_autocommit():
        conn.execute("ROLLBACK")


def explain(error: BaseException) -> str:
    """What went wrong with the database or its disk, in one line with the mend, for the agent
    and the owner alike."""
    cause = error.__cause__ if isinstance(error, StoreError) and error.__cause__ else error
    if isinstance(cause, apsw.BusyError) and writes_closed():
        return STOPPING
    if isinstance(cause, apsw.BusyError):
        return (
            f"memory is busy: another session held the database for over {BUSY_TIMEOUT_MS // 1000} s; "
            "call again in a moment"
        )
    if isinstance(cause, apsw.ReadOnlyError):
        return "memory is read-only: the database file or its folder cannot be written; check their permissions"
    if isinstance(cause, apsw.FullError) or getattr(cause, "errno", None) == 28:  # ENOSPC
        return "the disk is full: nothing was saved; free some space and call again"
    if isinstance(cause, apsw.IOError):
        return (
            "the disk refused a read or write (full, or failing): nothing was saved; free some space "
            "or check the disk, and call again"
        )
    if isinstance(cause, apsw.NotADBError):
        return (
            "the file is not a SQLite database (its first page is damaged, or it is another kind of "
            "file); nothing was changed. `memory-gate doctor` says what is wrong; if it held memory, "
            "restore it from a backup (write.log beside it holds every change), if not, point --db or "
            "MEMORY_GATE_DB at memory's file"
        )
    if isinstance(cause, apsw.CorruptError):
        return (
            "the memory database is damaged; nothing was changed. `memory-gate doctor` says what is wrong; "
            "restore the file from a backup (write.log beside it holds every change)"
        )
    if isinstance(cause, PermissionError):
        where = f" {cause.filename}" if cause.filename else ""
        return (
            f"memory cannot be reached: permission denied on{where}. Its folders must be readable "
            "and enterable by you (memory-gate makes them 0700): check their owner and mode"
        )
    if isinstance(cause, apsw.CantOpenError):
        return "the memory database cannot be opened: check that its folder exists and can be read and written"
    if isinstance(error, StoreError):
        return str(error)
    return f"memory is unavailable ({type(cause).__name__}: {cause}); `memory-gate doctor` says why"


def diagnose(conn: apsw.Connection, error: BaseException) -> str:
    """explain(), for an error met while using an open database, with its true cause found by
    asking the database (a damaged word index fails a search with an SQL error that names no
    damage), never by reading the error's words."""
    cause = error.__cause__ if isinstance(error, StoreError) and error.__cause__ else error
    if isinstance(cause, (apsw.BusyError, apsw.ReadOnlyError, apsw.FullError, apsw.IOError, OSError)):
        return explain(error)
    from gate.engine.health import check_integrity  # an error's path only: never a hook's

    try:
        problems = check_integrity(conn)
    except apsw.Error:
        return explain(error)
    index = [problem.removeprefix("word index: ") for problem in problems if problem.startswith("word index:")]
    damaged = [problem.removeprefix("database: ") for problem in problems if not problem.startswith("word index:")]
    if damaged:
        return (
            f"the memory database is damaged ({'; '.join(damaged[:3])}); nothing was changed. "
            "`memory-gate doctor` says how to restore it from a backup (write.log beside it holds every change)"
        )
    if index:
        return (
            f"the word index is damaged ({'; '.join(index[:3])}); nothing was changed and nothing is "
            "lost: run `memory-gate reindex`, which rebuilds it from the facts"
        )
    return explain(error)


def user_version(conn: apsw.Connection) -> int:
    return conn.execute("PRAGMA user_version").get


def migrate(conn: apsw.Connection) -> int:
    """Apply the schema sections this database has not seen; return its version."""
    current, latest = user_version(conn), latest_version()
    if current == latest:
        return current
    if current > latest:
        raise StoreError(
            f"this database has schema version {current}, newer than this memory-gate knows "
            f"({latest}): upgrade memory-gate"
        )
    steps = schema_steps()
    if current == 0:
        # WAL is a property of the file and cannot be switched inside a transaction.
        conn.execute("PRAGMA journal_mode = WAL")
    with writing(conn):
        # Another process may have upgraded the file while this one waited for the lock.
        current = user_version(conn)
        for version, _, sql in steps[current:]:
            conn.execute(sql)
            conn.execute(f"PRAGMA user_version = {version}")
    return len(steps)


# -- sqlite-vec -------------------------------------------------------------------------------


def vectors_extension() -> str:
    """Where the installed `sqlite-vec` package keeps its loadable extension (SQLite adds the
    platform's suffix). Found without importing the package, which would import numpy."""
    import importlib.util

    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.origin:
        raise StoreError("sqlite-vec is not installed: pip install sqlite-vec (memory-gate depends on it)")
    return os.path.join(os.path.dirname(spec.origin), "vec0")


def vectors_loaded(conn: apsw.Connection) -> bool:
    return conn.execute("SELECT 1 FROM pragma_module_list WHERE name = 'vec0'").fetchone() is not None


def require_vectors(conn: apsw.Connection) -> None:
    """Load sqlite-vec into this connection (once), or raise StoreError saying why it cannot."""
    if vectors_loaded(conn):
        return
    path = vectors_extension()
    try:
        conn.enable_load_extension(True)
        try:
            conn.load_extension(path)
        finally:
            conn.enable_load_extension(False)
    except (apsw.Error, AttributeError) as error:
        raise StoreError(
            f"sqlite-vec cannot be loaded from {path}: {error}. Reinstall it (pip install "
            "--force-reinstall sqlite-vec); until then search runs on words only"
        ) from error


def load_vectors(conn: apsw.Connection) -> bool:
    """Load sqlite-vec if it can be; False means search runs on words only (`memory-gate doctor`
    says why)."""
    try:
        require_vectors(conn)
    except StoreError:
        return False
    return True
