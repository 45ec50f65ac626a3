"""Provider token shapes: the prefixes and lengths providers issue keys in, each with its
triggers (lowercase substrings one of which any match holds), and, for providers not listed, the
way most now issue them: a short lowercase name, `_` or `-`, then a long random run of both cases
and digits (`figd_...`, `pcsk_...`, `nvapi-...`). gate.credentials.shapes reads them first.
"""

from gate.credentials.values import _Near, _token, _unspeakable, _wordy, random_looking

_L, _R = r"(?<![A-Za-z0-9])", r"(?![A-Za-z0-9])"

# Names before `_` or `-` that make a long random run an id, a hash, a nonce or a public key, not
# a secret: Stripe's and OpenAI's object ids, checksums, CSP nonces, publishable keys.
NOT_SECRET_PREFIXES = frozenset(
    "pk pub public publishable phc cs pi ch cus in evt txn acct price prod sub seti src pm py po tr "
    "chatcmpl msg toolu req request file batch run asst thread resp call id uuid guid trace span build "
    "job commit sha sha1 sha224 sha256 sha384 sha512 md5 hash digest nonce csrf xsrf state rev ver "
    "v release image layer blob tree session sess cache etag usr user org team ws doc obj item node conv chat "
    "ticket inv ord cust tx test spec git img file asset upload checksum chunk part snapshot backup "
    "object content fp fingerprint salt iv block addr txid hex".split()
)


# What a refusal names a token of an unlisted provider; a listed shape's name wins where both match.
UNLISTED = "a token of some provider"


def _prefixed_random(value: str, match) -> bool:
    """A run issued by an unlisted provider: its name is no id's or hash's, and the run after it
    mixes both cases and digits in a long unbroken stretch."""
    after = match.string[match.end() : match.end() + 1]
    if after and after in "+/=." or len(value) > 400:  # base64 going on (`sha512-...+/`), or no token
        return False
    prefix = match.group("prefix")
    if not (prefix.islower() or prefix.isupper()):  # `Bxi-...`: a random id's chunk, not a name
        return False
    prefix = prefix.lower()
    if prefix in NOT_SECRET_PREFIXES or (prefix[0] == "v" and prefix[1:].isdigit()):
        return False
    longest = max(len(part) for part in value.replace("-", "_").split("_"))
    if value.islower() and longest >= 40:  # one case, as a long base32 or base36 run is issued
        run = max(value.replace("-", "_").split("_"), key=len)
        digits = sum(ch.isdigit() for ch in run)
        hexadecimal = all(ch in "0123456789abcdef" for ch in run)
        return 8 <= digits <= len(run) - 16 and not hexadecimal and _unspeakable(run) and _token(value)
    if _wordy(value):  # whole words: `OAuth2RefreshTokenExpires3600`
        return False
    return (
        longest >= 20
        and any(ch.isupper() for ch in value)
        and any(ch.islower() for ch in value)
        and sum(ch.isdigit() for ch in value) >= 2
        and _token(value)
    )


def _secret_key(value: str) -> bool:
    return len(value) <= 400 and random_looking(value) and _token(value)


