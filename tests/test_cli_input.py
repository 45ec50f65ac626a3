"""The command line on bad input: each case a user met gets its clear message and exit status,
and a property test drives every command's argument space (options, numbers of any size, days
and not-days, paths to folders, missing files, empty strings, any text) to show there is never a
traceback: exit 0, 1 with `memory-gate: <what to change>`, or 2 with argparse's usage."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Writer, child_env
from hypothesis import HealthCheck, given, settings, strategies as st

from gate import config
from gate.cli import main as cli
from gate.engine import store
from gate.memory import audit, ledger

HUGE = "99999999999999999999"


@pytest.fixture
def memory(home, tmp_path, monkeypatch):
    """The project's database with a few facts and their log, and a folder and a file beside it."""
    monkeypatch.setenv("HOME", str(tmp_path / "user"))  # install and uninstall write here
    path = Path(config.find_database(config.load()))
    conn = store.connect(path)
    ledger.open_turn(conn, "s-cli", "p-1", "remember how deploys work")
    writer = Writer(conn, audit.log_path(path), session="s-cli")
    writer.insert("deploy", "Deploys go through the staging branch.")
    writer.insert("database", "The test DB is reset before migrations.", kind="trap")
    conn.close()
    (tmp_path / "folder").mkdir()
    (tmp_path / "facts.jsonl").write_text('{"topic": "t", "kind": "state", "text": "imported"}\n')
    return path


