"""A memory_write's arguments read into ops and kept ids, every malformed part a problem with its
mend (`parse`), and the write's identity (`digest`: the same ops and kept are the same write, so
that a retried call is recognised and not applied twice). Apart from gate.memory.write because
reading what the agent sent needs no database: the write checks the parsed ops against memory as
it is and applies them; the checks of each field, which every path that writes a fact shares,
are gate.memory.checking's.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from gate.memory.checking import brief, check_field, hint, is_id

_FIELDS = {
    "insert": ("topic", "kind", "text", "date"),
    "update": ("id", "topic", "kind", "text", "date"),
    "delete": ("id",),
}


@dataclass(frozen=True)
class Op:
    index: int
    op: str
    id: int | None = None
    topic: str | None = None
    kind: str | None = None
    text: str | None = None
    date: str | None = None

    def changes(self) -> dict[str, str]:
        return {name: value for name in ("topic", "kind", "text", "date") if (value := getattr(self, name)) is not None}


def parse(ops: Any, kept: Any) -> tuple[list[Op], list[int], list[str]]:
    """Well-formed ops and kept ids, and a problem for everything malformed."""
    problems: list[str] = []
    parsed: list[Op] = []
    if ops is None:
        ops = []
    if not isinstance(ops, list):
        problems.append(
            f"ops must be a list of changes (got {_type(ops)}): "
            'e.g. [{"op": "insert", "topic": "deploy", "kind": "state", "text": "..."}], or [].'
        )
        ops = []
    for index, raw in enumerate(ops):
        op, found = _parse_op(index, raw)
        problems += found
        if op is not None:
            parsed.append(op)

    ids: list[int] = []
    if kept is None:
        kept = []
    if not isinstance(kept, list):
        problems.append(f"kept must be a list of fact ids (got {_type(kept)}): e.g. [12, 15], or [].")
        kept = []
    for index, value in enumerate(kept):
        if not is_id(value):
            problems.append(f"kept[{index}] is {brief(value)}, not a fact id: give the integer id, e.g. 12.")
        elif value not in ids:
            ids.append(value)

    seen: dict[int, int] = {}
    for op in parsed:
        if op.id is None:
            continue
        if op.id in seen:
            problems.append(f"ops[{seen[op.id]}] and ops[{op.index}] both change fact {op.id}: merge them into one op.")
        else:
            seen[op.id] = op.index
        if op.id in ids:
            problems.append(
                f"fact {op.id} is in kept and also changed by ops[{op.index}]: "
                "take it out of kept (changing a fact answers for it)."
            )
    return parsed, ids, problems


def _parse_op(index: int, raw: Any) -> tuple[Op | None, list[str]]:
    where = f"ops[{index}]"
    if not isinstance(raw, dict):
        return None, [
            f"{where} is {brief(raw)}, not a change: give an object such as "
            '{"op": "update", "id": 12, "text": "..."}.'
        ]
    name = raw.get("op")
    if not isinstance(name, str) or name not in _FIELDS:
        return None, [f'{where}: "op" is {brief(name)}: use "insert", "update" or "delete".']
    allowed = _FIELDS[name]
    problems = []
    unknown = [key for key in raw if key != "op" and key not in allowed]
    if unknown:
        problems.append(
            f"{where}: {name} takes {', '.join(allowed)}; remove " + ", ".join(f'"{key}"' for key in unknown) + "."
        )
    values: dict[str, Any] = {}
    if "id" in allowed:
        fact_id = raw.get("id")
        if not is_id(fact_id):
            problems.append(f"{where}: {name} needs the id of the fact, an integer (got {brief(fact_id)}).")
        else:
            values["id"] = fact_id
    for key in ("topic", "kind", "text", "date"):
        if key not in allowed:
            continue
        if key not in raw:
            if name == "insert" and key != "date":
                problems.append(f"{where}: insert needs {key}{hint(key)}.")
            continue
        value, problem = check_field(key, raw[key])
        if problem:
            problems.append(f"{where}: {problem}")
        else:
            values[key] = value
    if name == "update" and not problems and not any(k in values for k in ("topic", "kind", "text", "date")):
        problems.append(
            f"{where}: this update of fact {values['id']} changes nothing: give the new topic, "
            f"kind, text or date, or put {values['id']} in kept if it still holds."
        )
    if problems:
        # Keep the id: a malformed update still says which fact the agent meant to answer for.
        return (Op(index, name, id=values["id"]) if "id" in values else None), problems
    return Op(index, name, **values), []


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def digest(ops: list[Op], kept: list[int]) -> str:
    canonical = json.dumps(
        {"ops": [[op.op, op.id, op.changes()] for op in ops], "kept": sorted(kept)},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()
