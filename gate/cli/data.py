"""`memory-gate stats`, `export`, `import` and `reindex`: memory as a whole, its figures, and its
copies in and out.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from gate import config
from gate.cli import terminal
from gate.engine import store
from gate.memory import factlines, history, opening, stats, transfer
from gate.memory.opening import UserError
from gate.search import embeddings, sources

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gate.engine.seam import Store


def cmd_stats(args: argparse.Namespace) -> int:
    with opening.open_memory(opening.settings(args)) as opened:
        # The facts are memory's (a team's, on a team); the turns are the ledger's (on a team,
        # this member's own).
        report = stats.report(opened.ledger(), kinds=opened.store.listing.kinds())
        if args.json:
            print(terminal.json_text(report))
            return 0
        facts, turns, reads, searches = report["facts"], report["turns"], report["reads"], report["searches"]
        kinds = ", ".join(f"{kind} {count}" for kind, count in facts.items() if kind != "total")
        print(f"facts: {facts['total']} ({kinds})")
        share = f" ({turns['complied_share']}%)" if turns["complied_share"] is not None else ""
        print(f"turns gated: {turns['gated']} (the owner's prompts whose answer the gate ruled on)")
        print(
            f"  complied: {turns['complied']}{share}: {turns['complied_at_once']} at once, "
            f"{turns['complied_after_hold']} after the gate held the answer back"
        )
        print(f"  released unmet: {turns['released_unmet']} (held as often as allowed, then let out)")
        print(
            f"not ruled on: {turns['unsettled']} (running, stopped early, or not the owner's prompt); "
            f"without hooks, not gated: {turns['without_hooks']}"
        )
        print(
            f"facts read per turn that searched: {reads['per_turn']} "
            f"({reads['facts_read']} in {reads['turns_that_searched']} turns)"
        )
        if searches["recorded"]:
            print(
                f"a search costs the context {searches['chars_per_search']:g} characters on average, about "
                f"{searches['tokens_per_search']} tokens (facts returned: {searches['facts_per_search']:g}, "
                f"in full: {searches['in_full_per_search']:g}; measured over {searches['recorded']} of "
                f"{searches['total']} searches)"
            )
        else:
            print("a search's cost: no search measured yet")
        meaning = searches["meaning"]
        if meaning["with_meaning"] or meaning["words_only"]:
            print(
                f"search by meaning: {meaning['with_meaning']} searches had it, {meaning['words_only']} fell back to"
                f" words ({meaning['words_only_share']:g}%)"
            )
            for item in meaning["reasons"]:
                print(f"    {item['searches']} x {item['reason']}")
        return 0


def cmd_export(args: argparse.Namespace) -> int:
    with opening.open_memory(opening.settings(args)) as opened:
        show = terminal.Progress(sys.stderr, "export")

        def export(out, progress) -> int:
            return transfer.export_store(opened.store, out, progress=progress)

        if args.output in (None, "-"):
            count = export(sys.stdout, show)
            show.done()
            where, notes = "standard output", sys.stderr
        else:
            count = _export_to(export, Path(args.output), show)
            where, notes = args.output, sys.stdout
        # Nothing in memory changed, so nothing goes to write.log: it records changes only.
        print(
            f"exported {count} fact{'s' if count != 1 else ''} to {where}; memory is unchanged "
            "(write.log records changes only)",
            file=notes,
        )
        return 0


def _export_to(export, path: Path, show: terminal.Progress) -> int:
    """Into a private file beside the target, renamed over it when complete: a crash or a full
    disk never leaves half an export under the name. A symlink is followed (the link stays a
    link); a target that is not a regular file (/dev/null, a pipe, a terminal) is written
    straight into: renaming over it would put a plain file in the place of a device, and as
    root that breaks /dev/null for the whole machine."""
    if path.is_dir():
        raise UserError(f"cannot write {path}: it is a folder; give a file name, e.g. --output {path / 'memory.jsonl'}")
    if path.exists() and not path.is_file():
        with open(path, "w", encoding="utf-8", newline="\n") as out:
            count = export(out, show)
        show.done()
        return count
    path = Path(os.path.realpath(path))
    folder = path.parent
    if not folder.is_dir():
        raise UserError(f"cannot write {path}: folder {folder} does not exist")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as out:
            count = export(out, show)
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
    settings = opening.settings(args)
    with opening.open_memory(settings, create=True) as opened:
        return _import(args, settings, opened.ledger(), opened.store)


def _import(args: argparse.Namespace, settings: config.Settings, conn, memory: Store) -> int:
    out = sys.stderr if args.json else sys.stdout
    show = terminal.Progress(out, "import")
    try:
        with _lines(args.file) as source:
            result = transfer.import_into(
                conn,
                source,
                memory,
                command=terminal.command_line(args.argv),
                new_ids=args.new_ids,
                dry_run=args.dry_run,
                progress=show,
            )
    except factlines.Refused as error:
        # Its problems one a line (each one line already), and for --json the same as JSON.
        if args.json:
            print(terminal.json_text({"refused": True, "imported": 0, "problems": error.problems, "more": error.more}))
        print(f"memory-gate: {error}", file=sys.stderr)
        return 1
    show.done()
    report = result.to_json()
    if result.inserted and not args.dry_run and memory.index.embeds_waiting:
        report["vectors"] = _embed(memory, settings, out)
    if args.json:
        print(terminal.json_text(report))
        return 0
    _print_imported(result, args.dry_run, report.get("vectors"), memory.record.where)
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
            # number is read by the except below: the line that did not decode follows the last one read.
            for number, line in enumerate(factlines.lines_of(self.handle), start=1):  # noqa: B007
                yield line
        except UnicodeDecodeError as error:
            raise UserError(
                f"{self.name} is not UTF-8 text (line {number + 1}: {error.reason}); export writes UTF-8"
            ) from error

    def __exit__(self, *exc) -> None:
        if self.handle is not sys.stdin:
            self.handle.close()


def _embed(memory: Store, settings: config.Settings, out) -> dict:
    endpoint = opening.patient_endpoint(settings)
    if endpoint is None:
        return {"note": sources.why_words_only(settings) or "search runs on words only"}
    if not memory.index.prepare():
        return {"note": "sqlite-vec cannot be loaded (memory-gate doctor says why): the facts wait for a vector"}
    show = terminal.Progress(out, "vectors")
    embedded, waiting = memory.index.embed_waiting(endpoint, progress=show)
    show.done()
    report: dict = {"embedded": embedded, "waiting": waiting}
    if waiting:
        report["note"] = (
            f"{waiting} facts wait for a vector ({endpoint.model} at {endpoint.url} did not answer): "
            "run `memory-gate reindex` once it does, or later writes embed them a few at a time"
        )
    return report


def _print_imported(result: transfer.Imported, dry_run: bool, vectors: dict | None, where: str) -> None:
    verb = "would import" if dry_run else "imported"
    line = f"{verb} {result.inserted} fact{'s' if result.inserted != 1 else ''}"
    if result.ids:
        low, high = result.ids
        line += f" (id {low})" if low == high else f" (ids {low} to {high})"
    print(line + (f", logged in {where} as write {result.write_id[: history.SHORT]}" if result.write_id else ""))
    if result.skipped:
        shown = ", ".join(map(str, result.skipped_lines)) + (
            " ..." if result.skipped > len(result.skipped_lines) else ""
        )
        print(
            f"{'would skip' if dry_run else 'skipped'} {result.skipped} already in memory "
            f"(the same topic, kind and text): line{'s' if result.skipped != 1 else ''} {shown}"
        )
    if dry_run:
        print("nothing was changed (--dry-run)")
    if vectors:
        if "embedded" in vectors:
            print(f"vectors: {vectors['embedded']} facts embedded")
        if vectors.get("note"):
            print(f"vectors: {vectors['note']}")


def cmd_reindex(args: argparse.Namespace) -> int:
    settings = opening.settings(args)
    with opening.open_memory(settings) as opened:
        memory = opened.store
        count = memory.index.rebuild_words()
        print(f"word index: rebuilt from {count} facts" + (" of the team's project" if memory.shared else ""))
        if sources.source(settings) is None:
            print(f"vectors: nothing to embed: {sources.why_words_only(settings)}")
            return 0
        whose = "the team's vectors" if memory.shared else "memory's vectors"
        return _rebuilt(settings, count, memory.index.rebuild_vectors, whose)


def _rebuilt(settings, count: int, rebuild, whose: str) -> int:
    """Run `rebuild(endpoint, progress)` (the local index's or a team's) and report it."""
    # Patient, unlike a turn: a slow batch is waited for, not skipped.
    endpoint = sources.source(settings).patient()
    show = terminal.Progress(sys.stdout)
    try:
        rebuilt = rebuild(endpoint, show)
    except store.StoreError as error:  # sqlite-vec missing: memory's vectors cannot be kept
        raise UserError(str(error)) from error
    except embeddings.VectorError as error:
        raise UserError(
            f"{error}; {whose} are left as they were. "
            + (
                f"Start the endpoint at {endpoint.url} (MEMORY_GATE_EMBED_URL) and run reindex again."
                if isinstance(endpoint, embeddings.Endpoint)
                else "Reinstall with scripts/install and run reindex again."
            )
        ) from error
    show.done()
    made = rebuilt.space
    where = f" by {made.model} ({made.dimension} dimensions)" if made else ""
    print(f"vectors: {rebuilt.embedded} of {count} facts embedded{where}")
    if rebuilt.failed:
        listed = ", ".join(str(fact) for fact in rebuilt.failed[:20]) + (" ..." if len(rebuilt.failed) > 20 else "")
        print(
            f"memory-gate: {len(rebuilt.failed)} facts could not be embedded ({listed}); they keep "
            "waiting for a vector: run reindex again, or the next writes embed them",
            file=sys.stderr,
        )
        return 1
    return 0
