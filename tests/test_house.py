"""The layout of gate/ keeps its rules: packages by floor, no cycle, no upward tie, no module
shadowing a standard or installed one nor named like its package, modules named by dotted name in
prose, one place for transactions and for the time format."""

import importlib.metadata
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
GATE = REPO / "gate"


def _script():
    spec = importlib.util.spec_from_loader("imports_script", loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__file__ = str(REPO / "scripts" / "imports")
    exec(compile((REPO / "scripts" / "imports").read_text(encoding="utf-8"), "scripts/imports", "exec"), module.__dict__)
    return module


imports = _script()


def _sources():
    return [path for path in GATE.rglob("*.py") if "__pycache__" not in path.parts]


def test_the_house_has_no_import_cycle_and_no_upward_tie():
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "imports")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "no cycle, no upward tie" in out.stdout
    # The graph is read from the code: every package shows, with the floors it leans on.
    assert "gate/cli/" in out.stdout and "gate/engine/" in out.stdout


def test_the_checks_see_a_cycle_and_an_upward_tie():
    edges = {"gate.engine.store": {"gate.search.query"}, "gate.search.query": {"gate.engine.store"},
             "gate.memory.write": {"gate.search.vectors"}, "gate.search.vectors": set()}
    assert imports.cycles(edges) == [["gate.engine.store", "gate.search.query"]]
    assert imports.upward(edges) == ["gate.engine.store -> gate.search.query (engine may not import search)"]
    # A package on the same floor is as forbidden as one above.
    assert imports.upward({"gate.serve.tools": {"gate.context.rules"}}) == [
        "gate.serve.tools -> gate.context.rules (serve may not import context)"]


def test_every_package_says_what_lives_there_and_what_it_may_import():
    for init in GATE.glob("*/__init__.py"):
        text = init.read_text(encoding="utf-8")
        assert text.startswith('"""'), init
        assert "May import" in text, init
        assert init.parent.name in imports.FLOOR or init.parent.name in imports.GROUND, \
            f"scripts/imports places no floor for {init.parent.name}"


def _shadowed() -> set[str]:
    taken = set(sys.stdlib_module_names)
    taken |= set(importlib.metadata.packages_distributions())
    return taken


def test_no_module_of_gate_shadows_a_standard_or_installed_module():
    # Running a module as a script (`python gate/x/y.py`) puts its folder first on sys.path:
    # a gate/secrets.py then hid the standard library's secrets from everything it imported.
    taken = _shadowed()
    clashes = sorted(str(path.relative_to(REPO)) for path in _sources() if path.stem in taken)
    clashes += sorted(str(path.relative_to(REPO)) for path in GATE.rglob("*") if path.is_dir()
                      and (path / "__init__.py").is_file() and path.name in taken)
    assert clashes == []


def test_the_shadow_check_knows_the_names_that_bit():
    assert {"secrets", "mcp", "apsw", "token"} <= _shadowed()


def test_no_module_is_named_like_its_package():
    # gate.search.search, gate.cli.cli: a newcomer could not name the room apart from the house.
    assert sorted(str(path.relative_to(REPO)) for path in _sources() if path.stem == path.parent.name) == []


def _lines_matching(pattern: str, *, outside: set[str]) -> list[str]:
    found = []
    for path in _sources():
        name = str(path.relative_to(REPO))
        if name in outside:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if re.search(pattern, line):
                found.append(f"{name}:{number}: {line.strip()}")
    return found


def test_prose_names_modules_by_dotted_name_and_no_issue_number():
    # A path is the first thing a move breaks; an issue number means nothing to the reader. A
    # string that opens with a path is data (discovery.json's note), not prose.
    assert _lines_matching(r"""(?<!")\bgate/[a-z_/]+\.py\b""", outside=set()) == []
    assert _lines_matching(r"\bissue #?[0-9]", outside=set()) == []


@pytest.mark.parametrize("pattern,home", [
    (r"""execute\(\s*f?["'](BEGIN|COMMIT)""", "gate/engine/store.py"),
    (r"%Y-%m-%dT%H:%M:%S", "gate/clock.py"),
    (r"""replace\("T", " "\)""", "gate/clock.py"),
])
def test_transactions_and_the_time_format_live_in_one_place(pattern, home):
    assert _lines_matching(pattern, outside={home}) == []
    assert _lines_matching(pattern, outside=set()), f"{home} should hold {pattern}"
