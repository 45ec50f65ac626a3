"""Finding and redacting credentials: every match of a shape whose check holds, unless harmless.

gate.credentials answers first, and comes here only for a text that could hold a credential
(gate.credentials.triggers), and runs only the shapes whose match the text could hold
(gate.credentials.needs); gate.credentials.shapes holds the shapes, gate.credentials.values
what a value must look like, gate.credentials.harmless the matches safe to keep after all (keys
public by design, a sealed secret's ciphertext). May import: the standard library only.
"""

from gate.credentials import needs
from gate.credentials.harmless import harmless
from gate.credentials.providers import UNLISTED
from gate.credentials.records import csv_hits, insert_hits, netrc_hits
from gate.credentials.sentences import ID_KEYS
from gate.credentials.shapes import (
    _ASSIGNMENTS,
    _LATE,
    _SHAPES,
    _check_assignment,
    _digest,
    _pattern,
)
from gate.credentials.triggers import longest_run, present as _present
from gate.credentials.values import (
    _HASH_WORDS,
    _Near,
    _words,
    literal,
    random_looking,
)

# -- finding and redacting ------------------------------------------------------------------------

# The longest value of a setting searched again for an assignment inside it.
NESTED_MAX = 256
# A markdown table column whose header holds one of these words holds secrets in its cells.
_TABLE_PASSWORDS = frozenset(("password", "passwd", "pwd", "senha", "pass"))
_TABLE_KEYS = frozenset(("secret", "segredo", "token", "key", "chave", "credential", "credencial", "value", "valor"))
# Every trigger (gate.credentials.triggers files them, with each one's need; a test keeps the two equal).
_TRIGGERS = (
    frozenset(trigger for _, triggers, _, _ in _SHAPES + _ASSIGNMENTS + _LATE for trigger in triggers)
    | _TABLE_PASSWORDS
    | _TABLE_KEYS
)


def _fitting(found: tuple[tuple[int, tuple[str, ...]], ...], shapes: list) -> tuple[tuple[int, tuple[str, ...]], ...]:
    """What each shape's match must hold (gate.credentials.needs), or nothing for any shape when
    their count is not the shapes' (a shape added without its needs is still run on every text)."""
    return found if len(found) == len(shapes) else ((0, ()),) * len(shapes)


# A shape is neither compiled nor run on a text whose runs are all shorter than its match's, or
# that holds none of the strings one of which its match holds.
_SHAPE_NEEDS = _fitting(needs.SHAPES, _SHAPES)
_ASSIGNMENT_NEEDS = _fitting(needs.ASSIGNMENTS, _ASSIGNMENTS)
_LATE_NEEDS = _fitting(needs.LATE, _LATE)


# Groups whose shapes' checks are also given the match: the value is judged by its user, flag or prefix.
_WITH_MATCH = frozenset(("user", "flag", "prefix", "label"))


def _holds_one(text: str, strings: tuple[str, ...]) -> bool:
    return not strings or any(string in text for string in strings)


def _shape_hits(
    text: str,
    present: set[str],
    shapes: list[tuple[str, tuple[str, ...], str, object]],
    held: tuple[tuple[int, tuple[str, ...]], ...],
    longest: int,
):
    """(start, end, kind) of the matches of `shapes` whose check holds."""
    for (kind, triggers, source, check), (run, strings) in zip(shapes, held):
        if present.isdisjoint(triggers) or run > longest or not _holds_one(text, strings):
            continue
        for match in _pattern(source).finditer(text):
            span = match.span("value") if "value" in match.re.groupindex and match.group("value") else match.span()
            value = text[span[0] : span[1]]
            if isinstance(check, _Near):
                ok = check(value, text, match.start())
            elif not _WITH_MATCH.isdisjoint(match.re.groupindex):
                ok = check(value, match)  # type: ignore[operator]
            else:
                ok = check is None or check(value)  # type: ignore[operator]
            if ok:
                yield span[0], span[1], kind


def _hits(text: str, present: set[str] | None = None, *, first: bool = False):
    """(start, end, kind) of every credential in `text`, in the order of the shapes: each match
    of a shape unless its value is harmless after all (a public key, a sealed secret)."""
    for start, end, kind in _matches(text, present):
        if not harmless(text, start, end):
            yield start, end, kind


def _matches(text: str, present: set[str] | None = None):
    """(start, end, kind) of every match of a shape whose check holds, lazily. `present`: the
    triggers the text holds, when the caller has them already (gate.credentials)."""
    low = text.lower()
    if present is None:
        present = _present(low)
    if not present:
        return
    longest = longest_run(text)
    for hit in _shape_hits(text, present, _SHAPES, _SHAPE_NEEDS, longest):
        yield hit
    for (kind, triggers, source, how), (run, strings) in zip(_ASSIGNMENTS, _ASSIGNMENT_NEEDS):
        if present.isdisjoint(triggers) or run > longest or not _holds_one(text, strings):
            continue
        pattern, at = _pattern(source), 0
        while (match := pattern.search(text, at)) is not None:
            quoted = "qvalue" in match.re.groupindex and match.group("qvalue") is not None
            group = "qvalue" if quoted else "value"
            value = match.group(group)
            name = match.group("name") if "name" in match.re.groupindex else None
            if value and _check_assignment(how, value, quoted, name):
                start, end = match.span(group)
                if not quoted and how != "name":
                    end = start + len(value.rstrip(".)"))
                yield start, end, kind
                at = max(match.end(), at + 1)
            else:
                # `note: password=hunter2` is a setting `note` whose value is no secret, and also,
                # inside that value, the assignment `password=hunter2`: look again from where the
                # value starts when it holds one. Only inside a value of a setting's length: in
                # `key=key=key=…` every look would span the rest of the text (quadratic time, a
                # 200,000-character paste hung the prompt hook).
                nested = value and "=" in value and len(value) <= NESTED_MAX
                inner = match.start(group) if nested else match.end()
                at = max(inner, match.start() + 1)
    if "|" in text and not present.isdisjoint(_TABLE_PASSWORDS | _TABLE_KEYS):
        for hit in _table_hits(text):
            yield hit
    if "," in text and not present.isdisjoint(_TABLE_PASSWORDS | _TABLE_KEYS):
        yield from csv_hits(text)
        if "insert" in low:
            yield from insert_hits(text)
    if "machine" in low and "password" in low:
        yield from netrc_hits(text)
    for hit in _shape_hits(text, present, _LATE, _LATE_NEEDS, longest):
        yield hit


