"""A team project's words mirrored in a local SQLite file, so that a team's search by words is the
local memory's own: gate.search.fulltext over FTS5 in this process, the same tiers, judgement and
ranking, where gate.search.team asks PostgreSQL some eight questions a search and sums bm25 there.

The mirror is derived, never canonical. It is a memory-gate database (schema.sql, so the word
index is the local one to the byte) beside the member's ledger, holding each fact's topic and
text (its other columns are placeholders: a search loads the facts it returns from the team), and
in `meta` which project of which database it mirrors and up to which change of the team's record
(`changes.seq`). Before each search it is caught up in one round trip: the facts changed since
that change, as they are now (one gone is a delete), read in one statement with the project's
counters, so in one snapshot.

Why a change's seq is enough: every change of a project is recorded under the project row's
lock (gate.engine.teamfacts takes it, or the UPDATE of last_fact does, before the change's seq
is drawn, and holds it to the commit), so a project's changes commit in seq order, and a
snapshot holding change N holds every change before it.

Not trusted but rebuilt from the facts: a file SQLite cannot read (deleted and made again); one
made for another project or database (`source`: the database's name and oid, the project's id,
key and birth); one ahead of the team's record (a database restored, or made again); and one
whose count of facts strays from the project's counter (a fact added or removed with no change
recorded for it, by hand). A project small enough is built within the search; a larger one in a
thread over a connection of its own, while searches go on through gate.search.team, as they do
whenever the mirror cannot serve one.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from dataclasses import asdict, dataclass

import apsw

from gate.engine import files, postgres, store
from gate.search import fulltext

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gate.engine.teamfacts import TeamFacts

# The file beside the member's ledger: `memory.db` has `memory.team-words.db`.
SUFFIX = ".team-words.db"
# Where the mirror says what it holds (schema.sql's `meta`).
KEY = "team_words"
# A project of at most this many facts is built within a search (about a tenth of a second a
# thousand); a larger one in the background. More facts changed than this since the mirror's
# last change is a rebuild too (an import by another member): in the background alike.
INLINE = 2000
# What a file SQLite cannot trust raises: it is discarded. Others (busy, full, read-only) leave it.
UNREADABLE = (apsw.CorruptError, apsw.NotADBError)
# How long a search waits for another server of the member catching the file up (or building it)
# before it runs on gate.search.team instead: a catch-up writes for milliseconds, a build for seconds.
BUSY_MS = 250
# How long a background build may take over its own connection (seconds).
BUILD_DEADLINE = 300.0

# What the mirror is of (`source`), the project's last id, its counter of facts and its last
# change; _CAUGHT_UP adds each fact changed since change `since` as it is now (topic None: gone),
# at most `most` of them, _WHOLE every fact: each one statement, so one snapshot.
_HEAD = (
    "SELECT current_database() || '#' || (SELECT oid FROM pg_database WHERE datname = current_database())"
    " || ' project ' || p.id || ' ' || p.key || ' made ' || p.created,"
    " p.last_fact, p.facts, (SELECT coalesce(max(seq), 0) FROM changes WHERE project = p.id)"
    " FROM projects p WHERE p.id = %(project)s"
)
_CAUGHT_UP = (
    f"SELECT h.*, c.fact, f.topic, f.text FROM ({_HEAD}) h (source, last_fact, facts, top)"
    " LEFT JOIN (SELECT DISTINCT fact FROM changes WHERE project = %(project)s AND seq > %(since)s"
    "  LIMIT %(most)s) c ON true"
    " LEFT JOIN facts f ON f.project = %(project)s AND f.id = c.fact"
)
_WHOLE = (
    f"SELECT h.*, f.id, f.topic, f.text FROM ({_HEAD}) h (source, last_fact, facts, top)"
    " LEFT JOIN facts f ON f.project = %(project)s ORDER BY f.id"
)


def path_for(database: str) -> str:
    """The mirror's file for the member's ledger at `database`."""
    return os.path.splitext(database)[0] + SUFFIX


def remove(path: str) -> None:
    """The mirror's file and SQLite's beside it gone, if there (`team disconnect`: the team's
    words stay on no disk that no longer uses them)."""
    for suffix in ("", *files.COMPANIONS):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + suffix)


@dataclass(frozen=True)
class State:
    """What the mirror holds: the project (`source`), up to which change (`seq`), how many facts,
    and the project's counter of facts less that when it was built (`stray`: 0 unless a hand-made
    change put the counter wrong; reindex on the team mends it)."""

    source: str
    seq: int
    facts: int
    stray: int = 0
    last_fact: int = 0


class Mirror:
    """The mirror at `path` of one team project's words. `url` and `member`, when given, let a
    large project be built in the background over a connection of its own; without them every
    build is made within the search."""

    def __init__(self, path: str, url: str | None = None, member: str | None = None):
        self.path, self.url, self.member = path, url, member
        self._conn: apsw.Connection | None = None
        self._builder: threading.Thread | None = None
        # Why the last search could not use the mirror (None: it did): for tests, and a reader of the code.
        self.missed: str | None = None
        self._broken: str | None = None  # a background build found the file unreadable

    def index(self, team: TeamFacts) -> fulltext.Index | None:
        """The mirror's index, caught up with the team's record: one statement, one round trip
        when nothing needs rebuilding (outside any transaction when the connection has none
        open: its statements read whole snapshots each, and a BEGIN and its end would be two
        round trips more). None when the mirror cannot serve this search (being built, or
        broken: `missed` says why); the search then runs on gate.search.team. Raises
        postgres.Unreachable (Held never: it reads) within the call's deadline: an outage is the
        search's to report, as before."""
        if self._builder is not None and self._builder.is_alive():
            self.missed = "being built"
            return None
        if self._broken is not None:
            self.discard(self._broken)
            self._broken = None
        try:
            conn = self._open()
        except store.StoreError as error:
            if isinstance(error.__cause__, apsw.BusyError):  # another server making it: not ours to delete
                self.missed = str(error)
            else:  # not a database, or not memory-gate's: its own file, made anew
                self.discard(str(error))
            return None
        try:
            with postgres.reaching(team.url, team.conn, team.deadline), _outside(team.conn):
                caught_up = self._caught_up(conn, team)
        except apsw.Error as error:
            self.failed(error)
            return None
        if caught_up:
            self.missed = None
            return fulltext.Index(conn)
        return None

    def failed(self, error: apsw.Error | Exception) -> None:
        """The file failed a search: one SQLite cannot read is discarded (the next search builds
        it anew); one only busy or full is left as it is. Either way this search runs on
        gate.search.team."""
        if isinstance(error, UNREADABLE):
            self.discard(f"{type(error).__name__}: {error}")
        else:
            self.missed = f"{type(error).__name__}: {error}"

    @contextlib.contextmanager
    def reading(self):
        """One snapshot of the mirror for a search's queries (another server of the same member
        may catch it up meanwhile)."""
        assert self._conn is not None, "index() first"
        with store.writing(self._conn, lock=False):
            yield

    def _open(self) -> apsw.Connection:
        if self._conn is None:
            self._conn = store.connect(self.path, busy_ms=BUSY_MS)
        return self._conn

    def discard(self, why: str) -> None:
        """Forget the file (unreadable, or refused by the schema): the next search makes it anew."""
        self.missed = why
        self.close()
        remove(self.path)

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(apsw.Error):
                self._conn.close()
            self._conn = None

    def _caught_up(self, conn: apsw.Connection, team: TeamFacts) -> bool:
        """Bring the mirror up to the team's last change; False when it is left to a build in
        the background."""
        state = _state(conn)
        for _ in range(3):  # another server of this member may catch the file up meanwhile
            if state is None:
                return self._build(conn, team)
            rows = team.conn.execute(
                _CAUGHT_UP, {"project": team.project, "since": state.seq, "most": INLINE + 1}
            ).fetchall()
            source, last_fact, counted, top = rows[0][:4]
            changed = [row[4:] for row in rows if row[4] is not None]
            if source != state.source or top < state.seq or len(changed) > INLINE:
                return self._build(conn, team)
            if (
                not changed
                and top == state.seq
                and last_fact == state.last_fact
                and counted - state.facts == state.stray
            ):
                return True  # nothing new: no write at all
            applied = _apply(conn, state, State(source, top, 0, state.stray), last_fact, counted, changed)
            if applied is None:  # the counter strays further: a fact changed with no change recorded
                return self._build(conn, team)
            if applied:
                return True
            state = _state(conn)
        self.missed = "the mirror kept moving under this search"
        return False

    def _build(self, conn: apsw.Connection, team: TeamFacts) -> bool:
        """Build the mirror from the project's facts: now when the project is small (or no
        connection of its own can be made), else in the background (False)."""
        head = team.conn.execute(_HEAD, {"project": team.project}).fetchone()
        if head is None:
            self.missed = f"the team has no project {team.project}"
            return False
        if head[2] > INLINE and self.url:
            self._builder = threading.Thread(
                target=self._build_apart, args=(team.project,), name="memory-gate-mirror", daemon=True
            )
            self._builder.start()
            self.missed = "being built"
            return False
        rows = team.conn.execute(_WHOLE, {"project": team.project}).fetchall()
        _fill(conn, rows)
        return True

    def _build_apart(self, project: int) -> None:
        """_build over a connection of its own to the team, and one of its own to the file."""
        assert self.url is not None
        try:
            team = postgres.connect(self.url, self.member, BUILD_DEADLINE)
            try:
                with postgres.reaching(self.url, team, BUILD_DEADLINE), team.transaction():
                    team.execute("SET LOCAL statement_timeout = 0")  # nobody waits: searches go on meanwhile
                    rows = team.execute(_WHOLE, {"project": project}).fetchall()
            finally:
                team.close()
            conn = store.connect(self.path)
            try:
                _fill(conn, rows)
            finally:
                conn.close()
        except (*UNREADABLE, store.StoreError) as error:
            if isinstance(error.__cause__, apsw.BusyError):
                print(f"memory-gate: building the mirror of the team's words waited too long: {error}", file=sys.stderr)
            else:
                self._broken = f"{type(error).__name__}: {error}"  # the search thread discards the file
        except Exception as error:  # said, never a traceback; searches stay on gate.search.team
            print(f"memory-gate: building the mirror of the team's words stopped: {error}", file=sys.stderr)

    def build(self, team: TeamFacts) -> None:
        """Build the mirror now, whatever the project's size (bench/team.py; tests)."""
        conn = self._open()
        _fill(conn, team.conn.execute(_WHOLE, {"project": team.project}).fetchall())


