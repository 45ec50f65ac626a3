"""The stdio MCP server: `memory_search` and `memory_write`, nothing else.

Built on the official `mcp` SDK (2.x, whose protocol Claude Code speaks natively). The tool
docstrings are prompts: the model reads them in every session, so they say when to call each
tool and what the contract is, in a few lines.

Each call is attributed to a turn (gate.memory.ledger): by the `claudecode/toolUseId` Claude Code
puts in the request's `_meta`, else by `CLAUDE_CODE_SESSION_ID`, else by this process, which then
is its own session. Calls run one at a time on one connection, over gate.serve.wire (every request
answered). Claude Code stops the server with SIGINT, at any moment: the server then reads no
further request, lets the call in flight finish and answer, closes the database and exits 0.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, WithJsonSchema

from gate import config, stopping
from gate.engine import store
from gate.serve import sightings, tools
from gate.serve.connection import Memory
from gate.serve.wire import Wire

TOOL_USE_ID = "claudecode/toolUseId"

INSTRUCTIONS = (
    "Project memory. Every turn: memory_search first, with keywords of the request; then, before "
    "the final answer, memory_write with what the turn changed, answering for every fact the "
    "searches returned (kept, updated or deleted)."
)


# Output schemas. Claude Code shows the model the structured content itself (see gate.serve.render),
# so optional fields are left out rather than sent as null.
class FactOut(BaseModel):
    id: int
    kind: str | None = None
    topic: str | None = None
    date: str | None = None
    text: str | None = None
    shown_before: bool | None = Field(None, description="true: shown earlier this session, only the id is repeated")


class SearchOut(BaseModel):
    # The contract first: a long result reaches the model as a 2 KB preview (gate.serve.render).
    must_answer: list[int] = Field(description="ids the next memory_write must keep, update or delete")
    next: str = Field(description="what to do next")
    notes: list[str] | None = None
    facts: list[FactOut]
    owner_words: str | None = Field(None, description="what the owner wrote this turn (its head, when long)")


class DoneOut(BaseModel):
    op: str = Field(description="insert, update, delete, or unchanged (an update that changed nothing)")
    id: int


class WriteOut(BaseModel):
    done: list[DoneOut]
    new_ids: list[int]
    kept: list[int]
    replayed: bool = Field(description="true: the same write had already been applied; nothing changed now")
    notes: list[str] | None = None
    gone: list[int] | None = Field(
        default=None, description="facts read this turn that another session deleted since: nothing to answer for"
    )
    next: str = Field(description="what the turn still owes memory, if anything")


# The model reads these in every session: when to call, and the contract, in a few lines.
SEARCH_DESCRIPTION = (
    "Search this project's memory: facts that hold (state), happened (event), were decided "
    "(decision) or bit someone (trap). Call it at the start of every turn with a few keywords of "
    "what the owner asks. Every fact it returns must then be answered for in memory_write: kept, "
    "updated or deleted. A fact already shown this session comes back as its id only."
)
WRITE_DESCRIPTION = (
    "Record what this turn changed in project memory, before your final answer; call it even "
    "when nothing changed (ops [] and kept []). Insert new facts, update or delete facts that no "
    "longer hold, and list in kept the ids read this turn that still hold: every id memory_search "
    "returned this turn must be kept, updated or deleted, or the write is refused."
)

Terms = Annotated[str, Field(description="a few keywords of what the owner asks, in any language")]

_OPS_SCHEMA = {
    "type": "array",
    "description": (
        'Changes, e.g. {"op": "insert", "topic": "deploy", "kind": "state", "text": "...", '
        '"date": "YYYY-MM-DD" (optional, default today)}, {"op": "update", "id": 12, "text": "..."} '
        '(any of topic, kind, text, date), {"op": "delete", "id": 7}. kind: state (how something '
        "is now), event (what happened), decision (a choice and its reason), trap (a pitfall). "
        "text: one subject, at most 600 characters, in the owner's language."
    ),
    "items": {"type": "object"},
}
_KEPT_SCHEMA = {
    "type": "array",
    "description": "ids read this turn that still hold as they are",
    "items": {"type": "integer"},
}
# The tools validate their own arguments, so that a malformed call gets a message naming the
# mend (gate.memory.write), not a pydantic dump; the schemas still tell the model the shapes.
Ops = Annotated[Any, WithJsonSchema(_OPS_SCHEMA)]
Kept = Annotated[Any, WithJsonSchema(_KEPT_SCHEMA)]


def _caller(memory: Memory, ctx: Context) -> tools.Caller:
    meta = ctx.request_context.meta or {}
    tool_use_id = meta.get(TOOL_USE_ID)
    return tools.Caller(
        memory.session,
        tool_use_id if isinstance(tool_use_id, str) and tool_use_id else None,
        memory.process,
        memory.handoff,
    )


class _Server(MCPServer):
    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        # The tools check their own arguments, so that a malformed call gets the product's
        # message naming the argument and its mend (gate.serve.tools), not pydantic's dump.
        problem = tools.argument_problem(name, arguments)
        if problem:
            raise ToolError(problem)
        return await super().call_tool(name, arguments, context)


def build(settings: config.Settings, memory: Memory | None = None) -> tuple[MCPServer, Memory]:
    """The SDK's server for the two tools; `memory`: the connection gate.serve.front served the
    first calls with, so that the session keeps its identity and its database."""
    memory = memory if memory is not None else Memory(settings)
    app = _Server("memory-gate", instructions=INSTRUCTIONS)

    @app.tool(
        name="memory_search",
        description=SEARCH_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
        structured_output=True,
    )
    def memory_search(terms: Terms, ctx: Context) -> Annotated[CallToolResult, SearchOut]:
        try:
            answer = tools.search_call(memory, terms, _caller(memory, ctx))
        except tools.CallFailed as failed:
            raise ToolError(str(failed)) from failed
        return CallToolResult(content=[TextContent(text=answer.text)], structured_content=answer.structured())

    @app.tool(
        name="memory_write",
        description=WRITE_DESCRIPTION,
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
        ),
        structured_output=True,
    )
    def memory_write(ops: Ops, kept: Kept, ctx: Context) -> Annotated[CallToolResult, WriteOut]:
        try:
            answer = tools.write_call(memory, ops, kept, _caller(memory, ctx))
        except tools.CallFailed as failed:
            raise ToolError(str(failed)) from failed
        return CallToolResult(content=[TextContent(text=answer.text)], structured_content=answer.structured())

    return app, memory


# How long the end of a stop waits for a call's worker thread to let go of the connection.
CLOSE_WAIT = 0.1


def _abandon() -> None:
    """End the process with a call still running in a worker thread (waiting on an embeddings
    endpoint), already answered that nothing was written: no write transaction can begin any more
    (store.close_writes), and one under way finishes first."""
    store.writes_done(CLOSE_WAIT)
    sys.stderr.flush()
    os._exit(0)


class _OneLine(logging.Formatter):
    """The SDK's log records as one line each: what failed and why, never a traceback (a request
    for a prompt that does not exist is the client's mistake, answered with an error already)."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"memory-gate serve: {record.getMessage()}"
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            text += f" ({type(error).__name__}: {error})"
        return text


