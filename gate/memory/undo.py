"""Undo one logged change: the fact goes back to what it was before that change.

An update gets its previous topic, kind, text and date back, a deleted fact comes back under its
own id (created when it first was, at a revision above any it had, so no session mistakes it for
the version it was shown), and an inserted fact is deleted. The undo is itself a change like any
other: one transaction through gate.memory.changeset, logged in write.log before it commits (who: the
command line; why: the command as typed; `undoes`: the change it reverts), vectors kept in step.
On a team's memory that transaction is the team's, and the member's ledger is written only
before and after it, never locked while the network answers (gate.memory.stores: `by_hand`).

A line of write.log its chain does not prove (gate.memory.chain: edited, moved, copied in) is
not trusted to say what the fact was: that undo is refused.

Only the latest change to a fact can be undone: undoing an older one would silently throw away
what came after it, so that is refused, naming the later changes (undo them first, newest first).
The log is read before the transaction, never under the write lock; inside it the fact must still
be exactly as that change left it, so a change another session commits meanwhile is not lost
either.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import apsw

from gate import clock
from gate.memory import changeset, checking, history
from gate.search import embeddings, vectors

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gate.engine.seam import Store


class CannotUndo(Exception):
    """The change cannot be undone; the message says why and what to do instead."""


@dataclass(frozen=True)
class Undone:
    reverted: history.Change  # the change undone
    op: str  # what undoing it did to the fact: insert (restored), update or delete
    fact: int
    write_id: str  # the undo's own write

    @property
    def entry(self) -> str:
        """The undo's own entry: undoing it redoes the change."""
        return history.entry_name(self.write_id, self.fact)

    def to_json(self) -> dict:
        return {
            "undone": self.reverted.name,
            "op": self.op,
            "id": self.fact,
            "write": self.write_id,
            "entry": self.entry,
        }


def find(record, name: str) -> tuple[history.Change, list[history.Change]]:
    """The committed change `name` names in `record` (gate.memory.record), and the fact's
    whole history; CannotUndo when there is no such change (with why: never committed, not in
    the record, or ambiguous)."""
    prefix, fact = history.parse_entry(name)
    past = list(record.changes(fact))
    matching = [change for change in past if str(change.entry.get("write", "")).startswith(prefix)]
    if len(matching) > 1:
        listed = ", ".join(f"{change.entry['write']}:{fact}" for change in matching)
        raise CannotUndo(f"{name} names more than one change to fact {fact} ({listed}): give more of the write id.")
    if not matching:
        raise CannotUndo(_not_found(record, prefix, fact, name))
    return matching[0], past


def _not_found(record, prefix: str, fact: int, name: str) -> str:
    if record.never_committed(prefix, fact):
        return f"{name} never committed (its writer stopped before the commit): memory never changed, nothing to undo."
    return (
        f"{record.where} has no change {name}: copy the entry from `memory-gate log --fact {fact}` or "
        f"`memory-gate history {fact}`."
    )


def undo(
    conn: apsw.Connection,
    log: Path,
    name: str,
    *,
    command: str,
    endpoint: embeddings.Endpoint | None = None,
    session: str = changeset.CLI_SESSION,
) -> Undone:
    """`revert` on the local memory `conn`, its changes logged in `log` (write.log)."""
    from gate.memory.stores import LocalStore

    return revert(LocalStore(conn, log), conn, name, command=command, endpoint=endpoint, session=session)


