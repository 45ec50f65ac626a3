"""The labeled set of injected-context (tests/data/context_labels.json) and how the embeddings
classifier scores on it, shared by bench/context.py and the test that holds its floor.

Every request is paired with every rule description (14 x 56 = 784 pairs, 50 of them positive):
that is how the classifier meets them, every pending rule weighed against every prompt.
Scoring goes through gate/context/classify.py's own functions (description parts, background,
the request with its earlier requests), so what is measured is what runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gate import embeddings
from gate.context import classify

DATA = Path(__file__).resolve().parent / "data" / "context_labels.json"


def load() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


@dataclass
class Pair:
    request: int
    rule: str
    lang: str
    margin: float
    applies: bool


def _embed(endpoint, texts: list[str], role: str) -> dict[str, tuple]:
    out = {}
    unique = list(dict.fromkeys(texts))
    for start in range(0, len(unique), 64):
        batch = unique[start : start + 64]
        out.update(zip(batch, endpoint.embed(batch, role=role, timeout=120).rows))
    return out


def margins(url: str, model: str = "multilingual-e5-small", data: dict | None = None) -> list[Pair]:
    """Every (request, rule) pair of the set with the embeddings classifier's margin."""
    data = data or load()
    endpoint = embeddings.Endpoint(url, model, quiet_after_timeout=0.0)
    rules = data["rules"]
    asked = [classify.queries(item["request"], item.get("previous", [])) for item in data["requests"]]
    query_vectors = _embed(endpoint, [text for texts in asked for text in texts], embeddings.QUERY)
    documents = [part for text in rules.values() for part in classify.parts(text)] + list(classify.BACKGROUND)
    document_vectors = _embed(endpoint, documents, embeddings.DOCUMENT)
    background = [document_vectors[text] for text in classify.BACKGROUND]
    names = list(rules)
    rule_parts = [[document_vectors[part] for part in classify.parts(rules[name])] for name in names]
    pairs = []
    for at, item in enumerate(data["requests"]):
        scored = classify.scores([query_vectors[text] for text in asked[at]], rule_parts, background)
        for name, margin in zip(names, scored):
            pairs.append(Pair(at, name, item["lang"], margin, name in item["applies"]))
    return pairs


@dataclass
class Quality:
    precision: float
    recall: float
    true_positives: int
    false_positives: int
    false_negatives: int

    @property
    def f1(self) -> float:
        total = self.precision + self.recall
        return 2 * self.precision * self.recall / total if total else 0.0


def quality(pairs: list[Pair], margin: float) -> Quality:
    tp = sum(1 for pair in pairs if pair.applies and pair.margin >= margin)
    fp = sum(1 for pair in pairs if not pair.applies and pair.margin >= margin)
    fn = sum(1 for pair in pairs if pair.applies and pair.margin < margin)
    return Quality(tp / (tp + fp) if tp + fp else 1.0, tp / (tp + fn) if tp + fn else 1.0, tp, fp, fn)


def best_margin(pairs: list[Pair]) -> float:
    """The margin with the best F1 on `pairs` (ties: the lower margin, for recall: a rule missed
    is what the feature exists to prevent; one injected in vain costs some context once)."""
    candidates = sorted({round(pair.margin, 4) for pair in pairs})
    return max(candidates, key=lambda margin: (round(quality(pairs, margin).f1, 6), -margin))
