"""Credentials that must never become memory, nor anything memory-gate writes or echoes.

Facts are stored in plain text, shown to every later session and kept in write.log: a key that
lands there has leaked for good. So a write whose text carries something shaped like a credential
is refused (`find`, naming the kind of secret without echoing it), and every other text memory-gate
keeps or repeats (the owner's prompt in the ledger and in write.log, refusals that quote a bad
value, search results, hook warnings, the command line's printouts of old data) goes through
`redact`, which puts `[redacted: <what>]` where each credential was.

Detection is by shape: provider token formats (unambiguous prefixes and lengths), private key
blocks, JWTs, credentials in URLs, headers and command lines, and `password=`-style assignments
or prose ("the password is ...") whose value is a literal rather than a reference (`$VAR`,
`${VAR}`, `<placeholder>`, `***`, `sk-...`, `os.environ[...]`, `!vault`, `op://...`). Talking
*about* secrets ("the token lives in 1Password", "rotate PASSWORD yearly", "keys start with
AKIA") stays allowed. bench/credentials.py measures both kinds of error on a labelled set.

This package is on the hooks' per-turn path (the prompt is redacted before the ledger stores it).
Here, the front: `find` and `redact` first ask gate.credentials.triggers whether any shape could
match (a trigger, and a run of token characters as long as that trigger's shapes need), which
an ordinary prompt answers no to in a few substring tests; only then is gate.credentials.detector,
with the shapes, and `re` imported, and the shapes compiled. The answer is the detector's either
way: a text the front lets by is one on which no shape can match. May import: the standard library
only (part of the ground floor).
"""

from gate.credentials.triggers import present, quiet


def triggered(text: str) -> bool:
    """Whether `text` holds a trigger of any shape (else no regex need run, nor `re` be imported)."""
    return bool(present(text.lower()))


def find(text: str) -> str | None:
    """The kind of credential `text` seems to hold ("a GitHub token"), or None."""
    found = present(text.lower())
    if quiet(text, found):
        return None
    from gate.credentials import detector

    return detector.find(text, found)


def marker(kind: str) -> str:
    """What stands in a redacted text where a credential of this kind was."""
    from gate.credentials import detector

    return detector.marker(kind)


def redact(text: str) -> str:
    """`text` with every credential replaced by a marker naming its kind; else `text` itself."""
    if not isinstance(text, str) or not text:
        return text
    found = present(text.lower())
    if quiet(text, found):
        return text
    from gate.credentials import detector

    return detector.redact(text, found)


def redact_echo(text: str) -> str:
    """`redact`, and any machine-made-looking run of 20 characters or more too: for a refusal that
    quotes a bad value back, where a bare key with nothing around it to name it (a 40-character
    AWS secret sent as a date) must not be shown either, and nothing useful is lost."""
    from gate.credentials import detector

    return detector.redact_echo(text)


def redact_json(value):
    """A JSON-shaped value (dicts, lists, strings) with every string in it redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: redact_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_json(item) for item in value]
    return value
