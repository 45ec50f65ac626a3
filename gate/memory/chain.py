"""write.log's chain: each line names the one before it, so the log proves itself.

Every line memory-gate appends ends with two fields: `prev`, the link of the line before it, and
`hash`, the digest of the line's own content with that `prev`. A line's *link* is its `hash` when it
ends with one, and otherwise the digest of its bytes (a line written before the chain existed, a
torn line, a line someone put there). So:

- a line edited after it was written no longer matches its own `hash`: it is named as edited;
- a line removed leaves the line after it naming a link that is not the line now before it;
- a line repeated (copied in again) names, where it now stands, a link that is not its neighbour's,
  and its `hash` is one an earlier line already holds: it is named with the line it repeats;
- a line rewritten with a recomputed `hash` breaks the next line's `prev`.

Lines from before the chain (a log written by an older memory-gate) are taken in as they are: the
first chained line names the last of them, so they are the chain's start, kept and read like any
other, though nothing proves them. The chain has no key: it catches edits by hand and by tools that
do not know it, not someone who rewrites every line after theirs; and lines cut from the end leave
nothing to name them, which is why `writes` counts each write's lines (gate.memory.audit).

Blank lines are no lines at all, here as everywhere write.log is read.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field

DIGITS = 32  # hex digits of a digest: 128 bits, for a log read by people
FIELDS = ("prev", "hash")
START = ""  # the `prev` of the first line of a log begun with the chain
_TAIL = re.compile(rb'"hash": "([0-9a-f]{%d})"\}\r?$' % DIGITS)
_TAIL_BYTES = 64  # the longest tail _TAIL can match, with room to spare
_CHUNK = 1 << 16
# Line numbers kept per kind of break: doctor names a few, undo asks about one line.
KEEP = 1000


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:DIGITS]


def _canonical(body: dict) -> bytes:
    """The bytes a line's `hash` is the digest of: its fields but `hash`, in one spelling, so that
    what a line says is proven and not how it is spaced."""
    return json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8", "surrogatepass")


def tail(data: bytes) -> str | None:
    """The `hash` a line ends with, None when it ends with none (it is unchained)."""
    found = _TAIL.search(data[-_TAIL_BYTES:])
    return found.group(1).decode("ascii") if found else None


def link(data: bytes) -> str:
    """What the next line's `prev` must be: this line's `hash`, or the digest of its bytes."""
    return tail(data) or _digest(data)


def seal(entry: dict, prev: str) -> tuple[str, str]:
    """The line to write for `entry` after a line whose link is `prev` (without its newline),
    and its own link."""
    body = {key: value for key, value in entry.items() if key not in FIELDS}
    body["prev"] = prev
    own = _digest(_canonical(body))
    return json.dumps({**body, "hash": own}, ensure_ascii=False), own


def proves_itself(data: bytes, entry: dict | None) -> bool:
    """Whether a chained line's content still matches its `hash`."""
    own = tail(data)
    if own is None or not isinstance(entry, dict) or entry.get("hash") != own:
        return False
    return _digest(_canonical({key: value for key, value in entry.items() if key != "hash"})) == own


def last_link(fd: int, size: int) -> str:
    """The link of the last non-blank line of the open file (START for a file with none), read
    from its end: a few kilobytes for a chained line, its bytes streamed for any other."""
    end = _last_solid(fd, size)
    if end < 0:
        return START
    stop = _find_back(fd, end, lambda chunk: chunk.rfind(b"\n"))  # the newline before the line
    start = stop + 1
    close = os.pread(fd, min(_CHUNK, size - end), end)  # the line ends at its newline or the end
    cut = close.find(b"\n")
    finish = end + (cut if cut >= 0 else len(close))
    if finish - start <= _CHUNK:
        return link(os.pread(fd, finish - start, start))
    own = tail(os.pread(fd, _TAIL_BYTES, finish - _TAIL_BYTES))
    if own:
        return own
    digest, at = hashlib.sha256(), start
    while at < finish:
        piece = os.pread(fd, min(_CHUNK, finish - at), at)
        if not piece:
            break
        digest.update(piece)
        at += len(piece)
    return digest.hexdigest()[:DIGITS]


def _last_solid(fd: int, size: int) -> int:
    """The offset of the last byte that is not ASCII white space, -1 if none."""
    return _find_back(fd, size, lambda chunk: len(chunk.rstrip()) - 1)


