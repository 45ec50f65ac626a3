"""Writes to a team's memory that the member's ledger has not taken in yet.

A write to a team's memory commits in the team's PostgreSQL first and in the member's local
ledger right after (gate.memory.write), in two transactions: the team's, with no lock of the
ledger's held while the network answers, then a short one of the ledger's. So a change the team
has is never one the ledger refused. The other way round is the gap: the ledger's commit can
still fail after the team's (a full disk, an I/O error, the server killed between the two). The
team then holds changes the ledger does not know: the turn still owes its write, and the agent's
next write, a new call, would insert each new fact a second time, or be refused for the facts it
had changed itself.

So each team write is noted in `team_writes` (schema.sql version 10), committed on its own,
before it goes to the team, and the note is taken away in the ledger's transaction of the write.
A note left behind is settled at the session's next write, before anything else: the team's
record (its changes' lines, by write id) tells whether the write committed. If it did, the ledger
takes it in as the write would have (every fact the turn read answered, the `writes` row with an
answer rebuilt from the record), so that the same write sent again is answered as a replay; if
not, the note goes. Each happens once: a note is taken in or dropped in the same ledger
transaction that removes it, and a write whose note another call settled while it was on its way
from the team to the ledger finds its `writes` row there (`recorded`) and records nothing again.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import apsw

from gate import clock
from gate.engine import store
from gate.memory import ledger

if TYPE_CHECKING:
    from gate.engine.teamfacts import TeamFacts


def note(
    conn: apsw.Connection, write_id: str, turn: ledger.Turn, *, tool_use_id: str | None, digest: str, kept: list[int]
) -> None:
    """The write is about to go to the team: inside a transaction of its own, committed before."""
    conn.execute(
        "INSERT OR REPLACE INTO team_writes (id, session, turn, tool_use_id, digest, kept, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (write_id, turn.session, turn.id, tool_use_id, digest, json.dumps(kept), clock.now()),
    )


def done(conn: apsw.Connection, write_id: str) -> None:
    """The ledger has the write (or it was refused, nothing sent): in the ledger's transaction."""
    conn.execute("DELETE FROM team_writes WHERE id = ?", (write_id,))


def settle(conn: apsw.Connection, team: TeamFacts, session: str, *, writing: str) -> list[str]:
    """Take in the session's writes the team committed and the ledger did not; forget those it
    never committed. `writing`: the write under way, noted too. Outside any transaction, and
    never with the ledger's lock held while the team is asked: the team's record is read in a
    team transaction of its own (only when a note is left), and what it says is taken in by one
    short ledger transaction. Returns the ids taken in."""
    notes = list(
        conn.execute(
            "SELECT id, turn, tool_use_id, digest, kept FROM team_writes WHERE session = ? AND id != ? ORDER BY at",
            (session, writing),
        )
    )
    if not notes:
        return []
    told: dict[str, tuple[list[dict], dict[int, int]]] = {}
    with team.transaction():
        for write_id, turn_id, *_ in notes:
            lines = team.lines_of_write(write_id)
            told[write_id] = (lines, team.revisions(ledger.read_ids(conn, turn_id)) if lines else {})
    taken = []
    with store.writing(conn):
        for write_id, turn_id, tool_use_id, digest, kept in notes:
            if conn.execute("SELECT 1 FROM team_writes WHERE id = ?", (write_id,)).fetchone() is None:
                continue  # settled meanwhile, by the write itself or another call
            lines, revisions = told[write_id]
            turn = ledger.get_turn(conn, turn_id)
            if lines and turn is not None and not _known(conn, write_id, tool_use_id):
                _take_in(conn, turn, write_id, tool_use_id, digest, json.loads(kept), lines, revisions)
                taken.append(write_id)
            done(conn, write_id)
    return taken


def recorded(conn: apsw.Connection, write_id: str) -> bool:
    """Whether the ledger has write `write_id` already (settled by another call while the write
    was on its way from the team to the ledger); in the ledger's transaction."""
    return conn.execute("SELECT 1 FROM writes WHERE id = ?", (write_id,)).fetchone() is not None


def _known(conn: apsw.Connection, write_id: str, tool_use_id: str | None) -> bool:
    found = conn.execute(
        "SELECT 1 FROM writes WHERE id = ? OR (tool_use_id IS NOT NULL AND tool_use_id = ?)", (write_id, tool_use_id)
    ).fetchone()
    return found is not None


def _take_in(
    conn: apsw.Connection,
    turn: ledger.Turn,
    write_id: str,
    tool_use_id: str | None,
    digest: str,
    kept: list[int],
    lines: list[dict],
    revisions: dict[int, int],
) -> None:
    """What the write's own ledger transaction would have committed; its answer as the write
    gave it (gate.memory.write's Outcome), but for an update that changed nothing, which left no line."""
    done_ops = [
        {"op": line["op"], "id": line["id"], "topic": line.get("topic")}
        if line["op"] == "insert"
        else {"op": line["op"], "id": line["id"]}
        for line in lines
    ]
    answer = {"write": write_id, "done": done_ops, "kept": kept, "notes": []}
    seq = ledger.record_write(conn, turn, revisions)
    conn.execute(
        "INSERT INTO writes (id, session, turn, seq, tool_use_id, digest, changes, answer, at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (write_id, turn.session, turn.id, seq, tool_use_id, digest, len(lines), json.dumps(answer), clock.now()),
    )
    if turn.opened_by_hook and turn.searched > 0:
        ledger.met_by_write(conn, turn.id)
