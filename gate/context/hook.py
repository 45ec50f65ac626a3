"""`memory-gate inject EVENT`: injected-context's per-prompt entry point, JSON on stdin.

Events:
- UserPromptSubmit (settings hook): the rules that apply, as `additionalContext`.
- SessionStart (settings hook, source compact or clear): the session may be given its rules again.
- Submit (the mod's prompt.submit): `{"context": [entries], "notice"?}`, or, when the classifier
  is Claude Code's own model, `{"context": [], "ask": {labels, model, rules: [{rule, text}]}}`:
  the questions for the mod to put to `$.model.classify`.
- Answered (the mod, with those answers): `{"context": [...], "notice"?}`.

The per-prompt path: the standard library and apsw only (JSON through gate.jsonlite). It fails
open: whatever breaks (bad input, a missing or corrupt database, a setting it cannot use) exits 0
with one warning line, `{"systemMessage": ...}`, and the prompt goes on without rules. Never exit
2: on UserPromptSubmit that would erase the owner's prompt.
"""

from __future__ import annotations

import sys

from gate import config
from gate.claude import hookio

NAME = "injected-context"


def _text(payload: dict, key: str) -> str:
    value = payload.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"hook input has no {key}")
    return value


def _setup(payload: dict):
    settings = config.load(cwd=payload.get("cwd") if isinstance(payload.get("cwd"), str) and payload["cwd"] else None)
    from gate.context import inject

    return settings, inject, inject.folders_for(settings)


def user_prompt_submit(payload: dict) -> dict | None:
    session, prompt = _text(payload, "session_id"), payload.get("prompt")
    if not isinstance(prompt, str):
        raise ValueError("hook input has no prompt")
    prompt_id = payload.get("prompt_id") if isinstance(payload.get("prompt_id"), str) else None
    settings, inject, places = _setup(payload)
    served = inject.submit(
        settings, config.load_context(), places, session=session, prompt=prompt, source="hook", prompt_id=prompt_id
    )
    output: dict = {}
    if served.entries:
        output["hookSpecificOutput"] = {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": inject.joined(served.entries),
        }
    if served.notice:
        output["systemMessage"] = served.notice
    return output or None


def session_start(payload: dict) -> None:
    source = payload.get("source")
    if source not in ("compact", "clear"):
        return None
    settings, inject, _ = _setup(payload)
    inject.reset(settings, session=_text(payload, "session_id"), cleared=source == "clear")
    return None


def submit(payload: dict) -> dict:
    session, prompt = _text(payload, "session_id"), payload.get("prompt")
    if not isinstance(prompt, str):
        raise ValueError("hook input has no prompt")
    settings, inject, places = _setup(payload)
    context = config.load_context()
    served = inject.submit(settings, context, places, session=session, prompt=prompt, source="mod")
    return served.as_json(context.timeout)


def answered(payload: dict) -> dict:
    session, labels = _text(payload, "session_id"), payload.get("labels")
    if not isinstance(labels, dict) or not all(isinstance(key, str) for key in labels):
        raise ValueError("hook input has no labels object")
    reason = payload.get("reason") if isinstance(payload.get("reason"), str) else None
    settings, inject, places = _setup(payload)
    return inject.answered(settings, places, session=session, labels=labels, reason=reason).as_json()


EVENTS = {
    "UserPromptSubmit": user_prompt_submit,
    "SessionStart": session_start,
    "Submit": submit,
    "Answered": answered,
}


USAGE = """usage: memory-gate inject EVENT < input.json

Claude Code runs this: injected-context's hooks (UserPromptSubmit, SessionStart) and its mod's
questions (Submit, Answered); the hook's JSON comes on stdin, the answer goes to stdout as JSON.

Example:
  echo '{"session_id": "s", "prompt": "add a migration"}' | memory-gate inject UserPromptSubmit"""


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--explain"]:  # for people, not the per-prompt path
        from gate.context import explain

        return explain.main(args)
    if hookio.asks_for_help(args, USAGE):
        return 0
    event = args[0] if args else ""
    return hookio.serve(event, EVENTS.get(event), known=EVENTS, name=NAME, off="no rules injected for this prompt")


if __name__ == "__main__":
    raise SystemExit(main())
