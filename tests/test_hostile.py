"""Hostile and malformed input to both tools and every hook: thousands of generated cases.

Never a traceback, never a partial write: a write is accepted whole or refused whole with a
message; a hook exits 0 with JSON or nothing; a search answers.
"""

from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate import jsonlite
from gate.claude import hooks
from gate.engine import health, store
from gate.memory import write
from gate.serve import tools

ANY_TEXT = st.one_of(
    st.text(max_size=80),
    st.text(alphabet=st.characters(codec=None), max_size=40),  # control characters, lone surrogates
    st.sampled_from(['" OR 1=1 --', "'; DROP TABLE facts; --", "NEAR(a b)", "col:*", "^x", "\x00", "\ud800",
                     "x" * 700, "é" * 601, "-----BEGIN PRIVATE KEY-----"]),
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=12,
)
OP = st.fixed_dictionaries(
    {"op": st.one_of(st.sampled_from(["insert", "update", "delete", "upsert", None, 3]), JSON)},
    optional={
        "id": st.one_of(st.integers(-5, 50), ANY_TEXT, st.none(), st.booleans()),
        "topic": st.one_of(ANY_TEXT, st.integers(), st.none()),
        "kind": st.one_of(st.sampled_from(["state", "event", "decision", "trap", "note", ""]), JSON),
        "text": st.one_of(ANY_TEXT, JSON),
        "date": st.one_of(st.sampled_from(["2026-11-29", "2026-02-30", "yesterday", ""]), JSON),
        "extra": JSON,
    },
)
OPS = st.one_of(st.lists(st.one_of(OP, JSON), max_size=5), JSON)
KEPT = st.one_of(st.lists(st.one_of(st.integers(-3, 40), JSON), max_size=5), JSON)


def snapshot(conn):
    return (
        list(conn.execute("SELECT * FROM facts ORDER BY id")),
        list(conn.execute("SELECT * FROM writes ORDER BY id")),
        health.check_integrity(conn),
    )


@pytest.fixture(scope="module")
def memory():
    conn = store.connect(":memory:")
    caller = tools.Caller("hostile")
    for i in range(10):
        tools.memory_write(conn, [{"op": "insert", "topic": f"t{i}", "kind": "state", "text": f"fact {i}"}], [], caller, log=None)
    return conn


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(ops=OPS, kept=KEPT, search_first=st.booleans())
def test_any_write_is_accepted_whole_or_refused_whole(memory, ops, kept, search_first):
    caller = tools.Caller("hostile")
    if search_first:
        tools.memory_search(memory, "fact", caller)
    before = snapshot(memory)
    try:
        answer = tools.memory_write(memory, ops, kept, caller, log=None)
    except write.Refused as refused:
        assert snapshot(memory) == before, "a refused write changed something"
        assert str(refused).startswith("memory_write refused, nothing was changed.")
        assert refused.problems and all(isinstance(problem, str) for problem in refused.problems)
        return
    assert answer.text.startswith(("memory_write accepted", "This write was already applied"))
    assert health.check_integrity(memory) == []


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(terms=st.one_of(ANY_TEXT, st.text(min_size=1000, max_size=3000)))
def test_any_search_answers(memory, terms):
    answer = tools.memory_search(memory, terms, tools.Caller("hostile-search"))
    assert isinstance(answer.text, str) and len(answer.results) <= 8


def test_a_megabyte_search_is_cheap(memory):
    answer = tools.memory_search(memory, "fact " * 200_000, tools.Caller("hostile-search"))
    assert answer.results


PAYLOAD = st.one_of(
    JSON,
    st.fixed_dictionaries(
        {},
        optional={
            "session_id": st.one_of(ANY_TEXT, JSON),
            "prompt_id": st.one_of(ANY_TEXT, JSON),
            "prompt": st.one_of(ANY_TEXT, JSON),
            "tool_use_id": st.one_of(ANY_TEXT, JSON),
            "tool_name": st.one_of(st.sampled_from(["mcp__x__memory_search", "Bash"]), JSON),
            "source": st.one_of(st.sampled_from(["compact", "clear", "startup"]), JSON),
            "stop_hook_active": JSON,
            "cwd": st.one_of(st.just("."), JSON),
        },
    ),
)


@pytest.fixture
def hook_home(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMORY_GATE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.delenv("MEMORY_GATE_DB", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_hook(event, raw: str, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(raw))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = hooks.main([event])
    return code, out.getvalue()


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(event=st.sampled_from([*hooks.EVENTS, "Nope", ""]), payload=PAYLOAD, raw=st.one_of(st.none(), ANY_TEXT))
def test_any_hook_input_exits_zero_with_json_or_nothing(hook_home, monkeypatch, event, payload, raw):
    try:
        data = raw if raw is not None else jsonlite.dumps(payload)
    except (TypeError, ValueError):
        data = "{}"
    code, out = run_hook(event, data, monkeypatch)
    assert code == 0
    for line in out.splitlines():
        assert isinstance(jsonlite.loads(line), dict)


def nested(depth: int):
    value: list | dict = []
    for level in range(depth):
        value = [value] if level % 2 else {"a": value}
    return value


@pytest.mark.parametrize("ops, kept", [([nested(5000)], []), (nested(5000), []), ([], [nested(5000)]),
                                       ([{"op": "insert", "topic": nested(5000), "kind": "state", "text": "x"}], [])])
def test_deeply_nested_values_are_refused_with_a_message(memory, ops, kept):
    before = snapshot(memory)
    with pytest.raises(write.Refused):
        tools.memory_write(memory, ops, kept, tools.Caller("hostile"), log=None)
    assert snapshot(memory) == before


def test_deeply_nested_hook_input_fails_open(hook_home, monkeypatch):
    code, out = run_hook("Stop", "[" * 100_000 + "]" * 100_000, monkeypatch)
    assert code == 0 and "not JSON" in jsonlite.loads(out)["systemMessage"]
