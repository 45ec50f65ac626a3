"""A faithful fake of an OpenAI-compatible chat-completions endpoint, for the yes/no classifier.

It speaks what llama.cpp's llama-server, vLLM or OpenAI answer to `POST /v1/chat/completions`
(stdlib http.server, 127.0.0.1 only): a `chat.completion` object whose choice carries the
message and, when `logprobs` was asked, `logprobs.content[]` with each token's `top_logprobs`
(leading-space tokens included, as BPE vocabularies spell them). What it answers comes from
`p_yes`, a number or a function of the question text, and `mode` changes how it answers:

    logprobs         the word with the higher probability, and log-probabilities when asked
    words            the word only: `logprobs` is null even when asked (as Ollama's older servers)
    refuse-logprobs  HTTP 400 for a request asking for logprobs, a plain word otherwise
    garbage          HTTP 200 with a body that is not JSON
    rambling         a chat completion that says neither yes nor no
    error            HTTP 500 with an OpenAI-style error object
    slow             accepts the request and never answers (until the fake is closed)
"""

from __future__ import annotations

import math
from http.server import BaseHTTPRequestHandler
from typing import Callable

from loopback import LoopbackEndpoint

MODES = ("logprobs", "words", "refuse-logprobs", "garbage", "rambling", "error", "slow")


def _token(text: str, logprob: float) -> dict:
    return {"token": text, "logprob": logprob, "bytes": list(text.encode())}


class FakeChat(LoopbackEndpoint):
    path = "/v1/chat/completions"

    def __init__(self, p_yes: float | Callable[[str], float] = 1.0, mode: str = "logprobs"):
        self.p_yes, self.mode = p_yes, mode
        super().__init__()

    def questions(self) -> list[str]:
        return [body["messages"][-1]["content"] for body in self.requests]

    def probability(self, question: str) -> float:
        return self.p_yes(question) if callable(self.p_yes) else self.p_yes

    def answer(self, handler: BaseHTTPRequestHandler, body: dict) -> None:
        mode = self.mode
        if mode == "slow":
            self.released.wait(30)
            return
        if mode == "error":
            return self.send(handler, 500, {"error": {"message": "model crashed", "type": "server_error"}})
        if mode == "garbage":
            return self.send(handler, 200, b"<html>It works!</html>")
        asked = bool(body.get("logprobs"))
        if mode == "refuse-logprobs" and asked:
            return self.send(handler, 400, {"error": {"message": "logprobs is not supported", "type": "invalid_request_error"}})
        p = min(max(self.probability(body["messages"][-1]["content"]), 1e-6), 1 - 1e-6)
        word = "Yes" if p >= 0.5 else "No"
        if mode == "rambling":
            word = "It depends on the codebase."
        logprobs = None
        if asked and mode == "logprobs":
            # A leading-space variant and an unrelated token share the mass, as real vocabularies do.
            alternatives = [
                _token("Yes", math.log(p * 0.9)), _token(" yes", math.log(p * 0.1)),
                _token("No", math.log((1 - p) * 0.9)), _token(" no", math.log((1 - p) * 0.1)),
                _token("Maybe", -12.0),
            ]
            alternatives.sort(key=lambda item: -item["logprob"])
            first = dict(alternatives[0])
            logprobs = {"content": [{**first, "top_logprobs": alternatives[: body.get("top_logprobs") or 1]}]}
        self.send(handler, 200, {
            "id": "chatcmpl-fake", "object": "chat.completion", "created": 1764400000,
            "model": body.get("model") or "fake-chat",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": word}, "logprobs": logprobs,
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 1, "total_tokens": 51},
        })
