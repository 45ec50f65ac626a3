"""The `memory-gate` console script.

`memory-gate hook EVENT` runs on every turn, so it goes straight to gate/hooks.py, which imports
the standard library and the SQLite binding only; every other command loads the full CLI.
"""

from __future__ import annotations

import sys


def main() -> int:
    if sys.argv[1:2] == ["hook"]:
        from gate import hooks

        return hooks.main(sys.argv[2:])
    from gate import cli

    return cli.main()
