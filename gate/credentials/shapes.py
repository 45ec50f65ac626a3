"""The shapes of a credential: provider token formats, private key blocks, JWTs, credentials in
URLs, headers and command lines, and `password=`-style assignments or prose, each with the
lowercase substrings one of which any match holds (its triggers) and the check its value must
pass (gate.credentials.values). Patterns are compiled, and `re` imported, only when a text holds
a trigger (`_pattern`): on the hooks' path an ordinary prompt imports nothing.
"""

from gate.credentials.commands import COMMAND_LINES
from gate.credentials.prose import LATE_SHAPES
from gate.credentials.providers import PROVIDER_FORMATS, PROVIDER_TOKENS
from gate.credentials.sentences import (
    ID_KEYS,
    PASSWORD_STATES,
    SENTENCE_ASSIGNMENTS,
    STATEMENT_SHAPES,
    _quoted_password,
)
from gate.credentials.values import (
    _aws_secret,
    _is_word_like,
    _Near,
    _password,
    _password_literal,
    _pem_private,
    _placeholder,
    _token,
    _unspeakable,
    _words,
    hex_id as _digest,
    letters_password,
    literal,
    passphrase,
    random_looking,
)

# -- the shapes ------------------------------------------------------------------------------------

# Left and right edges of a token: not inside a longer run of letters and digits. A token may
# follow `_` (`GH_TOKEN_ghp_...`), which `\b` would not allow.
_L, _R = r"(?<![A-Za-z0-9])", r"(?![A-Za-z0-9])"

