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

This module is on the hooks' per-turn path (the prompt is redacted before the ledger stores it):
each shape names the lowercase substrings one of which any match contains, and `re` is imported
and a shape compiled only when a text holds one of them, so an ordinary prompt costs a few
substring tests and no import.
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
_MARKS = ("${", "{{", "}}", "<", ">", "...", "\u2026", "***", "\u2022\u2022", "changeme",
          "change_me", "change-me", "replace", "placeholder", "redacted", "insert_", "enter_")
# Words that mark a placeholder only as whole words (`your-token-here`, `YOUR_API_KEY`), not
# inside a password (`Sphere2026!`, `Yourself99`).
_MARK_WORDS = frozenset(("your", "here", "my", "put", "set", "fill"))
# Leading text of a reference: variables, expressions, secret-manager addresses, relative paths.
_LEADS = ("$", "{", "[", "(", "&", "op://", "vault:", "vault://", "arn:",
          "enc[", "ref+", "secret://", "sm://", "file:", "env:", "./", "~/", "../", "process.env",
          "os.environ", "os.getenv", "getenv", "env(", "env::", "change", "secrets.")


def _words(value: str) -> list[str]:
    """The lowercase words of a value, split at non-letters and at camelCase humps."""
    words: list[str] = []
    word = ""
    for at, ch in enumerate(value):
        if not ch.isalpha():
            words, word = words + [word] if word else words, ""
            continue
        if word and ch.isupper() and value[at - 1].islower():
            words, word = words + [word], ""
        word += ch.lower()
    return words + [word] if word else words


def _crossed_out(low: str) -> bool:
    """A run of x standing for hidden characters (`ghp_XXXX`, `xxx-xxx`), not one inside a
    word (`Maxxxine1`)."""
    at = low.find("xxx")
    while at >= 0:
        end = at
        while end < len(low) and low[end] == "x":
            end += 1
        if end - at >= 5 or ((at == 0 or not low[at - 1].isalpha()) and (end == len(low) or not low[end].isalpha())):
            return True
        at = low.find("xxx", end)
    return False


def _reference_lead(value: str) -> bool:
    """A value whose first character makes it a reference, not a password starting with a symbol:
    a YAML tag or alias (`!vault`, `*defaults`), `%VAR%` or `%(name)s`, `@Microsoft.KeyVault(...)`
    or `@var`, an absolute path (`/run/secrets/db`)."""
    lead, rest = value[:1], value[1:]
    if lead in "!*@":
        return rest.replace("_", "").replace("-", "").replace(".", "").isalpha() or "(" in rest or "/" in rest
    if lead == "%":
        return "%" in rest or rest.startswith("(") or rest.startswith("{")
    if lead == "/":
        return "/" in rest or "." in rest or rest.replace("_", "").replace("-", "").isalpha()
    return False


