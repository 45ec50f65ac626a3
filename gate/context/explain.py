"""`memory-gate inject --explain PROMPT`: why each rule file would or would not be injected for a
prompt, by the classifier in force, without recording anything.

    memory-gate inject --explain "o estorno parcial tá devolvendo o valor total"
    memory-gate inject --explain "now the same for orders" --earlier "add a created_by column to invoices"

Every rule file of the owner's and the project's folders is weighed as if none had been given
yet. The hybrid classifier shows the words and topics each verdict rests on, its meaning margin
and the earlier request it leaned on; embeddings its margin; chat its P(yes). The claude
classifier runs only inside the mod, so its place is taken by what words say, which is also
what decides when it does not answer.
"""

from __future__ import annotations

import argparse
import os
import sys

from gate import config
from gate.context import classify, inject, rules
from gate.engine import store

EXAMPLE = """example:
  memory-gate inject --explain "add pt-BR translations"
  memory-gate inject --explain "now the same for orders" --earlier "add a created_by column to invoices"
"""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="memory-gate inject",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="injected-context's hooks (UserPromptSubmit, SessionStart; the mod's Submit and Answered), "
        "JSON on stdin; or, with --explain, why each rule file would or would not be injected.",
    )
    parser.add_argument("--explain", metavar="PROMPT", required=True, help="the prompt to weigh the rule files against")
    parser.add_argument(
        "--earlier",
        metavar="TEXT",
        action="append",
        default=[],
        help="an earlier request of the session, oldest first (at most two count)",
    )
    args = parser.parse_args(argv)
    try:
        settings, context = config.load(), config.load_context()
    except config.ConfigError as error:
        print(f"memory-gate: {error}", file=sys.stderr)
        return 1
    for line in explain(settings, context, args.explain, args.earlier[-2:]):
        print(line)
    return 0


def explain(settings: config.Settings, context: config.ContextSettings, prompt: str, earlier: list[str]) -> list[str]:
    places = inject.folders_for(settings)
    found, skipped = rules.load(places)
    name = context.classifier
    lines = [f"classifier: {name or 'none (MEMORY_GATE_CONTEXT_CLASSIFIER=none: nothing is injected)'}"]
    lines += [f"rule files: {len(found)} in {' and '.join(places)}"] + [f"skipped: {item}" for item in skipped]
    if name is None or not found:
        return lines
    if not classify.words_of(prompt).work:
        return lines + [
            "the prompt carries no work (small talk, thanks or an approval): nothing is injected, "
            "no classifier is asked"
        ]
    if name == "claude":
        lines.append(
            "claude runs inside the mod only; below, what words say (they decide for a rule it leaves unanswered)"
        )
    path = config.find_database(settings)
    conn = store.connect(path if os.path.exists(path) else ":memory:")  # read for the vectors cache only
    try:
        decision = classify.by_words_instead(_decide(conn, settings, context, found, prompt, earlier), prompt, earlier)
    finally:
        conn.close()
    if decision.failure:
        lines.append(f"the {name} classifier did not answer ({decision.failure}): words decided")
    if decision.note:
        lines.append(decision.note)
    order = sorted(decision.verdicts, key=lambda verdict: (not verdict.applies, -(verdict.score or 0.0)))
    for verdict in order:
        said = "inject" if verdict.applies else "leave "
        score = "" if verdict.score is None else f" {verdict.score:.2f}"
        lines.append(f"{said}{score}  {verdict.rule.path}")
        lines.append(f"        {verdict.rule.description}")
        if verdict.why:
            lines.append(f"        why: {verdict.why}")
    return lines


def _decide(conn, settings, context, found, prompt, earlier) -> classify.Decision:
    if context.classifier == "claude":
        return classify.by_hybrid(None, None, found, prompt, earlier, timeout=0.0)
    return inject._classify(conn, settings, context, found, prompt, earlier)
