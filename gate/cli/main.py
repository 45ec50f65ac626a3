"""`memory-gate`: the command line, its shape (parser) and its dispatch (main).

Each command is a thin layer over one library function, kept with the others of its subject:
gate.cli.facts (search, show, review), gate.cli.changes (log, history, undo), gate.cli.data
(stats, export, import, reindex) and gate.cli.setup (install, uninstall, doctor, serve, view);
gate.cli.terminal is the one printer they share.

Exit status: 0 on success, 1 on a user error (with a message saying what to change), 2 on a
usage error (argparse's own).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from datetime import date, datetime
from pathlib import Path

import apsw

from gate import __version__, config
from gate.cli import changes, data, facts, setup, team
from gate.engine import store
from gate.memory.checking import KINDS
from gate.memory.opening import UserError
from gate.search import fulltext

EXAMPLES = {
    "serve": "memory-gate serve          # Claude Code starts this through the plugin or .mcp.json",
    "search": 'memory-gate search deploy staging\n  memory-gate search --json "K8s ingress"',
    "log": "memory-gate log --fact 12\n  memory-gate log --since 2026-11-01 --json",
    "doctor": "memory-gate doctor\n  memory-gate --db ./memory.db doctor --json --no-claude\n  memory-gate doctor --claude ~/bin/claude",
    "reindex": "memory-gate reindex\n  MEMORY_GATE_EMBED_URL=http://127.0.0.1:8080/v1/embeddings memory-gate reindex",
    "install": "memory-gate install               # every project: ~/.claude/settings.json, ~/.claude.json\n"
    "  memory-gate install --project .   # this project only, in your personal files\n"
    "  memory-gate install --dry-run\n"
    "  memory-gate install --plugin      # beside the plugin: only Claude Code's auto memory off (scripts/install runs it)",
    "import-auto-memory": "memory-gate import-auto-memory --dry-run   # what would come in\n  memory-gate import-auto-memory",
    "uninstall": "memory-gate uninstall\n  memory-gate uninstall --project .",
    "show": "memory-gate show --kind trap\n  memory-gate show --topic deploy --since 2026-11-01 --json",
    "history": "memory-gate history 12\n  memory-gate history 12 --json",
    "undo": "memory-gate log --fact 12          # each change starts with its ENTRY, e.g. 3b8747aa:12\n"
    "  memory-gate undo 3b8747aa:12",
    "review": "memory-gate review\n  memory-gate review --days 90 --json",
    "stats": "memory-gate stats\n  memory-gate stats --json",
    "export": "memory-gate export --output memory.jsonl\n  memory-gate export > memory.jsonl",
    "import": "memory-gate import memory.jsonl\n  memory-gate import --new-ids --dry-run other-project.jsonl",
    "team": "memory-gate team connect postgresql://ana@db.internal/memory   # project named by the git remote\n"
    "  memory-gate team connect postgresql://ana@db.internal/memory --project acme-api\n"
    "  memory-gate team push     # this project's local memory, history included, into the team's\n"
    "  memory-gate team status\n  memory-gate team pull --to ./copy.db\n  memory-gate team disconnect",
    "view": "memory-gate view                 # read-only, opens the browser\n  memory-gate view --edit --port 8765 --no-browser",
}


def _port(text: str) -> int:
    """argparse type: a TCP port, or 0 for a free one."""
    if text.isdigit() and int(text) <= 65535:
        return int(text)
    raise argparse.ArgumentTypeError(f"{text!r} is not a port: give a number from 1 to 65535, or 0 for a free one")


def _add_view(add: Callable[[str], argparse.ArgumentParser]) -> None:
    sub = add("view")
    sub.add_argument("--port", type=_port, default=0, metavar="N", help="listen on 127.0.0.1:N (default: a free port)")
    sub.add_argument("--edit", action="store_true", help="allow editing, deleting and undoing facts from the page")
    sub.add_argument("--no-browser", action="store_true", help="print the page's address without opening a browser")


COMMANDS: dict[str, tuple[str, Callable[[argparse.Namespace], int]]] = {
    "serve": ("run the MCP server on stdio (memory_search, memory_write)", setup.cmd_serve),
    "search": ("search memory by words, as memory_search ranks it (records nothing)", facts.cmd_search),
    "log": ("show write.log: every change, what it replaced, who and why", changes.cmd_log),
    "show": ("list the facts, the most recently changed first", facts.cmd_show),
    "history": ("every version of one fact from write.log, oldest first: who, when and why", changes.cmd_history),
    "undo": ("revert one logged change (itself logged as a change)", changes.cmd_undo),
    "review": ("facts no turn has kept or updated in N days, the longest first: what may be stale", facts.cmd_review),
    "stats": ("facts by kind, how turns complied with the gate, and what a search costs the context", data.cmd_stats),
    "export": ("write every fact as JSON lines, ids and bookkeeping included (memory is unchanged)", data.cmd_export),
    "import": ("add the facts of a JSON lines file, all or none, each logged; duplicates are skipped", data.cmd_import),
    "import-auto-memory": (
        "take Claude Code's own auto memory files (MEMORY.md and the *.md beside it) in as facts, each logged; the files stay",
        setup.cmd_import_auto_memory,
    ),
    "doctor": (
        "check memory (database, index, write.log) and how Claude Code runs it; each problem with its mend",
        setup.cmd_doctor,
    ),
    "reindex": (
        "rebuild the word index and the vectors from the facts (with an embeddings endpoint)",
        data.cmd_reindex,
    ),
    "install": (
        "put memory-gate's hooks, MCP server and tool permissions into Claude Code's settings (no plugin needed), and turn Claude Code's own auto memory off",
        setup.cmd_install,
    ),
    "uninstall": ("take out of Claude Code's settings exactly what install put in", setup.cmd_uninstall),
    "view": ("a local page to see, search and (with --edit) correct memory, live", setup.cmd_view),
    "team": (
        "share this project's memory with a team on PostgreSQL (connect, push, pull, status, disconnect)",
        team.cmd_team,
    ),
}


# SQLite's integers, and so memory's ids and counts, stop here.
LARGEST = 2**63 - 1


def _day(text: str) -> str:
    """argparse type: a day, YYYY-MM-DD."""
    try:
        if len(text) == 10 and date.fromisoformat(text):
            return text
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"{text!r} is not a day: write YYYY-MM-DD, e.g. 2026-11-01")


def _moment(text: str) -> str:
    """argparse type: a day (YYYY-MM-DD) or a time (YYYY-MM-DDTHH:MM[:SS], UTC as write.log keeps
    it), as the prefix of write.log's times it is compared with."""
    given = text.strip().replace(" ", "T").removesuffix("Z")
    try:
        if len(given) == 10:
            return _day(given)
        if len(given) in (16, 19) and given[10] == "T" and datetime.fromisoformat(given):
            return given
    except (ValueError, argparse.ArgumentTypeError):
        pass
    raise argparse.ArgumentTypeError(
        f"{text!r} is not a day or a time: write YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC), e.g. 2026-11-01 or 2026-11-01T09:30"
    )


