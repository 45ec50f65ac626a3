"""What every command shares: the error a user can put right, the database a command opens, and
output for people and for machines (a progress bar on a terminal, plain lines elsewhere; JSON
lists written as they are read, so a large memory never sits whole in memory).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Sequence
from typing import TextIO

from gate import credentials
from gate.engine.facts import Fact


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


def json_text(data: dict) -> str:
    """One JSON document for --json, as people can still read it."""
    return json.dumps(data, ensure_ascii=False, indent=2)


# -- facts for people -------------------------------------------------------------------------

INDENT = "    "


def print_text(text: str | None) -> None:
    for line in credentials.redact(str(text or "")).splitlines() or [""]:
        print(f"{INDENT}{line}" if line.strip() else "")


def fact_json(fact: Fact) -> dict:
    return credentials.redact_json(
        {
            "id": fact.id,
            "topic": fact.topic,
            "kind": fact.kind,
            "text": fact.text,
            "date": fact.date,
            "created": fact.created,
            "updated": fact.updated,
            "confirmed": fact.confirmed,
            "rev": fact.rev,
        }
    )


def print_fact(fact: Fact, note: str) -> None:
    print(f"[{fact.id}] {fact.kind} | {credentials.redact(fact.topic)} | {fact.date}  ({note})")
    print_text(fact.text)
