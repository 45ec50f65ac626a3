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
    request(1, "tools/call", name="memory_search", arguments={"terms": "deploy"}),
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


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_the_tools_are_listed_while_the_sdk_is_still_loading_and_calls_wait_for_it(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    hold = tmp_path / "hold"
    os.mkfifo(hold)
    # The `mcp` package first found blocks in its import until the FIFO is opened for writing.
    env = child_env(tmp_path / "home", MEMORY_GATE_TEST_HOLD_SDK=str(hold), PYTHONPATH=str(HELD_SDK))
    serving = RawServer(project, env)
    try:
        serving.send(request("server-discover-probe-1", "server/discover"))
        assert serving.receive()["id"] == "server-discover-probe-1", serving.stderr[-2000:]
        serving.send(request("listen:0", "subscriptions/listen", notifications={"toolsListChanged": True}))
        acknowledged = serving.receive()
        assert acknowledged["method"] == "notifications/subscriptions/acknowledged", acknowledged
        serving.send(request(4, "tools/call", name="memory_search", arguments={"terms": "deploy"}))
        serving.send(request(3, "tools/list"))
        listed = serving.receive()  # the listing overtakes the call waiting for the SDK
        assert listed["id"] == 3, listed
        assert [tool["name"] for tool in listed["result"]["tools"]] == ["memory_search", "memory_write"]
        assert "mcp" not in serving.stderr  # nothing said yet
        with open(hold, "wb"):
            pass  # the SDK goes on loading; the waiting requests are then served, in order
        answered = serving.answers({4})
        assert not answered[4][0]["result"]["isError"], answered
        assert "Memory holds nothing" in answered[4][0]["result"]["content"][0]["text"]
    finally:
        serving.close()


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
