"""`memory-gate doctor`: a list of checks, each returning its part of the report and its findings.

A finding is a fact about this install (`what`), how much it matters (`severity`: a problem
means memory is off, wrong or at risk, and makes doctor exit 1; a warning is worth knowing; a
note is information), and what to do about it (`mend`). Findings are made where the check knows
the facts, never by reading another message's words.

The checks: memory (the database, its index, write.log, search by meaning), injected-context
(its rule files and classifier), and Claude Code (gate.doctor.wiring: is memory-gate wired in, does
what Claude Code will run start).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import apsw

from gate import config
from gate.engine import health, store
from gate.memory import audit
from gate.search import sources, vectorstatus

PROBLEM, WARNING, NOTE = "problem", "warning", "note"


@dataclass(frozen=True)
class Finding:
    what: str
    severity: str = PROBLEM
    mend: str = ""

    def message(self) -> str:
        """What, then the mend."""
        return self.what + (f". {self.mend}" if self.mend else "")

    def line(self) -> str:
        return f"{self.severity.upper()}: {self.message()}"

    def to_json(self) -> dict:
        return asdict(self)


def stated(messages: list[str], severity: str = PROBLEM) -> list[Finding]:
    """Findings from checks that already state the fact and its mend in one message."""
    return [Finding(message, severity) for message in messages]


# A check takes the settings and returns (its section of the report, its findings).
Check = Callable[[config.Settings], tuple[dict, list[Finding]]]


def memory(settings: config.Settings) -> tuple[dict, list[Finding]]:
    """The database: path, versions, integrity, counts, write.log against it, search by meaning.
    Damage it is asked to diagnose ends its report with the mend, never doctor itself."""
    path = Path(config.find_database(settings))
    try:
        exists = path.exists()
    except OSError as error:  # a folder above it cannot be entered
        return {"database": str(path)}, stated([store.explain(error)])
    report: dict = {
        "database": str(path),
        "exists": exists,
        "sqlite": apsw.sqlite_lib_version(),
        "apsw": apsw.apsw_version(),
        "schema_latest": store.latest_version(),
    }
    if not exists:
        report["note"] = "no database yet: the first memory_write creates it"
        return report, []
    try:
        conn = store.connect(path, create=False)
    except store.StoreError as error:
        if isinstance(error.__cause__, apsw.NotADBError):
            return report, [
                Finding(
                    f"{path} is not a SQLite database (its first page is damaged, or it is another kind of file)",
                    mend=_restore(path) + " If it never held memory, point --db or MEMORY_GATE_DB at memory's file.",
                )
            ]
        if isinstance(error.__cause__, apsw.CorruptError):
            return report, [Finding(f"the database is damaged ({error.__cause__})", mend=_restore(path))]
        return report, [Finding(str(error))]
    findings: list[Finding] = []
    try:
        _database(conn, path, settings, report, findings)
    except apsw.Error as error:
        if isinstance(error, (apsw.CorruptError, apsw.NotADBError)):
            if not any(finding.what.startswith("the database is damaged") for finding in findings):
                findings.append(Finding(f"the database is damaged ({error})", mend=_restore(path)))
        elif store.explain(error) not in (finding.what for finding in findings):
            findings += stated([store.explain(error)])
    finally:
        conn.close()
    return report, findings


# How to put a backup back; docs/reliability.md's "Restoring a backup" says the same.
RESTORE = (
    "Restore memory.db from a backup: with no session running, delete memory.db-wal and "
    "memory.db-shm beside it (they belong to the damaged file, and SQLite would lay them over "
    "the backup), then copy the backup over memory.db. write.log beside it holds every change."
)


def _restore(path: Path) -> str:
    wal = Path(f"{path}-wal")
    if wal.exists() and wal.stat().st_size:
        return (
            f"{RESTORE} If memory.db was itself restored from a backup while {wal.name} stayed, that is "
            "the damage: restore the backup again, this time deleting the -wal and -shm first."
        )
    return RESTORE


def _database(
    conn: apsw.Connection, path: Path, settings: config.Settings, report: dict, findings: list[Finding]
) -> None:
    report["schema_version"] = store.user_version(conn)
    try:
        integrity = health.check_integrity(conn)
    except (apsw.BusyError, apsw.ReadOnlyError) as error:
        # Not damage: what keeps memory from being written, named as such, and the rest checked.
        findings.append(Finding(store.explain(error)))
        integrity = []
        report["integrity"] = "not checked"
    else:
        report["integrity"] = "ok" if not integrity else integrity
    index = [problem.removeprefix("word index: ") for problem in integrity if problem.startswith("word index:")]
    damaged = [problem.removeprefix("database: ") for problem in integrity if not problem.startswith("word index:")]
    if damaged:
        findings.append(Finding(f"the database is damaged ({'; '.join(damaged)})", mend=_restore(path)))
    elif index:
        findings.append(
            Finding(
                f"the word index is damaged ({'; '.join(index)})",
                mend="Nothing is lost: run `memory-gate reindex`, which rebuilds it from the facts.",
            )
        )
    kinds = dict(conn.execute("SELECT kind, count(*) FROM facts GROUP BY kind"))
    report["facts"] = {kind: kinds.get(kind, 0) for kind in ("state", "event", "decision", "trap")}
    report["sessions"] = conn.execute("SELECT count(*) FROM sessions").get
    report["turns"] = conn.execute("SELECT count(*) FROM turns").get
    log = audit.log_path(path)
    check = audit.check(conn, log)
    report["write_log"] = {
        "path": str(log),
        "lines": check.lines,
        "torn": len(check.torn),
        "not_written_by_memory_gate": len(check.alien),
        "never_committed": len(check.uncommitted),
        "writes_missing_lines": len(check.missing),
        "chain": {
            "from_line": check.chain.start,
            "lines_before_it": check.chain.before,
            "breaks": check.chain.breaks,
            "first_break": check.chain.first(),
        },
    }
    unwritable = _unwritable(log)
    if unwritable:
        findings.append(
            Finding(
                f"{log} cannot be written ({unwritable}), and every change is logged there before it is made, "
                "so every memory_write fails",
                mend="Check the file's and its folder's permissions (as root, also `lsattr`: an immutable file refuses even root)",
            )
        )
    on_team = _on_team_record(settings, check.missing, report["write_log"], findings)
    advice = check.advice()
    if advice:
        report["write_log"]["advice"] = advice
    if check.alien:
        findings.append(
            Finding(
                f"{len(check.alien)} line(s) of {log} are no change memory-gate wrote (lines {audit._some(check.alien)}): "
                "the log was edited",
                mend="Restore write.log from a backup, or delete those lines; the facts themselves are intact.",
            )
        )
    broken = check.broken()
    if broken:
        findings.append(
            Finding(
                f"{log} was changed after it was written: {broken}",
                mend="Restore write.log from a backup if you have one; the facts themselves are intact, and "
                "`memory-gate undo` refuses what a line the chain does not prove says",
            )
        )
    start = check.start()
    if start:
        findings.append(Finding(f"{log}: {start}", NOTE))
    if check.missing and not on_team:
        findings.append(
            Finding(
                f"{len(check.missing)} committed write(s) lack log lines in {log}",
                mend="The log was edited, truncated or replaced: restore it from a backup if you have one; the facts themselves are intact.",
            )
        )
    report["meaning"], found = vectorstatus.status(conn, sources.source(settings), sources.why_words_only(settings))
    findings += stated(found)


def _unwritable(log: Path) -> str | None:
    """Why write.log cannot be appended to, found by opening it for appending (nothing written);
    None when it can. A log not made yet is made in its folder by the first write."""
    import os

    try:
        if log.exists():
            os.close(os.open(log, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW))
        elif not os.access(log.parent, os.W_OK | os.X_OK):
            return f"its folder {log.parent} cannot be written"
    except OSError as error:
        return error.strerror or str(error)
    return None


def _on_team_record(settings: config.Settings, missing: dict[str, int], report: dict, findings: list[Finding]) -> bool:
    """On a team, a member's writes have their lines in the team's record (`changes`), not in
    write.log: take out of `missing` each write the team's record holds, and say whether what
    remains was left to the team to check (True: the team could not be asked, said in a note)."""
    if not missing:
        return False
    from gate.engine import postgres
    from gate.memory import team as memory_team

    try:
        found = memory_team.find(settings)
    except config.ConfigError:
        return False  # the team check says what is wrong with the setting
    if found is None:
        return False
    try:
        conn = postgres.connect(found.url)
        try:
            with postgres.reaching(found.url, conn, postgres.CALL_DEADLINE_S):
                recorded = {
                    write
                    for (write,) in conn.execute(
                        "SELECT DISTINCT c.line->>'write' FROM changes c JOIN projects p ON p.id = c.project"
                        " WHERE p.key = %s AND c.line->>'write' = ANY(%s)",
                        (found.project, sorted(missing)),
                    )
                }
        finally:
            conn.close()
    except store.StoreError:
        findings.append(
            Finding(
                f"{len(missing)} write(s) this member made are not in write.log, and the team's record that should "
                "hold them could not be read now",
                NOTE,
                mend="the team check below says why; run doctor again once it passes",
            )
        )
        return True
    for write in recorded:
        missing.pop(write, None)
    report["writes_in_team_record"] = len(recorded)
    report["writes_missing_lines"] = len(missing)
    return False


def team(settings: config.Settings) -> tuple[dict, list[Finding]]:
    """A team's memory, when the project is on one: the connection, the schema, the member's
    rights on each table, and pgvector. None of it is looked at for a local memory."""
    from gate.engine import postgres
    from gate.memory import team as memory_team

    try:
        found = memory_team.find(settings)
    except config.ConfigError as error:
        return {"used": "unknown"}, stated([str(error)])
    if found is None:
        return {"used": False}, []
    report: dict = {"used": True, "url": found.shown, "project": found.project, "set_by": found.source}
    try:
        report["member"] = config.member()
        conn = postgres.connect(found.url)  # brings the schema up to date, or says why it cannot
    except (store.StoreError, config.ConfigError) as error:
        return report, [Finding(str(error))]
    findings: list[Finding] = []
    try:
        with postgres.reaching(found.url):
            _team_database(conn, found, report, findings, wanted=bool(settings.embed_url))
    except postgres.Unreachable as error:  # the server went away while checked: one line, not a traceback
        findings.append(Finding(str(error)))
    finally:
        conn.close()
    return report, findings


def _team_database(conn, found, report: dict, findings: list[Finding], *, wanted: bool) -> None:
    """The server, the schema, the member's rights, pgvector and the project, into `report`."""
    from gate.engine import postgres

    report["server"] = conn.execute("SHOW server_version").fetchone()[0]
    report["schema"] = postgres.version(conn)
    report["schema_latest"] = len(postgres.schema_steps())
    from gate.engine import teamroles

    user = conn.execute("SELECT current_user").fetchone()[0]
    for table, rights in teamroles.MEMBER_RIGHTS.items():
        if conn.execute("SELECT to_regclass(%s)", (f"{postgres.SCHEMA}.{table}",)).fetchone()[0] is None:
            continue  # facts_vec, before pgvector is installed: said below
        missing = [
            right
            for right in rights
            if not conn.execute(
                "SELECT has_table_privilege(current_user, %s, %s)", (f"{postgres.SCHEMA}.{table}", right)
            ).fetchone()[0]
        ]
        if missing:
            findings.append(
                Finding(
                    f"the team database's role {user} may not {', '.join(missing)} on {postgres.SCHEMA}.{table}, so "
                    "memory's writes fail",
                    mend=f"have the database's owner run GRANT {', '.join(missing)} ON {postgres.SCHEMA}.{table} TO {user}",
                )
            )
    columns = ", ".join(teamroles.CHANGES_COLUMNS)
    if not all(
        conn.execute(
            "SELECT has_column_privilege(current_user, %s, %s, 'UPDATE')", (f"{postgres.SCHEMA}.changes", column)
        ).fetchone()[0]
        for column in teamroles.CHANGES_COLUMNS
    ):
        findings.append(
            Finding(
                f"the team database's role {user} may not UPDATE ({columns}) on {postgres.SCHEMA}.changes, so memory's "
                "writes fail",
                mend=f"have the database's owner run GRANT UPDATE ({columns}) ON {postgres.SCHEMA}.changes TO {user}",
            )
        )
    report["role"] = user
    if teamroles.is_owner(conn):
        report["owner"] = True
        findings.append(
            Finding(
                f"the team database's role {user} owns memory-gate's tables, so nothing binds its changes to the record's "
                "rules",
                NOTE,
                mend="members connect with roles of their own: `memory-gate team grant ROLE` sets one up",
            )
        )
    else:
        for what, mend in teamroles.too_broad(conn):
            findings.append(Finding(what, WARNING, mend=mend))
    row = conn.execute(
        "SELECT default_version, installed_version FROM pg_available_extensions WHERE name = 'vector'"
    ).fetchone()
    report["pgvector"] = (row[1] or f"available ({row[0]}), not installed in this database") if row else None
    vectors_table = conn.execute("SELECT to_regclass(%s)", (f"{postgres.SCHEMA}.facts_vec",)).fetchone()[0]
    if row is None:
        findings.append(
            Finding(
                "the team database's server has no pgvector, so the team's memory is searched by words only",
                PROBLEM if wanted else NOTE,
                mend="install pgvector on the server (the postgresql-16-pgvector package, or its image), then run "
                "CREATE EXTENSION vector in the database as its owner",
            )
        )
    elif vectors_table is None:
        findings.append(
            Finding(
                "pgvector is on the server but not installed in the team database, and this member's role may not "
                "install it, so the team's memory is searched by words only",
                PROBLEM if wanted else NOTE,
                mend="have the database's owner (or a superuser) run CREATE EXTENSION vector there, then `memory-gate doctor`",
            )
        )
    held = conn.execute("SELECT facts FROM projects WHERE key = %s", (found.project,)).fetchone()
    report["facts"] = held[0] if held else 0
    if held is not None and vectors_table is not None:
        from types import SimpleNamespace

        from gate.search import teamvectors

        project_id = conn.execute("SELECT id FROM projects WHERE key = %s", (found.project,)).fetchone()[0]
        report["meaning"] = teamvectors.status(SimpleNamespace(conn=conn, project=project_id))
    if held is None:
        findings.append(
            Finding(
                f"the team's memory has no project {found.project} yet",
                NOTE,
                mend="the first memory_write makes it; `memory-gate team push` fills it from this project's local memory",
            )
        )
    conn.rollback()


def injected_context(settings: config.Settings) -> tuple[dict, list[Finding]]:
    from gate.context import report

    section, found = report.doctor(settings)
    return section, stated(found)


def run(settings: config.Settings, checks: dict[str, Check]) -> tuple[dict, list[Finding]]:
    """Every check's section (memory's at the top level, as earlier versions printed it) and all
    their findings."""
    report: dict = {}
    findings: list[Finding] = []
    for name, check in checks.items():
        section, found = check(settings)
        if name == "memory":
            report.update(section)
        else:
            report[name] = section
        findings += found
    return report, findings
