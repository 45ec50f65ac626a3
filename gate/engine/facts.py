"""A fact as the facts table holds it, and reading facts by id.

The one shape every reader shares (the tools, the listings, the command line, the viewer), so
that none of them imports the search to borrow a dataclass.
"""

from __future__ import annotations

from collections.abc import Sequence
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
