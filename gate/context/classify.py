"""Whether a rule applies: the classifiers, each seeing a description and the request, never
a file's name or body.

- embeddings: the request (and the request with the two before it, for follow-ups such as
  "now the same for orders") against each description, through the memory's embeddings
  endpoint. A small multilingual model such as e5 puts every text near every other (cosine
  0.78-0.89 on the labeled set, related or not) and puts a long, specific request nearer all
  descriptions than a short one; an absolute cut-off then separates little (F1 0.36 on the
  labeled set). So the score is relative: how much nearer the request lies to the description,
  or to one of its comma-separated parts (a description lists the topics it covers; a request
  names one), than to the average of BACKGROUND, unrelated descriptions built in here. A rule
  applies when that margin reaches the configured one. Description vectors are cached.
- chat: one yes/no question per description to an OpenAI-compatible chat endpoint (gate.context.chat),
  asked in parallel; a rule applies at P(yes) >= 0.5.
- claude: Claude Code's own small model, `$.model.classify` inside the mod; the questions are
  built here (`question`), the mod only asks them.

Each returns a Verdict per rule; a rule the classifier could not answer for has applies None,
and the caller injects it (a rule the owner wrote is worth more than the context it costs).
"""

from __future__ import annotations

import time

from gate.context.rules import Rule

APPLIES_AT = 0.5  # P(yes) from the chat classifier
PARALLEL_QUESTIONS = 8
MAX_EARLIER = 500  # characters of each earlier request
DESCRIPTIONS_PER_REQUEST = 16  # description texts per embeddings request

CHAT_SYSTEM = (
    "You decide whether one of a project's rules applies to a request made to a coding assistant. "
    "The rule applies when the work requested falls under the rule's description. "
    "Answer with one word: yes or no."
)
# $.model.classify answers with one of these labels.
LABELS = ("applies", "unrelated")
CLAUDE_MODEL = "haiku"

# Descriptions of work no rule file is likely to be about, in both languages of the labeled set:
# how near a request lies to these, on average, is its baseline.
BACKGROUND = (
    "Conventions for naming variables, functions and classes.",
    "How to review code and respond to review comments.",
    "Working with the issue tracker: labels, priorities and estimates.",
    "Rules for writing documentation pages and code comments.",
    "Accessibility of the user interface: keyboard navigation and screen readers.",
    "Handling dates, time zones and calendars in the backend.",
    "Mobile app development for Android and iOS.",
    "Machine learning models: training data, evaluation and serving.",
    "Command line tools: arguments, help text and exit codes.",
    "Background jobs and queues: retries, scheduling and idempotency.",
    "Cloud costs and billing of the infrastructure accounts.",
    "Onboarding new team members and setting up a development machine.",
    "Regras de atendimento ao cliente no chat de suporte.",
    "Padrões de nomes de arquivos e pastas do repositório.",
    "Como escrever relatórios financeiros para a diretoria.",
    "Uso de feature flags para liberar funcionalidades aos poucos.",
)


class Verdict:
    """`applies` is True, False, or None when the classifier gave no answer; `score` is the
    margin (embeddings), P(yes) (chat) or points (hybrid), for ordering what is injected; `why`
    says what the verdict rests on, for `memory-gate inject --explain`."""

    __slots__ = ("rule", "applies", "score", "why")

    def __init__(self, rule: Rule, applies: bool | None, score: float | None = None, why: str = ""):
        self.rule = rule
        self.applies = applies
        self.score = score
        self.why = why

    def __repr__(self) -> str:
        return f"Verdict({self.rule.path!r}, {self.applies!r}, {self.score!r})"


class Decision:
    """Verdicts for the rules asked about, the one-line reason when any went unanswered,
    description vectors made on the way (for the cache), the rules weighed by words because the
    classifier gave no answer for them (`by_words`), and a note on how the verdicts were reached
    when it is not the whole classifier (meaning left out)."""

    __slots__ = ("verdicts", "failure", "model", "made", "by_words", "note")

    def __init__(
        self,
        verdicts: list[Verdict],
        failure: str | None = None,
        model: str = "",
        made: dict | None = None,
        note: str | None = None,
    ):
        self.verdicts = verdicts
        self.failure = failure
        self.model = model
        self.made = made or {}
        self.by_words: list[str] = []
        self.note = note


