"""`memory-gate`: the command line. Each command is a thin layer over one library function.

Exit status: 0 on success, 1 on a user error (with a message saying what to change), 2 on a
usage error (argparse's own).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import deque
from collections.abc import Callable, Sequence
from datetime import date, datetime
from pathlib import Path

from gate import clock, config, credentials
from gate.cli import commands, terminal
from gate.cli.terminal import UserError
from gate.engine import store
from gate.engine.facts import load_facts
from gate.memory import audit, history
from gate.memory.write import KINDS
from gate.search import embeddings, query, search, vectors

EXAMPLES = {
    "serve": "memory-gate serve          # Claude Code starts this through the plugin or .mcp.json",
    "search": 'memory-gate search deploy staging\n  memory-gate search --json "K8s ingress"',
    "log": "memory-gate log --fact 12\n  memory-gate log --since 2026-11-01 --json",
    "doctor": "memory-gate doctor\n  memory-gate --db ./memory.db doctor --json --no-claude\n  memory-gate doctor --claude ~/bin/claude",
    "reindex": "memory-gate reindex\n  MEMORY_GATE_EMBED_URL=http://127.0.0.1:8080/v1/embeddings memory-gate reindex",
    "install": "memory-gate install               # every project: ~/.claude/settings.json, ~/.claude.json\n"
    "  memory-gate install --project .   # this project only, in your personal files\n"
    "  memory-gate install --dry-run",
    "uninstall": "memory-gate uninstall\n  memory-gate uninstall --project .",
    "show": "memory-gate show --kind trap\n  memory-gate show --topic deploy --since 2026-11-01 --json",
    "history": "memory-gate history 12\n  memory-gate history 12 --json",
    "undo": "memory-gate log --fact 12          # each change starts with its ENTRY, e.g. 3b8747aa:12\n"
    "  memory-gate undo 3b8747aa:12",
    "review": "memory-gate review\n  memory-gate review --days 90 --json",
    "stats": "memory-gate stats\n  memory-gate stats --json",
    "export": "memory-gate export --output memory.jsonl\n  memory-gate export > memory.jsonl",
    "import": "memory-gate import memory.jsonl\n  memory-gate import --new-ids --dry-run other-project.jsonl",
    "view": "memory-gate view                 # read-only, opens the browser\n  memory-gate view --edit --port 8765 --no-browser",
}


# Shared by every command (gate/cli/commands.py too), so they live in gate/cli/terminal.py.
_settings = terminal.settings
_open_existing = terminal.open_existing


# -- serve ----------------------------------------------------------------------------------


def cmd_serve(args: argparse.Namespace) -> int:
    from gate.serve import server  # the MCP SDK is heavy: only `serve` pays for importing it

    return server.serve(_settings(args))


# -- search ---------------------------------------------------------------------------------


def cmd_search(args: argparse.Namespace) -> int:
    terms = " ".join(args.terms)
    if args.explain:
        # Without the database's word counts: in a large memory, words nearly every fact holds
        # are left out of the expression.
        found = query.parse(terms).expression()
        print(f"match  {found.text if found else '(nothing to search for)'}")
        print(f"keep   a fact whose terms carry >= {search.COVERAGE:g} of the query's weight and >= "
              f"{search.LEAD:g} of the best-covered fact's, scoring >= {search.RELATIVE:g} of the best bm25")
        return 0
    _, conn = _open_existing(_settings(args))
    ranked = search.by_words(conn, terms)[: args.limit]
    facts = load_facts(conn, ranked)
    found = [facts[rowid] for rowid in ranked if rowid in facts]
    keys = ("id", "topic", "kind", "text", "date")
    # Redacted for display: a database from before the credential check may hold some.
    shown = [credentials.redact_json({key: getattr(fact, key) for key in keys}) for fact in found]
    if args.json:
        print(json.dumps(shown, ensure_ascii=False, indent=2))
        return 0
    if not found:
        print(f'nothing in memory for "{credentials.redact(terms)}"')
    for fact in shown:
        print(f"[{fact['id']}] {fact['kind']} | {fact['topic']} | {fact['date']}")
        for line in fact["text"].splitlines():
            print(f"    {line}")
    return 0


# -- log ------------------------------------------------------------------------------------


def cmd_log(args: argparse.Namespace) -> int:
    path, conn = _open_existing(_settings(args))
    found = audit.entries(audit.log_path(path), fact=args.fact, session=args.session, since=args.since)
    if args.limit:
        found = deque(found, maxlen=args.limit)  # the last N, without holding the rest
    committed = history.Committed(conn)
    # Redacted for display: old lines may hold the owner's words as they were typed.
    shown = (credentials.redact_json(_marked(entry, committed)) for entry in found)
    if args.json:
        terminal.json_list(shown, sys.stdout)
        return 0
    count = 0
    for entry in shown:
        _print_entry(entry)
        count += 1
    if not count:
        print("no changes logged" + (" that match" if args.fact or args.session or args.since else ""))
    return 0


def _marked(entry: dict, committed: history.Committed) -> dict:
    """The entry with whether it committed, and its name for `undo` and `history`."""
    entry["committed"] = committed(entry.get("write"))
    if isinstance(entry.get("write"), str) and isinstance(entry.get("id"), int):
        entry["entry"] = history.entry_name(entry["write"], entry["id"])
    return entry


def _print_entry(entry: dict) -> None:
    when = clock.shown(entry.get("time"))
    flag = "" if entry["committed"] else "  (never committed)"
    name = entry.get("entry", "?")
    print(f"{name}  {when}  {entry.get('op')} [{entry.get('id')}] {entry.get('topic')} ({entry.get('kind')}){flag}")
    print(f"    session {entry.get('session')}  turn {entry.get('turn')}")
    before, after = entry.get("before"), entry.get("after")
    if before and after:
        for key in ("topic", "kind", "date"):
            if before.get(key) != after.get(key):
                print(f"    {key}: {before.get(key)} -> {after.get(key)}")
        if before.get("text") != after.get("text"):
            print(f"    before: {before.get('text')}")
            print(f"    after:  {after.get('text')}")
    elif before:
        print(f"    was: {before.get('text')}")
    elif after:
        print(f"    text: {after.get('text')}")
    if entry.get("words"):
        words = " ".join(str(entry["words"]).split())
        print(f"    why: {words[:200]}{'...' if len(words) > 200 else ''}")
    print()


# -- doctor ---------------------------------------------------------------------------------


def install_clash(project: str) -> list[str]:
    """The plugin and `memory-gate install` both on for this project: the mod then cannot hold
    answers (its gate tool's name is taken by the installed server)."""
    from gate.claude import install, settingsfile

    root = install.project_root(project) if project and Path(project).is_dir() else None
    enabled = install.plugin_enabled_in(install.plugin_settings(config.claude_dir(), root))
    if not enabled:
        return []
    try:
        state = settingsfile.Document.read(Path(config.claude_state_file())).data
    except settingsfile.FileError:
        return []
    servers = [state.get("mcpServers")]
    if root is not None and isinstance(state.get("projects"), dict):
        servers.append((state["projects"].get(str(root)) or {}).get("mcpServers"))
    if any(isinstance(found, dict) and install.is_our_server(found.get(install.SERVER)) for found in servers):
        return [install.clash(enabled) + "."]
    return []


def cmd_doctor(args: argparse.Namespace) -> int:
    from gate.doctor import doctor

    checks: dict[str, doctor.Check] = {"memory": doctor.memory, "injected_context": doctor.injected_context}
    if not args.no_claude:
        from gate.doctor import wiring

        checks["claude_code"] = lambda settings: wiring.check(settings, args.claude)
    checks["install_clash"] = lambda settings: ({}, doctor.stated(install_clash(settings.project_dir)))
    report, findings = doctor.run(_settings(args), checks)
    problems = [finding for finding in findings if finding.severity == doctor.PROBLEM]
    if args.json:
        print(json.dumps({
            **report, "problems": [finding.line().removeprefix("PROBLEM: ") for finding in problems],
            "findings": [finding.to_json() for finding in findings],
        }, indent=2))
    else:
        _print_report(report)
        for finding in sorted(findings, key=lambda finding: (doctor.PROBLEM, doctor.WARNING, doctor.NOTE).index(finding.severity)):
            print(finding.line())
        if not problems:
            print("all well" if not findings else "no problems")
    return 1 if problems else 0


def _print_report(report: dict, indent: str = "") -> None:
    for key, value in report.items():
        if isinstance(value, dict):
            print(f"{indent}{key}:")
            _print_report(value, indent + "  ")
        elif isinstance(value, list):
            print(f"{indent}{key}:")
            for item in value:
                print(f"{indent}  - {item}")
        else:
            print(f"{indent}{key}: {value}")


# -- install, uninstall ----------------------------------------------------------------------


def _install_run(args: argparse.Namespace, verb: str) -> int:
    from gate.claude import install, settingsfile

    record = Path(config.load().home) / install.RECORD_NAME
    try:
        if args.project is not None:
            scope = install.project_scope(args.project, config.claude_state_file())
        else:
            scope = install.user_scope(config.claude_dir(), config.claude_state_file())
        if verb == "install":
            exe = args.exe or install.executable(sys.argv[0], sys.executable)
            plugin_in = install.plugin_settings(config.claude_dir(), scope.root)
            report = install.install(scope, exe, record=record, dry_run=args.dry_run, plugin_in=plugin_in)
        else:
            report = install.uninstall(scope, record=record, dry_run=args.dry_run)
    except (install.InstallError, settingsfile.FileError) as error:
        raise UserError(str(error)) from error
    print("\n".join(report.lines()))
    return 0


def cmd_install(args: argparse.Namespace) -> int:
    return _install_run(args, "install")


def cmd_uninstall(args: argparse.Namespace) -> int:
    return _install_run(args, "uninstall")


# -- reindex --------------------------------------------------------------------------------


def cmd_reindex(args: argparse.Namespace) -> int:
    settings = _settings(args)
    _, conn = _open_existing(settings)
    with store.writing(conn):
        search.rebuild_words(conn)
    count = conn.execute("SELECT count(*) FROM facts").fetchone()[0]
    print(f"word index: rebuilt from {count} facts")
    if not settings.embed_url:
        print("vectors: MEMORY_GATE_EMBED_URL is unset, so search runs on words only; nothing to embed")
        return 0
    try:
        store.require_vectors(conn)
    except store.StoreError as error:
        raise UserError(str(error)) from error
    # Patient, unlike a turn: a slow batch is waited for, not skipped.
    endpoint = embeddings.Endpoint(settings.embed_url, settings.embed_model, quiet_after_timeout=0.0)
    show = terminal.Progress(sys.stdout)
    try:
        rebuilt = vectors.rebuild(conn, endpoint, progress=show)
    except embeddings.VectorError as error:
        raise UserError(
            f"{error}; memory's vectors are left as they were. Start the endpoint at "
            f"{settings.embed_url} (MEMORY_GATE_EMBED_URL) and run reindex again."
        ) from error
    show.done()
    made = rebuilt.space
    where = f" by {made.model} ({made.dimension} dimensions)" if made else ""
    print(f"vectors: {rebuilt.embedded} of {count} facts embedded{where}")
    if rebuilt.failed:
        listed = ", ".join(str(fact) for fact in rebuilt.failed[:20]) + (" ..." if len(rebuilt.failed) > 20 else "")
        print(
            f"memory-gate: {len(rebuilt.failed)} facts could not be embedded ({listed}); they keep "
            "waiting for a vector: run reindex again, or the next writes embed them", file=sys.stderr,
        )
        return 1
    return 0


# -- view -----------------------------------------------------------------------------------


def cmd_view(args: argparse.Namespace) -> int:
    from gate.view import app  # Starlette and uvicorn: only `view` pays for importing them

    return app.serve(_settings(args), port=args.port, editable=args.edit, open_browser=not args.no_browser)


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


# -- parser ---------------------------------------------------------------------------------

COMMANDS: dict[str, tuple[str, Callable[[argparse.Namespace], int]]] = {
    "serve": ("run the MCP server on stdio (memory_search, memory_write)", cmd_serve),
    "search": ("search memory by words, as memory_search ranks it (records nothing)", cmd_search),
    "log": ("show write.log: every change, what it replaced, who and why", cmd_log),
    "show": ("list the facts, the most recently changed first", commands.cmd_show),
    "history": ("every version of one fact from write.log, oldest first: who, when and why", commands.cmd_history),
    "undo": ("revert one logged change (itself logged as a change)", commands.cmd_undo),
    "review": ("facts no turn has kept or updated in N days, the longest first: what may be stale", commands.cmd_review),
    "stats": ("facts by kind, how turns complied with the gate, and what a search costs the context", commands.cmd_stats),
    "export": ("write every fact as JSON lines, ids and bookkeeping included (memory is unchanged)", commands.cmd_export),
    "import": ("add the facts of a JSON lines file, all or none, each logged; duplicates are skipped", commands.cmd_import),
    "doctor": ("check memory (database, index, write.log) and how Claude Code runs it; each problem with its mend", cmd_doctor),
    "reindex": ("rebuild the word index and the vectors from the facts (with an embeddings endpoint)", cmd_reindex),
    "install": ("put memory-gate's hooks, MCP server and tool permissions into Claude Code's settings (no plugin needed)", cmd_install),
    "uninstall": ("take out of Claude Code's settings exactly what install put in", cmd_uninstall),
    "view": ("a local page to see, search and (with --edit) correct memory, live", cmd_view),
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


def _whole(text: str) -> int:
    """argparse type: a whole number (a fact id), one SQLite can hold."""
    digits = text.removeprefix("-")
    if not (digits.isascii() and digits.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number: write a fact id such as 12")
    if abs(int(text)) > LARGEST:
        raise argparse.ArgumentTypeError(f"{text} is too large: memory's ids stop at {LARGEST}")
    return int(text)


def _database(text: str) -> str:
    """argparse type: the path of a database file (it need not exist yet)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path: give the database file, e.g. --db ./memory.db")
    if Path(text).is_dir():
        raise argparse.ArgumentTypeError(
            f"{text} is a folder: give the database file, e.g. --db {Path(text) / 'memory.db'}"
        )
    if Path(text).exists() and not Path(text).is_file():  # /dev/null: SQLite would journal beside it
        raise argparse.ArgumentTypeError(
            f"{text} is not a regular file (a device, pipe or socket): give the database file, e.g. --db ./memory.db"
        )
    return text


def _people(add: Callable[[str], argparse.ArgumentParser]) -> None:
    """The arguments of the owner's everyday commands (gate/cli/commands.py)."""
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
    sub.add_argument("entry", type=commands.entry_argument, metavar="ENTRY",
                     help="the change, WRITE:FACT as `memory-gate log` and `history` print it (e.g. 3b8747aa:12)")
    sub.add_argument("--json", action="store_true", help="print what was undone as JSON")
    sub = add("review")
    sub.add_argument("--days", type=_count, default=commands.REVIEW_DAYS, metavar="N",
                     help=f"not confirmed in this many days (default {commands.REVIEW_DAYS})")
    sub.add_argument("--limit", type=_count, metavar="N", help="at most N facts")
    sub.add_argument("--json", action="store_true", help="print a JSON list of facts")
    sub = add("stats")
    sub.add_argument("--json", action="store_true", help="print the figures as JSON")
    sub = add("export")
    sub.add_argument("--output", "-o", metavar="FILE", help="write to FILE (made private, replaced whole) instead of standard output")
    sub = add("import")
    sub.add_argument("file", metavar="FILE", help="JSON lines, one fact a line, as export writes them; - reads standard input")
    sub.add_argument("--new-ids", action="store_true", help="give every fact a new id (facts from another project's memory)")
    sub.add_argument("--dry-run", action="store_true", help="check the file and say what would happen; change nothing")
    sub.add_argument("--json", action="store_true", help="print the outcome as JSON")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="memory-gate",
        description="Project memory for coding agents that keeps only what is still true.",
        epilog="Example: memory-gate search deploy staging. Run `memory-gate COMMAND --help` for more.",
    )
    top.add_argument("--db", metavar="PATH", type=_database, help="use this database instead of the project's (also MEMORY_GATE_DB)")
    commands = top.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str) -> argparse.ArgumentParser:
        summary, handler = COMMANDS[name]
        sub = commands.add_parser(
            name, help=summary, description=summary[0].upper() + summary[1:] + ".",
            epilog="Example:\n  " + EXAMPLES[name], formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        sub.set_defaults(handler=handler)
        return sub

    add("serve")
    sub = add("search")
    sub.add_argument("terms", nargs="+", help="words to look for")
    sub.add_argument("--json", action="store_true", help="print a JSON list of facts (id, topic, kind, text, date)")
    sub.add_argument("--limit", type=_count, default=search.RESULTS, metavar="N", help=f"at most N facts (default {search.RESULTS})")
    sub.add_argument("--explain", action="store_true", help="print the FTS5 expression the search would run and how it keeps facts, and stop")
    sub = add("log")
    sub.add_argument("--fact", type=_whole, metavar="ID", help="only changes to this fact")
    sub.add_argument("--session", metavar="ID", help="only changes made by this session")
    sub.add_argument("--since", metavar="DATE", type=_moment, help="only changes on or after this day (YYYY-MM-DD) or time (YYYY-MM-DDTHH:MM, UTC)")
    sub.add_argument("--limit", type=_count, metavar="N", help="only the last N changes")
    sub.add_argument("--json", action="store_true", help="print a JSON list of log entries")
    _people(add)
    sub = add("doctor")
    sub.add_argument("--json", action="store_true", help="print the report as JSON")
    which = sub.add_mutually_exclusive_group()
    which.add_argument("--claude", metavar="CMD", help="the Claude Code to check (default: claude on PATH)")
    which.add_argument("--no-claude", action="store_true", help="check memory only, not how Claude Code runs memory-gate")
    add("reindex")
    _add_view(add)
    for name in ("install", "uninstall"):
        sub = add(name)
        where = sub.add_mutually_exclusive_group()
        where.add_argument("--user", action="store_true", help="for every project (the default): ~/.claude/settings.json and ~/.claude.json")
        where.add_argument("--project", metavar="DIR", help="for the project at DIR only (its git root): DIR/.claude/settings.local.json and DIR's local entry in ~/.claude.json, both yours alone")
        sub.add_argument("--dry-run", action="store_true", help="print what would change and write nothing")
        if name == "install":
            sub.add_argument("--command", dest="exe", metavar="CMD", help="the memory-gate command hooks and server run (default: the absolute path of this one, so Claude Code finds it without PATH)")
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return args.handler(args)
    except (UserError, config.ConfigError, store.StoreError) as error:
        # One line, whatever the error quotes (a file name may hold a newline).
        print("memory-gate: " + str(error).replace("\r", "\\r").replace("\n", "\\n"), file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