# (kind, triggers, pattern, check). `kind` is what a refusal names, with its article; the redaction
# marker names it without. A match is a credential when `check` (given the `value` group, or the
# whole match) says so; `redact` replaces the `value` group, or the whole match. A shape runs only
# on a text whose lowercase form holds one of its triggers. Order matters: `find` names the first.
_SHAPES: list[tuple[str, tuple[str, ...], str, object]] = [
    (
        "a private key",
        ("private key",),
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY"
        r"(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:-]*)",
        None,
    ),
    # A PuTTY key file's private part: the lines after `Private-Lines: <n>`.
    (
        "a private key",
        ("private-lines:",),
        r"Private-Lines:[ \t]*\d{1,3}[ \t]*\r?\n(?P<value>[A-Za-z0-9+/=]{16,}+(?:\r?\n[A-Za-z0-9+/=]{16,}+){0,200})",
        None,
    ),
    ("a private key", ("ls0tls1crudjti",), r"LS0tLS1CRUdJTi[A-Za-z0-9+/=]{20,}", _pem_private),
    ("an age secret key", ("age-secret-key-",), r"AGE-SECRET-KEY-1[0-9A-Z]{58}", None),
    (
        "an AWS access key id",
        ("akia", "asia", "abia", "acca", "a3t"),
        _L + r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[0-9A-Z]{16}" + _R,
        _token,
    ),
    ("a GitHub token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), _L + r"gh[pousr]_[A-Za-z0-9]{36,}" + _R, _token),
    ("a GitHub token", ("github_pat_",), _L + r"github_pat_[A-Za-z0-9_]{50,}" + _R, _token),
    (
        "a GitLab token",
        ("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glsoat-", "glft-", "glimt-", "gloas-", "glffct-", "glagent-"),
        _L + r"gl(?:pat|dt|rt|ptt|cbt|soat|ft|imt|oas|ffct|agent)-[A-Za-z0-9_-]{20,}",
        _token,
    ),
    ("an Anthropic API key", ("sk-ant-",), _L + r"sk-ant-[A-Za-z0-9_-]{32,}", _token),
    (
        "an OpenAI API key",
        ("sk-",),
        _L + r"sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{32,}" + _R + ")",
        _token,
    ),
    ("a Stripe key", ("sk_", "rk_"), _L + r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}" + _R, _token),
    ("a Stripe webhook secret", ("whsec_",), _L + r"whsec_[A-Za-z0-9]{24,}" + _R, _token),
    (
        "a Slack token",
        ("xox", "xapp-"),
        _L + r"(?:xox[abposre]-(?:\d+-)+[A-Za-z0-9]{8,}|xoxe(?:\.xox[bp])?-\d-[A-Za-z0-9]{30,}|"
        r"xapp-\d-[A-Z0-9]+-\d+-[A-Za-z0-9]{20,})",
        _token,
    ),
    (
        "a Slack webhook",
        ("hooks.slack.com",),
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<value>[A-Za-z0-9/_-]{20,})",
        _token,
    ),
    ("a Discord webhook", ("discord",), r"discord(?:app)?\.com/api/webhooks/(?P<value>\d+/[A-Za-z0-9_-]{40,})", _token),
    (
        "a Discord bot token",
        ("discord", "token", "bot"),
        _L + r"[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}" + _R,
        _token,
    ),
    ("a Google API key", ("aiza",), _L + r"AIza[0-9A-Za-z_-]{35}" + _R, _token),
    ("a Google OAuth client secret", ("gocspx-",), _L + r"GOCSPX-[A-Za-z0-9_-]{24,40}", _token),
    ("a Google OAuth token", ("ya29.",), _L + r"ya29\.[A-Za-z0-9_-]{30,}", _token),
    ("an npm token", ("npm_",), _L + r"npm_[A-Za-z0-9]{36}" + _R, _token),
    ("a PyPI token", ("pypi-",), _L + r"pypi-AgE[A-Za-z0-9_-]{50,}", None),
    ("a SendGrid key", ("sg.",), _L + r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}", _token),
    (
        "a Twilio API key",
        ("twilio", "token", "key", "secret"),
        _L + r"SK[0-9a-fA-F]{32}" + _R,
        _Near(("twilio", "token", "key", "secret"), _token, 200),
    ),
    ("an Okta API token", ("ssws",), r"\bSSWS\s+(?P<value>[A-Za-z0-9_-]{20,})", _token),
    ("an Okta API token", ("okta",), _L + r"00[A-Za-z0-9_-]{40}" + _R, _Near(("okta",), _token, 300)),
    (
        "a Supabase token",
        ("sbp_", "sb_secret_"),
        _L + r"(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{20,})" + _R,
        _token,
    ),
    ("a Mailgun key", ("key-",), _L + r"key-[0-9a-f]{32}" + _R, _token),
    ("a Mailchimp key", ("-us",), _L + r"[0-9a-f]{32}-us\d{1,2}" + _R, _token),
    ("a Hugging Face token", ("hf_",), _L + r"hf_[A-Za-z0-9]{30,}" + _R, _token),
    ("a Telegram bot token", (":aa",), r"(?<![0-9])\d{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])", _token),
    ("a Vault token", ("hvs.", "hvb.", "hvr."), _L + r"hv[sbr]\.[A-Za-z0-9_-]{24,}", _token),
    ("a DigitalOcean token", ("_v1_",), _L + r"do[opr]_v1_[a-f0-9]{64}" + _R, _token),
    (
        "a Shopify token",
        ("shpat_", "shpss_", "shpca_", "shppa_"),
        _L + r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}" + _R,
        _token,
    ),
    ("a Databricks token", ("dapi",), _L + r"dapi[a-f0-9]{32}(?:-\d)?" + _R, _token),
    ("an Azure client secret", ("q~",), r"(?<![\w~.-])[\w~.-]{3}\dQ~[\w~.-]{31,34}(?![\w~.-])", _token),
    (
        "an Azure storage key",
        ("accountkey=", "sharedaccesskey=", "account-key"),
        r"(?i)(?:AccountKey=|SharedAccessKey=|--account-key[= ]\s*)(?P<value>[A-Za-z0-9+/]{40,}={0,2})",
        _token,
    ),
    ("an Azure SAS signature", ("sig=",), r"(?<![\w.-])sig=(?P<value>[A-Za-z0-9%+/=]{20,})", _token),
    ("a Django secret key", ("django-insecure-",), r"django-insecure-[^\s'\"]{20,}", None),
    ("a Mapbox secret token", ("sk.eyj",), _L + r"sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}", None),
    ("a JSON Web Token", ("eyj",), _L + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", None),
    *PROVIDER_FORMATS,
    *PROVIDER_TOKENS,
    # A secret of 40 characters of base64 near a word that says AWS or secret, or after a key id.
    (
        "an AWS secret access key",
        ("aws", "secret", "akia", "asia"),
        r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
        _Near(("aws", "secret", "akia", "asia"), _aws_secret, 100, lines=True),
    ),
    # Credentials in a URL, a header or a command line.
    (
        "a connection string with a password",
        ("://",),
        r"(?i)\b[a-z][a-z0-9+.-]*://(?P<user>[^\s:/@]*(?:@[^\s:/@]+)?):(?P<value>/?[^\s/]+)@[^\s/@]+",
        lambda v, match: v.lower() != match.group("user").lower() and literal(v, password=True),
    ),
    (
        "a connection string with a password",
        ("jdbc:oracle",),
        r"(?i)jdbc:oracle:[a-z]+:[\w$#.]+/(?P<value>[^\s/]+?)@(?://|[\w.-]+:)",
        _password_literal,
    ),
    # A .pgpass line: host:port:database:user:password.
    (
        "a connection string with a password",
        (":5432:", ":*:"),
        r"(?m)^[\w.*-]+:(?:5432|\*):[\w.*-]+:[\w.*-]+:(?P<value>\S+)$",
        _password_literal,
    ),
    (
        "an Authorization header",
        ("authorization",),
        r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|bot|digest|apikey|api-token|"
        r"sso-key)\s+(?P<value>[A-Za-z0-9._~+/=@-]{8,})",
        lambda v: not _placeholder(v) and not v.isupper() and not (v.islower() and _is_word_like(v)),
    ),
    (
        "an Authorization header",
        ("authorization",),  # a scheme of the provider's own: `Splunk <uuid>`, `GenieKey <uuid>`
        r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?[A-Za-z][\w-]{1,24}\s+(?P<value>[A-Za-z0-9._~+/=@-]{16,})",
        random_looking,
    ),
    (
        "an Authorization header",
        ("authorization",),  # a credential without a scheme
        r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?P<value>[A-Za-z0-9._~+/=@-]{8,})",
        literal,
    ),
    ("a bearer token", ("bearer",), r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9._~+/-]{20,}=*)", random_looking),
    (
        "a password on a command line",
        ("curl", "wget", "http"),  # (httpie: `http -a user:<password>`)
        r"\s(?:-u|--user|-a|--auth)[= ]?\s*[\"']?[^\s:\"']*:[\"']?(?P<value>[^\s\"']+)",
        _Near(("curl", "wget", "http"), lambda v: literal(v, quoted=True, password=True)),
    ),  # a shell word: a literal, whatever its letters
    # A Kubernetes Secret's data: base64 values (padded, so a length of 4n) under `kind: Secret`.
    (
        "a Kubernetes secret value",
        ("kind: secret", "kind: 'secret'", 'kind: "secret"'),
        r"(?m)^[ \t]+[\w.-]+:[ \t]*(?:[|>][-+]?[ \t]*\n[ \t]+)?[\"']?(?P<value>[A-Za-z0-9+/]{10,}={0,2})[\"']?[ \t]*$",
        lambda v: len(v) % 4 == 0 and not _is_word_like(v) and not v.isdigit(),
    ),
    # A Twilio account SID and its auth token side by side: `Client("AC...", "<32 hex>")`.
    (
        "a Twilio auth token",
        ("ac",),
        r"(?<![A-Za-z0-9])AC[0-9a-f]{32}[\"']?[ \t]*[,:;/][ \t]*[\"']?(?P<value>[0-9a-f]{32})(?![A-Za-z0-9])",
        _token,
    ),
    *COMMAND_LINES,
    *STATEMENT_SHAPES,
]