def unanswered(rules: list[Rule], reason: str) -> Decision:
    return Decision([Verdict(rule, None) for rule in rules], reason)


def _clip(text: str, size: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= size else text[: size - 3] + "..."


# -- the question (chat and claude) -------------------------------------------------------------


def question(description: str, request: str, earlier: list[str]) -> str:
    """What the chat endpoint and Claude Code's model read about one rule: its description and
    the request, the earlier requests marked as context."""
    lines = [f"Rule description: {_clip(description, 1000)}", ""]
    if earlier:
        lines.append("The owner's earlier requests, for context only:")
        lines += [f"- {_clip(text, MAX_EARLIER)}" for text in earlier]
        lines.append("")
    lines += ["The owner's request now:", _clip(request, 2000), ""]
    lines.append("Does the work requested now fall under the rule description?")
    return "\n".join(lines)


def classify_text(description: str, request: str, earlier: list[str]) -> str:
    """The text `$.model.classify` labels with LABELS (its own prompt asks for a label only)."""
    return (
        f'A project rule of a coding assistant, and the owner\'s request. Label "{LABELS[0]}" when the '
        f'work requested falls under the rule\'s description, "{LABELS[1]}" otherwise.\n\n'
        + question(description, request, earlier)
    )


# -- chat ---------------------------------------------------------------------------------------


def by_chat(
    url: str, model: str | None, rules: list[Rule], request: str, earlier: list[str], *, timeout: float
) -> Decision:
    import threading

    from gate.context import chat

    deadline = time.monotonic() + timeout
    answers: dict[int, float] = {}
    errors: list[str] = []
    pending = list(enumerate(rules))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                if not pending:
                    return
                at, rule = pending.pop(0)
            try:
                probability = chat.ask(
                    url, model, CHAT_SYSTEM, question(rule.description, request, earlier), deadline=deadline
                )
            except chat.ChatError as error:
                with lock:
                    errors.append(str(error))
                continue
            with lock:
                answers[at] = probability

    workers = [threading.Thread(target=work, daemon=True) for _ in range(min(PARALLEL_QUESTIONS, len(rules)))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()) + 0.05)
    with lock:
        verdicts = [
            Verdict(
                rule, answers[at] >= APPLIES_AT, answers[at], f"P(yes) {answers[at]:.2f} (applies from {APPLIES_AT:g})"
            )
            if at in answers
            else Verdict(rule, None)
            for at, rule in enumerate(rules)
        ]
        failure = None
        if any(verdict.applies is None for verdict in verdicts):
            failure = errors[0] if errors else f"chat endpoint did not answer within {timeout:g} s"
    return Decision(verdicts, failure)


# -- embeddings ---------------------------------------------------------------------------------


_PARTS = r"[,;:()]| and | or | e | ou "


def parts(description: str) -> list[str]:
    """The texts a description is weighed by: itself, and each topic it lists ("Deploying to
    production: Docker images, Kubernetes manifests" also by "Docker images", ...)."""
    import re  # here: the per-prompt path imports it only when embeddings are asked

    found = [description]
    for part in re.split(_PARTS, description):
        part = part.strip(" .-")
        if len(part) > 2 and part not in found:
            found.append(part)
    return found


def _dot(a, b) -> float:
    return sum(x * y for x, y in zip(a, b))


def scores(queries: list[tuple], rule_parts: list[list[tuple]], background: list[tuple]) -> list[float]:
    """Each rule's margin: over the query vectors (the request, the request with context), the
    best similarity to any of the rule's part vectors less that query's mean similarity to the
    background descriptions."""
    baselines = [sum(_dot(query, other) for other in background) / len(background) for query in queries]
    return [
        max(max(_dot(query, vector) for vector in vectors) - baseline for query, baseline in zip(queries, baselines))
        for vectors in rule_parts
    ]


def queries(request: str, earlier: list[str]) -> list[str]:
    """The request alone, and, when there were earlier requests, with them (a follow-up's
    subject lives there)."""
    now = _clip(request, 2000)
    if not earlier:
        return [now]
    return [now, "\n".join([_clip(text, MAX_EARLIER) for text in earlier] + [now])]


