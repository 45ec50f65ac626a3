"""gate/serve/front.py: `memory-gate serve` answers Claude Code's discovery and listings before the MCP
SDK is imported, with exactly the SDK's answers, and hands every other request to the SDK."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import child_env
from wire_process import RawServer

from gate.serve import front, server

PROTOCOL = server.DISCOVERY_PROTOCOL
META = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
    "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
    "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": True}, "elicitation": {"form": {}, "url": {}}},
}
HELD_SDK = Path(__file__).with_name("held_sdk")


def request(request_id, method: str, meta: dict = META, **params) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"_meta": meta, **params}}


def line(message: dict) -> bytes:
    return (json.dumps(message) + "\n").encode()


def test_the_recorded_answers_are_the_sdks_answers_now():
    recorded = json.loads(Path(front.ANSWERS).read_text(encoding="utf-8"))
    mend = "the server's discovery or tools changed, or the SDK: run `python -m gate.serve.front > gate/serve/discovery.json`"
    assert recorded["results"] == server.discovery_answers(), mend
    assert front.recorded() is not None, f"gate/serve/discovery.json was recorded with another SDK version: {mend}"


@pytest.mark.parametrize("method", server.DISCOVERY_METHODS)
def test_a_recorded_request_is_answered_under_its_own_id(method):
    answers = front.recorded()
    reply = json.loads(front.answer(line(request("probe-1", method)), answers))
    assert reply == {"jsonrpc": "2.0", "id": "probe-1", "result": answers["results"][method]}


@pytest.mark.parametrize("message", [
    request(1, "tools/call", name="memory_search", arguments={"terms": "deploy", "limit": 3}),  # not an argument it takes
    request(1, "tools/call", name="memory_forget", arguments={}),  # not a tool of memory-gate's
    request(1, "tools/call", name="memory_write", arguments=[[], []]),
    request(1, "tools/call", name="memory_search", arguments={"terms": "deploy"}, task={"ttl": 1}),
    request(1, "tools/call", meta={**META, "io.modelcontextprotocol/protocolVersion": "2025-11-25"},
            name="memory_search", arguments={"terms": "deploy"}),
    request(1, "tools/list", cursor="2"),  # a page the record does not hold
    request(1, "tools/list", meta={**META, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}),
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}},
    {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},  # legacy: no envelope
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": True, "method": "tools/list", "params": {"_meta": META}},
])
def test_anything_else_is_left_to_the_sdk(message):
    assert front.answer(line(message), front.recorded()) is None


def test_not_json_is_left_to_the_sdk():
    answers = front.recorded()
    assert front.answer(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"\n', answers) is None
    assert front.answer(b"\xff\xfe\n", answers) is None


def test_answers_recorded_with_another_sdk_are_not_used(tmp_path, monkeypatch):
    recorded = json.loads(Path(front.ANSWERS).read_text(encoding="utf-8"))
    other = tmp_path / "discovery.json"
    other.write_text(json.dumps({**recorded, "mcp": "0.0.1"}))
    monkeypatch.setattr(front, "ANSWERS", str(other))
    assert front.recorded() is None
    monkeypatch.setattr(front, "ANSWERS", str(tmp_path / "missing.json"))
    assert front.recorded() is None


def test_a_call_of_either_tool_is_the_fronts_to_serve():
    call = front.answer(line(request(7, "tools/call", meta={**META, "claudecode/toolUseId": "toolu_9"},
                                     name="memory_write", arguments={"ops": [], "kept": []})), front.recorded())
    assert isinstance(call, front.Call)
    assert (call.request_id, call.tool, call.arguments, call.tool_use_id) == (7, "memory_write", {"ops": [], "kept": []}, "toolu_9")


def held_server(tmp_path, name: str) -> tuple[RawServer, Path]:
    """`memory-gate serve` whose `mcp` package blocks in its import until the returned FIFO is
    opened for writing: until then, only the front answers."""
    project = tmp_path / name / "project"
    project.mkdir(parents=True)
    hold = tmp_path / name / "hold"
    os.mkfifo(hold)
    env = child_env(tmp_path / name / "home", MEMORY_GATE_TEST_HOLD_SDK=str(hold), PYTHONPATH=str(HELD_SDK))
    return RawServer(project, env), hold


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_the_tools_are_listed_while_the_sdk_is_still_loading_and_other_calls_wait_for_it(tmp_path):
    serving, hold = held_server(tmp_path, "held")
    try:
        serving.send(request("server-discover-probe-1", "server/discover"))
        assert serving.receive()["id"] == "server-discover-probe-1", serving.stderr[-2000:]
        serving.send(request("listen:0", "subscriptions/listen", notifications={"toolsListChanged": True}))
        acknowledged = serving.receive()
        assert acknowledged["method"] == "notifications/subscriptions/acknowledged", acknowledged
        # An argument the tool does not take: the SDK's to answer. The call after it waits too.
        serving.send(request(4, "tools/call", name="memory_search", arguments={"terms": "deploy", "limit": 3}))
        serving.send(request(5, "tools/call", name="memory_search", arguments={"terms": "deploy"}))
        serving.send(request(3, "tools/list"))
        listed = serving.receive()  # the listing overtakes the calls waiting for the SDK
        assert listed["id"] == 3, listed
        assert [tool["name"] for tool in listed["result"]["tools"]] == ["memory_search", "memory_write"]
        assert serving.receive(timeout=0.5) is None  # no call answered: both wait
        assert "mcp" not in serving.stderr  # nothing said yet
        with open(hold, "wb"):
            pass  # the SDK goes on loading; the waiting requests are then handed to it, in order
        answered = serving.answers({4, 5})
        assert sorted(answered) == [4, 5], answered  # answered in any order: one worker thread each
        assert not answered[5][0]["result"]["isError"], answered
        assert "Memory holds nothing" in answered[5][0]["result"]["content"][0]["text"]
    finally:
        serving.close()


# The calls of a turn, with what the SDK's answers must match byte for byte: JSON escapes, text
# beyond ASCII, a refusal, an argument the tool refuses, a list sent as its JSON text.
TRICKY = 'Deploys go through "staging" \\ on\ttabs \u00fc \u2028 \U0001f680 \ud55c\uad6d\uc5b4.'
CALLS = [
    ("memory_search", {"terms": "deploy staging"}),
    ("memory_write", {"ops": [{"op": "insert", "topic": "deploy", "kind": "state", "text": TRICKY}], "kept": []}),
    ("memory_search", {"terms": "deploy"}),
    ("memory_write", {"ops": [{"op": "bogus"}], "kept": []}),
    ("memory_search", {"terms": ["deploy"]}),
    ("memory_write", {"ops": "[]", "kept": "[1]"}),
]


def turn_calls(serving: RawServer, calls, first_id: int = 10) -> list[bytes]:
    lines = []
    for number, (tool, arguments) in enumerate(calls, start=first_id):
        meta = {**META, "claudecode/toolUseId": f"toolu_{number}"}
        serving.send(request(number, "tools/call", meta=meta, name=tool, arguments=arguments))
        lines.append(serving.receive_line())
    return lines


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_the_front_serves_the_first_calls_with_the_sdks_very_bytes_and_hands_its_memory_over(tmp_path):
    held, hold = held_server(tmp_path, "front")
    # The SDK's own server over real stdio, with no front, in a home of its own.
    project = tmp_path / "sdk" / "project"
    project.mkdir(parents=True)
    code = "from gate import config; from gate.serve import server; raise SystemExit(server.serve(config.load()))"
    # No session named: each server is its own session (gate/serve/server.py), so a Memory not handed
    # over would start another one, and the fact would be shown again.
    sdk = RawServer(project, child_env(tmp_path / "sdk" / "home"), argv=[sys.executable, "-c", code])
    try:
        ours = turn_calls(held, CALLS)
        assert None not in ours, held.stderr[-2000:]  # all answered with the SDK still held
        theirs = turn_calls(sdk, CALLS)
        for call, mine, sdks in zip(CALLS, ours, theirs):
            assert mine == sdks, call
        assert [json.loads(reply)["result"]["isError"] for reply in ours] == [False, False, False, True, True, False]
        assert b"\\u2028" not in ours[2] and "\u2028".encode() in ours[2]  # UTF-8 as it is, as pydantic writes it

        with open(hold, "wb"):
            pass  # the SDK loads and takes over, with the front's Memory: the fact shown stays shown
        # A request only the SDK answers: once it is answered, the SDK serves the session.
        held.send(request(19, "tools/list", cursor="2"))
        assert held.receive()["id"] == 19, held.stderr[-2000:]
        again = [("memory_search", {"terms": "deploy"})]
        after = turn_calls(held, again, first_id=20)
        assert after == turn_calls(sdk, again, first_id=20), held.stderr[-2000:]
        assert json.loads(after[0])["result"]["structuredContent"]["facts"][0].get("shown_before") is True
    finally:
        held.close()
        sdk.close()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_a_stop_after_the_front_served_a_write_exits_cleanly_with_the_write_kept(tmp_path):
    held, hold = held_server(tmp_path, "stop")
    try:
        [reply] = turn_calls(held, CALLS[1:2])
        assert json.loads(reply)["result"]["isError"] is False
        held.signal()
        assert held.exited() == 0, held.stderr[-2000:]
        assert "Traceback" not in held.stderr
    finally:
        held.close()
    database = next((tmp_path / "stop" / "home").rglob("memory.db"))
    import apsw

    [[text]] = apsw.Connection(str(database)).execute("SELECT text FROM facts").fetchall()
    assert text == json.loads(json.dumps(TRICKY))


@pytest.mark.parametrize("asked", [
    {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True},  # Claude Code's
    {"toolsListChanged": True},
    {"toolsListChanged": True, "promptsListChanged": False},
])
def test_a_subscription_is_acknowledged_as_the_sdk_acknowledges_it(asked):
    listen = {"id": "listen:0", "method": "subscriptions/listen", "params": {"notifications": asked}}
    [sdk] = server.first_replies([listen])
    ours = front.answer(line(request("listen:0", "subscriptions/listen", notifications=asked)), front.recorded())
    assert json.loads(ours) == sdk


def test_a_subscription_to_resources_is_left_to_the_sdk():
    message = request("listen:0", "subscriptions/listen", notifications={"resourceSubscriptions": ["file:///x"]})
    assert front.answer(line(message), front.recorded()) is None


def sdk_importing(hold: Path) -> bool:
    """Whether the held `mcp` import has opened its FIFO: the SDK is being imported."""
    try:
        fd = os.open(hold, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # ENXIO: no reader yet
        return False
    os.close(fd)  # the held import reads to the end and goes on
    return True


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_the_sdk_is_imported_once_the_session_has_been_quiet(tmp_path):
    import time

    serving, hold = held_server(tmp_path, "quiet")
    try:
        serving.send(request("server-discover-probe-1", "server/discover"))
        asked = time.monotonic()
        assert serving.receive()["id"] == "server-discover-probe-1", serving.stderr[-2000:]
        busy = not sdk_importing(hold)
        if time.monotonic() - asked < front.QUIET / 2:  # a machine that stalled this long proves nothing
            assert busy, "the SDK was imported while the session was still asking"
        deadline = time.monotonic() + 60
        while not sdk_importing(hold):
            assert time.monotonic() < deadline, f"the SDK was never imported: {serving.stderr[-2000:]}"
            time.sleep(0.05)
        assert time.monotonic() - asked >= front.QUIET
        [reply] = turn_calls(serving, CALLS[:1])
        assert json.loads(reply)["result"]["isError"] is False
    finally:
        serving.close()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_calls_the_wire_must_mend_first_are_left_to_the_sdk_and_answered(tmp_path):
    serving, hold = held_server(tmp_path, "mend")
    try:
        deep = {"ops": [{"op": "insert", "text": [[[[[[[[[["x"]]]]]]]]]]}], "kept": []}
        serving.send(request(1, "tools/call", name="memory_write", arguments=deep))
        serving.send(b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"_meta": '
                     + json.dumps(META).encode() + b', "name": "memory_search", "arguments": {"terms": "deploy \\ud83d"}}}')
        serving.send(request(3, "tools/call", name="memory_search", arguments={"terms": "deploy"}))
        assert serving.receive(timeout=0.5) is None  # none served by the front: all wait
        with open(hold, "wb"):
            pass
        answered = serving.answers({1, 2, 3})
        # Handed over in order, but the SDK runs each call in a worker thread of its own, so the
        # answers may come in any order: Claude Code matches them by id.
        assert sorted(answered) == [1, 2, 3], serving.stderr[-2000:]
        assert all(len(answers) == 1 for answers in answered.values()), answered
        assert answered[1][0]["result"]["isError"] is True
        assert answered[2][0]["result"]["isError"] is False  # the wire put U+FFFD in its place
    finally:
        serving.close()
