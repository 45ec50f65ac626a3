"""What every command shares: the error a user can put right, the database a command opens, and
output for people and for machines (a progress bar on a terminal, plain lines elsewhere; JSON
lists written as they are read, so a large memory never sits whole in memory).
"""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TextIO

import apsw

from gate import config
from gate.engine import store
from gate.search import embeddings

# A person waits longer for a vector than a turn does (see gate/search/embeddings.py's time-outs).
PATIENT_TIMEOUT = 10.0


class UserError(Exception):
    """Something the user can put right; the message says how."""


def settings(args: argparse.Namespace) -> config.Settings:
    found = config.load()
    if args.db is not None:
        found = found.replace(database=str(Path(args.db).absolute()))
    return found


def open_existing(settings: config.Settings) -> tuple[Path, apsw.Connection]:
    path = Path(config.find_database(settings))
    if settings.database is not None and path.is_dir():
        raise UserError(f"{path} is a folder, not a database: point --db or MEMORY_GATE_DB at the file, e.g. {path / 'memory.db'}")
    if settings.database is not None and not path.exists():
        raise UserError(
            f"no database at {path}, which --db or MEMORY_GATE_DB names: check the path, or leave "
            "both out to use this project's memory (`memory-gate doctor` says where it is)"
        )
    if not path.exists():
        raise UserError(
            f"no memory yet for {settings.cwd} (looked for {path}). It is created by the first "
            "memory_write; use --db PATH or MEMORY_GATE_DB to point at another database."
        )
    try:
        return path, store.connect(path, create=False)
    except store.StoreError as error:
        raise UserError(str(error)) from error


def patient_endpoint(settings: config.Settings) -> embeddings.Endpoint | None:
    """The embeddings endpoint for a command a person waits on: seconds, not a turn's fraction."""
    if not settings.embed_url:
        return None
    return embeddings.Endpoint(
        settings.embed_url, settings.embed_model, settings.max_distance,
        write_timeout=PATIENT_TIMEOUT, quiet_after_timeout=0.0,
    )


def command_line(argv: Sequence[str]) -> str:
    """The command as typed, for write.log's "why" of a change made by hand."""
    return shlex.join(["memory-gate", *argv])


class Progress:
    """A bar on a terminal, a plain line every tenth of the way otherwise (logs, pipes)."""

    def __init__(self, stream: TextIO, label: str = "vectors", unit: str = "facts"):
        self.stream, self.label, self.unit = stream, label, unit
        self.tty, self.shown = stream.isatty(), -1

    def __call__(self, done: int, total: int) -> None:
        step = 10 * done // max(total, 1)
        if self.tty:
            filled = 30 * done // max(total, 1)
            self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}")
            self.stream.flush()
        elif step > self.shown:
            print(f"{self.label}: {done}/{total} {self.unit}", file=self.stream, flush=True)
        self.shown = step

    def done(self) -> None:
        if self.tty and self.shown >= 0:
            self.stream.write("\n")
            self.shown = -1


def json_list(items: Iterable[dict], stream: TextIO) -> int:
    """Write a JSON list an item at a time (indented as json.dumps(indent=2) would); return how
    many items."""
    count = 0
    for item in items:
        body = json.dumps(item, ensure_ascii=False, indent=2).replace("\n", "\n  ")
        stream.write(("[\n  " if count == 0 else ",\n  ") + body)
        count += 1
    stream.write("\n]\n" if count else "[]\n")
    return count
