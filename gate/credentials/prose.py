"""Shapes read after the assignments, where a key's name stands some words before its value or on
the line above it: a question and its answer, "the new one is ...", a key alone on its line below a
line naming it, a user and a password given together in prose. Each is matched from the value and
its name looked for backwards (gate.credentials.values._Near), so a text repeating the name costs
linear time. Standard library only: on the hooks' path.
"""

from gate.credentials.sentences import ID_KEYS
from gate.credentials.values import (
    _HASH_WORDS,
    _Near,
    _password,
    _random_key,
    _wordy,
    hex_id,
    letters_password,
    passphrase,
    random_looking,
    seed_phrase,
)


def _lone_key(value: str) -> bool:
    return (
        _random_key(value)
        and not all(ch in "0123456789abcdefABCDEF" for ch in value.removeprefix("0x"))
        and not value.startswith("AAAA")
        and not _wordy(value)
    )


def _user_password(value: str) -> bool:
    """The password of a user-and-password pair: a password, not a word nor a product's name
    (`1Password`)."""
    value = value.rstrip(".,;)")
    letters = "".join(ch for ch in value if not ch.isdigit()).lower()
    if not _password(value) or letters in ("password", "passwords", "secret", "secrets", "vault") or len(value) < 8:
        return False
    # (not `dev-2024`: a symbol other than a dash, both cases and a digit, or a passphrase's words)
    return (
        any(not ch.isalnum() and ch != "-" for ch in value)
        or (value != value.lower() and any(ch.isdigit() for ch in value))
        or value.count("-") >= 2
        or letters_password(value)
        or value.isdigit()  # (eight digits or more: no year nor port)
        or random_looking(value)
    )


# Words that name a wallet's recovery phrase.
_SEED_WORDS = ("mnemonic", "seed", "semente", "recovery phrase", "recovery words", "wallet", "carteira")