def _placeholder(value: str) -> bool:
    low = value.lower()
    words = _words(value)
    return (
        low in _WORDS
        or any(mark in low for mark in _MARKS)
        or low.startswith(_LEADS)
        or _reference_lead(value)
        or _crossed_out(low)
        or (len(words) > 1 and not _MARK_WORDS.isdisjoint(words))
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
_CODE_WORDS = frozenset("password passwd pass pwd secret token key auth credential credentials field str string "
                        "type input hash hashed value env config settings name form user".split())


def letters_password(value: str) -> bool:
    """A letters-only value that reads as a password rather than a word or a name: joined
    capitalised words (`HarborStoneMoon`), or lowercase letters no language would write
    (`fsgskmiotze`: few vowels, or a long run of consonants)."""
    if len(value) < 8 or not value.isalpha() or not value.isascii():
        return False
    words = _words(value)
    if not _CODE_WORDS.isdisjoint(words) or value.lower() in _WORDS:
        return False
    if value[0].isupper() and sum(ch.isupper() for ch in value) >= 2 and not value.isupper():
        return True
    if not value.islower():
        return False
    vowels = sum(ch in "aeiouy" for ch in value)
    run = longest = 0
    for ch in value:
        run = 0 if ch in "aeiouy" else run + 1
        longest = max(longest, run)
    return vowels / len(value) < 0.25 or longest >= 4


def literal(value: str, *, quoted: bool = False, password: bool = False) -> bool:
    """Whether an assigned value looks like a real password or key and not a reference, a
    placeholder or a word. A quoted value may be any mix of letters (`"SuperSecret"`); so may a
    password's when it reads as one (`letters_password`)."""
    value = value.strip()
    if len(value) < 6 or _placeholder(value) or _expression(value):
        return False
    if value.isupper() and _is_word_like(value):
        return False  # an environment variable's name: `password: DB_PASSWORD`
    if password and letters_password(value):
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
    return not any(mark in low for mark in ("xxx", "...", "\u2026", "***", "your", "<", "0000000")) and len(set(low)) > 4


def _aws_secret(value: str) -> bool:
    """40 characters of base64 as AWS issues them: both cases and a digit or a slash, not hex."""
    return (
        any(ch.isupper() for ch in value)
        and any(ch.islower() for ch in value)
        and any(ch.isdigit() or ch in "/+" for ch in value)
        and not all(ch in "0123456789abcdefABCDEF" for ch in value)
        and _token(value)
    )


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


class _Near:
    """A check that also wants one of `words` at most `window` characters before the match, and
    unless `lines`, on the same command line (continuation lines included). Looked for backwards
    rather than matched, so that a text repeating the word costs linear time."""

    def __init__(self, words: tuple[str, ...], check, window: int = 1000, *, lines: bool = False):
        self.words, self.check, self.window, self.lines = words, check, window, lines

    def __call__(self, value: str, text: str, start: int) -> bool:
        if not self.check(value):
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
        return any(word in low for word in self.words)


# -- the shapes ------------------------------------------------------------------------------------

# Left and right edges of a token: not inside a longer run of letters and digits. A token may
# follow `_` (`GH_TOKEN_ghp_...`), which `\b` would not allow.
_L, _R = r"(?<![A-Za-z0-9])", r"(?![A-Za-z0-9])"

# (kind, triggers, pattern, check). `kind` is what a refusal names, with its article; the redaction
# marker names it without. A match is a credential when `check` (given the `value` group, or the
# whole match) says so; `redact` replaces the `value` group, or the whole match. A shape runs only
# on a text whose lowercase form holds one of its triggers. Order matters: `find` names the first.
_SHAPES: list[tuple[str, tuple[str, ...], str, object]] = [
    ("a private key", ("private key",),
     r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY"
     r"(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:-]*)", None),
    ("a private key", ("ls0tls1crudjti",), r"LS0tLS1CRUdJTi[A-Za-z0-9+/=]{20,}", _pem_private),
    ("an age secret key", ("age-secret-key-",), r"AGE-SECRET-KEY-1[0-9A-Z]{58}", None),
    ("an AWS access key id", ("akia", "asia", "abia", "acca", "a3t"),
     _L + r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[0-9A-Z]{16}" + _R, _token),
    ("a GitHub token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), _L + r"gh[pousr]_[A-Za-z0-9]{36,}" + _R, _token),
    ("a GitHub token", ("github_pat_",), _L + r"github_pat_[A-Za-z0-9_]{50,}" + _R, _token),
    ("a GitLab token", ("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glsoat-", "glft-", "glimt-", "gloas-",
                        "glffct-", "glagent-"),
     _L + r"gl(?:pat|dt|rt|ptt|cbt|soat|ft|imt|oas|ffct|agent)-[A-Za-z0-9_-]{20,}", _token),
    ("an Anthropic API key", ("sk-ant-",), _L + r"sk-ant-[A-Za-z0-9_-]{32,}", _token),
    ("an OpenAI API key", ("sk-",),
     _L + r"sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{32,}" + _R + ")", _token),
    ("a Stripe key", ("sk_", "rk_"), _L + r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}" + _R, _token),
    ("a Stripe webhook secret", ("whsec_",), _L + r"whsec_[A-Za-z0-9]{24,}" + _R, _token),
    ("a Slack token", ("xox", "xapp-"),
     _L + r"(?:xox[abposre]-(?:\d+-)+[A-Za-z0-9]{8,}|xoxe(?:\.xox[bp])?-\d-[A-Za-z0-9]{30,}|"
     r"xapp-\d-[A-Z0-9]+-\d+-[A-Za-z0-9]{20,})", _token),
    ("a Slack webhook", ("hooks.slack.com",),
     r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<value>[A-Za-z0-9/_-]{20,})", _token),
    ("a Discord webhook", ("discord",),
     r"discord(?:app)?\.com/api/webhooks/(?P<value>\d+/[A-Za-z0-9_-]{40,})", _token),
    ("a Discord bot token", ("discord", "token", "bot"),
     _L + r"[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}" + _R, _token),
    ("a Google API key", ("aiza",), _L + r"AIza[0-9A-Za-z_-]{35}" + _R, _token),
    ("a Google OAuth client secret", ("gocspx-",), _L + r"GOCSPX-[A-Za-z0-9_-]{24,40}", _token),
    ("a Google OAuth token", ("ya29.",), _L + r"ya29\.[A-Za-z0-9_-]{30,}", _token),
    ("an npm token", ("npm_",), _L + r"npm_[A-Za-z0-9]{36}" + _R, _token),
    ("a PyPI token", ("pypi-",), _L + r"pypi-AgE[A-Za-z0-9_-]{50,}", None),
    ("a SendGrid key", ("sg.",), _L + r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}", _token),
    ("a Twilio API key", ("twilio", "token", "key", "secret"), _L + r"SK[0-9a-fA-F]{32}" + _R,
     _Near(("twilio", "token", "key", "secret"), _token, 200)),
    ("an Okta API token", ("ssws",), r"\bSSWS\s+(?P<value>[A-Za-z0-9_-]{20,})", _token),
    ("an Okta API token", ("okta",), _L + r"00[A-Za-z0-9_-]{40}" + _R, _Near(("okta",), _token, 300)),
    ("a Supabase token", ("sbp_", "sb_secret_"), _L + r"(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{20,})" + _R, _token),
    ("a Mailgun key", ("key-",), _L + r"key-[0-9a-f]{32}" + _R, _token),
    ("a Mailchimp key", ("-us",), _L + r"[0-9a-f]{32}-us\d{1,2}" + _R, _token),
    ("a Hugging Face token", ("hf_",), _L + r"hf_[A-Za-z0-9]{30,}" + _R, _token),
    ("a Telegram bot token", (":aa",), r"(?<![0-9])\d{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])", _token),
    ("a Vault token", ("hvs.", "hvb.", "hvr."), _L + r"hv[sbr]\.[A-Za-z0-9_-]{24,}", _token),
    ("a DigitalOcean token", ("_v1_",), _L + r"do[opr]_v1_[a-f0-9]{64}" + _R, _token),
    ("a Shopify token", ("shpat_", "shpss_", "shpca_", "shppa_"), _L + r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}" + _R, _token),
    ("a Databricks token", ("dapi",), _L + r"dapi[a-f0-9]{32}(?:-\d)?" + _R, _token),
    ("an Azure client secret", ("q~",), r"(?<![\w~.-])[\w~.-]{3}\dQ~[\w~.-]{31,34}(?![\w~.-])", _token),
    ("an Azure storage key", ("accountkey=", "sharedaccesskey=", "account-key"),
     r"(?i)(?:AccountKey=|SharedAccessKey=|--account-key[= ]\s*)(?P<value>[A-Za-z0-9+/]{40,}={0,2})", _token),
    ("an Azure SAS signature", ("sig=",), r"(?<![\w.-])sig=(?P<value>[A-Za-z0-9%+/=]{20,})", _token),
    ("a Django secret key", ("django-insecure-",), r"django-insecure-[^\s'\"]{20,}", None),
    ("a Mapbox secret token", ("sk.eyj",), _L + r"sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}", None),
    ("a JSON Web Token", ("eyj",), _L + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", None),
    ("a provider token", ("lin_", "ntn_", "secret_", "pmak-", "atatt", "glsa_", "glc_", "nrak-", "gsk_", "r8_",
                          "dckr_pat_", "dp.st.", "dp.sa.", "dp.ct.", "dp.pt.", "dp.scim.", "dp.audit.", "sntry", "xai-", "pplx-", "eaaa", "sq0", "atlasv1", "pul-", "hrku-"),
     _L + r"(?:lin_(?:api|oauth)_[A-Za-z0-9]{40}|ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43}|"
     r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}|ATATT3[A-Za-z0-9_=-]{100,}|glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}|"
     r"glc_[A-Za-z0-9+/=]{32,}|NRAK-[A-Z0-9]{27}|gsk_[A-Za-z0-9]{48,}|r8_[A-Za-z0-9]{37}|"
     r"dckr_pat_[A-Za-z0-9_-]{27,}|dp\.(?:st|sa|ct|pt|scim|audit)\.[A-Za-z0-9_.-]{40,}|"
     r"sntry[su]_[A-Za-z0-9+/=_-]{40,}|xai-[A-Za-z0-9]{70,}|pplx-[A-Za-z0-9]{40,}|EAAA[A-Za-z0-9_-]{60,}|"
     r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}|[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}|pul-[a-f0-9]{40}|"
     r"HRKU-[A-Za-z0-9_-]{40,})", _token),
    # A secret of 40 characters of base64 near a word that says AWS or secret, or after a key id.
    ("an AWS secret access key", ("aws", "secret", "akia", "asia"),
     r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])", _Near(("aws", "secret", "akia", "asia"), _aws_secret, 100, lines=True)),
    # Credentials in a URL, a header or a command line.
    ("a connection string with a password", ("://",),
     r"(?i)\b[a-z][a-z0-9+.-]*://(?P<user>[^\s:/@]*(?:@[^\s:/@]+)?):(?P<value>[/@]?[^\s@/]+)@[^\s/]+",
     lambda v, match: v.lower() != match.group("user").lower() and literal(v, password=True)),
    ("an Authorization header", ("authorization",),
     r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|bot|digest|apikey|api-token|"
     r"sso-key)\s+(?P<value>[A-Za-z0-9._~+/=@-]{8,})",
     lambda v: not _placeholder(v) and not v.isupper() and not (v.islower() and _is_word_like(v))),
    ("an Authorization header", ("authorization",),  # a credential without a scheme
     r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?P<value>[A-Za-z0-9._~+/=@-]{8,})", literal),
    ("a bearer token", ("bearer",), r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9._~+/-]{20,}=*)", random_looking),
    ("a password on a command line", ("curl", "wget"),
     r"\s(?:-u|--user)[= ]?\s*[\"']?[^\s:\"']*:[\"']?(?P<value>[^\s\"']+)",
     _Near(("curl", "wget"), lambda v: literal(v, quoted=True))),  # a shell word: a literal, whatever its letters
    # A Kubernetes Secret's data: base64 values (padded, so a length of 4n) under `kind: Secret`.
    ("a Kubernetes secret value", ("kind: secret", "kind: 'secret'", 'kind: "secret"'),
     r"(?m)^[ \t]+[\w.-]+:[ \t]*(?:[|>][-+]?[ \t]*\n[ \t]+)?[\"']?(?P<value>[A-Za-z0-9+/]{10,}={0,2})[\"']?[ \t]*$",
     lambda v: len(v) % 4 == 0 and not _is_word_like(v) and not v.isdigit()),
    ("a password on a command line", ("mysql",), r"\s-p(?P<value>[^\s'\"]{4,})", _Near(("mysql",), _password_literal)),
    ("a password on a command line", ("redis-cli",), r"\s-a\s*(?P<q>[\"']?)(?P<value>[^\s\"']+)(?P=q)",
     _Near(("redis-cli",), _password_literal)),
    ("a password on a command line", ("sshpass",), r"\s-p\s*(?P<q>[\"']?)(?P<value>[^\s\"']+)(?P=q)",
     _Near(("sshpass",), _password_literal)),
    ("a password on a command line", ("docker login",), r"\s(?:-p|--password)[= ]\s*(?P<q>[\"']?)(?P<value>[^\s\"']+)(?P=q)",
     _Near(("docker login",), _password_literal)),
    # A flag that names what it takes, then a space: `--token <value>`, `--db-password <value>`
    # (`--token=<value>` is an assignment).
    ("a password or key on a command line", ("--",),
     r"(?<![\w-])--(?P<flag>[\w-]*?(?:token|key|secret|password|passwd|pass|pwd|senha))[ \t]+(?P<q>[\"']?)"
     r"(?P<value>[^\s\"']+)(?P=q)",
     lambda v, match: random_looking(v) if match.group("flag").lower().endswith("key") else
     literal(v, password=match.group("flag").lower().endswith(("password", "passwd", "pass", "pwd", "senha")))),
    ("a password or key assignment", ("requirepass", "masterauth"),
     r"\b(?:requirepass|masterauth)\s+(?P<q>[\"']?)(?P<value>[^\s\"']+)(?P=q)", literal),
]

