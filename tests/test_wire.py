"""gate/serve/wire.py through the real `memory-gate serve`, spoken to as Claude Code does (raw lines on
a stdin that stays open): every request gets an answer, and SIGINT or SIGTERM stop the server
promptly and cleanly in every state."""

from __future__ import annotations

import json
import signal
import threading

import anyio
import pytest
from conftest import child_env
from fake_embeddings import FakeEmbeddings
from wire_process import RawServer

from gate import config
from gate.engine import store
from gate.serve import inbound, wire


@pytest.fixture
def server(project, tmp_path):
    running = RawServer(project, child_env(tmp_path / "home"))
    yield running
    running.close()


def call_line(request_id, name: str, arguments: str, extra: str = "") -> str:
    """A tools/call line with `arguments` as raw JSON text (so it may hold what json.dumps would
    never write, such as a lone surrogate escape)."""
    return (f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"method":"tools/call",'
            f'"params":{{"name":"{name}","arguments":{arguments}{extra}}}}}')


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


INSERT = '{"op":"insert","topic":"deploy","kind":"state","text":"%s"}'
# Each line, and whether the call is served (True) or answered with an error saying what to change.
# The lines reach the SDK together and its tools run in threads of their own, in any order: so the
# searches ask for words no write here stores, and a write is never refused for a fact a search
# happened to return before it.
HOSTILE = [
    (call_line(1, "memory_search", r'{"terms":"kafka \ud83d"}'), True),
    (call_line(2, "memory_write", '{"ops":[%s],"kept":[]}' % (INSERT % r"Deploys \ud83d go through staging.")), True),
    (call_line(3, "memory_write", r'{"ops":[{"op":"insert","topic":"t\udc00","kind":"state","text":"x"}],"kept":[]}'), True),
    (call_line(4, "memory_search", '{"terms":"kafka"}', r',"_meta":{"claudecode/toolUseId":"toolu_\ud800"}'), True),
    (call_line(5, "memory_search", r'{"terms":"kafka","\ud83d":1}'), True),
    (call_line(6, "memory_write", '{"ops":%s,"kept":[]}' % nested(199)), False),
    (call_line(7, "memory_write", '{"ops":[],"kept":%s}' % nested(5000)), False),
    (call_line(8, "memory_search", '{"terms":{"a":%s}}' % nested(300)), False),
    ('{"jsonrpc":"2.0","id":9,"method":"tools/call","params":["memory_search",{"terms":"x"}]}', False),
    ('{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"memory_search",', False),
    ('{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"memory_search","arguments":"deploy"}}', False),
    ('{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"arguments":{"terms":"x"}}}', False),
    (call_line(13, "memory_search", '{"terms":42}'), False),
    (call_line(14, "memory_search", '{}'), False),
    (call_line(15, "memory_write", '{"ops":[]}'), False),
    ('{"jsonrpc":"1.0","id":16,"method":"tools/call","params":{}}', False),
    ('{"jsonrpc":"2.0","id":"s\\ud83d","method":"ping"}', True),
]


def test_every_hostile_request_gets_an_answer_that_says_what_to_change(server):
    server.start()
    for line, _ in HOSTILE:
        server.send(line)
    ids = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, "s\ufffd"}
    found = server.answers(ids)
    assert ids <= found.keys(), f"unanswered: {ids - found.keys()}\n{server.stderr[-2000:]}"
    for index, (line, served) in enumerate(HOSTILE, start=1):
        request_id = "s\ufffd" if index == 17 else index
        [answer] = found[request_id]
        result = answer.get("result", {})
        failed = "error" in answer or result.get("isError")
        assert failed != served, (line[:120], answer)
        if failed:
            text = answer["error"]["message"] if "error" in answer else result["content"][0]["text"]
            assert "pydantic" not in text and "validation error" not in text and "Traceback" not in text, text
            assert 30 < len(text) < 1000, text
    assert "nests 5003 levels deep" in found[7][0]["error"]["message"]
    assert "not an array" in found[9][0]["error"]["message"]
    assert "not JSON" in found[10][0]["error"]["message"]
    assert "terms must be a string" in found[13][0]["result"]["content"][0]["text"]
    assert "kept is missing" in found[15][0]["result"]["content"][0]["text"]
    # Not wedged: an ordinary call after all of that is served.
    after = server.call(99, "memory_search", {"terms": "deploy staging"})
    assert after["id"] == 99 and not after["result"]["isError"]
    assert "\ufffd" in after["result"]["structuredContent"]["facts"][0]["text"]
    assert "Traceback" not in server.stderr


def test_a_batch_gets_an_answer_for_each_request(server):
    server.start()
    server.send('[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]')
    found = server.answers({1, 2})
    assert {1, 2} <= found.keys() and "batches are not supported" in found[1][0]["error"]["message"]


# Each id MCP forbids (a string or an integer only), in a cancellation and in a request.
ILL_TYPED_IDS = ["[1]", '{"a": 1}', "1.5", "1.0", "true", "null"]


