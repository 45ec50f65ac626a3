"""The page's frame: navigation, styles, the script for live updates, and the escaping every
page uses. Text from memory is always shown through `shown`, which escapes it and masks any
credential in it (gate.view.redact)."""

from __future__ import annotations

from html import escape

from gate import clock
from gate.view.access import Guard
from gate.view.redact import redact

NAV = (("/", "Facts"), ("/search", "Search"), ("/turns", "Turns"), ("/stats", "Stats"))


def e(value: object) -> str:
    return escape("" if value is None else str(value))


def shown(text: str | None) -> str:
    """Memory's text for the page: credentials masked, then escaped."""
    return escape(redact(text or ""))


def plural(count: int, noun: str) -> str:
    """`1 fact`, `2 facts`, `11 searches`."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {noun}{'es' if noun.endswith(('s', 'sh', 'ch', 'x', 'z')) else 's'}"


def when(stamp: str | None) -> str:
    return e(clock.shown(stamp))


def hidden(guard: Guard) -> str:
    """The fields every change form carries: the CSRF token."""
    return f'<input type="hidden" name="csrf" value="{e(guard.csrf)}">'


def frame(guard: Guard, *, title: str, body: str, here: str, editable: bool, nonce: str, database: str) -> str:
    links = "".join(
        f'<a href="{e(guard.url(path))}"{" aria-current=page" if path == here else ""}>{name}</a>' for path, name in NAV
    )
    mode = (
        '<span class="mode edit">editing on</span>'
        if editable
        else '<span class="mode" title="run `memory-gate view --edit` to edit, delete and undo">read-only: '
        "<code>memory-gate view --edit</code> to edit</span>"
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>{e(title)} · memory-gate</title>
<style>{STYLE}</style></head>
<body data-events="{e(guard.url("/events"))}">
<header><strong>memory-gate</strong> <nav>{links}</nav> {mode}
<span id="live" class="live">connecting…</span>
<div class="db" title="the database this page shows">{e(database)}</div></header>
<main>{body}</main>
<script nonce="{e(nonce)}">{SCRIPT}</script>
</body></html>"""


STYLE = """
:root { --ink: #1f2328; --soft: #59636e; --line: #d1d9e0; --back: #f6f8fa; --accent: #0969da;
  --state: #0969da; --event: #8250df; --decision: #1a7f37; --trap: #cf222e; --warn: #9a6700; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); }
header { display: flex; flex-wrap: wrap; gap: .4em 1.2em; align-items: baseline; padding: .7em 1.2em;
  border-bottom: 1px solid var(--line); background: var(--back); }
header nav a { margin-right: .9em; color: var(--accent); text-decoration: none; }
header nav a[aria-current] { color: var(--ink); font-weight: 600; border-bottom: 2px solid var(--accent); }
header .db { flex-basis: 100%; color: var(--soft); font-size: 12px; }
.mode { color: var(--soft); font-size: 12px; } .mode.edit { color: var(--decision); font-weight: 600; }
.live { font-size: 12px; color: var(--soft); margin-left: auto; }
main { padding: 1em 1.2em 3em; max-width: 1100px; }
h1 { font-size: 20px; margin: .2em 0 .6em; } h2 { font-size: 16px; margin: 1.4em 0 .5em; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12.5px; }
form.filters, form.search { display: flex; flex-wrap: wrap; gap: .6em; align-items: end; margin-bottom: 1em; }
label { display: flex; flex-direction: column; font-size: 12px; color: var(--soft); gap: .2em; }
input, select, textarea, button { font: inherit; padding: .3em .5em; border: 1px solid var(--line); border-radius: 6px; }
button { background: var(--back); cursor: pointer; } button.primary { background: var(--accent); color: #fff; border-color: var(--accent); }
button.danger { color: var(--trap); }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: .45em .6em; border-bottom: 1px solid var(--line); }
th { font-size: 12px; color: var(--soft); font-weight: 600; }
td.text { white-space: pre-wrap; max-width: 620px; }
td.nowrap, .nowrap { white-space: nowrap; }
.kind { display: inline-block; padding: 0 .45em; border-radius: 10px; font-size: 12px; color: #fff; }
.kind.state { background: var(--state); } .kind.event { background: var(--event); }
.kind.decision { background: var(--decision); } .kind.trap { background: var(--trap); }
.why { font-size: 12px; color: var(--soft); }
.tag { display: inline-block; font-size: 11.5px; padding: 0 .4em; border-radius: 4px; background: var(--back); border: 1px solid var(--line); }
.tag.kept { color: var(--decision); } .tag.updated { color: var(--accent); } .tag.deleted { color: var(--trap); }
.tag.notanswered { color: var(--warn); } .tag.released { color: var(--trap); } .tag.complied { color: var(--decision); }
.pager { margin: 1em 0; display: flex; gap: 1em; align-items: center; color: var(--soft); }
.pager a { color: var(--accent); }
.notice { padding: .6em .8em; border-radius: 6px; margin: .6em 0 1em; background: #ddf4ff; border: 1px solid #54aeff66; }
.notice.error { background: #ffebe9; border-color: #ff818266; }
.version { border-left: 3px solid var(--line); padding: .2em 0 .2em .9em; margin: .9em 0; }
.version.delete { border-color: var(--trap); } .version.insert { border-color: var(--decision); }
.version .meta { font-size: 12px; color: var(--soft); }
.diff { display: grid; grid-template-columns: 1fr 1fr; gap: .8em; margin-top: .3em; }
.diff div { white-space: pre-wrap; padding: .4em .6em; border-radius: 6px; }
.diff .before { background: #ffebe9; } .diff .after { background: #dafbe1; }
.diff div[data-label]::before { content: attr(data-label); display: block; font-size: 11px; color: var(--soft); }
.turn { border: 1px solid var(--line); border-radius: 8px; padding: .6em .9em; margin: .8em 0; }
.turn .head { display: flex; gap: 1em; flex-wrap: wrap; font-size: 12px; color: var(--soft); }
.turn .words { margin: .4em 0; white-space: pre-wrap; }
.turn ul { margin: .2em 0; padding-left: 1.2em; }
form.edit { display: grid; grid-template-columns: minmax(12em, 22em) max-content max-content; gap: .6em 1em; align-items: end;
  margin: 1em 0; padding: .8em; border: 1px solid var(--line); border-radius: 8px; background: var(--back); }
form.edit textarea { grid-column: 1 / -1; width: 100%; min-height: 7em; }
form.edit .text { grid-column: 1 / -1; } form.edit input[name=topic] { width: 100%; }
form.edit .actions { grid-column: 1 / -1; display: flex; gap: .6em; }
.inline { display: inline; }
svg.chart { max-width: 100%; height: auto; font-size: 11px; }
svg .axis, svg .grid { stroke: var(--line); } svg .label, svg .value { fill: var(--soft); }
svg .bar { fill: var(--accent); } svg .once { fill: var(--decision); } svg .held { fill: #4ac26b; }
svg .released { fill: var(--trap); }
.legend { font-size: 12px; color: var(--soft); }
.key { display: inline-block; width: .8em; height: .8em; border-radius: 2px; margin: 0 .3em 0 .8em; }
.key.once { background: var(--decision); } .key.held { background: #4ac26b; } .key.released { background: var(--trap); }
.grid2 { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 1em 2em; }
.figures { color: var(--soft); }
.empty { color: var(--soft); }
"""

