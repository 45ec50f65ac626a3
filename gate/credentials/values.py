"""What a credential's value must look like, apart from its shape: a literal rather than a
reference or a placeholder (`$VAR`, `<placeholder>`, `***`, `op://...`), random-looking rather
than a word, a password rather than code. The shapes (gate.credentials.shapes) ask these of the
value they matched. Standard library only, and no `re`: on the hooks' path.
"""


# -- what a value must look like ----------------------------------------------------------------

# Whole values that stand for a secret rather than being one (compared lowercased).
_WORDS = frozenset(
    "none null nil true false yes no on off empty redacted changeme placeholder example sample "
    "dummy secret secrets password passwd token key apikey string str bytes int required optional "
    "hidden masked unset undefined default test testing value values foobar foo bar baz".split()
)
# Substrings that mark a template or a placeholder: `${VAR}`, `{{ x }}`, `<token>`, `sk-...`,
# `***`, `CHANGE_ME`.
_MARKS = (
    "${",
    "{{",
    "}}",
    "<",
    ">",
    "...",
    "\u2026",
    "***",
    "\u2022\u2022",
    "changeme",
    "change_me",
    "change-me",
    "replace",
    "placeholder",
    "redacted",
    "insert_",
    "enter_",
)
# Words that mark a placeholder only as whole words (`your-token-here`, `YOUR_API_KEY`), not
# inside a password (`Sphere2026!`, `Yourself99`).
_MARK_WORDS = frozenset(("your", "here", "my", "put", "set", "fill"))
# Leading text of a reference: variables, expressions, secret-manager addresses, relative paths.
_LEADS = (
    "$",
    "{",
    "[",
    "(",
    "op://",
    "vault:",
    "vault://",
    "arn:",
    "enc[",
    "#{",  # a deploy tool's token to replace: `#{ApiKey}`, `#{Db.Password}#`
    "ref+",
    "secret://",
    "sm://",
    "file:",
    "env:",
    "./",
    "~/",
    "../",
    "process.env",
    "os.environ",
    "os.getenv",
    "getenv",
    "env(",
    "env::",
    "change",
    "secrets.",
)


def _words(value: str) -> list[str]:
    """The lowercase words of a value, split at non-letters and at camelCase humps (in linear
    time: a 200,000-character paste may be one value)."""
    words: list[str] = []
    word = ""
    for at, ch in enumerate(value):
        if not ch.isalpha():
            if word:
                words.append(word)
            word = ""
            continue
        if word and ch.isupper() and value[at - 1].islower():
            words.append(word)
            word = ""
        word += ch.lower()
    if word:
        words.append(word)
    return words


def _wordy(value: str) -> bool:
    """Letters in whole words, as an identifier has them (`OAuth2RefreshTokenExpires3600`,
    `unevaluatedProperties_draft2019`), not the short runs of a random key."""
    humps = _words(value)
    return sum(map(len, humps)) >= 4 * len(humps)


def _crossed_out(value: str) -> bool:
    """A run of x of one case standing for hidden characters (`ghp_XXXX`, `xxx-xxx`), not one
    inside a word (`Maxxxine1`) nor one a random key holds by chance (`...B2xxX`)."""
    for x in "xX":
        at = value.find(x * 3)
        while at >= 0:
            end = at
            while end < len(value) and value[end] == x:
                end += 1
            if end - at >= 5 or (
                (at == 0 or not value[at - 1].isalpha()) and (end == len(value) or not value[end].isalpha())
            ):
                return True
            at = value.find(x * 3, end)
    return False


def _reference_lead(value: str) -> bool:
    """A value whose first character makes it a reference, not a password starting with a symbol:
    a YAML tag or alias (`!vault`, `*defaults`), `%VAR%` or `%(name)s`, `@Microsoft.KeyVault(...)`
    or `@var`, an absolute path (`/run/secrets/db`)."""
    lead, rest = value[:1], value[1:]
    if lead == "&":  # a YAML anchor, a pointer, an entity (`&defaults`, `&cfg.Password`, `&amp;`);
        # not a password that starts with it (`&Tamarind2040`): both cases and a digit, one word
        mixed = any(ch.isupper() for ch in rest) and any(ch.islower() for ch in rest)
        return not (mixed and any(ch.isdigit() for ch in rest) and not any(ch in ".([;&" for ch in rest))
    if lead in "!*@":
        return rest.replace("_", "").replace("-", "").replace(".", "").isalpha() or "(" in rest or "/" in rest
    if lead == "%":  # `%VAR%`, `%(name)s`, `%{name}`, printf's `%s`, `%-10d`; not `%**-E9hiT4%?U!w`
        name = rest[: rest.find("%")] if "%" in rest else ""
        spec = rest.lstrip("-+ #0123456789.")
        printf = spec[:1] in tuple("sdifrxXoeEgGc") and not spec[1:2].isalnum()
        return rest.startswith(("(", "{")) or printf or (name.replace("_", "").isalnum() and name[:1].isalpha())
    if lead == "/":  # a path, not base64 that starts with a slash (`/4SqCNiYKcbov6S1JHav7Sl/Lcs...`)
        return not _base64_run(value) and (
            "/" in rest or "." in rest or rest.replace("_", "").replace("-", "").isalpha()
        )
    return False