def _table_hits(text: str):
    """(start, end, kind) of each secret in a markdown table's password or key column: a header
    row, a `|---|` row, then cells checked as a password's or a key's value."""
    columns: dict[int, bool | None] = {}  # column -> passwords (True), keys (False), a product's keys (None)
    at, previous = 0, None
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        cells = stripped.strip("|").split("|") if stripped.startswith("|") else None
        if cells and previous and all(set(cell.strip()) <= set("-: ") and cell.strip() for cell in cells):
            columns = {}
            for index, head in enumerate(previous):
                words = set(_words(head))
                if not words.isdisjoint(_TABLE_PASSWORDS):
                    columns[index] = True
                elif not words.isdisjoint(_TABLE_KEYS):
                    columns[index] = _named_key(_words(head))
        elif cells and columns:
            offset = at + line.index("|") + 1
            for index, cell in enumerate(cells):
                quoted = cell.strip().startswith("`")
                value = cell.strip().strip("`")
                if (
                    index in columns
                    and value
                    and (
                        literal(value, password=True) and (quoted or not any(ch.isspace() for ch in value))
                        if columns[index]
                        else (random_looking(value) and (columns[index] is None or not _digest(value)))
                        or _symbol_password(value)
                    )
                ):
                    start = offset + cell.index(value)
                    yield start, start + len(value), "a secret in a table"
                offset += len(cell) + 1
        elif not cells:
            columns = {}
        previous = cells
        at += len(line)


def _named_key(words: list[str]) -> bool | None:
    """None for a key column titled as a product's key or a signing secret (`Snyk token`, `JWT
    signing secret`), whose cells may be hex or a UUID; False for a bare one (`Key`, `Token`) or
    an id's or a hash's key (`Cache key`, `Commit hash key`, `Public key`), whose cells may not."""
    if len(words) < 2 or words[-1] not in ("key", "token", "secret", "chave", "segredo"):
        return False
    if any(word.strip(" _-") in words for word in _HASH_WORDS) or "public" in words or words[-2] in ID_KEYS:
        return False if words[-1] != "secret" else None
    return None


def _symbol_password(value: str) -> bool:
    """A cell of a key column that is a password: a digit and a symbol in one word (`Ipe#Amarelo9`),
    not a place (`1Password`, `vault/prod`)."""
    return (
        any(ch.isdigit() for ch in value)
        and any(ch in "!@#$%^&*?+=~" for ch in value)
        and not any(ch.isspace() for ch in value)
        and literal(value, password=True)
    )


def find(text: str, present: set[str] | None = None) -> str | None:
    """The kind of credential `text` seems to hold ("a GitHub token"), or None."""
    for _, _, kind in _hits(text, present, first=True):
        return kind
    return None


def marker(kind: str) -> str:
    """What stands in a redacted text where a credential of this kind was."""
    return "[redacted: " + kind.split(" ", 1)[1] + "]"


def redact(text: str, present: set[str] | None = None) -> str:
    """`text` with every credential replaced by a marker naming its kind; else `text` itself.
    `present`: the triggers the text holds, when the caller has them already."""
    if not isinstance(text, str) or not text:
        return text
    spans = sorted(_hits(text, present), key=lambda hit: (hit[0], -hit[1]))
    if not spans:
        return text
    merged: list[list] = []
    for start, end, kind in spans:
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
            if merged[-1][2] == UNLISTED:  # `GH_TOKEN_ghp_...`: the GitHub token's name, not the guess's
                merged[-1][2] = kind
        else:
            merged.append([start, end, kind])
    parts, at = [], 0
    for start, end, kind in merged:
        parts += [text[at:start], marker(kind)]
        at = end
    parts.append(text[at:])
    return "".join(parts)


def redact_echo(text: str) -> str:
    """`redact`, and any machine-made-looking run of 20 characters or more too: for a refusal that
    quotes a bad value back, where a bare key with nothing around it to name it (a 40-character
    AWS secret sent as a date) must not be shown either, and nothing useful is lost."""
    text = redact(text)
    if not any(ch.isdigit() for ch in text):
        return text
    return _pattern(r"[A-Za-z0-9+/=_.~-]{20,}").sub(
        lambda match: "[redacted: random-looking value]" if random_looking(match.group()) else match.group(), text
    )
