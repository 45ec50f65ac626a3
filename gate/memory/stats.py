"""What memory holds and what it costs: the figures of `memory-gate stats`.

The turn figures come from the ledger. A turn is *gated* when a hook opened it for an owner's
prompt and the gate ruled on its answer (`turns.outcome` is set). It *complied* when the answer
went out with memory kept up to date ('met'): either at once, never held, or after the gate held
it back and the model did what was missing; it was *released unmet* when the gate let it out after
holding it as often as it may ('released'). Hook turns with no outcome are *unsettled*: still
running, stopped before the Stop hook, or a prompt Claude Code made up itself (a subagent's
notification), which is not gated. Turns of a client without hooks are counted apart: nothing
holds their answers. Turns of the hand sessions (`memory-gate undo`, `import`, the viewer's edits) are left out.

What a search costs the context is recorded by each search (gate.memory.searches): the
characters of the answer the model reads. Tokens are estimated at CHARS_PER_TOKEN
characters each, about right for English prose and JSON; code, and text in other scripts, take
more tokens per character, so read the estimate as a floor.
"""

from __future__ import annotations

import apsw

from gate.memory.changeset import HAND_SESSIONS
from gate.memory.checking import KINDS

CHARS_PER_TOKEN = 4


def meaning_report(conn: apsw.Connection, *, since: str = "") -> dict:
    """How the searches recorded since `since` (an ISO time, '' for all) used meaning: how many
    had it, how many fell back to words and the most frequent reasons, newest reason first."""
    used, fell = conn.execute(
        "SELECT count(CASE WHEN meaning = 'used' THEN 1 END),"
        " count(CASE WHEN meaning IS NOT NULL AND meaning != 'used' THEN 1 END)"
        " FROM searches WHERE at >= ?",
        (since,),
    ).get
    reasons = [
        {"reason": reason, "searches": count}
        for reason, count, _ in conn.execute(
            "SELECT meaning, count(*), max(at) AS latest FROM searches"
            " WHERE at >= ? AND meaning IS NOT NULL AND meaning != 'used'"
            " GROUP BY meaning ORDER BY count(*) DESC, latest DESC LIMIT 3",
            (since,),
        )
    ]
    return {"with_meaning": used, "words_only": fell, "words_only_share": _share(fell, used + fell), "reasons": reasons}


def tokens(chars: float) -> int:
    return round(chars / CHARS_PER_TOKEN)


def report(conn: apsw.Connection, *, kinds: dict[str, int] | None = None) -> dict:
    """Every figure, as plain values (counts, and averages rounded to one decimal). `kinds`:
    the facts by kind when they are not `conn`'s (a team's), the turns being `conn`'s."""
    if kinds is None:
        kinds = dict(conn.execute("SELECT kind, count(*) FROM facts GROUP BY kind"))
    facts = {kind: kinds.get(kind, 0) for kind in KINDS}
    facts["total"] = sum(facts.values())

    hook, at_once, after_hold, released, unsettled, without_hooks = conn.execute(
        "SELECT count(prompt_id),"
        " count(CASE WHEN outcome = 'met' AND holds = 0 THEN 1 END),"
        " count(CASE WHEN outcome = 'met' AND holds > 0 THEN 1 END),"
        " count(CASE WHEN outcome = 'released' THEN 1 END),"
        " count(CASE WHEN prompt_id IS NOT NULL AND outcome IS NULL THEN 1 END),"
        " count(CASE WHEN prompt_id IS NULL THEN 1 END)"
        " FROM turns WHERE session NOT IN (?, ?)",
        HAND_SESSIONS,
    ).get
    gated = at_once + after_hold + released
    turns = {
        "gated": gated,
        "complied": at_once + after_hold,
        "complied_at_once": at_once,
        "complied_after_hold": after_hold,
        "released_unmet": released,
        "complied_share": _share(at_once + after_hold, gated),
        "unsettled": unsettled,
        "without_hooks": without_hooks,
    }

    searched, read = conn.execute(
        "SELECT count(*), coalesce(sum((SELECT count(*) FROM reads WHERE reads.turn = turns.id)), 0)"
        " FROM turns WHERE searched > 0 AND session NOT IN (?, ?)",
        HAND_SESSIONS,
    ).get
    reads = {"turns_that_searched": searched, "facts_read": read, "per_turn": _mean(read, searched)}

    total = conn.execute("SELECT coalesce(sum(searched), 0) FROM turns WHERE session NOT IN (?, ?)", HAND_SESSIONS).get
    count, facts_sum, full_sum, chars_sum = conn.execute(
        "SELECT count(*), coalesce(sum(facts), 0), coalesce(sum(full), 0), coalesce(sum(chars), 0) FROM searches"
    ).get
    per_search = chars_sum / count if count else 0.0
    searches = {
        # Searches made before their cost was recorded (older databases) count in `total` only.
        "total": total,
        "recorded": count,
        "facts_per_search": _mean(facts_sum, count),
        "in_full_per_search": _mean(full_sum, count),
        "chars_per_search": round(per_search, 1),
        "tokens_per_search": tokens(per_search),
    }
    searches["meaning"] = meaning_report(conn)
    return {"facts": facts, "turns": turns, "reads": reads, "searches": searches}


def _mean(total: float, count: int) -> float:
    return round(total / count, 1) if count else 0.0


def _share(part: int, whole: int) -> float | None:
    """A percentage, or None when there is nothing to divide."""
    return round(100 * part / whole, 1) if whole else None
