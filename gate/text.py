"""Words as SQLite's FTS5 `unicode61 remove_diacritics 2` tokenizer sees them.

The search code reasons about the agent's terms (stop words, word forms, which terms a candidate
matched) in Python, and FTS5 matches them in SQL. Both must cut and fold text the same way, or a
term that FTS5 found would look unmatched here. unicode61 keeps letters (L*), numbers (N*) and
private-use characters (Co) as token characters, lower-cases, and with `remove_diacritics 2`
folds accents away; everything else separates tokens.

Chinese and Japanese are written without spaces, so unicode61 sees a whole sentence as one token
and a word inside it can never match. `cjk_chars` spells such runs out one character per token;
the index keeps that spelling in its own column and a query looks a run up there as a phrase of
consecutive characters, which is an exact substring search of any length (see schema.sql).
"""

from __future__ import annotations

import unicodedata

_TOKEN_CATEGORIES = ("L", "N")


def _is_token_char(ch: str) -> bool:
    category = unicodedata.category(ch)
    return category[0] in _TOKEN_CATEGORIES or category == "Co"


def is_cjk(ch: str) -> bool:
    """Han ideographs, kana and the CJK punctuation-free blocks written without spaces."""
    code = ord(ch)
    return (
        0x3040 <= code <= 0x30FF  # hiragana, katakana
        or 0x31F0 <= code <= 0x31FF  # katakana phonetic extensions
        or 0x3400 <= code <= 0x4DBF  # CJK extension A
        or 0x4E00 <= code <= 0x9FFF  # CJK unified ideographs
        or 0xF900 <= code <= 0xFAFF  # CJK compatibility ideographs
        or 0xFF66 <= code <= 0xFF9F  # half-width katakana
        or 0x20000 <= code <= 0x3134F  # CJK extensions B to G
    )


def fold(word: str) -> str:
    """Lower-case and strip diacritics, like unicode61 with remove_diacritics 2."""
    decomposed = unicodedata.normalize("NFD", word.lower())
    stripped = "".join(ch for ch in decomposed if unicodedata.category(ch) != "Mn")
    return unicodedata.normalize("NFC", stripped)


def tokens(text: str) -> list[str]:
    """The tokens of `text` as written (unfolded), CJK runs left whole as unicode61 leaves them."""
    found: list[str] = []
    current: list[str] = []
    for ch in text:
        if _is_token_char(ch):
            current.append(ch)
        elif current:
            found.append("".join(current))
            current = []
    if current:
        found.append("".join(current))
    return found


def words(text: str) -> list[str]:
    """The folded tokens of `text`: what the index holds for it, CJK runs aside."""
    return [fold(token) for token in tokens(text)]


def segments(token: str) -> list[tuple[str, bool]]:
    """One token cut into its CJK runs and the parts between them, in order: (part, is_cjk)."""
    found: list[tuple[str, bool]] = []
    for ch in token:
        cjk = is_cjk(ch)
        if found and found[-1][1] == cjk:
            found[-1] = (found[-1][0] + ch, cjk)
        else:
            found.append((ch, cjk))
    return found


def cjk_chars(text: str | None) -> str:
    """Every CJK character of `text`, space separated; runs kept apart by a `0` token.

    Registered in SQLite as `gate_cjk()` and used by the FTS triggers, so that `会議` inside
    `東京都庁の会議は毎週月曜日です` is the phrase "会 議" of the index's `cjk` column.
    """
    if not text:
        return ""
    runs: list[str] = []
    current: list[str] = []
    for ch in text:
        if is_cjk(ch):
            current.append(ch)
        elif current:
            runs.append(" ".join(current))
            current = []
    if current:
        runs.append(" ".join(current))
    # A phrase must not match across two runs ("都" ending one, "会" starting the next), so a
    # token that no CJK query can contain sits between them.
    return " 0 ".join(runs)
