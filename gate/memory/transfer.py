"""Facts out and in as JSON lines: `memory-gate export` and `memory-gate import`.

One fact per line, every column: id, topic, kind, text, date, created, updated, confirmed, rev.
Exporting a memory and importing the file into an empty one gives the same facts, ids and
bookkeeping included. Export reads one snapshot and changes nothing, so it writes nothing to
write.log (the log records changes to memory; the command says what it wrote and where).

Import is all or nothing. Every line is checked first (gate.memory.factlines: as memory_write
checks a fact), and one bad line refuses the whole file, with the line numbers, before anything
is applied. The lines go into a temporary table, not a list, so a file of any size is read once
and held on disk. Then, in one transaction, the facts go in through gate.memory.changeset: each
logged in write.log before the commit, by the command line's own session with the command as its
words, so `memory-gate undo` can take any of them out again.

Importing into a memory that already holds facts:

- a *duplicate* is a line whose topic, kind and text a fact of the memory already has, whatever
  its id: it is skipped, and counted. Re-importing a file skips all of it. Only facts that were
  in memory before the import count: two equal lines in one file both go in (memory can hold
  two equal facts, and a round trip must reproduce them);
- a line that gives an id held by another fact conflicts: the file is refused, naming the lines,
  unless `new_ids` gives every imported fact a new id (to merge facts from another project,
  whose ids mean nothing here).

An id the memory used once for a fact since deleted is free: the fact takes it, and its history
(`memory-gate history ID`) then shows the earlier fact's changes before the import.

Lines may leave out what a person writing them by hand would not know: id (the next one is
taken), date (today), and created, updated, confirmed and rev (now, and revision 1).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date as Date
from pathlib import Path
from typing import TextIO

import apsw

from gate import credentials
from gate.engine import postgres, store
from gate.memory import changeset
from gate.memory.factlines import COLUMNS, Refused, check_line
from gate.search import embeddings, vectors

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gate.engine.seam import Listing, Store
    from gate.engine.teamfacts import TeamFacts

# Problems named one by one; past this many, the rest are counted.
LISTED = 20
# `progress(done, total)` is called every this many facts and at the end (gate.cli.terminal draws it).
PROGRESS_EVERY = 500
Progress = Callable[[int, int], None]


# -- export ---------------------------------------------------------------------------------


def export(conn: apsw.Connection, out: TextIO, *, progress: Progress | None = None) -> int:
    """Write every fact of a local memory to `out` (export_store)."""
    from gate.engine.listing import SqliteListing

    return _export(SqliteListing(conn), store.writing(conn, lock=False), out, progress)


def export_store(memory: Store, out: TextIO, *, progress: Progress | None = None) -> int:
    """Write every fact to `out`, one JSON object a line, by id; return how many. A local
    memory's count and rows are one snapshot (its `reading`), however long the writing takes; a
    team's are each one."""
    return _export(memory.listing, memory.reading(), out, progress)


def _export(listing: Listing, snapshot, out: TextIO, progress: Progress | None) -> int:
    with snapshot:
        return _write_rows(listing.export_rows(COLUMNS), listing.count(), out, progress)


def _write_rows(rows: Iterable[tuple], total: int, out: TextIO, progress: Progress | None) -> int:
    done = 0
    for row in rows:
        # A fact stored before the credential check knew its shape goes out redacted.
        out.write(json.dumps(credentials.redact_json(dict(zip(COLUMNS, row))), ensure_ascii=False) + "\n")
        done += 1
        if progress and (done % PROGRESS_EVERY == 0 or done == total):
            progress(done, total)
    return done


# -- import: applying ------------------------------------------------------------------------


@dataclass
class Imported:
    lines: int = 0  # facts the file held
    inserted: int = 0
    skipped: int = 0  # duplicates of facts memory held already
    skipped_lines: list[int] = field(default_factory=list)  # the first LISTED of them
    ids: tuple[int, int] | None = None  # lowest and highest id given
    write_id: str | None = None  # None: nothing applied (dry run, or every line a duplicate)

    def to_json(self) -> dict:
        data = {
            "lines": self.lines,
            "imported": self.inserted,
            "skipped": self.skipped,
            "skipped_lines": self.skipped_lines,
            "write": self.write_id,
        }
        if self.ids:
            data["ids"] = list(self.ids)
        return data


_INCOMING = """
CREATE TEMP TABLE incoming (
    line INTEGER PRIMARY KEY, id INTEGER, topic TEXT, kind TEXT, text TEXT, date TEXT,
    created TEXT, updated TEXT, confirmed TEXT, rev INTEGER, duplicate INTEGER NOT NULL DEFAULT 0
)"""


def import_into(conn: apsw.Connection, source: Iterable[str], memory: Store, **options) -> Imported:
    """import_facts into a store: its facts and its log (`conn` the ledger, a team's member's own)."""
    team = None if memory.facts.local else memory.facts
    return import_facts(conn, source, log=memory.log, team=team, **options)  # type: ignore[arg-type]