# Names whose value is a secret: `DB_PASSWORD`, `client_secret`, `apiKey`, `x-api-key`,
# `_authToken`, `PGPASSWORD`. A bare `key` is too common a name (`sort_key`, `key=value`) and gets
# the stricter random_looking check below, unless it says public.
_STRONG = (
    r"password|passwd|passphrase|pass|pwd|senha|secret|token|api[_.-]?key|apikey|access[_.-]?key|"
    r"secret[_-]?key(?:[_-]?base)?|private[_-]?key|auth|credentials?|signature|sig|[_-]pat|psk"
)
_VALUE = (
    r"(?:(?P<q>[\"'`])(?P<qvalue>[^\"'`\n]*)(?P=q)"
    r"|(?P<value>(?:[^\s\"'`,;)}\]&<]|&(?![\w.-]+=))+))"
)
# Not `https://`: a URL's scheme names nothing. Not across a line: `openai:` above `  api_key: ...`
# is a YAML parent, whose first child must still be read as an assignment of its own.
_ASSIGN = r"[\"']?[ \t]*(?::=|=>|=|:(?!//))[ \t]*"
# The name is matched whole and its ending checked apart (`_NAMES`): a pattern that looked for
# the secret word inside every word would cost a long text quadratic time.
_NAMES = {
    "strong": rf"(?i)(?:{_STRONG})$",
    "weak": r"(?i)(?:[a-z0-9][_.-]?key(?:[_-]?base)?|appid)$",
    "password": r"(?i)(?:password|passwd|passphrase|pass|pwd|senha|psk)$",
}
# What may stand between a secret's name and "is" in prose: "for prod", "do banco", "de produção".
_OF = r"(?:\s+(?:for|of|on|to|in|at|from|with|do|da|de|dos|das|no|na|para|por|pelo|pela|com)(?:\s+[\w.@/-]+){1,6}?)?"
# And what may follow the name: "(prod)", "novo", "new": "server token (prod): ...".
_QUALIFIED = (
    r"(?:[ \t]*\((?![^()\n]*publi)[^()\n]{1,30}\)|[ \t]+(?:novo|nova|new|atual|current|antigo|antiga|old|temporary|"
    r"tempor[aá]ri[oa]|provis[oó]ri[oa])(?=[ \t]*[:=]|[ \t]+(?:is|é|ficou)\b))?"
)
# A word saying which, before a place: "o token novo do GitHub ficou ...".
_NEW = (
    r"(?:[ \t]+(?:novo|nova|new|atual|current|antigo|antiga|old|temporary|tempor[aá]ri[oa]|provis[oó]ri[oa])"
    r"(?=\s+(?:for|of|on|to|in|at|do|da|de|dos|das|no|na|para)\b))?"
)
# How prose says a value follows: "is", "is:", "=", ":", "->" (not code's `def password(self) ->`),
# "mudou pra", "changed to".
_IS = r"\s*(?:(?:is|was|are|é|era|ficou)[ \t]*:?|=|:|(?<!\))(?<!\) )->|\u2192|mudou[ \t]+(?:para|pra)|changed[ \t]+to|virou)\s+"
# A clause between a name and "is": "the token we use in prod is ...", "the key you asked for is".
_CLAUSE = r"(?:[ \t]+(?:we|you|i|they|that|which|que)(?:[ \t]+[\w']{2,20}){1,2})?"
_PROSE_VALUE = r"(?:(?P<q>[\"'`])(?P<qvalue>[^\"'`\n]{1,200})(?P=q)|(?P<value>[^\s\"'`,;]+))"
_ASSIGNMENTS = [
    (
        "a password or key assignment",
        ("pass", "pwd", "senha", "secret", "token", "key", "auth", "credential", "sig", "appid", "_pat", "-pat", "psk"),
        rf"(?<![\w.-])(?P<name>[\w.-]+){_ASSIGN}{_VALUE}",
        "name",
    ),
    # An environment variable followed by its value after a space: `AWS_SECRET_ACCESS_KEY <key>`.
    (
        "a password or key assignment",
        ("pass", "pwd", "secret", "token", "key", "appid"),
        r"(?<![\w-])[A-Z][A-Z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|KEY|APPID|_PASS|_PWD)[ \t]+(?P<q>[\"']?)"
        r"(?P<value>[^\s\"']+)(?P=q)",
        "weak",
    ),
    # Prose: "the password is ...", "my pw for the vpn is ...", "the API key is ...".
    # Prose, English or Portuguese: "the password is ...", "password for prod: ...", "a senha do
    # banco é ...", "my pw for the vpn is ...", "the API key is ...", "a chave do X é ...".
    (
        "a password in prose",
        ("pass", "pw", "pin ", "pin:", "pin=", "senha"),
        r"(?i)\b(?:passwords?|passphrase|passwd|pw|pwd|passcode|pin|senhas?)\b"
        + _NEW
        + _CLAUSE
        + _OF
        + _QUALIFIED
        + _IS
        + r"(?:now\s+|still\s+|just\s+|set\s+to\s+|agora\s+)?"
        + _PROSE_VALUE,
        "password",
    ),
    (
        "a key or token in prose",
        ("secret", "token", "key", "credential", "chave", "segredo", "pat"),
        r"(?i)\b(?P<name>secret(?:\s+(?:access\s+)?key)?|pat|personal\s+access\s+token|(?:api|access|auth|license|admin|server|app|master|signing|encryption|private)\s+(?:key|token)|token|"
        r"(?<!public )key|credentials?|chave|segredo)\b"
        + _NEW
        + _CLAUSE
        + _OF
        + _QUALIFIED
        + _IS
        + r"(?:now\s+|still\s+|set\s+to\s+|agora\s+)?"
        + _PROSE_VALUE,
        "weak",
    ),
    # A name and then the value, as in a topic or a note: "senha K5uq...", "Datadog key f691...".
    (
        "a password in prose",
        ("pass", "pw", "senha"),
        r"(?i)\b(?:password|passwd|pw|pwd|senha)[ \t]+(?:(?P<q>[\"'])(?P<qvalue>[^\"'\n]{1,200})(?P=q)|(?P<value>[^\s\"'`,;]+))",
        "password-bare",
    ),
    # A user, then `pass` and a value: "smtp user noreply@acme.com pass ...", a .netrc-like line.
    (
        "a password in prose",
        ("pass",),
        r"(?i)\b(?:user|username|usu[aá]rio|login)\b[ \t]*[:=]?[ \t]*[^\s:=]+[ \t,;|]+pass\b[ \t]*[:=]?[ \t]*"
        r"(?P<value>[^\s\"'`,;]+)",
        "password-bare",
    ),
    (
        "a key or token in prose",
        ("token", "key", "secret", "chave", "segredo", "cred"),
        r"(?i)\b(?P<name>(?:api|access|auth|server|secret|admin|app|master|signing|encryption|private)\s+(?:key|token)|(?<!public )key|token|secret|chave|"
        r"segredo|credentials?|creds|credenciais|(?:token|chave)[ \t]+de[ \t]+(?:api|acesso))"
        r"[ \t]+(?P<value>[A-Za-z0-9+/=_.~-]{16,})",
        "bare",
    ),
    # A name and its value as a call's two strings or a subscript's assignment: PHP's
    # `define('DB_PASSWORD', '...')`, `System.setProperty("x.token", "...")`, `ENV['X'] ||= '...'`.
    (
        "a password or key assignment",
        ("pass", "pwd", "senha", "secret", "token", "key", "auth", "credential", "appid", "_pat", "-pat", "psk"),
        r"[\"'](?P<name>[\w.-]+)[\"'][ \t]*(?:,|\][ \t]*(?:\|\|=|\?\?=|=))[ \t]*" + _VALUE,
        "name",
    ),
    # An XML element named for a secret: `<password>...</password>`, `<apiKey>...</apiKey>`.
    (
        "a password or key assignment",
        ("pass", "pwd", "senha", "secret", "token", "key", "auth", "credential", "pat>", "psk"),
        r"<(?P<name>[\w.:-]+)>(?P<value>[^<>\s\"'`]+)</(?P=name)>",
        "name",
    ),
    # A setting given as a name and a value apart: a pod spec's `- name: X` then `value: ...`, a
    # JSON `{"name": "X", "value": "..."}`, an XML `key="X" value="..."`. The name decides.
    (
        "a password or key assignment",
        ("value",),
        r"(?i)\b(?:name|key)[\"']?[ \t]*[:=][ \t]*[\"']?(?P<name>[\w.-]+)[\"']?[ \t]*,?[ \t]*(?:\r?\n[ \t]*)?"
        r"[\"']?value" + _ASSIGN + _VALUE,
        "name",
    ),
    # Terraform's variable named for a secret, and its default: `variable "db_password" {
    # default = "..." }`.
    (
        "a password or key assignment",
        ("variable",),
        r"\bvariable[ \t]+\"(?P<name>[\w.-]+)\"[ \t]*\{[^{}]{0,200}?\bdefault[ \t]*=[ \t]*" + _VALUE,
        "name",
    ),
    # A secret set to a value: "I changed the root password to ...", "mudei a senha do wifi para ...".
    (
        "a password in prose",
        ("pass", "senha", "pw"),
        r"(?i)\b(?:changed|set|reset|updated|rotated|mudei|troquei|alterei|mudamos|trocamos)\b[^\n]{0,40}?"
        r"\b(?:password|passwd|passphrase|pw|senha)\b(?:\s+(?:do|da|de|of|for|on)(?:\s+[\w.@-]+){1,3}?)?"
        r"\s+(?:to|para|pra)\s+" + _PROSE_VALUE,
        "password",
    ),
    # The value first, then what it is: "use <value> as the Twilio API key", "coloquei <value>
    # como token do ...".
    (
        "a key or token in prose",
        ("key", "token", "secret", "chave", "senha", "password", "credential", "pat"),
        r"(?i)(?<![\w+/=.~-])(?P<value>[A-Za-z0-9+/=_.~-]{16,}+)\s+(?:as|como|into|in|no|na|for|para)\s+"
        r"(?:(?:the|my|our|o|a|os|meu|minha|nosso|nossa)\s+)?(?:[\w&.-]+\s+){0,3}?"
        r"(?:key|token|secret|password|senha|chave|pat|credentials?)\b",
        "bare",
    ),
    *SENTENCE_ASSIGNMENTS,
]


