"""Safe FTS5 expressions from whatever the agent typed. Pure: no database here.

Raw text in MATCH either breaks (`C++`, `node.js`, `it's`, a lone `*` or `(`) or silently changes
meaning (`-O2` and `topic:deploy` are column filters, upper-case `NOT` is an operator). So the
text is cut into words exactly as the index cuts it (gate/engine/tokens.py), stop words and duplicates are
dropped, and every word reaches MATCH double-quoted, which FTS5 always reads as a plain string.

A search asks FTS5 for the facts that hold any form of any term (`Query.expression`): each term
as typed, as a known abbreviation or expansion (`k8s` ~ `kubernetes`), and as any word sharing its
stem (`hooks` ~ `hook`, `deploy` ~ `deployment`), since the index does not stem (a stemmer is
language-specific and memory holds several languages). FTS5 ranks them by bm25; gate/search/search.py
then judges which of them are worth the agent's context. The expression names every phrase's term
(`owners`), so that the judgement knows which terms each candidate holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from gate.engine import tokens
from gate.search import stopwords

MAX_TERMS = 12
# A query is a few keywords: only this much of what the agent typed is read, so that a pasted
# megabyte costs a search no more than a sentence.
MAX_INPUT = 2000
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

    def phrases(self) -> list[tuple[str, bool]]:
        """The FTS5 phrases that find this term, each saying whether it is an exact form (as
        typed, or a known abbreviation or expansion) or any word sharing the term's stem."""
        if self.cjk:
            return [("cjk : " + quote(" ".join(self.word)), True)]
        exact = [(quote(form), True) for form in self.forms]
        if self.prefix is None:
            return exact
        return [*exact, (quote(self.prefix) + "*", False)]


class Expression(NamedTuple):
    """An FTS5 MATCH expression and, for each of its phrases in FTS5's numbering (left to
    right), the index of the term it stands for and whether it is an exact form of it."""

    text: str
    owners: tuple[int, ...]
    exact: tuple[bool, ...]


@dataclass(frozen=True)
class Query:
    terms: tuple[Term, ...]

    def __bool__(self) -> bool:
        return bool(self.terms)

    def expression(self, *, every: bool = False, exact_only: bool = False) -> Expression | None:
        """Facts that hold any form of any term, or with `every` some form of every term (with
        `exact_only` too, every term as typed or as a known abbreviation); None when there is
        nothing to search for."""
        groups: list[str] = []
        owners: list[int] = []
        exact: list[bool] = []
        for index, term in enumerate(self.terms):
            found = [phrase for phrase in term.phrases() if phrase[1] or not exact_only]
            joined = " OR ".join(phrase for phrase, _ in found)
            groups.append(f"({joined})" if every and len(found) > 1 else joined)
            owners += [index] * len(found)
            exact += [same for _, same in found]
        if not groups:
            return None
        return Expression((" AND " if every else " OR ").join(groups), tuple(owners), tuple(exact))

    def without(self, drop: set[int]) -> Query:
        """The same query minus the terms at these indexes."""
        return Query(tuple(term for index, term in enumerate(self.terms) if index not in drop))


def _term(word: str) -> Term:
    forms = (word, *ABBREVIATIONS.get(word, ()), *_EXPANDED_FROM.get(word, ()))
    return Term(word=word, forms=forms, prefix=stem(word))


def parse(typed: str, *, max_terms: int = MAX_TERMS) -> Query:
    """The query for the agent's text: never raises, may be empty (nothing to search for)."""
    words: list[tuple[str, bool]] = []
    for token in tokens.tokens(typed[:MAX_INPUT]):
        words.extend((part if cjk else tokens.fold(part), cjk) for part, cjk in tokens.segments(token))
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
