"""The real server over real stdio, driven by the official SDK's own client."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
import sys

import anyio
import golden
import pytest
from conftest import child_env
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from gate import config
from gate.engine import store
from gate.memory import audit, ledger


def run_client(project, home, script, *, prefix=(), **env):
    """Start `memory-gate serve` in `project` (under the command `prefix`, if any), run
    `script(client)`, return what it returns."""
    argv = [*prefix, sys.executable, "-m", "gate", "serve"]
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=child_env(home, **env), cwd=str(project))
    result = {}

    async def main():
        async with Client(params) as client:
            result["value"] = await script(client)

    anyio.run(main)
    return result["value"]


def database(project, home):
    return Path(config.database_for(home, project))


def test_tool_listing_is_what_the_model_reads(project, tmp_path):
    async def script(client):
        return (await client.list_tools()).tools

    listed = run_client(project, tmp_path / "home", script)
    assert [tool.name for tool in listed] == ["memory_search", "memory_write"]
    search, write = listed
    assert search.annotations.read_only_hint is True
    assert write.annotations.read_only_hint is False and write.annotations.destructive_hint is True
    assert search.output_schema and write.output_schema
    for tool in listed:
        assert len(tool.description) < 2048  # Claude Code cuts descriptions at 2 KB
    dumped = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed]
    golden.check("tool_listing.json", json.dumps(dumped, indent=2, sort_keys=True) + "\n")


def test_search_write_search_over_stdio(project, tmp_path):
    home = tmp_path / "home"

    async def script(client):
        empty = await client.call_tool("memory_search", {"terms": "deploy"})
        wrote = await client.call_tool(
            "memory_write",
            {"ops": [{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}], "kept": []},
        )
        found = await client.call_tool("memory_search", {"terms": "deploy staging"})
        refused = await client.call_tool("memory_write", {"ops": [], "kept": []})
        kept = await client.call_tool("memory_write", {"ops": [], "kept": wrote.structured_content["new_ids"]})
        return empty, wrote, found, refused, kept

    empty, wrote, found, refused, kept = run_client(project, home, script)
    assert not empty.is_error and empty.structured_content["facts"] == []
    assert wrote.structured_content["new_ids"] == [1]
    assert wrote.structured_content["done"] == [{"op": "insert", "id": 1}]
    assert found.structured_content["facts"][0] == {
        "id": 1, "topic": "deploy", "kind": "state",
        "date": found.structured_content["facts"][0]["date"], "text": "Deploys go through staging.",
    }
    assert found.structured_content["must_answer"] == [1]
    assert "memory_write" in found.structured_content["next"]
    assert "[1] state | deploy" in found.content[0].text
    assert refused.is_error and "fact 1 read this turn is not answered for" in refused.content[0].text
    assert not kept.is_error and kept.structured_content["kept"] == [1]
    log = audit.log_path(database(project, home))
    assert [json.loads(line)["op"] for line in log.read_text().splitlines()] == ["insert"]


def test_search_alone_creates_no_database(project, tmp_path):
    home = tmp_path / "home"

    async def script(client):
        return await client.call_tool("memory_search", {"terms": "anything"})

    run_client(project, home, script)
    assert not database(project, home).exists()


def unprivileged():
    """A command prefix under which file permissions bind: as root, root without the
    capabilities that override them (setpriv); otherwise none is needed."""
    if not (hasattr(os, "geteuid") and os.geteuid() == 0):
        return ()
    if not shutil.which("setpriv"):
        pytest.skip("as root, permissions bind only without CAP_DAC_OVERRIDE: setpriv is missing")
    return ("setpriv", "--bounding-set=-dac_override,-dac_read_search")


def test_a_folder_that_cannot_be_entered_is_explained(project, tmp_path):
    home = tmp_path / "home"
    store.connect(database(project, home)).close()
    locked = database(project, home).parent.parent
    prefix = unprivileged()
    locked.chmod(0)
    try:
        async def script(client):
            return await client.call_tool("memory_search", {"terms": "deploy"})

        result = run_client(project, home, script, prefix=prefix)
    finally:
        locked.chmod(0o700)
    text = result.content[0].text
    assert result.is_error and "permission denied" in text and "check their owner and mode" in text, text
    assert "Traceback" not in text


@pytest.mark.parametrize(
    "arguments, expected",
    [
        ({"ops": "not a list", "kept": []}, "ops must be a list"),
        ({"ops": [{"op": "insert", "topic": "t", "kind": "nope", "text": "x"}], "kept": []}, 'kind "nope"'),
        ({"ops": [], "kept": [1, "x"]}, "kept[1]"),
        ({"ops": [{"op": "insert", "topic": "t", "kind": "state", "text": "x" * 601}], "kept": []}, "601 characters"),
        ({"ops": [], "kept": {"a": 1}}, "kept must be a list"),
    ],
)
def test_invalid_input_is_an_error_result_that_says_what_to_change(project, tmp_path, arguments, expected):
    async def script(client):
        return await client.call_tool("memory_write", arguments)

    result = run_client(project, tmp_path / "home", script)
    assert result.is_error and expected in result.content[0].text


def test_ops_sent_as_json_text_are_understood(project, tmp_path):
    async def script(client):
        ops = json.dumps([{"op": "insert", "topic": "t", "kind": "state", "text": "as text"}])
        return await client.call_tool("memory_write", {"ops": ops, "kept": "[]"})

    result = run_client(project, tmp_path / "home", script)
    assert not result.is_error and result.structured_content["new_ids"] == [1]


def test_calls_are_attributed_by_tool_use_id(project, tmp_path):
    """The PreToolUse hook's mapping wins over the server's (possibly wrong) session id."""
    home = tmp_path / "home"
    conn = store.connect(database(project, home))
    ledger.open_turn(conn, "hook-session", "prompt-1", "keep deploys on staging")
    for tool_use_id in ("toolu_S", "toolu_W"):
        ledger.record_tool_call(conn, tool_use_id, "hook-session", "prompt-1", "memory")
    conn.close()

    async def script(client):
        found = await client.call_tool("memory_search", {"terms": "deploy"}, meta={"claudecode/toolUseId": "toolu_S"})
        wrote = await client.call_tool(
            "memory_write",
            {"ops": [{"op": "insert", "topic": "deploy", "kind": "state", "text": "Staging."}], "kept": []},
            meta={"claudecode/toolUseId": "toolu_W"},
        )
        return found, wrote

    found, wrote = run_client(project, home, script, CLAUDE_CODE_SESSION_ID="stale-session")
    assert found.structured_content["owner_words"] == "keep deploys on staging"
    conn = store.connect(database(project, home))
    assert conn.execute("SELECT searched, wrote FROM turns WHERE prompt_id = 'prompt-1'").fetchone() == (1, 1)
    line = json.loads(audit.log_path(database(project, home)).read_text())
    assert line["session"] == "hook-session" and line["words"] == "keep deploys on staging"


def test_a_retried_call_is_not_applied_twice(project, tmp_path):
    home = tmp_path / "home"

    async def script(client):
        args = {"ops": [{"op": "insert", "topic": "t", "kind": "state", "text": "once"}], "kept": []}
        meta = {"claudecode/toolUseId": "toolu_R"}
        return [await client.call_tool("memory_write", args, meta=meta) for _ in range(2)]

    first, second = run_client(project, home, script)
    assert second.structured_content["replayed"] and second.structured_content["new_ids"] == [1]
    conn = store.connect(database(project, home))
    assert conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 1


def test_a_different_write_under_a_used_call_id_is_refused_not_replayed(project, tmp_path):
    home = tmp_path / "home"

    async def script(client):
        meta = {"claudecode/toolUseId": "toolu_R"}
        first = await client.call_tool(
            "memory_write", {"ops": [{"op": "insert", "topic": "t", "kind": "state", "text": "first"}], "kept": []},
            meta=meta,
        )
        other = await client.call_tool(
            "memory_write", {"ops": [{"op": "insert", "topic": "t", "kind": "state", "text": "other"}], "kept": []},
            meta=meta,
        )
        return first, other

    first, other = run_client(project, home, script)
    assert not first.is_error
    assert other.is_error and "already used by a different memory_write" in other.content[0].text
    conn = store.connect(database(project, home))
    assert [row[0] for row in conn.execute("SELECT text FROM facts")] == ["first"]


HOSTILE = [
    ("memory_search", {"terms": 42}),
    ("memory_search", {"terms": None}),
    ("memory_search", {}),
    ("memory_search", {"terms": "x" * 1_000_000}),
    ("memory_search", {"terms": "\x00\x07 ' OR 1=1 -- NEAR( * ^"}),
    ("memory_write", {"ops": [{"op": "insert", "topic": "t", "kind": "state", "text": "y" * 1_000_000}], "kept": []}),
    ("memory_write", {"ops": [[[[[[[[[[[]]]]]]]]]]], "kept": [[[[]]]]}),
    ("memory_write", {"ops": [{"op": "delete", "id": 10**30}], "kept": [-1]}),
    ("memory_write", {"ops": None, "kept": None}),
    ("memory_write", {"kept": []}),
]


def test_hostile_calls_get_an_answer_or_a_message_never_a_traceback(project, tmp_path):
    async def script(client):
        return [await client.call_tool(name, arguments) for name, arguments in HOSTILE]

    results = run_client(project, tmp_path / "home", script)
    for (name, arguments), result in zip(HOSTILE, results):
        text = result.content[0].text
        assert "Traceback" not in text and 'File "' not in text, (name, text[:300])
        if result.is_error:
            assert len(text) < 4000 and ("memory_write refused" in text or "memory_search needs terms" in text
                                         or "terms must be a string" in text), (name, text[:300])
            assert "pydantic" not in text and "validation error" not in text, (name, text[:300])
    assert not results[3].is_error  # a megabyte of search terms is just a long query
