"""The `memory-gate` command: the console entry and the commands a person runs.

`entry` sends `hook`, `inject` and `serve` straight to their light paths before anything else
loads; every other command is a thin layer over one library function below.

May import: anything in gate (the top of the house; nothing imports it but the entry).
"""
