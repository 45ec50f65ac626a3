"""A writer killed with SIGKILL at random points never leaves a committed change without its
write.log line, nor a damaged database or index. bench/crash.py does the same 200 times."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from _crash import WRITER, verify  # noqa: E402

from gate import store  # noqa: E402

ROUNDS = 40


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_sigkill_at_random_points_loses_no_log_line(tmp_path):
    path = tmp_path / "memory" / "memory.db"
    store.connect(path).close()
    rng = random.Random(20261129)
    for round_ in range(ROUNDS):
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(round_)], stdout=subprocess.PIPE, text=True
        )
        assert writer.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.15))
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
        verify(path)
    writes, uncommitted, torn = verify(path)
    assert writes > ROUNDS  # the writers did get work done between kills
    print(json.dumps({"writes": writes, "uncommitted_lines": uncommitted, "torn_lines": torn}))
