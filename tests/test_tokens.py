"""gate.engine.tokens: the CJK spelling of a text, held to its definition (runs of the
characters is_cjk names, one a token, runs kept apart by `0`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gate.engine import tokens


def by_definition(text: str) -> str:
    runs, current = [], []
    for ch in text:
        if tokens.is_cjk(ch):
            current.append(ch)
        elif current:
            runs.append(" ".join(current))
            current = []
    if current:
        runs.append(" ".join(current))
    return " 0 ".join(runs)


# Each block's edges and their neighbours, so that a range one off is found.
EDGES = [chr(code) for code in (0x303F, 0x3040, 0x30FF, 0x3100, 0x31EF, 0x31F0, 0x31FF, 0x3200, 0x33FF, 0x3400,
                                0x4DBF, 0x4DC0, 0x4DFF, 0x4E00, 0x9FFF, 0xA000, 0xF8FF, 0xF900, 0xFAFF, 0xFB00,
                                0xFF65, 0xFF66, 0xFF9F, 0xFFA0, 0x1FFFF, 0x20000, 0x3134F, 0x31350)]


@given(st.lists(st.one_of(st.sampled_from(EDGES), st.characters()), max_size=30).map("".join))
def test_cjk_chars_spells_out_exactly_the_runs_is_cjk_names(text):
    assert tokens.cjk_chars(text) == by_definition(text)


def test_cjk_chars_of_a_japanese_sentence_keeps_runs_apart():
    assert tokens.cjk_chars("東京 meeting 会議") == "東 京 0 会 議"
    assert tokens.cjk_chars("plain ascii") == ""
