"""The body of each page, as HTML built from the plain values of gate.view.reading."""

from __future__ import annotations

from gate.engine.facts import Fact
from gate.memory import history
from gate.memory.changeset import HAND_SESSIONS
from gate.memory.checking import KIND_MEANING, KINDS, MAX_TEXT
from gate.view import charts
from gate.view.access import Guard
from gate.view.markup import e, hidden, plural, shown, when
from gate.view.reading import TIER_MEANING, Filters, Found, Page, Story, TurnView


def _kind(kind: str) -> str:
    return f'<span class="kind {e(kind)}" title="{e(KIND_MEANING.get(kind, ""))}">{e(kind)}</span>'


def _fact_link(guard: Guard, fact_id: int, label: str | None = None) -> str:
    return f'<a href="{e(guard.url(f"/facts/{fact_id}"))}">{e(label or f"#{fact_id}")}</a>'


def _notice(message: str | None, error: str | None) -> str:
    out = ""
    if message:
        out += f'<p class="notice" role="status">{e(message)}</p>'
    if error:
        out += f'<p class="notice error" role="alert">{e(error)}</p>'
    return out


def _fact_rows(guard: Guard, facts: list[Fact], why: dict[int, str] | None = None) -> str:
    rows = []
    for fact in facts:
        reason = f'<div class="why">{e(why[fact.id])}</div>' if why and fact.id in why else ""
        rows.append(
            f'<tr data-fact="{fact.id}"><td class="nowrap">{_fact_link(guard, fact.id)}</td>'
            f"<td>{_kind(fact.kind)}</td><td>{shown(fact.topic)}</td>"
            f'<td class="text">{shown(fact.text)}{reason}</td>'
            f'<td class="nowrap">{e(fact.date)}</td><td class="nowrap">{when(fact.updated)}</td>'
            f'<td class="nowrap">{when(fact.confirmed)}</td></tr>'
        )
    head = "<tr><th>id</th><th>kind</th><th>topic</th><th>text</th><th>date</th><th>changed</th><th>last confirmed</th></tr>"
    return f'<table class="facts"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


# -- facts ------------------------------------------------------------------------------------


def facts(guard: Guard, page: Page, filters: Filters) -> str:
    kinds = "".join(
        f'<option value="{kind}"{" selected" if kind == filters.kind else ""}>{kind}</option>' for kind in KINDS
    )
    form = f"""<form class="filters" method="get" action="/">
<input type="hidden" name="t" value="{e(guard.token)}">
<label>topic words start with<input name="topic" value="{e(filters.topic)}" placeholder="deploy"></label>
<label>kind<select name="kind"><option value="">any</option>{kinds}</select></label>
<label>changed since<input type="date" name="since" value="{e(filters.since)}"></label>
<label>not confirmed in<span><input type="number" min="1" name="stale" value="{e(filters.stale or "")}" style="width:5em"> days</span></label>
<button type="submit" class="primary">Filter</button>
{f'<a href="{e(guard.url("/"))}">clear</a>' if filters.active() else ""}
</form>"""
    noun = "fact" if page.total == 1 else "facts"
    summary = f'<p class="figures" id="count">{page.total} {noun}{" that match" if filters.active() else ""}, the most recently changed first.</p>'
    if not page.facts:
        listing = (
            '<p class="empty">No facts' + (" match these filters." if filters.active() else " in memory yet.") + "</p>"
        )
    else:
        listing = _fact_rows(guard, page.facts)
    return f"<h1>Facts</h1>{form}{summary}{listing}{_pager(guard, page, filters)}"


def _pager(guard: Guard, page: Page, filters: Filters) -> str:
    if page.pages <= 1:
        return ""
    args = {"topic": filters.topic, "kind": filters.kind, "since": filters.since, "stale": filters.stale or None}
    newer = (
        f'<a href="{e(guard.url("/", **args, page=page.number - 1))}" rel="prev">← newer</a>' if page.number > 1 else ""
    )
    older = (
        f'<a href="{e(guard.url("/", **args, page=page.number + 1))}" rel="next">older →</a>'
        if page.number < page.pages
        else ""
    )
    return f'<nav class="pager">{newer}<span>page {page.number} of {page.pages}</span>{older}</nav>'


