"""`memory-gate search`, `show` and `review`: the facts as memory holds them now.

Rows are printed as they are read, never gathered first, so a memory of any size answers at once.
What is printed of facts is redacted (gate.credentials): a database from before the credential
check knew a shape may still hold a credential.
"""

from __future__ import annotations

import argparse
import json
import sys

from gate import clock, credentials
from gate.cli import terminal
from gate.cli.terminal import fact_json, print_fact
from gate.memory import listing, opening
from gate.search import fulltext, lookup, query, ranking


def cmd_search(args: argparse.Namespace) -> int:
    terms = " ".join(args.terms)
    if args.explain:
        # Without the database's word counts: in a large memory, words nearly every fact holds
        # are left out of the expression.
        expression = query.parse(terms).expression()
        print(f"match  {expression.text if expression else '(nothing to search for)'}")
        print(
            f"score  {ranking.WORD_WEIGHT:g} x a fact's bm25 as a share of the best fact's, plus the standard "
            "deviations it stands nearer the query than memory at large (meaning), for each query"
        )
        print(
            f"keep   every fact scoring >= {ranking.SHARE:g} of the best, when memory holds something on the subject: "
            f"words whose terms carry >= {fulltext.COVERAGE:g} of the query's weight, or a fact meaning calls near, "
            f"or a fact among the {ranking.AGREE} best of both"
        )
        print(
            "drop   with meaning, a fact beyond the terms' word hits that one signal alone offers, when the signals "
            f"disagree: no fact among the {ranking.AGREE} best of a query's words and meaning, none both queries' "
            "words find (ranking.vouched)"
        )
        return 0
    settings = opening.settings(args)
    with opening.open_memory(settings) as opened:
        # memory_search's ranking, words and meaning alike, recording nothing (gate.search.lookup).
        opened.store.index.prepare()
        answer = lookup.rank(opened.store.search, terms, limit=args.limit, endpoint=opening.patient_endpoint(settings))
        found = answer.facts
        for note in answer.notes:
            print(f"memory-gate: {note}", file=sys.stderr)
        keys = ("id", "topic", "kind", "text", "date")
        # Redacted for display: a database from before the credential check may hold some.
        shown = [credentials.redact_json({key: getattr(fact, key) for key in keys}) for fact in found]
        if args.json:
            print(json.dumps(shown, ensure_ascii=False, indent=2))
            return 0
        if not found:
            print(f'nothing in memory for "{credentials.redact(terms)}"')
        for fact in shown:
            print(f"[{fact['id']}] {fact['kind']} | {fact['topic']} | {fact['date']}")
            for line in fact["text"].splitlines():
                print(f"    {line}")
        return 0


def cmd_show(args: argparse.Namespace) -> int:
    with opening.open_memory(opening.settings(args)) as opened:
        chosen = dict(topic=args.topic, kind=args.kind, since=args.since, limit=args.limit)
        found = opened.store.listing.facts(**chosen)
        if args.json:
            terminal.json_list(map(fact_json, found), sys.stdout)
            return 0
        count = 0
        for fact in found:
            changed = "created" if fact.rev == 1 and fact.updated == fact.created else "changed"
            print_fact(fact, f"{changed} {clock.shown(fact.updated)}, revision {fact.rev}")
            count += 1
        if not count:
            filtered = args.topic or args.kind or args.since
            print("no facts" + (" that match" if filtered else " in memory yet"))
        return 0


REVIEW_DAYS = 30


def cmd_review(args: argparse.Namespace) -> int:
    with opening.open_memory(opening.settings(args)) as opened:
        before = listing.cutoff(args.days)
        memory = opened.store.listing
        found = memory.unconfirmed(before, limit=args.limit)
        if args.json:
            terminal.json_list(map(fact_json, found), sys.stdout)
            return 0
        total = memory.count_unconfirmed(before)
        if not total:
            print(f"every fact was kept or updated by a turn in the last {args.days} days")
            return 0
        print(
            f"{total} fact{'s' if total != 1 else ''} no turn has kept or updated in {args.days} days, "
            "the longest first; each may be stale. Ask the agent about the ones in doubt, or "
            "`memory-gate history ID` for how one came to be.\n"
        )
        for fact in found:
            print_fact(fact, f"last confirmed {clock.shown(fact.confirmed)}")
        return 0
