"""Edit, delete and undo from the page: the same path every other change takes.

Each change is one transaction through gate/memory/changeset.py, like memory_write's, `undo`'s and
`import`'s: its write.log line is on disk before the commit, the session is `viewer` and the
turn's words say what the owner did on the page, the vectors of the changed fact are kept in
step. The fields pass the checks memory_write applies (gate/memory/write.py: at most 600 characters,
one of the four kinds, a real day, no credential).

The form carries the revision the owner was looking at: a fact another session changed since is
not overwritten blindly, the owner is told and shown the new version.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import apsw

from gate.engine import store
from gate.memory import audit, changeset, undo, write
from gate.memory.changeset import VIEWER_SESSION
from gate.memory.opening import Opened
from gate.search import embeddings, vectors


class Refused(Exception):
    """The change was not made; the message says what to change."""


def edit(memory: Opened, fact_id: int, fields: dict[str, str], *, rev: int,
         endpoint: embeddings.Endpoint | None = None) -> str:
    """Give the fact these topic, kind, text and date; return what was done, for the page."""
    conn, log = memory.conn, audit.log_path(memory.path)
    checked, problems = write.check_fields(fields)
    if problems:
        raise Refused(" ".join(problems))
    ahead = None
    if endpoint is not None:
        ahead = changeset.embed_ahead(conn, endpoint, [vectors.fact_text(checked["topic"], checked["text"])], [fact_id])
    words = f"memory-gate view: edited fact {fact_id}"
    with store.writing(conn):
        changes, turn = _begin(conn, log, words)
        before = _current(conn, changes, fact_id, rev)
        if before == checked:
            return f"fact {fact_id} already reads so: nothing changed"
        changes.update(fact_id, before, checked)
        _finish(changes, turn, words, ahead)
    return f"fact {fact_id} updated (logged in write.log as {changes.write_id[:8]}:{fact_id})"


def delete(memory: Opened, fact_id: int, *, rev: int) -> str:
    conn, log = memory.conn, audit.log_path(memory.path)
    words = f"memory-gate view: deleted fact {fact_id}"
    with store.writing(conn):
        changes, turn = _begin(conn, log, words)
        before = _current(conn, changes, fact_id, rev)
        changes.delete(fact_id, before)
        _finish(changes, turn, words, None)
    return f"fact {fact_id} deleted (logged in write.log as {changes.write_id[:8]}:{fact_id}; undo brings it back)"


def revert(memory: Opened, entry: str, *, endpoint: embeddings.Endpoint | None = None) -> str:
    """Undo the change `entry` names (gate/memory/undo.py: only a fact's latest change)."""
    try:
        done = undo.undo(memory.conn, audit.log_path(memory.path), entry, command=f"memory-gate view: undo {entry}", endpoint=endpoint,
                         session=VIEWER_SESSION)
    except (undo.CannotUndo, ValueError) as error:
        raise Refused(str(error)) from error
    return f"undid {done.reverted.name} (logged in write.log as {done.entry})"


def _begin(conn: apsw.Connection, log: Path, words: str) -> tuple[changeset.ChangeSet, object]:
    turn = changeset.cli_turn(conn, words, VIEWER_SESSION)
    return changeset.ChangeSet(conn, changeset.author(turn), log), turn


def _current(conn: apsw.Connection, changes: changeset.ChangeSet, fact_id: int, rev: int) -> dict[str, str]:
    """The fact as memory holds it, if it is still the revision the owner was looking at."""
    before = changes.snapshot(fact_id)
    if before is None:
        raise Refused(f"fact {fact_id} is no longer in memory (another session deleted it): nothing was changed")
    now = conn.execute("SELECT rev FROM facts WHERE id = ?", (fact_id,)).fetchone()[0]
    if now != rev:
        raise Refused(
            f"fact {fact_id} changed since you opened it (revision {rev}, now {now}): nothing was "
            "changed; look at the new version below and edit that"
        )
    return before


def _finish(changes: changeset.ChangeSet, turn, words: str, ahead) -> None:
    answer = json.dumps({"write": changes.write_id, "done": [], "kept": [], "notes": [words]})
    changes.finish(turn, digest=hashlib.sha256(f"{changes.write_id}{words}".encode()).hexdigest(),
                   answer=answer, ahead=ahead)
