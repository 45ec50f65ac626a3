"""The words memory holds that a term nearly is, for a term memory holds in no form at all.

An agent types `deplyo`, drops the accent of `Ελληνικά`, or asks for `клиенты` where memory says
`клиент`. The index folds Latin accents but not Greek or Cyrillic ones, and gate.search.forms's
stems know English and Portuguese endings only, so each of these finds nothing, and a correction
searched that way is written beside the fact it contradicts. Here such a term is given the words
of memory's own vocabulary it is near:

- the same word but for its accents, in any script (`ελληνικα` ~ `ελληνικά`, `и` ~ `й`);
- one typo in a word of at least TYPO_MIN letters: a letter left out, added, changed, or two
  neighbours swapped (`deplyo` ~ `deploy`), after the first letter;
- another inflection: the two words share a beginning of at least STEM_MIN letters and differ
  only in their last few (`клиенты` ~ `клиент`, `Datenbanken` ~ `Datenbank`).

Only where nothing better matches: when the query's words as typed find nothing worth returning
(gate.search.fulltext's judgement), and only for a term memory holds in no form. A word memory has
is never widened, and a query that finds its subject as typed is never diluted (the owner's
whole sentence, searched beside the agent's terms, holds words memory has never seen). The near words count as the term's other forms
(gate.search.fulltext's tier "forms"), never as the word itself. Every candidate shares the term's first
letter (up to its accent): a typo there is not looked for, which keeps the lookup to one range of
the vocabulary. The rules are the usual ones of spelling correction (edit distance one,
Damerau's transposition), chosen before any benchmark was run and not tuned on one.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Callable, Iterable

TYPO_MIN = 5  # letters: below it one typo turns too many words into others (`test` ~ `text`)
STEM_MIN = 4  # letters two inflections must share
ENDING_LONGER = 3  # letters after the shared beginning, at most, in the longer word
ENDING_SHORTER = 1  # ... and in the shorter one
SHARED_SHARE = 0.75  # of the longer word, at least, the shared beginning (`config` is not `confirm`)
MOST = 4  # near words a term takes, the most common first


def bare(word: str) -> str:
    """The word without any accent or other combining mark, in any script."""
    return "".join(ch for ch in unicodedata.normalize("NFD", word) if not unicodedata.combining(ch))


@functools.cache
def _accented() -> dict[str, str]:
    """For each letter that has accented forms, those forms (`и` -> `й`), across the letters of
    the Basic Multilingual Plane below the CJK blocks; made once, about 10 ms."""
    found: dict[str, list[str]] = {}
    for code in range(0x00C0, 0x2000):
        ch = chr(code)
        if not ch.isalpha() or ch != ch.lower():
            continue
        base = bare(ch)
        if base != ch and len(base) == 1:
            found.setdefault(base, []).append(ch)
    return {base: "".join(forms) for base, forms in found.items()}


def first_letters(word: str) -> list[str]:
    """The letters a word near `word` may begin with: its first, bare, and its accented forms."""
    base = bare(word[:1])
    return sorted({word[:1], base, *_accented().get(base, "")})


def near(word: str, other: str) -> bool:
    """Whether `other` is `word` up to its accents, one typo, or another inflection (both as the
    index holds them: lower case, folded)."""
    if word == other:
        return False
    a, b = bare(word), bare(other)
    if a == b:
        return True
    if not (a.isalpha() and b.isalpha()):
        return False  # identifiers, versions and numbers are found as typed or not at all
    if min(len(a), len(b)) >= TYPO_MIN and _one_edit(a, b):
        return True
    shared = _shared_beginning(a, b)
    shorter, longer = sorted((len(a), len(b)))
    return (
        shared >= STEM_MIN
        and shared >= SHARED_SHARE * longer
        and longer - shared <= ENDING_LONGER
        and shorter - shared <= ENDING_SHORTER
    )


def _shared_beginning(a: str, b: str) -> int:
    count = 0
    for x, y in zip(a, b):
        if x != y:
            break
        count += 1
    return count


def _one_edit(a: str, b: str) -> bool:
    """Whether one letter left out, added, changed, or two neighbours swapped turns a into b."""
    if abs(len(a) - len(b)) > 1:
        return False
    start = _shared_beginning(a, b)
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    rest_a, rest_b = a[start : len(a) - end], b[start : len(b) - end]
    if len(rest_a) + len(rest_b) <= 2 and max(len(rest_a), len(rest_b)) <= 1:
        return True  # one changed, added or left out
    return len(rest_a) == len(rest_b) == 2 and rest_a == rest_b[::-1]


def words_near(word: str, vocabulary: Callable[[str], Iterable[tuple[str, int]]]) -> tuple[str, ...]:
    """The words of memory near `word`, those most facts hold first, at most MOST.
    `vocabulary(letter)` gives memory's words beginning with `letter` and how many facts hold each."""
    found: list[tuple[int, str]] = []
    for letter in first_letters(word):
        found += [(-docs, other) for other, docs in vocabulary(letter) if docs and near(word, other)]
    return tuple(other for _, other in sorted(found)[:MOST])
