"""A writer killed with SIGKILL at random points never leaves a committed change without its
write.log line, nor a damaged database or index."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time

import pytest

from gate import audit, store

WRITER = r"""
import random, sys
from gate import store, tools
path, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
conn = store.connect(path)
log = path.rsplit("/", 1)[0] + "/write.log"
caller = tools.Caller(f"crash-{seed}")
print("ready", flush=True)
while True:
    found = tools.memory_search(conn, "crash", caller).results
    ids = [r.fact.id for r in found]
    ops = [{"op": "insert", "topic": "crash", "kind": "event", "text": f"crash fact {rng.random()}"}
           for _ in range(rng.randint(1, 3))]
    kept = list(ids)
    if ids and rng.random() < 0.5:
        ops.append({"op": "update", "id": kept.pop(), "text": f"crash updated {rng.random()}"})
    if ids and len(ids) > 4 and rng.random() < 0.5:
        ops.append({"op": "delete", "id": kept.pop(0)})
    tools.memory_write(conn, ops, kept, caller, log=log)
"""

ROUNDS = 40


def verify(path):
    conn = store.connect(path)
    assert store.check_integrity(conn) == []
    check = audit.check(conn, audit.log_path(path))
    assert check.ok, f"committed writes without log lines: {check.missing}"
    # Every fact in memory was inserted by a committed, logged write.
    logged = {}
    committed = audit.committed_writes(conn)
    for entry in audit.entries(audit.log_path(path)):
        if entry["write"] in committed:
            logged[entry["id"]] = entry
    for fact_id, text in conn.execute("SELECT id, text FROM facts"):
        assert fact_id in logged and logged[fact_id]["op"] != "delete"
        assert logged[fact_id]["after"]["text"] == text
    counts = (len(committed), len(check.uncommitted), len(check.torn))
    conn.close()
    return counts


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
