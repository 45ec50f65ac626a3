"""`memory-gate install`, `uninstall`, `doctor`, `serve` and `view`: putting memory-gate into
Claude Code, checking it, and the two servers it runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gate import config
from gate.memory import opening
from gate.memory.opening import UserError


def cmd_serve(args: argparse.Namespace) -> int:
    from gate.serve import server  # the MCP SDK is heavy: only `serve` pays for importing it

    return server.serve(opening.settings(args))


def cmd_doctor(args: argparse.Namespace) -> int:
    from gate.doctor import checks, wiring

    chosen: dict[str, checks.Check] = {
        "memory": checks.memory,
        "team": checks.team,
        "injected_context": checks.injected_context,
    }
    if not args.no_claude:
        chosen["claude_code"] = lambda settings: wiring.check(settings, args.claude)
    chosen["install_clash"] = lambda settings: ({}, checks.stated(wiring.install_clash(settings.project_dir)))
    report, findings = checks.run(opening.settings(args), chosen)
    problems = [finding for finding in findings if finding.severity == checks.PROBLEM]
    if args.json:
        print(
            json.dumps(
                {
                    **report,
                    "problems": [finding.message() for finding in problems],
                    "findings": [finding.to_json() for finding in findings],
                },
                indent=2,
            )
        )
    else:
        _print_report(report)
        for finding in sorted(
            findings, key=lambda finding: (checks.PROBLEM, checks.WARNING, checks.NOTE).index(finding.severity)
        ):
            print(finding.line())
        if not problems:
            print("all well" if not findings else "no problems")
    return 1 if problems else 0


def _print_report(report: dict, indent: str = "") -> None:
    for key, value in report.items():
        if value in ({}, []):
            continue  # a check with nothing to report (install_clash when nothing clashes): no bare heading
        if isinstance(value, dict):
            print(f"{indent}{key}:")
            _print_report(value, indent + "  ")
        elif isinstance(value, list):
            print(f"{indent}{key}:")
            for item in value:
                print(f"{indent}  - {item}")
        else:
            print(f"{indent}{key}: {value}")


def _install_run(args: argparse.Namespace, verb: str) -> int:
    from gate.claude import entries, install, scopes, settingsfile

    record = Path(config.load().home) / install.RECORD_NAME
    try:
        if args.project is not None:
            scope = scopes.project_scope(args.project, config.claude_state_file())
        else:
            scope = scopes.user_scope(config.claude_dir(), config.claude_state_file())
        if verb == "install":
            exe = args.exe or entries.executable(sys.argv[0], sys.executable)
            plugin_in = scopes.plugin_settings(config.claude_dir(), scope.root)
            report = install.install(
                scope, exe, record=record, dry_run=args.dry_run, plugin_in=plugin_in, plugin=args.plugin
            )
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


def cmd_view(args: argparse.Namespace) -> int:
    from gate.view import app  # Starlette and uvicorn: only `view` pays for importing them

    return app.serve(opening.settings(args), port=args.port, editable=args.edit, open_browser=not args.no_browser)


def cmd_import_auto_memory(args: argparse.Namespace) -> int:
    from gate.claude import automemory
    from gate.cli import terminal
    from gate.engine import store
    from gate.memory import audit, factlines, transfer
    from gate.memory.stores import LocalStore

    settings = opening.settings(args)
    folder = Path(config.claude_dir()) / "projects" / config.project_key(settings.project_dir) / "memory"
    found, lines = automemory.gather(folder)
    report: dict = {
        "folder": str(folder),
        "files": [
            {"file": item.path.name, "facts": len(item.facts), **({"skipped": item.problem} if item.problem else {})}
            for item in found
        ],
    }
    if not found:
        report["imported"] = 0
        print(json.dumps(report, indent=2) if args.json else f"no auto memory files in {folder}: nothing to import")
        return 0
    path = Path(config.find_database(settings))
    conn = store.connect(path)
    try:
        result = transfer.import_into(
            conn,
            lines,
            LocalStore(conn, audit.log_path(path)),
            command=terminal.command_line(args.argv),
            dry_run=args.dry_run,
        )
    except factlines.Refused as error:
        raise UserError(str(error)) from error
    finally:
        conn.close()
    report.update(result.to_json())
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for item in report["files"]:
        print(
            f"  {item['file']}: {item['facts']} fact{'s' if item['facts'] != 1 else ''}"
            + (f"; left out: {item['skipped']}" if "skipped" in item else "")
        )
    verb = "would import" if args.dry_run else "imported"
    line = f"{verb} {result.inserted} fact{'s' if result.inserted != 1 else ''} from {folder}"
    if result.ids:
        line += f" (ids {result.ids[0]} to {result.ids[1]})"
    print(line + (f", each logged in write.log (write {result.write_id[:8]})" if result.write_id else ""))
    if result.skipped:
        print(f"{result.skipped} already in memory, skipped (the same topic, kind and text)")
    print(
        "The files stay as they are: memory-gate never changes them; with autoMemoryEnabled false Claude Code no longer reads them."
        if not args.dry_run
        else "nothing was changed (--dry-run)"
    )
    return 0
