"""Edit, delete and undo from the page: the same path every other change takes.

Each change is one transaction through gate.memory.changeset, like memory_write's, `undo`'s and
`import`'s: its record is written before the commit (the write.log line on disk, or on a team's
memory the row in the team's `changes`, naming the member, in the team's transaction), the
session is `viewer` and the turn's words say what the owner did on the page, the vectors of the
changed fact are kept in step. On a team the member's ledger (the turn, the `writes` row) is
written only before and after the team's transaction, never locked while the network answers
(gate.memory.stores: `by_hand`). The fields pass the checks memory_write applies
(gate.memory.write: at most 600 characters, one of the four kinds, a real day, no credential).

The form carries the revision the owner was looking at: a fact another session (or, on a team,
another member) changed since is not overwritten blindly. The revision is checked under the lock
every change takes (on a team, the project's row lock, as memory_write's check), and the owner
is told who changed it, and what it reads now.
"""

from __future__ import annotations

import hashlib
import json

from gate import clock
from gate.memory import changeset, checking, history, undo
from gate.memory.changeset import VIEWER_SESSION
from gate.memory.opening import Opened
from gate.search import embeddings, vectors
from gate.view.redact import redact


class Refused(Exception):
    """The change was not made; the message says what to change."""


def edit(
    memory: Opened, fact_id: int, fields: dict[str, str], *, rev: int, endpoint: embeddings.Endpoint | None = None
) -> str:
    """Give the fact these topic, kind, text and date; return what was done, for the page."""
    checked, problems = checking.check_fields(fields)
    if problems:
        raise Refused(" ".join(problems))
    ahead = None
    if endpoint is not None:
        texts = [vectors.fact_text(checked["topic"], checked["text"])]
        ahead = memory.store.index.embed_ahead(endpoint, texts, [fact_id])
    words = f"memory-gate view: edited fact {fact_id}"
    with _by_hand(memory, words) as hand:
        changes = hand.changes
        before = _current(changes, fact_id, rev)
        if before == checked:
            return f"fact {fact_id} already reads so: nothing changed"
        changes.update(fact_id, before, checked)
        _finish(hand, words, ahead)
    return f"fact {fact_id} updated (logged in {memory.record.where} as {changes.write_id[:8]}:{fact_id})"


def delete(memory: Opened, fact_id: int, *, rev: int) -> str:
    words = f"memory-gate view: deleted fact {fact_id}"
    with _by_hand(memory, words) as hand:
        changes = hand.changes
        before = _current(changes, fact_id, rev)
        changes.delete(fact_id, before)
        _finish(hand, words, None)
    return (
        f"fact {fact_id} deleted (logged in {memory.record.where} as {changes.write_id[:8]}:{fact_id}; "
        "undo brings it back)"
    )


def revert(
    memory: Opened, entry: str, *, fact_id: int | None = None, endpoint: embeddings.Endpoint | None = None
) -> str:
    """Undo the change `entry` names (gate.memory.undo: only a fact's latest change), which
    must be a change to `fact_id`, the fact whose page asked."""
    try:
        named = history.parse_entry(entry)[1]
    except ValueError as error:
        raise Refused(str(error)) from error
    if fact_id is not None and named != fact_id:
        raise Refused(
            f"{entry} is a change to fact {named}, not fact {fact_id}: nothing was changed; undo it from fact {named}'s page"
        )
    try:
        done = undo.revert(
            memory.store,
            memory.ledger(),
            entry,
            command=f"memory-gate view: undo {entry}",
            endpoint=endpoint,
            session=VIEWER_SESSION,
        )
    except (undo.CannotUndo, ValueError) as error:
        raise Refused(str(error)) from error
    return f"undid {done.reverted.name} (logged in {memory.record.where} as {done.entry})"


def _by_hand(memory: Opened, words: str):
    """The change's transaction (Store.by_hand): locally one of the file; on a team the team's,
    the turn (the member's own, in their local file) opened before it and the write recorded
    after it commits, as memory_write's."""
    return memory.store.by_hand(memory.ledger(), words, VIEWER_SESSION)


def _current(changes: changeset.ChangeSet, fact_id: int, rev: int) -> dict[str, str]:
    """The fact as memory holds it, if it is still the revision the owner was looking at. Asked
    under the lock every change takes (a team's project lock: `current`), so that another
    member's change cannot slip in between the check and this one."""
    now = changes.facts.current([fact_id]).get(fact_id)
    before = changes.snapshot(fact_id)
    if now is None or before is None:
        raise Refused(f"fact {fact_id} is no longer in memory (another session deleted it): nothing was changed")
    held, topic, text, updated, member = now
    if held != rev:
        who = f"by {member}" if member else "by another session"
        raise Refused(
            f"fact {fact_id} changed since you opened it, {who} (revision {rev} then, {held} since "
            f'{clock.shown(updated)}): nothing was changed. It reads now: [{redact(topic)}] "{redact(text)}" '
            "Look at the new version below and edit that."
        )
    return before


def _finish(hand, words: str, ahead) -> None:
    changes = hand.changes
    answer = json.dumps({"write": changes.write_id, "done": [], "kept": [], "notes": [words]})
    hand.finish(digest=hashlib.sha256(f"{changes.write_id}{words}".encode()).hexdigest(), answer=answer, ahead=ahead)
