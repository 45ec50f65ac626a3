"""Credentials masked on display: a key that slipped into memory before the write checks
refused such text is never shown. The masking is gate.credentials's own `redact`, the one every
other printer of memory-gate uses, remembered as memory_search remembers it.
"""

from __future__ import annotations

from gate.serve import tools


def redact(text: str | None) -> str:
    """`text` with every credential gate.credentials recognises replaced by a mask naming its kind.
    A page shows the same texts again and again (paging back, live refreshes): each is checked
    once (tools.masked remembers, as it does for memory_search)."""
    if not text:
        return text or ""
    return tools.masked(text)