def _sdk_logs_in_one_line() -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(_OneLine())
    sdk = logging.getLogger("mcp")
    sdk.addHandler(handler)
    sdk.setLevel(logging.WARNING)
    sdk.propagate = False


def serve(
    settings: config.Settings,
    *,
    pending: bytes = b"",
    memory: Memory | None = None,
    witness: sightings.Witness | None = None,
) -> int:
    """Serve the MCP session on stdin and stdout until it ends or a signal stops it. `pending`:
    what gate.serve.front read from stdin and did not answer itself, served first; `memory`: the
    front's connection, if it served calls; `witness`: the port the Stop hook asks what a turn
    did (gate.serve.sightings), started here when the front did not."""
    witness = witness if witness is not None else sightings.Witness.start(settings)
    app, memory = build(settings, memory if memory is not None else Memory(settings, witness.record))
    _sdk_logs_in_one_line()
    # The SDK's own stdio transport drops the lines it cannot parse unanswered and blocks in a
    # thread no signal reaches; gate.serve.wire serves the same session without either fault.
    lowlevel = app._lowlevel_server
    wire = Wire(pending=pending, overdue=store.close_writes, abandon=_abandon)

    async def main() -> None:
        async with anyio.create_task_group() as group:

            async def stop_on_signal() -> None:
                try:
                    with anyio.open_signal_receiver(*stopping.SIGNALS) as signals:
                        if stopping.requested():  # before this listened
                            wire.stop()
                        async for _ in signals:
                            wire.stop()
                finally:
                    stopping.hold()  # leaving the receiver restores Python's KeyboardInterrupt

            group.start_soon(stop_on_signal)
            await wire.serve(lambda read, write: lowlevel.run(read, write, lowlevel.create_initialization_options()))
            group.cancel_scope.cancel()

    stopping.hold()
    if stopping.requested():
        witness.close()
        return 0
    try:
        anyio.run(main)
    finally:
        # A call still running in its worker thread holds the lock: let it finish its
        # transaction, then close. One waiting on an embeddings endpoint past the stop was
        # answered already, and its write can no longer begin (store.close_writes): the
        # process ends without waiting for it, nothing of it written.
        if memory.lock.acquire(timeout=CLOSE_WAIT):
            try:
                memory.close()
            finally:
                memory.lock.release()
        witness.close()
        # Every answer is out (written straight to the descriptor) and the database closed: the
        # process ends here, without the interpreter's teardown of the SDK (half a second).
        sys.stderr.flush()
        os._exit(0)


