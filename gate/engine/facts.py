"""A fact as the facts table holds it, and reading facts by id.

The one shape every reader shares (the tools, the listings, the command line, the viewer), so
that none of them imports the search to borrow a dataclass.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import apsw


@dataclass(frozen=True)
class Fact:
    id: int
    topic: str
    kind: str
    text: str
    date: str
    rev: int
    created: str
    updated: str
    confirmed: str


FACT_COLUMNS = "id, topic, kind, text, date, rev, created, updated, confirmed"


def load_facts(conn: apsw.Connection, ids: Sequence[int]) -> dict[int, Fact]:
    """The facts with these ids that exist, by id."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = conn.execute(f"SELECT {FACT_COLUMNS} FROM facts WHERE id IN ({marks})", tuple(ids))
    return {row[0]: Fact(*row) for row in rows}


# -- changing facts (gate.memory.changeset is the one caller: it logs each change) -----------

FIELDS = ("topic", "kind", "text", "date")


class LocalFacts:
    """The facts of a local SQLite memory, as a change set changes them: the engine's side of
    the seam gate.engine.teamfacts's TeamFacts also stands on. Inside the caller's write
    transaction; the record of each change (write.log) is the change set's."""

    def __init__(self, conn: apsw.Connection):
        self.conn = conn

    def transaction(self):
        """The engine's own transaction around a write's changes: none here, for the local
        memory's changes are in the caller's write transaction already."""
        import contextlib

        return contextlib.nullcontext()

    def existing(self, ids: Sequence[int]) -> set[int]:
        if not ids:
            return set()
        marks = ",".join("?" * len(ids))
        return {row[0] for row in self.conn.execute(f"SELECT id FROM facts WHERE id IN ({marks})", tuple(ids))}

    def current(self, ids: Sequence[int]) -> dict[int, tuple[int, str, str, str, str | None]]:
        """(rev, topic, text, updated, who changed it last: unknown locally) of each fact that exists."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.conn.execute(f"SELECT id, rev, topic, text, updated FROM facts WHERE id IN ({marks})", tuple(ids))
        return {fact: (rev, topic, text, updated, None) for fact, rev, topic, text, updated in rows}

    def snapshot(self, fact_id: int) -> dict[str, str] | None:
        row = self.conn.execute("SELECT topic, kind, text, date FROM facts WHERE id = ?", (fact_id,)).fetchone()
        return dict(zip(FIELDS, row)) if row else None

    def insert(
        self, after: dict[str, str], *, stamp: str, fact_id: int | None = None, bookkeeping: dict | None = None
    ) -> int:
        kept = bookkeeping or {}
        return self.conn.execute(
            "INSERT INTO facts (id, topic, kind, text, date, created, updated, confirmed, rev)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (
                fact_id,
                after["topic"],
                after["kind"],
                after["text"],
                after["date"],
                kept.get("created", stamp),
                kept.get("updated", stamp),
                kept.get("confirmed", stamp),
                kept.get("rev", 1),
            ),
        ).get

    def update(self, fact_id: int, before: dict[str, str], after: dict[str, str], *, stamp: str) -> None:
        self.conn.execute(
            "UPDATE facts SET topic = ?, kind = ?, text = ?, date = ?, updated = ?,"
            " confirmed = ?, rev = rev + 1 WHERE id = ?",
            (after["topic"], after["kind"], after["text"], after["date"], stamp, stamp, fact_id),
        )

    def delete(self, fact_id: int, before: dict[str, str], *, stamp: str) -> None:
        self.conn.execute("DELETE FROM facts WHERE id = ?", (fact_id,))

    def confirm(self, fact_id: int, *, stamp: str) -> None:
        self.conn.execute("UPDATE facts SET confirmed = ? WHERE id = ?", (stamp, fact_id))

    def record_lines(self, entries: Sequence[dict]) -> None:
        """Nothing: a local memory's record is write.log, which the change set appends itself
        (gate.memory.audit), not a table of the memory's."""

    def revisions(self, ids: Iterable[int]) -> None:
        """None: the ledger reads the revisions of the facts a turn read from its own file, which
        holds them (gate.memory.ledger.record_write)."""
        return None
