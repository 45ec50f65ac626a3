"""The facts and every change to them: the turn ledger (what each turn was shown and owes), a
change set checked against it, the write that applies it with its write.log line, undo, history,
export and import, and the listings and figures read back for people, on a local memory or a
team's (`team`: which one a project uses; `record`: write.log or the team's changes; `teamcopy`).

May import: gate.search (a written fact gets its vector), gate.engine and the ground floor.
`ledger` is on the hooks' path and imports the standard library and apsw only.
"""