# -- search -----------------------------------------------------------------------------------


def search(guard: Guard, found: Found | None, meaning: str = "words only") -> str:
    """The search page; `meaning` says where search's meaning comes from, or why there is none."""
    terms = found.terms if found else ""
    form = f"""<form class="search" method="get" action="/search">
<input type="hidden" name="t" value="{e(guard.token)}">
<label>search memory as memory_search does (nothing is recorded as read)
<input name="q" value="{e(terms)}" size="50" autofocus placeholder="deploy staging"></label>
<button type="submit" class="primary">Search</button></form>"""
    if found is None:
        return f"<h1>Search</h1>{form}"
    # A note may quote the endpoint's own error message, which may quote whatever it was sent.
    notes = "".join(f'<p class="notice">{shown(note)}</p>' for note in found.notes)
    how = (
        f"words and meaning: {meaning}"
        if found.by_meaning
        else (
            meaning
            if meaning.startswith("words only")
            else f"words only ({meaning} did not answer: see the note above)"
        )
    )
    if not found.hits:
        return f'<h1>Search</h1>{form}{notes}<p class="empty">Nothing in memory for “{e(terms)}”: memory_search would return an empty list.</p>'
    why = {}
    for hit in found.hits:
        reasons = []
        if hit.words:
            reasons.append(f"words: {TIER_MEANING[hit.words]}, {hit.share:.0%} of the query's weight")
        if hit.meaning:
            reasons.append("meaning: near the query in meaning; words alone did not bring it")
        why[hit.fact.id] = "why: " + "; ".join(reasons)
    summary = f'<p class="figures">{plural(len(found.hits), "fact")}, in the order memory_search returns them; ranked by {how}.</p>'
    return f"<h1>Search</h1>{form}{notes}{summary}{_fact_rows(guard, [hit.fact for hit in found.hits], why)}"


# -- one fact ---------------------------------------------------------------------------------


def fact(
    guard: Guard,
    fact_id: int,
    story: Story,
    *,
    editable: bool,
    message: str | None = None,
    error: str | None = None,
    draft: dict | None = None,
) -> str:
    now = story.fact
    if now is not None:
        head = (
            f"<h1>Fact {fact_id} {_kind(now.kind)} {shown(now.topic)}</h1>"
            f'<p class="text" style="white-space:pre-wrap">{shown(now.text)}</p>'
            f'<p class="figures">date {e(now.date)} · revision {now.rev} · created {when(now.created)} · '
            f"changed {when(now.updated)} · last confirmed {when(now.confirmed)}</p>"
        )
    elif story.changes:
        head = f'<h1>Fact {fact_id} <span class="tag deleted">deleted</span></h1><p class="figures">Memory no longer holds it; its history is below.</p>'
    else:
        head = f'<h1>Fact {fact_id}</h1><p class="empty">Memory holds no fact {fact_id}, and {e(story.where)} records no change to it.</p>'
    body = head + _notice(message, error)
    if editable and now is not None:
        body += _edit_form(guard, now, draft)
    elif now is not None:
        body += '<p class="figures">Read-only: run <code>memory-gate view --edit</code> to edit, delete or undo.</p>'
    if story.changes and not story.in_step:
        body += (
            '<p class="notice error">Memory does not hold this fact as its last logged change left it: '
            f"{e(story.where)} lost changes (<code>memory-gate doctor</code> checks it).</p>"
        )
    body += f"<h2>History</h2>{_history(guard, fact_id, story, editable)}"
    return body


def _edit_form(guard: Guard, now: Fact, draft: dict | None) -> str:
    values = draft or {"topic": now.topic, "kind": now.kind, "text": now.text, "date": now.date}
    kinds = "".join(
        f'<option value="{kind}"{" selected" if kind == values.get("kind") else ""}>{kind}</option>' for kind in KINDS
    )
    edit_url = e(guard.url(f"/facts/{now.id}/edit"))
    delete_url = e(guard.url(f"/facts/{now.id}/delete"))
    return f"""<form class="edit" method="post" action="{edit_url}">{hidden(guard)}
<input type="hidden" name="rev" value="{now.rev}">
<label>topic<input name="topic" value="{shown(values.get("topic"))}" maxlength="100" required></label>
<label>kind<select name="kind">{kinds}</select></label>
<label>date<input type="date" name="date" value="{e(values.get("date"))}" required></label>
<label class="text">text (at most {MAX_TEXT} characters)<textarea name="text" required>{shown(values.get("text"))}</textarea></label>
<div class="actions"><button type="submit" class="primary">Save</button>
<button type="submit" class="danger" formaction="{delete_url}" data-confirm="Delete fact {now.id}? Undo brings it back.">Delete</button></div>
</form>"""