# Names whose value is a secret: `DB_PASSWORD`, `client_secret`, `apiKey`, `x-api-key`,
# `_authToken`, `PGPASSWORD`. A bare `key` is too common a name (`sort_key`, `key=value`) and gets
# the stricter random_looking check below, unless it says public.
_STRONG = (r"password|passwd|passphrase|pass|pwd|senha|secret|token|api[_-]?key|apikey|access[_-]?key|"
           r"secret[_-]?key(?:[_-]?base)?|private[_-]?key|auth|credentials?|signature|sig")
_VALUE = (r"(?:(?P<q>[\"'`])(?P<qvalue>[^\"'`\n]*)(?P=q)"
          r"|(?P<value>(?:[^\s\"'`,;)}\]&<]|&(?![\w.-]+=))+))")
# Not `https://`: a URL's scheme names nothing. Not across a line: `openai:` above `  api_key: ...`
# is a YAML parent, whose first child must still be read as an assignment of its own.
_ASSIGN = r"[\"']?[ \t]*(?::=|=>|=|:(?!//))[ \t]*"
# The name is matched whole and its ending checked apart (`_NAMES`): a pattern that looked for
# the secret word inside every word would cost a long text quadratic time.
_NAMES = {"strong": rf"(?i)(?:{_STRONG})$", "weak": r"(?i)(?:[a-z0-9][_-]?key(?:[_-]?base)?|appid)$",
          "password": r"(?i)(?:password|passwd|passphrase|pass|pwd|senha)$"}
