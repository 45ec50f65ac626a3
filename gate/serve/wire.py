"""The stdio wire of `memory-gate serve`: one JSON-RPC message a line, and every request answered.

The SDK's own stdio transport drops, with no reply, every line its parser refuses: a lone
surrogate escape anywhere (`"\\ud83d"`, which JSON allows and UTF-8 cannot hold), nesting past
about 200 levels, `params` sent as an array. In Claude Code an unanswered tool call is a wedged
agent. Here a line the SDK refuses is read again with Python's json: each lone surrogate becomes
U+FFFD (as invalid UTF-8 bytes already do on the way in) and the call is served; what still cannot
be served gets a JSON-RPC error that says what to change, with the request's id whenever the line
names one. A request whose id is no string or integer (an object, an array, a fraction, a boolean,
null) is one MCP forbids and the SDK would take for a notification and never answer: it is
refused with id null, as JSON-RPC says. A cancellation naming no such id is ignored. A message that is neither a request, a notification nor
a response (`{}`, an id alone) is an invalid request and answered, under its id when it names one.
A line past MAX_LINE is let go as it arrives and answered with the limit; what the SDK logs is
one line on stderr, never a traceback.

Stopping: reads never block in a thread (the wire waits on the event loop for stdin to be
readable), so a signal is obeyed in every state. Once told to stop, the wire reads no further
line and gives the calls in flight GRACE to finish and answer; then a write still waiting for the
lock is told to give up (and says so), and a call still waiting on anything else (an embeddings
endpoint) is answered here that nothing was written, its write no longer able to begin. A stop
ends the server within a second.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.dispatcher import as_request_id, coerce_request_id
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from gate.serve import front

# Deeper than any message the tools need (a call's arguments are a few levels deep) and well
# inside what the SDK's parser and Python's json read.
MAX_DEPTH = 100
# How long calls in flight may take to finish once a stop is asked, and then how long those told
# to give up (a write waiting for the lock) take to say so: a stop ends the server within 1 s.
GRACE = 0.5
SETTLE = 0.15
CHUNK = 1 << 16
# Past the longest line read, a line is let go as it arrives (only its head is kept, for its id),
# so no input holds more memory.
MAX_LINE = front.MAX_LINE
# Requests that stay open for the whole session (Claude Code's subscription to list changes):
# never "in flight", or every stop would wait the whole grace for them.
OPEN_ENDED = frozenset({"subscriptions/listen"})
# poll() reports a pipe writable when this much fits, so a write of it never blocks.
PIPE_BUF = 4096

_SURROGATE = re.compile("[\ud800-\udfff]")
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[{}\[\]:,]|[^\s{}\[\]:,"]+')
_EXAMPLE = '{"name": "memory_search", "arguments": {"terms": "deploy staging"}}'


@dataclass
class Inbound:
    """What one line asks: a message to serve, replies to send at once, and a note for stderr."""

    message: types.JSONRPCMessage | None = None
    replies: list[types.JSONRPCError] = field(default_factory=list)
    note: str | None = None


def read_bytes(raw: bytes) -> Inbound:
    """read_line of one line as it came on stdin: bytes that are not UTF-8 are read as U+FFFD,
    as before, and stderr is told how many, so that a fact stored with them is not a mystery."""
    try:
        return read_line(raw.decode("utf-8"))
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
    found = read_line(text)
    bad = text.count("\ufffd") - raw.count("\ufffd".encode())
    said = f"read {bad} invalid UTF-8 byte sequence(s) as U+FFFD in line {text[:60]!r}"
    return Inbound(found.message, found.replies, f"{found.note}; {said}" if found.note else said)


def read_line(line: str) -> Inbound:
    """The message on one line of stdin, or the errors that answer it."""
    if not line.strip():
        return Inbound()
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError:
        pass
    else:
        if not isinstance(message, types.JSONRPCNotification) or not _names_an_id(json.loads(line)):
            return Inbound(message)
    head_ids, depth = _head(line)
    if depth > MAX_DEPTH:
        return _refused(
            head_ids,
            types.INVALID_REQUEST,
            (
                f"this message nests {depth} levels deep; memory-gate reads at most {MAX_DEPTH}. The "
                "tools take flat arguments: terms is a string, ops a list of flat objects, kept a list of ids"
            ),
        )
    try:
        data = json.loads(line)
    except ValueError as error:
        return _refused(
            head_ids,
            types.PARSE_ERROR,
            (
                f"this line is not JSON ({getattr(error, 'msg', error)} at column {getattr(error, 'colno', '?')}): "
                "send each JSON-RPC message as one line of JSON"
            ),
        )
    data, replaced = _without_surrogates(data)
    if isinstance(data, list):
        return _batch(data)
    if not isinstance(data, dict):
        return _refused(
            None,
            types.INVALID_REQUEST,
            (
                f"a JSON-RPC message is an object, not {_kind(data)}: e.g. "
                f'{{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {_EXAMPLE}}}'
            ),
        )
    if replaced:
        try:
            message = types.jsonrpc_message_adapter.validate_python(data, by_name=False)
        except ValidationError:
            pass
        else:
            if not isinstance(message, types.JSONRPCNotification) or not _names_an_id(data):
                return Inbound(
                    message, note=f"replaced {replaced} lone surrogate(s) with U+FFFD in message {_id(data)!r}"
                )
    code, problem = _what_is_wrong(data)
    if ("method" in data and "id" not in data) or ("method" not in data and ("result" in data or "error" in data)):
        # A notification or a response: JSON-RPC answers neither, so stderr is told.
        return Inbound(note=f"dropped a message it cannot read: {problem}")
    # Anything else is a request JSON-RPC calls invalid ({}, an id alone): answered, under its id
    # when it names one MCP allows, else null.
    return _refused(_id(data), code, problem)


def too_long(head: bytes, size: int) -> Inbound:
    """The answer to a line past MAX_LINE, of which only its first bytes were kept: to the ids
    they name."""
    ids, _ = _head(head.decode("utf-8", errors="replace"))
    return _refused(
        ids,
        types.INVALID_REQUEST,
        (
            f"this line ran to {size:,} bytes; memory-gate reads lines of at most {MAX_LINE >> 20} MiB and "
            f"let the rest go. A fact is at most a few hundred characters: send fewer ops a write"
        ),
    )


def tool_call_problem(params: dict[str, Any] | None) -> str | None:
    """What is wrong with the params of a tools/call, which the SDK answers only with "Invalid
    request parameters"; None if nothing."""
    params = params or {}
    name = params.get("name")
    if not isinstance(name, str):
        return f"tools/call needs the tool's name as a string, e.g. {_EXAMPLE}"
    arguments = params.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        return (
            f"the arguments of {name} must be an object naming each argument (got {_kind(arguments)}), e.g. {_EXAMPLE}"
        )
    return None


