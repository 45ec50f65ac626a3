"""A real PostgreSQL 16 with pgvector for the tests, from the binaries the `pgserver` wheel ships.

pgserver's own get_server() is not used: run as root (CI is) it adds a system user and opens up
the folders above the data directory, and it listens on a Unix socket only. Here its initdb and
pg_ctl are driven directly: the data in a temporary folder, TCP on 127.0.0.1 only, the socket in
the data directory, and, as root, the server run as the existing `nobody` user (PostgreSQL
refuses to run as root), so that nothing on the machine changes. initdb takes seconds: the
tests make one server a session and a fresh database a test (CREATE DATABASE, tens of ms).
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def binaries() -> Path | None:
    """pgserver's bin/ folder, found without importing pgserver (its __init__ makes folders and
    imports what running its binaries does not need); None when it is not installed."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"
    return found if (found / "initdb").is_file() else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _as_user() -> dict:
    """subprocess arguments that run a command as `nobody` when this process is root."""
    if os.geteuid() != 0:
        return {}
    entry = pwd.getpwnam("nobody")
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


class Server:
    """One PostgreSQL on a free port of 127.0.0.1, trust authentication for the `postgres` role."""

    def __init__(self, bin_dir: Path):
        self.bin = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="mg-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = _free_port()
        self.running = False

    def _run(self, *argv) -> None:
        done = subprocess.run([str(self.bin / argv[0]), *map(str, argv[1:])], capture_output=True, text=True,
                              cwd=self.root, **_as_user())
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{argv[0]} failed ({done.returncode}): {done.stderr[-2000:]}{log}")

    def start(self) -> "Server":
        if os.geteuid() == 0:
            entry = pwd.getpwnam("nobody")
            os.chmod(self.root, 0o700)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self._run("initdb", "-D", self.data, "--auth=trust", "-U", "postgres", "--encoding=UTF8", "--locale=C",
                  "--no-sync")
        return self.start_again()

    def start_again(self) -> "Server":
        """Start the server on its data as it was left (after stop), on the same port; returns
        when it accepts connections (pg_ctl -w)."""
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.data} -c fsync=off"
        self._run("pg_ctl", "-D", self.data, "-w", "-l", self.log, "-o", options, "start")
        self.running = True
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        if self.running:
            self._run("pg_ctl", "-D", self.data, "-w", "-m", "fast", "stop")
            self.running = False

    def remove(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
