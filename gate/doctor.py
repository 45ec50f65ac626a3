"""`memory-gate doctor`: a list of checks, each returning its part of the report and its findings.

A finding is a fact about this install (`what`), how much it matters (`severity`: a problem
means memory is off, wrong or at risk, and makes doctor exit 1; a warning is worth knowing; a
note is information), and what to do about it (`mend`). Findings are made where the check knows
the facts, never by reading another message's words.

The checks: memory (the database, its index, write.log, search by meaning), injected-context
(its rule files and classifier), and Claude Code (gate/wiring.py: is memory-gate wired in, does
what Claude Code will run start).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import apsw

from gate import audit, config, embeddings, store, vectors

PROBLEM, WARNING, NOTE = "problem", "warning", "note"


@dataclass(frozen=True)
class Finding:
    what: str
    severity: str = PROBLEM
    mend: str = ""

    def line(self) -> str:
        return f"{self.severity.upper()}: {self.what}" + (f". {self.mend}" if self.mend else "")

    def to_json(self) -> dict:
        return asdict(self)


def stated(messages: list[str], severity: str = PROBLEM) -> list[Finding]:
    """Findings from checks that already state the fact and its mend in one message."""
    return [Finding(message, severity) for message in messages]


# A check takes the settings and returns (its section of the report, its findings).
Check = Callable[[config.Settings], tuple[dict, list[Finding]]]


def memory(settings: config.Settings) -> tuple[dict, list[Finding]]:
    """The database: path, versions, integrity, counts, write.log against it, search by meaning."""
    path = Path(config.find_database(settings))
    report: dict = {
        "database": str(path),
        "exists": path.exists(),
        "sqlite": apsw.sqlite_lib_version(),
        "apsw": apsw.apsw_version(),
        "schema_latest": store.latest_version(),
    }
    if not path.exists():
        report["note"] = "no database yet: the first memory_write creates it"
        return report, []
    try:
        conn = store.connect(path, create=False)
    except store.StoreError as error:
        return report, stated([str(error)])
    findings: list[Finding] = []
    report["schema_version"] = store.user_version(conn)
    integrity = store.check_integrity(conn)
    report["integrity"] = "ok" if not integrity else integrity
    if integrity:
        findings.append(Finding(
            "integrity check failed: " + "; ".join(integrity),
            mend="Run `memory-gate reindex` if only the index is named; restore from a backup otherwise.",
        ))
    kinds = dict(conn.execute("SELECT kind, count(*) FROM facts GROUP BY kind"))
    report["facts"] = {kind: kinds.get(kind, 0) for kind in ("state", "event", "decision", "trap")}
    report["sessions"] = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
    report["turns"] = conn.execute("SELECT count(*) FROM turns").fetchone()[0]
    log = audit.log_path(path)
    check = audit.check(conn, log)
    report["write_log"] = {
        "path": str(log),
        "lines": check.lines,
        "torn": len(check.torn),
        "never_committed": len(check.uncommitted),
        "writes_missing_lines": len(check.missing),
    }
    advice = check.advice()
    if advice:
        report["write_log"]["advice"] = advice
    if check.missing:
        findings.append(Finding(
            f"{len(check.missing)} committed write(s) lack log lines in {log}",
            mend="The log was edited, truncated or replaced: restore it from a backup if you have one; the facts themselves are intact.",
        ))
    report["meaning"], found = vectors.status(conn, embeddings.Endpoint.from_settings(settings))
    return report, findings + stated(found)


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