def _count(text: str) -> int:
    """argparse type: a positive whole number, one SQLite can hold."""
    if not (text.isascii() and text.isdigit() and int(text) > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number: write one such as 10")
    if int(text) > LARGEST:
        raise argparse.ArgumentTypeError(f"{text} is too large: memory's ids and counts stop at {LARGEST}")
    return int(text)


def _fact_id(text: str) -> int:
    """argparse type: a fact id, a positive whole number SQLite can hold."""
    if not (text.isascii() and text.isdigit() and int(text) > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a fact id: ids are positive whole numbers, e.g. 12")
    if int(text) > LARGEST:
        raise argparse.ArgumentTypeError(f"{text} is too large: memory's ids stop at {LARGEST}")
    return int(text)


def _database_file(option: str) -> Callable[[str], str]:
    """argparse type: the path of a database file (it need not exist yet), given with `option`."""

    def database(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"an empty path: give the database file, e.g. {option} ./memory.db")
        if Path(text).is_dir():
            raise argparse.ArgumentTypeError(
                f"{text} is a folder: give the database file, e.g. {option} {Path(text) / 'memory.db'}"
            )
        if Path(text).exists() and not Path(text).is_file():  # /dev/null: SQLite would journal beside it
            raise argparse.ArgumentTypeError(
                f"{text} is not a regular file (a device, pipe or socket): give the database file, e.g. {option} ./memory.db"
            )
        return text

    return database


_database = _database_file("--db")
DB_HELP = "use this database instead of the project's (also MEMORY_GATE_DB)"


def _add_db(sub: argparse.ArgumentParser) -> None:
    """--db after the command too (`memory-gate show --db x.db`); SUPPRESS keeps one given
    before the command when none is given after."""
    sub.add_argument("--db", metavar="PATH", type=_database, default=argparse.SUPPRESS, help=DB_HELP)


def _people(add: Callable[[str], argparse.ArgumentParser]) -> None:
    """The arguments of the owner's everyday commands (gate.cli.facts, gate.cli.changes, gate.cli.data)."""
    sub = add("show")
    sub.add_argument("--topic", metavar="T", help="only facts whose topic holds T (any case)")
    sub.add_argument("--kind", choices=KINDS, help="only facts of this kind")
    sub.add_argument("--since", metavar="DATE", type=_day, help="only facts changed on or after this day (YYYY-MM-DD)")
    sub.add_argument("--limit", type=_count, metavar="N", help="at most N facts")
    sub.add_argument("--json", action="store_true", help="print a JSON list of facts, bookkeeping included")
    sub = add("history")
    sub.add_argument("id", type=_count, metavar="ID", help="the fact's id")
    sub.add_argument("--json", action="store_true", help="print a JSON list of its changes")
    sub = add("undo")
    sub.add_argument(
        "entry",
        type=changes.entry_argument,
        metavar="ENTRY",
        help="the change, WRITE:FACT as `memory-gate log` and `history` print it (e.g. 3b8747aa:12)",
    )
    sub.add_argument("--json", action="store_true", help="print what was undone as JSON")
    sub = add("review")
    sub.add_argument(
        "--days",
        type=_count,
        default=facts.REVIEW_DAYS,
        metavar="N",
        help=f"not confirmed in this many days (default {facts.REVIEW_DAYS})",
    )
    sub.add_argument("--limit", type=_count, metavar="N", help="at most N facts")
    sub.add_argument("--json", action="store_true", help="print a JSON list of facts")
    sub = add("stats")
    sub.add_argument("--json", action="store_true", help="print the figures as JSON")
    sub = add("export")
    sub.add_argument(
        "--output", "-o", metavar="FILE", help="write to FILE (made private, replaced whole) instead of standard output"
    )
    sub = add("import")
    sub.add_argument(
        "file", metavar="FILE", help="JSON lines, one fact a line, as export writes them; - reads standard input"
    )
    sub.add_argument(
        "--new-ids", action="store_true", help="give every fact a new id (facts from another project's memory)"
    )
    sub.add_argument("--dry-run", action="store_true", help="check the file and say what would happen; change nothing")
    sub.add_argument("--json", action="store_true", help="print the outcome as JSON")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="memory-gate",
        description="Project memory for coding agents that keeps only what is still true.",
        epilog="Example: memory-gate search deploy staging. Run `memory-gate COMMAND --help` for more.",
    )
    top.add_argument("--db", metavar="PATH", type=_database, help=DB_HELP)
    top.add_argument("--version", action="version", version=f"memory-gate {__version__}")
    commands = top.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str) -> argparse.ArgumentParser:
        summary, handler = COMMANDS[name]
        sub = commands.add_parser(
            name,
            help=summary,
            description=summary[0].upper() + summary[1:] + ".",
            epilog="Example:\n  " + EXAMPLES[name],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        sub.set_defaults(handler=handler)
        _add_db(sub)
        return sub

    add("serve")
    sub = add("search")
    sub.add_argument(
        "terms", nargs="*", help="words to look for (a word starting with - is a word too: search -deploy)"
    )
    sub.add_argument("--json", action="store_true", help="print a JSON list of facts (id, topic, kind, text, date)")
    sub.add_argument(
        "--limit",
        type=_count,
        default=fulltext.RESULTS,
        metavar="N",
        help=f"at most N facts (default {fulltext.RESULTS})",
    )
    sub.add_argument(
        "--explain",
        action="store_true",
        help="print the FTS5 expression the search would run and how it keeps facts, and stop",
    )
    sub = add("log")
    sub.add_argument("--fact", type=_fact_id, metavar="ID", help="only changes to this fact")
    sub.add_argument("--session", metavar="ID", help="only changes made by this session")
    sub.add_argument(
        "--since",
        metavar="DATE",
        type=_moment,
        help="only changes on or after this day (YYYY-MM-DD) or time (YYYY-MM-DDTHH:MM, UTC)",
    )
    sub.add_argument("--limit", type=_count, metavar="N", help="only the last N changes")
    sub.add_argument("--json", action="store_true", help="print a JSON list of log entries")
    _people(add)
    sub = add("doctor")
    sub.add_argument("--json", action="store_true", help="print the report as JSON")
    which = sub.add_mutually_exclusive_group()
    which.add_argument("--claude", metavar="CMD", help="the Claude Code to check (default: claude on PATH)")
    which.add_argument(
        "--no-claude", action="store_true", help="check memory only, not how Claude Code runs memory-gate"
    )
    add("reindex")
    sub = add("import-auto-memory")
    sub.add_argument("--dry-run", action="store_true", help="print the facts that would come in and change nothing")
    sub.add_argument("--json", action="store_true", help="print what was imported as JSON")
    _add_view(add)
    sub = add("team")
    actions = sub.add_subparsers(dest="action", metavar="ACTION", required=True)
    connect = actions.add_parser(
        "connect",
        help="put this project's facts on the team's PostgreSQL at URL",
        description="Put this project's facts on the team's PostgreSQL at URL (checked now), under a "
        "name every member uses. The turn ledger stays local. The URL holds no password: libpq "
        "takes it from ~/.pgpass, PGPASSWORD or a service file.",
    )
    connect.add_argument(
        "url", metavar="URL", help="postgresql://USER@HOST:PORT/DATABASE (sslmode=... and other libpq options allowed)"
    )
    connect.add_argument(
        "--project",
        metavar="NAME",
        help="the project's name in the team's memory (default: the git remote origin, e.g. github.com/acme/api)",
    )
    actions.add_parser("disconnect", help="use the local file again (the team's facts stay in the team's database)")
    actions.add_parser("push", help="copy this project's local memory, history included, into the team's empty project")
    pull = actions.add_parser("pull", help="copy the team's project, history included, into a local memory with none")
    pull.add_argument(
        "--to",
        metavar="PATH",
        type=_database_file("--to"),
        help="the database file to make (default: this project's local file, which must hold no facts)",
    )
    grant = actions.add_parser(
        "grant",
        help="give a member's database role exactly a member's rights (run as the tables' owner)",
        description="Give the database role ROLE a member's rights on the team's memory, and no more: facts read "
        "and changed, changes added to the record, never rewritten or deleted. Run it as the tables' owner. "
        "Example: memory-gate team grant ana",
    )
    grant.add_argument("role", metavar="ROLE", help="the member's database role (CREATE ROLE ana LOGIN first)")
    grant.add_argument("--sql", action="store_true", help="print the statements instead of running them")
    status = actions.add_parser("status", help="which memory this project uses, and whether the team's can be reached")
    status.add_argument("--json", action="store_true", help="print the status as JSON")
    for action in actions.choices.values():
        _add_db(action)
    for name in ("install", "uninstall"):
        sub = add(name)
        where = sub.add_mutually_exclusive_group()
        where.add_argument(
            "--user",
            action="store_true",
            help="for every project (the default): ~/.claude/settings.json and ~/.claude.json",
        )
        where.add_argument(
            "--project",
            metavar="DIR",
            help="for the project at DIR only (its git root): DIR/.claude/settings.local.json and DIR's local entry in ~/.claude.json, both yours alone",
        )
        sub.add_argument("--dry-run", action="store_true", help="print what would change and write nothing")
        if name == "install":
            sub.add_argument(
                "--plugin",
                action="store_true",
                help="beside the plugin, which brings hooks, server and rules: write only what a plugin cannot, autoMemoryEnabled false",
            )
            sub.add_argument(
                "--command",
                dest="exe",
                metavar="CMD",
                help="the memory-gate command hooks and server run (default: the absolute path of this one, so Claude Code finds it without PATH)",
            )
    return top


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line, read as argparse reads it, except that search takes a word starting with
    a single - (`search -deploy`) as a word to look for, not an unknown option."""
    top = parser()
    args, extra = top.parse_known_args(argv)
    if args.command == "search":
        words = [word for word in extra if word.startswith("-") and not word.startswith("--") and word != "-"]
        extra = [word for word in extra if word not in words]
        args.terms += words
        if not extra and not args.terms:
            top.parse_args(["search"])  # argparse's own usage error: terms are required
    if extra:
        top.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return args.handler(args)
    except (UserError, config.ConfigError, store.StoreError) as error:
        # One line, whatever the error quotes (a file name may hold a newline).
        print("memory-gate: " + str(error).replace("\r", "\\r").replace("\n", "\\n"), file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except (apsw.Error, OSError) as error:
        # Met outside an opened memory (whose errors come diagnosed as UserError): still one line.
        print("memory-gate: " + store.explain(error).replace("\r", "\\r").replace("\n", "\\n"), file=sys.stderr)
        return 1
