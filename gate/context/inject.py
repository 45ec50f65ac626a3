"""One prompt's injected context: which rules are pending, what the classifier says, what goes in.

`submit` serves a prompt for either delivery. The settings hook passes its text back to Claude
Code as `additionalContext`, which holds at most 10,000 characters (UTF-16 units, measured on
2.1.328): past that, Claude Code saves the text to a file and shows the model a 2 KB preview.
A rule cut off in the middle could lose the half that forbids something, so rules go in whole,
most relevant first, while they fit; a rule that does not fit is named by its path, with the
request to read the file before starting, and counts as given. The mod's context entries hold
100,000 characters before the same happens, so the mod packs to that.

A prompt with no work in it (thanks, yes, small talk) is recorded as the session's latest
request and weighed by no classifier: nothing applies to it.

When the classifier gives no answer for a rule (down, slow, garbage, a refusal, not configured
properly), that rule is weighed by words instead (the hybrid classifier without meaning, which
needs nothing but the rule files), the owner gets a one-line notice, and a line goes to
`injected-context.log` in the owner's rules folder (never the project's, which a team may
commit).
"""

from __future__ import annotations

import os

from gate import clock, config
from gate.claude import hookio
from gate.context import classify, rules, state
from gate.engine import store

HOOK_BUDGET = 10_000
MOD_BUDGET = 100_000
LOG_NAME = "injected-context.log"


class Served:
    """What a delivery hands Claude Code: context entries (one per rule) and a notice for the
    owner, or, for the mod's own classifier, the questions to ask first."""

    __slots__ = ("entries", "notice", "questions")

    def __init__(
        self, entries: list[str] | None = None, notice: str | None = None, questions: list[dict] | None = None
    ):
        self.entries = entries or []
        self.notice = notice
        self.questions = questions

    def as_json(self, timeout: float = config.DEFAULT_CONTEXT_TIMEOUT) -> dict:
        out: dict = {"context": self.entries}
        if self.notice:
            out["notice"] = self.notice
        if self.questions is not None:
            out["ask"] = {
                "labels": list(classify.LABELS),
                "model": classify.CLAUDE_MODEL,
                "timeoutMs": int(timeout * 1000),
                "rules": self.questions,
            }
        return out


def folders_for(settings: config.Settings, environ=None) -> list[str]:
    return rules.folders(config.claude_dir(environ), settings.project_dir)


def units(text: str) -> int:
    """Length as Claude Code counts it (JavaScript's, in UTF-16 code units)."""
    return len(text.encode("utf-16-le")) // 2


# -- serving a prompt ---------------------------------------------------------------------------


def submit(
    settings: config.Settings,
    context: config.ContextSettings,
    places: list[str],
    *,
    session: str,
    prompt: str,
    source: str,
    prompt_id: str | None = None,
) -> Served:
    if context.classifier is None or hookio.automated(prompt) or not rules.paths(places):
        return Served()  # the cheap way out, before the database is opened
    conn = store.connect(config.find_database(settings))
    try:
        with store.writing(conn):
            earlier = state.claim(conn, session, prompt, source=source, prompt_id=prompt_id)
            given = state.given(conn, session) if earlier is not None else set()
        if earlier is None:
            return Served()
        pending, _ = rules.load(places, leave_out=given)
        if not pending or not classify.words_of(prompt).work:  # the words' index only when rules wait
            return Served()
        name = context.classifier
        if name == "claude" and source == "mod":
            return Served(
                questions=[
                    {"rule": rule.path, "text": classify.classify_text(rule.description, prompt, earlier)}
                    for rule in pending
                ]
            )
        decision = classify.by_words_instead(
            _classify(conn, settings, context, pending, prompt, earlier), prompt, earlier
        )
        return finish(conn, session, decision, name, places, MOD_BUDGET if source == "mod" else HOOK_BUDGET)
    finally:
        conn.close()


def _classify(conn, settings, context, pending, prompt, earlier) -> classify.Decision:
    if context.classifier == "hybrid":
        from gate.search import embeddings

        return classify.by_hybrid(
            conn, embeddings.Endpoint.from_settings(settings), pending, prompt, earlier, timeout=context.timeout
        )
    if context.classifier == "embeddings":
        from gate.search import embeddings

        endpoint = embeddings.Endpoint.from_settings(settings)
        if endpoint is None:
            return classify.unanswered(pending, "MEMORY_GATE_CONTEXT_CLASSIFIER=embeddings needs MEMORY_GATE_EMBED_URL")
        return classify.by_embeddings(
            conn, endpoint, pending, prompt, earlier, margin=context.margin, timeout=context.timeout
        )
    if context.classifier == "chat":
        if not context.chat_url:
            return classify.unanswered(
                pending, "MEMORY_GATE_CONTEXT_CLASSIFIER=chat needs MEMORY_GATE_CONTEXT_CHAT_URL"
            )
        return classify.by_chat(context.chat_url, context.chat_model, pending, prompt, earlier, timeout=context.timeout)
    return classify.unanswered(
        pending, "the claude classifier runs only inside the injected-context mod (mods/injected-context)"
    )


