"""Where search's vectors come from: the endpoint the owner names (MEMORY_GATE_EMBED_URL: bge-m3
served by llama.cpp, Ollama, ...), else the model installed with memory-gate (gate.search.local),
else nowhere, and search runs on words (MEMORY_GATE_MEANING=off, or no model installed). Both
sources answer alike (`embed(texts, role=, timeout=)`), so nothing above asks which it is.
"""

from __future__ import annotations

from gate import config
from gate.search import embeddings, local


def source(settings: config.Settings):
    """Where search's vectors come from: the endpoint MEMORY_GATE_EMBED_URL names, else the model
    installed with memory-gate (gate.search.local.Model); None when MEMORY_GATE_MEANING=off or
    neither is there (`why_words_only` says which)."""
    if not settings.meaning:
        return None
    if settings.embed_url:
        return embeddings.Endpoint.from_settings(settings)
    return local.Model(settings.max_distance) if local.installed() else None


def why_words_only(settings: config.Settings) -> str | None:
    """Why `source` has nothing, as the owner should hear it once; None when it has something."""
    if not settings.meaning:
        return "MEMORY_GATE_MEANING=off: search runs on words only"
    if settings.embed_url:
        return None
    return None if local.installed() else local.missing()


def named(found) -> str:
    """The source as doctor and the memory page name it: `multilingual-e5-small (the installed
    model)`, `bge-m3 (http://...)`; `words only` for None."""
    if found is None:
        return "words only"
    return f"{found.model} ({found.url if found.remote else 'the installed model'})"
