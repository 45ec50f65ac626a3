"""A writer killed with SIGKILL at random points never leaves a committed change without its
write.log line, nor a damaged database or index. bench/crash.py does the same 200 times."""

from __future__ import annotations

import json
import math
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from _crash import WRITER, verify  # noqa: E402
from fake_embeddings import FakeEmbeddings  # noqa: E402
from fake_embeddings import vector as fake_vector  # noqa: E402

from gate.engine import store  # noqa: E402

ROUNDS = 40


def unit(values):
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def committed(path) -> int:
    conn = store.connect(path)
    try:
        return conn.execute("SELECT count(*) FROM writes").fetchone()[0]
    finally:
        conn.close()


def wait_for_a_commit(path, before: int, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while committed(path) == before:
        assert time.monotonic() < deadline, f"the writer committed nothing in {limit:g} s"
        time.sleep(0.005)


@pytest.fixture(params=["words", "vectors"])
def endpoint(request):
    """No embeddings endpoint, or the fake one: then vectors must match facts after every kill."""
    if request.param == "words":
        yield None
        return
    fake = FakeEmbeddings(dimension=32)
    yield fake
    fake.close()


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_sigkill_at_random_points_loses_no_log_line(tmp_path, endpoint):
    path = tmp_path / "memory" / "memory.db"
    store.connect(path).close()
    extra = [endpoint.url] if endpoint else []
    embed = (lambda text: unit(fake_vector(text, endpoint.dimension))) if endpoint else None
    rng = random.Random(20261129)
    for round_ in range(ROUNDS):
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(round_), *extra], stdout=subprocess.PIPE, text=True
        )
        assert writer.stdout.readline().strip() == "ready"
        # A busy machine may give the writer no time before the kill: wait for its first commit
        # of the round (the state the "work got done" check below needs), then kill at random.
        wait_for_a_commit(path, committed(path))
        time.sleep(rng.uniform(0.0, 0.15))
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
        verify(path, embed)
    writes, uncommitted, torn = verify(path, embed)
    assert writes >= ROUNDS  # the writers did get work done between kills
    if endpoint:
        conn = store.connect(path)
        store.load_vectors(conn)
        # Vectors were checked (on a saturated machine the endpoint misses many a write's time-out).
        assert conn.execute("SELECT count(*) FROM facts_vec").fetchone()[0] > 0
    print(json.dumps({"writes": writes, "uncommitted_lines": uncommitted, "torn_lines": torn}))
