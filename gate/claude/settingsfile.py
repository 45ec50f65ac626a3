"""A JSON settings file that belongs to someone else (Claude Code's), changed safely.

The invariant: such a file is never left half written, never loses a key nor its key order, keeps
its mode and its style (indent, line ends, final newline), and its previous bytes are kept in
`<file>.memory-gate-backup` before a change. A file that is not a JSON object, or holds something
else than an object or a list where a change must go, is refused before anything is written.
Places in a document are tuples of keys (`("hooks", "Stop")`); changes copy what they change and
share the rest. Used by `memory-gate install` on Claude Code's settings and state files.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BACKUP_SUFFIX = ".memory-gate-backup"

Path_ = tuple[str, ...]  # a place in a JSON document: the keys from the top
MISSING: Any = object()  # what get() finds where nothing is, and what put() stores to remove a key


class FileError(Exception):
    """A file that cannot safely be changed; the message names it and says what to do."""


# -- places in a document ----------------------------------------------------------------------


def dotted(path: Path_) -> str:
    return ".".join(path) if path else "the top level"


def get(data: dict, path: Path_, kind: type) -> Any:
    """The value at path (MISSING when absent); refuses a value of the wrong type on the way."""
    value: Any = data
    for depth, key in enumerate(path):
        value = value.get(key, MISSING)
        expected = kind if depth == len(path) - 1 else dict
        if value is MISSING:
            return MISSING
        if not isinstance(value, expected):
            name = "an object" if expected is dict else "a list"
            raise FileError(f"{dotted(path[: depth + 1])} is not {name}: fix it by hand, then run this again")
    return value


def put(data: dict, path: Path_, value: Any) -> dict:
    """A copy of data with path set to value (MISSING: the key removed). Objects along the path are
    copied, everything else is shared; an existing key keeps its place, a new one goes last."""
    head, rest = path[0], path[1:]
    new = dict(data)
    if rest:
        value = put(data.get(head, {}), rest, value)
    if value is MISSING:
        new.pop(head, None)
    else:
        new[head] = value
    return new


def pointer(path: Path_) -> str:
    """path as a JSON Pointer (RFC 6901): "/hooks/Stop", "" for the whole file."""
    return "".join("/" + key.replace("~", "~0").replace("/", "~1") for key in path)


def unpointer(text: str) -> Path_:
    return tuple(key.replace("~1", "/").replace("~0", "~") for key in text.split("/")[1:])


# -- the file ----------------------------------------------------------------------------------


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


@dataclass
class Document:
    """One JSON file as read: its path, its bytes (None: no such file) and its object ({} when
    absent or empty)."""

    path: Path
    raw: bytes | None
    data: dict

    @classmethod
    def read(cls, path: Path) -> Document:
        if path.exists() and not path.is_file():  # a pipe would block the read, a device be replaced
            raise FileError(
                f"cannot use {path}: it is not a regular file (a device, pipe or socket); "
                "point it at a real file, then run this again. Nothing was changed."
            )
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return cls(path, None, {})
        except OSError as error:
            raise FileError(f"cannot read {path}: {error.strerror}") from error
        if not raw.strip():
            return cls(path, raw, {})
        mend = "fix it, then run this again. Nothing was changed."
        try:
            data = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
        except json.JSONDecodeError as error:
            raise FileError(
                f"{path} is not valid JSON ({error.msg}, line {error.lineno} column {error.colno}): {mend}"
            ) from error
        except ValueError as error:  # not UTF-8, NaN or Infinity
            raise FileError(f"{path} is not valid JSON ({error}): {mend}") from error
        if not isinstance(data, dict):
            raise FileError(f"{path} holds a JSON {type(data).__name__}, not an object: {mend}")
        return cls(path, raw, data)

    @property
    def backup(self) -> Path:
        return self.path.with_name(self.path.name + BACKUP_SUFFIX)


def render(data: dict, like: bytes | None) -> bytes:
    """data as JSON in the style of the bytes it replaces: their indent (two spaces, as Claude Code
    writes, for a new file or one written on a single line, which nested hooks would make
    unreadable), their line ends, their final newline or lack of one."""
    text = like.decode("utf-8", "replace") if like else ""
    found = re.search(r"\n([ \t]+)\S", text)
    out = json.dumps(data, indent=found.group(1) if found else "  ", ensure_ascii=False)
    if not text.strip() or text.endswith("\n"):
        out += "\n"
    if "\r\n" in text:
        out = out.replace("\n", "\r\n")
    return out.encode("utf-8")


def holds(raw: bytes, data: dict) -> bool:
    """Whether raw is JSON for data, key order included."""
    try:
        old = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    except ValueError:
        return False
    return json.dumps(old, ensure_ascii=False) == json.dumps(data, ensure_ascii=False)


def write_atomic(path: Path, content: bytes, mode: int) -> None:
    """Write a temporary file beside path, then rename it over path: readers see the old file or
    the new one, never a part. Only ever over a regular file: renamed over a device (a settings
    file linked to /dev/null) it would put a plain file in the device's place."""
    if path.exists() and not path.is_file():
        raise FileError(
            f"cannot write {path}: it is not a regular file (a device, pipe or socket); "
            "point it at a real file, then run this again"
        )
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def make_dirs(folder: Path) -> list[str]:
    """Create folder and the missing ones above it (0700); the ones created, deepest first."""
    made = []
    while not folder.exists():
        made.append(folder)
        folder = folder.parent
    for new in reversed(made):
        new.mkdir(mode=0o700)
    return [str(new) for new in made]


@dataclass
class FileChange:
    """What happened (or would happen) to one file."""

    path: Path
    action: str  # created | changed | deleted | unchanged
    changes: list[str]
    backup: Path | None = None  # where the file's previous bytes went
    restored: Path | None = None  # the backup it came back from, byte for byte (then removed)


def save(
    doc: Document, data: dict | None, changes: list[str], *, dry_run: bool = False, undo: bool = False
) -> tuple[FileChange, list[str]]:
    """Make the file hold data (None: delete it); `changes` says what for people, and none means
    nothing to do. Returns what changed and the folders created for it.

    The previous bytes go to the backup first (same mode); the file is then replaced atomically,
    keeping its mode (0600 when new), through a symlink to its target (a settings file linked
    from a dotfiles repo stays a link). `undo` (taking memory-gate out): when the result is the
    JSON the backup holds, the backup's own bytes come back and the backup goes, so nothing is
    lost; a file deleted held only memory-gate's entries and gets no backup."""
    if not changes:
        return FileChange(doc.path, "unchanged", []), []
    action = "deleted" if data is None else "created" if doc.raw is None else "changed"
    restore = undo and data is not None and doc.backup.is_file() and holds(doc.backup.read_bytes(), data)
    keep = doc.raw is not None and data is not None and not restore
    change = FileChange(doc.path, action, changes, doc.backup if keep else None, doc.backup if restore else None)
    if dry_run:
        return change, []
    target = Path(os.path.realpath(doc.path))
    if data is None:
        target.unlink()
        return change, []
    mode = (target.stat().st_mode & 0o7777) if doc.raw is not None else 0o600
    if keep and doc.raw is not None:  # keep implies raw
        write_atomic(doc.backup, doc.raw, mode)
    made = make_dirs(target.parent)
    write_atomic(target, doc.backup.read_bytes() if restore else render(data, doc.raw), mode)
    if restore:
        doc.backup.unlink()
    return change, made
