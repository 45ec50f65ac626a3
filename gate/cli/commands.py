"""The owner's everyday commands: show, history, undo, review, stats, export and import.

Each is a thin layer over one library function (gate/memory/listing.py, history.py, undo.py, stats.py,
transfer.py): it opens the database, calls it, and prints for people or, with --json, for
machines. gate/cli/cli.py registers them beside the other commands. Rows and log lines are printed as
they are read, never gathered first, so a memory of any size answers at once.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from gate import clock, config, credentials
from gate.cli import terminal
from gate.cli.terminal import UserError
from gate.engine import store
from gate.memory import audit, history, listing, stats, transfer, undo
from gate.engine.facts import Fact

INDENT = "    "

# What these commands print of facts and of write.log is redacted (gate/credentials.py): a database or
# a log from before the credential check knew a shape may still hold a credential.


def _print_text(text: str | None) -> None:
    for line in credentials.redact(str(text or "")).splitlines() or [""]:
        print(f"{INDENT}{line}" if line.strip() else "")


def fact_json(fact: Fact) -> dict:
    return credentials.redact_json({
        "id": fact.id, "topic": fact.topic, "kind": fact.kind, "text": fact.text, "date": fact.date,
        "created": fact.created, "updated": fact.updated, "confirmed": fact.confirmed, "rev": fact.rev,
    })


def _print_fact(fact: Fact, note: str) -> None:
    print(f"[{fact.id}] {fact.kind} | {credentials.redact(fact.topic)} | {fact.date}  ({note})")
    _print_text(fact.text)


# -- show -----------------------------------------------------------------------------------


def cmd_show(args: argparse.Namespace) -> int:
    _, conn = terminal.open_existing(terminal.settings(args))
    found = listing.facts(conn, topic=args.topic, kind=args.kind, since=args.since, limit=args.limit)
    if args.json:
        terminal.json_list(map(fact_json, found), sys.stdout)
        return 0
    count = 0
    for fact in found:
        changed = "created" if fact.rev == 1 and fact.updated == fact.created else "changed"
        _print_fact(fact, f"{changed} {clock.shown(fact.updated)}, revision {fact.rev}")
        count += 1
    if not count:
        filtered = args.topic or args.kind or args.since
        print("no facts" + (" that match" if filtered else " in memory yet"))
    return 0


# -- history --------------------------------------------------------------------------------


def cmd_history(args: argparse.Namespace) -> int:
    path, conn = terminal.open_existing(terminal.settings(args))
    changes = history.changes(conn, audit.log_path(path), args.id)
    first = next(changes, None)
    if first is None:
        held = conn.execute("SELECT 1 FROM facts WHERE id = ?", (args.id,)).fetchone()
        raise UserError(
            f"write.log records no committed change to fact {args.id}"
            + (
                ", though memory holds it: the log lost lines (`memory-gate doctor` checks it)."
                if held else ", and memory holds no such fact: `memory-gate show` lists the facts."
            )
        )
    changes = itertools.chain([first], changes)
    if args.json:
        terminal.json_list((credentials.redact_json(change.to_json()) for change in changes), sys.stdout)
    else:
        last = first
        for last in changes:
            _print_change(last)
        row = conn.execute("SELECT topic, kind, text, date FROM facts WHERE id = ?", (args.id,)).fetchone()
        now = dict(zip(("topic", "kind", "text", "date"), row)) if row else None
        if now is None:
            print(f"fact {args.id} is not in memory (deleted).")
        elif now == last.after:
            print(f"fact {args.id} is in memory as its last version above.")
        else:
            print(f"fact {args.id} is in memory, but not as its last logged version: the log lost lines (`memory-gate doctor`).")
    return 0


def _print_change(change: history.Change) -> None:
    entry = credentials.redact_json(change.entry)
    before, after = entry.get("before") or {}, entry.get("after") or {}
    what = change.op
    if change.op == "update":
        what += ": " + ", ".join(key for key in ("topic", "kind", "text", "date") if before.get(key) != after.get(key))
    if entry.get("undoes"):
        write_id, _, fact = str(entry["undoes"]).rpartition(":")
        what += f"  (undoes {history.entry_name(write_id, fact)})"
    print(f"{change.name}  {clock.shown(entry.get('time'))}  {what}")
    print(f"{INDENT}by session {entry.get('session')}, turn {entry.get('turn')}")
    if entry.get("words"):
        words = " ".join(str(entry["words"]).split())
        print(f"{INDENT}why: {words[:200]}{'...' if len(words) > 200 else ''}")
    if change.op == "delete":
        print(f"{INDENT}deleted; it read:")
        _print_text(before.get("text"))
    else:
        print(f"{INDENT}{after.get('kind')} | {after.get('topic')} | {after.get('date')}")
        _print_text(after.get("text"))
    print()


# -- undo -----------------------------------------------------------------------------------


def entry_argument(text: str) -> str:
    """argparse type: a change as `memory-gate log` names it (a malformed one is a usage error)."""
    try:
        history.parse_entry(text)
    except history.BadEntry as error:
        raise argparse.ArgumentTypeError(str(error)) from error
    return text.strip().lower()


def cmd_undo(args: argparse.Namespace) -> int:
    settings = terminal.settings(args)
    path, conn = terminal.open_existing(settings)
    # Vectors are kept in step when sqlite-vec loads; without it facts_to_embed keeps search
    # honest until a connection that has it catches up.
    store.load_vectors(conn)
    try:
        done = undo.undo(
            conn, audit.log_path(path), args.entry, command=terminal.command_line(args.argv),
            endpoint=terminal.patient_endpoint(settings),
        )
    except undo.CannotUndo as error:
        raise UserError(str(error)) from error
    if args.json:
        print(_dumps(done.to_json()))
        return 0
    reverted, fact = done.reverted, done.fact
    if done.op == "delete":
        print(f"undid {reverted.name}: fact {fact}, which it inserted, is deleted.")
    elif done.op == "update":
        back = reverted.before or {}
        print(f"undid {reverted.name}: fact {fact} reads as before it again:")
        print(f"{INDENT}{back.get('kind')} | {credentials.redact(back.get('topic'))} | {back.get('date')}")
        _print_text(back.get("text"))
    else:
        print(f"undid {reverted.name}: fact {fact}, which it deleted, is back under its id.")
    print(f"logged in write.log as {done.entry}; `memory-gate undo {done.entry}` redoes the change.")
    return 0


def _dumps(data: dict) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2)


# -- review ---------------------------------------------------------------------------------

REVIEW_DAYS = 30


def cmd_review(args: argparse.Namespace) -> int:
    _, conn = terminal.open_existing(terminal.settings(args))
    before = listing.cutoff(args.days)
    found = listing.unconfirmed(conn, before, limit=args.limit)
    if args.json:
        terminal.json_list(map(fact_json, found), sys.stdout)
        return 0
    total = listing.count_unconfirmed(conn, before)
    if not total:
        print(f"every fact was kept or updated by a turn in the last {args.days} days")
        return 0
    print(
        f"{total} fact{'s' if total != 1 else ''} no turn has kept or updated in {args.days} days, "
        "the longest first; each may be stale. Ask the agent about the ones in doubt, or "
        "`memory-gate history ID` for how one came to be.\n"
    )
    for fact in found:
        _print_fact(fact, f"last confirmed {clock.shown(fact.confirmed)}")
    return 0


# -- stats ----------------------------------------------------------------------------------


def cmd_stats(args: argparse.Namespace) -> int:
    _, conn = terminal.open_existing(terminal.settings(args))
    report = stats.report(conn)
    if args.json:
        print(_dumps(report))
        return 0
    facts, turns, reads, searches = report["facts"], report["turns"], report["reads"], report["searches"]
    kinds = ", ".join(f"{kind} {count}" for kind, count in facts.items() if kind != "total")
    print(f"facts: {facts['total']} ({kinds})")
    share = f" ({turns['complied_share']}%)" if turns["complied_share"] is not None else ""
    print(f"turns gated: {turns['gated']} (the owner's prompts whose answer the gate ruled on)")
    print(f"  complied: {turns['complied']}{share}: {turns['complied_at_once']} at once, "
          f"{turns['complied_after_hold']} after the gate held the answer back")
    print(f"  released unmet: {turns['released_unmet']} (held as often as allowed, then let out)")
    print(f"not ruled on: {turns['unsettled']} (running, stopped early, or not the owner's prompt); "
          f"without hooks, not gated: {turns['without_hooks']}")
    print(f"facts read per turn that searched: {reads['per_turn']} "
          f"({reads['facts_read']} in {reads['turns_that_searched']} turns)")
    if searches["recorded"]:
        print(f"a search costs the context {searches['chars_per_search']:g} characters on average, about "
              f"{searches['tokens_per_search']} tokens (facts returned: {searches['facts_per_search']:g}, "
              f"in full: {searches['in_full_per_search']:g}; measured over {searches['recorded']} of "
              f"{searches['total']} searches)")
    else:
        print("a search's cost: no search measured yet")
    meaning = searches["meaning"]
    if meaning["with_meaning"] or meaning["words_only"]:
        print(f"search by meaning: {meaning['with_meaning']} searches had it, {meaning['words_only']} fell back to"
              f" words ({meaning['words_only_share']:g}%)")
        for item in meaning["reasons"]:
            print(f"    {item['searches']} x {item['reason']}")
    return 0


# -- export, import -------------------------------------------------------------------------


def cmd_export(args: argparse.Namespace) -> int:
    _, conn = terminal.open_existing(terminal.settings(args))
    show = terminal.Progress(sys.stderr, "export")
    if args.output in (None, "-"):
        count = transfer.export(conn, sys.stdout, progress=show)
        show.done()
        where, notes = "standard output", sys.stderr
    else:
        count = _export_to(conn, Path(args.output), show)
        where, notes = args.output, sys.stdout
    # Nothing in memory changed, so nothing goes to write.log: it records changes only.
    print(f"exported {count} fact{'s' if count != 1 else ''} to {where}; memory is unchanged "
          "(write.log records changes only)", file=notes)
    return 0


def _export_to(conn, path: Path, show: terminal.Progress) -> int:
    """Into a private file beside the target, renamed over it when complete: a crash or a full
    disk never leaves half an export under the name. A symlink is followed (the link stays a
    link); a target that is not a regular file (/dev/null, a pipe, a terminal) is written
    straight into: renaming over it would put a plain file in the place of a device, and as
    root that breaks /dev/null for the whole machine."""
    if path.is_dir():
        raise UserError(f"cannot write {path}: it is a folder; give a file name, e.g. --output {path / 'memory.jsonl'}")
    if path.exists() and not path.is_file():
        with open(path, "w", encoding="utf-8", newline="\n") as out:
            count = transfer.export(conn, out, progress=show)
        show.done()
        return count
    path = Path(os.path.realpath(path))
    folder = path.parent
    if not folder.is_dir():
        raise UserError(f"cannot write {path}: folder {folder} does not exist")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as out:
            count = transfer.export(conn, out, progress=show)
            out.flush()
            os.fsync(out.fileno())
        show.done()
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return count


def cmd_import(args: argparse.Namespace) -> int:
    settings = terminal.settings(args)
    path = Path(config.find_database(settings))
    # Import may be the first write: restoring a backup onto a new machine starts from nothing.
    conn = store.connect(path)
    out = sys.stderr if args.json else sys.stdout
    show = terminal.Progress(out, "import")
    try:
        with _lines(args.file) as source:
            result = transfer.import_facts(
                conn, source, log=audit.log_path(path), command=terminal.command_line(args.argv),
                new_ids=args.new_ids, dry_run=args.dry_run, progress=show,
            )
    except transfer.Refused as error:
        raise UserError(str(error)) from error
    show.done()
    report = result.to_json()
    if result.inserted and not args.dry_run:
        report["vectors"] = _embed(conn, settings, out)
    if args.json:
        print(_dumps(report))
        return 0
    _print_imported(result, args.dry_run, report.get("vectors"))
    return 0


class _lines:
    """The file's lines (or standard input's, for `-`), as UTF-8; a file that cannot be read is
    the user's to put right."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self) -> Iterable[str]:
        if self.name == "-":
            self.handle = sys.stdin
        else:
            try:
                self.handle = open(self.name, encoding="utf-8", newline="")
            except OSError as error:
                raise UserError(f"cannot read {self.name}: {error.strerror}") from error
        return self._read()

    def _read(self) -> Iterable[str]:
        number = 0
        try:
            for number, line in enumerate(self.handle, start=1):
                yield line
        except UnicodeDecodeError as error:
            raise UserError(f"{self.name} is not UTF-8 text (line {number + 1}: {error.reason}); export writes UTF-8") from error

    def __exit__(self, *exc) -> None:
        if self.handle is not sys.stdin:
            self.handle.close()