def run(*argv: str) -> tuple[int, str, str]:
    """cli.main in-process: (exit status, stdout, stderr). Any exception but SystemExit escapes."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(argv))
        except SystemExit as exited:
            code = exited.code if isinstance(exited.code, int) else 2
    return code, out.getvalue(), err.getvalue()


# -- the cases met -----------------------------------------------------------------------------


@pytest.mark.parametrize("argv, code, says", [
    (["history", HUGE], 2, "is too large: memory's ids and counts stop at 9223372036854775807"),
    (["show", "--limit", HUGE], 2, "is too large"),
    (["log", "--limit", HUGE], 2, "is too large"),
    (["log", "--fact", HUGE], 2, "is too large"),
    (["search", "--limit", "0", "deploy"], 2, "'0' is not a positive whole number"),
    (["log", "--since", "yesterday"], 2, "'yesterday' is not a day or a time: write YYYY-MM-DD"),
    (["log", "--since", "zzz"], 2, "is not a day or a time"),
    (["log", "--since", "2026-13-45"], 2, "is not a day or a time"),
    (["show", "--since", "2026-13-45"], 2, "is not a day: write YYYY-MM-DD"),
    (["--db", "", "show"], 2, "an empty path: give the database file"),
    (["--db", "{tmp}/folder", "show"], 2, "is a folder: give the database file, e.g. --db {tmp}/folder/memory.db"),
    (["--db", os.devnull, "show"], 2, "is not a regular file (a device, pipe or socket): give the database file"),
    (["--db", "{tmp}/missing.db", "show"], 1, "no database at {tmp}/missing.db, which --db or MEMORY_GATE_DB names"),
    (["export", "--output", "{tmp}/folder"], 1, "cannot write {tmp}/folder: it is a folder; give a file name"),
    (["log", "--fact", "-5"], 2, "'-5' is not a fact id: ids are positive whole numbers"),
    (["log", "--fact", "0"], 2, "'0' is not a fact id"),
    (["team", "pull", "--to", "{tmp}/folder"], 2, "is a folder: give the database file, e.g. --to {tmp}/folder/memory.db"),
    (["search", "--deploy"], 2, "unrecognized arguments: --deploy"),
    (["show", "-x"], 2, "unrecognized arguments: -x"),
])
def test_bad_input_gets_its_message_and_exit_status(memory, tmp_path, argv, code, says):
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    got, _, err = run(*argv)
    assert got == code and says.replace("{tmp}", str(tmp_path)) in err, err
    assert "Traceback" not in err


def test_db_is_taken_after_the_command_as_before_it(memory, tmp_path):
    other = tmp_path / "other" / "memory.db"
    Writer(store.connect(other), audit.log_path(other)).insert("cache", "Redis holds the sessions.")
    for argv in (["--db", str(other), "show"], ["show", "--db", str(other)], ["--db", str(memory), "show", "--db", str(other)]):
        code, out, err = run(*argv)
        assert code == 0 and "Redis holds the sessions." in out and "staging" not in out, (argv, err)
    code, out, _ = run("show")
    assert code == 0 and "staging" in out


def test_version_names_the_version(memory):
    from gate import __version__

    code, out, _ = run("--version")
    assert code == 0 and out == f"memory-gate {__version__}\n"


def test_a_search_word_starting_with_a_dash_is_a_word(memory):
    Writer(store.connect(memory), audit.log_path(memory)).insert("flags", "Pass -deploy to the release script.")
    code, out, err = run("search", "-deploy")
    assert code == 0 and "-deploy to the release script" in out, err
    code, out, err = run("search", "--limit", "1", "release", "-deploy")
    assert code == 0 and "-deploy to the release script" in out, err


def test_a_huge_number_of_days_reviews_everything_there_is(memory):
    code, out, _ = run("review", "--days", "99999999999")
    assert code == 0 and "in the last 99999999999 days" in out


def test_a_time_narrows_the_log_to_the_minute(memory):
    code, out, _ = run("log", "--since", "2000-01-01 00:00")
    assert code == 0 and out.count("insert [") == 2
    code, out, _ = run("log", "--since", "2999-01-01T00:00:00Z")
    assert code == 0 and "no changes logged that match" in out


def test_a_missing_database_named_by_the_environment_is_not_the_projects(memory, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMORY_GATE_DB", str(tmp_path / "nowhere.db"))
    code, _, err = run("show")
    assert code == 1 and f"no database at {tmp_path / 'nowhere.db'}" in err and "no memory yet for" not in err


@pytest.mark.parametrize("event", ["hook", "inject"])
def test_hook_help_is_for_people(tmp_path, event):
    result = subprocess.run([sys.executable, "-m", "gate", event, "--help"], capture_output=True, text=True, env=child_env(tmp_path))
    assert result.returncode == 0 and result.stdout.startswith(f"usage: memory-gate {event} EVENT")
    assert "systemMessage" not in result.stdout and "Example:" in result.stdout


# -- the whole argument space --------------------------------------------------------------------


def subparser(command: str):
    return cli.parser()._subparsers._group_actions[0].choices[command]


# serve reads stdin forever and view serves a page until stopped: each has its own tests
# (tests/test_server.py, tests/test_view.py).
COMMANDS = sorted(set(cli.COMMANDS) - {"serve", "view"})
# doctor's Claude Code checks run claude and start servers: tests/test_wiring.py has them.
NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.sampled_from(["0", "1", "30", HUGE, "9223372036854775807", "9223372036854775808", "99999999999", "-1", "1e3", "0x10", "٣", " 7"]),
)
DAYS = st.one_of(
    st.sampled_from(["2026-11-01", "2026-13-45", "yesterday", "zzz", "0001-01-01", "9999-12-31", "2026-11-01T09:30", "2026-11-01 09:30:00Z", "2026-02-30"]),
    st.dates().map(str),
)
ENTRIES = st.sampled_from(["3b8747aa:1", "zz:1", ":", "ffffffff:" + HUGE, "abc", ""])
WORDS = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20)


def paths(tmp: Path) -> st.SearchStrategy[str]:
    return st.sampled_from(["", str(tmp / "folder"), str(tmp / "missing.db"), str(tmp / "facts.jsonl"), "-", str(tmp), "/dev/null", str(tmp / "out.jsonl")])


def values_for(action, tmp: Path) -> st.SearchStrategy[str]:
    """Values of the kind the argument takes, and now and then any text at all."""
    if action.choices:
        fitting = st.sampled_from([*action.choices, "nope"])
    elif getattr(action.type, "__name__", "") in ("_count", "_fact_id", "int"):
        fitting = NUMBERS
    elif getattr(action.type, "__name__", "") in ("_day", "_moment"):
        fitting = DAYS
    elif action.metavar in ("FILE", "PATH", "DIR", "CMD"):
        fitting = paths(tmp)
    elif action.metavar == "ENTRY":
        fitting = ENTRIES
    else:
        fitting = st.one_of(WORDS, st.sampled_from(["deploy", "s-cli", "C++ node.js", "NOT", '"']))
    return st.one_of(fitting, fitting, WORDS)


@st.composite
def command_lines(draw, tmp: Path) -> list[str]:
    """A command, any of its options each with a value of its kind, its positionals, and
    sometimes a stray token."""
    command = draw(st.sampled_from(COMMANDS))
    argv = draw(st.sampled_from([[], [], ["--db", draw(paths(tmp))], ["--db", draw(WORDS)]])) + [command]
    if command == "doctor":
        argv.append("--no-claude")
    for action in subparser(command)._actions:
        if "-h" in action.option_strings or "--no-claude" in action.option_strings:
            continue
        values = values_for(action, tmp)
        if not action.option_strings:  # a positional: usually given
            if draw(st.integers(0, 9)):
                argv += draw(st.lists(values, min_size=1, max_size=3 if action.nargs == "+" else 1))
        elif draw(st.booleans()):
            argv.append(draw(st.sampled_from(action.option_strings)))
            if action.nargs != 0:
                argv.append(draw(values))
    if draw(st.integers(0, 4)) == 0:
        argv.insert(draw(st.integers(0, len(argv))), draw(st.one_of(WORDS, st.sampled_from(["--json", "--limit", "-o", "--"]))))
    return argv


@pytest.mark.slow
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_no_command_line_ends_in_a_traceback(memory, tmp_path, monkeypatch, data):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    argv = data.draw(command_lines(tmp_path))
    code, out, err = run(*argv)
    assert code in (0, 1, 2), (argv, code, err)
    assert "Traceback" not in err, (argv, err)
    if code == 1 and "doctor" in argv and not err:
        # doctor's 1: it found problems, each with its mend (as JSON with --json)
        if "--json" in argv:
            assert json.loads(out)["problems"], (argv, out)
        else:
            assert "PROBLEM: " in out, (argv, out)
    elif code == 1:
        assert err.startswith("memory-gate: ") and err.count("\n") == 1, (argv, err)
    if code == 2:
        assert "usage: memory-gate" in err and "error: " in err, (argv, err)
