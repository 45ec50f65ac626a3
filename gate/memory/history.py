"""A fact's history, read from write.log: every committed change to it, oldest first.

A change is named by an *entry*: the first 8 characters of its write's id, a colon, and the fact's
id (`3b8747aa:12`), as `memory-gate log` and `history` print it. A write changes a fact at most
once, so a write and a fact name one change; and the name holds whatever happens to the file
around it (lines before it cut, logs joined), where a line number would silently point at another
change. A longer prefix of the write id, or all of it, names the same change.

Only committed changes count: a line whose write id the `writes` table does not know never
committed (gate.memory.audit), and a torn line is no change at all.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from gate.memory import audit
from gate.memory.changeset import FIELDS

SHORT = 8
_ENTRY = re.compile(r"([0-9a-f]{6,32}):([1-9][0-9]{0,18})")


def entry_name(write_id: str, fact_id: int | str) -> str:
    return f"{str(write_id)[:SHORT]}:{fact_id}"


class BadEntry(ValueError):
    """Not an entry name; the message shows the form."""


def parse_entry(text: str) -> tuple[str, int]:
    """(write id prefix, fact id) of an entry name such as `3b8747aa:12`."""
    found = _ENTRY.fullmatch(text.strip().lower())
    if not found:
        raise BadEntry(f"{text!r} is not a change: give WRITE:FACT as `memory-gate log` prints it, e.g. 3b8747aa:12")
    return found.group(1), int(found.group(2))


@dataclass(frozen=True)
class Change:
    """One committed change to a fact, as write.log recorded it."""

    line: int
    entry: dict[str, Any]

    @property
    def name(self) -> str:
        return entry_name(self.entry["write"], self.entry["id"])

    @property
    def op(self) -> str:
        return self.entry.get("op", "?")

    @property
    def before(self) -> dict | None:
        return self.entry.get("before")

    @property
    def after(self) -> dict | None:
        return self.entry.get("after")

    def changed(self) -> list[str]:
        """The fields this change gave a new value, in the order topic, kind, text, date."""
        before, after = self.before or {}, self.after or {}
        return [key for key in FIELDS if before.get(key) != after.get(key)]

    def undid(self) -> str | None:
        """The entry name of the change this one undid (`memory-gate undo`), or None."""
        undoes = self.entry.get("undoes")
        if not undoes:
            return None
        write_id, _, fact = str(undoes).rpartition(":")
        return entry_name(write_id, fact)

    def to_json(self) -> dict[str, Any]:
        entry = self.entry
        data = {
            "entry": self.name,
            "line": self.line,
            "time": entry.get("time"),
            "op": self.op,
            "write": entry.get("write"),
            "session": entry.get("session"),
            "turn": entry.get("turn"),
            "why": entry.get("words"),
        }
        for key in ("before", "after", "bookkeeping", "undoes"):
            if key in entry:
                data[key] = entry[key]
        return data


class Committed:
    """Whether a write id committed, asked of the database one write at a time rather than by
    loading every write id: a write's lines sit together, so the last answer is the one kept."""

    def __init__(self, conn: apsw.Connection):
        self.conn = conn
        self.last: tuple[str, bool] | None = None

    def __call__(self, write_id: Any) -> bool:
        if not isinstance(write_id, str):
            return False
        if self.last is None or self.last[0] != write_id:
            self.last = (write_id, audit.is_committed(self.conn, write_id))
        return self.last[1]


def changes(conn: apsw.Connection, log: Path, fact_id: int) -> Iterator[Change]:
    """Every committed change to the fact, oldest first, streamed from the log."""
    committed = Committed(conn)
    # Only lines naming this id are parsed, whatever the spacing a hand-edited log has.
    for line in audit.lines(log, holding=re.compile(rf'"id"\s*:\s*{int(fact_id)}(?![0-9])')):
        entry = line.entry
        if entry is None or entry.get("id") != fact_id or not committed(entry.get("write")):
            continue
        yield Change(line.number, entry)


@dataclass
class Life:
    """What the log says a fact was after its last change: the fields, when it was created, and
    its revision (sessions compare revisions to tell a changed fact from one they were shown)."""

    fields: dict[str, str] | None = None
    created: str | None = None
    rev: int = 0


def replay(history: list[Change]) -> Life:
    """Follow a fact's changes: an insert starts it at revision 1 (or at the bookkeeping it
    carried, for a fact imported or restored), each update adds one, a delete ends it."""
    life = Life()
    for change in history:
        if change.op == "insert":
            kept = change.entry.get("bookkeeping") or {}
            life.fields = change.after
            life.created = kept.get("created", change.entry.get("time"))
            life.rev = int(kept.get("rev", 1))
        elif change.op == "update":
            life.fields = change.after
            life.rev += 1
        elif change.op == "delete":
            life.fields = None
    return life
