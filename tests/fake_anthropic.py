"""A scripted fake of the Anthropic Messages API, for running real Claude Code offline.

Claude Code (pointed here with ANTHROPIC_BASE_URL) sends `POST /v1/messages?beta=true`. The
agent loop always asks for a stream, and the fake answers it as the real API does, in Server-Sent
Events: message_start, ping, one content_block_start/delta/stop run per block (text_delta,
input_json_delta, thinking_delta + signature_delta), message_delta with the stop reason and
usage, message_stop. A request without `"stream": true` (`$.model.classify` sends one) gets
the whole message as JSON.

What the model "says" comes from a script: a list of steps, consumed one per main-loop request.
A step is a fixed reply or a callable that gets the parsed request body and returns one, so a
test can react to what a tool returned. Two other kinds of request do not consume the script:
"compact" (the summary request of `/compact` or auto-compaction, answered with `compact_reply`,
which must hold a `<summary>` block or Claude Code asks again) and "side" (any request sent
without `tools`: a small-model call such as `$.model.classify`, answered with `side_reply`).
Both may be callables too. When the script runs out the fake answers a plain `end_turn` text,
so a turn can never hang on it.

Every request is recorded (method, path, headers, parsed body, kind) for assertions. Each
Messages request is also checked the way the real API would refuse it (a tool_use left without
its tool_result, a tool_result naming no call of the assistant message before it): a broken
request is answered 400 and the problem is kept in `errors`, so a test can assert it is empty.
Stdlib only; binds 127.0.0.1 on a free port.
"""

from __future__ import annotations

import itertools
import json
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable, Union

DEFAULT_MODEL = "claude-sonnet-4-5"
EXHAUSTED_TEXT = "(fake: script exhausted)"
SIDE_TEXT = "(fake: side reply)"
COMPACT_TEXT = "<analysis>(fake analysis)</analysis>\n<summary>(fake summary of the conversation)</summary>"


# --- replies ---------------------------------------------------------------------------------

@dataclass
class Reply:
    """One assistant message: content blocks plus a stop reason (derived when None)."""

    blocks: list[dict] = field(default_factory=list)
    stop_reason: str | None = None
    usage: dict | None = None
    # Set: the stream stops after its first text delta until this event is set (at most 60 s),
    # so that a test can see what reached the owner while the model was still writing.
    pause: threading.Event | None = None
    resumed: threading.Event = field(default_factory=threading.Event)  # set once the paused stream goes on
    reached: threading.Event = field(default_factory=threading.Event)  # set once the stream pauses

    def resolved_stop_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if any(b["type"] == "tool_use" for b in self.blocks) else "end_turn"


@dataclass
class ApiError:
    """A non-streaming error answer: `{"type":"error","error":{"type":..,"message":..}}`."""

    status: int = 400
    type: str = "invalid_request_error"
    message: str = "fake error"


_tool_ids = itertools.count(1)


def text(s: str) -> dict:
    return {"type": "text", "text": s}


def thinking(s: str, signature: str = "fake-signature") -> dict:
    return {"type": "thinking", "thinking": s, "signature": signature}


def tool_use(name: str, input: dict | None = None, id: str | None = None) -> dict:
    return {
        "type": "tool_use",
        "id": id or f"toolu_fake{next(_tool_ids):04d}{uuid.uuid4().hex[:12]}",
        "name": name,
        "input": input or {},
    }


def reply(*blocks: dict | str, stop_reason: str | None = None) -> Reply:
    return Reply([text(b) if isinstance(b, str) else b for b in blocks], stop_reason)


Step = Union[str, dict, list, Reply, ApiError, Callable[[dict], Any], None]


def as_reply(value: Any) -> Reply | ApiError:
    """str -> text; a block dict -> one block; a list of blocks/strings -> those; None -> end_turn."""
    if isinstance(value, (Reply, ApiError)):
        return value
    if value is None:
        return reply(EXHAUSTED_TEXT)
    if isinstance(value, str):
        return reply(value)
    if isinstance(value, dict):
        return reply(value)
    if isinstance(value, (list, tuple)):
        return reply(*value)
    raise TypeError(f"not a reply: {value!r}")


# --- reading request bodies ----------------------------------------------------------------

def content_blocks(message: dict) -> list[dict]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


def block_text(block: dict) -> str:
    """The readable text of a block; a tool_result's nested content is flattened."""
    kind = block.get("type")
    if kind == "text":
        return block.get("text", "")
    if kind == "tool_result":
        inner = block.get("content")
        if isinstance(inner, str):
            return inner
        return "\n".join(block_text(b) for b in inner or [])
    if kind == "tool_use":
        return json.dumps(block.get("input", {}))
    return ""


def tool_results(body: dict) -> list[dict]:
    """tool_result blocks of the request's last user message, in order."""
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            return [b for b in content_blocks(message) if b.get("type") == "tool_result"]
    return []


def last_tool_result_text(body: dict) -> str:
    results = tool_results(body)
    return block_text(results[-1]) if results else ""