def import_facts(
    conn: apsw.Connection,
    source: Iterable[str],
    *,
    log: Path | None,
    command: str,
    new_ids: bool = False,
    dry_run: bool = False,
    today: str | None = None,
    progress: Progress | None = None,
    team: TeamFacts | None = None,
) -> Imported:
    """Check every line of `source`, then insert its facts in one logged transaction. Raises
    Refused naming every bad line (and every id conflict), with nothing applied. With a `team`,
    the facts go into the team's project, each change in its record; `conn` is then the
    member's ledger, which also holds the lines while they are checked."""
    conn.execute("DROP TABLE IF EXISTS temp.incoming")
    conn.execute(_INCOMING)
    try:
        _load(conn, source, today or Date.today().isoformat(), new_ids)
        return _apply(conn, log=log, command=command, new_ids=new_ids, dry_run=dry_run, progress=progress, team=team)
    finally:
        conn.execute("DROP TABLE IF EXISTS temp.incoming")


def _load(conn: apsw.Connection, source: Iterable[str], today: str, new_ids: bool) -> None:
    problems: list[str] = []
    more = 0
    # A transaction on the temporary table only: it takes no lock on memory itself.
    with store.writing(conn, lock=False):
        for number, raw in enumerate(source, start=1):
            raw = raw.rstrip("\r\n")
            if not raw.strip():
                continue
            fact, found = check_line(raw, today)
            for problem in found:
                if len(problems) < LISTED:
                    problems.append(f"line {number}: {problem}")
                else:
                    more += 1
            if fact is not None:
                conn.execute(
                    f"INSERT INTO incoming (line, {', '.join(COLUMNS)}) VALUES (?{', ?' * len(COLUMNS)})",
                    (number, *(fact[key] for key in COLUMNS)),
                )
    if not new_ids:
        repeated = conn.execute(
            "SELECT id, group_concat(line, ', ') FROM (SELECT id, line FROM incoming WHERE id IS NOT NULL ORDER BY line)"
            " GROUP BY id HAVING count(*) > 1 ORDER BY min(line)"
        )
        for fact_id, lines in repeated:
            if len(problems) < LISTED:
                problems.append(
                    f"lines {lines} all give id {fact_id}: an id names one fact; change or remove all but one."
                )
            else:
                more += 1
    if problems or more:
        raise Refused(problems, more)
    # Found by content while the transaction marks duplicates: one index lookup per memory fact.
    conn.execute("CREATE INDEX temp.incoming_by_content ON incoming (topic, kind, text)")


def _apply(
    conn: apsw.Connection,
    *,
    log: Path | None,
    command: str,
    new_ids: bool,
    dry_run: bool,
    progress: Progress | None,
    team: TeamFacts | None = None,
) -> Imported:
    result = Imported(lines=conn.execute("SELECT count(*) FROM incoming").get)
    if team is not None:
        return _apply_team(
            conn, team, command=command, new_ids=new_ids, dry_run=dry_run, progress=progress, result=result
        )
    with store.writing(conn):
        # Inside the transaction: what memory holds cannot change under the comparison.
        conn.execute(
            "UPDATE incoming SET duplicate = 1 WHERE line IN (SELECT i.line FROM main.facts f"
            " JOIN incoming i ON i.topic = f.topic AND i.kind = f.kind AND i.text = f.text)"
        )
        result.skipped = conn.execute("SELECT count(*) FROM incoming WHERE duplicate").get
        result.skipped_lines = [
            row[0] for row in conn.execute("SELECT line FROM incoming WHERE duplicate ORDER BY line LIMIT ?", (LISTED,))
        ]
        if not new_ids:
            _refuse_conflicts(conn)
        wanted = result.lines - result.skipped
        if dry_run or not wanted:
            store.rollback(conn)
            result.inserted = wanted if dry_run else 0
            return result
        turn = changeset.cli_turn(conn, command)
        changes = changeset.ChangeSet(conn, changeset.author(turn), log)
        ids: list[int] = []
        for row in conn.execute(f"SELECT {', '.join(COLUMNS)} FROM incoming WHERE NOT duplicate ORDER BY line"):
            fact = dict(zip(COLUMNS, row))
            given = {key: fact[key] for key in changeset.BOOKKEEPING if fact[key] is not None}
            bookkeeping = None
            if given:
                now = changes.stamp
                bookkeeping = {"created": now, "updated": now, "confirmed": now, "rev": 1} | given
            fact_id = changes.insert(fact, fact_id=None if new_ids else fact["id"], bookkeeping=bookkeeping)
            ids = [min(ids[0], fact_id), max(ids[1], fact_id)] if ids else [fact_id, fact_id]
            result.inserted += 1
            if progress and (result.inserted % PROGRESS_EVERY == 0 or result.inserted == wanted):
                progress(result.inserted, wanted)
        result.ids, result.write_id = (ids[0], ids[1]), changes.write_id
        changes.finish(
            turn,
            digest=hashlib.sha256(command.encode()).hexdigest(),
            answer=json.dumps({"command": command, **result.to_json()}),
        )
    return result