def _base64_run(value: str) -> bool:
    """Base64 rather than a path: its characters only, and a part between slashes that mixes
    both cases and digits over 16 characters, as no directory's name does."""
    return all(ch.isascii() and (ch.isalnum() or ch in "+/=") for ch in value) and any(
        len(part) >= 16
        and any(ch.isupper() for ch in part)
        and any(ch.islower() for ch in part)
        and any(ch.isdigit() for ch in part)
        for part in value.split("/")
    )


def _marking_words(value: str, words: list[str]) -> list[str]:
    """The words of a value that can mark a placeholder: all its words when it holds no digit
    but at its end (`YourApiKeyHere`, `YourApiKey123`), else only those standing whole between
    separators (`MY_KEY_2`, `put-key-here-1`), not two letters of a random run (`...PVicMy2fY9...`)."""
    if not any(ch.isdigit() for ch in value.rstrip("0123456789")):
        return words
    segments, segment = [], ""
    for ch in value:
        if ch.isalnum():
            segment += ch
        else:
            segments.append(segment.lower())
            segment = ""
    return [*segments, segment.lower()]


def _placeholder(value: str) -> bool:
    low = value.lower()
    words = _words(value)
    return (
        low in _WORDS
        or any(mark in low for mark in _MARKS)
        or low.startswith(_LEADS)
        or _reference_lead(value)
        or _crossed_out(value)
        or (len(words) > 1 and not _MARK_WORDS.isdisjoint(_marking_words(value, words)))
        or (low.startswith("your") and low.endswith(("here", "key", "token", "password", "secret")))
        or len(set(low)) <= 3
    )


def _is_word_like(value: str) -> bool:
    """Letters and separators only, no digit: a word, a name or an identifier
    (`stored`, `db-credentials`, `hashedPassword`, `settings.api_key`, `OPENAI_API_KEY`)."""
    return not any(ch.isdigit() for ch in value) and all(ch.isalpha() or ch in "_-." for ch in value)


def _expression(value: str) -> bool:
    """Code rather than a value: a call, a subscript or an attribute path (`get_token()`,
    `request.headers[`, `jwt.encode(payload`, `Optional[str`)."""
    return ("(" in value or "[" in value or "::" in value) and value[:1].isalpha()


# Words that make a letters-only value a name in code or a type, not a password
# (`userPassword`, `SecretStr`, `PasswordField`).
_CODE_WORDS = frozenset(
    "password passwd pass pwd secret token key auth credential credentials field str string "
    "type input hash hashed value env config settings name form user".split()
)


_ACCENTED = "áàâãéêíóôõúüçÁÀÂÃÉÊÍÓÔÕÚÜÇ"


def letters_password(value: str) -> bool:
    """A letters-only value that reads as a password rather than a word or a name: joined
    capitalised words (`HarborStoneMoon`), or lowercase letters no language would write
    (`fsgskmiotze`: few vowels, or a long run of consonants)."""
    if len(value) < 8 or not value.isalpha() or not all(ch.isascii() or ch in _ACCENTED for ch in value):
        return False
    words = _words(value)
    if not _CODE_WORDS.isdisjoint(words) or value.lower() in _WORDS:
        return False
    if value[0].isupper() and sum(ch.isupper() for ch in value) >= 2 and not value.isupper():
        return True
    if not value.islower():
        return False
    if len(value) >= 16 and not any(word in value for word in _CODE_WORDS if len(word) >= 4):
        return True  # words run together past any word's length: `correcthorsebatterystaple`
    vowels = sum(ch in "aeiouy" for ch in value)
    run = longest = 0
    for ch in value:
        run = 0 if ch in "aeiouy" else run + 1
        longest = max(longest, run)
    return vowels / len(value) < 0.25 or longest >= 4 or _unspeakable(value)


