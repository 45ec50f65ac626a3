"""Safe FTS5 expressions from whatever the agent typed. Pure: no database here.

Raw text in MATCH either breaks (`C++`, `node.js`, `it's`, a lone `*` or `(`) or silently changes
meaning (`-O2` and `topic:deploy` are column filters, upper-case `NOT` is an operator). So the
text is cut into words exactly as the index cuts it (gate/text.py), stop words and duplicates are
dropped, and every word reaches MATCH double-quoted, which FTS5 always reads as a plain string.

A search runs in tiers, each only while the ones before found fewer than the 30 candidates
wanted, and every tier ranks below the one before it:

1. exact: every term, as typed or as a known abbreviation/expansion (`k8s` ~ `kubernetes`);
2. forms: every term, also as a word form sharing its stem (`hooks` ~ `hook`, `deploy` ~
   `deployment`), since the index does not stem (a stemmer is language-specific and memory holds
   several languages);
3. loose: at least half of the terms. A fact that shares one word with a query of several is a
   poor match, so the expression asks for every group of half the terms (any one of two, any two
   of three or four), and gate/search.py keeps a candidate only when the terms it shares carry at
   least half the weight of the query's words that memory holds at all. Groups rather than a
   plain OR also keep the tier cheap: bm25 runs only for facts that hold a whole group.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from gate import stopwords, text

MAX_TERMS = 12
# A query is a few keywords: only this much of what the agent typed is read, so that a pasted
# megabyte costs a search no more than a sentence.
MAX_INPUT = 2000
# The loose tier combines at most this many terms (20 groups of 3): the query's most telling.
MAX_LOOSE = 6
_MIN_STEM = 4

# Abbreviation -> what it abbreviates, for the words developers shorten most. A query for the
# abbreviation finds the long forms; a query for a long form finds the abbreviation, not the
# other long forms (`authentication` must not find `authorization`).
ABBREVIATIONS: dict[str, tuple[str, ...]] = {
    "a11y": ("accessibility",),
    "app": ("application",),
    "async": ("asynchronous",),
    "auth": ("authentication", "authorization"),
    "authn": ("authentication",),
    "authz": ("authorization",),
    "bd": ("banco de dados", "base de dados"),
    "cfg": ("configuration", "config"),
    "ci": ("continuous integration",),
    "cli": ("command line",),
    "config": ("configuration",),
    "db": ("database",),
    "dbs": ("databases",),
    "dep": ("dependency",),
    "deps": ("dependencies",),
    "dev": ("development",),
    "dir": ("directory",),
    "docs": ("documentation",),
    "e2e": ("end to end",),
    "env": ("environment",),
    "gh": ("github",),
    "i18n": ("internationalization", "internationalisation"),
    "impl": ("implementation",),
    "infra": ("infrastructure",),
    "js": ("javascript",),
    "k8s": ("kubernetes",),
    "l10n": ("localization", "localisation"),
    "lib": ("library",),
    "mongo": ("mongodb",),
    "msg": ("message",),
    "perf": ("performance",),
    "pg": ("postgresql", "postgres"),
    "pkg": ("package",),
    "postgres": ("postgresql",),
    "pr": ("pull request",),
    "prod": ("production",),
    "py": ("python",),
    "repo": ("repository",),
    "repos": ("repositories",),
    "tf": ("terraform",),
    "ts": ("typescript",),
    "ui": ("user interface",),
}

_EXPANDED_FROM: dict[str, tuple[str, ...]] = {}
for _short, _longs in ABBREVIATIONS.items():
    for _long in _longs:
        if " " not in _long:
            _EXPANDED_FROM[_long] = (*_EXPANDED_FROM.get(_long, ()), _short)

# Word endings stripped to find a stem shared by a word's forms, English and Portuguese (folded),
# longest first. "er" is left out on purpose: server, docker and container are not verb forms.
_SUFFIXES = tuple(
    sorted(
        """
        izations ization ations ation ments ment ness ings ing ions ion ities ity ances ance
        ences ence ies ied es ed ly s
        acoes acao icoes icao mentos mento mente idades idade ados adas ado ada idos idas ido ida
        ando endo indo ar ir oes ao os as
        """.split(),
        key=len,
        reverse=True,
    )
)


def quote(word: str) -> str:
    """A string FTS5 reads as plain text whatever it holds."""
    return '"' + word.replace('"', '""') + '"'


def stem(word: str) -> str | None:
    """A prefix the word's other forms share, or None for a word too short to guess at."""
    if not word.isalpha() or len(word) < _MIN_STEM:
        return None
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM:
            return word[: -len(suffix)]
    return word


