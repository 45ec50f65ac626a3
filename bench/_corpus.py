"""Synthetic facts for the speed benchmarks: sentences over a vocabulary with a Zipf-like
spread, so that some words are in most facts (the expensive queries) and most are rare."""

from __future__ import annotations

import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED_DATA = ROOT.parent / "shared" / "data" / "claude-mem-lite" / "seed-data.json"
KINDS = ("state", "event", "decision", "trap")


def vocabulary() -> list[str]:
    """Words of the public benchmark's observations, or a generated list without it."""
    words: list[str] = []
    if SEED_DATA.exists():
        for observation in json.loads(SEED_DATA.read_text())["observations"]:
            for key in ("title", "narrative", "concepts", "text", "facts"):
                words += [w.strip(".,;:()'\"").lower() for w in str(observation.get(key, "")).split()]
    words = sorted({w for w in words if w.isalpha() and len(w) > 2}) or [f"word{i}" for i in range(3000)]
    # Frequency rank is given at random, not alphabetically.
    random.Random(3).shuffle(words)
    return words


def facts(count: int, seed: int = 7) -> list[tuple[str, str, str]]:
    """(topic, kind, text) rows, 20-60 words each, under 600 characters."""
    rng = random.Random(seed)
    words = vocabulary()
    weights = [1 / (rank + 1) for rank in range(len(words))]
    rows = []
    for _ in range(count):
        body = " ".join(rng.choices(words, weights, k=rng.randint(20, 60)))[:600].rsplit(" ", 1)[0]
        topic = " ".join(rng.choices(words, weights, k=rng.randint(1, 3)))
        rows.append((topic, rng.choice(KINDS), body))
    return rows


def queries(rows: list[tuple[str, str, str]], count: int, seed: int = 11) -> list[str]:
    """What an agent searches for: 1-4 words of one fact (its topic words first), the way a
    question about something in memory shares words with it."""
    rng = random.Random(seed)
    found = []
    for _ in range(count):
        topic, _, text = rng.choice(rows)
        words = topic.split() + rng.sample(text.split(), 3)
        found.append(" ".join(words[: rng.randint(1, 4)]))
    return found


def common_queries(count: int, seed: int = 13) -> list[str]:
    """The worst case: 2-4 of the 30 most frequent words, which most facts hold."""
    rng = random.Random(seed)
    top = vocabulary()[:30]
    return [" ".join(rng.sample(top, rng.randint(2, 4))) for _ in range(count)]


def load(conn, count: int) -> list[tuple[str, str, str]]:
    rows = facts(count)
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO facts (topic, kind, text, date, created, updated, confirmed)"
        " VALUES (?, ?, ?, '2026-01-01', '', '', '')",
        rows,
    )
    conn.execute("COMMIT")
    return rows