def request_text(body: dict) -> str:
    """Everything a request shows the model in messages (not the system prompt), one string."""
    parts = []
    for message in body.get("messages", []):
        parts.extend(block_text(b) for b in content_blocks(message))
    return "\n".join(parts)


def tool_names(body: dict) -> list[str]:
    return [t.get("name", "") for t in body.get("tools") or []]


def system_text(body: dict) -> str:
    system = body.get("system")
    if isinstance(system, str):
        return system
    return "\n".join(b.get("text", "") for b in system or [])


COMPACT_MARKERS = (
    "an <analysis> block followed by a <summary> block",
    "create a detailed summary of the conversation so far",
)


def last_user_text(body: dict) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            return "\n".join(block_text(b) for b in content_blocks(message))
    return ""


def classify(body: dict) -> str:
    """"compact", "main" or "side".

    The compaction request is a forked agent that sends the full tool list and the main model,
    so only its closing instruction tells it apart. Claude Code's agent loop (main thread and
    subagents alike) always sends `tools`; small-model side calls send none.
    """
    last = last_user_text(body)
    if any(marker in last for marker in COMPACT_MARKERS):
        return "compact"
    return "main" if body.get("tools") else "side"


def request_problems(body: dict) -> list[str]:
    """What the real Messages API would refuse in this request body (the checks that matter here).

    Roles are user, assistant or system (Claude Code puts `system` entries mid-list, which the
    API it talks to accepts); every tool_use of an assistant message has its tool_result in the
    next user message, and every tool_result answers a tool_use of the assistant message before.
    """
    problems = []
    messages = body.get("messages") or []
    if not messages:
        return ["messages: at least one message is required"]
    turns = [m for m in messages if m.get("role") != "system"]
    for i, m in enumerate(messages):
        if m.get("role") not in ("user", "assistant", "system"):
            problems.append(f"messages.{i}.role: unexpected {m.get('role')!r}")
    if turns and turns[0].get("role") != "user":
        problems.append("the first message must use the user role")
    for i, m in enumerate(turns):
        blocks = content_blocks(m)
        if m.get("role") == "user":
            results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
            if results:
                prev = turns[i - 1] if i else {}
                calls = {b.get("id") for b in content_blocks(prev) if b.get("type") == "tool_use"}
                for rid in results:
                    if prev.get("role") != "assistant" or rid not in calls:
                        problems.append(f"tool_result {rid} answers no tool_use of the previous assistant message")
        elif m.get("role") == "assistant":
            calls = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
            if calls and i + 1 < len(turns):
                after = turns[i + 1]
                answered = {b.get("tool_use_id") for b in content_blocks(after) if b.get("type") == "tool_result"}
                for cid in calls:
                    if after.get("role") != "user" or cid not in answered:
                        problems.append(f"tool_use {cid} has no tool_result right after it")
    return problems


# --- the server ------------------------------------------------------------------------------

@dataclass
class Recorded:
    method: str
    path: str
    headers: dict
    body: Any
    kind: str = "other"  # main | side | compact | other (count_tokens, HEAD, unknown paths)
    reply: Reply | ApiError | None = None

    @property
    def main(self) -> bool:
        return self.kind == "main"


class FakeAnthropic:
    """Run as a context manager; `base_url` goes into ANTHROPIC_BASE_URL."""

    def __init__(
        self,
        script: Iterable[Step] = (),
        *,
        side_reply: Step = SIDE_TEXT,
        compact_reply: Step = COMPACT_TEXT,
        classify: Callable[[dict], str] = classify,
        chunk_size: int = 40,
        strict: bool = True,
    ):
        self.strict = strict
        self.script: list[Step] = list(script)
        self.side_reply = side_reply
        self.compact_reply = compact_reply
        self.classify = classify
        self.chunk_size = chunk_size
        self.records: list[Recorded] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # script control
    def add(self, *steps: Step) -> None:
        with self._lock:
            self.script.extend(steps)

    @property
    def remaining(self) -> int:
        return len(self.script)

    # recordings
    def bodies(self, *kinds: str) -> list[dict]:
        """Request bodies of the given kinds (default: every Messages request), in arrival order."""
        kinds = kinds or ("main", "side", "compact")
        return [r.body for r in self.records if r.kind in kinds]

    @property
    def main_requests(self) -> list[dict]:
        return self.bodies("main")

    @property
    def side_requests(self) -> list[dict]:
        return self.bodies("side")

    @property
    def compact_requests(self) -> list[dict]:
        return self.bodies("compact")

    # lifecycle
    @property
    def base_url(self) -> str:
        assert self._server is not None, "not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "FakeAnthropic":
        fake = self

        class Handler(_Handler):
            owner = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-anthropic", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeAnthropic":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # answering
    def _answer(self, body: dict, kind: str) -> Reply | ApiError:
        if kind == "main":
            with self._lock:
                step = self.script.pop(0) if self.script else None
        elif kind == "compact":
            step = self.compact_reply
        else:
            step = self.side_reply
        if callable(step) and not isinstance(step, (Reply, ApiError)):
            step = step(body)
        return as_reply(step)


