"""Safe FTS5 expressions, and their PostgreSQL tsquery twins, from whatever the agent typed.
Pure: no database here.

Raw text in MATCH either breaks (`C++`, `node.js`, `it's`, a lone `*` or `(`) or silently changes
meaning (`-O2` and `topic:deploy` are column filters, upper-case `NOT` is an operator). So the
text is cut into words exactly as the index cuts it (gate.engine.tokens), stop words and duplicates are
dropped, and every word reaches MATCH double-quoted, which FTS5 always reads as a plain string.

A search asks FTS5 for the facts that hold any form of any term (`Query.expression`): each term
as typed, as a known abbreviation or expansion, and as any word sharing its stem (the forms are
gate.search.forms's). FTS5 ranks them by bm25; gate.search.fulltext
then judges which of them are worth the agent's context. The expression names every phrase's term
(`owners`), so that the judgement knows which terms each candidate holds.

A team's memory on PostgreSQL (gate.engine.postgres) stores the same words, and
`Query.tsquery` renders the same phrases, in the same numbering, as tsquery text: the same query
finds the same facts on both engines (tests/test_postgres.py holds them equal).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

from gate.engine import teamwords, tokens
from gate.search import forms, stopwords

MAX_TERMS = 12
# A query is a few keywords: only this much of what the agent typed is read, so that a pasted
# megabyte costs a search no more than a sentence.
MAX_INPUT = 2000


def quote(word: str) -> str:
    """A string FTS5 reads as plain text whatever it holds."""
    return '"' + word.replace('"', '""') + '"'


class Phrase(NamedTuple):
    """One phrase of an expression, engine-neutral: its words as the index holds them, whether
    the last is a prefix (a stem), and whether it is looked up in the CJK spelling only."""

    words: tuple[str, ...]
    prefix: bool = False
    cjk: bool = False


@dataclass(frozen=True)
class Term:
    """One word of the query with the forms that count as finding it."""

    word: str
    forms: tuple[str, ...]
    prefix: str | None
    cjk: bool = False
    # Words memory holds that this term nearly is (gate.search.spelling), given only to a term
    # memory holds in no form: found as its other forms, never as the word itself.
    near: tuple[str, ...] = ()

    def phrases(self) -> list[tuple[str, bool]]:
        """The FTS5 phrases that find this term, each saying whether it is an exact form (as
        typed, or a known abbreviation or expansion) or any word sharing the term's stem."""
        if self.cjk:
            return [("cjk : " + quote(" ".join(self.word)), True)]
        exact = [(quote(form), True) for form in self.forms]
        stem = [] if self.prefix is None else [(quote(self.prefix) + "*", False)]
        return [*exact, *stem, *((quote(word), False) for word in self.near)]

    def structure(self) -> list[Phrase]:
        """The phrases of `phrases`, in the same order, as Phrase."""
        if self.cjk:
            return [Phrase(tuple(self.word), cjk=True)]
        exact = [Phrase(tuple(tokens.words(form) or [form])) for form in self.forms]
        stem = [] if self.prefix is None else [Phrase((self.prefix,), prefix=True)]
        return [*exact, *stem, *(Phrase((word,)) for word in self.near)]

    def tsphrases(self) -> list[tuple[str, bool]]:
        """The same phrases, in the same order, as PostgreSQL tsquery text over the words
        gate.engine.postgres stores (gate.engine.tokens', the CJK spelling at weight C)."""
        return [(teamwords.phrase_text(*shape), same) for shape, (_, same) in zip(self.structure(), self.phrases())]


class Expression(NamedTuple):
    """An FTS5 MATCH expression (or its tsquery twin) and, for each of its phrases in FTS5's
    numbering (left to right), the index of the term it stands for, whether it is an exact form
    of it, and the phrase itself."""

    text: str
    owners: tuple[int, ...]
    exact: tuple[bool, ...]
    phrases: tuple[Phrase, ...] = ()
    # Whether a fact must hold some phrase of every term (AND), not of any (OR).
    every: bool = False


@dataclass(frozen=True)
class Query:
    terms: tuple[Term, ...]

    def __bool__(self) -> bool:
        return bool(self.terms)

    def expression(self, *, every: bool = False, exact_only: bool = False) -> Expression | None:
        """Facts that hold any form of any term, or with `every` some form of every term (with
        `exact_only` too, every term as typed or as a known abbreviation); None when there is
        nothing to search for."""
        return self._render(Term.phrases, " OR ", " AND " if every else " OR ", every, exact_only, every)

    def tsquery(self, *, every: bool = False, exact_only: bool = False) -> Expression | None:
        """`expression` for PostgreSQL: the same facts, the same phrases in the same numbering
        (owners, exact), as tsquery text."""
        return self._render(Term.tsphrases, " | ", " & " if every else " | ", True, exact_only, every)

    def _render(
        self, phrases_of, either: str, join: str, group: bool, exact_only: bool, every: bool
    ) -> Expression | None:
        """One expression: each term's phrases joined by `either` (in brackets when `group` and
        there are several), the terms by `join`."""
        groups: list[str] = []
        owners: list[int] = []
        exact: list[bool] = []
        shapes: list[Phrase] = []
        for index, term in enumerate(self.terms):
            found = [
                (text, same, shape)
                for (text, same), shape in zip(phrases_of(term), term.structure())
                if same or not exact_only
            ]
            joined = either.join(text for text, _, _ in found)
            groups.append(f"({joined})" if group and len(found) > 1 else joined)
            owners += [index] * len(found)
            exact += [same for _, same, _ in found]
            shapes += [shape for _, _, shape in found]
        if not groups:
            return None
        return Expression(join.join(groups), tuple(owners), tuple(exact), tuple(shapes), every)

    def widened(self, near: dict[int, tuple[str, ...]]) -> Query:
        """The same query, the terms at these indexes given these near words."""
        return Query(
            tuple(replace(term, near=near[index]) if index in near else term for index, term in enumerate(self.terms))
        )

    def without(self, drop: set[int]) -> Query:
        """The same query minus the terms at these indexes."""
        return Query(tuple(term for index, term in enumerate(self.terms) if index not in drop))


def _term(word: str) -> Term:
    return Term(word=word, forms=forms.exact(word), prefix=forms.stem(word))


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
