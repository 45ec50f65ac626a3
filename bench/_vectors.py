"""Synthetic embeddings for the speed benchmarks, spread the way a real model spreads texts.

Every vector is a shared direction (embedding models put all texts in one cone: unrelated texts
still score a cosine of about 0.35 here), plus its topic's direction (50 facts a topic, cosine
about 0.65 between them), plus its own. A query is a stored vector reworded: cosine about 0.8 to
it, about 0.55 to its topic's other facts. Its 30 nearest are then its source and the topic's
facts closest by their own noise, which is what the bit prefilter must not lose.

Pure Python (no numpy, like the product): Gaussian directions are slices of one pool of noise
at random offsets, which is enough independence for timing and recall and builds 100k vectors
of 1024 dimensions in seconds.
"""

from __future__ import annotations

import math
import random

SHARED, TOPIC, OWN = 0.35, 0.30, 0.35  # shares of the squared length
PER_TOPIC = 50
REWORDING = 0.5  # squared length of the change a query makes to its source


class Space:
    def __init__(self, dimension: int = 1024, seed: int = 17):
        self.dimension = dimension
        self.rng = random.Random(seed)
        self.pool = [self.rng.gauss(0.0, 1.0) for _ in range(1 << 20)]
        self.shared = self.direction()
        self.topics: list[list[float]] = []

    def direction(self) -> list[float]:
        start = self.rng.randrange(len(self.pool) - self.dimension)
        values = self.pool[start : start + self.dimension]
        norm = math.sqrt(sum(value * value for value in values))
        return [value / norm for value in values]

    def vectors(self, count: int) -> list[tuple[float, ...]]:
        while len(self.topics) * PER_TOPIC < count:
            self.topics.append(self.direction())
        a, b, c = math.sqrt(SHARED), math.sqrt(TOPIC), math.sqrt(OWN)
        shared = [a * value for value in self.shared]
        rows = []
        for _ in range(count):
            topic = self.rng.choice(self.topics)
            own = self.direction()
            rows.append(_unit([s + b * t + c * o for s, t, o in zip(shared, topic, own)]))
        return rows

    def rewordings(self, rows: list[tuple[float, ...]], count: int) -> list[tuple[float, ...]]:
        f = math.sqrt(REWORDING)
        found = []
        for _ in range(count):
            source = self.rng.choice(rows)
            change = self.direction()
            found.append(_unit([s + f * d for s, d in zip(source, change)]))
        return found


def _unit(values: list[float]) -> tuple[float, ...]:
    norm = math.sqrt(sum(value * value for value in values))
    return tuple(value / norm for value in values)
