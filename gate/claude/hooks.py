"""Claude Code hooks: open each turn, map tool calls to it, and hold an answer that owes memory.

`memory-gate hook EVENT [--tools PREFIX]` with the hook's JSON on stdin, for the settings hooks
UserPromptSubmit, PreToolUse, SessionStart and Stop, and for the mod's two questions: `Hold`,
asked before a final answer goes out, and `Status`, when the model calls the mod's tool itself;
the mod sends its own record of the turn's memory calls with both, and they rule on it.
PREFIX is how the memory tools are named in this install (`mcp__plugin_memory-gate_memory__`
from the plugin), so that messages name the exact tool.

This is the per-turn path: it imports the standard library and the SQLite binding only (JSON
through gate.jsonlite, cheaper to import than `json`), and fails open (gate.claude.hookio): a
missing, locked or corrupt database, input that is not what Claude Code sends, an unknown event,
any bug, and the hook exits 0 with one warning line for the owner while the turn goes on. Memory
must never lock the owner out of their agent; a block is a decision, never a crash.
"""

import os
import sys

from gate import config
from gate.claude import hookio
from gate.engine import store
from gate.memory import ledger

TYPE_CHECKING = False
if TYPE_CHECKING:  # imported by the Stop hook alone, where it asks (a share of every other hook's start)
    import apsw

    from gate.memory import witness

# gate.credentials and gate.claude.maxturns are imported where they are needed: a PreToolUse hook, and
# a Stop or Hold on a turn that is met (the usual case), use neither, and every module is a
# share of a hook's start.

# Times one turn's answer may be held back (by the mod, or blocked by the Stop hook) before it goes
# out unmet. The gate counts them itself, in the turn's ledger row: Claude Code's own bound (8
# consecutive Stop blocks, reset by any tool call in between) ends a turn without a word to the
# hook, and `stop_hook_active` says only that some Stop hook blocked before, not how often.
MAX_HOLDS = 3
# How long a hook waits for another session's write: with 8 sessions writing at once a wait of
# 2 s was seen (bench/concurrency.py), and the hooks' timeout in hooks.json is 10 s.
BUSY_MS = 5000

# What the owner reads when an answer goes out unmet, in either mode (the mod logs it, the Stop
# hook says it as its systemMessage).
RELEASED = "memory-gate: this answer went out without memory kept up to date."


# What the owner reads when the Stop hook judged a turn on the ledger's counts, because no memory
# server answered its question (gate.memory.witness): one it cannot trust against a shell command.
LEDGER_ONLY = (
    "memory-gate: the memory server could not be asked what this turn did, so the gate judged it "
    "on the ledger file, which a shell command can change; `memory-gate doctor` checks the server."
)


def released_by_limit(limit: int) -> str:
    return (
        f"memory-gate: this answer went out without memory kept up to date: --max-turns {limit} "
        "leaves no room to hold it."
    )


def _affordable(state: ledger.Gate, step: int | None, limit: int | None) -> bool:
    """Whether a hold at this model request leaves the turn room to pay memory and answer again
    within --max-turns (gate.claude.maxturns): a hold past the limit would lose the answer."""
    if limit is None or step is None:
        return True
    from gate.claude import maxturns

    return step + maxturns.needed(state.searched) <= limit


CONTRACT = (
    "memory-gate: this project keeps memory. Before answering, call {search} with keywords of "
    "the request; before your final answer, call {write} with what this turn changed, answering "
    "for every fact the search returned (kept, updated or deleted)."
)


def _database(payload: dict, *, create: bool) -> tuple[str, bool]:
    """The turn ledger's path, and whether the project's facts are in that file too or in a
    team's memory (config.facts_here: the ledger's reads are owed as the facts' store says)."""
    settings = config.load(cwd=payload.get("cwd") or None)
    path = config.find_database(settings)
    if not create and not os.path.exists(path):
        raise hookio.Skip
    return path, config.facts_here(settings, path)


def _open(payload: dict, *, create: bool):
    return store.connect(_database(payload, create=create)[0], busy_ms=BUSY_MS)


def _text(payload: dict, key: str) -> str:
    value = payload.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"hook input has no {key}")
    return value


