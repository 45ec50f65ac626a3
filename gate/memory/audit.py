"""write.log: every change to memory, with the text it replaced, who made it and why.

One JSON object per line, beside the database. The database holds only what is true now; this
log is the history, for people (`memory-gate log`) and for undoing a mistake.

The rule that no committed change lacks its line is kept by order, not by luck: a write appends
its lines and fsyncs them *before* its transaction commits, stamped with the write's id, and the
commit records that id in the `writes` table. A process killed in between leaves lines whose
write id the database does not know: recognisably never committed. A process killed in the middle
of a line leaves a torn line without its newline; the next append starts on a fresh line and
readers report the torn one instead of failing.

Each line is chained to the one before it (gate.memory.chain), so the log proves itself: doctor
names the first line edited, removed or repeated, and undo refuses to put back what a line that
breaks the chain says. Lines are appended under an exclusive lock on the file, so two writers
never name the same line before theirs.
"""

from __future__ import annotations

import errno
import json
import os
import re  # loaded by dataclasses anyway
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import apsw

from gate.engine import files, store
from gate.memory import chain

try:
    import fcntl
except ImportError:  # not POSIX: the database's write lock alone orders the appends
    fcntl = None  # type: ignore[assignment]  # checked before each use

LOG_NAME = files.LOG_NAME


def log_path(database: Path) -> Path:
    return Path(database).parent / LOG_NAME


def append(path: Path, entries: list[dict]) -> None:
    """Append entries durably: on disk when this returns.

    Never through a symbolic link, nor into another user's file in a shared folder (see
    gate.engine.files): the log holds every fact's text."""
    if not entries:
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as error:
        if error.errno == errno.ELOOP:  # O_NOFOLLOW met a link
            raise store.StoreError(_link_refused(path) or str(error)) from error
        raise store.StoreError(
            f"{path} cannot be written ({error.strerror}), and every change is logged there before it "
            "is made: nothing was changed. Check the file's and its folder's permissions (as root, "
            "also `lsattr`: an immutable file refuses even root)"
        ) from error
    try:
        found = os.fstat(fd)
        problem = files.planted(
            os.fspath(path), found, files.shared_folder(os.stat(os.path.dirname(os.path.abspath(path))))
        )
        if problem:
            raise store.StoreError(problem)
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released when fd closes
        size = os.fstat(fd).st_size
        prev = chain.last_link(fd, size)
        sealed = []
        for entry in entries:
            line, prev = chain.seal(entry, prev)
            sealed.append(line + "\n")
        payload = "".join(sealed)
        if size and os.pread(fd, 1, size - 1) != b"\n":
            payload = "\n" + payload
        data = payload.encode("utf-8")
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
        os.fsync(fd)
    finally:
        os.close(fd)


def _link_refused(path: Path) -> str | None:
    try:
        return files.planted(os.fspath(path), os.lstat(path), False)
    except OSError:
        return None


@dataclass(frozen=True)
class Line:
    number: int
    entry: dict | None  # None: a torn or unreadable line
    raw: str
    data: bytes  # the line as it is on disk, without its newline: what the chain proves
    # Complete JSON that is no line memory-gate writes (not an object, or nested past the
    # parser's depth): put there by hand, not torn by a killed writer.
    alien: bool = False


def lines(path: Path, *, holding: re.Pattern[str] | None = None) -> Iterator[Line]:
    """Every line of the log, oldest first, streamed (the log may be large); with `holding`,
    only the lines where that pattern is found (a search costs a tenth of parsing the JSON)."""
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return
    with handle:
        for number, data in enumerate(handle, start=1):
            data = data.removesuffix(b"\n")
            if not data.strip():
                continue
            raw = data.decode("utf-8", errors="replace")
            if holding is not None and not holding.search(raw):
                continue
            alien = False
            try:
                entry = json.loads(raw)
            except ValueError:
                entry = None
            except RecursionError:
                entry, alien = None, True
            if entry is not None and not isinstance(entry, dict):
                entry, alien = None, True
            yield Line(number, entry, raw, data, alien)


def _numbered(path: Path) -> Iterator[tuple[int, bytes, dict | None, bool]]:
    for line in lines(path):
        yield line.number, line.data, line.entry, line.entry is None and not line.alien


def verify(path: Path) -> chain.Chain:
    """The log read as a chain (gate.memory.chain): where it starts, what breaks it."""
    return chain.verify(path, _numbered)


