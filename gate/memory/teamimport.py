"""`memory-gate import` into a team's project, in bulk (TeamStore.import_rows).

The lines, checked and held in the temporary table `incoming` of the member's ledger
(gate.memory.transfer), are compared with the project's facts with no lock held, their ids
handed out at once, then the facts and their changes moved in batches (TeamFacts.insert_many),
each a short transaction, so that other members' writes wait for a batch at most and never for
the whole file. The member's ledger is written only before and after, never held while the team
works. Interrupted, the batches in stay: the same import run again adds the rest, the facts
already in skipped as duplicates.
"""

from __future__ import annotations

import hashlib

import apsw

from gate.engine import postgres, store
from gate.memory import changeset, transfer
from gate.memory.factlines import COLUMNS, Refused

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gate.engine.seam import Store
    from gate.engine.teamfacts import TeamFacts
    from gate.memory.transfer import Imported, Progress


def import_rows(
    conn: apsw.Connection,
    memory: Store,
    team: TeamFacts,
    result: Imported,
    *,
    command: str,
    new_ids: bool,
    dry_run: bool,
    progress: Progress | None,
) -> Imported:
    """The checked lines of `conn` (the member's ledger) into the team's project (`memory`, whose
    facts are `team`)."""
    with store.writing(conn, lock=False):  # the temporary table only
        with team.transaction():
            _mark_duplicates(conn, team)
            last = team.last_id()
        transfer.count_duplicates(conn, result)
        if not new_ids:
            with team.transaction():
                _refuse_conflicts(conn, team)
        rows = conn.execute(f"SELECT {', '.join(COLUMNS)} FROM incoming WHERE NOT duplicate ORDER BY line").fetchall()
    wanted = len(rows)
    if dry_run or not wanted:
        result.inserted = wanted if dry_run else 0
        return result
    given: list[int] = [] if new_ids else [int(row[0]) for row in rows if row[0] is not None]
    try:
        # Ids a member took between the check above and now are refused as the check refuses them.
        first = team.reserve(
            sum(1 for row in rows if new_ids or row[0] is None),
            max(given, default=0),
            [fact_id for fact_id in given if fact_id > last],
        )
    except ValueError as error:
        raise Refused([f"{error}: run the import again to see which lines give them."]) from None
    with store.writing(conn):
        turn = changeset.cli_turn(conn, command)
    changes = memory.change_set(conn, changeset.author(turn))

    def facts():
        handed = first
        for row in rows:
            fact = dict(zip(COLUMNS, row))
            given_here = {key: fact[key] for key in changeset.BOOKKEEPING if fact[key] is not None}
            bookkeeping = None
            if given_here:
                bookkeeping = {
                    "created": changes.stamp,
                    "updated": changes.stamp,
                    "confirmed": changes.stamp,
                    "rev": 1,
                } | given_here
            fact_id = fact["id"] if not new_ids and fact["id"] is not None else None
            if fact_id is None:
                fact_id, handed = handed, handed + 1
            yield fact_id, fact, bookkeeping

    done = [0]

    def moved(count: int) -> None:
        done[0] = count
        if progress:
            progress(count, wanted)

    try:
        result.inserted = changes.insert_many(facts(), progress=moved)
    except postgres.Unreachable as error:
        if not done[0]:
            raise
        raise postgres.Unreachable(
            f"{error}. {done[0]} of the file's {wanted} new facts went in before, each with its change: run the "
            "same import again once the team answers, and it adds the rest (those in are skipped as duplicates)",
            error.reason,
        ) from None
    ids = changes.changed
    result.ids, result.write_id = (min(ids), max(ids)), changes.write_id
    # The team's part of the write (the record's lines are in already, the vectors are the
    # members' servers' to catch up), then the ledger's `writes` row in a short transaction of
    # its own: the ledger's lock is never held while the team answers. Killed between, the team
    # holds the facts and their changes and the ledger no write: nothing recorded that did not
    # happen, and the same import run again skips the facts in as duplicates.
    with team.transaction():
        revisions = changes.finish_facts(turn, sync=[])
    with store.writing(conn):
        changes.record(
            turn,
            revisions,
            digest=transfer.digest(command),
            answer=transfer.answer(command, result),
            tool_use_id=None,
        )
    return result


def _content(topic: str, kind: str, text: str) -> str:
    """What makes two facts duplicates, as TeamFacts.content_digests spells it (PostgreSQL's md5())."""
    return hashlib.md5(f"{topic}\x1f{kind}\x1f{text}".encode()).hexdigest()


def _mark_duplicates(conn: apsw.Connection, team: TeamFacts) -> None:
    """Mark the lines whose topic, kind and text a fact of the team's project already has: the
    project's facts compared by a digest of their content, read once."""
    held = team.content_digests()
    if not held:
        return
    duplicates = [
        (line,)
        for line, topic, kind, text in conn.execute("SELECT line, topic, kind, text FROM incoming")
        if _content(topic, kind, text) in held
    ]
    conn.executemany("UPDATE incoming SET duplicate = 1 WHERE line = ?", duplicates)


def _refuse_conflicts(conn: apsw.Connection, team: TeamFacts) -> None:
    """Refuse the file when a line gives an id another fact of the team's project holds, naming
    the lines."""
    rows = list(conn.execute("SELECT line, id FROM incoming WHERE NOT duplicate AND id IS NOT NULL ORDER BY line"))
    topics: dict[int, str] = {}
    for start in range(0, len(rows), 1000):
        ids = [fact_id for _, fact_id in rows[start : start + 1000]]
        topics.update(team.topics(ids))
    transfer.refuse_taken([(line, fact_id, topics[fact_id]) for line, fact_id in rows if fact_id in topics])