def missing(state: ledger.Gate, prefix: str = "") -> str:
    """What the turn still owes memory, and how to pay it, in one message."""
    search, write = f"{prefix}memory_search", f"{prefix}memory_write"
    if not state.searched:
        return (
            f"memory-gate: this turn has not searched memory. Call {search} with keywords of the "
            f"request, then {write} with what the turn changed (ops [] and kept [] if nothing), "
            "then answer the owner."
        )
    if state.unanswered:
        ids = ", ".join(str(fact) for fact in state.unanswered)
        noun = "Fact" if len(state.unanswered) == 1 else "Facts"
        return (
            f"memory-gate: {noun} {ids} read this turn {'is' if noun == 'Fact' else 'are'} not "
            f"answered for. Call {write} with each in kept if it still holds, or updated or "
            "deleted, then answer the owner."
        )
    return (
        f"memory-gate: this turn searched memory but has not written. Call {write} with what the "
        "turn changed (ops [] and kept [] if nothing), then answer the owner."
    )


# -- events -----------------------------------------------------------------------------------


def user_prompt_submit(payload: dict, prefix: str) -> dict | None:
    session, prompt_id = _text(payload, "session_id"), _text(payload, "prompt_id")
    prompt = payload.get("prompt") if isinstance(payload.get("prompt"), str) else None
    from gate import credentials

    prompt = (
        credentials.redact(prompt) if prompt is not None else None
    )  # here, not under the write lock (open_turn checks again)
    conn = _open(payload, create=True)
    with store.writing(conn):
        ledger.open_turn(conn, session, prompt_id, prompt)
    if hookio.automated(prompt):
        return None
    context = CONTRACT.format(search=f"{prefix}memory_search", write=f"{prefix}memory_write")
    return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": context}}


def pre_tool_use(payload: dict, prefix: str) -> dict | None:
    session, tool_use_id = _text(payload, "session_id"), _text(payload, "tool_use_id")
    tool = _text(payload, "tool_name")
    if not tool.endswith(("__memory_search", "__memory_write")):
        return None
    prompt_id = payload.get("prompt_id") if isinstance(payload.get("prompt_id"), str) else None
    # Inside a subagent: its results land in the subagent's context, not the main agent's.
    agent = payload.get("agent_id") if isinstance(payload.get("agent_id"), str) and payload.get("agent_id") else None
    conn = _open(payload, create=True)
    with store.writing(conn):
        ledger.record_tool_call(conn, tool_use_id, session, prompt_id, tool, agent)
    # Plugins cannot ship permission rules: memory's own tools need no prompt.
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "memory-gate's own memory tool",
        }
    }


def session_start(payload: dict, prefix: str) -> None:
    if payload.get("source") not in ("compact", "clear"):
        return None
    session = _text(payload, "session_id")
    conn = _open(payload, create=False)
    with store.writing(conn):
        ledger.forget_shown(conn, session)
    return None


class Seen:
    """What the mod saw the turn do with memory, from the memory tools' own calls and answers in
    Claude Code's process (mods/memory-gate/hooks/register.js): where the mod runs, the gate rules
    on this and not on the ledger's counts, which a shell command of the session can rewrite."""

    __slots__ = ("searched", "wrote", "unanswered", "holds", "released")

    def __init__(self, searched: bool, wrote: bool, unanswered: list[int], holds: int, released: bool):
        self.searched, self.wrote, self.unanswered = searched, wrote, unanswered
        self.holds, self.released = holds, released


def _seen(payload: dict) -> Seen | None:
    """The mod's record from a Hold or Status input, or None when there is none; a record that is
    not the mod's shape is an error (the hook fails open, loudly)."""
    record = payload.get("seen")
    if record is None:
        return None
    if not isinstance(record, dict):
        raise TypeError("hook input's seen is not an object")
    flags = [record.get(key) for key in ("searched", "wrote", "released")]
    ids, holds = record.get("unanswered"), record.get("holds")
    if (
        any(type(flag) is not bool for flag in flags)
        or not isinstance(ids, list)
        or any(type(fact) is not int for fact in ids)
        or type(holds) is not int
    ):
        raise ValueError("hook input's seen is not the mod's record")
    return Seen(bool(flags[0]), bool(flags[1]), sorted(set(ids)), holds, bool(flags[2]))