# Two consonants side by side as English and Portuguese words put them (and tech words:
# `postgresql`, `nginx`); a lowercase run of letters holding any other pair (`mj`, `hm`, `zq`)
# was typed by no one as a word.
_PAIRS = frozenset(
    "bl br bs bt cc ch ck cl cr ct dd dg dl dm dn dr ds dv dw ff fl fr fs ft gg gh gl gm gn gr gs gt "
    "hl hn hr hs ht kl kn ks lb lc ld lf lg lh lk ll lm ln lp lr ls lt lv lw mb mm mn mp ms nc nd nf "
    "ng nh nj nk nl nm nn nq ns nt nv nx nz ph pl pn pp pr ps pt ql rb rc rd rf rg rh rj rk rl rm rn "
    "rp rq rr rs rt rv rw rz sb sc sf sg sh sk sl sm sn sp sq ss st sw tc th tl tm tn tr ts tt tw tz "
    "vr wh wl wn wr ws wt xc xp xt zz".split()
)


def _unspeakable(value: str) -> bool:
    """Lowercase letters with a pair of consonants no word of English or Portuguese holds."""
    return any(
        a not in "aeiouy" and b not in "aeiouy" and a + b not in _PAIRS for a, b in zip(value, value[1:], strict=False)
    )


def literal(value: str, *, quoted: bool = False, password: bool = False) -> bool:
    """Whether an assigned value looks like a real password or key and not a reference, a
    placeholder or a word. A quoted value may be any mix of letters (`"SuperSecret"`); so may a
    password's when it reads as one (`letters_password`)."""
    value = value.strip()
    if len(value) < 6 or _placeholder(value) or _expression(value):
        return False
    if value.isupper() and _is_word_like(value):
        return False  # an environment variable's name: `password: DB_PASSWORD`
    if password and (letters_password(value) or joined_passphrase(value)):
        return True
    if quoted:
        return not (value.islower() and _is_word_like(value))
    return not _is_word_like(value)


def _password(value: str, *, quoted: bool = False) -> bool:
    """A password named in prose ("the password is ..."): quoted, or with a digit or a symbol."""
    if quoted:
        return len(value) >= 6 and not _placeholder(value)
    if not literal(value, password=True):
        return False
    return any(not ch.isalpha() for ch in value) or letters_password(value)


def random_looking(value: str) -> bool:
    """Whether a value looks machine-made: long, letters and digits mixed, with a long unbroken run
    (not `k8s-prod-cluster-01`). For names as weak as `..._KEY` or prose as loose as "the token
    is ...", where a word or a name is the usual value."""
    if len(value) < 16 or _placeholder(value):
        return False
    if not (any(ch.isdigit() for ch in value) and any(ch.isalpha() for ch in value)):
        return False
    run = longest = 0
    for ch in value:
        run = run + 1 if ch.isalnum() else 0
        longest = max(longest, run)
    return longest >= 12 and all(ch.isalnum() or ch in "+/=_-.~" for ch in value)


def _token(body: str) -> bool:
    """A provider-shaped token, unless it is a placeholder (`ghp_XXXX...`, `xoxb-your-token`)."""
    low = body.lower()
    return (
        not any(mark in low for mark in ("...", "\u2026", "***", "your", "<", "0000000"))
        and ("xxxx" not in low or "xxxx" in body or "XXXX" in body)
        and not _crossed_out(body)
        and len(set(low)) > 4
    )


def _aws_secret(value: str) -> bool:
    """40 characters of base64 as AWS issues them: both cases and a digit or a slash, not hex."""
    return (
        any(ch.isupper() for ch in value)
        and any(ch.islower() for ch in value)
        and any(ch.isdigit() or ch in "/+" for ch in value)
        and not all(ch in "0123456789abcdefABCDEF" for ch in value)
        and _token(value)
    )


def hex_id(value: str) -> bool:
    """A UUID, or a commit or a SHA-256 in hex: ids and hashes, not keys. Also such a hash after
    words joined by dashes, as a CI cache names its entries (`Linux-pip-wheels-<sha256>`)."""
    low = value.lower()
    if len(low) == 36 and low.count("-") == 4 and all(ch in "0123456789abcdef-" for ch in low):
        return True
    head, _, tail = low.rpartition("-")
    if head and all(part.isalpha() or part.isdigit() for part in head.split("-")):
        low = tail
    return len(low) in (40, 64) and all(ch in "0123456789abcdef" for ch in low)


def _random_key(value: str) -> bool:
    """A machine-made value that is no hex id or hash (a UUID, a commit, a SHA-256)."""
    return random_looking(value) and not hex_id(value)


def _password_literal(value: str) -> bool:
    return literal(value, password=True)


def _pem_private(value: str) -> bool:
    """A base64-encoded PEM block (kubeconfig's `client-key-data`) that holds a private key."""
    import binascii

    try:
        head = binascii.a2b_base64(value[:60] + "=" * (-len(value[:60]) % 4))
    except (binascii.Error, ValueError):
        return False
    return b"PRIVATE" in head


