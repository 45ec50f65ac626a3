"""`memory-gate log`, `history` and `undo`: the story write.log tells, and going back in it.

A change is named by its entry (`3b8747aa:12`: the write's id and the fact's). Log lines are
printed as they are read, and redacted: old lines may hold the owner's words as they were typed.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections import deque

from gate import clock, credentials
from gate.cli import terminal
from gate.cli.terminal import INDENT, print_text
from gate.memory import history, opening, undo
from gate.memory.opening import UserError

WHY_SHOWN = 200


def cmd_log(args: argparse.Namespace) -> int:
    with opening.open_memory(opening.settings(args)) as opened:
        found = opened.record.entries(fact=args.fact, session=args.session, since=args.since)
        if args.limit:
            found = deque(found, maxlen=args.limit)  # the last N, without holding the rest
        # Redacted for display: old lines may hold the owner's words as they were typed.
        shown = (credentials.redact_json(entry) for entry in found)
        if args.json:
            terminal.json_list(shown, sys.stdout)
            return 0
        count = 0
        for entry in shown:
            _print_entry(entry)
            count += 1
        if not count:
            print("no changes logged" + (" that match" if args.fact or args.session or args.since else ""))
        return 0


def _print_entry(entry: dict) -> None:
    when = clock.shown(entry.get("time"))
    flag = "" if entry["committed"] else "  (never committed)"
    name = entry.get("entry", "?")
    print(f"{name}  {when}  {entry.get('op')} [{entry.get('id')}] {entry.get('topic')} ({entry.get('kind')}){flag}")
    member = f"  by {entry['member']}" if entry.get("member") else ""
    print(f"    session {entry.get('session')}  turn {entry.get('turn')}{member}")
    before, after = entry.get("before"), entry.get("after")
    if before and after:
        for key in ("topic", "kind", "date"):
            if before.get(key) != after.get(key):
                print(f"    {key}: {before.get(key)} -> {after.get(key)}")
        if before.get("text") != after.get("text"):
            print(f"    before: {before.get('text')}")
            print(f"    after:  {after.get('text')}")
    elif before:
        print(f"    was: {before.get('text')}")
    elif after:
        print(f"    text: {after.get('text')}")
    _print_why(entry)
    print()


def cmd_history(args: argparse.Namespace) -> int:
    with opening.open_memory(opening.settings(args)) as opened:
        changes = opened.record.changes(args.id)
        first = next(changes, None)
        if first is None:
            held = _now(opened, args.id) is not None
            raise UserError(
                f"{opened.record.where} records no committed change to fact {args.id}"
                + (
                    ", though memory holds it: the log lost lines (`memory-gate doctor` checks it)."
                    if held
                    else ", and memory holds no such fact: `memory-gate show` lists the facts."
                )
            )
        changes = itertools.chain([first], changes)
        if args.json:
            terminal.json_list((credentials.redact_json(change.to_json()) for change in changes), sys.stdout)
        else:
            last = first
            for last in changes:
                _print_change(last)
            now = _now(opened, args.id)
            if now is None:
                print(f"fact {args.id} is not in memory (deleted).")
            elif now == last.after:
                print(f"fact {args.id} is in memory as its last version above.")
            else:
                print(
                    f"fact {args.id} is in memory, but not as its last logged version: the log lost lines (`memory-gate doctor`)."
                )
        return 0


def _now(opened: opening.Opened, fact_id: int) -> dict | None:
    """The fact's topic, kind, text and date as memory holds it now, or None."""
    return opened.store.snapshot(fact_id)


def _print_change(change: history.Change) -> None:
    entry = credentials.redact_json(change.entry)
    before, after = entry.get("before") or {}, entry.get("after") or {}
    what = change.op
    if change.op == "update":
        what += ": " + ", ".join(change.changed())
    if change.undid():
        what += f"  (undoes {change.undid()})"
    print(f"{change.name}  {clock.shown(entry.get('time'))}  {what}")
    member = f" of {entry['member']}" if entry.get("member") else ""
    print(f"{INDENT}by session {entry.get('session')}{member}, turn {entry.get('turn')}")
    _print_why(entry)
    if change.op == "delete":
        print(f"{INDENT}deleted; it read:")
        print_text(before.get("text"))
    else:
        print(f"{INDENT}{after.get('kind')} | {after.get('topic')} | {after.get('date')}")
        print_text(after.get("text"))
    print()


def entry_argument(text: str) -> str:
    """argparse type: a change as `memory-gate log` names it (a malformed one is a usage error)."""
    try:
        history.parse_entry(text)
    except history.BadEntry as error:
        raise argparse.ArgumentTypeError(str(error)) from error
    return text.strip().lower()


def cmd_undo(args: argparse.Namespace) -> int:
    settings = opening.settings(args)
    with opening.open_memory(settings) as opened:
        conn = opened.ledger()
        memory = opened.store
        # Vectors are kept in step when sqlite-vec loads; without it facts_to_embed keeps search
        # honest until a connection that has it catches up.
        memory.index.prepare()
        try:
            done = undo.revert(
                memory,
                conn,
                args.entry,
                command=terminal.command_line(args.argv),
                endpoint=opening.patient_endpoint(settings),
            )
        except undo.CannotUndo as error:
            raise UserError(str(error)) from error
        if args.json:
            print(terminal.json_text(done.to_json()))
            return 0
        reverted, fact = done.reverted, done.fact
        if done.op == "delete":
            print(f"undid {reverted.name}: fact {fact}, which it inserted, is deleted.")
        elif done.op == "update":
            back = reverted.before or {}
            print(f"undid {reverted.name}: fact {fact} reads as before it again:")
            print(f"{INDENT}{back.get('kind')} | {credentials.redact(str(back.get('topic')))} | {back.get('date')}")
            print_text(back.get("text"))
        else:
            print(f"undid {reverted.name}: fact {fact}, which it deleted, is back under its id.")
        print(f"logged in {memory.record.where} as {done.entry}; `memory-gate undo {done.entry}` redoes the change.")
        return 0


def _print_why(entry: dict) -> None:
    """The reason a change gives (the turn's words, or the command typed), on one line of at most
    WHY_SHOWN characters; `log` and `history` print it alike."""
    if entry.get("words"):
        words = " ".join(str(entry["words"]).split())
        print(f"{INDENT}why: {words[:WHY_SHOWN]}{'...' if len(words) > WHY_SHOWN else ''}")