def _find_back(fd: int, before: int, find) -> int:
    """Searching backwards from `before` chunk by chunk, the offset `find` gives within a chunk
    (-1: not in it), or -1 when no chunk has it."""
    end = before
    while end > 0:
        start = max(0, end - _CHUNK)
        chunk = os.pread(fd, end - start, start)
        found = find(chunk)
        if found >= 0:
            return start + found
        end = start
    return -1


@dataclass
class Chain:
    """write.log read as a chain: where it starts and every line that breaks it."""

    lines: int = 0
    start: int | None = None  # the first chained line
    before: int = 0  # lines before it: the chain's start, unproven
    edited: list[int] = field(default_factory=list)  # content that no longer matches its hash
    broken: list[int] = field(default_factory=list)  # its prev is not the line before it
    repeats: dict[int, int] = field(default_factory=dict)  # a broken line -> the earlier line it repeats
    unchained: list[int] = field(default_factory=list)  # no link, though the chain had begun
    breaks: int = 0  # every break, named or not

    @property
    def ok(self) -> bool:
        return not (self.edited or self.broken or self.unchained)

    def first(self) -> str | None:
        """The first line that breaks the chain, said: what happened to it."""
        found = sorted(
            [(n, "edited") for n in self.edited[:1]]
            + [(n, "broken") for n in self.broken[:1]]
            + [(n, "unchained") for n in self.unchained[:1]]
        )
        if not found:
            return None
        number, kind = found[0]
        return self.said(number, kind)

    def said(self, number: int, kind: str) -> str:
        if kind == "edited":
            return f"line {number} was edited after it was written (it no longer matches its hash)"
        if kind == "unchained":
            return (
                f"line {number} carries no link though the chain began at line {self.start} (an older "
                "memory-gate still running wrote it, or it was added by hand)"
            )
        if number in self.repeats:
            return f"line {number} repeats line {self.repeats[number]}"
        return (
            f"line {number} does not follow the line before it (a line was removed there, or the "
            "line before it was rewritten)"
        )

    def others(self) -> int:
        return self.breaks - 1 if self.breaks else 0


def verify(path, read) -> Chain:
    """The log at `path` read as a chain; `read(path)` yields (line number, bytes, entry or None,
    whether it is torn) oldest first, blank lines left out. A torn line (a writer killed mid-line)
    breaks nothing: the line after it links to it, and it is reported as torn. Memory stays small whatever the log's size (at most KEEP
    lines of each kind); a second pass, only when lines broke the chain, finds which of them
    repeat an earlier line."""
    chain = Chain()
    expected = START
    suspects: dict[str, int] = {}  # the hash of a line that broke the chain -> its number
    for number, data, entry, torn in read(path):
        chain.lines += 1
        own = tail(data)
        if own is None:
            if chain.start is None:
                chain.before += 1
            elif not torn:
                chain.breaks += 1
                _keep(chain.unchained, number)
        else:
            if chain.start is None:
                chain.start = number
            if not proves_itself(data, entry):
                chain.breaks += 1
                _keep(chain.edited, number)
            elif entry.get("prev") != expected:
                chain.breaks += 1
                if _keep(chain.broken, number):
                    suspects.setdefault(own, number)
        expected = own or _digest(data)
    if suspects:
        for number, data, _, _ in read(path):
            own = tail(data)
            if own in suspects and number < suspects[own]:
                chain.repeats[suspects.pop(own)] = number
                if not suspects:
                    break
    return chain


def _keep(numbers: list[int], number: int) -> bool:
    if len(numbers) < KEEP:
        numbers.append(number)
        return True
    return False


def unproven(path, number: int, read) -> str | None:
    """Why line `number` of the log is not proven by its chain, None when it is (or when it came
    before the chain, taken in as its start). Its neighbour after it must name it too: a line
    rewritten with a recomputed hash is caught there."""
    expected, own, seen, start = START, None, False, None
    for at, data, entry, _ in read(path):
        own = tail(data)
        if own is not None and start is None:
            start = at
        if at == number:
            seen = True
            if own is None:
                if start is None:
                    return None
                return f"line {number} carries no link though the chain began at line {start}"
            if not proves_itself(data, entry):
                return f"line {number} was edited after it was written (it no longer matches its hash)"
            if entry.get("prev") != expected:
                return f"line {number} does not follow the line before it (a line was removed there, or it was moved or copied)"
            mine = own
        elif seen:
            if own is not None and entry is not None and entry.get("prev") != mine:
                return f"the line after line {number} does not name it (line {number} was rewritten, or a line removed after it)"
            return None
        expected = own or _digest(data)
    return None