# Live updates: the server says memory changed; the page fetches its own main part again and
# swaps it in, unless the owner is editing a fact (then it only says so). What the owner typed
# into Search or the filters, and where the cursor was, outlive the swap: an agent's search
# changes memory every turn.
SCRIPT = """
(() => {
  const status = document.getElementById('live');
  let updates = 0;
  const busy = () => { const a = document.activeElement; return a && a.closest && a.closest('form.edit'); };
  const fields = () => [...document.querySelectorAll('main form:not(.edit) [name]')].filter((el) => el.type !== 'hidden');
  const key = (el) => (el.form ? el.form.getAttribute('action') || '' : '') + ' ' + el.name;
  const typed = (el) => el.tagName === 'SELECT'
    ? [...el.options].some((option) => option.selected !== option.defaultSelected) : el.value !== el.defaultValue;
  const refresh = async () => {
    if (busy()) { status.textContent = 'memory changed: reload to see it'; return; }
    const answer = await fetch(location.href, {headers: {'X-Part': 'main'}});
    if (!answer.ok) return;
    const html = await answer.text();
    const kept = new Map(fields().filter(typed).map((el) => [key(el), el.value]));
    const active = document.activeElement;
    const focus = fields().includes(active) ? {key: key(active), start: active.selectionStart, end: active.selectionEnd} : null;
    document.querySelector('main').innerHTML = html;
    for (const el of fields()) if (kept.has(key(el))) el.value = kept.get(key(el));
    const again = focus && fields().find((el) => key(el) === focus.key);
    if (again) { again.focus(); try { again.setSelectionRange(focus.start, focus.end); } catch (error) {} }
    updates += 1;
    document.body.dataset.updates = String(updates);
    status.textContent = 'live · updated ' + new Date().toLocaleTimeString();
  };
  const events = new EventSource(document.body.dataset.events);
  events.addEventListener('change', refresh);
  // Live once the server says so ('hello'): it has read the version it compares against, so a
  // change from then on is told (onopen comes with the headers, before that read).
  events.addEventListener('hello', () => { status.textContent = 'live'; document.body.dataset.live = '1'; });
  events.onerror = () => { status.textContent = 'reconnecting…'; };
  document.addEventListener('submit', (event) => {
    // The button that submitted asks (Delete), or else the form itself.
    const message = (event.submitter && event.submitter.dataset.confirm) || event.target.dataset.confirm;
    if (message && !confirm(message)) event.preventDefault();
  });
})();
"""
