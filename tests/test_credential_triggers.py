"""gate.credentials.triggers lets a text by without running any shape only when no shape can
match it: every trigger of every shape is filed, each with the shortest run of token characters
any match of its shapes holds, derived here from the patterns themselves."""

import re
import sys
from re import _constants as sre, _parser as parser  # the patterns' syntax trees (Python 3.11+)

import pytest
from hypothesis import given, settings, strategies as st

from gate import credentials
from gate.credentials import detector, shapes, triggers

RUN = set(triggers.RUN)
REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
ZERO_WIDTH = (sre.AT, sre.ASSERT, sre.ASSERT_NOT)


def one_run_character(op, value) -> bool:
    """Whether the node matches exactly one character, and only characters of RUN."""
    if op is sre.LITERAL:
        return chr(value) in RUN
    if op is sre.IN:
        return all(
            (item is sre.LITERAL and chr(bound) in RUN)
            or (item is sre.RANGE and all(chr(code) in RUN for code in range(bound[0], bound[1] + 1)))
            for item, bound in value
        )
    return False


def _walk(nodes, run: int = 0, best: int = 0) -> tuple[int, int]:
    """(the run still open at the end, the longest closed) over a sequence of nodes: a lower bound
    on the longest run of RUN characters every match of the sequence holds."""
    for op, value in nodes:
        if one_run_character(op, value):
            run += 1
        elif op in REPEATS:
            low, _, inner = value
            if len(inner) == 1 and one_run_character(*inner[0]):
                run += low  # more of them only lengthens the run
            else:
                best, run = max(best, run, shortest_run(inner) if low else 0), 0
        elif op is sre.SUBPATTERN:  # a group: its nodes in line
            run, best = _walk(value[3], run, best)
        elif op is sre.ATOMIC_GROUP:
            run, best = _walk(value, run, best)
        elif op in ZERO_WIDTH:
            pass  # consumes nothing: the characters on either side are neighbours
        elif op is sre.BRANCH:
            best, run = max(best, run, min(shortest_run(branch) for branch in value[1])), 0
        else:  # anything else may match a character outside RUN, or none (a back-reference)
            best, run = max(best, run), 0
    return run, best


def shortest_run(nodes) -> int:
    return max(_walk(nodes))


def pattern_run(source: str) -> int:
    return shortest_run(parser.parse(source, re.DOTALL))


SHAPES = shapes._SHAPES + shapes._ASSIGNMENTS + shapes._LATE
# Characters from the most to the least frequent in English prose: each trigger is filed under
# its rarest one (a character not listed counts as rarer than all of them).
COMMON_FIRST = " etaoinsrhldcu.mfpgwybv-kxjqz"


def derived_needs() -> dict[str, int]:
    needs: dict[str, int] = {}
    for _, names, source, _ in SHAPES:
        for trigger in names:
            needs[trigger] = min(needs.get(trigger, sys.maxsize), pattern_run(source))
    # The tables' columns, CSV and INSERT rows (by their headers' words) and .netrc entries
    # (`machine` and `password`) are found without a shape: no run needed.
    for trigger in detector._TABLE_PASSWORDS | detector._TABLE_KEYS | {"password"}:
        needs[trigger] = 0
    return needs


def derived_filed() -> dict[str, dict[str, int]]:
    def rarest(trigger: str) -> str:
        return max(trigger, key=lambda ch: COMMON_FIRST.find(ch) if ch in COMMON_FIRST else len(COMMON_FIRST))

    filed: dict[str, dict[str, int]] = {}
    for trigger, need in sorted(derived_needs().items()):
        filed.setdefault(rarest(trigger), {})[trigger] = need
    return filed


def test_every_trigger_is_filed_with_the_run_its_shapes_need():
    expected = derived_filed()
    printed = (
        "FILED: dict[str, dict[str, int]] = {\n"
        + "".join(
            f"    {rare!r}: {{{', '.join(f'{trigger!r}: {need}' for trigger, need in triggers.items())}}},\n"
            for rare, triggers in expected.items()
        )
        + "}"
    )
    assert triggers.FILED == expected, f"a shape changed: put this in gate/credentials/triggers.py\n{printed}"
    assert triggers.TRIGGERS == detector._TRIGGERS


