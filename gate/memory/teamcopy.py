"""`memory-gate team push` and `team pull`: a whole memory, its history included, copied between
a local file and a team's project.

Push takes the project's local memory (its facts, ids and bookkeeping as they are, and every
committed change write.log holds) into the team's project, which must be empty: merging two
memories is `memory-gate import --new-ids`, which makes each fact a new change. Pull makes a
local file of the team's project (facts and record, as write.log lines with the `writes` rows
that say they committed), so that a member can leave the team with the memory, or keep a copy.
Both are one transaction on each side: a copy is whole or not made. Push copies in bulk (COPY),
holding only the project it fills, which is empty: other projects, and searches, never wait.

A change write.log does not say the member of (a local memory's own) is recorded as the
member's who pushes it: the owner of that memory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import apsw

from gate import clock
from gate.engine import store, teamwords
from gate.memory import audit, changeset, ledger, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gate.engine.teamfacts import TeamFacts

COLUMNS = ("id", "topic", "kind", "text", "date", "created", "updated", "confirmed", "rev")


class CannotCopy(Exception):
    """The copy would lose or mix memory; the message says what to do instead."""


@dataclass(frozen=True)
class Copied:
    facts: int
    changes: int

    def to_json(self) -> dict:
        return {"facts": self.facts, "changes": self.changes}


def _revisions(entries: list[dict]) -> list[int]:
    """Each change's revision as the team's record holds it: the one it made (a delete: the
    one it removed), following each fact's history (history.replay's rules)."""
    revs: dict[int, int] = {}
    made = []
    for entry in entries:
        fact, op = entry["id"], entry.get("op")
        if op == "insert":
            revs[fact] = int((entry.get("bookkeeping") or {}).get("rev", 1))
        elif op == "update":
            revs[fact] = revs.get(fact, 0) + 1
        made.append(revs.get(fact, 1))
    return made


def push(conn: apsw.Connection, log: Path, team: TeamFacts) -> Copied:
    """Copy the local memory `conn` (write.log at `log`) into the team's empty project."""
    entries = [
        {key: value for key, value in entry.items() if key not in ("committed", "entry")}
        for entry in record.LogRecord(conn, log).entries()
        if entry["committed"] and isinstance(entry.get("id"), int) and entry.get("op") in ("insert", "update", "delete")
    ]
    member = team.who.member
    with store.writing(conn, lock=False), team.transaction():
        held = team.conn.execute(
            "SELECT facts, (SELECT count(*) FROM changes WHERE project = %s) FROM projects WHERE id = %s FOR UPDATE",
            (team.project, team.project),
        ).fetchone()
        if held[0] or held[1]:
            raise CannotCopy(
                f"the team's project already holds {held[0]} facts and {held[1]} changes, and push copies a memory "
                "into an empty project only, ids and history as they are: add this memory's facts to it with "
                "`memory-gate export` here and `memory-gate import --new-ids` on the team instead"
            )
        rows = conn.execute(f"SELECT {', '.join(COLUMNS)} FROM facts ORDER BY id").fetchall()
        # In bulk: two COPYs, so that the counters' triggers run once (schema-postgres.sql section 2)
        # and a project of 100k facts is copied in seconds. A person waits for it; statements
        # are not cut short, the command's deadline bounds the whole.
        team.conn.execute("SET LOCAL statement_timeout = 0")
        with team.conn.cursor() as cursor:
            with cursor.copy(
                "COPY facts (project, id, topic, kind, text, date, created, updated, confirmed, rev, changed_by, words)"
                " FROM STDIN"
            ) as copy:
                for row in rows:
                    copy.write_row((team.project, *row, member, teamwords.words(str(row[1]), str(row[3]))))
            with cursor.copy(
                "COPY changes (project, fact, op, rev, before, after, member, session, tool_use_id, at, line) FROM STDIN"
            ) as copy:
                for entry, rev in zip(entries, _revisions(entries)):
                    who = entry.get("member") or member
                    copy.write_row(
                        (
                            team.project,
                            entry["id"],
                            entry["op"],
                            rev,
                            _json(entry.get("before")),
                            _json(entry.get("after")),
                            who,
                            str(entry.get("session") or "unknown"),
                            None,
                            str(entry.get("time") or clock.now()),
                            json.dumps({**entry, "member": who}, ensure_ascii=False),
                        )
                    )
        sequence = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'facts'").fetchone()
        last = max(
            [int(str(row[0])) for row in rows]
            + [int(entry["id"]) for entry in entries]
            + [sequence[0] if sequence else 0]
        )
        team.conn.execute("UPDATE projects SET last_fact = greatest(last_fact, %s) WHERE id = %s", (last, team.project))
    return Copied(len(rows), len(entries))


def _json(value) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def pull(team: TeamFacts, target: Path) -> Copied:
    """Make the local memory at `target` a copy of the team's project. `target` may be a new
    file or a memory that holds no facts and no logged change (a member's turn ledger)."""
    conn = store.connect(target)
    try:
        log = audit.log_path(target)
        held = conn.execute("SELECT count(*) FROM facts").get
        if held or (log.exists() and log.stat().st_size):
            raise CannotCopy(
                f"{target} already holds a memory ({held} facts, write.log beside it): pull makes a copy in a "
                "memory with none, so that nothing is mixed or lost: give another file with --to PATH"
            )
        entries = list(record.TeamRecord(team).entries())
        with team.transaction():
            rows = team.conn.execute(
                f"SELECT {', '.join(COLUMNS)} FROM facts WHERE project = %s ORDER BY id", (team.project,)
            ).fetchall()
            last = team.conn.execute("SELECT last_fact FROM projects WHERE id = %s", (team.project,)).fetchone()[0]
        lines = [{key: value for key, value in entry.items() if key not in ("committed", "entry")} for entry in entries]
        with store.writing(conn):
            conn.executemany(f"INSERT INTO facts ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})", rows)
            if last:
                conn.execute("DELETE FROM sqlite_sequence WHERE name = 'facts'")
                conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('facts', ?)", (last,))
            # Each of the team's writes becomes a write of this memory's, so that write.log's lines
            # count as committed (gate.memory.audit), under one turn of the command line's.
            turn = changeset.cli_turn(conn, "memory-gate team pull")
            counts: dict[str, list] = {}
            for line in lines:
                counts.setdefault(str(line.get("write")), [0, line.get("session"), line.get("time")])[0] += 1
            for write_id, (changes, session, at) in counts.items():
                seq = ledger.record_write(conn, turn)
                conn.execute(
                    "INSERT INTO writes (id, session, turn, seq, tool_use_id, digest, changes, answer, at)"
                    " VALUES (?, ?, ?, ?, NULL, 'team pull', ?, '{}', ?)",
                    (write_id, str(session or "unknown"), turn.id, seq, changes, str(at or clock.now())),
                )
            audit.append(log, lines)  # before the commit, as every change set logs
        return Copied(len(rows), len(lines))
    finally:
        conn.close()
