"""The README and docs/ stay true: every relative link reaches a file that exists and every
anchor a heading that does (by GitHub's slug rules), the README stays short with its first screen
naming what a newcomer needs, and the figures it quotes about the suite are scripts/figures'."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^(```|~~~)")
# [text](target) and ![alt](target); the target ends at whitespace or the closing parenthesis.
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def prose(text: str) -> list[str]:
    """The page's lines outside fenced code, with inline code removed (neither holds links)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(re.sub(r"`[^`]*`", "", line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: the rendered text lowercased, every character that is
    not a letter, digit, mark, underscore, hyphen or space dropped, each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link counts by its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    kept = "".join(c for c in text.lower() if c in " -_" or unicodedata.category(c)[0] in "LNM")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading's anchor; a repeated one gets -1, -2, ... as GitHub numbers them."""
    seen: dict[str, int] = {}
    found = set()
    for line in prose(page.read_text(encoding="utf-8")):
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        base = slug(match.group(1))
        number = seen.get(base, 0)
        seen[base] = number + 1
        found.add(base if number == 0 else f"{base}-{number}")
    return found


def links(page: Path) -> list[str]:
    return [target for line in prose(page.read_text(encoding="utf-8")) for target in LINK.findall(line)]


def broken(page: Path) -> list[str]:
    wrong = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto: ...: not ours to follow
            continue
        path, _, anchor = target.partition("#")
        goal = (page.parent / path).resolve() if path else page
        if not goal.is_relative_to(REPO):
            # Beside the checkout (the data sets in shared/): there on the machines that have it,
            # never in a clone, so nothing a test of the repository can hold it to.
            continue
        if not goal.exists():
            wrong.append(f"{target}: no {goal.relative_to(REPO)}")
        elif anchor and goal.suffix == ".md" and anchor not in anchors(goal):
            wrong.append(f"{target}: {goal.name} has no heading with that anchor")
    return wrong


@pytest.mark.parametrize("heading, anchor", [
    ("What `scripts/install` does", "what-scriptsinstall-does"),
    ("Team memory on PostgreSQL", "team-memory-on-postgresql"),
    ("injected-context: rules injected when they apply", "injected-context-rules-injected-when-they-apply"),
    ("Rule files, their folders, and the two deliveries", "rule-files-their-folders-and-the-two-deliveries"),
    ("The house: gate/ by package", "the-house-gate-by-package"),
    ("Por que não?", "por-que-não"),
])
def test_anchors_follow_githubs_slug_rules(heading, anchor):
    assert slug(heading) == anchor


def test_a_repeated_heading_is_numbered(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Figures\n\n```\n# not a heading\n```\n\n## Figures\n")
    assert anchors(page) == {"figures", "figures-1"}


def test_links_in_code_are_not_followed(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("[a](a.md) `[b](b.md)`\n\n```\n[c](c.md)\n```\n![d](d.png \"title\")\n")
    assert links(page) == ["a.md", "d.png"]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_relative_link_and_anchor_resolves(page):
    assert broken(page) == []


def test_the_readme_is_short_and_its_first_screen_says_what_a_newcomer_needs():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    first_screen = "\n".join(text.splitlines()[:25])
    pinned = json.loads((REPO / "package.json").read_text())["devDependencies"]["@anthropic-ai/claude-code"]
    assert f"Claude Code {pinned}" in first_screen or f"covers {pinned}" in first_screen
    assert "Python 3.11" in first_screen
    assert "scripts/install" in first_screen and "scripts/test" in first_screen


# -- the figures the README quotes -------------------------------------------------------------


def figures_script():
    loader = importlib.machinery.SourceFileLoader("figures_script", str(REPO / "scripts" / "figures"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def test_the_readmes_figures_are_the_ones_scripts_figures_writes():
    script = figures_script()
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert script.block(text) == script.render(json.loads(script.FIGURES.read_text())), "run scripts/figures"


def test_the_figures_read_a_runs_closing_lines(tmp_path):
    log = tmp_path / "ci.log"
    log.write_text("...\n===== 1425 passed, 3 skipped in 699.12s (0:11:39) =====\n"
                   "== the fast subset\n1074 passed, 352 deselected in 51.00s\n"
                   "=========== 1074 passed, 352 deselected in 51.00s ===========\n")
    found = figures_script().timed(log, "abc1234")
    assert found == {"suite": {"commit": "abc1234", "passed": 1425, "seconds": 699.12},
                     "fast_run": {"commit": "abc1234", "passed": 1074, "seconds": 51.0}}


@pytest.mark.slow
def test_the_readmes_test_count_is_near_the_suites():
    """Within 5%: tests come and go between runs of scripts/figures, which recounts them."""
    recorded = json.loads((REPO / "tests" / "figures.json").read_text())
    for marker, key in (((), "tests"), (("fast",), "fast")):
        done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                               *(["-m", *marker] if marker else [])], cwd=REPO, capture_output=True, text=True, timeout=300)
        collected = int(re.search(r"^(\d+)(?:/\d+)? tests? collected", done.stdout, re.M).group(1))
        assert abs(collected - recorded[key]) <= 0.05 * collected, f"{key}: {recorded[key]} recorded, {collected} now: run scripts/figures"
