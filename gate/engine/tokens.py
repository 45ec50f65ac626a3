"""Words as SQLite's FTS5 `unicode61 remove_diacritics 2` tokenizer sees them.

The search code reasons about the agent's terms (stop words, word forms, which terms a candidate
matched) in Python, and FTS5 matches them in SQL. Both must cut and fold text the same way, or a
term typed exactly as stored would find nothing: unicode61 keeps `й`, `ё`, `ї` and Greek accents
that a Python "strip every combining mark" fold removes, and it folds a final `ς` to `σ`, which
`str.lower` does not. So nothing here imitates the tokenizer: words are cut and folded by the very
tokenizer the index uses, through apsw's access to FTS5 tokenizers on a private in-memory
connection (made on first use, about 0.1 ms).

Chinese and Japanese are written without spaces, so unicode61 sees a whole sentence as one token
and a word inside it can never match. `cjk_chars` spells such runs out one character per token;
the index keeps that spelling in its own column and a query looks a run up there as a phrase of
consecutive characters, which is an exact substring search of any length (see schema.sql).
"""

from __future__ import annotations

import functools
import re

import apsw

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@functools.cache
def _tokenizer() -> apsw.FTS5Tokenizer:
    connection = apsw.Connection(":memory:")
    return connection.fts5_tokenizer("unicode61", ["remove_diacritics", "2"])


def _spans(text: str) -> list[tuple[str, str]]:
    """(as written, as indexed) for each token of `text`."""
    encoded = text.encode("utf-8", "replace")
    found = []
    # With offsets (the default) each token is (start, end, form...), never a bare string.
    tokens: Any = _tokenizer()(encoded, apsw.FTS5_TOKENIZE_DOCUMENT, None)
    for start, end, *forms in tokens:
        found.append((encoded[start:end].decode("utf-8", "replace"), forms[0]))
    return found


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


# Runs of the characters is_cjk() names, found by the regular expression engine: cjk_chars cuts
# every fact a team import or push brings, and a loop over each character in Python took most of it.
_CJK_RUN = re.compile(
    "[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]+"
)


def fold(word: str) -> str:
    """The word as the index holds it: lower case, accents folded the way unicode61 folds them."""
    return "".join(indexed for _, indexed in _spans(word))


def tokens(text: str) -> list[str]:
    """The tokens of `text` as written (unfolded), CJK runs left whole as unicode61 leaves them."""
    return [written for written, _ in _spans(text)]


def words(text: str) -> list[str]:
    """The folded tokens of `text`: what the index holds for it, CJK runs aside."""
    return [indexed for _, indexed in _spans(text)]


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
    if not text or text.isascii():  # every CJK block lies past ASCII: most facts end here
        return ""
    runs = [" ".join(run) for run in _CJK_RUN.findall(text)]
    # A phrase must not match across two runs ("都" ending one, "会" starting the next), so a
    # token that no CJK query can contain sits between them.
    return " 0 ".join(runs)
