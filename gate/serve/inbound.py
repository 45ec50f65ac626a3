"""Each line of `memory-gate serve`'s stdin read as one JSON-RPC message, or answered with the
error that says what to change: what gate.serve.wire serves, every request answered.

The SDK's own stdio transport drops, with no reply, every line its parser refuses: a lone
surrogate escape anywhere (`"\\ud83d"`, which JSON allows and UTF-8 cannot hold), nesting past
about 200 levels, `params` sent as an array. In Claude Code an unanswered tool call is a wedged
agent. Here a line the SDK refuses is read again with Python's json: each lone surrogate becomes
U+FFFD (as invalid UTF-8 bytes already do on the way in) and the call is served; what still cannot
be served gets a JSON-RPC error that says what to change, with the request's id whenever the line
names one. A request whose id is no string or integer (an object, an array, a fraction, a boolean,
null) is one MCP forbids and the SDK would take for a notification and never answer: it is
refused with id null, as JSON-RPC says. A message that is neither a request, a notification nor
a response (`{}`, an id alone) is an invalid request and answered, under its id when it names one.
A line past MAX_LINE is answered with the limit.

Apart from gate.serve.wire, which owns the process's stdin and stdout and the session's stopping:
this is pure, one line in and what it asks out, and tested without a process.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.shared.dispatcher import as_request_id
from pydantic import ValidationError

from gate.serve import MAX_LINE

# Deeper than any message the tools need (a call's arguments are a few levels deep) and well
# inside what the SDK's parser and Python's json read.
MAX_DEPTH = 100

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
        return refused(
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
        return refused(
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
        return refused(
            None,
            types.INVALID_REQUEST,
            (
                f"a JSON-RPC message is an object, not {kind(data)}: e.g. "
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
    return refused(_id(data), code, problem)


def too_long(head: bytes, size: int) -> Inbound:
    """The answer to a line past MAX_LINE, of which only its first bytes were kept: to the ids
    they name."""
    ids, _ = _head(head.decode("utf-8", errors="replace"))
    return refused(
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
            f"the arguments of {name} must be an object naming each argument (got {kind(arguments)}), e.g. {_EXAMPLE}"
        )
    return None


def refused(request_ids: Any, code: int, message: str) -> Inbound:
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


def kind(value: Any) -> str:
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
        replies=refused(ids, types.INVALID_REQUEST, problem).replies,
        note=f"answered a batch of {len(items)}: {problem}",
    )


def _what_is_wrong(data: dict) -> tuple[int, str]:
    if data.get("jsonrpc") != "2.0":
        return types.INVALID_REQUEST, 'every message must carry "jsonrpc": "2.0"'
    if "method" in data and not isinstance(data["method"], str):
        return types.INVALID_REQUEST, '"method" must be a string, e.g. "tools/call"'
    if "id" in data and _id(data) is None:
        return types.INVALID_REQUEST, (
            f'"id" must be a string or an integer (got {kind(data["id"])}), e.g. "id": 7; a notification has no id'
        )
    params = data.get("params")
    if isinstance(params, list):
        return types.INVALID_PARAMS, (
            "params must be an object naming each parameter, not an array: MCP has no positional "
            f"parameters. For a tool call: {_EXAMPLE}"
        )
    if params is not None and not isinstance(params, dict):
        return types.INVALID_PARAMS, f"params must be an object (got {kind(params)}), e.g. {_EXAMPLE}"
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
