"""What the agent reads: search results and write answers. Its user interface, golden-tested.

Each answer comes in two forms. The structured form (a JSON object with an output schema) is
for programs, and it is also what Claude Code shows the model: when a tool result carries
structured content, Claude Code passes the model that JSON and drops the text. So the JSON is
written to be read by a model too: compact, fields in reading order, and a `next` field with the
contract. The text form is for clients that show the text, and for people.

Fact text is data, never structure. In JSON, quoting keeps it in its field. Every line the product writes itself starts in column 0;
every line of a fact, a topic aside, and of the owner's words is indented by four spaces, and
topics are single-line by rule. Whatever a fact says (a fake result header, a fake contract line,
a fake owner's-words block), it cannot produce a line that reads as the product's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gate.engine.facts import Fact

INDENT = "    "


@dataclass(frozen=True)
class Result:
    """One search result as the agent gets it: in full, or as its id when already shown."""

    fact: Fact
    full: bool


def _indented(text: str) -> list[str]:
    return [INDENT + line if line.strip() else "" for line in text.splitlines() or [""]]


def _terms(terms: str) -> str:
    one_line = " ".join(terms.split())
    return one_line if len(one_line) <= 80 else one_line[:77] + "..."


CONTRACT = (
    "Answer for every id in must_answer in your next memory_write: put it in kept if it still "
    "holds, or update or delete it (above all where it contradicts what the owner wrote)."
)
NOTHING = (
    "Nothing to answer for. Before you answer, call memory_write with what this turn changed "
    "(ops [] and kept [] if nothing)."
)
# When memory could not be reached (a team's database down or cut off): no write could be kept,
# so `next` must not ask for one (the note says why).
UNREACHED = "Memory could not be searched this turn: answer the owner without it, and do not call memory_write."


# The owner's words are repeated so that a fact they contradict gets updated, not kept; the whole
# message is already in the model's context as the prompt, so the result repeats its head only.
# Bounded, and after the contract: Claude Code saves a long tool result to a file and shows the
# model a 2 KB preview, which must still say what to do.
OWNER_WORDS_MAX = 1000


def owner_words_shown(words: str) -> str:
    """The owner's words as a result repeats them: whole when short, else their head and how
    much was left out."""
    if len(words) <= OWNER_WORDS_MAX:
        return words
    head = words[:OWNER_WORDS_MAX]
    cut = head.rfind(" ", OWNER_WORDS_MAX // 2)
    head = head[:cut] if cut > 0 else head
    return f"{head} [... {len(words) - len(head)} more characters: the owner's whole message is the prompt]"


def search_data(
    results: Sequence[Result], owner_words: str | None, notes: Sequence[str] = (), next_step: str | None = None
) -> dict:
    """The structured search answer, the contract first (`next_step` instead, where given). Facts
    shown before carry only their id."""
    data: dict = {
        "must_answer": [result.fact.id for result in results],
        "next": next_step or (CONTRACT if results else NOTHING),
    }
    if notes:
        data["notes"] = list(notes)
    facts = []
    for result in results:
        fact = result.fact
        if result.full:
            facts.append({"id": fact.id, "kind": fact.kind, "topic": fact.topic, "date": fact.date, "text": fact.text})
        else:
            facts.append({"id": fact.id, "shown_before": True})
    data["facts"] = facts
    if owner_words:
        data["owner_words"] = owner_words_shown(owner_words)
    return data


CLEAR = "Nothing owed for this turn: answer the owner."
OWES_SEARCH = (
    "This turn has not searched memory yet: call memory_search with keywords of the request, "
    "and answer for what it returns in another memory_write, before you answer."
)


def write_data(
    done: Sequence[dict],
    kept: Sequence[int],
    notes: Sequence[str],
    replayed: bool,
    owes_search: bool = False,
    gone: Sequence[int] = (),
) -> dict:
    """The structured write answer. `next` says whether the turn still owes memory a search: the
    write itself has answered for everything read (it is refused otherwise), so that is all that
    can be left. The mod reads it too, to let a clear turn's answer out without asking again, and
    `gone`, the facts read this turn that another session deleted since, to owe them no more."""
    data: dict = {
        "done": [{"op": item["op"], "id": item["id"]} for item in done],
        "new_ids": [item["id"] for item in done if item["op"] == "insert"],
        "kept": list(kept),
        "replayed": replayed,
    }
    if notes:
        data["notes"] = list(notes)
    if gone:
        data["gone"] = list(gone)
    data["next"] = OWES_SEARCH if owes_search else CLEAR
    return data


def search_text(
    terms: str,
    results: Sequence[Result],
    owner_words: str | None,
    notes: Sequence[str] = (),
    next_step: str | None = None,
) -> str:
    """The text answer, the contract first (as in the structured form)."""
    lines: list[str] = []
    if results:
        count = f"{len(results)} fact" + ("s" if len(results) != 1 else "")
        lines.append(f'Memory for "{_terms(terms)}": {count}, best first.')
        ids = ", ".join(str(result.fact.id) for result in results)
        lines.append(
            f"Answer for every id below in your next memory_write ({ids}): put it in kept if it "
            "still holds, or update or delete it (above all where it contradicts the owner)."
        )
    else:
        lines.append(f'Memory holds nothing for "{_terms(terms)}".')
        lines.append(next_step or NOTHING)
    lines += [f"({note})" for note in notes]
    for result in results:
        fact = result.fact
        lines.append("")
        if result.full:
            lines.append(f"[{fact.id}] {fact.kind} | {fact.topic} | {fact.date}")
            lines += _indented(fact.text)
        else:
            lines.append(f"[{fact.id}] shown earlier in this session, unchanged")
    if owner_words:
        lines += ["", "The owner wrote this turn:"]
        lines += _indented(owner_words_shown(owner_words))
    return "\n".join(lines)


def write_text(
    done: Sequence[dict],
    kept: Sequence[int],
    notes: Sequence[str],
    replayed: bool,
    owes_search: bool = False,
    gone: Sequence[int] = (),
) -> str:
    parts = []
    for item in done:
        if item["op"] == "insert":
            parts.append(f"inserted [{item['id']}] ({item['topic']})")
        elif item["op"] == "update":
            parts.append(f"updated [{item['id']}]")
        elif item["op"] == "unchanged":
            parts.append(f"confirmed [{item['id']}] (the update changed nothing)")
        else:
            parts.append(f"deleted [{item['id']}]")
    if kept:
        parts.append("kept " + ", ".join(f"[{fact}]" for fact in kept))
    lines = []
    if replayed:
        lines.append("This write was already applied (the same call arrived again); nothing changed now.")
    lines.append("memory_write accepted: " + ("; ".join(parts) if parts else "nothing to change") + ".")
    lines += [f"Note: {note}" for note in notes]
    if gone:
        listed = ", ".join(f"[{fact}]" for fact in gone)
        lines.append(f"Read this turn and deleted since by another session, nothing to answer for: {listed}.")
    lines.append(OWES_SEARCH if owes_search else CLEAR)
    return "\n".join(lines)