# Shapes read after the assignments (so that `api_key: ...` is named an assignment): a value
# whose name stands before it on its line, some words away.
LATE_SHAPES: list[tuple[str, tuple[str, ...], str, object]] = [
    # A question naming a key, then the value as its answer: "what's the token again?\nit's ...".
    # (Matched from the question mark, the name looked for backwards on its line.)
    (
        "a key or token in prose",
        ("key", "token", "secret", "chave", "segredo", "credential", "pat"),
        r"(?i)\?[ \t]*(?:\n[ \t>]*)?(?:-+>|\u2192|:)?[ \t]*(?:(?:it'?s|it is|[\w']{1,12})(?:[ \t]*[:,!.-][ \t]*|[ \t]+))?"
        r"(?P<value>[A-Za-z0-9+/=_.~-]{16,}+)",
        _Near(
            ("key", "token", "secret", "chave", "segredo", "credential", "pat"),
            _random_key,
            50,
            unless=("public",),
            loose=(("token", "key", "secret", "chave", "senha", "password"), 10, random_looking),
        ),
    ),
    # A key named a few words before its value on the same line, after "is", ":", "to" or alone in
    # parentheses ("the Acme key for the demo (<value>)", not a call's `f(x)`): "I rotated the admin key
    # yesterday, the new one is ...", "using DEPLOY_TOKEN from the command line: ...". The value
    # is matched and the name looked for backwards (a pattern from the name on would try every
    # gap after each `key` of a `key=key=…` paste).
    (
        "a key or token in prose",
        ("key", "token", "secret", "chave", "segredo", "credential"),
        r"(?i)(?:(?:\bis|\bé|\bagora|:|=|->|\u2192|\bpara|\bpra|\bto)[ \t]+|(?<![\w.])\((?P<paren>)(?=[A-Za-z0-9+/=_~-]{16,}\)))"
        r"(?P<value>[A-Za-z0-9+/=_.~-]{16,}+)",
        _Near(
            ("key", "token", "secret", "chave", "segredo", "credential"),
            _random_key,
            80,
            unless=("public",),
            loose=(
                ("api key", "api token", "access token", "auth token", "server token", "secret key", "app key"),
                30,
                random_looking,
            ),
        ),
    ),
    # A machine-made value alone on its line (or after a chat's time and speaker; not after a YAML
    # or log key, `payment: pi_...`) below a line naming a
    # key: "[10:32] ana: segue o token da Vercel" then "[10:33] ana: <token>". Not hex (a hash or an
    # id), nor an SSH public key's base64 (`AAAA...`).
    (
        "a key or token in prose",
        ("key", "token", "secret", "chave", "segredo", "senha", "password"),
        r"(?m)^[ \t>]*(?:\[[^\]\n]{1,20}\][ \t]*(?:[\w.@-]{1,20}:[ \t]*)?)?(?P<value>[A-Za-z0-9+/=_.~-]{20,}+)[ \t]*$",
        _Near(
            ("key", "token", "secret", "chave", "segredo", "senha", "password"),
            _lone_key,
            120,
            lines=True,
            unless=("public", "pública", "fingerprint", "certificate", "certificado"),
        ),
    ),
    # A user and a password given together in prose: "creds for staging are deploy / <password>",
    # "o login do painel é admin / <senha>", "access to the VPN: ana / <password>".
    (
        "a password in prose",
        ("login", "creds", "credential", "credencia", "access", "acesso"),
        r"(?i)\b(?:logins?|creds|credentials|credenciais|access|acesso)\b[^\n]{0,40}?(?:\bis|\bare|\bé|\bsão|:|=|->|\u2192)[ \t]+"
        r"[\w.@+-]{1,40}(?:[ \t]+/[ \t]+|:(?=[^\s/]+(?:\s|$)))(?P<value>[^\s\"'`]+)",
        _user_password,
    ),
    # A machine-made value alone on its line, named on the line after it: a chat's "here you go" /
    # `<token>` / "(that's the Jenkins API token)". Hex only after a name of two words.
    (
        "a key or token in prose",
        ("key", "token", "secret", "chave", "segredo", "senha", "password", "pat"),
        r"(?m)^[ \t>]*(?P<value>[A-Za-z0-9+/=_.~-]{20,}+)[ \t]*\r?\n[ \t]*(?P<label>[^\n]{1,80})",
        lambda value, match: _labelled_key(value, match.group("label").lower()),
    ),
    # A machine-made value, then in the same sentence what it is: "try <key>? it's the Acme API
    # key", "<key> (that's the Acme token)". Hex only after a name of two words.
    (
        "a key or token in prose",
        ("it's", "it is", "that's", "that is", "this is", "é o", "é a"),
        r"(?i)(?<![\w+/=.~-])(?P<value>[A-Za-z0-9+/=_.~-]{20,}+)[?!.,;:]?[ \t]+\(?"
        r"(?:it'?s|it[ \t]+is|that'?s|that[ \t]+is|this[ \t]+is|é)[ \t]+(?P<label>(?:the|o|a)(?:[ \t]+[\w-]+){0,3}?[ \t]+(?:key|token|secret|chave|segredo)s?\b"
        r"(?:[ \t]+(?:d[aoe]s?|of)(?:[ \t]+[\w-]+){1,2})?)",
        lambda value, match: _labelled_key(value, match.group("label").lower()),
    ),
    # A key named, then its value to use: "I rotated the Acme API key; use <key> from now on".
    (
        "a key or token in prose",
        ("key", "token", "secret", "chave", "segredo"),
        r"(?i)(?P<label>\b(?:[\w-]+[ \t]+){0,3}(?:key|token|secret|chave|segredo))\b[ \t]*[;,:][ \t]*"
        r"(?:now[ \t]+|agora[ \t]+)?(?:use|usa|usem|use[ \t]+o|use[ \t]+a)[ \t]+(?P<value>[A-Za-z0-9+/=_.~-]{20,}+)",
        lambda value, match: _labelled_key(value.rstrip("."), match.group("label").lower()),
    ),
    # A question naming a password, then the password as its answer: "what's the wifi password?"
    # then "it's <password>", "a senha? é <senha>". Password-shaped only (`_user_password`), and the
    # mark ends a word (not a URL's query: `password@host/path?query#x`).
    (
        "a password in prose",
        ("password", "senha", "pw", "passwd", "passphrase"),
        r"(?i)\?(?:[ \t]*\n[ \t>]*|[ \t]+)(?:(?:-+>|\u2192|:)[ \t]*)?(?:(?:it'?s|it is|é|eh|is)[ \t]*:?[ \t]+)?"
        r"(?P<value>[^\s\"'`,;?]{6,64})",
        _Near(("password", "senha", "pw", "passwd", "passphrase"), _user_password, 60),
    ),
    # A passphrase of plain words, the rest of its line, after "password is:", "senha:", "-> ",
    # "mudou pra" or an unquoted .env line's `DB_PASSWORD=`: four lowercase words at least, none
    # a sentence's little words. (Matched from the verb, the name looked for backwards.)
    (
        "a password in prose",
        ("pass", "pw", "senha"),
        r"(?im)(?:\b(?:is|é)[ \t]*:?|:|=|->|\bmudou[ \t]+(?:para|pra)|\bchanged[ \t]+to)[ \t]*"
        r"(?P<value>[^\W\d_]{3,12}(?:[ ][^\W\d_]{3,12}){3,11})[ \t]*$",
        _Near(("password", "passphrase", "passwd", "senha", "pw ", "pw:", "pw=", "pwd"), passphrase, 50),
    ),
    # A wallet's recovery phrase: 12 to 24 short words after a word that says what they are.
    (
        "a wallet's seed phrase",
        _SEED_WORDS,
        r"(?<![\w-])(?P<value>[a-z]{3,8}(?: [a-z]{3,8}){11,23})(?![\w-])",
        _Near(_SEED_WORDS, seed_phrase, 200, lines=True),
    ),
]

_LABEL_WORDS = ("key", "token", "secret", "password", "senha", "chave", "segredo", "pat", "credential")
_TWO_WORDS = (
    "api key",
    "api token",
    "access token",
    "auth token",
    "private key",
    "secret key",
    "service token",
    "signing secret",
    "client secret",
    "webhook secret",
)


def _labelled_key(value: str, label: str) -> bool:
    """A value named by the line after it: that line names a key (not a public one, a hash or an
    id), and the value looks machine-made; a hex one only under a name of two words."""
    words = "".join(ch if ch.isalnum() else " " for ch in label).split()
    if _LABEL_WORDS_SET.isdisjoint(words) or "public" in label or any(word in label for word in _HASH_WORDS):
        return False
    hexish = all(ch in "0123456789abcdefABCDEF" for ch in value.removeprefix("0x"))
    if not random_looking(value) or (hex_id(value) and not hexish):  # (a UUID is an id)
        return False
    # (a product's name before "key" counts as a second word: "(that's the Acme key)")
    named = [before for before, word in zip(words, words[1:], strict=False) if word in ("key", "token")]
    return not hexish or any(name in label for name in _TWO_WORDS) or any(w not in ID_KEYS for w in named)


_LABEL_WORDS_SET = frozenset((*_LABEL_WORDS, *(word + "s" for word in _LABEL_WORDS)))