# What gate.serve.front answers before the SDK is loaded: the requests Claude Code sends first, in
# the protocol version it speaks with an SDK of this generation.
DISCOVERY_PROTOCOL = "2026-07-28"
DISCOVERY_METHODS = ("server/discover", "tools/list", "prompts/list", "resources/list")


# As Claude Code 2.1.332 sends it; the answers depend on the version alone.
DISCOVERY_META = {
    "io.modelcontextprotocol/protocolVersion": DISCOVERY_PROTOCOL,
    "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
    "io.modelcontextprotocol/clientCapabilities": {
        "roots": {"listChanged": True},
        "elicitation": {"form": {}, "url": {}},
    },
}


def first_replies(requests: list[dict], settings: config.Settings | None = None) -> list[dict]:
    """The first message this server's SDK session sends back to each request (sent one after
    the other, each with the 2026-07-28 envelope), as gate.serve.wire would write it: the session
    runs in memory."""
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    app, _ = build(settings or config.load())
    lowlevel = app._lowlevel_server
    replies: list[dict] = []

    async def main() -> None:
        to_server, server_in = anyio.create_memory_object_stream[Any](len(requests))
        server_out, from_server = anyio.create_memory_object_stream[Any](len(requests))
        async with to_server, server_in, server_out, from_server, anyio.create_task_group() as group:
            group.start_soon(lowlevel.run, server_in, server_out, lowlevel.create_initialization_options())
            for request in requests:
                params = {**request.get("params", {}), "_meta": DISCOVERY_META}
                message = jsonrpc_message_adapter.validate_python({"jsonrpc": "2.0", **request, "params": params})
                await to_server.send(SessionMessage(message))
                reply = await from_server.receive()
                replies.append(json.loads(reply.message.model_dump_json(by_alias=True, exclude_unset=True)))
            group.cancel_scope.cancel()

    anyio.run(main)
    return replies


def discovery_answers(settings: config.Settings | None = None) -> dict[str, Any]:
    """The SDK's answers to DISCOVERY_METHODS, as this server gives them over the wire."""
    requests = [{"id": number, "method": method} for number, method in enumerate(DISCOVERY_METHODS)]
    answers: dict[str, Any] = {}
    for method, reply in zip(DISCOVERY_METHODS, first_replies(requests, settings)):
        if "result" not in reply:
            raise RuntimeError(f"the SDK did not answer {method}: {reply}")
        answers[method] = reply["result"]
    return answers


def discovery_json() -> str:
    """gate/serve/discovery.json's text: the answers, and the SDK versions that gave them."""
    from importlib import metadata

    recorded = {
        "why": "gate/serve/front.py answers these before the MCP SDK is loaded; python -m gate.serve.front writes this file",
        "mcp": metadata.version("mcp"),
        "mcp_types": metadata.version("mcp_types"),
        "protocol": DISCOVERY_PROTOCOL,
        "results": discovery_answers(),
    }
    return json.dumps(recorded, indent=1, ensure_ascii=False) + "\n"