def answered(
    settings: config.Settings,
    places: list[str],
    *,
    session: str,
    labels: dict,
    reason: str | None,
    name: str = "claude",
) -> Served:
    """The mod's answers to the questions `submit` gave it: {path: label, or None when the model
    named no label or the request failed}."""
    known = set(rules.paths(places))
    verdicts = []
    for path, label in labels.items():
        rule = rules.read(path) if path in known else None
        if isinstance(rule, rules.Rule):
            applies = None if label not in classify.LABELS else label == classify.LABELS[0]
            verdicts.append(classify.Verdict(rule, applies))
    failure = None
    if any(verdict.applies is None for verdict in verdicts):
        failure = reason or "Claude Code's model named no label"
    conn = store.connect(config.find_database(settings))
    try:
        decision = classify.Decision(verdicts, failure)
        if failure:
            prompt, earlier = state.latest(conn, session)
            decision = classify.by_words_instead(decision, prompt, earlier)
        return finish(conn, session, decision, name, places, MOD_BUDGET)
    finally:
        conn.close()


def finish(conn, session: str, decision: classify.Decision, name: str, places: list[str], budget: int) -> Served:
    """Pack what applies (or went unanswered), mark it given, and say so when unanswered."""
    chosen = [verdict for verdict in decision.verdicts if verdict.applies is not False]
    chosen.sort(key=lambda verdict: (verdict.applies is None, -(verdict.score or 0.0)))
    packed = pack([verdict.rule for verdict in chosen], budget)
    with store.writing(conn):
        if decision.made:
            state.keep_vectors(conn, decision.model, decision.made)
        fresh = set(state.give(conn, session, [path for path, _ in packed]))
    entries = [entry for path, entry in packed if path in fresh]
    notices = []
    if decision.by_words:
        weighed = decision.by_words
        injected = [path for path in decision.by_words if path in fresh]
        log = log_failure(places[0], session, name, decision.failure or "no answer", weighed, injected)
        where = f" (see {log})" if log else ""
        count = f"{len(weighed)} rule file{'s' if len(weighed) != 1 else ''}"
        notices.append(
            f"injected-context: the {name} classifier did not answer ({decision.failure}); {count} "
            f"weighed by words instead, {len(injected)} injected{where}"
        )
    if decision.note:
        notices.append(f"injected-context: {decision.note}")
    return Served(entries, " ".join(notices) or None)


# -- packing -----------------------------------------------------------------------------------


def entry(rule: rules.Rule) -> str:
    return f"Rules from {rule.path} (injected-context: they apply to this request):\n\n{rule.body}"


def pointer(rule: rules.Rule) -> str:
    return (
        f"Rules from {rule.path} also apply to this request but are too long to include here: "
        "read that file before you start."
    )


def pack(chosen: list[rules.Rule], budget: int) -> list[tuple[str, str]]:
    """(path, text) for each rule that goes in, in order: whole while it fits beside pointers to
    every rule after it, else a pointer. Rules whose pointer no longer fits stay pending."""
    gap = units("\n\n")
    pointers = [units(pointer(rule)) + gap for rule in chosen]
    packed, used = [], 0
    for at, rule in enumerate(chosen):
        reserve = sum(pointers[at + 1 :])
        whole = entry(rule)
        if used + units(whole) + gap + reserve <= budget:
            packed.append((rule.path, whole))
            used += units(whole) + gap
        elif used + pointers[at] <= budget:
            packed.append((rule.path, pointer(rule)))
            used += pointers[at]
    return packed


def joined(entries: list[str]) -> str:
    """The settings hook's additionalContext: the entries, one after the other."""
    return "\n\n".join(entries)


# -- the failure log ------------------------------------------------------------------------------


def log_failure(folder: str, session: str, name: str, reason: str, paths: list[str], injected: list[str]) -> str | None:
    """Append one line to injected-context.log in `folder` (made private if missing); its path,
    or None when it cannot be written (the notice still goes out)."""
    path = os.path.join(folder, LOG_NAME)
    stamp = clock.now()
    line = (
        f"{stamp} session={session} classifier={name} did not answer ({' '.join(reason.split())}); "
        f"weighed by words: {', '.join(paths) or 'none'}; injected: {', '.join(injected) or 'none'}\n"
    )
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, line.encode("utf-8"))
        finally:
            os.close(descriptor)
    except OSError:
        return None
    return path


# -- compaction and /clear ---------------------------------------------------------------------------


def reset(settings: config.Settings, *, session: str, cleared: bool) -> None:
    path = config.find_database(settings)
    if not os.path.exists(path):
        return  # nothing was ever given in this project
    conn = store.connect(path)
    try:
        with store.writing(conn):
            state.forget(conn, session, requests=cleared)
    finally:
        conn.close()