def _refused(request_ids: Any, code: int, message: str) -> Inbound:
    """Errors answering the request (or each request of a batch; with no id known, one with id
    null, as JSON-RPC says)."""
    ids = request_ids if isinstance(request_ids, list) else [request_ids]
    replies = [
        types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))
        for request_id in ids or [None]
    ]
    return Inbound(replies=replies, note=f"answered a message it cannot serve: {message[:200]}")


def _id(data: dict) -> int | str | None:
    return as_request_id(data.get("id"))


def _names_an_id(data: Any) -> bool:
    """Whether a message the SDK read as a notification has an id member: a request, then (JSON-RPC
    calls a message with an id a request, whatever the id), whose id the SDK dropped."""
    return isinstance(data, dict) and "id" in data


def _kind(value: Any) -> str:
    return {
        list: "an array",
        dict: "an object",
        str: "a string",
        bool: "a boolean",
        type(None): "null",
        float: "a decimal number",
    }.get(type(value), "a number")


def _batch(items: list) -> Inbound:
    problem = "batches are not supported: send each request as its own line"
    ids = [_id(item) for item in items if isinstance(item, dict) and "method" in item and _id(item) is not None]
    return Inbound(
        replies=_refused(ids, types.INVALID_REQUEST, problem).replies,
        note=f"answered a batch of {len(items)}: {problem}",
    )


