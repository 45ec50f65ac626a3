"""A throwaway PostgreSQL on 127.0.0.1 for the spike, from the binaries the `pgserver` wheel ships.

pgserver's own get_server() is not used: run as root it runs `useradd pgserver` and chmods every
folder above the venv and the data directory to o+rx, and it listens on a Unix socket only. Here
the bundled initdb/pg_ctl are driven directly: data under /tmp, TCP on 127.0.0.1 only, a socket
in the data directory, and, when run as root (CI is), the server runs as the existing `nobody`
user (PostgreSQL refuses to run as root), so nothing on the machine is changed.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import importlib.util

# Found without importing pgserver: its __init__ imports platformdirs and fasteners and makes a
# runtime folder under /tmp, none of which is needed to run its binaries.
BIN = Path(importlib.util.find_spec("pgserver").submodule_search_locations[0]) / "pginstall" / "bin"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _as_user() -> dict:
    """subprocess kwargs that drop root to `nobody`; nothing when not root."""
    if os.geteuid() != 0:
        return {}
    entry = pwd.getpwnam("nobody")
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


class Server:
    def __init__(self, root: str | None = None):
        self.root = Path(root or tempfile.mkdtemp(prefix="mg-pg-", dir="/tmp"))
        self.data = self.root / "data"
        self.port = free_port()
        self.log = self.root / "log"

    def _chown(self, path: Path) -> None:
        if os.geteuid() == 0:
            entry = pwd.getpwnam("nobody")
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def initdb(self) -> float:
        started = time.perf_counter()
        self._chown(self.root)
        subprocess.run(
            [BIN / "initdb", "-D", self.data, "--auth=trust", "-U", "postgres", "--encoding=UTF8",
             "--locale=C", "--no-sync"],
            check=True, capture_output=True, cwd="/tmp", **_as_user(),
        )
        return time.perf_counter() - started

    def clone(self, template: "Server") -> float:
        """A fresh data directory copied from a stopped server's, instead of initdb."""
        started = time.perf_counter()
        self._chown(self.root)
        subprocess.run(["cp", "-a", template.data, self.data], check=True)
        return time.perf_counter() - started

    def start(self) -> float:
        started = time.perf_counter()
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.data} -c fsync=off"
        subprocess.run(
            [BIN / "pg_ctl", "-D", self.data, "-w", "-l", self.log, "-o", options, "start"],
            check=True, capture_output=True, cwd="/tmp", **_as_user(),
        )
        return time.perf_counter() - started

    def stop(self) -> float:
        started = time.perf_counter()
        subprocess.run(
            [BIN / "pg_ctl", "-D", self.data, "-w", "-m", "fast", "stop"],
            check=True, capture_output=True, cwd="/tmp", **_as_user(),
        )
        return time.perf_counter() - started

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> "Server":
        self.initdb()
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.stop()
        finally:
            self.remove()