PROVIDER_TOKENS: list[tuple[str, tuple[str, ...], str, object]] = [
    (
        "a provider token",
        (
            "lin_",
            "ntn_",
            "secret_",
            "pmak-",
            "atatt",
            "glsa_",
            "glc_",
            "nrak-",
            "gsk_",
            "r8_",
            "dckr_pat_",
            "dp.st.",
            "dp.sa.",
            "dp.ct.",
            "dp.pt.",
            "dp.scim.",
            "dp.audit.",
            "sntry",
            "xai-",
            "pplx-",
            "eaa",
            "sq0",
            "atlasv1",
            "pul-",
            "hrku-",
            "sl.",
            "oy2",
            "ico-",
            "flwseck",
            "pat",
        ),
        _L + r"(?:lin_(?:api|oauth)_[A-Za-z0-9]{40}|ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43}|"
        r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}|ATATT3[A-Za-z0-9_=-]{100,}|glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}|"
        r"glc_[A-Za-z0-9+/=]{32,}|NRAK-[A-Z0-9]{27}|gsk_[A-Za-z0-9]{48,}|r8_[A-Za-z0-9]{37}|"
        r"dckr_pat_[A-Za-z0-9_-]{27,}|dp\.(?:st|sa|ct|pt|scim|audit)\.[A-Za-z0-9_.-]{40,}|"
        r"sntry[su]_[A-Za-z0-9+/=_-]{40,}|xai-[A-Za-z0-9]{70,}|pplx-[A-Za-z0-9]{40,}|EAA[A-Z][A-Za-z0-9_-]{60,}|"
        r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}|[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}|pul-[a-f0-9]{40}|"
        r"HRKU-[A-Za-z0-9_-]{40,}|sl\.[A-Za-z0-9_-]{120,}|oy2[a-z0-9]{43}|ico-[A-Za-z0-9]{32}|"
        r"FLWSECK(?:_TEST)?-[a-f0-9]{32}-X|pat[A-Za-z0-9]{14}\.[a-f0-9]{64})",
        _token,
    ),
    (
        "a provider token",
        (
            "atbb",
            ":apa91b",
            "ltai",
            "figd_",
            "app_usr-",
            "pscale_",
            "nfp_",
            "lsv2_",
            "tskey-",
            "squ_",
            "sqp_",
            "sqa_",
            "ccipat_",
            "rubygems_",
            "pat-",
            "dt0c01.",
            "xkeysib-",
            "cfpat-",
            "aaaaaaaaaaaaaaaaaaaa",
            "access-",
            "$aact_",
            "client_secret_",
        ),
        _L
        + r"(?:ATBB[A-Za-z0-9_=-]{28,}|AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,}|LTAI[A-Za-z0-9]{12,24}"
        + _R
        + "|"
        r"figd_[A-Za-z0-9_-]{36,}|APP_USR-\d{6,}-\d{6}-[a-f0-9]{32}-\d{6,}|pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{30,}|"
        r"nfp_[A-Za-z0-9]{36,}|lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}|tskey-[a-z]+-[A-Za-z0-9]+-[A-Za-z0-9]{20,}|"
        r"sq[upa]_[a-f0-9]{40}|CCIPAT_[A-Za-z0-9]{20,}_[a-f0-9]{40}|rubygems_[a-f0-9]{48}|"
        r"pat-(?:na|eu|ap)\d-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}|"
        r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}|xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}|CFPAT-[A-Za-z0-9_-]{40,}|"
        r"A{20,}[A-Za-z0-9%]{40,}|access-(?:sandbox|development|production)-[a-f0-9]{8}-[a-f0-9-]{27}|"
        r"\$aact_[A-Za-z0-9_=+/-]{40,}|Client_Secret_[A-Za-z0-9]{40})",
        _token,
    ),
    # An Asana personal access token: `2/<user id>/<app id>:<32 hex>`.
    (
        "a provider token",
        ("/",),
        r"(?<![\w/])[0-9]/[0-9]{13,19}(?:/[0-9]{13,19})?:(?P<value>[a-f0-9]{32})" + _R,
        _token,
    ),
    # `sk-` then a provider's name: `sk-or-v1-...`, `sk-lf-...` (all of it redacted: the head too).
    (
        "a provider token",
        ("sk-",),
        _L + r"sk-[a-z]{2,8}-(?:v\d+-)?[A-Za-z0-9_-]{32,}",
        _secret_key,
    ),
    (
        UNLISTED,
        ("_", "-"),
        r"(?<![A-Za-z0-9_./-])(?P<prefix>[A-Za-z][A-Za-z0-9]{1,11})[_-]"
        r"(?P<value>[A-Za-z0-9][A-Za-z0-9_-]{29,}+)",
        _prefixed_random,
    ),
]


def _live_key(value: str, match) -> bool:
    """A key whose name says the environment it opens (`shippo_live_...`, `<name>_test_...`), as
    Stripe's own made the custom: a secret unless its name says public or an id's."""
    prefix = match.group("prefix").lower()
    run = value.rsplit("_", 1)[1]  # (a random run, not a test's name: `api_test_ValidatesTokenRefresh`)
    return (
        prefix not in NOT_SECRET_PREFIXES
        and prefix not in ("pk", "rk")
        and sum(ch.isdigit() for ch in run) >= 2
        and not _wordy(run)
        and _token(value[len(prefix) :])
    )


def _secret_run(value: str) -> bool:
    return random_looking(value) and _token(value)