def _what_is_wrong(data: dict) -> tuple[int, str]:
    if data.get("jsonrpc") != "2.0":
        return types.INVALID_REQUEST, 'every message must carry "jsonrpc": "2.0"'
    if "method" in data and not isinstance(data["method"], str):
        return types.INVALID_REQUEST, '"method" must be a string, e.g. "tools/call"'
    if "id" in data and _id(data) is None:
        return types.INVALID_REQUEST, (
            f'"id" must be a string or an integer (got {_kind(data["id"])}), e.g. "id": 7; a notification has no id'
        )
    params = data.get("params")
    if isinstance(params, list):
        return types.INVALID_PARAMS, (
            "params must be an object naming each parameter, not an array: MCP has no positional "
            f"parameters. For a tool call: {_EXAMPLE}"
        )
    if params is not None and not isinstance(params, dict):
        return types.INVALID_PARAMS, f"params must be an object (got {_kind(params)}), e.g. {_EXAMPLE}"
    if "method" not in data and "result" not in data and "error" not in data:
        return types.INVALID_REQUEST, "a message needs a method (a request), or a result or an error (a response)"
    try:
        types.jsonrpc_message_adapter.validate_python(data, by_name=False)
    except ValidationError as error:
        first = error.errors()[0] if error.errors() else {"loc": (), "msg": str(error)}
        where = ".".join(str(part) for part in first["loc"][1:]) or "the message"
        return types.INVALID_REQUEST, f"{where}: {first['msg']}"
    return types.INVALID_REQUEST, "this message cannot be served"


def _head(line: str) -> tuple[list[Any], int]:
    """The ids a line that may not parse names at its top (its own, or each of a batch's), and
    how deep it nests, read by tokens (never recursively, so no depth defeats it)."""
    depth = deepest = 0
    top = ""  # "{" or "[": what the line is
    key: Any = None
    value_next = False
    ids: list[Any] = []
    candidate: Any = None
    member_depth = 1
    for match in _TOKEN.finditer(line):
        token = match.group()
        if token in "{[":
            depth += 1
            deepest = max(deepest, depth)
            top = top or token
            key, value_next = None, False
            continue
        if token in "}]":
            if depth == member_depth and candidate is not None:
                ids.append(candidate)  # the id's value ended: it is whole
            candidate = None
            depth -= 1
            continue
        # The members of the message itself: the line's object, or each object of a batch.
        member_depth = 1 if top == "{" else 2
        if depth != member_depth:
            continue
        if token == ":":
            value_next = True
        elif token == ",":
            if candidate is not None:
                ids.append(candidate)
            key, value_next, candidate = None, False, None
        elif value_next:
            if key == "id":
                # Taken once a comma or brace follows: a line cut inside the id ("id": 12|34) names
                # another request's id.
                try:
                    candidate = json.loads(token)
                except ValueError:
                    pass
            value_next = False
        elif key is None:
            try:
                key = json.loads(token)
            except ValueError:
                key = ""
    return [
        found for found in ids if isinstance(found, str) or (isinstance(found, int) and not isinstance(found, bool))
    ], deepest


def _without_surrogates(value: Any) -> tuple[Any, int]:
    """`value` with every lone surrogate in its strings (keys too) replaced by U+FFFD, and how
    many were. Recursive: the depth was bounded first."""
    count = 0

    def clean(item: Any) -> Any:
        nonlocal count
        if isinstance(item, str):
            fixed, found = _SURROGATE.subn("\ufffd", item)
            count += found
            return fixed
        if isinstance(item, list):
            return [clean(each) for each in item]
        if isinstance(item, dict):
            return {clean(key): clean(each) for key, each in item.items()}
        return item

    cleaned = clean(value)
    return cleaned, count


# -- the process's stdin and stdout -------------------------------------------------------------