def unproven(path: Path, number: int) -> str | None:
    """Why line `number` is not proven by the chain; None when it is, or came before the chain."""
    return chain.unproven(path, number, _numbered)


def entries(
    path: Path, *, fact: int | None = None, session: str | None = None, since: str | None = None
) -> Iterator[dict]:
    """Readable entries, filtered by fact id, session, and day or time (ISO, inclusive)."""
    for line in lines(path):
        entry = line.entry
        if entry is None:
            continue
        if fact is not None and entry.get("id") != fact:
            continue
        if session is not None and entry.get("session") != session:
            continue
        if since is not None and str(entry.get("time", "")) < since:
            continue
        for name in chain.FIELDS:  # the log's own proof, no part of the change
            entry.pop(name, None)
        yield entry


def committed_writes(conn: apsw.Connection) -> dict[str, int]:
    """Write id -> number of log lines it committed with."""
    return dict(conn.execute("SELECT id, changes FROM writes"))


@dataclass
class Check:
    """write.log compared with the database."""

    lines: int = 0
    torn: list[int] = field(default_factory=list)
    alien: list[int] = field(default_factory=list)
    uncommitted: list[int] = field(default_factory=list)
    missing: dict[str, int] = field(default_factory=dict)
    chain: chain.Chain = field(default_factory=chain.Chain)

    @property
    def ok(self) -> bool:
        return not self.missing and self.chain.ok

    def broken(self) -> str | None:
        """The first line that breaks the chain, and how many more do, said; None if none does."""
        first = self.chain.first()
        if first is None:
            return None
        more = self.chain.others()
        return first + (f"; {more} more line(s) after it break the chain too" if more else "")

    def start(self) -> str | None:
        """Lines from before the chain, said; None when the log is chained from its first line."""
        if not self.chain.before:
            return None
        if self.chain.start is None:
            return (
                f"all {self.chain.before} line(s) were written before write.log was chained: the next "
                "change starts the chain after them"
            )
        return (
            f"lines before line {self.chain.start} ({self.chain.before}) were written before write.log was "
            "chained: they are the chain's start, read as ever, though nothing proves them"
        )

    def advice(self) -> list[str]:
        notes = []
        if self.torn:
            notes.append(
                f"{len(self.torn)} torn line(s) (a writer was killed mid-line; its change did not "
                f"commit): lines {_some(self.torn)}. Harmless; leave them."
            )
        if self.alien:
            notes.append(
                f"{len(self.alien)} line(s) memory-gate never writes (not a change, or nested past what can "
                f"be read): lines {_some(self.alien)}. Someone edited the log: restore it from a backup, or "
                "delete those lines; the facts themselves are intact."
            )
        if self.uncommitted:
            notes.append(
                f"{len(self.uncommitted)} line(s) of writes that never committed (a writer stopped "
                f"before its commit): lines {_some(self.uncommitted)}. Harmless: history ignores them."
            )
        broken = self.broken()
        if broken:
            notes.append(
                f"the chain is broken: {broken}. Someone changed the log: restore it from a backup; "
                "undo refuses the lines the chain does not prove, and the facts themselves are intact."
            )
        start = self.start()
        if start:
            notes.append(start[0].upper() + start[1:] + ".")
        if self.missing:
            notes.append(
                f"{len(self.missing)} committed write(s) lack log lines: "
                f"{_some(sorted(self.missing))}. The log was edited, truncated or replaced: "
                "restore it from a backup if you have one; the facts themselves are intact."
            )
        return notes


def _some(items: list, limit: int = 8) -> str:
    shown = ", ".join(str(item) for item in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def check(conn: apsw.Connection, path: Path) -> Check:
    committed = committed_writes(conn)
    seen: dict[str, int] = {}
    result = Check()
    for line in lines(path):
        result.lines += 1
        if line.entry is None:
            (result.alien if line.alien else result.torn).append(line.number)
            continue
        write = line.entry.get("write")
        if write in committed:
            seen[write] = seen.get(write, 0) + 1
        else:
            result.uncommitted.append(line.number)
    for write, changes in committed.items():
        if seen.get(write, 0) < changes:
            result.missing[write] = changes - seen.get(write, 0)
    result.chain = verify(path)
    return result


def is_committed(conn: apsw.Connection, write_id: str) -> bool:
    return conn.execute("SELECT 1 FROM writes WHERE id = ?", (write_id,)).fetchone() is not None
