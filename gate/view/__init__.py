"""`memory-gate view`: a local page where the owner sees, searches and corrects memory.

What lives here, one concept a module:

- `access`: the random token every request carries, the CSRF check every change passes, and
  the Host check that keeps the page to 127.0.0.1;
- `redact`: credentials that slipped into old data, masked before anything is shown;
- `reading`: what the pages show, as plain values read from the memory a command opens
  (gate.memory.opening's Opened: a local file, or a team's facts beside the member's ledger):
  facts, a fact's history, search with why each fact matched, the turn timeline, the figures for
  the charts, and what the live updates watch;
- `editing`: edit, delete and undo, through gate.memory.changeset like every other change
  (on a team, recorded in the team's `changes` under the member);
- `charts`: small inline SVG charts; `markup`: the page's frame, styles and script; `pages`:
  each page's body;
- `app`: the Starlette application, server-sent events for live updates, and `serve`.

May import: gate.serve (the tools' ranking), gate.memory, gate.search, gate.engine, the ground
floor, and Starlette, uvicorn and sse-starlette, which the mcp SDK brings. Only the command line
imports it, and nothing here is on the hooks' path. Plain HTML, CSS and
a little JavaScript, served from this package: no build step, nothing fetched at run time.
"""