# Formats with a fixed head, in the order a refusal names them.
PROVIDER_FORMATS: list[tuple[str, tuple[str, ...], str, object]] = [
    # An AWS STS session token: base64 of a fixed header, so it always starts the same way.
    (
        "an AWS session token",
        ("iqojb3jpz2lux2vj", "fwogzxivyxdze"),
        r"(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdzE)[A-Za-z0-9+/]{80,}={0,2}",
        _token,
    ),
    # A Google OAuth refresh token: `1//0` then a long run.
    ("a Google OAuth token", ("1//0",), r"(?<![\w/])1//0[A-Za-z0-9_-]{60,}", _token),
    (
        "a provider token",
        ("_live_", "_test_", "_prod_", "_sandbox_"),
        _L + r"(?P<prefix>[a-z]{2,12})_(?:live|test|prod|sandbox)_[A-Za-z0-9]{24,}+" + _R,
        _live_key,
    ),
    # `sk_` ("secret key") then a long hex or random run, as ElevenLabs and others issue it.
    ("a provider token", ("sk_",), _L + r"sk_(?P<value>[A-Za-z0-9]{32,}+)" + _R, _secret_run),
    (
        "a provider token",
        (
            "access_token$",
            "akcp",
            "cmvmdgtu",
            "api-",
            "v1.0-",
            "!aq",
            "ezak",
            "eztk",
            "ops_eyj",
            "st.",
        ),
        _L + r"(?:access_token\$(?:production|sandbox|development)\$[a-z0-9]{16}\$[a-f0-9]{32}|"
        r"AKCp[A-Za-z0-9]{60,}|cmVmdGtu[A-Za-z0-9]{56,}|API-[A-Z0-9]{25,32}" + _R + r"|"
        r"v1\.0-[a-f0-9]{24}-[a-f0-9]{120,}|00D[A-Za-z0-9]{12,15}![A-Za-z0-9._]{80,}|EZ[AT]K[A-Za-z0-9]{40,}|"
        r"ops_eyJ[A-Za-z0-9_-]{100,}|st\.[a-f0-9]{24}\.[a-f0-9]{32}\.[a-f0-9]{32})",
        lambda value: _token(value) and sum(ch.isdigit() for ch in value) >= 3,
    ),
    # A Backblaze B2 application key: `K` and three digits, then 27 characters of base64.
    (
        "a Backblaze application key",
        ("k00",),
        r"(?<![A-Za-z0-9+/])K00\d[A-Za-z0-9+/]{27}(?![A-Za-z0-9+/=])",
        _secret_run,
    ),
    # A Fly.io token: `fm1r_`, `fm1a_` or `fm2_`, then a macaroon in base64.
    (
        "a Fly.io token",
        ("fm1", "fm2"),
        r"(?<![\w/+])fm(?:1[ar]|2)_[A-Za-z0-9+/_-]{40,}={0,2}",
        _token,
    ),
    # A Bitwarden machine account token: `0.<uuid>.<secret>:<key in base64>`.
    (
        "a Bitwarden access token",
        ("0.",),
        r"(?<![\w.])0\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.[A-Za-z0-9]{20,40}:"
        r"[A-Za-z0-9+/]{16,}={0,2}",
        None,
    ),
    # A Microsoft Teams incoming webhook: its last two parts are the secret.
    (
        "a Teams webhook",
        ("webhook.office.com",),
        r"webhook\.office\.com/webhookb2/[0-9a-f-]{36}@[0-9a-f-]{36}/IncomingWebhook/"
        r"(?P<value>[0-9a-f]{32}/[0-9a-f-]{36})",
        _token,
    ),
    # More issued heads: crates.io `cio`, Tencent Cloud `AKID`, ClickUp `pk_<user>_`, Intercom's
    # base64 of `tok:`, WooCommerce's `ck_`/`cs_` and 40 hex.
    (
        "a provider token",
        ("cio", "akid", "pk_", "dg9ro", "ck_", "cs_"),
        _L + r"(?:cio[A-Za-z0-9]{32}|AKID[A-Za-z0-9]{32}|pk_\d{6,10}_[A-Z0-9]{32}|dG9rO[A-Za-z0-9+/]{30,}={0,2}|"
        r"c[ks]_[a-f0-9]{40})" + _R,
        lambda value: _token(value) and sum(ch.isdigit() for ch in value) >= 3,
    ),
    # An unlisted provider's short name, `_`, then 40 hex or more (`bkua_...`, `sgp_..._...`): a key,
    # unless the name is an id's or a hash's (`sha1_`, `commit_`, `git_`).
    (
        "a provider token",
        ("_",),
        r"(?<![A-Za-z0-9_./-])(?P<prefix>[a-z]{2,8})_(?:[a-f0-9]{8,16}_)?[a-f0-9]{40,}+" + _R,
        lambda value, match: match.group("prefix") not in NOT_SECRET_PREFIXES and _token(value),
    ),
    # An ngrok authtoken: a digit, 26 characters, `_`, then 21 more, near its name.
    (
        "a provider token",
        ("ngrok", "authtoken"),
        _L + r"[12][A-Za-z0-9]{25,27}_[A-Za-z0-9]{20,22}" + _R,
        _Near(("ngrok", "authtoken"), _token, 200),
    ),
]
