"""The `memory-gate` console script.

`memory-gate hook EVENT` and `memory-gate inject EVENT` run on every turn, so they go straight to
gate.claude.hooks and gate.context.hook, which import the standard library and the SQLite binding
only; `memory-gate serve` goes to gate.serve.front, which answers Claude Code's first requests while
the MCP SDK loads; every other command loads the full CLI.
"""

import os
import sys


def _load_binding() -> None:
    """Import apsw for a hook without the `collections` package: apsw's start-up takes one class
    from it, collections.abc.Mapping, which `_collections_abc` (loaded with os) already holds,
    and importing collections cost a hook more than its whole SQLite work. Only apsw's import
    sees the stand-in: both names are gone from sys.modules before anything else runs, so
    whatever imports collections later gets the real package."""
    if "apsw" in sys.modules or "collections" in sys.modules:
        return
    import _collections_abc

    stand_in = type(sys)("collections")
    stand_in.abc = _collections_abc  # type: ignore[attr-defined]  # a module takes any attribute
    sys.modules["collections"], sys.modules["collections.abc"] = stand_in, _collections_abc
    try:
        __import__("apsw")
    except Exception:
        # An apsw that wants more of collections than Mapping: the hook's own import of apsw
        # then loads it the ordinary way, with the real package. A hook never fails for this.
        sys.modules.pop("apsw", None)
    finally:
        del sys.modules["collections"], sys.modules["collections.abc"]


def main() -> int:
    args = sys.argv[1:]
    if args[:1] in (["hook"], ["inject"]):
        _load_binding()
    if args[:1] == ["hook"]:
        from gate.claude import hooks

        return hooks.main(args[1:])
    if args[:1] == ["inject"]:  # injected-context's per-prompt path, as light as the hooks'
        from gate.context import hook

        return hook.main(args[1:])
    if args == ["serve"] or (len(args) == 3 and "serve" in (args[0], args[2]) and "--db" in (args[0], args[1])):
        # Claude Code may stop its server with SIGINT at any moment, even while it starts: noted
        # from now on, obeyed once it runs, never a KeyboardInterrupt traceback (gate.stopping).
        from gate import stopping

        stopping.hold()
        from gate import config
        from gate.serve import front

        settings = config.load()
        if "--db" in args:  # --db PATH serve, or serve --db PATH
            settings = settings.replace(database=os.path.join(os.getcwd(), args[args.index("--db") + 1]))
        return front.serve(settings)
    from gate.cli import main as cli

    return cli.main()


def leave(code: int) -> None:
    """End the process with `code`. A hook has nothing left to tidy once its answer is out (its
    transaction committed, SQLite's files consistent on disk): it skips Python's shutdown, which
    tears down every module and the connection and took a fifth of a hook's run."""
    if sys.argv[1:2] in (["hook"], ["inject"]):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (BrokenPipeError, OSError):
            pass  # Claude Code stopped reading: nothing more to say
        os._exit(code)
    raise SystemExit(code)
