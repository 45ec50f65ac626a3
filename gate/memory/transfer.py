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
from typing import TextIO

import apsw

from gate import credentials
from gate.engine import store
from gate.memory import changeset
from gate.memory.factlines import COLUMNS, Refused, check_line
from gate.search import embeddings, vectors

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gate.engine.seam import Listing, Store

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


def import_into(
    conn: apsw.Connection,
    source: Iterable[str],
    memory: Store,
    *,
    command: str,
    new_ids: bool = False,
    dry_run: bool = False,
    today: str | None = None,
    progress: Progress | None = None,
) -> Imported:
    """Check every line of `source`, then put its facts into `memory`, each change logged in its
    record (Store.import_rows: locally one transaction of the file, on a team in batches). Raises
    Refused naming every bad line (and every id conflict), with nothing applied. `conn` is the
    ledger (a local memory's own file, a team member's ledger), which also holds the lines, in a
    temporary table, while they are checked."""
    conn.execute("DROP TABLE IF EXISTS temp.incoming")
    conn.execute(_INCOMING)
    try:
        _load(conn, source, today or Date.today().isoformat(), new_ids)
        result = Imported(lines=conn.execute("SELECT count(*) FROM incoming").get)
        return memory.import_rows(conn, result, command=command, new_ids=new_ids, dry_run=dry_run, progress=progress)
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


def import_rows_into_file(
    conn: apsw.Connection,
    memory: Store,
    result: Imported,
    *,
    command: str,
    new_ids: bool,
    dry_run: bool,
    progress: Progress | None,
) -> Imported:
    """The checked lines (the temporary table `incoming` of `conn`, the local memory's own file)
    into the file's facts in one write transaction, each change logged in write.log before the
    commit (LocalStore.import_rows)."""
    with store.writing(conn):
        # Inside the transaction: what memory holds cannot change under the comparison.
        conn.execute(
            "UPDATE incoming SET duplicate = 1 WHERE line IN (SELECT i.line FROM main.facts f"
            " JOIN incoming i ON i.topic = f.topic AND i.kind = f.kind AND i.text = f.text)"
        )
        count_duplicates(conn, result)
        if not new_ids:
            refuse_taken(
                list(
                    conn.execute(
                        "SELECT i.line, i.id, f.topic FROM incoming i JOIN main.facts f ON f.id = i.id"
                        " WHERE NOT i.duplicate ORDER BY i.line"
                    )
                )
            )
        wanted = result.lines - result.skipped
        if dry_run or not wanted:
            store.rollback(conn)
            result.inserted = wanted if dry_run else 0
            return result
        turn = changeset.cli_turn(conn, command)
        changes = memory.change_set(conn, changeset.author(turn))
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
        changes.finish(turn, digest=digest(command), answer=answer(command, result))
    return result


def count_duplicates(conn: apsw.Connection, result: Imported) -> None:
    """How many lines are marked duplicates, and the first LISTED of them, into `result`."""
    result.skipped = conn.execute("SELECT count(*) FROM incoming WHERE duplicate").get
    result.skipped_lines = [
        row[0] for row in conn.execute("SELECT line FROM incoming WHERE duplicate ORDER BY line LIMIT ?", (LISTED,))
    ]


def refuse_taken(taken: list[tuple[int, int, str]]) -> None:
    """Refuse the file when a line gives an id another fact of memory holds: `taken` names each
    such line, its id and the fact's topic."""
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


def digest(command: str) -> str:
    """The import's write as the ledger records it: the command's digest, and its answer."""
    return hashlib.sha256(command.encode()).hexdigest()


def answer(command: str, result: Imported) -> str:
    return json.dumps({"command": command, **result.to_json()})


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
