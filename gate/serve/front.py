"""The first moments of `memory-gate serve`: answer what Claude Code asks first while the MCP SDK loads.

Claude Code sends its first model request once the server has listed its tools, or after about
2 s whatever the server's state (`claude -p`); a slower server's tools are missing from that
request. Importing the `mcp` SDK takes 0.7 s on an idle 2-core machine and two seconds or more on a
busy one, nearly all of it building the protocol's pydantic models. So the server answers the
discovery and the listings before the SDK is there, from gate/serve/discovery.json: the SDK's own
answers, recorded by `python -m gate.serve.front > gate/serve/discovery.json` and held equal to what the SDK
answers now by tests/test_front.py; and it acknowledges Claude Code's subscription to list changes
as the SDK would (Claude Code waits for that acknowledgement before it counts the server as
connected).

The turn's first tool calls come before the SDK is loaded too (with a fast model, the first one
about a second before it): the front serves calls of memory_search and memory_write itself, with
the functions the SDK's server runs (gate.serve.tools: search_call, write_call, on the same Memory,
which it hands over), and writes the very bytes the SDK would (tests/test_front.py holds them
equal over real stdio). Everything else (a call with arguments the tools do not take, the
subscription to resources, anything the front does not recognise exactly) waits, in order, and
goes to the SDK's server (gate.serve.server) the moment it is imported, in a thread of its own; a
call behind a waiting line waits too, so that calls keep their order. The SDK is imported when a
line needs it, or once the session has been quiet for QUIET seconds: a turn's first calls never
wait for it, and its import does not take a CPU from Claude Code while a turn runs. A short
session the front answers whole (`claude -p` of one turn) may end before it is imported.

The recorded answers are used only for requests in the protocol version they were recorded in
(the 2026-07-28 per-request envelope), without a cursor, and only while the installed SDK is
the version that recorded them; otherwise the SDK answers, later but right.

Standard library only until the first call (the hooks' cheap modules are fine), so that the
answers go out within a few tens of milliseconds of the interpreter's start; gate.serve.tools is
imported by the loader thread, before the SDK.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading

from gate import config, jsonlite, stopping
from gate.serve import MAX_LINE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ANSWERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "discovery.json")
PROTOCOL_KEY = "io.modelcontextprotocol/protocolVersion"
CHUNK = 1 << 16
# The SDK is imported once the session has been quiet this long (or at once, when a line needs
# it): its import takes a CPU for one to three seconds, and a turn on a 2-core machine runs
# Claude Code, its hooks and this server at once. In `claude -p` with a fast model the gaps of a
# turn are under a second; an owner reading the answer and typing the next prompt is quiet longer.
QUIET = 3.0


def recorded() -> dict | None:
    """The recorded answers, when they fit the installed SDK; None otherwise (the SDK answers all)."""
    try:
        with open(ANSWERS, encoding="utf-8") as handle:
            found = jsonlite.loads(handle.read())
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict) or not isinstance(found.get("results"), dict):
        return None
    if not _installed("mcp", found.get("mcp")) or not _installed("mcp_types", found.get("mcp_types")):
        return None
    return found


def _installed(distribution: str, version: object) -> bool:
    """Whether that version of the distribution is on sys.path, judged by its dist-info folder
    (importlib.metadata would cost more than the whole answer)."""
    if not isinstance(version, str):
        return False
    name = f"{distribution}-{version}.dist-info"
    return any(os.path.isdir(os.path.join(folder or ".", name)) for folder in sys.path)


def answer(line: bytes, answers: dict) -> bytes | Call | None:
    """The reply to one line from the recorded answers, the call for the front to serve, or None
    when the SDK must answer it."""
    try:
        message = jsonlite.loads(line.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    request_id, method, params = message.get("id"), message.get("method"), message.get("params")
    if (
        isinstance(request_id, bool)
        or not isinstance(request_id, (int, str))
        or not isinstance(method, str)
        or not isinstance(params, dict)
    ):
        return None
    meta = params.get("_meta")
    if not isinstance(meta, dict) or meta.get(PROTOCOL_KEY) != answers.get("protocol"):
        return None
    if method == LISTEN:
        return _acknowledged(request_id, params)
    if method == "tools/call":
        # A lone surrogate (from an escape) is the wire's to mend (gate.serve.inbound) before a tool sees it.
        return None if _lone_surrogate(params) else _call(request_id, params)
    if set(params) != {"_meta"}:
        return None
    result = answers["results"].get(method)
    if result is None:
        return None
    return (jsonlite.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n").encode("utf-8")


# The arguments each tool takes: a call with any other is the SDK's to answer (its validation).
ARGUMENTS = {"memory_search": {"terms"}, "memory_write": {"ops", "kept"}}
# The tools take flat arguments (a list of flat objects at most): anything nested deeper is left to
# the SDK's server, whose wire refuses what nests too deep (gate.serve.inbound MAX_DEPTH) in its words.
FLAT = 8
TOOL_USE_ID = "claudecode/toolUseId"


def _deep(value: object, levels: int) -> bool:
    """Whether `value` nests more than `levels` lists or objects deep."""
    if isinstance(value, dict):
        value = list(value.values())
    if not isinstance(value, list):
        return False
    return levels <= 0 or any(_deep(item, levels - 1) for item in value)


def _lone_surrogate(value: object) -> bool:
    """Whether a string anywhere in `value` (keys too) holds a lone surrogate, which only a
    JSON escape can bring and UTF-8 cannot carry (a pair of escapes decodes to one character)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if any("\ud800" <= ch <= "\udfff" for ch in item):
                return True
        elif isinstance(item, dict):
            stack += item.keys()
            stack += item.values()
        elif isinstance(item, list):
            stack += item
    return False


