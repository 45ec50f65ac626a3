"""Which other words a query term also finds: the abbreviations developers write, and word forms
sharing a stem.

The index does not stem (a stemmer is language-specific and memory holds several languages), so
the query asks for the forms itself: `k8s` ~ `kubernetes` from a short dictionary, `hooks` ~
`hook` and `deploy` ~ `deployment` from a stem the forms share. An abbreviation earns its place
here by how commonly developers write it, never by a benchmark's query (docs/search.md).
"""

from __future__ import annotations

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


def exact(word: str) -> tuple[str, ...]:
    """The word and the forms that count as it exactly: its expansions when it is a known
    abbreviation, its abbreviations when it is a known long form."""
    return (word, *ABBREVIATIONS.get(word, ()), *_EXPANDED_FROM.get(word, ()))


def stem(word: str) -> str | None:
    """A prefix the word's other forms share, or None for a word too short to guess at."""
    if not word.isalpha() or len(word) < _MIN_STEM:
        return None
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM:
            return word[: -len(suffix)]
    return word
