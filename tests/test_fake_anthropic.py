"""The fake Messages API speaks the wire format Claude Code reads, without Claude Code."""

import http.client
import json

from fake_anthropic import (
    ApiError,
    FakeAnthropic,
    classify,
    last_tool_result_text,
    reply,
    request_problems,
    tool_use,
)

USER = {"role": "user", "content": "hi"}
TOOLS = [{"name": "t", "input_schema": {"type": "object"}}]


def post(fake, body, path="/v1/messages?beta=true"):
    host, port = fake.base_url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.getheader("Content-Type"), resp.read().decode()
    finally:
        conn.close()


def sse(raw):
    """[(event, data)] of an SSE body."""
    out = []
    for frame in raw.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in frame.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_streams_text_and_tool_use_blocks_in_api_event_order():
    call = tool_use("mcp__s__t", {"q": "x" * 100}, id="toolu_1")
    with FakeAnthropic([reply("looking", call)], chunk_size=30) as fake:
        status, ctype, raw = post(fake, {"model": "m", "messages": [USER], "tools": TOOLS, "stream": True})
    events = sse(raw)
    assert status == 200 and ctype.startswith("text/event-stream")
    assert [e for e, _ in events][:3] == ["message_start", "ping", "content_block_start"]
    assert [e for e, _ in events][-2:] == ["message_delta", "message_stop"]
    starts = [d["content_block"] for e, d in events if e == "content_block_start"]
    assert [b["type"] for b in starts] == ["text", "tool_use"]
    assert starts[1]["id"] == "toolu_1" and starts[1]["name"] == "mcp__s__t"
    partial = "".join(d["delta"]["partial_json"] for e, d in events
                      if e == "content_block_delta" and d["delta"]["type"] == "input_json_delta")
    assert json.loads(partial) == {"q": "x" * 100}
    delta = next(d for e, d in events if e == "message_delta")
    assert delta["delta"]["stop_reason"] == "tool_use" and delta["usage"]["output_tokens"] > 0


def test_callable_step_sees_the_request_and_side_requests_do_not_consume_the_script():
    seen = []

    def step(body):
        seen.append(last_tool_result_text(body))
        return "after " + seen[-1]

    with FakeAnthropic([step], side_reply="memory") as fake:
        _, ctype, raw = post(fake, {"model": "m", "messages": [USER]})  # no tools, no stream
        body = {"model": "m", "tools": TOOLS, "stream": True, "messages": [
            USER,
            {"role": "system", "content": "mid-list system entry"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "t", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a",
                                          "content": [{"type": "text", "text": "fact 7"}]}]},
        ]}
        _, _, main = post(fake, body)
        _, _, exhausted = post(fake, body)
    assert ctype == "application/json"
    assert seen == ["fact 7"]
    assert "after fact 7" in main and "script exhausted" in exhausted
    assert [r.kind for r in fake.records] == ["side", "main", "main"]
    assert fake.errors == []


def test_compaction_request_gets_a_summary_without_consuming_the_script():
    body = {"tools": TOOLS, "messages": [USER, {"role": "assistant", "content": "a"}, {
        "role": "user", "content": "Your entire response must be plain text: an <analysis> block "
                                   "followed by a <summary> block."}]}
    assert classify(body) == "compact"
    assert classify({"tools": TOOLS, "messages": [USER]}) == "main"
    assert classify({"messages": [USER]}) == "side"


def test_api_error_step_and_broken_history_answer_400():
    with FakeAnthropic([ApiError(529, "overloaded_error", "busy")]) as fake:
        status, _, raw = post(fake, {"messages": [USER], "tools": TOOLS, "stream": True})
        assert status == 529 and json.loads(raw)["error"]["type"] == "overloaded_error"
        broken = {"messages": [USER, {"role": "assistant", "content": [
            {"type": "tool_use", "id": "a", "name": "t", "input": {}}]}, USER], "tools": TOOLS}
        status, _, _ = post(fake, broken)
    assert status == 400
    assert fake.errors == ["tool_use a has no tool_result right after it"]
    assert request_problems({"messages": [USER]}) == []


def test_count_tokens_and_unknown_paths_answer_without_touching_the_script():
    with FakeAnthropic(["kept"]) as fake:
        status, _, raw = post(fake, {"messages": [USER]}, "/v1/messages/count_tokens?beta=true")
        assert status == 200 and json.loads(raw)["input_tokens"] > 0
        status, _, _ = post(fake, {}, "/v1/unknown")
        assert status == 404
    assert fake.remaining == 1