class Wire:
    """Serve one MCP session over this process's stdin and stdout.

    While it serves, fd 0 reads the null device and fd 1 writes to stderr, so that nothing else
    in the process (a library's stray print) can read the session's input or corrupt its output.
    """

    def __init__(
        self,
        *,
        grace: float = GRACE,
        log: Callable[[str], None] | None = None,
        pending: bytes = b"",
        overdue: Callable[[], None] | None = None,
        abandon: Callable[[], None] | None = None,
    ):
        self.grace = grace
        # Called when calls are still in flight after the grace: they must give up now.
        self.overdue = overdue or (lambda: None)
        # Called when calls still run after the grace and the settling, each answered: ends the process.
        self.abandon = abandon or (lambda: None)
        # What was read from stdin before this wire took it (gate.serve.front), served first.
        self._initial = pending
        self.log = log or (lambda line: print(f"memory-gate serve: {line}", file=sys.stderr, flush=True))
        self._stopping = False
        self._waiting: anyio.CancelScope | None = None
        self._grace: anyio.CancelScope | None = None
        # The requests in flight, by id as the SDK correlates them ("7" and 7 are one).
        self._pending: set[int | str] = set()
        self._settled = anyio.Event()
        # Inside a line past MAX_LINE: its first bytes, and how many it has had so far.
        self._overlong: tuple[bytes, int] | None = None
        self._scanned = 0  # bytes at the head of the read buffer known to hold no newline

    def stop(self) -> None:
        """Read no further line; a second stop does not wait for the calls in flight either."""
        if self._stopping and self._grace is not None:
            self._grace.cancel()
        self._stopping = True
        if self._waiting is not None:
            self._waiting.cancel()

    async def serve(self, session: Callable[[Any, Any], Awaitable[None]]) -> None:
        """Run `session(read_stream, write_stream)` (the SDK server's `run`) on stdin and stdout."""
        source, sink = _claim(0, os.O_RDONLY), _claim(1, None)
        try:
            inbound_send, inbound = anyio.create_memory_object_stream[Any](0)
            outbound, outbound_receive = anyio.create_memory_object_stream[Any](0)
            replies = outbound.clone()
            async with anyio.create_task_group() as group:
                group.start_soon(self._read, source.fd, inbound_send, replies)
                group.start_soon(self._write, sink.fd, outbound_receive)
                await session(inbound, outbound)
                # The session ended by itself: nothing more is read, nothing waited for.
                self._pending.clear()
                self.stop()
        finally:
            sink.release()
            source.release()

    # -- reading ------------------------------------------------------------------------------

    async def _read(self, fd: int, inbound, replies) -> None:
        buffer = bytearray(self._initial)
        pollable = True
        async with inbound, replies:
            await self._lines(buffer, inbound, replies)
            while not self._stopping:
                if pollable:
                    with anyio.CancelScope() as waiting:
                        self._waiting = waiting
                        try:
                            await anyio.wait_readable(fd)
                        except OSError:
                            pollable = False  # a regular file or the null device: reads never block
                    self._waiting = None
                    if waiting.cancelled_caught:
                        break
                chunk = os.read(fd, CHUNK)
                if not chunk:
                    if self._overlong is not None:
                        head, size = self._overlong
                        await self._answer(too_long(head, size + len(buffer)), replies)
                    elif buffer:
                        await self._take(bytes(buffer), inbound, replies)
                    break
                buffer += chunk
                await self._lines(buffer, inbound, replies)
            # Input is over (a stop, or end of file): the calls in flight finish and answer first.
            with anyio.move_on_after(self.grace) as self._grace:
                while self._pending:
                    await self._settled.wait()
            if self._pending:
                self.overdue()  # a write waiting for the lock gives up, and says so
                with anyio.move_on_after(SETTLE):
                    while self._pending:
                        await self._settled.wait()
            if self._pending:
                # Still waiting on something else (an embeddings endpoint): answered here. Its
                # write can no longer begin (overdue), so nothing it asked is written.
                self.log(f"stopped with {len(self._pending)} call(s) unfinished: answered that nothing was written")
                for request_id in sorted(self._pending, key=str):
                    await self._answer(
                        Inbound(
                            replies=[
                                types.JSONRPCError(
                                    jsonrpc="2.0",
                                    id=request_id,
                                    error=types.ErrorData(
                                        code=types.INTERNAL_ERROR,
                                        message=(
                                            "memory-gate stopped before this call finished: nothing was written; call again once it runs"
                                        ),
                                    ),
                                )
                            ]
                        ),
                        replies,
                    )
                with anyio.move_on_after(SETTLE):
                    while self._pending:  # written out
                        await self._settled.wait()
                # Its worker thread would hold the process until the endpoint answers: the process
                # ends now instead, the answers out.
                self.abandon()

    async def _lines(self, buffer: bytearray, inbound, replies) -> None:
        """Serve every whole line at the head of `buffer`, taking them out of it; let go of a line
        past MAX_LINE as it comes."""
        while not self._stopping:
            end = buffer.find(b"\n", self._scanned)  # only what came since the last look
            if self._overlong is not None:
                head, size = self._overlong
                if end < 0:
                    self._overlong = (head, size + len(buffer))
                    del buffer[:]
                    return
                del buffer[: end + 1]
                self._overlong = None
                await self._answer(too_long(head, size + end), replies)
                continue
            if end < 0:
                self._scanned = len(buffer)
                if len(buffer) > MAX_LINE:
                    self._overlong = (bytes(buffer[:CHUNK]), len(buffer))
                    del buffer[:]
                    self._scanned = 0
                return
            line = bytes(buffer[:end])
            del buffer[: end + 1]
            self._scanned = 0
            await self._take(line, inbound, replies)

    async def _answer(self, found: Inbound, replies) -> None:
        if found.note:
            self.log(found.note)
        try:
            for reply in found.replies:
                await replies.send(SessionMessage(reply))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._stopping = True

    async def _take(self, raw: bytes, inbound, replies) -> None:
        try:
            await self._forward(raw, inbound, replies)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._stopping = True  # the session is over

    async def _forward(self, raw: bytes, inbound, replies) -> None:
        found = read_bytes(raw)
        if found.note:
            self.log(found.note)
        message = found.message
        if isinstance(message, types.JSONRPCRequest) and message.method == "tools/call":
            problem = tool_call_problem(message.params)
            if problem:
                found = _refused(message.id, types.INVALID_PARAMS, problem)
                message = None
        for reply in found.replies:
            await replies.send(SessionMessage(reply))
        if message is None:
            return
        if isinstance(message, types.JSONRPCRequest) and message.method not in OPEN_ENDED:
            self._pending.add(coerce_request_id(message.id))
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            cancelled = (message.params or {}).get("requestId")
            if as_request_id(cancelled) is None:
                # No request has such an id: nothing to cancel, and a notification is never answered.
                self.log(f"ignored a cancellation whose requestId is {_kind(cancelled)}, not a string or an integer")
                return
            self._settle(cancelled)  # a cancelled request is never answered
        await inbound.send(SessionMessage(message))

    def _settle(self, request_id: Any) -> None:
        if as_request_id(request_id) is not None:
            self._pending.discard(coerce_request_id(request_id))
        if not self._pending:
            self._settled.set()
            self._settled = anyio.Event()

    # -- writing ------------------------------------------------------------------------------

    async def _write(self, fd: int, outbound) -> None:
        pollable = True
        async with outbound:
            async for item in outbound:
                message = item.message
                try:
                    text = message.model_dump_json(by_alias=True, exclude_unset=True)
                except Exception as error:  # an answer that cannot be encoded is still answered
                    request_id = getattr(message, "id", None)
                    self.log(f"could not encode an answer to {request_id!r}: {error}")
                    text = types.JSONRPCError(
                        jsonrpc="2.0",
                        id=request_id,
                        error=types.ErrorData(
                            code=types.INTERNAL_ERROR, message=f"memory-gate could not encode its answer: {error}"
                        ),
                    ).model_dump_json(by_alias=True, exclude_unset=True)
                data = memoryview((text + "\n").encode("utf-8", errors="replace"))
                while data:
                    if pollable:
                        try:
                            await anyio.wait_writable(fd)
                        except OSError:
                            pollable = False
                    written = os.write(fd, data[:PIPE_BUF])
                    data = data[written:]
                if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)):
                    self._settle(message.id)


@dataclass
class _Claim:
    fd: int  # the session's private copy of the standard descriptor
    standard: int
    restore: int | None = None

    def release(self) -> None:
        if self.restore is not None:
            os.dup2(self.fd, self.standard)
        os.close(self.fd)


def _claim(standard: int, divert_flags: int | None) -> _Claim:
    """Take a standard descriptor for the session: a private copy, and the standard one pointed
    at the null device (stdin) or at stderr (stdout)."""
    private = os.dup(standard)
    os.set_inheritable(private, False)
    try:
        diversion = os.open(os.devnull, divert_flags) if divert_flags is not None else os.dup(2)
        os.dup2(diversion, standard)
        os.close(diversion)
    except OSError:
        return _Claim(private, standard)
    return _Claim(private, standard, restore=standard)
