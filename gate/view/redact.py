"""Credentials masked on display: a key that slipped into memory before the write checks
refused such text (or into the owner's words, which the ledger keeps as typed) is never shown.

The detector is gate/secrets.py's, the one that refuses credentials on the way in; here its
patterns locate what to mask instead of refusing. When gate/secrets.py grows a `redact` of its
own, it is used instead.
"""

from __future__ import annotations

import functools
import re

from gate import secrets

MASK = "[redacted: {kind}]"
# The detector spots a private key by its header; on display the whole block goes, up to its END
# line or, for a block cut short, to the end of the text.
_KEY_BLOCK = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*-----|\Z)", re.DOTALL
)


def redact(text: str | None) -> str:
    """`text` with every credential gate/secrets.py recognises replaced by a mask naming its kind."""
    if not text:
        return text or ""
    return _redact(text)


# The detector runs some twenty patterns over a text: about half a millisecond for a fact of 600
# characters, so a page of 50 facts would spend more on it than on everything else. A page shows
# the same texts again and again (paging back, live refreshes): each is checked once.
@functools.lru_cache(maxsize=8192)
def _redact(text: str) -> str:
    own = getattr(secrets, "redact", None)
    if own is not None:
        return own(text)
    if secrets.find(text) is None:  # the common case, at the detector's own cost
        return text
    text = _KEY_BLOCK.sub(MASK.format(kind="a private key"), text)
    for kind, pattern in secrets._COMPILED:
        text = pattern.sub(MASK.format(kind=kind), text)
    text = secrets._AWS_SECRET.sub(MASK.format(kind="an AWS secret access key"), text)
    text = _values(secrets._CONNECTION, text, "a password")
    return _values(secrets._ASSIGNMENT, text, "a password or key")


def _values(pattern: re.Pattern, text: str, kind: str) -> str:
    """Mask the `value` group of each match that holds a literal secret, keeping the rest (the
    name of the setting, the host of a connection string) readable."""

    def mask(match: re.Match) -> str:
        value = match.group("value")
        if not secrets._literal(value):
            return match.group(0)
        start, end = match.span("value")
        whole = match.group(0)
        offset = match.start()
        return whole[: start - offset] + MASK.format(kind=kind) + whole[end - offset :]

    return pattern.sub(mask, text)
