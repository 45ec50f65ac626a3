"""Claude Code's own auto memory beside memory-gate's: turned off while memory-gate is on, and its
files taken in as facts.

Unless auto memory is off, Claude Code 2.1.332 tells the model in every system prompt that it has
"a persistent file-based memory" in the project's memory folder (the folder that holds memory.db)
and should write files there itself: two project memories with different rules. It is off with
`autoMemoryEnabled: false` in any settings file (user, project, local or `--settings`) or with
`CLAUDE_CODE_DISABLE_AUTO_MEMORY=1`; then the prompt says nothing of it and Claude Code no longer
makes the folder (both seen on 2.1.332, tests/test_e2e_host.py). A plugin cannot set it (a
plugin's settings.json carries only `agent` and `subagentStatusLine`), so both ways in write it
into the owner's settings, recorded like every other entry install adds: `memory-gate install`
beside its hooks, and scripts/install through `memory-gate install --plugin`.

The invariant: install makes the setting false and records that it did; uninstall takes the key
out only when the record says install put it there and it is still false (the owner's own later
choice stands). The files auto memory wrote are never changed or moved: `memory-gate
import-auto-memory` reads them, and each becomes one or more facts, logged in write.log.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.claude.settingsfile import MISSING, Path_, put

SETTING = "autoMemoryEnabled"
PLACE: Path_ = (SETTING,)
ENV = "CLAUDE_CODE_DISABLE_AUTO_MEMORY"
INDEX = "MEMORY.md"
# Claude Code's own reading of the variable: these turn auto memory off, these force it on.
_TRUTHY = {"1", "true", "yes", "on"}
_FALSY = {"0", "false", "no", "off"}


# -- the setting --------------------------------------------------------------------------------


def turn_off(data: dict) -> tuple[dict, list[str], list[Path_]]:
    """Settings with auto memory off: the new data, the change lines, and what was added (the
    setting, unless it was already false)."""
    value = data.get(SETTING, MISSING)
    if value is False:
        return data, [], []
    why = "Claude Code's own file memory off: the model is told of one memory, memory-gate's"
    change = (
        f"+ {SETTING}: false ({why})" if value is MISSING else f"~ {SETTING}: false, was {json.dumps(value)} ({why})"
    )
    return put(data, PLACE, False), [change], [PLACE]


def turn_back(data: dict, added: set[Path_] | None) -> tuple[dict, list[str], list[str]]:
    """Settings with the setting install added taken out (auto memory back to Claude Code's
    default, on): the new data, the change lines, and notes. Without a record (`added` None) the
    key is left: nothing says install wrote it."""
    value = data.get(SETTING, MISSING)
    if value is False and added is None:
        return (
            data,
            [],
            [
                f"left {SETTING}: false: no record says install put it there (take it out by hand to have "
                "Claude Code's own file memory back)"
            ],
        )
    if value is MISSING or added is None or PLACE not in added:
        return data, [], []
    if value is not False:
        return data, [], [f"left {SETTING}: {json.dumps(value)}: it was changed after install"]
    return put(data, PLACE, MISSING), [f"- {SETTING} (Claude Code's own file memory is on again)"], []


@dataclass(frozen=True)
class InForce:
    """Whether Claude Code's auto memory is on for a session here, and what decides it."""

    on: bool
    by: str

    def to_json(self) -> dict:
        return {"on": self.on, "by": self.by}


def in_force(settings_files: list[Path], environ: Mapping[str, str] | None = None) -> InForce:
    """Auto memory as Claude Code 2.1.332 decides it: the variable first (a true value turns it
    off, a false one forces it on), then the last of the settings files (lowest precedence first:
    user, project, local) that sets autoMemoryEnabled, else on."""
    env = os.environ if environ is None else environ
    raw = env.get(ENV)
    if raw is not None and raw.strip().lower() in _TRUTHY:
        return InForce(False, f"{ENV}={raw}")
    if raw is not None and raw.strip().lower() in _FALSY:
        return InForce(True, f"{ENV}={raw} (forces it on)")
    found = None
    for path in settings_files:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get(SETTING), bool):
            found = InForce(data[SETTING], f"{SETTING}: {json.dumps(data[SETTING])} in {path}")
    return found or InForce(True, "Claude Code's default (no setting)")


