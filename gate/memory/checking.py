"""The checks every fact passes, whoever writes it: memory_write (gate.memory.write), `memory-gate
import` (gate.memory.factlines), an undo, an edit on the memory page, auto memory taken in. A
fact's topic, kind, text and date, each trimmed, or the problem with it and its mend; and the
short rendering of a bad value a refusal quotes, credentials redacted. Apart from memory_write
because all of these paths share it, and none of them needs the write's parsing or applying.
"""

from __future__ import annotations

import json
import unicodedata
from datetime import date as Date
from typing import Any

from gate import credentials
from gate.engine.facts import FIELDS

KINDS = ("state", "event", "decision", "trap")
KIND_MEANING = {
    "state": "how something is now",
    "event": "something that happened, with its date",
    "decision": "a choice and its reason",
    "trap": "a pitfall to avoid",
}
MAX_TEXT = 600
# The days a fact's date may name (and import's times): past these it is a slip (9999-12-31),
# and it would sort before or after every real fact and make review's ages meaningless.
FIRST_DAY, LAST_DAY = "1900-01-01", "2099-12-31"
MAX_TOPIC = 100


def hint(key: str) -> str:
    return {
        "topic": ' (a short subject, e.g. "deploy")',
        "kind": " (" + ", ".join(KINDS) + ")",
        "text": f" (the fact itself, one subject, at most {MAX_TEXT} characters)",
    }.get(key, "")


def check_fields(fields: dict) -> tuple[dict[str, str], list[str]]:
    """A whole fact's topic, kind, text and date, each through check_field (a missing one is
    empty): the values, trimmed, and every problem with its mend (a field with one is left out)."""
    checked: dict[str, str] = {}
    problems: list[str] = []
    for key in FIELDS:
        value, problem = check_field(key, fields.get(key, ""))
        if problem:
            problems.append(problem)
        if value is not None:
            checked[key] = value
    return checked, problems


def check_field(key: str, value: Any) -> tuple[str | None, str | None]:
    """The value of topic, kind, text or date, trimmed, or the problem with it and its mend: the
    checks every fact passes, by memory_write or `memory-gate import`."""
    if not isinstance(value, str):
        return None, f"{key} must be a string (got {brief(value)})."
    bad = _bad_character(value)
    if bad:
        return None, f"{key} holds {bad}: remove it."
    value = value.strip()
    if key == "kind":
        if value not in KINDS:
            choices = "; ".join(f"{kind} ({meaning})" for kind, meaning in KIND_MEANING.items())
            return None, f"kind {brief(value)} is not one of the four: {choices}."
        return value, None
    if key == "date":
        try:
            Date.fromisoformat(value)
            if len(value) != 10:
                raise ValueError
        except ValueError:
            return None, f"date {brief(value)} is not a day: write YYYY-MM-DD, e.g. {Date.today().isoformat()}."
        if not FIRST_DAY <= value <= LAST_DAY:
            return (
                None,
                f"date {value} is outside {FIRST_DAY} to {LAST_DAY}, the days memory takes: write the day the fact holds from, e.g. {Date.today().isoformat()}.",
            )
        return value, None
    if not value:
        return None, f"{key} is empty: {hint(key).strip(' ()')}."
    if key == "topic":
        if "\n" in value or "\r" in value:
            return None, "topic must be one line: put details in the text."
        if len(value) > MAX_TOPIC:
            return None, f"topic is {len(value)} characters; at most {MAX_TOPIC} fit: name the subject in a few words."
    if key == "text" and len(value) > MAX_TEXT:
        return None, (
            f"text is {len(value)} characters; at most {MAX_TEXT} fit. One subject per fact: "
            "split it into several facts, or say it shorter."
        )
    found = credentials.find(value)
    if found:
        # The secret itself is never repeated: the refusal is shown and logged too.
        return None, (
            f"{key} holds what looks like {found}. Memory is plain text, kept in write.log and "
            "shown to every later session: never store a credential. Say where it is kept "
            'instead (e.g. "the deploy token is in the team vault").'
        )
    return value, None


def _bad_character(value: str) -> str | None:
    for ch in value:
        code = ord(ch)
        if 0xD800 <= code <= 0xDFFF:
            return f"an invalid character (lone surrogate U+{code:04X})"
        if ch not in "\n\t" and unicodedata.category(ch) == "Cc":
            return f"a control character (U+{code:04X})"
    return None


def brief(value: Any) -> str:
    """A short rendering of what the agent sent, for a refusal; whatever it is. Credentials are
    redacted before it is cut, so no part of one is shown."""
    try:
        shown = credentials.redact_echo(json.dumps(value, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError):
        shown = f"a {type(value).__name__}" if isinstance(value, (list, dict)) else type(value).__name__
    return shown if len(shown) <= 40 else shown[:37] + "..."


def is_id(value: Any) -> bool:
    """A fact id: a positive integer SQLite can hold (not a bool, not a float)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 63
