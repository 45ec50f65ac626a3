"""What Claude Code runs on every turn, and how memory-gate is put into it.

`hooks` (with `hookio`, the fail-open skeleton every hook process shares, and `maxturns`) is the
gate's per-turn side; `install` and `settingsfile` write the settings install, memory-gate's
`entries` (what goes in, and how doctor knows them), into the files `scopes` names (and the
record of what install added); `automemory` turns Claude Code's own auto memory off while
memory-gate is on.

May import: gate.memory.ledger, gate.engine, the ground floor, and the standard library and apsw
only: a hook process loads nothing else (tests/test_hooks.py asserts the set of modules).
"""