@pytest.mark.parametrize(
    "runs, group",
    [
        ("_SHAPE_RUNS", shapes._SHAPES),
        ("_ASSIGNMENT_RUNS", shapes._ASSIGNMENTS),
        ("_LATE_RUNS", shapes._LATE),
    ],
)
def test_every_shape_is_skipped_only_below_the_run_it_needs(runs, group):
    expected = tuple(pattern_run(source) for _, _, source, _ in group)
    printed = " ".join(map(str, expected))
    assert getattr(detector, runs) == expected, (
        f"a shape changed: put in {runs} of gate/credentials/detector.py:\n{printed}"
    )


def test_runs_that_do_not_fit_the_shapes_skip_none():
    assert detector._runs("3 4", [1, 2]) == (3, 4)
    assert detector._runs("3 4", [1, 2, 3]) == (0, 0, 0)


def test_the_run_characters_are_all_a_token_class_matches_ignoring_case():
    # A pattern that ignores case matches İ ı ſ K for an ASCII letter: a run must count them too.
    token = re.compile(r"(?i)[A-Za-z0-9+/=_.~-]")
    assert {chr(code) for code in range(sys.maxunicode + 1) if token.fullmatch(chr(code))} == RUN


@pytest.mark.parametrize(
    "source, run",
    [
        (r"(?<![A-Za-z0-9])AC[0-9a-f]{32}[\"']?[ \t]*[,:;/]", 34),  # a Twilio account id
        (r"ghp_[A-Za-z0-9]{36,}", 40),
        (r"(?:lin_api_[A-Za-z0-9]{40}|npm_[A-Za-z0-9]{36})", 40),  # the shorter branch
        (r"(?P<name>[\w.-]+)[ \t]*=[ \t]*(?P<value>\S+)", 1),  # \w and \S reach past RUN: `=` alone
        (r"(?i)key[ \t]+(?P<value>[a-z0-9]{20,})", 20),
        (r"x(?P<q>[\"']?)(?P<value>[A-Za-z]{4})(?P=q)y", 4),  # a back-reference breaks the run
        (r"ab(?=cd)[0-9]{3}", 5),  # a lookahead consumes nothing: `ab` and the digits are neighbours
    ],
)
def test_the_shortest_run_of_a_pattern(source, run):
    assert pattern_run(source) == run


def naive_longest_run(text: str) -> int:
    best = run = 0
    for ch in text:
        run = run + 1 if ch in RUN else 0
        best = max(best, run)
    return best


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(sorted(RUN) + [" ", "\n", "\t", ":", "é", "\u00ff", "\u212b", "?", "\x85"])))
def test_longest_run_counts_what_the_shapes_count(text):
    assert triggers.longest_run(text) == naive_longest_run(text)


def test_every_match_in_the_samples_holds_its_shapes_run():
    # The derivation checked against real matches: every credential of the labelled samples and
    # tests/test_secrets.py, and what each shape matches in them.
    import json
    from pathlib import Path

    from tests.test_secrets import POSITIVE

    data = json.loads((Path(__file__).parent.parent / "bench" / "data" / "credentials.json").read_text())
    texts = [sample["text"] for kind in ("secret", "benign") for sample in data[kind]] + [text for text, _ in POSITIVE]
    matched = 0
    for _, _, source, _ in SHAPES:
        run = pattern_run(source)
        for text in texts:
            for match in shapes._pattern(source).finditer(text):
                matched += 1
                assert naive_longest_run(match.group()) >= run, (source, match.group())
    assert matched > 500


def test_a_text_let_by_holds_no_credential_the_detector_would_find():
    from tests.test_secrets import NEGATIVE, POSITIVE

    let_by = 0
    for text in (
        [text for text, _ in POSITIVE] + list(NEGATIVE) + ["fix the build-cache bug in ci", "see issue 12 (50%)"]
    ):
        if triggers.quiet(text, triggers.present(text.lower())):
            let_by += 1
            assert detector.redact(text) == text and detector.find(text) is None
        assert credentials.redact(text) == detector.redact(text)
        assert credentials.find(text) == detector.find(text)
    assert let_by >= 3


def test_an_ordinary_prompt_imports_no_shape():
    import subprocess

    code = (
        "import sys\nfrom gate import credentials\n"
        "assert credentials.redact('fix the build-cache bug in ci, then rerun it') == 'fix the build-cache bug in ci, then rerun it'\n"
        "assert credentials.find('why does the deploy fail on main?') is None\n"
        "print(sorted(m for m in sys.modules if m.startswith('gate') or m == 're'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['gate', 'gate.credentials', 'gate.credentials.triggers']"
