"""The labelled sets of injected-context and how the classifiers score on them, shared by
bench/context.py and the tests that hold their floors.

Two sets of requests against the same 25 rule descriptions:
- TUNE, tests/data/context_labels.json (210 requests): earlier rounds looked at all of it, and
  the hybrid classifier's constants and lexicon are corrected looking at it only;
- HELD-OUT, tests/data/context_heldout.json (226 requests): written before this round's tuning,
  never tuned on and never edited after its figures were seen. Its figures are the ones that count.

Every request is paired with every rule description: that is how the classifiers meet them,
every pending rule weighed against every prompt. Scoring goes through gate/context's own
functions (hybrid.weigh, classify.scores with its description parts and background), so what is
measured is what runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gate.context import classify, hybrid
from gate.engine import tokens
from gate.search import embeddings, stopwords

FOLDER = Path(__file__).resolve().parent / "data"
SETS = {"tune": FOLDER / "context_labels.json", "held-out": FOLDER / "context_heldout.json"}
DATA = SETS["tune"]


def load(which: str = "tune") -> dict:
    return json.loads(SETS[which].read_text(encoding="utf-8"))


@dataclass
class Pair:
    request: int
    rule: str
    lang: str
    applies: bool
    says: bool  # what the classifier said
    score: float = 0.0


def _embed(endpoint, texts: list[str], role: str) -> dict[str, tuple]:
    out = {}
    unique = list(dict.fromkeys(texts))
    for start in range(0, len(unique), 64):
        batch = unique[start : start + 64]
        out.update(zip(batch, endpoint.embed(batch, role=role, timeout=120).rows))
    return out


def margins(url: str, model: str = "multilingual-e5-small", data: dict | None = None) -> list[list[float]]:
    """The embeddings classifier's margin for every request (rows) and rule (columns, in the
    set's order), as classify.by_embeddings computes it."""
    data = data or load()
    endpoint = embeddings.Endpoint(url, model, quiet_after_timeout=0.0)
    rules = data["rules"]
    asked = [classify.queries(item["request"], item.get("previous", [])) for item in data["requests"]]
    query_vectors = _embed(endpoint, [text for texts in asked for text in texts], embeddings.QUERY)
    documents = [part for text in rules.values() for part in classify.parts(text)] + list(classify.BACKGROUND)
    document_vectors = _embed(endpoint, documents, embeddings.DOCUMENT)
    background = [document_vectors[text] for text in classify.BACKGROUND]
    rule_parts = [[document_vectors[part] for part in classify.parts(description)] for description in rules.values()]
    return [classify.scores([query_vectors[text] for text in asked[at]], rule_parts, background)
            for at in range(len(data["requests"]))]


def _pairs(data: dict, says) -> list[Pair]:
    names = list(data["rules"])
    out = []
    for at, item in enumerate(data["requests"]):
        verdicts = says(at, item)
        for name, (said, score) in zip(names, verdicts):
            out.append(Pair(at, name, item["lang"], name in item["applies"], said, score))
    return out


def by_hybrid(data: dict | None = None, margins_of: list[list[float]] | None = None) -> list[Pair]:
    """The hybrid classifier's verdicts, with meaning when `margins_of` (from margins()) is given."""
    data = data or load()
    descriptions = list(data["rules"].values())

    def says(at: int, item: dict):
        weighed, _ = hybrid.weigh(descriptions, item["request"], item.get("previous", []),
                                  margins_of[at] if margins_of else None)
        return [(w.applies, w.points) for w in weighed]

    return _pairs(data, says)


def by_margin(margins_of: list[list[float]], margin: float, data: dict | None = None) -> list[Pair]:
    """The embeddings classifier's verdicts at `margin`."""
    data = data or load()
    return _pairs(data, lambda at, item: [(value >= margin, value) for value in margins_of[at]])


def _content(words: str) -> set[str]:
    return {word for word in tokens.words(words) if word not in stopwords.ALL and not word.isdigit()}


def by_keyword_overlap(data: dict | None = None) -> list[Pair]:
    """The baseline: a rule applies when the request shares one word with its description, stop
    words (English, Portuguese) aside, case and accents folded."""
    data = data or load()
    described = [_content(description) for description in data["rules"].values()]
    return _pairs(data, lambda at, item: [(bool(_content(item["request"]) & words), 0.0) for words in described])


def by_everything(data: dict | None = None) -> list[Pair]:
    data = data or load()
    return _pairs(data, lambda at, item: [(True, 0.0)] * len(data["rules"]))


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


def quality(pairs: list[Pair]) -> Quality:
    tp = sum(1 for pair in pairs if pair.applies and pair.says)
    fp = sum(1 for pair in pairs if not pair.applies and pair.says)
    fn = sum(1 for pair in pairs if pair.applies and not pair.says)
    return Quality(tp / (tp + fp) if tp + fp else 1.0, tp / (tp + fn) if tp + fn else 1.0, tp, fp, fn)


def subset(pairs: list[Pair], *, lang: str | None = None) -> list[Pair]:
    return [pair for pair in pairs if lang is None or pair.lang == lang]


def best_margin(margins_of: list[list[float]], data: dict) -> float:
    """The embeddings margin with the best F1 on `data` (the tuning set; ties: the lower margin)."""
    candidates = sorted({round(value, 3) for row in margins_of for value in row if 0.0 <= value <= 0.15})
    return max(candidates, key=lambda m: (round(quality(by_margin(margins_of, m, data)).f1, 6), -m))