def _rule(
    payload: dict,
    prefix: str,
    held_enough,
    budget,
    seen: Seen | None = None,
    sighting: "witness.Sighting | None" = None,
    opened: "tuple[apsw.Connection, bool] | None" = None,
    count: bool = True,
) -> tuple[str, str | None]:
    """The gate's ruling on a final answer, for the Stop hook and the mod's Hold alike: ("pass",
    None) with nothing to judge, ("met", None), ("release", why) or ("hold", what is missing),
    settled in the ledger in the same transaction. `held_enough(state)` says the turn was held as
    often as it may be; `budget()` gives (the turn's model requests so far, --max-turns), either
    None when unknown. With the mod's record (`seen`), what the turn searched, wrote and owes, how
    often it was held and whether it was let out are the record's; with the memory servers'
    (`sighting`, asked by the Stop hook), what it searched, wrote and owes. Either way the
    ledger's counts decide nothing. With `count` False a "hold" is ruled but not counted (the mod
    asks so before its gate tool is registered: refused, no hold happened)."""
    session, prompt_id = _text(payload, "session_id"), _text(payload, "prompt_id")
    if opened is None:
        path, here = _database(payload, create=False)
        opened = store.connect(path, busy_ms=BUSY_MS), here
    conn, here = opened
    with store.writing(conn):
        record = seen if seen is not None else sighting
        if record is not None:
            # The record rules: of the ledger only the turn's row is read, not its counts nor
            # the facts it owes (a query as long as the rest of the ruling).
            turn = ledger.prompt_turn(conn, session, prompt_id)
            if seen is not None and seen.released:
                return "pass", None
            if sighting is not None and turn is not None and hookio.automated(turn.prompt):
                return "pass", None
            # A turn row gone (the UserPromptSubmit hook failed, loudly, or a command deleted it)
            # is opened again: the record saw the turn, and it still rules.
            if turn is None:
                turn = ledger.open_turn(conn, session, prompt_id, None)
            state = ledger.Gate(turn, record.searched, record.wrote, record.unanswered)
        else:
            found = ledger.gate(conn, session, prompt_id, facts_here=here)
            if found is None or found.turn.outcome == "released" or hookio.automated(found.turn.prompt):
                return "pass", None
            state = found
        if state.met:
            ledger.settle(conn, state.turn.id, "met")
            return "met", None
        why = ledger.excused(conn, state.turn.id)
        if why:  # memory could not be reached: no write could free the answer
            ledger.settle(conn, state.turn.id, "released")
            return "release", f"{RELEASED[:-1]}: {why}."
        if held_enough(state):
            ledger.settle(conn, state.turn.id, "released")
            return "release", RELEASED
        step, limit = budget()
        if not _affordable(state, step, limit):
            ledger.settle(conn, state.turn.id, "released")
            return "release", released_by_limit(limit)
        if count:
            ledger.hold(conn, state.turn.id)
        return "hold", missing(state, prefix)


def stop_limit() -> int:
    """Blocks the Stop hook may make in one turn: MAX_HOLDS, or fewer when the owner set Claude
    Code's cap below it (a block past the cap would end the turn with an empty answer, unsaid)."""
    cap = config.stop_block_cap()
    return MAX_HOLDS if cap is None else min(MAX_HOLDS, cap)


def stop(payload: dict, prefix: str) -> dict | None:
    """The last resort where the mod does not run: block while the turn has been held fewer than
    stop_limit() times, counted by the gate itself (never `stop_hook_active`), then let it out."""

    def budget() -> tuple[int | None, int | None]:
        from gate.claude import maxturns

        limit = maxturns.limit()
        if limit is None:
            return None, None  # reading the transcript is not worth it: any hold is affordable
        transcript, last = payload.get("transcript_path"), payload.get("last_assistant_message")
        if not (isinstance(transcript, str) and transcript):
            return 1, limit
        prompt_id = _text(payload, "prompt_id")
        return maxturns.steps_in_transcript(transcript, prompt_id, last if isinstance(last, str) else None), limit

    # What the memory servers saw the turn do decides, not the ledger's counts (gate.memory.witness).
    from gate.memory import witness

    session, prompt_id = _text(payload, "session_id"), _text(payload, "prompt_id")
    path, here = _database(payload, create=False)
    asking = witness.Asking(path, session, prompt_id)  # the servers answer while the database opens
    conn = store.connect(path, busy_ms=BUSY_MS)
    sighting = asking.sighting()
    limit = stop_limit()
    action, reason = _rule(
        payload, prefix, lambda state: state.turn.holds >= limit, budget, sighting=sighting, opened=(conn, here)
    )
    said = [] if sighting is not None or action == "pass" else [LEDGER_ONLY]
    if action in ("pass", "met"):
        return {"systemMessage": said[0]} if said else None
    if action == "release":
        return {"systemMessage": "\n".join([reason or RELEASED, *said])}
    return {"decision": "block", "reason": reason, **({"systemMessage": said[0]} if said else {})}