def test_a_cancellation_or_a_request_with_an_ill_typed_id_ends_nothing(server):
    server.start()
    for value in ILL_TYPED_IDS:
        server.send('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s}}' % value)
    server.send('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}')
    for value in ILL_TYPED_IDS:
        server.send('{"jsonrpc":"2.0","id":%s,"method":"ping"}' % value)
    server.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    found = server.answers({1})
    assert found.get(1) == [{"jsonrpc": "2.0", "id": 1, "result": {}}], server.stderr[-2000:]
    # Notifications are never answered; each request is, with id null since its own cannot be named.
    refusals = found[None]
    assert len(refusals) == len(ILL_TYPED_IDS)
    assert all('"id" must be a string or an integer' in answer["error"]["message"] for answer in refusals)
    assert "ignored a cancellation whose requestId is an array" in server.stderr
    assert "Traceback" not in server.stderr and server.process.poll() is None


def test_a_cancellation_by_the_ids_string_form_settles_the_request():
    # The SDK takes "7" and 7 for one id: a call cancelled as "7" is never answered, so the
    # stop must not wait for it.
    wiring = wire.Wire()
    send, receive = anyio.create_memory_object_stream(10)

    async def forward(*lines):
        for line in lines:
            await wiring._forward(line.encode(), send, send)

    anyio.run(forward, '{"jsonrpc":"2.0","id":7,"method":"ping"}', '{"jsonrpc":"2.0","id":"8","method":"ping"}')
    assert wiring._pending == {7, 8}
    anyio.run(forward, '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"7"}}',
              '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8}}',
              '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[7]}}')
    assert wiring._pending == set()
    send.close()
    receive.close()


@pytest.mark.parametrize("line", [r'"\ud83d"', "42", "null", '{"id": 1, "method": "ping", "params": [1]}'])
def test_lines_that_are_no_request_are_read_without_a_crash(line):
    found = inbound.read_line(line)
    assert found.message is None and (found.replies or found.note)


def test_invalid_utf8_on_the_wire_is_read_as_u_fffd_and_said_on_stderr():
    line = call_line(1, "memory_search", '{"terms":"deploy \xff\xfe staging"}').encode("latin-1")
    found = inbound.read_bytes(line)
    assert found.message.params["arguments"] == {"terms": "deploy \ufffd\ufffd staging"}
    assert "2 invalid UTF-8 byte sequence(s) as U+FFFD" in found.note
    # A U+FFFD sent as such is no bad byte.
    assert inbound.read_bytes(call_line(2, "memory_search", '{"terms":"\u00fc \ufffd"}').encode()).note is None


def test_a_line_the_sdk_reads_is_left_as_it_is():
    line = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_search","arguments":{"terms":"x"}}}'
    assert inbound.read_line(line).message.params["arguments"] == {"terms": "x"}


# -- signals ----------------------------------------------------------------------------------


def assert_clean_exit(server, code):
    assert code == 0, f"exit {code}\n{server.stderr[-3000:]}"
    assert "Traceback" not in server.stderr and "KeyboardInterrupt" not in server.stderr, server.stderr[-3000:]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_after_answering_stops_the_server_with_stdin_open(server, signum):
    server.start()
    answered = server.call(1, "memory_search", {"terms": "deploy"})
    assert answered["id"] == 1
    server.signal(signum)
    assert_clean_exit(server, server.exited(30))


def test_a_signal_before_the_first_request_stops_the_server(server):
    server.start()  # initialized, nothing asked yet
    server.signal()
    assert_clean_exit(server, server.exited(30))


def test_sigint_while_the_sdk_is_still_importing_is_no_traceback(project, tmp_path):
    # -X importtime names each module as it is imported: once gate.serve.front is, the signal handler is
    # in place and the MCP SDK (a second or more, in a thread of its own) is still to come.
    starting = RawServer(project, child_env(tmp_path / "home"), python_flags=("-X", "importtime"))
    try:
        assert starting.wait_stderr("| gate.serve.front\n"), starting.stderr[-2000:]
        assert "| mcp.server.mcpserver\n" not in starting.stderr
        starting.signal()
        assert_clean_exit(starting, starting.exited(60))
        assert "| mcp.server.mcpserver\n" not in starting.stderr  # it stopped before loading the SDK
    finally:
        starting.close()


class HeldEmbeddings(FakeEmbeddings):
    """An embeddings endpoint that says when a request arrives and answers once released."""

    def __init__(self):
        self.arrived = threading.Event()
        self.go = threading.Event()
        super().__init__()

    def answer(self, handler, body):
        self.arrived.set()
        self.go.wait(30)
        super().answer(handler, body)


def test_sigint_during_a_call_lets_it_finish_answer_and_close(project, tmp_path):
    home = tmp_path / "home"
    endpoint = HeldEmbeddings()
    running = RawServer(project, child_env(home, MEMORY_GATE_EMBED_URL=endpoint.url, MEMORY_GATE_EMBED_MODEL="fake-embed"))
    try:
        running.start()
        running.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "memory_write",
            "arguments": {"ops": [{"op": "insert", "topic": "deploy", "kind": "state", "text": "Staging first."}], "kept": []},
        }})
        assert endpoint.arrived.wait(60), running.stderr[-2000:]  # the write is in flight, embedding
        running.signal()
        endpoint.go.set()
        answer = running.receive()
        assert answer and answer["id"] == 1 and not answer["result"]["isError"], answer
        assert_clean_exit(running, running.exited(30))
    finally:
        running.close()
        endpoint.close()
    conn = store.connect(config.database_for(home, project))
    assert [row[0] for row in conn.execute("SELECT text FROM facts")] == ["Staging first."]
    conn.close()