# Words that say a hex run near a key's name is a hash or an id after all.
_HASH_WORDS = (
    "commit",
    "hash",
    "sha",
    "digest",
    "checksum",
    "merge",
    "build",
    "version",
    "fingerprint",
    "?",
    " id",
    "_id",
    "-id",
    "uuid",
    "trace",
    "span",
    "request",
)


class _Near:
    """A check that also wants one of `words` at most `window` characters before the match, and
    unless `lines`, on the same command line (continuation lines included), and none of `unless`
    there. Looked for backwards rather than matched, so that a text repeating the word costs
    linear time."""

    def __init__(
        self,
        words: tuple[str, ...],
        check,
        window: int = 1000,
        *,
        lines: bool = False,
        unless: tuple[str, ...] = (),
        loose: tuple = ((), 0, None),
    ):
        self.words, self.check, self.window, self.lines, self.unless = words, check, window, lines, unless
        # (words, window, check): with one of these words that close before the value, `check`
        # is enough ("API key <40 hex>": a hash that a name of two words makes a key)
        self.loose = loose

    def __call__(self, value: str, text: str, start: int) -> bool:
        words, window, loose = self.loose
        close = text[max(0, start - window) : start].lower() if words else ""
        if close and any(word in close for word in _HASH_WORDS):
            close = ""  # "the API key rotation commit? -> <sha>": a hash after all
        if not (loose(value) if any(word in close for word in words) else self.check(value)):
            return False
        before = text[max(0, start - self.window) : start]
        if not self.lines:
            at = len(before)
            while True:  # back to the start of the logical line
                newline = before.rfind("\n", 0, at)
                if newline > 0 and before[newline - 1] == "\\":
                    at = newline - 1
                    continue
                before = before[newline + 1 :]
                break
        low = before.lower()
        return any(word in low for word in self.words) and not any(word in low for word in self.unless)


# The little words a sentence needs and a passphrase or a seed phrase does without, and the words
# that state a password's rules ("must contain digits").
_SENTENCE_WORDS = frozenset(
    "the and for with from that are was were into onto then than this these those have has had "
    "not but your our its their them will would should can could been being which what when where "
    "must needs need contain contains least more less characters chars letters digits symbols "
    "required optional minimum maximum length long "
    "que para com uma dos das não nao pelo pela são sao foi mas por como deve conter menos caracteres".split()
)


def passphrase(value: str, fewest: int = 3) -> bool:
    """Lowercase words joined by single spaces as a passphrase has them (`harbor quindim lantern`):
    `fewest` to twelve words of letters, none of them one of the little words every sentence
    needs (nor a title's capitals: `Reset Link Expired`)."""
    words = value.split(" ")
    return (
        fewest <= len(words) <= 12
        and all(3 <= len(word) <= 12 and word.isalpha() and word.islower() for word in words)
        and _SENTENCE_WORDS.isdisjoint(word.lower() for word in words)
        and not _placeholder(value)
    )


# Words that make a value joined by dots, hyphens or underscores a name, a path or a place in
# code or in a vault (`app.secrets.db.prod`, `staging-db-password-ref`), not a passphrase.
_NAME_WORDS = _CODE_WORDS | frozenset(
    "secrets vault prod production staging stage dev test testing local default example sample "
    "database server service client cluster app api main master release backup data file path "
    "ref refs from none null true false".split()
)


def joined_passphrase(value: str) -> bool:
    """Four to twelve lowercase words joined by one separator, a dot, a hyphen or an underscore,
    as a generated passphrase has them (`anchor-quill-otter-marsh`, `ember.sable.crane.pilot`):
    three to ten letters each, none of them a word that makes the value a name in code, a
    setting's path or a vault's (`spring.datasource.password`, `app.secrets.db.prod`)."""
    if len(value) > 200:
        return False
    for sep in "-._":
        words = value.split(sep)
        if len(words) >= 2:
            break
    return (
        4 <= len(words) <= 12
        and all(3 <= len(word) <= 10 and word.isalpha() and word.islower() for word in words)
        and _NAME_WORDS.isdisjoint(words)
        and _SENTENCE_WORDS.isdisjoint(words)
        and not _placeholder(value)
    )


def seed_phrase(value: str) -> bool:
    """A wallet's recovery phrase: 12 to 24 lowercase words of three to eight letters (BIP-39's
    list), hardly one twice (not a list of tags), without the little words of a sentence; a few more when a word of the prose before
    it runs on into it ("a frase-semente da carteira <12 words>")."""
    words = value.split(" ")
    return 12 <= len(words) <= 27 and len(set(words)) >= len(words) - 1 and _SENTENCE_WORDS.isdisjoint(words)