# What may stand between a secret's name and "is" in prose: "for prod", "do banco", "de produção".
_OF = r"(?:\s+(?:for|of|on|to|in|at|do|da|de|dos|das|no|na|para)(?:\s+[\w.@/-]+){1,4}?)?"
_PROSE_VALUE = r"(?:(?P<q>[\"'`])(?P<qvalue>[^\"'`\n]{1,200})(?P=q)|(?P<value>[^\s\"'`,;]+))"
_ASSIGNMENTS = [
    ("a password or key assignment", ("pass", "pwd", "senha", "secret", "token", "key", "auth", "credential", "sig", "appid"),
     rf"(?<![\w.-])(?P<name>[\w.-]+){_ASSIGN}{_VALUE}", "name"),
    # An environment variable followed by its value after a space: `AWS_SECRET_ACCESS_KEY <key>`.
    ("a password or key assignment", ("pass", "pwd", "secret", "token", "key"),
     r"(?<![\w-])[A-Z][A-Z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|KEY|_PASS|_PWD)[ \t]+(?P<q>[\"']?)"
     r"(?P<value>[^\s\"']+)(?P=q)", "weak"),
    # Prose: "the password is ...", "my pw for the vpn is ...", "the API key is ...".
    # Prose, English or Portuguese: "the password is ...", "password for prod: ...", "a senha do
    # banco é ...", "my pw for the vpn is ...", "the API key is ...", "a chave do X é ...".
    ("a password in prose", ("pass", "pw", "pin ", "pin:", "pin=", "senha"),
     r"(?i)\b(?:passwords?|passphrase|passwd|pw|pwd|passcode|pin|senhas?)\b" + _OF +
     r"\s*(?:is|was|are|=|:|é|era)\s+(?:now\s+|still\s+|just\s+|set\s+to\s+|agora\s+)?" + _PROSE_VALUE, "password"),
    ("a key or token in prose", ("secret", "token", "key", "credential", "chave", "segredo"),
     r"(?i)\b(?:secret(?:\s+(?:access\s+)?key)?|(?:api|access|auth|license|admin)\s+(?:key|token)|token|(?<!public )key|"
     r"credentials?|chave|segredo)\b" + _OF + r"\s*(?:is|was|are|=|:|é|era)\s+(?:now\s+|still\s+|set\s+to\s+|agora\s+)?"
     + _PROSE_VALUE, "weak"),
    # A name and then the value, as in a topic or a note: "senha K5uq...", "Datadog key f691...".
    ("a password in prose", ("pass", "pw", "senha"),
     r"(?i)\b(?:password|passwd|pw|pwd|senha)[ \t]+(?P<value>[^\s\"'`,;]+)", "password-bare"),
    ("a key or token in prose", ("token", "key", "secret", "chave", "segredo"),
     r"(?i)\b(?:(?<!public )key|token|secret|chave|segredo)[ \t]+(?P<value>[A-Za-z0-9+/=_.~-]{16,})", "bare"),
]


