"""The record of a memory's changes, as `log`, `history` and `undo` read it: write.log beside a
local memory, the `changes` table of a team's (schema-postgres.sql), each change the same entry
(gate.memory.changeset writes both): time, write, op, id, topic, kind, before, after, session,
turn, words, and on a team the member.

write.log may hold lines of writes that never committed (the writer stopped between the log and
the commit): they are entries marked not committed. A team's record holds committed changes
only, for a change and its row commit together.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw

from gate.memory import audit, history

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gate.engine.teamfacts import TeamFacts


class LogRecord:
    """write.log beside a local memory, each line asked whether its write committed."""

    where = "write.log"

    def __init__(self, conn: apsw.Connection, log: Path):
        self.conn, self.log = conn, log

    def entries(
        self, *, fact: int | None = None, session: str | None = None, since: str | None = None
    ) -> Iterator[dict]:
        """Every readable entry, oldest first, with `committed` and its `entry` name."""
        committed = history.Committed(self.conn)
        for entry in audit.entries(self.log, fact=fact, session=session, since=since):
            yield _named(entry, committed(entry.get("write")))

    def changes(self, fact_id: int) -> Iterator[history.Change]:
        return history.changes(self.conn, self.log, fact_id)

    def never_committed(self, prefix: str, fact_id: int) -> bool:
        """Whether the log holds a line of this change whose write never committed."""
        return any(str(entry.get("write", "")).startswith(prefix) for entry in audit.entries(self.log, fact=fact_id))

    def unproven(self, line) -> str | None:
        """What breaks write.log's chain at this line, if anything (audit.unproven)."""
        return audit.unproven(self.log, line)


class TeamRecord:
    """A team's `changes` for one project, read in the order they committed."""

    where = "the team's record"

    def __init__(self, facts: TeamFacts):
        self.facts = facts

    def _rows(self, fact: int | None = None, session: str | None = None, since: str | None = None):
        where = ["project = %s"]
        args: list[object] = [self.facts.project]
        if fact is not None:
            where.append("fact = %s")
            args.append(fact)
        if session is not None:
            where.append("session = %s")
            args.append(session)
        if since is not None:
            where.append("at >= %s")
            args.append(since)
        # Streamed through a server-side cursor in one snapshot, as write.log is read a line at a time.
        with self.facts.transaction(), self.facts.conn.cursor(name="memory_gate_record") as rows:
            rows.itersize = 500
            rows.execute(
                "SELECT seq, line, op, fact, before, after, member, session, at FROM changes"
                f" WHERE {' AND '.join(where)} ORDER BY seq",
                args,
            )
            yield from self._entries(rows)

    @staticmethod
    def _entries(rows):
        for seq, line, op, fact_id, before, after, member, row_session, at in rows:
            entry = (
                dict(line)
                if isinstance(line, dict)
                else {
                    # a change recorded before its line was (schema-postgres.sql version 3)
                    "time": at,
                    "write": f"{seq:08x}",
                    "op": op,
                    "id": fact_id,
                    "session": row_session,
                    **({"before": before} if before is not None else {}),
                    **({"after": after} if after is not None else {}),
                }
            )
            entry["member"] = member  # the row's, which the server checked (schema-postgres.sql section 8)
            current = entry.get("after") or entry.get("before") or {}
            entry.setdefault("topic", current.get("topic"))
            entry.setdefault("kind", current.get("kind"))
            yield seq, entry

    def entries(
        self, *, fact: int | None = None, session: str | None = None, since: str | None = None
    ) -> Iterator[dict]:
        for _, entry in self._rows(fact, session, since):
            yield _named(entry, True)

    def changes(self, fact_id: int) -> Iterator[history.Change]:
        for seq, entry in self._rows(fact_id):
            yield history.Change(seq, entry)

    def never_committed(self, prefix: str, fact_id: int) -> bool:
        return False

    def unproven(self, line) -> str | None:
        """Nothing: a change and its row commit together, under the server's checks."""
        return None


def _named(entry: dict, committed: bool) -> dict:
    """The entry with whether it committed, and its name for `undo` and `history`."""
    entry["committed"] = committed
    if isinstance(entry.get("write"), str) and isinstance(entry.get("id"), int):
        entry["entry"] = history.entry_name(entry["write"], entry["id"])
    return entry