def _history(guard: Guard, fact_id: int, story: Story, editable: bool) -> str:
    if not story.changes:
        return f'<p class="empty">{e(story.where)} records no committed change to this fact.</p>'
    out = []
    latest = story.latest
    for change in reversed(story.changes):  # newest first, as the list is
        out.append(_version(guard, change, editable and change is latest and story.in_step))
    return "".join(out)


def _version(guard: Guard, change: history.Change, undoable: bool) -> str:
    entry = change.entry
    before, after = change.before or {}, change.after or {}
    what = change.op
    if change.op == "update":
        what += " of " + ", ".join(change.changed())
    if change.undid():
        what += f" (undoes {change.undid()})"
    meta = (
        f'<div class="meta"><strong class="mono">{e(change.name)}</strong> · {e(what)} · {when(entry.get("time"))}'
        f' · session <span class="mono">{e(entry.get("session"))}</span> · turn <span class="mono">{e(entry.get("turn"))}</span>'
        + (f' · member <span class="mono member">{e(entry["member"])}</span>' if entry.get("member") else "")
        + "</div>"
    )
    # A hand session's words are the command or the page's action, not an owner's prompt.
    label = "why" if entry.get("session") in HAND_SESSIONS else "owner’s words"
    words = f'<div class="why">{label}: “{shown(entry.get("words"))}”</div>' if entry.get("words") else ""
    if change.op == "update":
        fields = "".join(
            f"<div>{e(key)}: {shown(before.get(key))} → {shown(after.get(key))}</div>"
            for key in ("topic", "kind", "date")
            if before.get(key) != after.get(key)
        )
        text = (
            f'<div class="diff"><div class="before" data-label="before">{shown(before.get("text"))}</div>'
            f'<div class="after" data-label="after">{shown(after.get("text"))}</div></div>'
        )
        detail = fields + text
    elif change.op == "delete":
        detail = f'<div class="diff"><div class="before" data-label="deleted">{shown(before.get("text"))}</div><div></div></div>'
    else:
        detail = (
            f'<div class="why">{e(after.get("kind"))} · {shown(after.get("topic"))} · {e(after.get("date"))}</div>'
            f'<div class="diff"><div></div><div class="after" data-label="inserted">{shown(after.get("text"))}</div></div>'
        )
    undo = ""
    if undoable:
        url = e(guard.url(f"/facts/{entry['id']}/undo"))
        undo = (
            f'<form class="inline undo" method="post" action="{url}">{hidden(guard)}'
            f'<input type="hidden" name="entry" value="{e(change.name)}">'
            f'<button type="submit">Undo this change</button></form>'
        )
    return f'<div class="version {e(change.op)}">{meta}{words}{detail}{undo}</div>'


# -- turns ------------------------------------------------------------------------------------


# On a team's memory the facts are the team's and the turns each member's own (their local ledger).
YOUR_TURNS = (
    '<p class="figures" id="own-turns">On the team’s memory, your own turns only: each member’s '
    "turns stay in their local ledger; the facts are the team’s.</p>"
)


