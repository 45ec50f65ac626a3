"""A yes/no question to an OpenAI-compatible chat-completions endpoint, answered as a probability.

Served by llama.cpp's llama-server, Ollama, vLLM, LM Studio and the like. The request asks for
a one-word answer at temperature 0 and for the log-probabilities of the first token's
alternatives: when the server offers them, P(yes) / (P(yes) + P(no)) over the alternatives
spelled yes or no is the answer, a finer verdict than the word the model happened to pick. A
server that offers none is read by its word. A server that refuses the logprobs fields (HTTP
400) is asked again without them.

Everything else (down, slow, an HTTP error, an answer that says neither yes nor no) is a
ChatError whose message fits one line. A deadline bounds each request as a whole, so a server
that trickles its answer cannot hold the prompt. The standard library only, imported on use.
"""

from __future__ import annotations

import math

from gate.search import transport

MAX_ANSWER_BYTES = 1 << 20
YES, NO = ("yes", "sim"), ("no", "não", "nao")


class ChatError(Exception):
    """The endpoint gave no usable answer; the message says why in a few words."""


def request_body(model: str | None, system: str, question: str, *, logprobs: bool = True) -> dict:
    body: dict = {
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": question}],
        "temperature": 0,
        "max_tokens": 3,
        "stream": False,
    }
    if model:
        body["model"] = model
    if logprobs:
        body["logprobs"] = True
        body["top_logprobs"] = 10
    return body


def ask(url: str, model: str | None, system: str, question: str, *, deadline: float) -> float:
    """P(yes) for `question`, before `deadline` (a time.monotonic() value). Raises ChatError."""
    import json

    for logprobs in (True, False):
        body = json.dumps(request_body(model, system, question, logprobs=logprobs)).encode()
        try:
            status, payload = transport.post_json(url, body, deadline, limit=MAX_ANSWER_BYTES)
        except transport.Unanswered as error:
            raise ChatError(f"chat endpoint {error}") from None
        if status == 400 and logprobs:
            continue  # a server that will not give log-probabilities: ask for the word alone
        if status != 200:
            raise ChatError(f"chat endpoint answered HTTP {status}{transport.server_says(payload)}")
        return parse_answer(payload)
    raise ChatError("chat endpoint refused the question (HTTP 400)")  # pragma: no cover


def parse_answer(payload: bytes) -> float:
    """P(yes) from a chat-completions answer: from the first answer token's top log-probabilities
    when there are any spelled yes or no, else from the answer's first word."""
    import json

    try:
        answer = json.loads(payload)
        choice = answer["choices"][0]
    except (ValueError, KeyError, IndexError, TypeError):
        raise ChatError("chat endpoint answered something other than a chat completion") from None
    if not isinstance(choice, dict):
        raise ChatError("chat endpoint answered something other than a chat completion")
    probability = _from_logprobs(choice.get("logprobs"))
    if probability is not None:
        return probability
    message = choice.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    word = _word(content if isinstance(content, str) else "")
    if word in YES:
        return 1.0
    if word in NO:
        return 0.0
    shown = " ".join(str(content)[:40].split()) if content else "nothing"
    raise ChatError(f"chat endpoint answered neither yes nor no ({shown!r})")


def _from_logprobs(logprobs: object) -> float | None:
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list):
        return None
    for position in content[:3]:
        if not isinstance(position, dict):
            return None
        alternatives = position.get("top_logprobs") or [position]
        if not isinstance(alternatives, list):
            return None
        if not _word(str(position.get("token", ""))):
            continue  # a leading space or newline token: the answer starts at the next one
        yes = no = 0.0
        for alternative in alternatives:
            if not isinstance(alternative, dict):
                continue
            value = alternative.get("logprob")
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value > 1e-6
            ):
                continue
            word = _word(str(alternative.get("token", "")))
            if word in YES:
                yes += math.exp(value)
            elif word in NO:
                no += math.exp(value)
        return yes / (yes + no) if yes + no > 0 else None
    return None


def _word(text: str) -> str:
    """The first word of `text`, lower case, without the punctuation and markup around it."""
    for chunk in text.split():
        word = chunk.strip(".,;:!?*_`'\"()[]<>").lower()
        if word:
            return word
    return ""
