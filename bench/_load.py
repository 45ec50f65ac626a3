"""Parallel sessions of one project, each a process doing what a server and its hooks do.

    python bench/_load.py worker DB SESSION WRITES   (one session; prints one JSON line at the end)
    python bench/_load.py hooks DB SESSION TURNS     (the hook processes of one session's turns)

worker: each of WRITES turns opens the turn (as UserPromptSubmit does), searches, and writes one
new fact while keeping everything the search returned. hooks: each of TURNS turns runs the real
`memory-gate hook` processes UserPromptSubmit, PreToolUse and Stop. Used by bench/concurrency.py
and tests/test_concurrency.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gate.engine import store  # noqa: E402
from gate.memory import audit, ledger  # noqa: E402
from gate.serve import tools  # noqa: E402


def worker(db: str, session: str, writes: int) -> dict:
    conn = store.connect(db)
    log = audit.log_path(Path(db))
    caller = tools.Caller(session)
    latencies, errors, facts = [], [], []
    for turn in range(writes):
        started = time.perf_counter()
        try:
            with store.writing(conn):
                ledger.open_turn(conn, session, f"{session}-p{turn}", f"turn {turn} of {session}")
            found = tools.memory_search(conn, "load fact", caller)
            answer = tools.memory_write(
                conn,
                [{"op": "insert", "topic": "load", "kind": "event", "text": f"load fact {session} {turn}"}],
                [result.fact.id for result in found.results],
                caller,
                log=log,
            )
            facts += answer.outcome.new_ids
        except Exception as error:  # reported, never hidden: the test asserts there are none
            errors.append(f"{type(error).__name__}: {error}")
        latencies.append((time.perf_counter() - started) * 1000)
    conn.close()
    return {"session": session, "facts": facts, "errors": errors, "latencies": latencies}


def hooks(db: str, session: str, turns: int) -> dict:
    env = {**os.environ, "MEMORY_GATE_DB": db}
    latencies, errors = [], []
    for turn in range(turns):
        prompt = f"{session}-p{turn}"
        for event, extra in (
            ("UserPromptSubmit", {"prompt": f"turn {turn}"}),
            ("PreToolUse", {"tool_use_id": f"toolu_{prompt}", "tool_name": "mcp__memory-gate__memory_search"}),
            ("Stop", {"stop_hook_active": True}),
        ):
            started = time.perf_counter()
            payload = json.dumps({"session_id": session, "prompt_id": prompt, "cwd": os.getcwd(), **extra})
            result = subprocess.run([sys.executable, "-m", "gate", "hook", event], input=payload, text=True,
                                    capture_output=True, env=env)
            latencies.append((time.perf_counter() - started) * 1000)
            # What the owner may be told here: an answer let out unmet, and (no server runs in this
            # bench) that the gate ruled on the ledger file; any other line is a fault (busy, broken).
            told = json.loads(result.stdout).get("systemMessage", "") if result.stdout.strip() else ""
            expected = ("went out without", "could not be asked what this turn did")
            if result.returncode != 0 or told and not any(line in told for line in expected):
                errors.append(f"{event}: {result.returncode} {result.stdout.strip()} {result.stderr.strip()}")
    return {"session": session, "facts": [], "errors": errors, "latencies": latencies}


if __name__ == "__main__":
    if sys.argv[1:2] not in (["worker"], ["hooks"]) or len(sys.argv) != 5:
        raise SystemExit(__doc__)
    run = worker if sys.argv[1] == "worker" else hooks
    print(json.dumps(run(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