_LATE = LATE_SHAPES


def _check_assignment(how: str, value: str, quoted: bool, name: str | None = None) -> bool:
    if how == "name":  # `name = value`: how strong a name decides how the value is checked
        assert name is not None, "a `name = value` assignment comes with its name"
        if value.startswith("base64:"):  # Laravel's `APP_KEY=base64:...`: the key follows
            value = value[len("base64:") :]
        if _pattern(_NAMES["strong"]).search(name) or _words(name)[-1:] == ["pat"]:  # (`azureDevopsPat`)
            return literal(value, quoted=quoted, password=bool(_pattern(_NAMES["password"]).search(name)))
        low = name.lower()
        # (a weak name takes no id or hash: `Idempotency-Key: <uuid>`, `cache_key = <sha>`)
        weak = bool(_pattern(_NAMES["weak"]).search(name)) and "public" not in low
        # (but a product's key holds hex: `WANDB_KEY=<40 hex>`, `ddAppKey`, not `CACHE_KEY=<sha>`)
        words = _words(name)
        product = len(words) >= 2 and words[-1] == "key" and words[-2] not in ID_KEYS and "-" not in value
        return weak and random_looking(value) and (not _digest(value) or product)
    value = value.rstrip(".)?") if not quoted else value  # (a question's mark: "password required?")
    if how == "weak" and name is not None and name.lower() in ("key", "chave") and _digest(value):
        return False  # a bare "key" before an id or a hash: `Idempotency-Key: <uuid>`
    if how == "password":
        return _password(value, quoted=quoted)
    if how == "quoted-password":
        return _quoted_password(value) if quoted else literal(value, password=True)
    if how == "product-key":  # a hex key after a product's name, not a cache's or a signing key's
        return name is not None and name.lower() not in ID_KEYS and (len(value) in (32, 40, 64) or _digest(value))
    if how == "capitalised":
        return value.lower() not in PASSWORD_STATES and not _placeholder(value)
    if how == "passphrase":  # (unquoted, the rest of a line: four words at least)
        return passphrase(value, fewest=3 if quoted else 4)
    if how == "password-paren":  # a password's shape, not a word with a digit (`argon2id`, `sha256`)
        if " " in value:
            return passphrase(value)
        return _password(value) and (
            any(not ch.isalnum() for ch in value)
            or (value != value.lower() and value != value.upper())
            or (value.isdigit() and len(value) >= 6)
            or random_looking(value)
        )
    if how == "placed":  # a key and where it belongs, then its value: no id nor hash, but a hex key
        # where a product's name is the place ("a chave do Acme <40 hex>", not "for tenant <uuid>")
        product = (name or "").lower() not in ID_KEYS and "-" not in value
        return random_looking(value) and (not _digest(value) or product)
    if how == "password-bare":  # no "is" to say a value follows: letters alone are a word,
        # unless no language would write them (`rnjdrbkmvpdzc`, `HarborRiverMoon`)
        if "://" in value or value.endswith(":") or not literal(value, password=True):
            return False
        if quoted and " " in value:  # (`password 'harbor quindim lantern'`, not `password 'reset link'`)
            return passphrase(value)
        if any(not ch.isalpha() for ch in value):
            return True
        # (`strength` has few vowels but is a word: only unspeakable runs and three humps count)
        return letters_password(value) and (_unspeakable(value) if value.islower() else len(_words(value)) >= 3)
    if how == "bare":  # a hex id or hash is a key only after a name of two words ("API key <hex>")
        return random_looking(value) and (not _digest(value) or (name is not None and " " in name.strip()))
    return random_looking(value)


_compiled: dict[str, object] = {}


def _pattern(source: str):
    pattern = _compiled.get(source)
    if pattern is None:
        import re  # here: most texts hold no trigger, and the hooks then never import re

        pattern = _compiled[source] = re.compile(source, re.DOTALL)
    return pattern