def _embed(conn, settings: config.Settings, out) -> dict:
    endpoint = terminal.patient_endpoint(settings)
    if endpoint is None:
        return {"note": "MEMORY_GATE_EMBED_URL is unset: search runs on words only"}
    if not store.load_vectors(conn):
        return {"note": "sqlite-vec cannot be loaded (memory-gate doctor says why): the facts wait for a vector"}
    show = terminal.Progress(out, "vectors")
    embedded, waiting = transfer.embed_waiting(conn, endpoint, progress=show)
    show.done()
    report: dict = {"embedded": embedded, "waiting": waiting}
    if waiting:
        report["note"] = (
            f"{waiting} facts wait for a vector (the endpoint at {settings.embed_url} did not answer): "
            "run `memory-gate reindex` once it does, or later writes embed them a few at a time"
        )
    return report


def _print_imported(result: transfer.Imported, dry_run: bool, vectors: dict | None) -> None:
    verb = "would import" if dry_run else "imported"
    line = f"{verb} {result.inserted} fact{'s' if result.inserted != 1 else ''}"
    if result.ids:
        low, high = result.ids
        line += f" (id {low})" if low == high else f" (ids {low} to {high})"
    print(line + (f", logged in write.log as write {result.write_id[:history.SHORT]}" if result.write_id else ""))
    if result.skipped:
        shown = ", ".join(map(str, result.skipped_lines)) + (" ..." if result.skipped > len(result.skipped_lines) else "")
        print(f"{'would skip' if dry_run else 'skipped'} {result.skipped} already in memory "
              f"(the same topic, kind and text): line{'s' if result.skipped != 1 else ''} {shown}")
    if dry_run:
        print("nothing was changed (--dry-run)")
    if vectors:
        if "embedded" in vectors:
            print(f"vectors: {vectors['embedded']} facts embedded")
        if vectors.get("note"):
            print(f"vectors: {vectors['note']}")
