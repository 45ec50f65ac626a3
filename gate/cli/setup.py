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
    from gate.doctor import doctor, wiring

    checks: dict[str, doctor.Check] = {"memory": doctor.memory, "team": doctor.team, "injected_context": doctor.injected_context}
    if not args.no_claude:
        checks["claude_code"] = lambda settings: wiring.check(settings, args.claude)
    checks["install_clash"] = lambda settings: ({}, doctor.stated(wiring.install_clash(settings.project_dir)))
    report, findings = doctor.run(opening.settings(args), checks)
    problems = [finding for finding in findings if finding.severity == doctor.PROBLEM]
    if args.json:
        print(json.dumps({
            **report, "problems": [finding.message() for finding in problems],
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


def cmd_view(args: argparse.Namespace) -> int:
    from gate.view import app  # Starlette and uvicorn: only `view` pays for importing them

    return app.serve(opening.settings(args), port=args.port, editable=args.edit, open_browser=not args.no_browser)
