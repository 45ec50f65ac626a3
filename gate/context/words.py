"""The words of a request or a rule's description, as the hybrid classifier compares them.

A text becomes a set of keys: the stem of each word that says something (not a stop word, not
filler such as `fix` or `faz`), and `#topic` for each topic of gate.context.lexicon that a word or a
two-word phrase names. Text is folded first (lower case, accents off: `migração` is
`migracao`), so `migrations`, `migrate` and `migrating` share the stem `migr`, `testes` and
`tests` the stem `test`, and a Portuguese request meets an English description through the
topics. A phrase that names a topic (`design tokens`, `pull request`) uses up its words: `tokens`
there is not a secret. Version numbers (`18.2`), URL paths (`/orders`) and HTTP verbs written in
capitals (`DELETE /x`) get keys of their own, since they say what work it is.

The standard library only; the lexicon's index is built once per process on first use.
"""

from __future__ import annotations

import re
import unicodedata

from gate.context import lexicon

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*(?![\w.]*\w)")
_PATH = re.compile(r"(?<![\w/])/[a-z][\w{}\-]*", re.IGNORECASE)
_VERB = re.compile(r"\b(?:GET|POST|PUT|PATCH|DELETE)\b")
_LAUGHTER = re.compile(lexicon.LAUGHTER + r"\Z")
# One pass, the longest ending first; what is left keeps at least MIN_STEM letters.
_ENDINGS = frozenset(
    """
    ations ation itions ition ings ing ies ied ers ed es s ly ments ment ness able ible ity izes ized
    ize ises ised ise ate ates y
    coes cao amentos amento imentos imento ando endo indo ados adas idos idas ado ada ido ida
    agens agem dades dade ar er ir os as o a e
    """.split()
)
_LENGTHS = sorted({len(ending) for ending in _ENDINGS}, reverse=True)
MIN_STEM = 4

STOP = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been before being
    below between both but by can cannot could did didn do does doesn doing don down during each either
    else ever every few for from further get gets got had hadn has hasn have haven having he her here hers
    him his how however i if in into is isn it its itself just let ll me might more most must my no nor
    not now of off on once only or other our ours out over own re same shall she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up
    upon us ve very via was wasn we were weren what when where whether which while who whom whose why will
    with won would you your yours s t d m
    ao aos aquela aquelas aquele aqueles aquilo as ate com como contra cujo cuja da das de dela delas dele
    deles depois desde dessa dessas desse desses desta destas deste destes do dos e ela elas ele eles em
    entre era eram essa essas esse esses esta estao estas estava estavam este estes estou eu foi foram ha
    isso isto ja lhe lhes mais mas me mesmo meu meus minha minhas muito na nao nas nem no nos nossa
    nossas nosso nossos num numa o os ou para pela pelas pelo pelos por porque pra pro qual quais quando
    que quem se sem ser seu seus so sua suas tambem te tem tinha tinham um uma umas uns voce voces vos ta
    tao dai ai la vc
    """.split()
)


def fold(text: str) -> str:
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def stem(word: str) -> str:
    """A prefix the word's forms share, English and Portuguese alike (one ending cut)."""
    if len(word) <= MIN_STEM or not word.isalpha():
        return word
    for size in _LENGTHS:  # a set lookup per length: the lexicon's index stems every entry per process
        if len(word) - size >= MIN_STEM and word[-size:] in _ENDINGS:
            return word[:-size]
    return word


_INDEX: tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]] | None = None


def _index() -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """The lexicon's words and phrases to the topics they name, and their stems to the same."""
    global _INDEX
    if _INDEX is None:
        exact: dict[str, set[str]] = {}
        stems: dict[str, set[str]] = {}
        for topic, spelled in lexicon.TOPICS.items():
            for entry in spelled.split():
                entry = entry if entry.isascii() else fold(entry)  # the lexicon is written folded
                exact.setdefault(entry, set()).add(topic)
                if "_" not in entry and not entry.startswith("@"):
                    stems.setdefault(stem(entry), set()).add(topic)
        _INDEX = (
            {key: tuple(sorted(found)) for key, found in exact.items()},
            {key: tuple(sorted(found)) for key, found in stems.items()},
        )
    return _INDEX


def named(word: str) -> tuple[str, ...]:
    """The topics a (folded) word names: as spelled in the lexicon, else by its stem; a small-talk
    word only as spelled (`night` is not `nightly`)."""
    exact, stems = _index()
    if word in lexicon.SMALL_TALK:
        return exact.get(word, ())
    root = stem(word)
    return exact.get(word) or exact.get(root) or stems.get(root) or ()


class Keys:
    """What a text is about: `words` (each stem that says something, to the word that gave it)
    and `topics` (each topic, to the words that name it, as often as they occur)."""

    __slots__ = ("words", "topics", "work", "asks")

    def __init__(self, words: dict[str, str], topics: dict[str, list[str]], work: bool, asks: bool = False):
        self.words = words
        self.topics = topics
        self.work = work  # False: only small talk, laughter and stop words
        self.asks = asks  # a word that asks for something (lexicon.ASKING), or a version, path or verb


def keys(text: str) -> Keys:
    index = _index()[0]
    topics: dict[str, list[str]] = {}
    specials = []
    for pattern, key in ((_VERSION, "@version"), (_PATH, "@path"), (_VERB, "@verb")):
        for match in pattern.finditer(text):
            specials.append(key)
            for topic in index.get(key, ()):
                topics.setdefault(topic, []).append(match.group(0))
    folded = fold(_VERSION.sub(" ", text))
    tokens = _WORD.findall(folded)
    used = [False] * len(tokens)
    for at in range(len(tokens) - 1):
        phrase = tokens[at] + "_" + tokens[at + 1]
        phrased = index.get(phrase)
        if phrased:
            used[at] = used[at + 1] = True
            for topic in phrased:
                topics.setdefault(topic, []).append(f"{tokens[at]} {tokens[at + 1]}")
    words: dict[str, str] = {}
    for at in range(len(tokens) - 1):
        if used[at] and used[at + 1]:  # `e-mails` is also the word `emails`
            joined = tokens[at] + tokens[at + 1]
            words.setdefault(stem(joined), joined)
    for token, taken in zip(tokens, used):
        if taken or token in STOP or token in lexicon.FILLER or token.isdigit() or len(token) < 2:
            continue
        root = stem(token)
        for topic in named(token):
            topics.setdefault(topic, []).append(token)
        if token not in lexicon.SMALL_TALK and len(root) >= 3:
            words.setdefault(root, token)
    present = set(tokens)
    library = present & lexicon.LIBRARIES
    if library and (present & lexicon.UPDATE_VERBS or "@version" in specials):
        topics.setdefault("dependency", []).append(sorted(library)[0])
    # Filler is still a request ("try again", "do the same"); small talk and stop words alone are not.
    quiet = all(t in STOP or t in lexicon.SMALL_TALK or t.isdigit() or _LAUGHTER.match(t) for t in tokens)
    asks = bool(specials) or any(t in lexicon.ASKING or t in lexicon.CONTINUING for t in tokens)
    return Keys(words, topics, not quiet or bool(specials), asks)


def continuing(text: str) -> bool:
    """Whether the request says it goes on from the earlier ones ("the same", "também")."""
    return any(word in lexicon.CONTINUING for word in _WORD.findall(fold(text)))