@contextlib.contextmanager
def _outside(conn):
    """The block's statements each in a transaction of its own (autocommit) when the connection
    has none open; inside the caller's otherwise."""
    if conn.info.transaction_status != 0:  # not idle: the caller's transaction
        yield
        return
    conn.autocommit = True
    try:
        yield
    finally:
        if not conn.closed:
            conn.autocommit = False


def _state(conn: apsw.Connection) -> State | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (KEY,)).fetchone()
    if row is None:
        return None
    try:
        return State(**json.loads(row[0]))
    except (ValueError, TypeError):  # not what _keep wrote: built anew
        return None


def _keep(conn: apsw.Connection, state: State) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (KEY, json.dumps(asdict(state))),
    )
    # The size bm25 and the tiers read (gate.search.fulltext `_frequencies`): the team's last id.
    conn.execute("DELETE FROM sqlite_sequence WHERE name = 'facts'")
    conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('facts', ?)", (state.last_fact,))
    conn.execute("DELETE FROM facts_to_embed")  # the mirror keeps words only


_UPSERT = (
    "INSERT INTO facts (id, topic, kind, text, date, created, updated, confirmed)"
    " VALUES (?, ?, 'state', ?, '1970-01-01', '', '', '')"
    " ON CONFLICT (id) DO UPDATE SET topic = excluded.topic, text = excluded.text"
)