class _Handler(BaseHTTPRequestHandler):
    owner: FakeAnthropic
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _record(self, body: Any, kind: str = "other") -> Recorded:
        rec = Recorded(self.command, self.path, dict(self.headers), body, kind)
        with self.owner._lock:
            self.owner.records.append(rec)
        return rec

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", f"req_fake{uuid.uuid4().hex[:20]}")
        self.end_headers()
        self.wfile.write(data)

    def _error(self, err: ApiError) -> None:
        self._json(err.status, {"type": "error", "error": {"type": err.type, "message": err.message},
                                "request_id": f"req_fake{uuid.uuid4().hex[:20]}"})

    def do_HEAD(self) -> None:
        self._record(None)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self._record(None)
        path = self.path.split("?")[0]
        if path == "/v1/models":
            self._json(200, {"data": [], "has_more": False, "first_id": None, "last_id": None})
        else:
            self._json(200, {})

    def do_POST(self) -> None:
        body = self._read_body()
        path = self.path.split("?")[0]
        if path == "/v1/messages/count_tokens":
            self._record(body)
            n = len(json.dumps(body)) // 4 if body else 0
            self._json(200, {"input_tokens": n})
            return
        if path != "/v1/messages":
            self._record(body)
            self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": f"fake: no {path}"}})
            return
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self._record(body)
            self._error(ApiError(400, "invalid_request_error", "messages: field required"))
            return
        kind = self.owner.classify(body)
        rec = self._record(body, kind)
        problems = request_problems(body) if self.owner.strict else []
        if problems:
            self.owner.errors.extend(problems)
            rec.reply = ApiError(400, "invalid_request_error", "; ".join(problems))
            self._error(rec.reply)
            return
        try:
            answer = self.owner._answer(body, kind)
        except Exception as exc:  # a broken test step must not hang claude: end the turn visibly
            self.owner.errors.append(f"step raised {exc!r}")
            answer = reply(f"(fake: step raised {exc!r})")
        rec.reply = answer
        if isinstance(answer, ApiError):
            self._error(answer)
        elif body.get("stream"):
            self._stream(body, answer)
        else:
            self._json(200, _message_json(body, answer))

    def _stream(self, body: dict, answer: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "keep-alive")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", f"req_fake{uuid.uuid4().hex[:20]}")
        self.end_headers()
        try:
            paused = answer.pause is None
            for event, data in sse_events(body, answer, self.owner.chunk_size):
                payload = f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()
                self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
                self.wfile.flush()
                if not paused and data.get("delta", {}).get("type") == "text_delta":
                    paused = True
                    answer.reached.set()
                    answer.pause.wait(60)
                    answer.resumed.set()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


def _usage(body: dict, answer: Reply, output_tokens: int) -> dict:
    if answer.usage:
        return dict(answer.usage)
    return {
        "input_tokens": max(1, len(json.dumps(body.get("messages", []))) // 4),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def _output_tokens(answer: Reply) -> int:
    return max(1, sum(len(block_text(b)) + len(b.get("thinking", "")) for b in answer.blocks) // 4)


def _message_json(body: dict, answer: Reply) -> dict:
    return {
        "id": f"msg_fake{uuid.uuid4().hex[:20]}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model") or DEFAULT_MODEL,
        "content": answer.blocks,
        "stop_reason": answer.resolved_stop_reason(),
        "stop_sequence": None,
        "usage": _usage(body, answer, _output_tokens(answer)),
    }


def _chunks(s: str, size: int) -> list[str]:
    return [s[i:i + size] for i in range(0, len(s), size)] or [""]


def sse_events(body: dict, answer: Reply, chunk_size: int = 40) -> Iterable[tuple[str, dict]]:
    """The event sequence of one streamed message, as the real API sends it."""
    usage = _usage(body, answer, 1)
    start_usage = {**usage, "output_tokens": 1}
    yield "message_start", {"type": "message_start", "message": {
        "id": f"msg_fake{uuid.uuid4().hex[:20]}", "type": "message", "role": "assistant",
        "model": body.get("model") or DEFAULT_MODEL, "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": start_usage}}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(answer.blocks):
        kind = block["type"]
        if kind == "text":
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "text", "text": ""}}
            for piece in _chunks(block["text"], chunk_size):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "text_delta", "text": piece}}
        elif kind == "tool_use":
            yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}}
            for piece in _chunks(json.dumps(block.get("input", {})), chunk_size):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "input_json_delta", "partial_json": piece}}
        elif kind == "thinking":
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "thinking", "thinking": "", "signature": ""}}
            for piece in _chunks(block["thinking"], chunk_size):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "thinking_delta", "thinking": piece}}
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "signature_delta", "signature": block["signature"]}}
        else:
            raise ValueError(f"unknown block type {kind!r}")
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": answer.resolved_stop_reason(), "stop_sequence": None},
                            "usage": {"output_tokens": _output_tokens(answer)}}
    yield "message_stop", {"type": "message_stop"}