def _apply_team(
    conn: apsw.Connection,
    team: TeamFacts,
    *,
    command: str,
    new_ids: bool,
    dry_run: bool,
    progress: Progress | None,
    result: Imported,
) -> Imported:
    """Import into a team's project in bulk: the lines checked against the project with no lock
    held, ids handed out at once, then the facts and their changes moved in batches
    (TeamFacts.insert_many), each a short transaction, so that other members' writes wait for a
    batch at most and never for the whole file. The member's ledger is written only before and
    after, never held while the team works. Interrupted, the batches in stay: the same import run
    again adds the rest, the facts already in skipped as duplicates."""
    with store.writing(conn, lock=False):  # the temporary table only
        with team.transaction():
            _mark_team_duplicates(conn, team)
            last = team.conn.execute("SELECT last_fact FROM projects WHERE id = %s", (team.project,)).fetchone()[0]
        result.skipped = conn.execute("SELECT count(*) FROM incoming WHERE duplicate").get
        result.skipped_lines = [
            row[0] for row in conn.execute("SELECT line FROM incoming WHERE duplicate ORDER BY line LIMIT ?", (LISTED,))
        ]
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
    changes = changeset.ChangeSet(conn, changeset.author(turn), None, team)

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
            digest=hashlib.sha256(command.encode()).hexdigest(),
            answer=json.dumps({"command": command, **result.to_json()}),
            tool_use_id=None,
        )
    return result


def _content(topic: str, kind: str, text: str) -> str:
    """What makes two facts duplicates, as PostgreSQL's md5() spells it in _mark_team_duplicates."""
    return hashlib.md5(f"{topic}\x1f{kind}\x1f{text}".encode()).hexdigest()


def _mark_team_duplicates(conn: apsw.Connection, team: TeamFacts) -> None:
    """Mark the lines whose topic, kind and text a fact of the team's project already has: the
    project's facts compared by a digest of their content, read once."""
    held = {
        row[0]
        for row in team.conn.execute(
            "SELECT md5(topic || chr(31) || kind || chr(31) || text) FROM facts WHERE project = %s", (team.project,)
        )
    }
    if not held:
        return
    duplicates = [
        (line,)
        for line, topic, kind, text in conn.execute("SELECT line, topic, kind, text FROM incoming")
        if _content(topic, kind, text) in held
    ]
    conn.executemany("UPDATE incoming SET duplicate = 1 WHERE line = ?", duplicates)


def _refuse_conflicts(conn: apsw.Connection, team: TeamFacts | None = None) -> None:
    """Refuse the file when a line gives an id another fact of memory (the local file's, or the
    team's project) holds, naming the lines."""
    if team is None:
        taken = list(
            conn.execute(
                "SELECT i.line, i.id, f.topic FROM incoming i JOIN main.facts f ON f.id = i.id"
                " WHERE NOT i.duplicate ORDER BY i.line"
            )
        )
    else:
        rows = list(conn.execute("SELECT line, id FROM incoming WHERE NOT duplicate AND id IS NOT NULL ORDER BY line"))
        topics: dict[int, str] = {}
        for start in range(0, len(rows), 1000):
            ids = [fact_id for _, fact_id in rows[start : start + 1000]]
            topics.update(
                team.conn.execute(
                    "SELECT id, topic FROM facts WHERE project = %s AND id = ANY(%s)", (team.project, ids)
                ).fetchall()
            )
        taken = [(line, fact_id, topics[fact_id]) for line, fact_id in rows if fact_id in topics]
    problems = [
        f"line {line}: id {fact_id} is another fact's here ([{fact_id}] {topic})."
        for line, fact_id, topic in taken[:LISTED]
    ]
    if problems:
        problems.append(
            "These facts come from another memory, whose ids mean nothing here: import with "
            "--new-ids to give every fact of the file a new id."
        )
        raise Refused(problems, max(len(taken) - LISTED, 0))


# -- vectors for what came in ----------------------------------------------------------------------


def embed_waiting(
    conn: apsw.Connection,
    endpoint: embeddings.Endpoint,
    *,
    batch: int = 16,
    timeout: float = 120.0,
    progress: Progress | None = None,
) -> tuple[int, int]:
    """Embed every fact still waiting for a vector, a batch per request and per transaction
    (never a request under the write lock); return (embedded, still waiting). Stops at the first
    batch the endpoint does not answer: the rest wait for later writes or `memory-gate reindex`."""
    total = vectors.missing(conn)
    embedded, last = 0, 0
    for items in _batches(conn, batch):
        prepared = vectors.prepare(endpoint, [text for _, text in items], timeout=timeout)
        if prepared is None:
            break
        with store.writing(conn):
            embedded += vectors.sync(conn, [fact for fact, _ in items], prepared)
        last += len(items)
        if progress:
            progress(min(last, total), total)
    return embedded, vectors.missing(conn)


def _batches(conn: apsw.Connection, batch: int) -> Iterator[list[tuple[int, str]]]:
    after = 0
    while True:
        items = vectors.waiting(conn, limit=batch, chars=1 << 30, after=after)
        if not items:
            return
        yield items
        after = items[-1][0]