def _check_assignment(how: str, value: str, quoted: bool, name: str | None = None) -> bool:
    if how == "name":  # `name = value`: how strong a name decides how the value is checked
        assert name is not None, "a `name = value` assignment comes with its name"
        if _pattern(_NAMES["strong"]).search(name):
            return literal(value, quoted=quoted, password=bool(_pattern(_NAMES["password"]).search(name)))
        low = name.lower()
        return bool(_pattern(_NAMES["weak"]).search(name)) and "public" not in low and random_looking(value)
    value = value.rstrip(".)") if not quoted else value
    if how == "password":
        return _password(value, quoted=quoted)
    if how == "password-bare":  # no "is" to say a value follows: letters alone are a word
        return literal(value) and any(not ch.isalpha() for ch in value) and "://" not in value
    if how == "bare":
        return random_looking(value) and not _digest(value)
    return random_looking(value)


def _digest(value: str) -> bool:
    """A UUID, or a commit or a SHA-256 in hex: ids and hashes, not keys."""
    low = value.lower()
    if len(low) == 36 and low.count("-") == 4 and all(ch in "0123456789abcdef-" for ch in low):
        return True
    return len(low) in (40, 64) and all(ch in "0123456789abcdef" for ch in low)


# -- finding and redacting ------------------------------------------------------------------------