def turns(
    guard: Guard,
    found: list[TurnView],
    older: int | None,
    newer: int | None = None,
    *,
    shared: bool = False,
    first_page: bool = True,
) -> str:
    mine = YOUR_TURNS if shared else ""
    if not found:
        return f'<h1>Turns</h1>{mine}<p class="empty">No turn has reached memory yet.</p>'
    out = [
        f'<h1>Turns</h1>{mine}<p class="figures">What the gate did for each turn, the newest first: the owner’s words, '
        "what the agent searched, every fact it read and how it answered for it, the holds, and whether "
        "the answer complied or was released.</p>"
    ]
    for turn in found:
        verdict_class = "complied" if turn.outcome == "met" else "released" if turn.outcome == "released" else ""
        head = (
            f'<div class="head"><span class="mono">turn {turn.id}</span><span>{when(turn.started)}</span>'
            f'<span>session <span class="mono">{e(turn.session)}</span></span>'
            f'<span class="tag {verdict_class}">{e(turn.verdict)}</span>'
            f"<span>held {turn.holds}×</span></div>"
        )
        words = (
            f'<div class="words">“{shown(turn.words)}”</div>'
            if turn.words
            else '<div class="words empty">(no owner’s words: not opened by a hook)</div>'
        )
        searched = "".join(
            f"<li>searched “{shown(terms)}” → {plural(count, 'fact')}</li>"
            if terms is not None
            else f"<li>searched (terms not recorded) → {plural(count, 'fact')}</li>"
            for terms, count in turn.searches
        )
        if turn.searched and not turn.searches:
            searched = f"<li>searched {turn.searched}×</li>"
        reads = "".join(
            f"<li>read {_fact_link(guard, read.fact)} {shown(read.topic) if read.topic else '<em>(no longer in memory)</em>'}"
            f' <span class="tag {e(read.answer.replace(" ", ""))}">{e(read.answer)}</span></li>'
            for read in turn.reads
        )
        changed = "".join(
            f"<li>{e(done.get('op'))} {_fact_link(guard, done['id'])}</li>"
            for done in turn.changes
            if done.get("op") == "insert"
        )
        wrote = f"<li>wrote {turn.wrote}×</li>" if turn.wrote else "<li>did not write</li>"
        out.append(
            f'<div class="turn" data-turn="{turn.id}">{head}{words}<ul>{searched or "<li>did not search</li>"}{reads}{changed}{wrote}</ul></div>'
        )
    back = ""
    if not first_page:
        back = (
            f'<a href="{e(guard.url("/turns", before=newer))}" rel="prev">← newer turns</a>'
            if newer
            else f'<a href="{e(guard.url("/turns"))}" rel="prev">← newer turns</a>'
        )
    on = f'<a href="{e(guard.url("/turns", before=older))}" rel="next">older turns →</a>' if older else ""
    if back or on:
        out.append(f'<nav class="pager">{back}{on}</nav>')
    return "".join(out)


# -- stats ------------------------------------------------------------------------------------


def stats(report: dict, days: list, cost: list[tuple[str, float]], *, shared: bool = False) -> str:
    facts, turns_, searches = report["facts"], report["turns"], report["searches"]
    share = f" ({turns_['complied_share']}%)" if turns_["complied_share"] is not None else ""
    outcome_chart = charts.stacked_days(
        [day.day for day in days],
        [
            ("complied at once", "once", [day.at_once for day in days]),
            ("complied after a hold", "held", [day.after_hold for day in days]),
            ("released unmet", "released", [day.released for day in days]),
        ],
        title="Gated turns per day",
    )
    kinds = charts.bars([(kind, facts[kind]) for kind in KINDS], title="Facts by kind")
    cost_chart = charts.bars(
        [(day, chars) for day, chars in cost[-10:]],
        title="Characters a search puts into the context, per day",
        unit=" ch",
    )
    cost_line = (
        f"A search costs the context {searches['chars_per_search']:g} characters on average, about "
        f"{searches['tokens_per_search']} tokens ({plural(searches['recorded'], 'search')} measured)."
        if searches["recorded"]
        else "No search measured yet."
    )
    return f"""<h1>Stats</h1>{YOUR_TURNS if shared else ""}<div class="grid2">
<section><h2>Turns: complied or released</h2>{outcome_chart}
<p class="figures">{plural(turns_["gated"], "turn")} gated; complied {turns_["complied"]}{share}: {turns_["complied_at_once"]} at once,
{turns_["complied_after_hold"]} after a hold; released unmet {turns_["released_unmet"]}.</p></section>
<section><h2>Facts by kind</h2>{kinds}<p class="figures">{facts["total"]} facts{" in the team’s memory" if shared else ""}.</p></section>
<section><h2>What a search costs the context</h2>{cost_chart}<p class="figures">{cost_line}</p></section>
</div>"""
