import io
import json

import pytest

from gate.cli import terminal


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_is_a_bar_on_a_terminal():
    out = Tty()
    show = terminal.Progress(out, "import")
    for done in (1, 2, 4):
        show(done, 4)
    show.done()
    assert out.getvalue().startswith("\rimport [") and out.getvalue().endswith("] 4/4\n")
    assert out.getvalue().count("\r") == 3


def test_progress_is_a_line_every_tenth_elsewhere():
    out = io.StringIO()
    show = terminal.Progress(out, "export")
    for done in range(0, 101):
        show(done, 100)
    show.done()
    lines = out.getvalue().splitlines()
    assert lines[0] == "export: 0/100 facts" and lines[-1] == "export: 100/100 facts" and len(lines) == 11


@pytest.mark.parametrize("items", [[], [{"a": 1}], [{"a": "é\nb", "c": [1, 2]}, {"d": None}]])
def test_json_lists_are_written_as_json_dumps_would(items):
    out = io.StringIO()
    assert terminal.json_list(iter(items), out) == len(items)
    assert json.loads(out.getvalue()) == items
    assert out.getvalue() == json.dumps(items, ensure_ascii=False, indent=2) + "\n"


def test_the_command_line_is_quoted_as_a_shell_would_take_it():
    assert terminal.command_line(["import", "my facts.jsonl"]) == "memory-gate import 'my facts.jsonl'"
