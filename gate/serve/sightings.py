"""What this server saw each turn do with memory, kept in its own memory, and the loopback port the
Stop hook asks it on (gate.memory.witness: the question, the address file, and why).

The record is the server's, from the calls it answered: a turn searched when a search of it was
answered, wrote when a write of it was accepted, and owes every fact a search of it returned that
no accepted write kept, updated or deleted since, nor found gone (another session deleted it: no
write can answer for it; gate.memory.write's Outcome.gone), as the plugin's mod keeps its own
record in Claude Code's process. Nothing read from the ledger's counts decides it, so a command that edits
the ledger changes no answer. Only turns the hooks opened (with a prompt_id) are recorded.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from _operator import _compare_digest as same  # what hmac.compare_digest is, without hashlib

from gate import config, jsonlite
from gate.memory import ledger, witness

MAX_TURNS = 4096  # turns remembered; the oldest go first (a turn is asked about as it ends)
MAX_QUESTION = 4096
ANSWER_WITHIN = 1.0  # seconds a connection may take to ask


class Record:
    """Each turn's searched, wrote and owed facts, by (session, prompt_id); thread-safe (the tool
    calls record in their threads, the port answers in its own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._turns: dict[tuple[str, str], tuple[bool, bool, set[int]]] = {}

    def searched(self, turn: ledger.Turn, facts: list[int]) -> None:
        self._note(turn, lambda searched, wrote, owed: (True, wrote, owed | set(facts)))

    def wrote(self, turn: ledger.Turn, answered: list[int]) -> None:
        self._note(turn, lambda searched, wrote, owed: (searched, True, owed - set(answered)))

    def _note(self, turn: ledger.Turn, change) -> None:
        if turn.prompt_id is None:
            return  # a server turn: no Stop hook asks for it
        key = (turn.session, turn.prompt_id)
        with self._lock:
            before = self._turns.pop(key, (False, False, set()))
            self._turns[key] = change(*before)
            while len(self._turns) > MAX_TURNS:
                del self._turns[next(iter(self._turns))]

    def answer(self, session: str, prompt_id: str) -> dict:
        with self._lock:
            searched, wrote, owed = self._turns.get((session, prompt_id), (False, False, set()))
        return {"searched": searched, "wrote": wrote, "unanswered": sorted(owed)}


class Witness:
    """The record and the port it is asked on, with the address file; `close` takes the file
    away (a server killed leaves it: a refused connection tells the hook it is gone)."""

    def __init__(self, record: Record, listener: socket.socket | None, path: str | None):
        self.record, self._listener, self._path = record, listener, path
        self._token = os.urandom(16).hex()

    @classmethod
    def start(cls, settings: config.Settings) -> Witness:
        """Listen on a free loopback port and say where in the memory folder. When that fails the
        record is still kept (the port is only how a hook asks), and the hooks rule on the ledger,
        saying so."""
        try:
            where = witness.folder(config.find_database(settings))
        except Exception as error:  # never a reason to fail the server
            print(f"memory-gate: the Stop hook cannot ask this server what a turn did ({error})", file=sys.stderr)
            return cls(Record(), None, None)
        return cls.listen(where)

    @classmethod
    def listen(cls, where: str) -> Witness:
        """Listen, with the address in the folder `where` (gate.memory.witness.folder)."""
        record = Record()
        try:
            _make_private(where)
            folder = os.stat(where, follow_symlinks=False)
            if hasattr(os, "getuid") and (folder.st_uid != os.getuid() or folder.st_mode & 0o022):
                raise OSError(f"{where} is not a private folder of this user")  # another could swap addresses
            _sweep(where)
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            if hasattr(socket, "SO_EXCLUSIVEADDRUSE"):  # Windows: no other socket may take the port
                listener.setsockopt(socket.SOL_SOCKET, socket.SO_EXCLUSIVEADDRUSE, 1)
            listener.bind(("127.0.0.1", 0))
            listener.listen(8)
        except Exception as error:  # the port is no reason to fail the server: said, and the hooks say so too
            print(f"memory-gate: the Stop hook cannot ask this server what a turn did ({error})", file=sys.stderr)
            return cls(record, None, None)
        # One file a server: its process id, and a few random digits for a test's second server.
        found = cls(record, listener, os.path.join(where, f"{os.getpid()}-{os.urandom(3).hex()}"))
        try:
            found._write_address(listener.getsockname()[1])
        except OSError as error:
            print(f"memory-gate: the Stop hook cannot ask this server what a turn did ({error})", file=sys.stderr)
            listener.close()
            return cls(record, None, None)
        threading.Thread(target=found._serve, args=(listener,), name="memory-gate-witness", daemon=True).start()
        return found

    def _write_address(self, port: int) -> None:
        assert self._path is not None
        temporary = f"{self._path}.new"
        fd = os.open(temporary, os.O_CREAT | os.O_TRUNC | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            os.write(fd, witness.address(port, self._token).encode())
        finally:
            os.close(fd)
        os.replace(temporary, self._path)

    def _serve(self, listener: socket.socket) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # closed
            with conn:
                try:
                    conn.settimeout(ANSWER_WITHIN)
                    reply = self.reply(_read_line(conn))
                    if reply is not None:
                        conn.sendall(reply)
                except OSError:
                    continue

    def reply(self, line: bytes) -> bytes | None:
        """The answer to one question, or None (not asked with this server's token, or not a
        question): the connection is closed unanswered."""
        try:
            asked = jsonlite.loads(line.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return None
        if not isinstance(asked, dict):
            return None
        token, session, prompt_id = (asked.get(key) for key in ("token", "session", "prompt_id"))
        if not (isinstance(token, str) and same(token.encode(), self._token.encode())):
            return None
        if not (isinstance(session, str) and isinstance(prompt_id, str)):
            return None
        return (jsonlite.dumps(self.record.answer(session, prompt_id)) + "\n").encode()

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self._path is not None:
            try:
                os.unlink(self._path)
            except OSError:
                pass
            self._path = None


def _make_private(folder: str) -> None:
    """The folder and any missing above it, 0700 as memory's own (gate.engine.files)."""
    missing = []
    while not os.path.isdir(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    for each in reversed(missing):
        try:
            os.mkdir(each, 0o700)
        except FileExistsError:
            pass


def _read_line(conn: socket.socket) -> bytes:
    raw = b""
    while not raw.endswith(b"\n") and len(raw) <= MAX_QUESTION:
        chunk = conn.recv(MAX_QUESTION)
        if not chunk:
            break
        raw += chunk
    return raw


def _sweep(where: str) -> None:
    """Take away the addresses of servers that are gone (killed, so they could not): a port that
    refuses a connection has no server behind it."""
    for name in os.listdir(where):
        path = os.path.join(where, name)
        try:
            with open(path, "rb") as handle:
                found = witness.parse_address(handle.read(200).decode("ascii", "replace"))
        except OSError:
            continue
        if found is None:
            continue
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.settimeout(0.2)
        try:
            probe.connect(("127.0.0.1", found[0]))
        except ConnectionRefusedError:
            try:
                os.unlink(path)
            except OSError:
                pass
        except OSError:
            pass
        finally:
            probe.close()