def by_embeddings(
    conn, endpoint, rules: list[Rule], request: str, earlier: list[str], *, margin: float, timeout: float
) -> Decision:
    from gate.context import state
    from gate.search import embeddings

    deadline = time.monotonic() + timeout
    made: dict = {}
    model = ""
    try:
        asked = endpoint.embed(queries(request, earlier), role=embeddings.QUERY, timeout=timeout)
        model = asked.model
        texts = [text for rule in rules for text in parts(rule.description)] + list(BACKGROUND)
        known = {
            text: vector
            for text, vector in state.vectors(conn, asked.model, texts).items()
            if len(vector) == asked.dimension
        }
        missing = [text for text in dict.fromkeys(texts) if text not in known]
        # In batches, so that a slow endpoint still gets some descriptions embedded (and cached)
        # on each prompt, rather than none on every prompt.
        for start in range(0, len(missing), DESCRIPTIONS_PER_REQUEST):
            left = deadline - time.monotonic()
            if left <= 0:
                raise embeddings.VectorError(f"embeddings endpoint did not answer within {timeout:g} s")
            batch = missing[start : start + DESCRIPTIONS_PER_REQUEST]
            answer = endpoint.embed(batch, role=embeddings.DOCUMENT, timeout=left)
            if answer.dimension != asked.dimension:
                raise embeddings.VectorError("embeddings endpoint answered vectors of different lengths")
            made.update(zip(batch, answer.rows))
            known.update(made)
    except embeddings.VectorError as error:
        failed = unanswered(rules, str(error))
        failed.model, failed.made = model, made  # what was embedded before the failure is kept
        return failed
    margins = scores(
        asked.rows,
        [[known[text] for text in parts(rule.description)] for rule in rules],
        [known[text] for text in BACKGROUND],
    )
    verdicts = [
        Verdict(rule, value >= margin, value, f"meaning margin {value:+.3f} (applies from {margin:+.3f})")
        for rule, value in zip(rules, margins)
    ]
    return Decision(verdicts, None, asked.model, made)


# -- hybrid -------------------------------------------------------------------------------------


def by_hybrid(conn, endpoint, rules: list[Rule], request: str, earlier: list[str], *, timeout: float) -> Decision:
    """gate.context.hybrid's verdicts, with the embeddings margins when `endpoint` is set and answers; when
    it does not, by words alone, and the decision's note says why."""
    from gate.context import hybrid

    margins, model, made, note = None, "", {}, None
    if endpoint is not None and rules and words_of(request).work:
        meaning = by_embeddings(conn, endpoint, rules, request, earlier, margin=0.0, timeout=timeout)
        model, made = meaning.model, meaning.made
        if meaning.failure is None:
            margins = [verdict.score for verdict in meaning.verdicts if verdict.score is not None]  # all, answered
        else:
            note = f"meaning left out ({meaning.failure}): rules weighed by words"
    weighed, quiet = hybrid.weigh([rule.description for rule in rules], request, earlier, margins)
    verdicts = [Verdict(rule, item.applies, item.points, quiet or item.why()) for rule, item in zip(rules, weighed)]
    return Decision(verdicts, None, model, made, note)


def words_of(request: str):
    from gate.context import words

    return words.keys(request)


def by_words_instead(decision: Decision, request: str, earlier: list[str]) -> Decision:
    """The rules `decision` left unanswered, weighed by words (gate.context.hybrid without meaning) among
    all the rules it was asked about; their paths go to `by_words`."""
    from gate.context import hybrid

    if all(verdict.applies is not None for verdict in decision.verdicts):
        return decision
    weighed, quiet = hybrid.weigh([verdict.rule.description for verdict in decision.verdicts], request, earlier)
    for verdict, item in zip(decision.verdicts, weighed):
        if verdict.applies is None:
            verdict.applies, verdict.score, verdict.why = (
                item.applies,
                item.points,
                "by words: " + (quiet or item.why()),
            )
            decision.by_words.append(verdict.rule.path)
    return decision
