"""What injected-context remembers per session, in the project's memory database.

Three things (schema.sql, version 3): the owner's last requests (the classifier's context, and
how the two deliveries recognise a prompt the other has served), the rules a session has been
given (injected once; forgotten at compaction and /clear), and a cache of description vectors.

Library functions over an open connection; callers hold the transactions. Marking rules given
uses INSERT OR IGNORE and reports which rows it added, so two hooks racing on one prompt never
both inject a rule.
"""

from __future__ import annotations

import time

from gate import clock, credentials

# The newest requests kept per session: the current one and the two before it.
KEPT_REQUESTS = 3
# What a request may weigh in the database and before a classifier; a pasted log is not a request.
MAX_PROMPT = 2000
# A settings hook that finds this prompt served by the mod less than this long ago stays out.
# Claude Code runs the settings hooks inside the mod's prompt.submit, within a second; the wide
# margin covers a slow classifier in the mod.
SAME_PROMPT_SECONDS = 120.0


def claim(
    conn, session: str, prompt: str, *, source: str, prompt_id: str | None = None, now: float | None = None
) -> list[str] | None:
    """Record that `source` ('mod' or 'hook') serves this prompt, and return the session's two
    previous requests (oldest first); None when the prompt is already served: by the mod just
    before (for a settings hook), or by another settings hook of the same prompt_id. Call it
    inside a write transaction."""
    now = time.time() if now is None else now
    prompt = credentials.redact(prompt)[:MAX_PROMPT]  # redacted whole, so no cut hides half a key
    last = conn.execute(
        "SELECT id, prompt_id, source, prompt, at FROM context_requests WHERE session = ? ORDER BY id DESC LIMIT 1",
        (session,),
    ).fetchone()
    if source == "hook" and last is not None:
        row, last_prompt_id, last_source, last_prompt, at = last
        if prompt_id is not None and last_prompt_id == prompt_id:
            return None
        if last_source == "mod" and last_prompt_id is None and last_prompt == prompt and now - at < SAME_PROMPT_SECONDS:
            conn.execute("UPDATE context_requests SET prompt_id = ? WHERE id = ?", (prompt_id or "", row))
            return None
    previous = [
        text
        for (text,) in conn.execute(
            "SELECT prompt FROM context_requests WHERE session = ? ORDER BY id DESC LIMIT 2", (session,)
        )
    ][::-1]
    conn.execute(
        "INSERT INTO context_requests (session, prompt_id, source, prompt, at) VALUES (?, ?, ?, ?, ?)",
        (session, prompt_id, source, prompt, now),
    )
    conn.execute(
        "DELETE FROM context_requests WHERE session = ? AND id NOT IN "
        "(SELECT id FROM context_requests WHERE session = ? ORDER BY id DESC LIMIT ?)",
        (session, session, KEPT_REQUESTS),
    )
    return previous


def latest(conn, session: str) -> tuple[str, list[str]]:
    """The session's latest request and the two before it (oldest first); ("", []) when none."""
    rows = [
        text
        for (text,) in conn.execute(
            "SELECT prompt FROM context_requests WHERE session = ? ORDER BY id DESC LIMIT 3", (session,)
        )
    ][::-1]
    return (rows[-1], rows[:-1]) if rows else ("", [])


def given(conn, session: str) -> set[str]:
    return {rule for (rule,) in conn.execute("SELECT rule FROM context_given WHERE session = ?", (session,))}


def give(conn, session: str, rules: list[str]) -> list[str]:
    """Mark `rules` given to the session; return those that were not already (in order)."""
    stamp = clock.now()
    added = []
    for rule in rules:
        conn.execute("INSERT OR IGNORE INTO context_given (session, rule, at) VALUES (?, ?, ?)", (session, rule, stamp))
        if conn.changes():
            added.append(rule)
    return added


def forget(conn, session: str, *, requests: bool = False) -> None:
    """The session's context was compacted (its rules may be injected again) or cleared (its
    earlier requests are gone from the conversation too)."""
    conn.execute("DELETE FROM context_given WHERE session = ?", (session,))
    if requests:
        conn.execute("DELETE FROM context_requests WHERE session = ?", (session,))


# -- description vectors ----------------------------------------------------------------------


def vectors(conn, model: str, texts: list[str]) -> dict[str, tuple[float, ...]]:
    """The cached vectors of `texts` made by `model`, by text."""
    import struct

    found = {}
    for text in dict.fromkeys(texts):
        row = conn.execute("SELECT vector FROM context_vectors WHERE model = ? AND text = ?", (model, text)).fetchone()
        if row is not None and row[0] and len(row[0]) % 4 == 0:
            found[text] = struct.unpack(f"<{len(row[0]) // 4}f", row[0])
    return found


def keep_vectors(conn, model: str, made: dict[str, tuple[float, ...]]) -> None:
    import struct

    for text, vector in made.items():
        conn.execute(
            "INSERT OR REPLACE INTO context_vectors (model, text, vector) VALUES (?, ?, ?)",
            (model, text, struct.pack(f"<{len(vector)}f", *vector)),
        )
