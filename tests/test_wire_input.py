"""No input ends `memory-gate serve`: through the real server's stdio, every line a client could
send (malformed JSON, wrong types, unknown methods, notifications, responses to nothing, batches,
binary, huge lines) is answered or ignored as JSON-RPC and MCP say, and the server goes on.

Each line is followed by a ping used as a barrier: what arrives before the ping's answer is what
that line drew, so an answer missing, doubled, or arriving for the wrong line fails the test."""

from __future__ import annotations

import sys

import pytest
from conftest import child_env
from wire_process import RawServer

from gate import serve
from gate.serve import inbound

NULL = None
# (the line, the ids its answers carry: a request's own id, NULL for an error that can name none;
# an empty list for a message JSON-RPC never answers).
LINES: list[tuple[bytes | str, list]] = [
    # Malformed JSON.
    ('{"jsonrpc":"2.0","id":1,"method":"ping"', [1]),
    ('{"jsonrpc":"2.0","id":2,"method":"ping"}}', [2]),
    ("{'jsonrpc':'2.0','id':3,'method':'ping'}", [NULL]),
    ('{"jsonrpc":"2.0","id":4,"method":"ping",}', [4]),
    ("not json at all", [NULL]),
    ("{", [NULL]),
    ("]", [NULL]),
    ('"just a string"', [NULL]),
    ("42", [NULL]),
    ("true", [NULL]),
    ("null", [NULL]),
    ("{}", [NULL]),
    ('{"id":5}', [5]),
    ('{"jsonrpc":"2.0","id":6}', [6]),
    ('{"jsonrpc":"2.0","id":7,"method":"ping","params":5}', [7]),
    ('{"jsonrpc":"2.0","id":8,"method":"ping","params":null}', [8]),
    ('{"jsonrpc":"2.0","id":9,"method":"ping","params":{"_meta":5}}', [9]),
    ('{"jsonrpc":"2.0","id":10,"method":42}', [10]),
    ('{"jsonrpc":2,"id":11,"method":"ping"}', [11]),
    # Ids MCP allows, at their edges.
    ('{"jsonrpc":"2.0","id":-1,"method":"ping"}', [-1]),
    ('{"jsonrpc":"2.0","id":"","method":"ping"}', [""]),
    ('{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}', [123456789012345678901234567890]),
    # Unknown methods and wrong params for known ones.
    ('{"jsonrpc":"2.0","id":20,"method":"no/such/method"}', [20]),
    ('{"jsonrpc":"2.0","id":21,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}', [21]),
    ('{"jsonrpc":"2.0","id":22,"method":"prompts/get","params":{"name":"x"}}', [22]),
    ('{"jsonrpc":"2.0","id":23,"method":"logging/setLevel","params":{"level":"debug"}}', [23]),
    ('{"jsonrpc":"2.0","id":24,"method":"completion/complete","params":{}}', [24]),
    ('{"jsonrpc":"2.0","id":25,"method":"tools/list","params":{"cursor":5}}', [25]),
    ('{"jsonrpc":"2.0","id":26,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}', [26]),
    ('{"jsonrpc":"2.0","id":27,"method":"initialize","params":{}}', [27]),
    ('{"jsonrpc":"2.0","id":28,"method":"notifications/cancelled","params":{"requestId":1}}', [28]),
    ('{"jsonrpc":"2.0","id":29,"method":"tools/call","params":{"name":"memory_search","arguments":{"terms":"x"},"_meta":[1]}}', [29]),
    ('{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"memory_search","arguments":{"terms":"x"},"_meta":{"progressToken":{"a":1}}}}', [30]),
    ('{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":["memory_search"],"arguments":{}}}', [31]),
    ('{"jsonrpc":"2.0","id":32,"method":"ping","extra":{"deep":[1,2,3]}}', [32]),
    # Notifications and responses: never answered.
    ('{"jsonrpc":"2.0","method":"no/such/notification"}', []),
    ('{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":"x"}}', []),
    ('{"jsonrpc":"2.0","method":"notifications/roots/list_changed","params":5}', []),
    ('{"jsonrpc":"2.0","method":"notifications/initialized"}', []),
    ('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":999}}', []),
    ('{"jsonrpc":"2.0","method":"notifications/cancelled","params":"everything"}', []),
    ('{"jsonrpc":"2.0","id":40,"result":{}}', []),
    ('{"jsonrpc":"2.0","id":41,"error":{"code":1,"message":"x"}}', []),
    ('{"jsonrpc":"2.0","id":42,"result":{},"error":{"code":1,"message":"x"}}', []),
    ('{"jsonrpc":"2.0","id":"s","method":"ping","result":{}}', ["s"]),
    # Batches (MCP has none since 2025-06-18): each request in one refused, an empty one too.
    ("[]", [NULL]),
    ("[1, 2]", [NULL]),
    ('[{"jsonrpc":"2.0","id":50,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]', [50]),
    ('[{"jsonrpc":"2.0","id":51,"method":"ping"},{"jsonrpc":"2.0","id":52,"method":"ping"}]', [51, 52]),
    # Binary and other encodings.
    (bytes(range(256)).replace(b"\n", b""), [NULL]),
    (b"\x00" * 1000, [NULL]),
    (b'\xef\xbb\xbf{"jsonrpc":"2.0","id":60,"method":"ping"}', [60]),
    ('{"jsonrpc":"2.0","id":61,"method":"ping"}'.encode("utf-16"), [NULL]),
    (b'{"jsonrpc":"2.0","id":62,"method":"tools/call","params":{"name":"memory_search","arguments":{"terms":"\xff\xfe deploy"}}}', [62]),
    (b"\r", []),
    (b"   \t ", []),
    # Huge lines: a call whose terms run to megabytes, and megabytes of no JSON.
    ('{"jsonrpc":"2.0","id":70,"method":"tools/call","params":{"name":"memory_search","arguments":{"terms":"%s"}}}'
     % ("deploy " * 300_000), [70]),
    ("a" * 3_000_000, [NULL]),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("wire-input")
    project = base / "project"
    project.mkdir()
    running = RawServer(project, child_env(base / "home"))
    running.start()
    yield running
    running.close()


def drawn(server: RawServer, line, barrier: str) -> list:
    """The ids of what `line` drew, read until the barrier ping's answer."""
    server.send(line)
    server.send({"jsonrpc": "2.0", "id": barrier, "method": "ping"})
    ids = []
    while True:
        message = server.receive(60)
        assert message is not None, f"no answer to the barrier after {str(line)[:100]!r}:\n{server.stderr[-2000:]}"
        if message.get("id") == barrier:
            return ids
        assert "id" in message, message
        ids.append(message["id"])


@pytest.mark.parametrize("number", range(len(LINES)), ids=[repr(line)[:60] for line, _ in LINES])
def test_each_line_is_answered_or_ignored_as_the_protocol_says(server, number):
    line, expected = LINES[number]
    before = len(server.stderr)
    got = drawn(server, line, f"barrier-{number}")
    # A tool call may answer after the ping it raced: wait for it by its id.
    late = [each for each in expected if each is not NULL and each not in got]
    if late:
        found = server.answers(set(late))
        got += [key for key in found for _ in found[key]]
    assert sorted(got, key=repr) == sorted(expected, key=repr), f"{str(line)[:100]!r}\n{server.stderr[-2000:]}"
    assert server.process.poll() is None and "Traceback" not in server.stderr[before:], server.stderr[before:][-3000:]


def test_after_every_line_the_server_still_searches(server):
    answer = server.call("last", "memory_search", {"terms": "deploy staging"})
    assert answer["id"] == "last" and not answer["result"]["isError"], answer
    assert "Traceback" not in server.stderr



def peak_memory(pid: int) -> int:
    """The process's peak resident memory in bytes (Linux)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_line_past_the_limit_is_answered_and_let_go_as_it_comes(server):
    before = peak_memory(server.process.pid)
    size = 64 << 20
    line = (b'{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"memory_search",'
            b'"arguments":{"terms":"' + b"x" * size + b'"}}}')
    got = drawn(server, line, "barrier-big")
    assert got == ["big"]
    assert peak_memory(server.process.pid) - before < 2 * serve.MAX_LINE  # not the 64 MiB it sent
    assert "Traceback" not in server.stderr


def test_a_line_past_the_limit_is_refused_naming_the_limit_and_its_id():
    found = inbound.too_long(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"memory_', 9_000_000)
    [reply] = found.replies
    assert reply.id == 7 and "ran to 9,000,000 bytes" in reply.error.message and "at most 8 MiB" in reply.error.message
