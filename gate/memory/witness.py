"""The memory server as the gate's witness: where a running `memory-gate serve` can be asked what it
saw a turn do, and the Stop hook's question.

The turn ledger is a file in the memory folder, and a shell command of the session can rewrite it
(`UPDATE turns SET searched = 1, wrote = 1`). The server's memory cannot be rewritten so: each
server keeps its own record of the memory calls it answered (gate.serve.sightings) and answers,
on a loopback port, one question: what did turn (session, prompt_id) do? Whether a search and a
write were answered, and the facts its searches returned that no accepted write has answered for
since. The question is read-only, so a shell that can reach the port can ask, never forge.

Each server writes its address, `<port> <token>`, to `servers/<pid>-<random>` in the memory folder
(0700); the token keeps other users' processes out, not the session's own shell, which reads the
file as the hook does (docs/gate.md says what that leaves trusted). The Stop hook asks every
server listed (a project's sessions share a folder); a server that never saw the turn says so.
No answer at all (no server running, one of a version before this, a port that hangs or answers
garbage) and the hook rules on the ledger instead, and says so to the owner.

On the hooks' path: the standard library's C modules and gate.jsonlite only (`socket` imports
`enum`, a share of a hook's whole start; `_socket` is what it wraps).
"""

import os

from gate import jsonlite

FOLDER = "servers"
# The whole question, every server listed, within this (seconds): a hung port costs the Stop hook
# no more, and then the ledger rules.
DEADLINE = 0.5
MAX_ANSWER = 1 << 20  # a turn owes a few ids; anything near this is not an answer


class Sighting:
    """What the servers saw one turn do with memory."""

    __slots__ = ("searched", "wrote", "unanswered")

    def __init__(self, searched: bool, wrote: bool, unanswered: list[int]):
        self.searched, self.wrote, self.unanswered = searched, wrote, unanswered

    def __repr__(self) -> str:
        return f"Sighting(searched={self.searched}, wrote={self.wrote}, unanswered={self.unanswered})"


def folder(database: str) -> str:
    """Where the servers of this database write their addresses."""
    return os.path.join(os.path.dirname(os.path.abspath(database)), FOLDER)


def address(port: int, token: str) -> str:
    return f"{port} {token}\n"


def parse_address(text: str) -> tuple[int, str] | None:
    parts = text.split()
    if len(parts) != 2 or not parts[0].isdigit() or not 0 < int(parts[0]) < 65536 or not parts[1].isalnum():
        return None
    return int(parts[0]), parts[1]


def question(token: str, session: str, prompt_id: str) -> bytes:
    return (jsonlite.dumps({"token": token, "session": session, "prompt_id": prompt_id}) + "\n").encode()


def parse_answer(raw: bytes) -> Sighting | None:
    """A server's answer, or None when it is not one (a port someone else now listens on)."""
    try:
        data = jsonlite.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    searched, wrote, ids = data.get("searched"), data.get("wrote"), data.get("unanswered")
    if type(searched) is not bool or type(wrote) is not bool or not isinstance(ids, list):
        return None
    if any(type(fact) is not int for fact in ids):
        return None
    return Sighting(searched, wrote, ids)


def ask(database: str, session: str, prompt_id: str, deadline: float = DEADLINE) -> Sighting | None:
    """What the running servers of this database saw the turn do, merged (any search, any write,
    every fact still owed); None when no server answered."""
    return Asking(database, session, prompt_id, deadline).sighting()


class Asking:
    """The question, put to every server listed as soon as this is made, and their answers,
    collected by `sighting()`: the Stop hook opens its database in between, while the servers
    answer."""

    def __init__(self, database: str, session: str, prompt_id: str, deadline: float = DEADLINE):
        import time

        self._clock = time.monotonic
        self._end = self._clock() + deadline
        self._asked: list = []
        where = folder(database)
        try:
            names = os.listdir(where)
        except OSError:
            return
        if not names:
            return  # no server to ask: the socket module is not even loaded
        import _socket

        for name in names:
            found = _read_address(os.path.join(where, name))
            left = self._end - self._clock()
            if found is None or left <= 0:
                continue
            conn = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
            try:
                conn.settimeout(left)
                conn.connect(("127.0.0.1", found[0]))
                conn.sendall(question(found[1], session, prompt_id))
            except OSError:  # refused (a server gone), timed out
                conn.close()
                continue
            self._asked.append(conn)

    def sighting(self) -> Sighting | None:
        seen = [found for conn in self._asked if (found := self._answer(conn)) is not None]
        if not seen:
            return None
        owed = sorted({fact for one in seen for fact in one.unanswered})
        return Sighting(any(one.searched for one in seen), any(one.wrote for one in seen), owed)

    def _answer(self, conn) -> Sighting | None:
        raw = b""
        try:
            while not raw.endswith(b"\n") and len(raw) < MAX_ANSWER:
                left = self._end - self._clock()
                if left <= 0:
                    return None
                conn.settimeout(left)
                chunk = conn.recv(65536)
                if not chunk:
                    break
                raw += chunk
        except OSError:  # timed out, reset
            return None
        finally:
            conn.close()
        return parse_answer(raw) if raw.endswith(b"\n") else None


def _read_address(path: str) -> tuple[int, str] | None:
    """The address in one server's file: only a plain file of this user (another user cannot
    plant one in a folder that is 0700, but MEMORY_GATE_DB may name a shared one)."""
    try:
        found = os.stat(path, follow_symlinks=False)
        if (found.st_mode & 0o170000) != 0o100000 or (hasattr(os, "getuid") and found.st_uid != os.getuid()):
            return None
        with open(path, "rb") as handle:
            return parse_address(handle.read(200).decode("ascii", "replace"))
    except OSError:
        return None