def _apply(conn: apsw.Connection, was: State, now: State, last_fact: int, counted: int, changed: list) -> bool | None:
    """Apply the facts changed since `was` (id, topic, text; topic None: deleted), if the mirror
    still holds `was`: True when applied, False when another server moved it meanwhile, None when
    the mirror's facts then stray from the project's counter."""
    with store.writing(conn):
        if _state(conn) != was:
            store.rollback(conn)
            return False
        ids = [fact for fact, _, _ in changed]
        held = {
            row[0]
            for row in conn.execute(
                "SELECT id FROM facts WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(ids),)
            )
        }
        conn.executemany(_UPSERT, [(fact, topic, text) for fact, topic, text in changed if topic is not None])
        gone = [(fact,) for fact, topic, _ in changed if topic is None and fact in held]
        conn.executemany("DELETE FROM facts WHERE id = ?", gone)
        facts = was.facts + sum(1 for fact, topic, _ in changed if topic is not None and fact not in held) - len(gone)
        if counted - facts != was.stray:
            store.rollback(conn)
            return None
        _keep(conn, State(now.source, now.seq, facts, was.stray, last_fact))
    return True


def _fill(conn: apsw.Connection, rows: list) -> None:
    """The mirror made anew from _WHOLE's rows (the head's columns, then id, topic, text)."""
    source, last_fact, counted, top = rows[0][:4]
    facts = [row[4:] for row in rows if row[4] is not None]
    with store.writing(conn):
        conn.execute("DELETE FROM facts")
        conn.execute("DELETE FROM meta WHERE key = ?", (KEY,))
        conn.executemany(_UPSERT, facts)
        _keep(conn, State(source, top, len(facts), counted - len(facts), last_fact))
