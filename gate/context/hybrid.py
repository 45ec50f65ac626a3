"""The hybrid classifier: words and topics shared with the description, meaning when an
embeddings endpoint is set, the earlier requests for a follow-up. The default.

For each pending rule, the evidence that the request falls under its description:

- words: each stem the request shares with the description (gate.context.words: `refunds` meets `refund`,
  `migração` meets `migracao`), WORD points each;
- topics: each topic of gate.context.lexicon both name (`estorno` and `refunds` are both payments), TOPIC
  points each;
- meaning (only with MEMORY_GATE_EMBED_URL): the embeddings classifier's margin (gate.context.classify),
  MEANING points per 0.01 of margin above MEANING_FROM. Alone it is a rough signal on a small
  model (F1 about 0.5 on the labelled set), so it adds to the words rather than deciding alone;
- the earlier requests: a request with no evidence of its own for any rule that asks for
  something ("now the same for orders", "try again", lexicon.ASKING) is weighed by the latest
  earlier request that has some, at EARLIER of its points; a request with evidence of its own is
  about that, not what came before, and one that asks nothing ("who won the game last night?")
  is about nothing the rules cover.

A rule applies when its points reach APPLIES_AT and at least RELATIVE of the best rule's for
this request: a request about payments that also names a table is not a migration. A request
made only of small talk, thanks and approvals ("thanks, looks good", "sim", "go ahead") applies
nothing, whatever came before it: its work, if any, was weighed with the request it approves.

Every verdict carries its reasons (`why`), which `memory-gate inject --explain` prints. The
figures (bench/context.py) and the constants below come from the tuning half of
tests/data/context_labels.json; the other half measures them.
"""

from __future__ import annotations

import math

from gate.context import words

WORD = 0.5
TOPIC = 1.0
MEANING = 0.2  # points per 0.01 of margin above MEANING_FROM
MEANING_FROM = 0.06
MEANING_CAP = 1.0
EARLIER = 1.0
APPLIES_AT = 0.6
RELATIVE = 0.8


class Weighed:
    """One rule's points for one request, and what they rest on."""

    __slots__ = ("points", "words", "topics", "meaning", "earlier", "applies", "needed", "unasked")

    def __init__(
        self, points: float = 0.0, shared_words=(), topics=(), meaning: float | None = None, earlier: str | None = None
    ):
        self.points = points
        self.words = list(shared_words)
        self.topics = list(topics)
        self.meaning = meaning
        self.earlier = earlier
        self.applies = False
        self.needed = APPLIES_AT
        self.unasked = False  # earlier requests there were, and the request asks nothing of them

    def why(self) -> str:
        parts = []
        if self.words:
            parts.append("shared words " + ", ".join(self.words))
        if self.topics:
            parts.append("topics " + ", ".join(self.topics))
        if self.meaning is not None:
            parts.append(f"meaning margin {self.meaning:+.3f}")
        if self.earlier is not None:
            parts.append(f"through the earlier request {self.earlier!r} (x{EARLIER:g})")
        verdict = f"{self.points:.2f} {'>=' if self.applies else '<'} {self.needed:.2f} needed"
        said = "; ".join(parts + [verdict]) if parts else "nothing shared"
        return said + ("; the request asks nothing, so the earlier ones are not weighed" if self.unasked else "")


def rarity(described: list[words.Keys]) -> dict[str, float]:
    """How much a shared key says, by how few of the descriptions hold it: 1 for a key one
    description holds, less the more hold it (`#topic` for topics)."""
    count = len(described)
    held: dict[str, int] = {}
    for keys in described:
        for key in set(keys.words) | {"#" + topic for topic in keys.topics}:
            held[key] = held.get(key, 0) + 1
    if count < 2:
        return {key: 1.0 for key in held}
    top = math.log(1 + count)
    return {key: math.log(1 + count / times) / top for key, times in held.items()}


def _points(request: words.Keys, description: words.Keys, rare: dict[str, float], margin: float | None) -> Weighed:
    shared = [key for key in request.words if key in description.words]
    topics = [topic for topic in request.topics if topic in description.topics]
    # A topic the description names once in passing ("card numbers" in a rule on logs) says less
    # than the topic it is about; so does a topic the request names in passing.
    most = max((len(named) for named in description.topics.values()), default=1)
    asked = max((len(named) for named in request.topics.values()), default=1)
    points = WORD * sum(rare.get(key, 1.0) for key in shared)
    points += TOPIC * sum(
        rare.get("#" + topic, 1.0)
        * (0.5 + 0.5 * len(description.topics[topic]) / most)
        * (0.5 + 0.5 * len(request.topics[topic]) / asked)
        for topic in topics
    )
    if margin is not None:
        points += min(MEANING_CAP, max(0.0, margin - MEANING_FROM) * 100 * MEANING)
    return Weighed(
        points,
        [request.words[key] for key in shared],
        [f"{topic} ({request.topics[topic][0]} ~ {description.topics[topic][0]})" for topic in topics],
        margin,
    )


def weigh(
    descriptions: list[str], request: str, earlier: list[str], margins: list[float] | None = None
) -> tuple[list[Weighed], str | None]:
    """Each description's points for the request, with `applies` set; and, when the request
    carries no work, why nothing applies. `margins` are the embeddings classifier's, one per
    description, or None without an endpoint (they weigh the request as asked, with its earlier
    requests: classify.scores)."""
    now = words.keys(request)
    if not now.work:
        return [Weighed() for _ in descriptions], "the request carries no work (small talk, thanks or an approval)"
    described = [words.keys(text) for text in descriptions]
    rare = rarity(described)
    found = [
        _points(now, description, rare, margins[at] if margins else None) for at, description in enumerate(described)
    ]
    own = any(item.words or item.topics for item in found)
    if not own and not now.asks and earlier:
        for item in found:
            item.unasked = True
    if (not own and now.asks) or words.continuing(request):
        for text in reversed(earlier):
            before = words.keys(text)
            if not before.work:
                continue
            again = [
                _points(before, description, rare, margins[at] if margins else None)
                for at, description in enumerate(described)
            ]
            if any(item.words or item.topics for item in again):
                shown = " ".join(text.split())[:80]
                for at, item in enumerate(again):
                    item.points *= EARLIER
                    item.earlier = shown
                    if item.points > found[at].points:
                        found[at] = item
                break
    best = max((item.points for item in found), default=0.0)
    needed = max(APPLIES_AT, RELATIVE * best)  # the best rule's share, for the others
    for item in found:
        item.needed = needed
        item.applies = item.points >= needed
    return found, None
