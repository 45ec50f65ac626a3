"""The REFERENCE texts of gate.search.vectors: facts of no particular project, embedded once
per model and kept beside memory's vectors on both engines, their vectors packed one after
another as little-endian float32 (`pack`, `unpack`)."""

import base64
import functools
import struct
from collections.abc import Sequence

# Facts of no particular project, embedded once per model (meta `vector_reference`): with the
# memory's own sample they tell how far "unrelated" is for this model, which a memory of a
# handful of facts cannot tell alone; their mean is the center the index's bits are taken against
# past exact search (gate.search.vectors.center_of). Varied on purpose, in the languages memory is
# written in.
TEXTS = (
    "The staging database is refreshed from a production snapshot every Sunday night.",
    "Use the retry wrapper around calls to the payment provider; it times out under load.",
    "Log rotation keeps fourteen days of compressed files on each web node.",
    "The mobile app reads feature flags at start-up and caches them for an hour.",
    "Integration tests need the local message broker running on its default port.",
    "We chose server-side rendering for the marketing pages to help search engines.",
    "The CSV importer rejects rows whose date column is not in ISO format.",
    "Font files are served from the CDN with a one-year cache header.",
    "Background jobs are retried three times before they land in the dead-letter queue.",
    "The design system's buttons come in three sizes; never override their padding.",
    "Translations live in one JSON file per language under the locales folder.",
    "The nightly backup is copied to a second region and kept for thirty days.",
    "O relatório mensal de vendas é gerado no primeiro dia útil de cada mês.",
    "A fila de e-mails usa um limite de cem mensagens por minuto por cliente.",
    "Os testes de ponta a ponta rodam no navegador sem interface, em paralelo.",
    "A cozinha do escritório fecha às seis; o café acaba sempre antes do almoço.",
    "The team meets on Tuesdays to plan the week; the notes go in the shared drive.",
    "The printer on the third floor jams when it prints on both sides.",
    "The weather service caps free accounts at a thousand requests a day.",
    "Invoices are numbered per year and restart at one every January.",
    "Image uploads are resized to three widths and stored as WebP.",
    "The analytics dashboard refreshes every fifteen minutes from the warehouse.",
    "Passwords are hashed with argon2; the cost parameters live in the settings module.",
    "The search box suggests completions after the third character typed.",
)


def pack(rows: Sequence[Sequence[float]]) -> bytes:
    return b"".join(struct.pack(f"<{len(row)}f", *row) for row in rows)


def unpack(blob: bytes, dimension: int) -> list[tuple[float, ...]]:
    """The REFERENCE vectors packed one after another, or none when they are not all there."""
    values = struct.unpack(f"<{len(blob) // 4}f", blob)
    rows = [values[start : start + dimension] for start in range(0, len(values), dimension)]
    return rows if len(rows) == len(TEXTS) and len(rows[-1]) == dimension else []


@functools.lru_cache(maxsize=4)
def decoded(stored: str, dimension: int) -> tuple[tuple[float, ...], ...]:
    """The rows of a meta text (base64 of `pack`), decoded once per text: a search reads them each time."""
    return tuple(unpack(base64.b64decode(stored), dimension))
