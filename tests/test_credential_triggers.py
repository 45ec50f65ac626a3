"""gate.credentials.triggers lets a text by without running any shape only when no shape can
match it: every trigger of every shape is filed, each with the shortest run of token characters
any match of its shapes holds; and the detector skips a shape only on a text that cannot hold its
match (gate.credentials.needs: that run, and strings one of which the match holds). All are
derived here from the patterns' syntax trees, and the derivation is checked on real matches."""

import re
import sys
from re import _constants as sre, _parser as parser  # the patterns' syntax trees (Python 3.11+)

import pytest
from hypothesis import given, settings, strategies as st
from test_secrets import MISSED_SHAPES, NEGATIVE, POSITIVE  # tests/test_secrets.py

from gate import credentials
from gate.credentials import detector, needs, shapes, triggers

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


def _unsafe_ignoring_case(ch: str) -> bool:
    # A letter ignoring case matches others (`s` matches ſ, `i` matches ı): none is required.
    return ch.isalpha() or not ch.isascii()


def _holds(nodes, fold: bool) -> frozenset[str] | None:
    """Strings one of which every match of the sequence holds (the rarest-looking such set: its
    shortest string the longest), or None. `fold`: the pattern ignores case here."""
    best: frozenset[str] | None = None
    run = ""

    def offer(found) -> None:
        nonlocal best
        if found and (best is None or (min(map(len, found)), -len(found)) > (min(map(len, best)), -len(best))):
            best = frozenset(found)

    for op, value in nodes:
        if op is sre.LITERAL and not (fold and _unsafe_ignoring_case(chr(value))):
            run += chr(value)  # consecutive literals: one string
            continue
        offer({run} if run else None)
        run = ""
        if op is sre.IN and len(value) <= 8 and all(item is sre.LITERAL for item, _ in value):
            chars = {chr(code) for _, code in value}
            if not (fold and any(map(_unsafe_ignoring_case, chars))):
                offer(chars)
        elif op in REPEATS and value[0] >= 1:
            offer(_holds(value[2], fold))
        elif op is sre.SUBPATTERN:
            offer(_holds(value[3], fold or bool(value[1] & re.IGNORECASE)))
        elif op is sre.ATOMIC_GROUP:
            offer(_holds(value, fold))
        elif op is sre.BRANCH:
            branches = [_holds(branch, fold) for branch in value[1]]
            if all(branches):
                offer(frozenset().union(*branches))
    offer({run} if run else None)
    return best


def pattern_holds(source: str) -> tuple[str, ...]:
    """Strings one of which every match of the pattern holds, sorted; () when none is known."""
    tree = parser.parse(source, re.DOTALL)
    return tuple(sorted(_holds(tree, bool(tree.state.flags & re.IGNORECASE)) or ()))


SHAPES = shapes._SHAPES + shapes._ASSIGNMENTS + shapes._LATE
# Characters from the most to the least frequent in English prose: each trigger is filed under
# its rarest one (a character not listed counts as rarer than all of them).
COMMON_FIRST = " etaoinsrhldcu.mfpgwybv-kxjqz"


def derived_needs() -> dict[str, tuple[int, tuple[int, ...]]]:
    """Each trigger: the shortest run of its shapes, and their places in gate.credentials.needs.ALL
    (-1: found without a shape)."""
    runs: dict[str, int] = {}
    places: dict[str, list[int]] = {}
    for place, (_, names, source, _) in enumerate(SHAPES):
        for trigger in names:
            runs[trigger] = min(runs.get(trigger, sys.maxsize), pattern_run(source))
            places.setdefault(trigger, []).append(place)
    # The tables' columns, CSV and INSERT rows (by their headers' words) and .netrc entries
    # (`machine` and `password`) are found without a shape: no run needed.
    for trigger in detector._TABLE_PASSWORDS | detector._TABLE_KEYS | {"password"}:
        runs[trigger] = 0
        places.setdefault(trigger, []).insert(0, -1)
    return {trigger: (runs[trigger], tuple(places[trigger])) for trigger in runs}


def derived_filed() -> dict[str, dict[str, tuple[int, tuple[int, ...]]]]:
    def rarest(trigger: str) -> str:
        return max(trigger, key=lambda ch: COMMON_FIRST.find(ch) if ch in COMMON_FIRST else len(COMMON_FIRST))

    filed: dict[str, dict[str, tuple[int, tuple[int, ...]]]] = {}
    for trigger, need in sorted(derived_needs().items()):
        filed.setdefault(rarest(trigger), {})[trigger] = need
    return filed


def test_every_trigger_is_filed_with_the_run_and_the_shapes_it_triggers():
    expected = derived_filed()
    printed = (
        "FILED: dict[str, dict[str, tuple[int, tuple[int, ...]]]] = {\n"
        + "".join(
            f"    {rare!r}: {{{', '.join(f'{trigger!r}: {need!r}' for trigger, need in triggers.items())}}},\n"
            for rare, triggers in expected.items()
        )
        + "}"
    )
    assert triggers.FILED == expected, f"a shape changed: put this in gate/credentials/triggers.py\n{printed}"
    assert triggers.TRIGGERS == detector._TRIGGERS
    assert needs.ALL == needs.SHAPES + needs.ASSIGNMENTS + needs.LATE and len(needs.ALL) == len(SHAPES)