class Call:
    """A call of one of the two tools, as the front serves it."""

    __slots__ = ("request_id", "tool", "arguments", "tool_use_id")

    def __init__(self, request_id: int | str, tool: str, arguments: dict, tool_use_id: str | None):
        self.request_id, self.tool, self.arguments, self.tool_use_id = request_id, tool, arguments, tool_use_id


def _call(request_id: int | str, params: dict) -> Call | None:
    tool, arguments = params.get("name"), params.get("arguments")
    if not set(params) <= {"_meta", "name", "arguments"} or tool not in ARGUMENTS:
        return None
    if not isinstance(arguments, dict) or not set(arguments) <= ARGUMENTS[tool] or _deep(arguments, FLAT):
        return None
    tool_use_id = params["_meta"].get(TOOL_USE_ID)
    return Call(request_id, tool, arguments, tool_use_id if isinstance(tool_use_id, str) and tool_use_id else None)


def served(call: Call, memory, tools, server_meta: dict | None) -> bytes:
    """The SDK's reply to the call, byte for byte (pydantic's compact JSON, UTF-8 as it is): the
    answer's text and structured content, or an error result naming the mend."""
    caller = tools.Caller(memory.session, call.tool_use_id, memory.process, memory.handoff)
    # The server checks the arguments before the SDK runs the tool, so the SDK words that
    # refusal as it is, and a failure of the tool itself with its name in front.
    problem = tools.argument_problem(call.tool, call.arguments)
    try:
        if problem:
            raise tools.CallFailed(problem)
        if call.tool == "memory_search":
            answer = tools.search_call(memory, call.arguments["terms"], caller)
        else:
            answer = tools.write_call(memory, call.arguments["ops"], call.arguments["kept"], caller)
    except tools.CallFailed as failed:
        text = problem or f"Error executing tool {call.tool}: {failed}"
        if not problem:
            print(f"Tool {call.tool!r} failed: {text!r}", file=sys.stderr)  # as the SDK logs it
        result = {"content": [{"text": text, "type": "text"}], "isError": True, "resultType": "complete"}
    else:
        result = {
            "content": [{"text": answer.text, "type": "text"}],
            "isError": False,
            "resultType": "complete",
            "structuredContent": answer.structured(),
        }
    if server_meta is not None:
        result["_meta"] = server_meta
    reply = {"jsonrpc": "2.0", "id": call.request_id, "result": result}
    import json  # here: its `re` is no cost to the front's first answers

    return (json.dumps(reply, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8", "replace")


LISTEN = "subscriptions/listen"
LIST_CHANGES = ("toolsListChanged", "promptsListChanged", "resourcesListChanged")


def _acknowledged(request_id: int | str, params: dict) -> bytes | None:
    """The acknowledgement of a subscription to list changes, as the SDK's ListenHandler words
    it: every kind asked for is honoured. Claude Code counts the server connected only once it
    has it. The subscription then stays here: memory-gate's lists never change, so nothing is
    ever sent on it, and the SDK never holds it open as a call in flight."""
    asked = params.get("notifications")
    if set(params) != {"_meta", "notifications"} or not isinstance(asked, dict) or not set(asked) <= set(LIST_CHANGES):
        return None  # resource subscriptions, or anything new: the SDK's to answer
    honoured = {kind: True for kind in LIST_CHANGES if asked.get(kind) is True}
    notification = {
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": request_id}, "notifications": honoured},
    }
    return (jsonlite.dumps(notification) + "\n").encode("utf-8")


class _Loader(threading.Thread):
    """Imports gate.serve.tools, then gate.serve.server (the SDK with it), then wakes the front through
    its pipe. The front imports neither itself: two threads importing the same modules at once
    could meet a half-made module."""

    def __init__(self, wake: int, settings: config.Settings):
        super().__init__(name="memory-gate-sdk", daemon=True)
        self.wake, self.settings = wake, settings
        self.tools: Any = None  # gate.serve.tools, once imported
        self.witness: Any = None  # gate.serve.sightings.Witness: what the Stop hook asks, started with tools
        # Held while the witness starts: a stop meanwhile waits for it, so that its address goes too.
        self.witness_lock = threading.Lock()
        self.tools_ready = threading.Event()  # set once gate.serve.tools is imported, or failed to be
        self.go = threading.Event()  # set when the SDK is to be imported (see QUIET)
        self.server: Any = None  # gate.serve.server, once imported
        self.error: BaseException | None = None
        self.finished = False  # set before the wake-up is written: a consumed wake-up is never missed

    def run(self) -> None:
        try:
            try:
                from gate.serve import sightings, tools

                with self.witness_lock:
                    self.witness = sightings.Witness.start(self.settings)
                self.tools = tools
            finally:
                self.tools_ready.set()
            self.go.wait()
            from gate.serve import server

            self.server = server
        except BaseException as error:  # said by the front, on the main thread
            self.error = error
        finally:
            self.finished = True
            try:
                os.write(self.wake, b"!")
            except OSError:
                pass


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


def serve(settings: config.Settings) -> int:
    """Answer the recorded requests and the calls until the SDK is loaded, then let
    gate.serve.server serve the session, handing it every line not yet answered and the Memory."""
    answers = recorded()
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    loader = _Loader(wake_write, settings)
    # A signal (Claude Code stops its server with SIGINT) wakes the wait below too.
    stopping.hold()
    previous = signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
    loader.start()
    if answers is None:
        loader.go.set()  # nothing recorded fits: the SDK answers everything
    waiting = bytearray()  # lines for the SDK, in the order they came
    buffer = bytearray()
    ended = False
    memory = None  # made at the first call the front serves, handed to the SDK's server
    try:
        while not loader.finished and not stopping.requested():
            if ended:
                if not waiting and not buffer.strip():
                    break  # the client left, and nothing it asked is the SDK's to answer
                loader.go.set()
            # A line longer than the wire reads is the SDK's wire's to let go of, as it arrives.
            full = len(buffer) > MAX_LINE
            if full:
                loader.go.set()
            readable = [wake_read] if ended or full else [0, wake_read]
            try:
                ready, _, _ = select.select(readable, [], [], None if loader.go.is_set() else QUIET)
            except InterruptedError:
                continue
            if not ready:
                loader.go.set()  # quiet: the SDK loads now, out of a turn's way
                continue
            if wake_read in ready:
                os.read(wake_read, 64)
            if 0 not in ready:
                continue
            chunk = os.read(0, CHUNK)
            if not chunk:
                ended = True
                continue
            buffer += chunk
            while (end := buffer.find(b"\n")) >= 0:
                line = bytes(buffer[: end + 1])
                del buffer[: end + 1]
                # Answered at once even behind waiting lines: a listing depends on none of them.
                reply = answer(line, answers) if answers is not None else None
                if isinstance(reply, Call):
                    # Behind a line left for the SDK, a call waits too: calls keep their order.
                    tools = None if waiting else _tools(loader)
                    if tools is None:
                        reply = None
                    else:
                        try:
                            if memory is None:
                                # imported with tools, by the loader, which started the witness
                                witness = loader.witness
                                memory = tools.connection.Memory(settings, witness.record if witness else None)
                            assert answers is not None, "a Call is answered from them"
                            # The SDK puts the same envelope on every result it sends.
                            reply = served(reply, memory, tools, answers["results"]["tools/list"].get("_meta"))
                        except Exception as error:  # a bug here: the SDK's server serves the call
                            # (with Claude Code's tool_use_id, a write already applied is replayed,
                            # not applied twice)
                            print(
                                f"memory-gate: the front left a call to the SDK ({type(error).__name__}: {error})",
                                file=sys.stderr,
                            )
                            reply = None
                if reply is None:
                    waiting += line
                    loader.go.set()
                else:
                    _write_all(1, reply)
    finally:
        signal.set_wakeup_fd(previous)
    if stopping.requested() or not loader.finished:
        # Stopped, or the client left with nothing for the SDK. Nothing in flight (the front's
        # answers are written whole, its calls finished); the SDK may be half imported in its
        # thread, which an interpreter's shutdown should not meet.
        if memory is not None:
            with memory.lock:  # an embedder thread's transaction finishes first
                memory.close()
        with loader.witness_lock:
            if loader.witness is not None:
                loader.witness.close()
        sys.stderr.flush()
        os._exit(0)
    loader.join()
    os.close(wake_read)  # only now: the loader's last write must never land in a reused descriptor
    os.close(wake_write)
    if loader.error is not None:
        raise loader.error
    if ended and not waiting and not buffer.strip():
        if memory is not None:
            with memory.lock:
                memory.close()
        if loader.witness is not None:
            loader.witness.close()
        return 0  # the client left before asking anything the SDK must answer
    return loader.server.serve(settings, pending=bytes(waiting + buffer), memory=memory, witness=loader.witness)


def _tools(loader: _Loader):
    """gate.serve.tools once the loader has imported it (a fraction of the SDK's time), or None if
    it could not or a stop came meanwhile: then the SDK's server serves the call, or says why."""
    while not loader.tools_ready.wait(0.05):
        if stopping.requested():
            return None
    return loader.tools


def main() -> int:
    """`python -m gate.serve.front`: print the SDK's answers, as gate/serve/discovery.json records them."""
    from gate.serve import server

    print(server.discovery_json(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
