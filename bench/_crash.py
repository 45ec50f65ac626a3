"""What a killed writer must never leave behind, shared by bench/crash.py and tests/test_crash.py.

WRITER is a Python program (argv: database path, seed, and optionally an embeddings endpoint's
URL) that loops over search and a write of inserts, updates and deletes until it is killed;
`verify` checks the database, write.log, and with an endpoint the vectors.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gate.engine import health, store  # noqa: E402
from gate.memory import audit  # noqa: E402
from gate.search import vectors  # noqa: E402

WRITER = r"""
import random, sys
from gate.engine import store
from gate.search import embeddings
from gate.serve import tools
path, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
conn = store.connect(path)
endpoint = None
if len(sys.argv) > 3:
    store.load_vectors(conn)
    endpoint = embeddings.Endpoint(sys.argv[3], "fake-embed", max_distance=2.0)
log = path.rsplit("/", 1)[0] + "/write.log"
caller = tools.Caller(f"crash-{seed}")
print("ready", flush=True)
while True:
    found = tools.memory_search(conn, "crash", caller, endpoint=endpoint).results
    ids = [r.fact.id for r in found]
    ops = [{"op": "insert", "topic": "crash", "kind": "event", "text": f"crash fact {rng.random()}"}
           for _ in range(rng.randint(1, 3))]
    kept = list(ids)
    if ids and rng.random() < 0.5:
        ops.append({"op": "update", "id": kept.pop(), "text": f"crash updated {rng.random()}"})
    if ids and len(ids) > 4 and rng.random() < 0.5:
        ops.append({"op": "delete", "id": kept.pop(0)})
    tools.memory_write(conn, ops, kept, caller, log=log, endpoint=endpoint)
"""



def verify(path, embed=None):
    """Check everything a kill must not break; `embed(text)` gives the vector the endpoint
    makes for a text, when the writer had one. Returns (writes committed, log lines of writes
    that never committed, torn lines)."""
    conn = store.connect(path)
    assert health.check_integrity(conn) == []
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
    if embed is not None:
        _verify_vectors(conn, embed)
    counts = (len(committed), len(check.uncommitted), len(check.torn))
    conn.close()
    return counts


def _verify_vectors(conn, embed) -> None:
    """Vectors match facts: none for a fact that is gone, and every vector not waiting to be
    redone (facts_to_embed) is the one the endpoint makes for the fact's current text."""
    assert store.load_vectors(conn)
    if not vectors.has_table(conn):
        return
    facts = {row[0]: vectors.fact_text(row[1], row[2]) for row in conn.execute("SELECT id, topic, text FROM facts")}
    owed = {row[0] for row in conn.execute("SELECT id FROM facts_to_embed")}
    assert owed <= set(facts)
    for fact, blob in conn.execute("SELECT rowid, embedding FROM facts_vec"):
        assert fact in facts, f"a vector for fact {fact}, which is gone"
        if fact not in owed:
            stored, expected = vectors.unpack(blob), embed(facts[fact])
            assert max(abs(a - b) for a, b in zip(stored, expected)) < 1e-5, f"fact {fact}'s vector is not its text's"
    with_vector = {row[0] for row in conn.execute("SELECT rowid FROM facts_vec")}
    assert set(facts) - owed <= with_vector, "a fact neither has its vector nor waits for one"
