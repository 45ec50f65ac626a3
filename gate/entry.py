"""The `memory-gate` console script.

`memory-gate hook EVENT` and `memory-gate inject EVENT` run on every turn, so they go straight to
gate/hooks.py and gate/context/hook.py, which import the standard library and the SQLite binding
only; every other command loads the full CLI.
"""

from __future__ import annotations

import sys


def main() -> int:
    if sys.argv[1:2] == ["serve"] or (sys.argv[1:2] == ["--db"] and sys.argv[3:4] == ["serve"]):
        # Claude Code may stop its server with SIGINT while it is still importing: noted now, obeyed
        # once it runs, never a KeyboardInterrupt traceback (gate/stopping.py).
        from gate import stopping

        stopping.hold()
    if sys.argv[1:2] == ["hook"]:
        from gate import hooks

        return hooks.main(sys.argv[2:])
    if sys.argv[1:2] == ["inject"]:  # injected-context's per-prompt path, as light as the hooks'
        from gate.context import hook

        return hook.main(sys.argv[2:])
    from gate import cli

    return cli.main()