def revert(
    memory: Store,
    conn: apsw.Connection,
    name: str,
    *,
    command: str,
    endpoint: embeddings.Endpoint | None = None,
    session: str = changeset.CLI_SESSION,
) -> Undone:
    """Revert the change `name` (WRITE:FACT) of `memory` in one logged transaction, or raise
    CannotUndo. `conn`: the ledger the undo's turn is recorded in (a team's member's own);
    `session`: who undoes it, as the record names it (the command line, or the viewer)."""
    record = memory.record
    target, past = find(record, name)
    fact = target.entry["id"]
    later = past[past.index(target) + 1 :]
    if later:
        listed = ", ".join(f"{c.name} ({c.op}, {_when(c)})" for c in reversed(later))
        if len(later) == 1:
            mend = f"Undo that one first (`memory-gate undo {later[-1].name}`)"
        else:
            mend = f"Undo those first, newest first (`memory-gate undo {later[-1].name}` is the newest)"
        raise CannotUndo(
            f"cannot undo {target.name}: fact {fact} changed after it ({listed}), and undoing it now "
            f"would lose {'that change' if len(later) == 1 else 'those changes'}. {mend}, or see "
            f"`memory-gate history {fact}`."
        )
    if target.op not in ("insert", "update", "delete"):
        raise CannotUndo(f"{target.name} is a {target.op!r} line, not a change memory-gate makes: nothing to undo.")
    problem = record.unproven(target.line)
    if problem:
        raise CannotUndo(
            f"cannot undo {target.name}: in {record.where}, {problem}, so what it says the fact was is not "
            f"proven. Restore write.log from a backup (`memory-gate doctor` names every line that breaks "
            f"its chain), or change fact {fact} by hand: see `memory-gate history {fact}`."
        )
    # The fact as the change found it (to put back) and as it left it (what memory must hold now).
    back = _checked(target.before, target) if target.op in ("update", "delete") else None
    expected = target.after if target.op in ("insert", "update") else None
    ahead = None
    if back is not None and endpoint is not None:
        ahead = memory.index.embed_ahead(endpoint, [vectors.fact_text(back["topic"], back["text"])], [fact])
    extra = {"undoes": f"{target.entry['write']}:{fact}"}
    # Locally one transaction of the file; on a team, the team's transaction with no lock of the
    # member's ledger held, the write recorded there after the team's commit (Store.by_hand).
    with memory.by_hand(conn, command, session) as hand:
        changes = hand.changes
        now = changes.snapshot(fact)
        if now != expected:
            raise CannotUndo(_moved(target, now, expected))
        if target.op == "insert":
            assert now is not None, "now is what the insert left"
            changes.delete(fact, now, extra=extra)
            done = "delete"
        elif target.op == "update":
            assert now is not None and back is not None, "now is what the update left; back what it found"
            changes.update(fact, now, back, extra=extra)
            done = "update"
        else:
            life = history.replay(past[:-1])
            bookkeeping = {
                "created": life.created or target.entry.get("time") or changes.stamp,
                "updated": changes.stamp,
                "confirmed": changes.stamp,
                "rev": life.rev + 1,
            }
            assert back is not None, "back is what the delete found"
            changes.insert(back, fact_id=fact, bookkeeping=bookkeeping, extra=extra)
            done = "insert"
        result = Undone(target, done, fact, changes.write_id)
        hand.finish(
            digest=hashlib.sha256(command.encode()).hexdigest(),
            answer=json.dumps(result.to_json()),
            ahead=ahead,
        )
    return result


def _checked(fields: dict | None, target: history.Change) -> dict[str, str]:
    """The fields to put back, checked as memory_write checks a fact (a hand-edited log, or a
    fact from before a check existed, is not trusted blindly)."""
    if not isinstance(fields, dict):
        raise CannotUndo(
            f"the log's line for {target.name} does not say what the fact was before: nothing to put back."
        )
    checked, problems = checking.check_fields(fields)
    if problems:
        raise CannotUndo(f"cannot put back what {target.name} replaced: " + " ".join(problems))
    return checked


def _moved(target: history.Change, now: dict | None, expected: dict | None) -> str:
    fact = target.entry["id"]
    if now is None:
        state = "is gone"
    elif expected is None:
        state = "exists"
    else:
        state = "no longer reads as that change left it"
    return (
        f"cannot undo {target.name}: fact {fact} {state}, though its record holds no later change "
        f"(another session changed it just now, or write.log misses lines: `memory-gate doctor`). "
        f"See `memory-gate history {fact}` and try again."
    )


def _when(change: history.Change) -> str:
    return clock.shown(change.entry.get("time"))
