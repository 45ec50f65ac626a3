"""What a command a person runs opens: the project's memory, which must exist, and the embeddings
endpoint with a person's patience; and `UserError`, the error a person can put right, whose
message says how. Shared by the command line (gate/cli/) and the viewer (gate/view/).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

import apsw

from gate import config
from gate.engine import store
from gate.memory import audit, changeset
from gate.search import embeddings, sources

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gate.engine.seam import Store
    from gate.engine.teamfacts import TeamFacts
    from gate.memory.team import Member
    from gate.search.matrix import Matrix

# A person waits longer for a vector than a turn does (see gate.search.embeddings's time-outs).
PATIENT_TIMEOUT = 10.0


class UserError(Exception):
    """Something the user can put right; the message says how."""


def settings(args: argparse.Namespace) -> config.Settings:
    found = config.load()
    if args.db is not None:
        found = found.replace(database=str(Path(args.db).absolute()))
    return found


@dataclass
class Opened:
    """The memory a command reads: a local file (`conn`, its write.log beside `path`), or a
    team's facts (`team`), the member's turn ledger then being the local file at `path`, opened
    only when a change needs it (`ledger`)."""

    path: Path
    conn: apsw.Connection | None
    team: TeamFacts | None = None
    member: Member | None = None
    # The vectors as a matrix, made on the first search and kept as long as this (the page's
    # memory lives as long as the page): the exact nearest at any size, as in the server.
    matrix: Matrix | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def store(self) -> Store:
        """The memory as one store (gate.engine.seam.Store): its facts, record, lists and index,
        whichever engine holds them. Made anew on each call, for a viewer's team connection is
        opened again when lost (`team` replaced)."""
        from gate.memory import stores

        if self.team is not None:
            return stores.TeamStore(self.team)
        if self.matrix is None:
            from gate.search import matrix

            self.matrix = matrix.Matrix() if matrix.available() else None
        return stores.LocalStore(self.local_conn, audit.log_path(self.path), self.matrix)

    @property
    def team_facts(self) -> TeamFacts:
        """The team's facts, for what copies to and from them (`team push`, `team pull`)."""
        assert self.team is not None, "a command of the team's memory, which it checked the project is on"
        return self.team

    @property
    def record(self):
        """The record of changes: write.log, or the team's (gate.memory.record)."""
        return self.store.record

    @property
    def local_conn(self) -> apsw.Connection:
        """`conn`, where the memory is not a team's: open_memory always opens the local file then."""
        assert self.conn is not None, "a local memory's file is open"
        return self.conn

    def ledger(self) -> apsw.Connection:
        """The local file, made if need be: a change by hand on a team is a turn of the member's."""
        if self.conn is None:
            try:
                self.conn = store.connect(self.path)
            except store.StoreError as error:
                raise UserError(str(error)) from error
        return self.conn

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        if self.member is not None:
            self.member.close()

    def __enter__(self) -> Opened:
        return self

    def __exit__(self, kind, error, trace) -> None:
        """Close; an error of the database met meanwhile becomes a UserError saying its true cause
        and the mend (store.diagnose asks the database what is wrong)."""
        try:
            if isinstance(error, apsw.Error) and self.conn is not None:
                raise UserError(store.diagnose(self.conn, error)) from error
        finally:
            self.close()


def open_memory(settings: config.Settings, *, session: str = changeset.CLI_SESSION, create: bool = False) -> Opened:
    """The project's memory for a command that reads or changes facts: the team's when the
    project is on one (gate.memory.team), else the local file, which must exist unless `create`
    (an import may be the first write: a file already there must be memory, though, and an
    empty one is refused, not filled). The one place that picks the engine."""
    from gate.memory import team

    shared = team.find(settings)
    if shared is None and create:
        path = Path(config.find_database(settings))
        return Opened(path, store.connect(path, create=not path.exists()))
    if shared is None:
        path, conn = open_existing(settings)
        return Opened(path, conn)
    from gate.engine import postgres

    member = team.Member(shared, config.member(), deadline=postgres.COMMAND_DEADLINE_S)  # a person waits
    facts = member.facts(session)  # postgres.Unreachable, a StoreError: the mend, on one line
    path = Path(config.find_database(settings))
    ledger = store.connect(path, create=False) if path.exists() else None
    return Opened(path, ledger, facts, member)


def open_existing(settings: config.Settings) -> tuple[Path, apsw.Connection]:
    """The project's local memory, which must exist. On a project whose memory is a team's, the
    local file holds the member's turn ledger only: refused, for its facts would be an empty memory."""
    from gate.memory import team

    shared = team.find(settings)
    if shared is not None:
        raise UserError(
            f"this project's memory is the team's ({shared.shown}, project {shared.project}, set by "
            f"{shared.source}), and this command reads a local memory only so far: `memory-gate team "
            "status` shows the team's, and `memory-gate team disconnect` (or unsetting MEMORY_GATE_DB) "
            "uses the local file again"
        )
    path = Path(config.find_database(settings))
    if settings.database is not None and path.is_dir():
        raise UserError(
            f"{path} is a folder, not a database: point --db or MEMORY_GATE_DB at the file, e.g. {path / 'memory.db'}"
        )
    if settings.database is not None and not path.exists():
        raise UserError(
            f"no database at {path}, which --db or MEMORY_GATE_DB names: check the path, or leave "
            "both out to use this project's memory (`memory-gate doctor` says where it is)"
        )
    if not path.exists():
        raise UserError(
            f"no memory yet for {settings.cwd} (looked for {path}). It is created by the first "
            "memory_write; use --db PATH or MEMORY_GATE_DB to point at another database."
        )
    try:
        return path, store.connect(path, create=False)
    except store.StoreError as error:
        raise UserError(str(error)) from error


def patient_endpoint(settings: config.Settings) -> embeddings.Endpoint | None:
    """Where a command a person waits on gets its vectors: the installed model, or the endpoint
    given seconds, not a turn's fraction (embeddings.source); None for words only."""
    found = sources.source(settings)
    if not isinstance(found, embeddings.Endpoint):
        return found
    return embeddings.Endpoint(
        found.url,
        found.model,
        settings.max_distance,
        write_timeout=PATIENT_TIMEOUT,
        quiet_after_timeout=0.0,
    )