# -- the files --------------------------------------------------------------------------------

# A type auto memory gives a file, and the kind of fact it becomes.
KIND_OF = {"user": "state", "project": "state", "reference": "state", "feedback": "decision"}
_FRONT = re.compile(r"\A---\r?\n(.*?)\r?\n---\r?\n?", re.S)
_POINTER = re.compile(r"^\s*[-*]\s*\[[^\]]*\]\(([^)]+\.md)\)")


@dataclass
class AutoFile:
    """One file of auto memory, read: the facts it becomes, or why it cannot."""

    path: Path
    facts: list[dict] = field(default_factory=list)
    problem: str | None = None


def files(folder: Path) -> list[Path]:
    """MEMORY.md and the *.md beside it, MEMORY.md first: what auto memory wrote in `folder`."""
    try:
        found = sorted(path for path in folder.glob("*.md") if path.is_file())
    except OSError:
        return []
    return sorted(found, key=lambda path: path.name != INDEX)


def read(path: Path, max_text: int) -> AutoFile:
    """The facts a file of auto memory holds: its name (frontmatter `name`, else the file's) as
    the topic, its type as the kind, its description and body as the text, cut at paragraphs into
    facts of at most `max_text` characters. In MEMORY.md, the lines pointing at the other files
    are left out (those files are read themselves)."""
    try:
        content = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return AutoFile(path, problem=f"cannot read it ({error})")
    meta, body = _front_matter(content)
    if path.name == INDEX:
        body = "\n".join(line for line in body.splitlines() if not _POINTER.match(line))
    topic = " ".join(str(meta.get("name") or path.stem).split())[:100]
    kind = KIND_OF.get(str(meta.get("type", "")).strip(), "state")
    described = str(meta.get("description") or "").strip()
    text = "\n\n".join(part for part in (described, body.strip()) if part)
    if not text.strip():
        return AutoFile(path)
    return AutoFile(path, [{"topic": topic, "kind": kind, "text": chunk} for chunk in split(text, max_text)])


def _front_matter(content: str) -> tuple[dict[str, Any], str]:
    """The simple `key: value` lines of a leading --- block (nested `metadata:` keys too), and the
    rest."""
    found = _FRONT.match(content)
    if not found:
        return {}, content
    meta: dict[str, Any] = {}
    for line in found.group(1).splitlines():
        key, colon, value = line.strip().partition(":")
        if colon and key and value.strip():
            meta.setdefault(key.strip(), value.strip().strip("\"'"))
    return meta, content[found.end() :]


def split(text: str, limit: int) -> list[str]:
    """text in pieces of at most `limit` characters, cut between paragraphs, else between words."""
    pieces: list[str] = []
    current = ""
    for paragraph in re.split(r"\n\s*\n", text.strip()):
        paragraph = paragraph.strip()
        while len(paragraph) > limit:
            cut = paragraph.rfind(" ", 0, limit + 1)
            cut = cut if cut > 0 else limit
            pieces += [current] if current else []
            current = ""
            pieces.append(paragraph[:cut].strip())
            paragraph = paragraph[cut:].strip()
        joined = f"{current}\n\n{paragraph}" if current else paragraph
        if len(joined) <= limit:
            current = joined
        else:
            pieces.append(current)
            current = paragraph
    return [piece for piece in [*pieces, current] if piece]


def gather(folder: Path) -> tuple[list[AutoFile], list[str]]:
    """Every auto memory file in `folder`, read, each fact checked as memory_write checks one (a
    fact that fails, e.g. one holding a credential, is dropped and the file says why), and the
    good facts as `memory-gate import` lines."""
    from gate.memory import checking  # checks only: no heavy imports

    read_files, lines = [], []
    for path in files(folder):
        found = read(path, checking.MAX_TEXT)
        kept = []
        for fact in found.facts:
            problems = [
                problem for key in ("topic", "kind", "text") if (problem := checking.check_field(key, fact[key])[1])
            ]
            if problems:
                found.problem = "; ".join(problems)
                continue
            kept.append(fact)
            lines.append(json.dumps(fact, ensure_ascii=False) + "\n")
        found.facts = kept
        read_files.append(found)
    return read_files, lines
