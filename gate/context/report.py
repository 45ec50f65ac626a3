"""injected-context's section of `memory-gate doctor`: which classifier, which rule files, what
is skipped and why, whether the classifier answers, and the last failure logged."""

from __future__ import annotations

import os
import time

from gate import config
from gate.context import inject, rules

NONE_CONFIGURED = (
    "MEMORY_GATE_CONTEXT_CLASSIFIER=none, so no rule is injected: unset it for the hybrid classifier (words, "
    "and meaning with MEMORY_GATE_EMBED_URL), or set claude (in the injected-context mod), embeddings or chat"
)
EXPLAIN = "`memory-gate inject --explain PROMPT` shows why each rule file would or would not be injected"


def doctor(settings: config.Settings, environ=None, *, probe: bool = True) -> tuple[dict, list[str]]:
    """The report section and its problems (a classifier configured that cannot work). A rule
    file without a description is a warning, listed under `skipped`, not a problem."""
    places = inject.folders_for(settings, environ)
    found, skipped = rules.load(places)
    report: dict = {"folders": places, "rules": len(found)}
    if skipped:
        report["skipped"] = [f"WARNING {item}" for item in skipped]
    problems: list[str] = []
    try:
        context = config.load_context(environ)
    except config.ConfigError as error:
        report["classifier"] = "unusable"
        return report, [str(error)]
    report["classifier"] = context.classifier or "none"
    if context.classifier is None:
        report["note"] = NONE_CONFIGURED
    elif context.classifier == "hybrid":
        if settings.embed_url:
            report["hybrid"] = {"words": "yes", "meaning": settings.embed_url, "model": settings.embed_model}
            if probe:
                report["hybrid"]["answers"] = _probe_embeddings(settings.embed_url, settings.embed_model, [])
        else:
            report["hybrid"] = {"words": "yes", "meaning": "no (set MEMORY_GATE_EMBED_URL to add it)"}
        report["note"] = (
            "hybrid (the default): rules weighed by the words and topics they share with the request; "
            "where the injected-context mod runs, claude is the better pick. " + EXPLAIN
        )
    elif context.classifier == "embeddings":
        report["embeddings"] = {"url": settings.embed_url, "model": settings.embed_model, "margin": context.margin}
        if not settings.embed_url:
            problems.append(
                "MEMORY_GATE_CONTEXT_CLASSIFIER=embeddings needs MEMORY_GATE_EMBED_URL: until it is set, "
                "every pending rule is injected unchecked"
            )
        elif probe:
            report["embeddings"]["answers"] = _probe_embeddings(settings.embed_url, settings.embed_model, problems)
    elif context.classifier == "chat":
        report["chat"] = {
            "url": context.chat_url,
            "model": context.chat_model or "(none sent)",
            "timeout": context.timeout,
        }
        if not context.chat_url:
            problems.append(
                "MEMORY_GATE_CONTEXT_CLASSIFIER=chat needs MEMORY_GATE_CONTEXT_CHAT_URL: until it is set, "
                "every pending rule is injected unchecked"
            )
        elif probe:
            report["chat"]["answers"] = _probe_chat(context, context.chat_url, problems)
    else:
        report["note"] = (
            "claude: Claude Code's own small model, asked by the injected-context mod; where only the "
            "settings hook runs, and for a rule it leaves unanswered, words decide. " + EXPLAIN
        )
    log = os.path.join(places[0], inject.LOG_NAME)
    if os.path.exists(log):
        report["log"] = {"path": log, "last": _last_line(log)}
    return report, problems


def _probe_embeddings(url: str, model: str, problems: list[str]) -> str:
    from gate.search import embeddings

    endpoint = embeddings.Endpoint(url, model, quiet_after_timeout=0.0)
    try:
        answer = endpoint.embed(["doctor's probe"], role=embeddings.QUERY, timeout=5.0)
    except embeddings.VectorError as error:
        problems.append(f"{error}: every pending rule is injected unchecked until it answers")
        return "no"
    return f"yes ({answer.model}, {answer.dimension} dimensions)"


def _probe_chat(context: config.ContextSettings, url: str, problems: list[str]) -> str:
    from gate.context import chat, classify

    question = classify.question("Writing database migrations.", "Add a column to the users table.", [])
    try:
        probability = chat.ask(
            url,
            context.chat_model,
            classify.CHAT_SYSTEM,
            question,
            deadline=time.monotonic() + max(context.timeout, 5.0),
        )
    except chat.ChatError as error:
        problems.append(f"{error}: every pending rule is injected unchecked until it answers")
        return "no"
    return f"yes (P(yes) {probability:.2f} on a question whose answer is yes)"


def _last_line(path: str) -> str:
    with open(path, "rb") as handle:
        handle.seek(max(0, os.path.getsize(path) - 4096))
        lines = handle.read().decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else ""
