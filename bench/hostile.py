"""Hostile and malformed input, thousands of cases, counted.

    python bench/hostile.py [--cases 5000] [--seed 1]

Random JSON shapes, wrong types, huge strings, control characters, lone surrogates, deep nesting,
SQL and FTS syntax and fake ids, thrown at memory_write, memory_search and every hook (in-process).
Prints how each ended: accepted, refused with a message, or crashed (which must be never), and
checks after every refused write that nothing changed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gate import hooks, store, tools, write  # noqa: E402

NASTY = ['" OR 1=1 --', "'; DROP TABLE facts; --", "NEAR(a b)", "col:*", "^x", "\x00", "\ud800", "\x07bell",
         "x" * 700, "é" * 601, "-----BEGIN PRIVATE KEY-----", "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
         "y" * 1_000_000, "", " ", "会議", "C++", "-O2", "topic:deploy"]


def value(rng: random.Random, depth: int = 0):
    roll = rng.random()
    if depth > 3 or roll < 0.35:
        return rng.choice([None, True, False, rng.randint(-5, 60), 2**70, rng.random(), rng.choice(NASTY),
                           "".join(chr(rng.randint(0, 0x10FFFF)) for _ in range(rng.randint(0, 12)))])
    if roll < 0.6:
        return [value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if roll < 0.7:
        deep: list = []
        for _ in range(rng.randint(50, 3000)):
            deep = [deep]
        return deep
    return {rng.choice(["op", "id", "topic", "kind", "text", "date", "x", ""]): value(rng, depth + 1)
            for _ in range(rng.randint(0, 5))}


def op(rng: random.Random):
    if rng.random() < 0.3:
        return value(rng)
    item = {"op": rng.choice(["insert", "update", "delete", "upsert", None])}
    for key in ("id", "topic", "kind", "text", "date"):
        if rng.random() < 0.6:
            item[key] = rng.choice([value(rng), rng.choice(["state", "event", "decision", "trap"]),
                                    rng.randint(1, 30), "2026-11-29", rng.choice(NASTY)])
    return item


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    counts = {"accepted": 0, "refused": 0, "crashed": 0, "searched": 0, "hook ran": 0}
    crashes: list[str] = []
    conn = store.connect(":memory:")
    caller = tools.Caller("hostile")
    for i in range(20):
        tools.memory_write(conn, [{"op": "insert", "topic": f"t{i}", "kind": "state", "text": f"fact {i}"}], [], caller, log=None)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as home:
        os.environ["MEMORY_GATE_HOME"] = home
        for case in range(args.cases):
            kind = case % 3
            try:
                if kind == 0:
                    before = list(conn.execute("SELECT * FROM facts"))
                    try:
                        read = [r.fact.id for r in tools.memory_search(conn, "fact", caller).results]
                        if rng.random() < 0.2:  # a well-formed write now and then, hostile text inside
                            ops = [{"op": "insert", "topic": "t", "kind": "event", "text": rng.choice(NASTY)}]
                            kept = read
                        else:
                            ops = [op(rng) for _ in range(rng.randint(0, 4))] if rng.random() < 0.8 else value(rng)
                            kept = value(rng)
                        tools.memory_write(conn, ops, kept, caller, log=None)
                        counts["accepted"] += 1
                    except write.Refused:
                        counts["refused"] += 1
                        assert list(conn.execute("SELECT * FROM facts")) == before, "a refused write changed memory"
                elif kind == 1:
                    try:
                        terms = rng.choice([rng.choice(NASTY), str(value(rng))[:3000]])
                    except RecursionError:  # the generator's own repr of a deep value
                        terms = "[[[[" * 500
                    tools.memory_search(conn, terms, caller)
                    counts["searched"] += 1
                else:
                    event = rng.choice([*hooks.EVENTS, "Nope"])
                    payload = value(rng) if rng.random() < 0.3 else {
                        key: rng.choice([value(rng), f"v{case}"])
                        for key in ("session_id", "prompt_id", "prompt", "tool_use_id", "tool_name", "source", "stop_hook_active")}
                    try:
                        raw = json.dumps(payload)
                    except (TypeError, ValueError, RecursionError):
                        raw = rng.choice(NASTY)
                    sys.stdin = io.StringIO(raw)
                    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                        assert hooks.main([event]) == 0
                    counts["hook ran"] += 1
            except Exception as error:  # the one outcome that must never happen
                counts["crashed"] += 1
                crashes.append(f"case {case}: {type(error).__name__}: {str(error)[:120]}")
    elapsed = time.perf_counter() - started
    print(f"{args.cases} hostile cases in {elapsed:.1f} s: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print("integrity after all writes: " + ("ok" if store.check_integrity(conn) == [] else "FAILED"))
    for line in crashes[:10]:
        print(f"  {line}")
    return 1 if crashes else 0


if __name__ == "__main__":
    raise SystemExit(main())
