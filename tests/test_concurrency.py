"""Parallel sessions of one project on one database: nothing lost, nothing failing."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import concurrency  # noqa: E402

from gate.engine import store  # noqa: E402


def test_eight_sessions_and_their_hooks_write_and_search_at_once(tmp_path):
    db = tmp_path / "memory.db"
    store.connect(db).close()
    results, _ = concurrency.run(db, sessions=8, writes=40, hook_sessions=2)
    assert concurrency.verify(db, results) == []
    assert sum(len(r["facts"]) for r in results) == 8 * 40
    assert sum(len(r["latencies"]) for r in results if r["session"].startswith("h")) == 2 * 4 * 3