@dataclass(frozen=True)
class Term:
    """One word of the query with the forms that count as finding it."""

    word: str
    forms: tuple[str, ...]
    prefix: str | None
    cjk: bool = False

    def exact(self) -> str:
        if self.cjk:
            return "cjk : " + quote(" ".join(self.word))
        quoted = [quote(form) for form in self.forms]
        return quoted[0] if len(quoted) == 1 else "(" + " OR ".join(quoted) + ")"

    def loose_phrases(self) -> list[str]:
        if self.cjk:
            return [self.exact()]
        if self.prefix is None:
            return [quote(form) for form in self.forms]
        # The prefix already covers every form that starts with it.
        others = [quote(form) for form in self.forms if not form.startswith(self.prefix)]
        return [*others, quote(self.prefix) + "*"]

    def loose(self) -> str:
        phrases = self.loose_phrases()
        return phrases[0] if len(phrases) == 1 else "(" + " OR ".join(phrases) + ")"


class Tier(NamedTuple):
    name: str
    expression: str
    owners: tuple[int, ...] = ()


@dataclass(frozen=True)
class Query:
    terms: tuple[Term, ...]

    def __bool__(self) -> bool:
        return bool(self.terms)

    def tiers(self, loose_order: Sequence[int] | None = None) -> list[Tier]:
        """The tiers worth running, best first. `loose_order` lists the term indexes that the
        loose tier may pair, most telling first (default: all, in order)."""
        if not self.terms:
            return []
        exact = " AND ".join(term.exact() for term in self.terms)
        found = [Tier("exact", exact)]
        forms = " AND ".join(term.loose() for term in self.terms)
        if forms != exact:
            found.append(Tier("forms", forms))
        chosen = list(range(len(self.terms)) if loose_order is None else loose_order)[:MAX_LOOSE]
        if len(chosen) >= 2:
            found.append(self._loose(chosen))
        return found

    def _loose(self, chosen: list[int]) -> Tier:
        """Facts that hold at least half of the chosen terms: the OR of the AND of every such
        group. FTS5 numbers the phrases left to right; `owners` maps each back to its term."""
        size = (len(chosen) + 1) // 2
        parts, owners = [], []
        for group in itertools.combinations(chosen, size):
            terms = [self.terms[index] for index in group]
            parts.append(" AND ".join(term.loose() for term in terms))
            owners += [index for index, term in zip(group, terms) for _ in term.loose_phrases()]
        if size > 1:
            parts = [f"({part})" for part in parts]
        return Tier("loose", " OR ".join(parts), tuple(owners))

    def without(self, drop: set[int]) -> Query:
        """The same query minus the terms at these indexes."""
        return Query(tuple(term for index, term in enumerate(self.terms) if index not in drop))


def _term(word: str) -> Term:
    forms = (word, *ABBREVIATIONS.get(word, ()), *_EXPANDED_FROM.get(word, ()))
    return Term(word=word, forms=forms, prefix=stem(word))


def parse(typed: str, *, max_terms: int = MAX_TERMS) -> Query:
    """The query for the agent's text: never raises, may be empty (nothing to search for)."""
    words: list[tuple[str, bool]] = []
    for token in text.tokens(typed[:MAX_INPUT]):
        words.extend((part if cjk else text.fold(part), cjk) for part, cjk in text.segments(token))
    unique: list[tuple[str, bool]] = []
    for word in words:
        if word not in unique:
            unique.append(word)
    meaningful = [(word, cjk) for word, cjk in unique if cjk or word not in stopwords.ALL]
    chosen = meaningful or unique
    terms = [
        Term(word=word, forms=(word,), prefix=None, cjk=True) if cjk else _term(word)
        for word, cjk in chosen[:max_terms]
    ]
    return Query(tuple(terms))
