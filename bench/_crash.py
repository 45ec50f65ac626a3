"""What a killed writer must never leave behind, shared by bench/crash.py and tests/test_crash.py.

WRITER is a Python program (argv: database path, seed) that loops over search and a write of
inserts, updates and deletes until it is killed; `verify` checks the database and write.log.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gate import audit, store  # noqa: E402

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
