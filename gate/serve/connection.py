"""The server's one connection to memory, `Memory`: the project's database, opened when first
needed, or a team member's connection to the team's memory; the embeddings endpoint; and the
background work that embeds the facts a write could not, in a thread of its own under the lock
the tool calls take. Apart from gate.serve.tools because a tool's work is one call over a
connection, while this holds the connection and its threads for the server's life:
gate.serve.front makes it, may serve the first calls on it, and hands it to gate.serve.server.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Literal

import apsw

from gate import config
from gate.engine import store
from gate.memory import audit
from gate.search import backfill, embeddings, foresight, matrix, sources, vectors
from gate.serve import handoff, sightings

TYPE_CHECKING = False
if TYPE_CHECKING:  # a team's memory is imported only where one is used
    from gate.memory import team as memory_team
    from gate.search.mirror import Mirror


# How long, in all, the server keeps trying to embed facts a write could not (seconds).
CATCH_UP_PATIENCE = 32.0


class Memory:
    """The server's one connection to the project's database, opened when first needed: made
    by gate.serve.front, which may serve the first calls, and handed to gate.serve.server with them."""

    def __init__(self, settings: config.Settings, record: sightings.Record | None = None):
        self.settings = settings
        # What this server saw each turn do, which the Stop hook asks (gate.serve.sightings).
        self.record = record if record is not None else sightings.Record()
        self.session = settings.session_id or f"mcp-{uuid.uuid4().hex[:12]}"
        # This process: one per Claude Code process, so one per context that reads results.
        self.process = uuid.uuid4().hex[:12]
        self.handoff = handoff.folder(settings.plugin_data)
        self.endpoint = sources.source(settings)
        # Said once, on the first search, when meaning is off for want of a model.
        self.words_only = sources.why_words_only(settings) if settings.meaning else None
        if hasattr(self.endpoint, "warm"):
            # The installed model loads while the session starts, not in the first search.
            threading.Thread(target=self.endpoint.warm, name="memory-gate-model", daemon=True).start()
        self.lock = threading.Lock()
        self._conn: apsw.Connection | None = None
        self.matrix: matrix.Matrix | None = None
        self._path: Path | None = None
        self._embedder: threading.Thread | None = None
        # The team's memory this project shares, if any (gate.memory.team): found at the
        # first call, with the member's connection to it.
        self._team: memory_team.Member | None | Literal[False] = False  # False: not looked for yet
        # The member's mirror of the team's words (gate.search.mirror), beside the ledger.
        self._mirror: Mirror | None = None

    def team(self) -> memory_team.Member | None:
        """The member's connection to the team's memory of this project, or None for the local
        file alone. Raises config.ConfigError for a team setting memory-gate cannot use."""
        if self._team is False:
            from gate.memory import team as memory_team

            found = memory_team.find(self.settings)
            self._team = memory_team.Member(found, config.member()) if found is not None else None
        return self._team

    def mirror(self) -> Mirror | None:
        """The mirror of the team's words beside the member's ledger (opened by `connection`),
        made at the first search; None without a team or a ledger."""
        if not self._team or self._path is None:
            return None
        if self._mirror is None:
            from gate.search import mirror

            path = mirror.path_for(str(self._path))
            self._mirror = mirror.Mirror(path, self._team.team.url, self._team.member)
        return self._mirror

    def connection(self, *, create: bool) -> apsw.Connection | None:
        path = Path(config.find_database(self.settings))
        if self._conn is not None and path == self._path:
            return self._conn
        if not path.exists() and not create:
            return None
        self.close()
        self._conn, self._path = store.connect(path), path
        # The vectors in this process's memory, for exact neighbours in milliseconds: where numpy is.
        self.matrix = matrix.Matrix() if matrix.available() else None
        if self.handoff is not None:
            # Notes of calls that never came, and marks of sessions long over.
            handoff.sweep(self.handoff)
            marks = handoff.marks(self.settings.plugin_data)  # there whenever the handoff folder is
            if marks is not None:
                handoff.sweep(marks, suffix="")
        # Without sqlite-vec, search says so and runs on words.
        store.load_vectors(self._conn)
        if self.endpoint is not None and not self.endpoint.remote:
            threading.Thread(
                target=self._look_ahead, args=(self._conn,), name="memory-gate-foresight", daemon=True
            ).start()
        return self._conn

    def _look_ahead(self, conn: apsw.Connection) -> None:
        """gate.search.foresight while `conn` is the server's connection: the owner's words of each
        new turn embedded before its first search, with the model in this process (an endpoint's
        are left to the search: a slow one must not be asked between calls)."""
        seen: int | None = None
        while True:
            time.sleep(foresight.EVERY)
            with self.lock:
                if self._conn is not conn:
                    return
                try:
                    newest = foresight.newest_prompt(conn)
                except apsw.Error:  # busy, or a ledger being made: the next look
                    continue
            if newest is not None and newest[0] != seen and self.endpoint is not None:
                seen = newest[0]
                foresight.foresee(newest[1], self.endpoint)

    def catch_up(self) -> None:
        """Embed, in a thread of its own, the facts still waiting for a vector, unless that is
        already under way or there is nothing to do. Called after each tool call, with the lock
        held."""
        if self.endpoint is None or (self._embedder and self._embedder.is_alive()):
            return
        if self._team:
            self._catch_up_team(self._team)
            return
        if self._conn is None:
            return
        if not store.vectors_loaded(self._conn) or not (
            vectors.missing(self._conn) or vectors.needs_reference(self._conn) or vectors.needs_center(self._conn)
        ):
            return
        conn = self._conn
        # Its own endpoint: a long deadline, and no quiet spell that would silence searches.
        endpoint = self.endpoint.patient()

        def run() -> None:
            # An endpoint just started, or restarting, refuses for a while: try again, less and
            # less often, for about a minute; a later tool call starts this anew.
            pause = 0.5
            try:
                while True:
                    backfill.catch_up(conn, endpoint, hold=self._hold(conn))
                    with self.lock:
                        if self._conn is not conn or not (
                            vectors.missing(conn) or vectors.needs_reference(conn) or vectors.needs_center(conn)
                        ):
                            return
                    if pause > CATCH_UP_PATIENCE:
                        return
                    time.sleep(pause)
                    pause *= 2
            except (apsw.Error, store.StoreError, embeddings.VectorError) as error:
                print(f"memory-gate: embedding waiting facts stopped: {error}", file=sys.stderr)

        self._embedder = threading.Thread(target=run, name="memory-gate-embedder", daemon=True)
        self._embedder.start()

    def _catch_up_team(self, member: memory_team.Member) -> None:
        """catch_up for a team's project, on the member's connection (under the lock, as the
        tool calls use it): the facts any member's write could not embed, and the project's
        REFERENCE vectors. Whether there is anything to do is asked in the thread, so that a
        tool call never waits on that round trip."""
        from gate.search import teamvectors

        facts = member.open_facts()
        if facts is None:
            return
        endpoint = self.endpoint.patient()

        @contextlib.contextmanager
        def held():
            with self.lock:
                if member.conn is not facts.conn:
                    raise store.StoreError("the team's connection was closed")
                yield

        def owed() -> bool:
            with held(), facts.transaction():
                return teamvectors.available(facts) and bool(
                    teamvectors.missing(facts) or teamvectors.needs_reference(facts) or teamvectors.needs_center(facts)
                )

        def run() -> None:
            pause = 0.5
            try:
                while owed():
                    teamvectors.catch_up(facts, endpoint, hold=held)
                    if pause > CATCH_UP_PATIENCE or not owed():
                        return
                    time.sleep(pause)
                    pause *= 2
            except Exception as error:  # psycopg's own, or the connection lost: said, never a traceback
                print(f"memory-gate: embedding the team's waiting facts stopped: {error}", file=sys.stderr)

        self._embedder = threading.Thread(target=run, name="memory-gate-embedder", daemon=True)
        self._embedder.start()

    def _hold(self, conn: apsw.Connection):
        """The lock, and a check that the connection is still the one the embedder was given."""

        @contextlib.contextmanager
        def held():
            with self.lock:
                if self._conn is not conn:
                    raise store.StoreError("the database was closed")
                yield

        return held

    @property
    def log(self) -> Path | None:
        return audit.log_path(self._path) if self._path is not None else None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn, self._path, self.matrix = None, None, None
        if self._mirror is not None:
            self._mirror.close()
            self._mirror = None
        if self._team:
            self._team.close()
