"""The stdio wire of `memory-gate serve`: one JSON-RPC message a line, and every request answered.

Each line is read by gate.serve.inbound, which serves what the SDK's own stdio transport would
drop unanswered and answers what cannot be served with the error that says what to change. A
cancellation naming no such id is ignored. A line past MAX_LINE is let go as it arrives and
answered with the limit; what the SDK logs is one line on stderr, never a traceback.

Stopping: reads never block in a thread (the wire waits on the event loop for stdin to be
readable), so a signal is obeyed in every state. Once told to stop, the wire reads no further
line and gives the calls in flight GRACE to finish and answer; then a write still waiting for the
lock is told to give up (and says so), and a call still waiting on anything else (an embeddings
endpoint) is answered here that nothing was written, its write no longer able to begin. A stop
ends the server within a second.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.dispatcher import as_request_id, coerce_request_id
from mcp.shared.message import SessionMessage

from gate.serve import MAX_LINE
from gate.serve.inbound import Inbound, kind, read_bytes, refused, too_long, tool_call_problem

# How long calls in flight may take to finish once a stop is asked, and then how long those told
# to give up (a write waiting for the lock) take to say so: a stop ends the server within 1 s.
GRACE = 0.5
SETTLE = 0.15
CHUNK = 1 << 16
# Requests that stay open for the whole session (Claude Code's subscription to list changes):
# never "in flight", or every stop would wait the whole grace for them.
OPEN_ENDED = frozenset({"subscriptions/listen"})
# poll() reports a pipe writable when this much fits, so a write of it never blocks.
PIPE_BUF = 4096


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
                found = refused(message.id, types.INVALID_PARAMS, problem)
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
                self.log(f"ignored a cancellation whose requestId is {kind(cancelled)}, not a string or an integer")
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
