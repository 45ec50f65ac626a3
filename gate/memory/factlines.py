"""One fact as one line of JSON, the file `memory-gate export` writes and `memory-gate import`
reads: its columns (COLUMNS), and import's check of each line, before anything is applied. A line
holds one fact as memory_write would take it (the same checks: gate.memory.checking), its id and
rev within MAX_ID, its times UTC stamps; a line may leave out what a person writing it by hand
would not know (id, date, created, updated, confirmed, rev). A bad line is named with its mend
in Refused, which refuses the whole file. Apart from gate.memory.transfer, which moves the facts
out and in: this reads nothing but the text, and needs no database.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, TextIO

from gate import clock, credentials
from gate.memory import checking

COLUMNS = ("id", "topic", "kind", "text", "date", "created", "updated", "confirmed", "rev")
# A line longer than this holds no fact memory_write would take (600 characters of text, escaped).
MAX_LINE = 20_000
# The largest id or rev import takes: far past any project's memory, and far enough below
# SQLite's last integer (2**63 - 1) that a fact always has a next id and a next rev (an imported
# 2**63 - 1 left AUTOINCREMENT none: every later write failed).
MAX_ID = 2**31 - 1
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")


class Refused(Exception):
    """The file was not imported, nothing applied; `problems` name lines and mends."""

    def __init__(self, problems: list[str], more: int = 0):
        # Problems quote the file's keys and values: redacted, as memory_write's refusals are.
        # One line each, whatever the file held (a key may hold a line break).
        self.problems = [credentials.redact(problem).replace("\r", "\\r").replace("\n", "\\n") for problem in problems]
        self.more = more
        lines = ["import refused, nothing was changed. Fix the file and run it again:"]
        lines += [f"- {problem}" for problem in self.problems]
        if more:
            lines.append(f"- and {more} more problem(s) like these")
        super().__init__("\n".join(lines))


def check_line(raw: str, today: str) -> tuple[dict[str, Any] | None, list[str]]:
    """One line of the file: the fact it holds (absent columns None, date filled in), or its
    problems, each with its mend."""
    if len(raw) > MAX_LINE:
        return None, [
            f"{len(raw)} characters, more than any fact: one fact per line, its text at most {checking.MAX_TEXT} characters."
        ]
    try:
        data = json.loads(raw)
    except ValueError as error:
        return None, [f"not JSON ({error}): each line holds one fact as a JSON object."]
    if not isinstance(data, dict):
        return None, [
            f"{checking.brief(data)} is not a fact: give an object such as "
            '{"topic": "deploy", "kind": "state", "text": "..."}.'
        ]
    problems = []
    unknown = [key for key in data if key not in COLUMNS]
    if unknown:
        problems.append(
            "remove " + ", ".join(f'"{key}"' for key in unknown) + f": a fact line holds {', '.join(COLUMNS)}."
        )
    fact: dict[str, Any] = dict.fromkeys(COLUMNS)
    if data.get("id") is not None:
        if not checking.is_id(data["id"]):
            problems.append(
                f"id is {checking.brief(data['id'])}: give a positive integer, or leave id out for a new one."
            )
        elif data["id"] > MAX_ID:
            problems.append(
                f"id {data['id']} is past {MAX_ID}, the largest id import takes (memory would run out "
                "of ids for its next facts): leave id out, or import with --new-ids."
            )
        else:
            fact["id"] = data["id"]
    for key in ("topic", "kind", "text", "date"):
        if data.get(key) is None:
            if key != "date":
                problems.append(f"{key} is missing{checking.hint(key)}.")
            continue
        value, problem = checking.check_field(key, data[key])
        if problem:
            problems.append(problem)
        fact[key] = value
    fact["date"] = fact["date"] or today
    for key in ("created", "updated", "confirmed"):
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or not _is_time(value):
            problems.append(
                f"{key} is {checking.brief(value)}: write a UTC time as YYYY-MM-DDTHH:MM:SSZ, or leave it out."
            )
        else:
            fact[key] = value
    if data.get("rev") is not None:
        if checking.is_id(data["rev"]) and data["rev"] <= MAX_ID:
            fact["rev"] = data["rev"]
        else:
            problems.append(
                f"rev is {checking.brief(data['rev'])}: give a positive integer up to {MAX_ID}, or leave it out."
            )
    return (None if problems else fact), problems


def _is_time(value: str) -> bool:
    return (
        bool(_TIME.fullmatch(value)) and clock.is_stamp(value) and checking.FIRST_DAY <= value[:10] <= checking.LAST_DAY
    )


def lines_of(handle: TextIO) -> Iterator[str]:
    """The lines of `handle`, holding at most about MAX_LINE characters at a time: a line past
    MAX_LINE (a file without line breaks, /dev/zero) is refused where it starts, never read whole."""
    number = 0
    while True:
        line = handle.readline(MAX_LINE + 3)  # the line, its \r\n, and one more to see it is too long
        if not line:
            return
        number += 1
        if len(line.rstrip("\r\n")) > MAX_LINE:
            raise Refused(
                [
                    f"line {number}: more than {MAX_LINE} characters, import's limit for one line (a fact's text "
                    f"is at most {checking.MAX_TEXT}): give one fact per line, as export writes them."
                ]
            )
        yield line
