"""What each memory_search leaves in the `searches` table, in the search's own transaction: what it
looked for, what it returned, what that cost the context, and whether meaning took part.

`memory-gate stats` and the viewer read these rows back (gate.memory.stats).
"""

from __future__ import annotations

import json

import apsw

from gate import credentials

# A search's terms are a few keywords; a pasted page is kept only this far.
TERMS_KEPT = 300


def answer_chars(structured: dict) -> int:
    """The size of a tool answer as the model reads it: its structured JSON, compact."""
    return len(json.dumps(structured, ensure_ascii=False, separators=(",", ":")))


def kept_terms(terms: str) -> str | None:
    """What a search's record keeps of its terms: none that look like a credential
    (gate.credentials), and no more than TERMS_KEPT characters. Before the transaction: the check
    costs more than the insert, and the write lock is everyone's."""
    if credentials.find(terms):
        return None
    # Whatever the agent typed, lone surrogates included: SQLite stores UTF-8 only.
    return terms[:TERMS_KEPT].encode("utf-8", "replace").decode("utf-8")


def record_search(
    conn: apsw.Connection,
    turn_id: int,
    *,
    facts: int,
    full: int,
    chars: int,
    at: str,
    terms: str | None = None,
    meaning: str | None = None,
) -> None:
    """Inside the search's transaction: what it looked for (`kept_terms`), what it returned, what
    that cost, and whether meaning took part ('used', the reason it did not, or None with no
    endpoint configured)."""
    conn.execute(
        "INSERT INTO searches (turn, at, facts, full, chars, terms, meaning) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (turn_id, at, facts, full, chars, terms, meaning),
    )