_compiled: dict[str, object] = {}


def _pattern(source: str):
    pattern = _compiled.get(source)
    if pattern is None:
        import re  # here: most texts hold no trigger, and the hooks then never import re

        pattern = _compiled[source] = re.compile(source, re.DOTALL)
    return pattern


# The longest value of a setting searched again for an assignment inside it.
NESTED_MAX = 256
_TRIGGERS = frozenset(trigger for _, triggers, _, _ in _SHAPES + _ASSIGNMENTS for trigger in triggers)
# Characters from the most to the least frequent in English prose. A text holding a trigger
# holds each of its characters, so each trigger is filed under its rarest one (a character not
# listed counts as rarer than all of them) and searched for only in a text holding that one.
_COMMON_FIRST = " etaoinsrhldcu.mfpgwybv-kxjqz"


def _rarest(trigger: str) -> str:
    return max(trigger, key=lambda ch: _COMMON_FIRST.find(ch) if ch in _COMMON_FIRST else len(_COMMON_FIRST))


_BY_RAREST: dict[str, tuple[str, ...]] = {}
for _trigger in sorted(_TRIGGERS):
    _BY_RAREST[_rarest(_trigger)] = (*_BY_RAREST.get(_rarest(_trigger), ()), _trigger)
_FILED = tuple(_BY_RAREST.items())


