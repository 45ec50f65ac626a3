"""Times as memory-gate writes and shows them: one format everywhere.

Every time memory-gate stores (the ledger, write.log, a fact's created / updated / confirmed,
injected-context's state) is UTC to the second in ISO 8601 with a Z: `2026-11-29T14:57:06Z`.
Such text sorts as the time does, so SQL compares times as text and a cut-off is one string.
People read the same time without the T and the Z.

On the hooks' per-turn path: imports `time` only (datetime is loaded by the callers that need it).
"""

import time

FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def now() -> str:
    """This second, as stored."""
    return time.strftime(FORMAT, time.gmtime())


def stamp(moment) -> str:
    """A `datetime` as stored; a naive one is taken to be UTC. The year is padded to four digits
    (strftime does not pad on every platform), so the text still sorts as the time does."""
    from datetime import UTC

    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def is_stamp(text: str) -> bool:
    """Whether `text` is a time in the stored format."""
    from datetime import datetime

    try:
        datetime.strptime(text, FORMAT)
    except (TypeError, ValueError):
        return False
    return True


def shown(stamp: str | None) -> str:
    """A stored time for people: `2026-11-29 14:57:06` (`?` when there is none)."""
    return str(stamp or "?").replace("T", " ").rstrip("Z")
