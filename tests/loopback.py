"""The HTTP side shared by the fake model endpoints (tests/fake_embeddings.py, tests/fake_chat.py).

A JSON POST server on 127.0.0.1 and a free port, in a thread: it records every request body and
hands it to the subclass's `answer(handler, body)`, which replies with `send`. `released` lets a
fake that holds a request open ("slow") give up when the test closes it.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # A classifier asks several questions at once; the default listen backlog of 5 would drop
    # connections and cost a TCP retransmit (1 s) that no real server makes them wait.
    request_queue_size = 64

    def handle_error(self, request, address) -> None:
        pass  # a client that gave up (a timed-out search, a killed writer) is not the fake's error


class LoopbackEndpoint:
    path = "/"

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.released = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                fake.answer(self, body)

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{self.path}"

    def answer(self, handler: BaseHTTPRequestHandler, body: dict) -> None:
        raise NotImplementedError

    @staticmethod
    def send(handler: BaseHTTPRequestHandler, status: int, payload: bytes | dict) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()