def hold(payload: dict, prefix: str) -> dict:
    """The mod's question before a final answer goes out: pass, hold (with what is missing),
    or release, once the turn has been held MAX_HOLDS times or when --max-turns leaves no room
    for a hold (`step` in the input: the turn's model requests so far, this one included).
    `seen` in the input is the mod's own record of the turn (Seen): the ruling rests on it.
    `dry` true in the input: a hold is ruled but not counted (the mod's gate tool is not yet
    registered; the mod asks again, counting, once it is)."""

    def budget() -> tuple[int | None, int | None]:
        # The mod counts the turn's model requests, this one included.
        step = payload.get("step") if type(payload.get("step")) is int else None
        if step is None:
            return None, None
        from gate.claude import maxturns

        return step, maxturns.limit()

    seen = _seen(payload)

    def held_enough(state) -> bool:
        # The mod's own record counts the holds where it runs; the ledger where none does.
        return (state.turn.holds if seen is None else seen.holds) >= MAX_HOLDS

    action, reason = _rule(payload, prefix, held_enough, budget, seen, count=payload.get("dry") is not True)
    action = "pass" if action == "met" else action
    return {"action": action} if reason is None else {"action": action, "reason": reason}


def status(payload: dict, prefix: str) -> dict:
    """What the turn still owes, without holding anything (the mod's tool, called by the model)."""
    session, prompt_id = _text(payload, "session_id"), _text(payload, "prompt_id")
    seen = _seen(payload)
    path, here = _database(payload, create=False)
    conn = store.connect(path, busy_ms=BUSY_MS)
    state = ledger.gate(conn, session, prompt_id, facts_here=here)
    if state is not None and seen is not None:
        state = ledger.Gate(state.turn, seen.searched, seen.wrote, seen.unanswered)
    if state is None or state.met:
        return {"met": True, "reason": "memory-gate: nothing owed; this turn's memory is up to date."}
    return {"met": False, "reason": missing(state, prefix)}


EVENTS = {
    "UserPromptSubmit": user_prompt_submit,
    "PreToolUse": pre_tool_use,
    "SessionStart": session_start,
    "Stop": stop,
    "Hold": hold,
    "Status": status,
}


# -- entry point ------------------------------------------------------------------------------


USAGE = """usage: memory-gate hook EVENT [--tools PREFIX] < input.json

Claude Code runs this: the plugin's hooks and mod, or the settings hooks `memory-gate install`
wrote (hooks/hooks.json). EVENT is one of UserPromptSubmit, PreToolUse, SessionStart, Stop (the
settings hooks), Hold or Status (the mod's questions); the hook's JSON comes on stdin, and the
answer, if any, goes to stdout as JSON. PREFIX names the memory tools in messages.

Example:
  echo '{"session_id": "s", "prompt_id": "p", "prompt": "hi"}' | memory-gate hook UserPromptSubmit"""


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if hookio.asks_for_help(args, USAGE):
        return 0
    prefix = ""
    if "--tools" in args:
        at = args.index("--tools")
        prefix = args[at + 1] if at + 1 < len(args) else ""
        del args[at : at + 2]
    event = args[0] if args else ""
    handler = EVENTS.get(event)
    run = (lambda payload: handler(payload, prefix)) if handler else None
    return hookio.serve(event, run, known=EVENTS, name="memory-gate", off="memory is off for this event")


if __name__ == "__main__":
    raise SystemExit(main())
