"""memory_write: check a batch of changes whole, then apply it in one transaction.

A write is refused as a whole, nothing applied, when anything in it is wrong, and the refusal
names every problem with its mend, so that one corrected call goes through. Above all it is
refused while any fact read this turn is left out of kept, update and delete: that is the gate's
contract, a turn answers for everything memory showed it. What was sent is read into ops by
gate.memory.parsing; here they are checked against memory as it is, and applied.

An accepted write inserts, updates and deletes facts, confirms the kept and updated ones, marks
the turn's reads answered, brings the vectors of the facts it touched up to date (asked for
before the transaction, stored in it: gate.search.vectors), and puts one line per change in
write.log before it commits (see gate.memory.audit for why in that order): the changes themselves go
through gate.memory.changeset, the one path every change to facts takes. The same write delivered
twice, a retried call, is recognised and not applied again.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date as Date
from typing import TYPE_CHECKING, Any

import apsw

from gate import clock, credentials
from gate.engine import store
from gate.memory import changeset, ledger, pending
from gate.memory.checking import brief
from gate.memory.parsing import Op, digest, parse
from gate.search import embeddings, vectors

if TYPE_CHECKING:
    from gate.engine.seam import Store
    from gate.engine.teamfacts import TeamFacts


class Refused(Exception):
    """The write was not applied; `problems` each state a fact and its mend."""

    def __init__(self, problems: list[str]):
        self.problems = [credentials.redact(problem) for problem in problems]  # they quote what was sent
        super().__init__(render_refusal(self.problems))


def render_refusal(problems: list[str]) -> str:
    lines = ["memory_write refused, nothing was changed. Fix and call again:"]
    lines += [f"- {problem}" for problem in problems]
    return "\n".join(lines)


@dataclass
class Outcome:
    """What an accepted write did."""

    write_id: str
    done: list[dict[str, Any]] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    replayed: bool = False
    # Facts this turn read that memory no longer holds (another session deleted them): no write
    # can answer for them, so nothing is owed for them. The mod's record and the server's learn it
    # from here (a write naming one is refused).
    gone: list[int] = field(default_factory=list)
    # The write's turn is gated (a hook opened it) and has not searched: the gate still wants a
    # search, whose results the turn must then answer for.
    owes_search: bool = False

    @property
    def new_ids(self) -> list[int]:
        return [item["id"] for item in self.done if item["op"] == "insert"]

    def to_json(self) -> dict[str, Any]:
        data = {"write": self.write_id, "done": self.done, "kept": self.kept, "notes": self.notes}
        return data | ({"gone": self.gone} if self.gone else {})

    @classmethod
    def from_json(cls, data: dict[str, Any], *, replayed: bool) -> Outcome:
        return cls(data["write"], data["done"], data["kept"], data["notes"], replayed, gone=data.get("gone", []))


def apply(
    conn: apsw.Connection,
    ops: Any,
    kept: Any,
    *,
    attribute: Callable[[apsw.Connection], ledger.Turn],
    memory: Store,
    tool_use_id: str | None = None,
    today: str | None = None,
    endpoint: embeddings.Endpoint | None = None,
) -> Outcome:
    """Check and apply one memory_write; raise Refused with every problem, nothing applied.

    `attribute` names the turn inside the transaction (gate.memory.ledger's attribution rules).
    `memory`: the store whose facts the write changes (gate.memory.stores); the turn's ledger is
    `conn`'s either way. With an `endpoint`, new and changed facts get their vectors when it
    answers in time, else they wait for a later write. Where the facts are the ledger's file,
    a write is one transaction; where they commit apart from it (`memory.commits_apart`: a
    team's), two, the facts' and then the ledger's, and the ledger's lock is never held while
    the facts' store is asked (`_apply_apart`).
    """
    facts = memory.facts
    parsed, kept_ids, problems = parse(ops, kept)
    key = digest(parsed, kept_ids)
    ahead = None
    if endpoint is not None and not problems:
        ahead = _embed_ahead(memory, endpoint, parsed)
    write_id = uuid.uuid4().hex
    if memory.commits_apart:
        return _apply_apart(
            conn,
            memory,
            parsed,
            kept_ids,
            problems,
            key,
            ahead,
            write_id,
            attribute=attribute,
            tool_use_id=tool_use_id,
            today=today,
        )
    with store.writing(conn), facts.transaction():
        turn = attribute(conn)
        owes_search = turn.opened_by_hook and turn.searched == 0
        replay = _replay(conn, turn, key, tool_use_id)
        if replay is not None:
            replay.owes_search = owes_search
            return replay
        found, changed, gone = _check_against_memory(conn, facts, turn, parsed, kept_ids)
        problems += found
        if problems and not changed:
            raise Refused(problems)  # nothing of it kept
        if problems:
            # The refusal shows each fact changed since it was read as it is now: the turn has
            # seen that revision, and its next write may answer for it. That much is committed;
            # nothing of the write is.
            ledger.saw(conn, turn.id, changed)
            refused = Refused(problems)
        else:
            refused = None
            changes = memory.change_set(conn, changeset.author(turn), write_id=write_id)
            outcome = _apply(changes, parsed, kept_ids, today or Date.today().isoformat())
            outcome.gone = gone
            # An update that changed nothing is in `done` too: its fact may still be owed a vector.
            changes.finish(
                turn,
                digest=key,
                answer=json.dumps(outcome.to_json()),
                ahead=ahead,
                sync=[item["id"] for item in outcome.done],
                tool_use_id=tool_use_id,
            )
            if turn.opened_by_hook and not owes_search:
                ledger.met_by_write(conn, turn.id)  # the answer "nothing owed" (gate.serve.render)
    if refused is not None:
        raise refused
    outcome.owes_search = owes_search
    return outcome


def _apply_apart(
    conn: apsw.Connection,
    memory: Store,
    parsed: list[Op],
    kept_ids: list[int],
    problems: list[str],
    key: str,
    ahead: vectors.Prepared | None,
    write_id: str,
    *,
    attribute: Callable[[apsw.Connection], ledger.Turn],
    tool_use_id: str | None,
    today: str | None,
) -> Outcome:
    """A write to facts that commit apart from the ledger (a team's memory), in phases, none
    holding the ledger's lock while the network answers (so the member's hooks and other
    sessions never find the ledger busy for it):

    1. a short ledger transaction names the turn and notes the write (gate.memory.pending);
    2. the session's writes left noted are settled, and a write already applied is answered
       as a replay, the ledger read with no lock held;
    3. the team's transaction checks the write against the facts under the project's lock,
       applies it and records its lines, and commits;
    4. a short ledger transaction records it for the turn (`_into_ledger`) and takes the note away.

    Killed between 3 and 4, the note stays, and the session's next write takes it in (2)."""
    # Only a team's facts commit apart from the ledger, and pending reads their record (TeamFacts).
    team: TeamFacts = memory.facts  # type: ignore[assignment]
    with store.writing(conn):
        turn = attribute(conn)
        if not problems:
            # Noted before it goes to the team, in case the ledger's commit fails after the team's.
            pending.note(conn, write_id, turn, tool_use_id=tool_use_id, digest=key, kept=kept_ids)
    changed: dict[int, int] = {}
    try:
        # A write of the session's that the team committed and this ledger missed: taken in
        # first, so that the same write sent again is a replay, not a second copy.
        pending.settle(conn, team, turn.session, writing=write_id)
        turn = ledger.get_turn(conn, turn.id) or turn
        owes_search = turn.opened_by_hook and turn.searched == 0
        replay = _replay(conn, turn, key, tool_use_id)
        if replay is not None:
            with store.writing(conn):
                pending.done(conn, write_id)
            replay.owes_search = owes_search
            return replay
        with team.transaction():
            found, changed, gone = _check_against_memory(conn, team, turn, parsed, kept_ids)
            problems += found
            if not problems:
                changes = memory.change_set(conn, changeset.author(turn), write_id=write_id)
                outcome = _apply(changes, parsed, kept_ids, today or Date.today().isoformat())
                outcome.gone = gone
                # An update that changed nothing is in `done` too: its fact may still be owed a vector.
                revisions = changes.finish_facts(turn, ahead=ahead, sync=[item["id"] for item in outcome.done])
        if problems:
            raise Refused(problems)
    except Refused:
        with store.writing(conn):  # nothing of it reached the team
            # The refusal shows each fact changed since it was read as it is now: the turn has
            # seen that revision, and its next write may answer for it (see `apply`).
            ledger.saw(conn, turn.id, changed)
            pending.done(conn, write_id)
        raise
    outcome = _into_ledger(conn, changes, turn, outcome, revisions, key=key, tool_use_id=tool_use_id)
    outcome.owes_search = owes_search
    return outcome


def _into_ledger(
    conn: apsw.Connection,
    changes: changeset.ChangeSet,
    turn: ledger.Turn,
    outcome: Outcome,
    revisions: dict[int, int] | None,
    *,
    key: str,
    tool_use_id: str | None,
) -> Outcome:
    """The ledger's transaction of a team write the team has committed: the turn's reads answered,
    the `writes` row, the note taken away. A write another call settled meanwhile (its note
    taken in from the team's record) is the ledger's already, and is not recorded again: it
    keeps this call's answer, which a replay then gives."""
    with store.writing(conn):
        turn = ledger.get_turn(conn, turn.id) or turn
        answer = json.dumps(outcome.to_json())
        if pending.recorded(conn, changes.write_id):
            # Its answer rebuilt from the record lacks what left no line: this call's is whole.
            conn.execute("UPDATE writes SET answer = ? WHERE id = ?", (answer, changes.write_id))
        else:
            changes.record(turn, revisions, digest=key, answer=answer, tool_use_id=tool_use_id)
            if turn.opened_by_hook and turn.searched > 0:
                ledger.met_by_write(conn, turn.id)  # the answer "nothing owed" (gate.serve.render)
        pending.done(conn, changes.write_id)
    return outcome


def _embed_ahead(memory: Store, endpoint: embeddings.Endpoint, ops: list[Op]) -> vectors.Prepared | None:
    """Embed, in one request and before the transaction (never under the write lock), the
    texts this write will store and a few facts still waiting for a vector (their texts read
    first by the store's index: Index.before_write)."""
    read = memory.index.before_write(_retexted(ops), {op.id for op in ops if op.id is not None})
    if read is None:  # the store keeps no vectors (sqlite-vec or pgvector missing)
        return None
    texts = _texts(ops, read.current) + [text for _, text in read.riding]
    return vectors.prepare(endpoint, texts, [fact for fact, _ in read.riding])


def _retexted(ops: list[Op]) -> list[int]:
    """The ids of the facts whose topic or text these ops change."""
    return [
        op.id
        for op in ops
        if op.op == "update"
        and (op.topic is not None or op.text is not None)
        and op.id is not None
        and -(1 << 63) <= op.id < 1 << 63
    ]


def _texts(ops: list[Op], current: dict[int, tuple[str, str]]) -> list[str]:
    """What the facts these ops insert or change will embed, given the changed ones' topic and text now."""
    texts = []
    for op in ops:
        if op.op == "insert":
            assert op.topic is not None and op.text is not None, "parse checked an insert's fields"
            texts.append(vectors.fact_text(op.topic, op.text))
        elif op.op == "update" and op.id in current:
            topic, text = current[op.id]
            texts.append(vectors.fact_text(op.topic or topic, op.text or text))
    return texts


def _replay(conn: apsw.Connection, turn: ledger.Turn, key: str, tool_use_id: str | None) -> Outcome | None:
    """The earlier answer, when this write was already applied (a retried delivery).

    A retry resends the same call under the same tool-call id; a different write under an id
    already used is not a retry, and answering it "already applied" would drop it unseen."""
    if tool_use_id:
        row = conn.execute("SELECT answer, digest FROM writes WHERE tool_use_id = ?", (tool_use_id,)).fetchone()
        if row and row[1] != key:
            raise Refused(
                [
                    f"this call's id ({brief(tool_use_id)}) was already used by a different memory_write, "
                    "which was applied; a retried call must send the same ops and kept. Call memory_write "
                    "again: a new call gets a new id."
                ]
            )
        if row:
            return Outcome.from_json(json.loads(row[0]), replayed=True)
    row = conn.execute(
        "SELECT answer, digest, seq FROM writes WHERE session = ? ORDER BY seq DESC LIMIT 1",
        (turn.session,),
    ).fetchone()
    if row and row[1] == key and row[2] == ledger.session_seq(conn, turn.session):
        # Nothing happened in the session since that write (no prompt, no search): the same
        # content again is the same call again.
        return Outcome.from_json(json.loads(row[0]), replayed=True)
    return None


def _check_against_memory(
    conn: apsw.Connection, facts: changeset.Facts, turn: ledger.Turn, ops: list[Op], kept: list[int]
) -> tuple[list[str], dict[int, int], list[int]]:
    """The write's problems with memory as it is, the facts it names that were changed since
    this turn read them, with their revision now, and the facts this turn read that memory no
    longer holds (Outcome.gone)."""
    read = ledger.read_revisions(conn, turn.id)
    wanted = sorted({op.id for op in ops if op.id is not None} | set(kept))
    # The facts read too, in the same question: which of them are gone.
    existing = facts.existing(sorted(set(wanted) | set(read)))
    gone = sorted(fact for fact in read if fact not in existing)
    problems, changed = _changed_since_read(facts, read, ops, kept)
    for op in ops:
        if op.id is not None and op.id not in existing:
            if op.id in read:
                problems.append(
                    f"ops[{op.index}]: fact {op.id} was deleted (by another session) after this "
                    "turn read it: drop this op, or insert the fact anew."
                )
            else:
                problems.append(
                    f"ops[{op.index}]: there is no fact {op.id}: use an id that memory_search "
                    "returned, or insert a new fact."
                )
    for fact in kept:
        if fact in read:
            continue
        if fact not in existing:
            problems.append(f"kept: there is no fact {fact}: take it out of kept.")
        else:
            # Keeping confirms a fact: only what this turn has looked at can be confirmed.
            problems.append(
                f"kept: fact {fact} was not read this turn; only facts a memory_search returned "
                "this turn can be kept: take it out of kept, or search for it first."
            )
    answered = set(kept) | {op.id for op in ops if op.id is not None}
    # What the turn read and no write answered for, that memory still holds (the facts' store
    # says, a team's as a file's).
    owed = [fact for fact in ledger.unanswered(conn, turn.id, facts_here=False) if fact not in answered]
    missing = [fact for fact in owed if fact in existing]  # every read fact was in that question
    if missing:
        listed = ", ".join(str(fact) for fact in missing)
        noun = "fact" if len(missing) == 1 else "facts"
        if len(missing) == 1:
            mend = "put it in kept if it still holds, or update or delete it."
        else:
            mend = "put each in kept if it still holds, or update or delete it."
        problems.append(
            f"{noun} {listed} read this turn {'is' if len(missing) == 1 else 'are'} not answered for: {mend}"
        )
    return problems, changed, gone


def _changed_since_read(
    facts: changeset.Facts, read: dict[int, int | None], ops: list[Op], kept: list[int]
) -> tuple[list[str], dict[int, int]]:
    """A fact this turn read that was changed since (by another session, or on the memory page):
    keeping, updating or deleting it would answer for a text the turn never saw, and an update
    would overwrite the other change unseen. Each gets its refusal with the fact as it is now."""
    named = [(f"ops[{op.index}]", op.id) for op in ops if op.id is not None]
    named += [("kept", fact) for fact in kept]
    asked = sorted({fact for _, fact in named if read.get(fact) is not None})
    if not asked:
        return [], {}
    now = facts.current(asked)
    problems, changed = [], {}
    for where, fact in named:
        seen = read.get(fact)
        if seen is None or fact not in now or now[fact][0] == seen:
            continue
        rev, topic, text, updated, member = now[fact]
        changed[fact] = rev
        # A team's record names the member; a local memory knows only that it was not this turn.
        who = f"by {member}" if member else "by another session or the memory page"
        problems.append(
            f"{where}: fact {fact} was changed after this turn read it, {who} "
            f"(revision {seen} then, {rev} since {clock.shown(updated)}). Now: "
            f'[{topic}] "{text}" Answer for it as it is now: keep it, update it or delete it.'
        )
    return problems, changed


def _apply(changes: changeset.ChangeSet, ops: list[Op], kept: list[int], today: str) -> Outcome:
    outcome = Outcome(write_id=changes.write_id)
    for op in ops:
        if op.op == "insert":
            assert op.topic is not None and op.kind is not None and op.text is not None, "parse checked them"
            after = {"topic": op.topic, "kind": op.kind, "text": op.text, "date": op.date or today}
            fact_id = changes.insert(after)
            outcome.done.append({"op": "insert", "id": fact_id, "topic": after["topic"]})
        elif op.op == "update":
            assert op.id is not None, "parse checked it"
            before = changes.snapshot(op.id)
            assert before is not None, "the fact is there: checked in this transaction, before any change"
            after = before | op.changes()
            if after == before:
                changes.confirm(op.id)
                outcome.done.append({"op": "unchanged", "id": op.id})
                continue
            changes.update(op.id, before, after)
            outcome.done.append({"op": "update", "id": op.id})
        else:
            assert op.id is not None, "parse checked it"
            before = changes.snapshot(op.id)
            assert before is not None, "the fact is there: checked in this transaction, before any change"
            changes.delete(op.id, before)
            outcome.done.append({"op": "delete", "id": op.id})

    existing = changes.facts.existing(kept)
    for fact in kept:
        if fact in existing:
            changes.confirm(fact)
            outcome.kept.append(fact)
        else:
            outcome.notes.append(f"fact {fact} was deleted by another session after this turn read it.")
    return outcome