def _present(low: str) -> set[str]:
    """The triggers the lowercased text holds. Every fact a search returns is redacted, so this
    runs a dozen times per search: a test of one character per file, then a search for the
    triggers filed under those the text holds (about half the time of a search for each
    trigger, on the claude-mem-lite observations and LoCoMo's turns), and no regex (an
    alternation of a hundred triggers is slower in `re` than the substring tests, and the hooks
    must not import it)."""
    return {trigger for rare, triggers in _FILED if rare in low for trigger in triggers if trigger in low}


def _hits(text: str, *, first: bool = False):
    """(start, end, kind) of every credential in `text`, in the order of the shapes."""
    low = text.lower()
    present = _present(low)
    if not present:
        return
    for kind, triggers, source, check in _SHAPES:
        if present.isdisjoint(triggers):
            continue
        for match in _pattern(source).finditer(text):
            span = match.span("value") if "value" in match.re.groupindex and match.group("value") else match.span()
            value = text[span[0] : span[1]]
            if isinstance(check, _Near):
                ok = check(value, text, match.start())
            elif "user" in match.re.groupindex or "flag" in match.re.groupindex:
                ok = check(value, match)  # type: ignore[operator]
            else:
                ok = check is None or check(value)  # type: ignore[operator]
            if ok:
                yield span[0], span[1], kind
                if first:
                    return
    for kind, triggers, source, how in _ASSIGNMENTS:
        if present.isdisjoint(triggers):
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
                if first:
                    return
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
            if first:
                return


# A markdown table column whose header holds one of these words holds secrets in its cells.
_TABLE_PASSWORDS = frozenset(("password", "passwd", "pwd", "senha", "pass"))
_TABLE_KEYS = frozenset(("secret", "segredo", "token", "key", "chave", "credential", "credencial", "value", "valor"))


def _table_hits(text: str):
    """(start, end, kind) of each secret in a markdown table's password or key column: a header
    row, a `|---|` row, then cells checked as a password's or a key's value."""
    columns: dict[int, bool] = {}  # column -> whether it holds passwords
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
                    columns[index] = False
        elif cells and columns:
            offset = at + line.index("|") + 1
            for index, cell in enumerate(cells):
                value = cell.strip().strip("`")
                if index in columns and value and (
                    literal(value, password=True) if columns[index] else random_looking(value) and not _digest(value)
                ):
                    start = offset + cell.index(value)
                    yield start, start + len(value), "a secret in a table"
                offset += len(cell) + 1
        elif not cells:
            columns = {}
        previous = cells
        at += len(line)


def triggered(text: str) -> bool:
    """Whether any shape could match `text` (else no regex need run, nor `re` be imported)."""
    return bool(_present(text.lower()))


def find(text: str) -> str | None:
    """The kind of credential `text` seems to hold ("a GitHub token"), or None."""
    for _, _, kind in _hits(text, first=True):
        return kind
    return None


def marker(kind: str) -> str:
    """What stands in a redacted text where a credential of this kind was."""
    return "[redacted: " + kind.split(" ", 1)[1] + "]"


def redact(text: str) -> str:
    """`text` with every credential replaced by a marker naming its kind; else `text` itself."""
    if not isinstance(text, str) or not text:
        return text
    spans = sorted(_hits(text), key=lambda hit: (hit[0], -hit[1]))
    if not spans:
        return text
    merged: list[list] = []
    for start, end, kind in spans:
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
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


def redact_json(value):
    """A JSON-shaped value (dicts, lists, strings) with every string in it redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: redact_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_json(item) for item in value]
    return value