def needs_module() -> str:
    """gate/credentials/needs.py as the patterns make it (its docstring kept)."""
    from gate.credentials import needs as module

    lines = ['"""' + module.__doc__ + '"""', ""]
    for name, group in (("SHAPES", shapes._SHAPES), ("ASSIGNMENTS", shapes._ASSIGNMENTS), ("LATE", shapes._LATE)):
        lines.append(f"{name}: tuple[tuple[int, tuple[str, ...]], ...] = (")
        lines += [f"    ({pattern_run(source)}, {pattern_holds(source)!r})," for _, _, source, _ in group]
        lines += [")", ""]
    return "\n".join(lines)


def test_every_shape_is_skipped_only_on_a_text_that_cannot_hold_its_match():
    derived = {
        name: tuple((pattern_run(source), pattern_holds(source)) for _, _, source, _ in group)
        for name, group in (("SHAPES", shapes._SHAPES), ("ASSIGNMENTS", shapes._ASSIGNMENTS), ("LATE", shapes._LATE))
    }
    found = {name: getattr(needs, name) for name in derived}
    assert found == derived, (
        f"a shape changed: write this to gate/credentials/needs.py (then ruff format it)\n{needs_module()}"
    )
    assert (detector._SHAPE_NEEDS, detector._ASSIGNMENT_NEEDS, detector._LATE_NEEDS) == tuple(derived.values())


def test_needs_that_do_not_fit_the_shapes_skip_none():
    assert detector._fitting(((3, ("a",)), (4, ())), [1, 2]) == ((3, ("a",)), (4, ()))
    assert detector._fitting(((3, ("a",)), (4, ())), [1, 2, 3]) == ((0, ()), (0, ()), (0, ()))


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


@pytest.mark.parametrize(
    "source, holds",
    [
        (r"(?<![\w-])[A-Z][A-Z0-9_]*(?:PASSWORD|KEY|_PWD)[ \t]+(?P<value>\S+)", ("KEY", "PASSWORD", "_PWD")),
        (r"(?P<name>[\w.-]+)[ \t]*(?::=|=>|=|:(?!//))[ \t]*(?P<value>\S+)", (":", ":=", "=", "=>")),
        (r"[\"'](?P<name>[\w.-]+)[\"']", ('"', "'")),
        (r"(?i)\bsecret[ \t]*[:=][ \t]*(?P<value>\S+)", (":", "=")),  # letters ignoring case: none
        (r"(?i)\bpassword\b", ()),
        (r"x?(?:ab|\w)", ()),  # a branch with a way round every string holds none
        (r"(?:fo)+bar", ("bar",)),  # of the strings held, the set whose shortest is longest
    ],
)
def test_the_strings_a_pattern_holds(source, holds):
    assert pattern_holds(source) == holds


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

    data = json.loads((Path(__file__).parent.parent / "bench" / "data" / "credentials.json").read_text())
    texts = [sample["text"] for kind in ("secret", "benign") for sample in data[kind]] + [text for text, _ in POSITIVE]
    matched = 0
    for _, _, source, _ in SHAPES:
        run, holds = pattern_run(source), pattern_holds(source)
        for text in texts:
            for match in shapes._pattern(source).finditer(text):
                matched += 1
                assert naive_longest_run(match.group()) >= run, (source, match.group())
                assert not holds or any(string in match.group() for string in holds), (source, match.group())
    assert matched > 500


def test_a_text_let_by_holds_no_credential_the_detector_would_find():
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


def test_a_text_holding_none_of_its_shapes_strings_is_let_by():
    # `%` triggers one shape, a password after `--user` or `-U`: a text with neither is let by.
    text = "see issue 12 (50% of runs)"
    assert triggers.quiet(text, triggers.present(text.lower()))
    text = "psql -U app%Winter2024 mydb"
    assert not triggers.quiet(text, triggers.present(text.lower()))
    assert credentials.find(text) == detector.find(text) is not None


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(sorted(triggers.TRIGGERS)),
            st.sampled_from([string for _, strings in needs.ALL for string in strings]),
            st.sampled_from([text for text, _ in POSITIVE] + list(NEGATIVE) + list(MISSED_SHAPES.values())),
            st.text(alphabet=st.sampled_from(sorted(RUN)), min_size=1, max_size=48),
            st.sampled_from([" ", "\n", "=", ":", '"', "|", ",", " is ", "(", ")", "%"]),
            st.text(max_size=6),
        ),
        max_size=14,
    )
)
def test_the_front_answers_as_the_detector_does(parts):
    # The reference: the detector running every shape its triggers name, none skipped for its needs.
    text = "".join(parts)
    kept = detector._SHAPE_NEEDS, detector._ASSIGNMENT_NEEDS, detector._LATE_NEEDS
    try:
        detector._SHAPE_NEEDS, detector._ASSIGNMENT_NEEDS, detector._LATE_NEEDS = (
            ((0, ()),) * len(group) for group in (shapes._SHAPES, shapes._ASSIGNMENTS, shapes._LATE)
        )
        found, redacted = detector.find(text), detector.redact(text)
    finally:
        detector._SHAPE_NEEDS, detector._ASSIGNMENT_NEEDS, detector._LATE_NEEDS = kept
    assert credentials.find(text) == found
    assert credentials.redact(text) == redacted
