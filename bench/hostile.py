"""Hostile and malformed input, thousands of cases, counted.

    python bench/hostile.py [--cases 5000] [--stdio 2000] [--seed 1]

In-process: random JSON shapes, wrong types, huge strings, control characters, lone surrogates,
deep nesting, SQL and FTS syntax and fake ids, thrown at memory_write, memory_search and every
hook. Prints how each ended: accepted, refused with a message, or crashed (which must be never),
and checks after every refused write that nothing changed.

Over stdio: the same kinds of calls as raw JSON-RPC lines to the real `memory-gate serve`, plus
what only a wire carries (lone surrogate escapes anywhere, including keys, ids and `_meta`;
nesting up to 3,000 levels; `params` as an array; truncated lines; batches; arguments of the
wrong shape), on a stdin that stays open. Counts every request: served, answered with an error
that says what to change, answered with a pydantic dump (must be never), or left unanswered
(must be never); then SIGINT must stop the server with exit 0 and no traceback.
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

from gate.claude import hooks  # noqa: E402
from gate.engine import health, store  # noqa: E402
from gate.memory import write  # noqa: E402
from gate.serve import tools  # noqa: E402

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


SHAPES = ("search", "write", "surrogate", "surrogate key", "surrogate meta", "deep", "array params",
          "truncated", "arguments not an object", "no name", "batch", "wrong jsonrpc")


def lone_surrogate(rng: random.Random) -> str:
    return f"\\u{rng.randint(0xD800, 0xDFFF):04x}"  # as JSON text: the escape a faulty client sends


def stdio_case(rng: random.Random, request_id: int) -> tuple[str, str, list[int]]:
    """(shape, the raw line, the ids that must be answered)."""
    shape = rng.choice(SHAPES)
    tool = rng.choice(["memory_search", "memory_write"])
    if shape.startswith("surrogate"):  # an ordinary call but for the surrogate: it must be served
        tool, arguments = "memory_search", {"terms": rng.choice(["deploy staging", "会議 予定", "C++ -O2"])}
    elif tool == "memory_search":
        arguments = {"terms": rng.choice([rng.choice(NASTY)[:3000], rng.randint(0, 9), None, ["a"], {"x": 1}])}
        if rng.random() < 0.1:
            arguments = {}
    else:
        arguments = {"ops": [op(rng) for _ in range(rng.randint(0, 3))], "kept": rng.choice([[], [1, 2], "[]", None])}
        if rng.random() < 0.1:
            del arguments[rng.choice(["ops", "kept"])]
    try:
        text = json.dumps(arguments)
    except (TypeError, ValueError, RecursionError):
        text = '{"terms": "deep"}'
    params = f'{{"name": "{tool}", "arguments": {text}}}'
    if shape == "surrogate":  # in the value: at its start, middle or end
        terms = arguments["terms"]
        cut = rng.choice([0, len(terms) // 2, len(terms)])
        value = json.dumps(terms[:cut])[:-1] + lone_surrogate(rng) + json.dumps(terms[cut:])[1:]
        params = f'{{"name": "{tool}", "arguments": {{"terms": {value}}}}}'
    elif shape == "surrogate key":
        params = params[:-1] + f', "x{lone_surrogate(rng)}": 1}}'
    elif shape == "surrogate meta":
        params = params[:-1] + f', "_meta": {{"claudecode/toolUseId": "toolu_{lone_surrogate(rng)}"}}}}'
    elif shape == "deep":
        depth = rng.randint(150, 3000)
        params = f'{{"name": "{tool}", "arguments": {{"terms": "x", "ops": {"[" * depth}{"]" * depth}, "kept": []}}}}'
    elif shape == "array params":
        params = f'["{tool}", {text}]'
    elif shape == "arguments not an object":
        params = f'{{"name": "{tool}", "arguments": {rng.choice(["[]", "42", json.dumps("terms")])}}}'
    elif shape == "no name":
        params = f'{{"arguments": {text}}}'
    line = f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", "params": {params}}}'
    if shape == "truncated":
        whole_id = len(f'{{"jsonrpc": "2.0", "id": {request_id},')  # cut after the id: it can be answered
        line = line[: rng.randint(whole_id, max(len(line) - 1, whole_id))]
    elif shape == "wrong jsonrpc":
        line = line.replace('"2.0"', '"1.0"', 1)
    elif shape == "batch":
        line = f"[{line}, {line.replace(str(request_id), str(request_id + 1), 1)}]"
        return shape, line, [request_id, request_id + 1]
    return shape, line, [request_id]


def stdio_bench(cases: int, rng: random.Random, server_from: str | None = None) -> int:
    """The real `memory-gate serve` over stdio: every request answered, SIGINT obeyed.
    `server_from`: run the server's code from that checkout instead (a baseline)."""
    import signal

    sys.path.insert(0, str(ROOT / "tests"))
    from wire_process import RawServer

    counts = {"served": 0, "error that says what to change": 0, "pydantic dump": 0, "unanswered": 0}
    by_shape: dict[str, int] = {}
    unanswered: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        env = {key: value for key, value in os.environ.items() if not key.startswith(("CLAUDE", "MEMORY_GATE_"))}
        env["MEMORY_GATE_HOME"] = folder
        if server_from:
            env["PYTHONPATH"] = server_from
        started = time.perf_counter()
        server = RawServer(Path(folder), env)
        try:
            server.start()
            request_id = 1
            for _ in range(cases):
                shape, line, ids = stdio_case(rng, request_id)
                request_id += len(ids)
                by_shape[shape] = by_shape.get(shape, 0) + 1
                server.send(line)
                found = server.answers(set(ids), timeout=5 if server_from else 30)
                for wanted in ids:
                    if wanted not in found:
                        counts["unanswered"] += 1
                        unanswered.append(f"{shape}: {line[:160]}")
                        continue
                    answer = found[wanted][0]
                    result = answer.get("result") or {}
                    text = answer["error"]["message"] if "error" in answer else (result.get("content") or [{}])[0].get("text", "")
                    if "errors.pydantic.dev" in text or "validation error for" in text:
                        counts["pydantic dump"] += 1
                    elif "error" in answer or result.get("isError"):
                        counts["error that says what to change"] += 1
                    else:
                        counts["served"] += 1
            elapsed = time.perf_counter() - started
            server.signal(signal.SIGINT)
            code = server.exited(30)
            clean = code == 0 and "Traceback" not in server.stderr
        finally:
            server.close()
    requests = sum(counts.values())
    print(f"stdio{' (server from ' + server_from + ')' if server_from else ''}: {cases} lines ({requests} requests) to the real memory-gate serve in {elapsed:.1f} s: "
          + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print("  shapes: " + ", ".join(f"{k} {v}" for k, v in sorted(by_shape.items())))
    print(f"  then SIGINT with stdin open: exit {code}, " + ("no traceback" if clean else "NOT CLEAN"))
    for line in unanswered[:10]:
        print(f"  unanswered {line}")
    return 1 if counts["unanswered"] or counts["pydantic dump"] or not clean else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--stdio", type=int, default=2000, help="lines sent to the real server over stdio (0: none)")
    parser.add_argument("--server-from", metavar="CHECKOUT",
                        help="run the stdio server from another checkout too, as a baseline (e.g. ../main)")
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
    print("integrity after all writes: " + ("ok" if health.check_integrity(conn) == [] else "FAILED"))
    for line in crashes[:10]:
        print(f"  {line}")
    failed = 1 if crashes else 0
    if args.stdio:
        state = rng.getstate()
        failed |= stdio_bench(args.stdio, rng)
        if args.server_from:
            rng.setstate(state)  # the same lines
            stdio_bench(args.stdio, rng, str(Path(args.server_from).resolve()))
    return failed


if __name__ == "__main__":
    raise SystemExit(main())
