"""`memory-gate serve` as Claude Code runs it: a child process spoken to in raw JSON-RPC lines on
its stdin, which stays open, with its answers and stderr read as they come (tests and benches)."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

INITIALIZE = {
    "jsonrpc": "2.0", "id": 0, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class RawServer:
    def __init__(self, cwd: Path, env: dict[str, str], *, python_flags: tuple[str, ...] = (),
                 argv: list[str] | None = None):
        self.process = subprocess.Popen(
            argv or [sys.executable, *python_flags, "-m", "gate", "serve"], cwd=cwd, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self._stderr = bytearray()
        self._stderr_changed = threading.Condition()
        self._drain = threading.Thread(target=self._read_stderr, daemon=True)
        self._drain.start()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.process.stdout, selectors.EVENT_READ)
        self._buffer = bytearray()

    def _read_stderr(self) -> None:
        for chunk in iter(lambda: os.read(self.process.stderr.fileno(), 65536), b""):
            with self._stderr_changed:
                self._stderr += chunk
                self._stderr_changed.notify_all()
        with self._stderr_changed:
            self._stderr_changed.notify_all()

    @property
    def stderr(self) -> str:
        with self._stderr_changed:
            return self._stderr.decode("utf-8", errors="replace")

    def wait_stderr(self, needle: str, timeout: float = 60.0) -> bool:
        """Wait until stderr holds `needle` (or the process ends)."""
        end = time.monotonic() + timeout
        with self._stderr_changed:
            while needle.encode() not in self._stderr:
                left = end - time.monotonic()
                if left <= 0 or (self.process.poll() is not None and not self._drain.is_alive()):
                    return False
                self._stderr_changed.wait(min(left, 0.5))
        return True

    def send(self, message: dict | str | bytes) -> None:
        if isinstance(message, dict):
            message = json.dumps(message)
        if isinstance(message, str):
            message = message.encode("utf-8", errors="surrogatepass")  # as a faulty client would
        self.process.stdin.write(message + b"\n")
        self.process.stdin.flush()

    def receive(self, timeout: float = 60.0) -> dict | None:
        """The next message the server writes, or None when none comes in time."""
        line = self.receive_line(timeout)
        return None if line is None else json.loads(line)

    def receive_line(self, timeout: float = 60.0) -> bytes | None:
        """The next line the server writes, as it wrote it (without its newline), or None."""
        end = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = end - time.monotonic()
            if left <= 0 or not self._selector.select(left):
                return None
            chunk = os.read(self.process.stdout.fileno(), 65536)
            if not chunk:
                return None
            self._buffer += chunk
        end_of_line = self._buffer.index(b"\n")
        line = bytes(self._buffer[:end_of_line])
        del self._buffer[: end_of_line + 1]
        return line

    def answers(self, ids: set, timeout: float = 60.0) -> dict:
        """Messages read until each id in `ids` has its answer (or time runs out): id -> answer."""
        found: dict = {}
        end = time.monotonic() + timeout
        while not ids <= found.keys():
            message = self.receive(max(end - time.monotonic(), 0.01))
            if message is None:
                break
            if "id" in message:
                found.setdefault(message["id"], []).append(message)
        return found

    def start(self) -> dict:
        self.send(INITIALIZE)
        answer = self.receive()
        self.send(INITIALIZED)
        return answer

    def call(self, request_id, name: str, arguments: dict, meta: dict | None = None) -> dict | None:
        params = {"name": name, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
        return self.receive()

    def signal(self, signum: int = signal.SIGINT) -> None:
        self.process.send_signal(signum)

    def exited(self, timeout: float = 30.0) -> int | None:
        """The exit status once the process ends within `timeout` (stdin left open), else None."""
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self._drain.join(10)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            try:
                stream.close()
            except OSError:
                pass
        self._selector.close()
