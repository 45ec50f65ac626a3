"""`memory-gate team connect | disconnect | status | push | pull | grant`: put this project's facts on a team's
PostgreSQL, take them back to the local file, and see which memory the project uses.

The setting is per project (gate.memory.team), so one developer can share one repository's
memory with a team and keep another's in a local file. `MEMORY_GATE_DB=postgresql://...` does
the same for every project the variable reaches, and wins over the setting.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from gate import config
from gate.memory import opening, team as memory_team
from gate.memory.opening import UserError


def cmd_team(args: argparse.Namespace) -> int:
    settings = opening.settings(args)
    if args.action == "connect":
        return _connect(settings, args)
    if args.action == "disconnect":
        return _disconnect(settings)
    if args.action in ("push", "pull"):
        return _copy(settings, args)
    if args.action == "grant":
        return _grant(settings, args)
    return _status(settings, args.json)


def _grant(settings: config.Settings, args: argparse.Namespace) -> int:
    """A member's role set up with teamroles.grants, on the team's database this project uses."""
    from gate.engine import postgres, store, teamroles

    if args.sql:
        print(";\n".join(teamroles.grants(args.role)) + ";")
        return 0
    found = memory_team.find(settings)
    if found is None:
        raise UserError(
            "this project is not on a team's memory: `memory-gate team connect URL` first, or "
            "`memory-gate team grant ROLE --sql` for the statements to run in psql"
        )
    try:
        conn = postgres.connect(found.url, config.member(), postgres.COMMAND_DEADLINE_S)
    except store.StoreError as error:
        raise UserError(str(error)) from error
    try:
        if not teamroles.is_owner(conn):
            user = conn.execute("SELECT current_user").fetchone()[0]
            raise UserError(
                f"the role {user} does not own memory-gate's tables, so it may not grant a member's rights: "
                f"run this as the tables' owner, or have them run `memory-gate team grant {args.role} --sql` in psql"
            )
        try:
            done = teamroles.grant(conn, args.role)
        except store.StoreError as error:
            raise UserError(str(error)) from error
    finally:
        conn.close()
    print(
        f"granted {args.role} a member's rights on {postgres.SCHEMA} ({len(done)} statements): it may read and change "
        "facts and add to the record of changes, never rewrite it"
    )
    return 0


def _copy(settings: config.Settings, args: argparse.Namespace) -> int:
    from pathlib import Path

    from gate.engine import store
    from gate.memory import audit, teamcopy

    if memory_team.find(settings) is None:
        raise UserError(
            "this project is not on a team's memory: `memory-gate team connect URL` first, then "
            f"`memory-gate team {args.action}`"
        )
    with opening.open_memory(settings) as opened:
        # On a team's memory, as checked above: its facts (TeamFacts) are what push and pull copy.
        facts, member = opened.team_facts, opened.member
        assert member is not None, "on a team's memory, as checked above"
        try:
            if args.action == "push":
                if not opened.path.exists():
                    raise UserError(f"no local memory at {opened.path} to push")
                local = store.connect(opened.path, create=False)
                try:
                    copied = teamcopy.push(local, audit.log_path(opened.path), facts)
                finally:
                    local.close()
                print(
                    f"pushed {copied.facts} facts and {copied.changes} logged changes from {opened.path} "
                    f"to the team's project {member.team.project}"
                )
                print("  the local file is left as it was; this project now uses the team's memory")
            else:
                if opened.conn is not None and args.to is None:
                    opened.conn.close()  # pull writes into it, on a connection of its own
                    opened.conn = None
                target = Path(args.to).absolute() if args.to else opened.path
                copied = teamcopy.pull(facts, target)
                print(
                    f"pulled {copied.facts} facts and {copied.changes} changes of the team's project "
                    f"{member.team.project} into {target}"
                )
                if args.to is None:
                    print(
                        "  `memory-gate team disconnect` uses it as this project's memory; until then the team's is used"
                    )
        except teamcopy.CannotCopy as error:
            raise UserError(str(error)) from error
    return 0


def _connect(settings: config.Settings, args: argparse.Namespace) -> int:
    if settings.team_url:
        raise UserError(
            "MEMORY_GATE_DB already names a team's memory for every project it reaches, and it wins over "
            "a project's setting: unset it to connect this project alone"
        )
    found = memory_team.connect(settings, args.url, args.project)
    print(f"this project's memory is now the team's: {found.shown}, project {found.project}")
    print(f"  (set in {found.source}; the turn ledger stays local, in {config.find_database(settings)})")
    print("every member connects with the same project name; `memory-gate team status` checks the connection")
    return 0


def _disconnect(settings: config.Settings) -> int:
    removed = memory_team.disconnect(settings)
    if removed is None:
        print(
            f"this project was not connected to a team: its memory is the local file {config.find_database(settings)}"
        )
    else:
        print(
            f"this project's memory is the local file again: {config.find_database(settings)} "
            f"(removed {removed}; the team's facts stay in the team's database)"
        )
    if settings.team_url:
        print("MEMORY_GATE_DB still names a team's memory: unset it too for the local file")
    return 0


def _status(settings: config.Settings, as_json: bool) -> int:
    found = memory_team.find(settings)
    ledger = config.find_database(settings)
    if found is None:
        report: dict[str, Any] = {"memory": "local", "database": ledger}
        if as_json:
            print(json.dumps(report, indent=2))
        else:
            print(f"this project's memory is the local file {ledger}")
            print("  `memory-gate team connect postgresql://USER@HOST:PORT/DATABASE` shares it with a team")
        return 0
    report = {
        "memory": "team",
        "url": found.shown,
        "project": found.project,
        "set_by": found.source,
        "member": config.member(),
        "ledger": ledger,
    }
    member = memory_team.Member(found, report["member"])
    try:
        facts = member.facts("status")
        with facts.transaction():
            count = facts.conn.execute("SELECT facts FROM projects WHERE id = %s", (facts.project,)).fetchone()[0]
        report.update(reachable=True, facts=count)
        status = 0
    except memory_team.postgres.Unreachable as error:
        report.update(reachable=False, problem=str(error))
        status = 1
    finally:
        member.close()
    if as_json:
        print(json.dumps(report, indent=2))
        return status
    print(f"this project's memory is the team's: {found.shown}, project {found.project}")
    print(f"  set by {found.source}; you are {report['member']} in its record (MEMORY_GATE_MEMBER)")
    print(f"  the turn ledger is local: {ledger}")
    if report["reachable"]:
        print(f"  reachable: {report['facts']} fact{'' if report['facts'] == 1 else 's'} in the project")
    else:
        print(f"  not reachable: {report['problem']}")
    return status
