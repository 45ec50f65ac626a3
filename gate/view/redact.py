"""Credentials masked on display: a key that slipped into memory before the write checks
refused such text is never shown. The masking is gate/secrets.py's own `redact`, the one every
other printer of memory-gate uses; the page only remembers its answers.
"""

from __future__ import annotations

import functools

from gate import secrets


def redact(text: str | None) -> str:
    """`text` with every credential gate/secrets.py recognises replaced by a mask naming its kind."""
    if not text:
        return text or ""
    return _redact(text)


# A page shows the same texts again and again (paging back, live refreshes): each is checked once.
@functools.lru_cache(maxsize=8192)
def _redact(text: str) -> str:
    return secrets.redact(text)
