"""Generated credential samples and look-alikes for bench/credentials.py and tests/test_secrets.py.

Every value is made here from random characters with a fixed seed, in the shape a provider
issues (prefix, alphabet, length): none is, or was, a real credential. Each sample is a value put
into a context where text lands in memory: a config file, a URL, a shell line, a markdown table,
prose in English or Portuguese, or a one-line topic.

Three parts:

- `tuning`: seed 1 and the `_TUNING` contexts, the part the detector is developed against;
- `contaminated`: seed 2 and the `_HELD_OUT` contexts (other phrasings, other file formats, other
  look-alikes). It was written as a held-out part, but its misses were read and written down while
  the detector was widened, so it is no longer evidence: reported, not called held-out;
- `fresh`: bench/_credential_fresh.py, seed 30, new contexts, password shapes, providers and
  look-alikes, written before the detector changed again and measured only, then spent to tune
  (issue 30's second widening read its misses): tuning data now, no evidence. A blind part
  written by another hand, never seen while tuning, judges the detector.

The tuning and contaminated parts share the providers' shapes (a token format is a fact, not a
phrasing); the fresh part adds token formats neither holds.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass

UPPER, LOWER, DIGITS = string.ascii_uppercase, string.ascii_lowercase, string.digits
ALNUM = UPPER + LOWER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


PARTS = ("tuning", "contaminated", "fresh")


@dataclass(frozen=True)
class Sample:
    group: str  # the provider or the kind of look-alike
    context: str  # where the value sits: config, url, shell, table, prose-en, prose-pt, topic
    text: str
    value: str = ""  # the secret itself (empty for a look-alike): redaction must remove it


def _run(rng: random.Random, alphabet: str, n: int) -> str:
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(n))
        # Shaped as issued: mixed, as random keys of that alphabet almost always are.
        kinds = sum(any(ch in part for ch in value) for part in (UPPER, LOWER, DIGITS))
        if kinds >= min(2, sum(any(ch in part for ch in alphabet) for part in (UPPER, LOWER, DIGITS))):
            return value


# -- the providers: (group, env name, config key, label in prose, make the value) ----------------


def _providers(rng: random.Random) -> list[tuple[str, str, str, str, object]]:
    r = lambda alphabet, n: lambda: _run(rng, alphabet, n)  # noqa: E731
    pre = lambda prefix, alphabet, n, suffix="": lambda: prefix + _run(rng, alphabet, n) + suffix  # noqa: E731
    return [
        ("aws access key id", "AWS_ACCESS_KEY_ID", "access_key_id", "AWS key id", pre("AKIA", UPPER + DIGITS, 16)),
        ("aws secret key", "AWS_SECRET_ACCESS_KEY", "secret_access_key", "AWS secret", r(B64, 40)),
        ("github classic", "GITHUB_TOKEN", "token", "GitHub token", pre("ghp_", ALNUM, 36)),
        (
            "github fine-grained",
            "GH_TOKEN",
            "token",
            "GitHub PAT",
            lambda: "github_pat_11" + _run(rng, UPPER + DIGITS, 20) + "_" + _run(rng, ALNUM, 59),
        ),
        ("gitlab", "GITLAB_TOKEN", "private_token", "GitLab token", pre("glpat-", URLSAFE, 20)),
        ("anthropic", "ANTHROPIC_API_KEY", "api_key", "Anthropic key", pre("sk-ant-api03-", URLSAFE, 93, "AA")),
        ("openai", "OPENAI_API_KEY", "api_key", "OpenAI key", pre("sk-proj-", URLSAFE, 48)),
        ("stripe", "STRIPE_SECRET_KEY", "secret_key", "Stripe key", pre("sk_live_", ALNUM, 24)),
        (
            "stripe webhook",
            "STRIPE_WEBHOOK_SECRET",
            "webhook_secret",
            "Stripe webhook secret",
            pre("whsec_", ALNUM, 32),
        ),
        (
            "slack",
            "SLACK_BOT_TOKEN",
            "bot_token",
            "Slack bot token",
            lambda: f"xoxb-{rng.randrange(10**11, 10**12)}-{rng.randrange(10**12, 10**13)}-{_run(rng, ALNUM, 24)}",
        ),
        (
            "discord",
            "BOT_TOKEN",
            "bot_token",
            "bot token",
            lambda: (
                rng.choice("MN") + _run(rng, ALNUM, 25) + "." + _run(rng, URLSAFE, 6) + "." + _run(rng, URLSAFE, 38)
            ),
        ),
        ("google api", "GOOGLE_API_KEY", "api_key", "Google API key", pre("AIza", URLSAFE, 35)),
        ("google oauth", "GOOGLE_CLIENT_SECRET", "client_secret", "Google client secret", pre("GOCSPX-", URLSAFE, 28)),
        ("npm", "NPM_TOKEN", "_authToken", "npm token", pre("npm_", ALNUM, 36)),
        ("pypi", "PYPI_TOKEN", "password", "PyPI token", pre("pypi-AgEIcHlwaS5vcmc", URLSAFE, 60)),
        (
            "sendgrid",
            "SENDGRID_API_KEY",
            "api_key",
            "SendGrid key",
            lambda: "SG." + _run(rng, URLSAFE, 22) + "." + _run(rng, URLSAFE, 43),
        ),
        ("twilio api key", "TWILIO_API_KEY", "api_key", "Twilio API key", pre("SK", HEX, 32)),
        ("mailgun", "MAILGUN_API_KEY", "api_key", "Mailgun key", pre("key-", HEX, 32)),
        ("mailchimp", "MAILCHIMP_API_KEY", "api_key", "Mailchimp key", pre("", HEX, 32, "-us14")),
        ("hugging face", "HF_TOKEN", "token", "Hugging Face token", pre("hf_", ALNUM, 34)),
        (
            "telegram",
            "TELEGRAM_BOT_TOKEN",
            "bot_token",
            "Telegram bot token",
            lambda: f"{rng.randrange(10**9, 10**10)}:AA{_run(rng, URLSAFE, 33)}",
        ),
        ("vault", "VAULT_TOKEN", "token", "Vault token", pre("hvs.", URLSAFE, 90)),
        ("digitalocean", "DIGITALOCEAN_TOKEN", "token", "DigitalOcean token", pre("dop_v1_", HEX, 64)),
        ("shopify", "SHOPIFY_ACCESS_TOKEN", "access_token", "Shopify token", pre("shpat_", HEX, 32)),
        ("databricks", "DATABRICKS_TOKEN", "token", "Databricks token", pre("dapi", HEX, 32)),
        (
            "azure client secret",
            "AZURE_CLIENT_SECRET",
            "client_secret",
            "Azure client secret",
            lambda: _run(rng, ALNUM, 3) + str(rng.randrange(10)) + "Q~" + _run(rng, ALNUM + "_.-", 34),
        ),
        ("okta", "OKTA_API_TOKEN", "api_token", "Okta token", pre("00", URLSAFE, 40)),
        ("supabase", "SUPABASE_ACCESS_TOKEN", "access_token", "Supabase token", pre("sbp_", HEX, 40)),
        ("groq", "GROQ_API_KEY", "api_key", "Groq key", pre("gsk_", ALNUM, 52)),
        ("linear", "LINEAR_API_KEY", "api_key", "Linear key", pre("lin_api_", ALNUM, 40)),
        ("notion", "NOTION_TOKEN", "token", "Notion token", pre("ntn_", ALNUM, 46)),
        (
            "postman",
            "POSTMAN_API_KEY",
            "api_key",
            "Postman key",
            lambda: "PMAK-" + _run(rng, HEX, 24) + "-" + _run(rng, HEX, 34),
        ),
        ("docker hub", "DOCKERHUB_TOKEN", "token", "Docker Hub token", pre("dckr_pat_", URLSAFE, 27)),
        ("new relic", "NEW_RELIC_API_KEY", "api_key", "New Relic key", pre("NRAK-", UPPER + DIGITS, 27)),
        (
            "grafana",
            "GRAFANA_TOKEN",
            "token",
            "Grafana token",
            lambda: "glsa_" + _run(rng, ALNUM, 32) + "_" + _run(rng, HEX, 8),
        ),
        ("replicate", "REPLICATE_API_TOKEN", "api_token", "Replicate token", pre("r8_", ALNUM, 37)),
        ("perplexity", "PPLX_API_KEY", "api_key", "Perplexity key", pre("pplx-", ALNUM, 48)),
        ("heroku", "HEROKU_API_KEY", "api_key", "Heroku key", pre("HRKU-", URLSAFE, 60)),
        ("doppler", "DOPPLER_TOKEN", "token", "Doppler token", pre("dp.st.prd.", ALNUM, 43)),
        ("cloudflare", "CLOUDFLARE_API_TOKEN", "api_token", "Cloudflare token", r(URLSAFE, 40)),
        ("datadog", "DD_API_KEY", "api_key", "Datadog key", r(HEX, 32)),
        ("openweathermap", "OWM_APPID", "appid", "OpenWeatherMap key", r(HEX, 32)),
        ("twilio auth token", "TWILIO_AUTH_TOKEN", "auth_token", "Twilio auth token", r(HEX, 32)),
        ("algolia", "ALGOLIA_ADMIN_KEY", "admin_api_key", "Algolia admin key", r(HEX, 32)),
        (
            "jwt",
            "SESSION_TOKEN",
            "session_token",
            "session token",
            lambda: "eyJhbGciOiJIUzI1NiJ9.eyJ" + _run(rng, URLSAFE, 40) + "." + _run(rng, URLSAFE, 43),
        ),
    ]


# Passwords: the shapes people choose, which no prefix names.
def _password(rng: random.Random, shape: str) -> str:
    word = rng.choice(
        [
            "Sphere",
            "Falcon",
            "Orange",
            "Harbor",
            "Copper",
            "Meadow",
            "Yourself",
            "Wherever",
            "Maxxxine",
            "Thereafter",
            "Lantern",
            "Quartz",
            "Pinhal",
            "Cerrado",
            "Jabuti",
            "Saudade",
        ]
    )
    year = str(rng.randrange(1990, 2031))
    if shape == "symbol-first":
        return rng.choice("!@*%/") + word + year + rng.choice("#$")
    if shape == "letters":
        return "".join(rng.choice(LOWER) for _ in range(rng.randrange(9, 14)))
    if shape == "letters-mixed":
        return word + rng.choice(["Blue", "Stone", "River", "Tiger", "Noite"]) + rng.choice(["Sky", "Moon", "Leaf"])
    if shape == "word-year":
        return word + year + rng.choice("!?#.")
    return _run(rng, ALNUM + "!#%&*+-=?@^_", rng.randrange(12, 20))


_PASSWORD_SHAPES = ("symbol-first", "letters", "letters-mixed", "word-year", "random")


# -- contexts -------------------------------------------------------------------------------------
# Each takes (env, key, label, value, provider group) and returns the text; `{value}` stands once.

_TUNING = {
    "config": [
        lambda env, key, label, value, group: f"{env}={value}",
        lambda env, key, label, value, group: f'export {env}="{value}"',
        lambda env, key, label, value, group: f"{group.split()[0]}:\n  {key}: {value}\n  region: us-east-1",
        lambda env, key, label, value, group: f'{{"{key}": "{value}", "timeout": 30}}',
    ],
    "shell": [
        lambda env, key, label, value, group: f"deploy --token {value} --env prod",
        lambda env, key, label, value, group: f'curl -H "Authorization: Bearer {value}" https://api.example.com/v1/me',
        lambda env, key, label, value, group: f"{env}={value} ./run-migrations.sh",
    ],
    "table": [
        lambda env, key, label, value, group: f"| service | key |\n|---|---|\n| {group} | {value} |",
    ],
    "prose-en": [
        lambda env, key, label, value, group: f"The {label} is {value}",
        lambda env, key, label, value, group: f"use {value} as the {label} for staging",
        lambda env, key, label, value, group: f"{label} for prod: {value}",
    ],
    "prose-pt": [
        lambda env, key, label, value, group: f"o {label} de produção é {value}",
        lambda env, key, label, value, group: f"a chave do {group} é {value}",
    ],
    "topic": [
        lambda env, key, label, value, group: f"{label} {value}",
    ],
}

_HELD_OUT = {
    "config": [
        lambda env, key, label, value, group: f'[{group.split()[0]}]\n{key} = "{value}"',
        lambda env, key, label, value, group: f"services:\n  api:\n    environment:\n      {env}: {value}",
        lambda env, key, label, value, group: f'<add key="{env}" value="{value}" />',
        lambda env, key, label, value, group: f"{key}={value}\n",
    ],
    "shell": [
        lambda env, key, label, value, group: f"./bin/sync --api-key={value} --dry-run",
        lambda env, key, label, value, group: f"$env:{env} = '{value}'",
        lambda env, key, label, value, group: f"heroku config:set {env}={value}",
    ],
    "table": [
        lambda env, key, label, value, group: (
            f"| Provedor | Variável | Valor |\n| --- | --- | --- |\n| {group} | {env} | `{value}` |"
        ),
    ],
    "prose-en": [
        lambda env, key, label, value, group: f"here's the {label}: {value}",
        lambda env, key, label, value, group: f"I rotated the {label} yesterday, the new one is {value}.",
    ],
    "prose-pt": [
        lambda env, key, label, value, group: f"{label} de homologação: {value}",
        lambda env, key, label, value, group: f"troquei o {label} ontem, agora é {value}",
    ],
    "topic": [
        lambda env, key, label, value, group: f"{env} {value}",
    ],
}

# Passwords in their own contexts (a password has no provider prefix; its name carries it).
_TUNING_PASSWORDS = [
    ("config", lambda value: f"DB_PASSWORD={value}"),
    ("config", lambda value: f"postgres:\n  password: {value}\n  host: db.internal"),
    ("url", lambda value: f"redis://:{value}@cache.internal:6379/0"),
    ("url", lambda value: f"postgresql://app:{value}@db.internal:5432/orders"),
    ("url", lambda value: f"smtp://alerts@example.com:{value}@smtp.example.com:587"),
    ("shell", lambda value: f"mysql -h db -u root -p{value} orders"),
    ("table", lambda value: f"| host | user | password |\n|---|---|---|\n| db01 | admin | {value} |"),
    ("prose-en", lambda value: f"password for prod: {value}"),
    ("prose-en", lambda value: f"the admin password is {value}"),
    ("prose-pt", lambda value: f"a senha do banco é {value}"),
    ("topic", lambda value: f"senha {value}"),
]
_HELD_OUT_PASSWORDS = [
    ("config", lambda value: f'[database]\npassword = "{value}"'),
    ("config", lambda value: f"spring.datasource.password={value}"),
    ("url", lambda value: f"amqp://worker:{value}@rabbit.internal:5672/"),
    ("url", lambda value: f"mongodb+srv://ops:{value}@cluster0.example.net/app"),
    ("url", lambda value: f"ftp://backup@example.org:{value}@files.example.org/"),
    ("shell", lambda value: f"sshpass -p '{value}' ssh deploy@10.0.0.5"),
    ("table", lambda value: f"| Ambiente | Usuário | Senha |\n| --- | --- | --- |\n| prod | root | {value} |"),
    ("prose-en", lambda value: f"wifi password: {value}"),
    ("prose-en", lambda value: f"the root pw is {value}"),
    ("prose-pt", lambda value: f"senha do servidor de produção: {value}"),
    ("topic", lambda value: f"vpn password {value}"),
]

# Two values that only mean a credential together: a Twilio account SID and its auth token.
_PAIRS = {
    "tuning": lambda sid, token: f"TWILIO_ACCOUNT_SID={sid}\nTWILIO_AUTH_TOKEN={token}",
    "contaminated": lambda sid, token: f"twilio: conta {sid} / token {token}",
}


# -- look-alikes ----------------------------------------------------------------------------------


def _hexrun(rng, n):
    return "".join(rng.choice(HEX) for _ in range(n))


def _uuid(rng):
    h = _hexrun(rng, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


_WORDS = ["deploy", "staging", "billing", "search", "ingest", "auth", "reports", "payments", "webhooks", "mailer"]

_TUNING_BENIGN = [
    ("placeholder", lambda rng, env, label: f"{env}=<your {label.lower()}>"),
    ("placeholder", lambda rng, env, label: f"{env}=your-{label.lower().replace(' ', '-')}-here"),
    ("placeholder", lambda rng, env, label: f"{env}=xxxxxxxxxxxxxxxx"),
    ("reference", lambda rng, env, label: f"{env}=${{{env}}}"),
    ("reference", lambda rng, env, label: f"export {env}=$(vault kv get -field=value secret/{rng.choice(_WORDS)})"),
    ("reference", lambda rng, env, label: f"token: {{{{ secrets.{env} }}}}"),
    ("reference", lambda rng, env, label: f"{rng.choice(_WORDS)}:\n  api_key: ${{{env}}}\n  model: gpt-4o"),
    ("talk", lambda rng, env, label: f"The {label} is stored in 1Password under {rng.choice(_WORDS)}."),
    ("talk", lambda rng, env, label: f"password for prod: ask the on-call lead, never paste it here"),
    ("talk", lambda rng, env, label: f"a senha do banco fica no cofre da equipe de {rng.choice(_WORDS)}"),
    ("talk", lambda rng, env, label: f"o {label} expira em {rng.randrange(2, 90)} dias e é renovado pelo CI"),
    ("talk", lambda rng, env, label: f"Okta API calls use the SSWS scheme; the token is in Vault."),
    ("identifier", lambda rng, env, label: f"password = form.cleaned_data['password']"),
    ("identifier", lambda rng, env, label: f"token = await get_{rng.choice(_WORDS)}_token(session)"),
    ("identifier", lambda rng, env, label: f"api_key = config.{rng.choice(_WORDS)}.api_key"),
    ("hash", lambda rng, env, label: f"commit {_hexrun(rng, 40)} fixed the {rng.choice(_WORDS)} retry"),
    ("hash", lambda rng, env, label: f"image digest sha256:{_hexrun(rng, 64)}"),
    ("uuid", lambda rng, env, label: f"request id {_uuid(rng)} failed with 502"),
    ("uuid", lambda rng, env, label: f"tenant_id: {_uuid(rng)}"),
    ("url", lambda rng, env, label: f"redis://cache.internal:6379/{rng.randrange(16)}"),
    ("url", lambda rng, env, label: f"https://api.openweathermap.org/data/2.5/weather?q=Lisbon&appid=${{OWM_APPID}}"),
    ("url", lambda rng, env, label: f"postgres://postgres:postgres@localhost:5432/test_{rng.choice(_WORDS)}"),
    (
        "table",
        lambda rng, env, label: f"| service | where the key lives |\n|---|---|\n| {rng.choice(_WORDS)} | 1Password |",
    ),
    ("shell", lambda rng, env, label: f"deploy --token-file ~/.config/{rng.choice(_WORDS)}/token --env prod"),
    ("shell", lambda rng, env, label: f"git push -u origin feature/{rng.choice(_WORDS)}-{rng.randrange(100, 999)}"),
]

_HELD_OUT_BENIGN = [
    ("placeholder", lambda rng, env, label: f'{env}="REPLACE_WITH_{env}"'),
    ("placeholder", lambda rng, env, label: f"{label}: ••••••••"),
    ("placeholder", lambda rng, env, label: f"| {env} | `<set in CI>` |"),
    ("reference", lambda rng, env, label: f"{env}: !Ref {env.title().replace('_', '')}Param"),
    ("reference", lambda rng, env, label: f"$env:{env} = $(Get-Secret {env} -AsPlainText)"),
    ("reference", lambda rng, env, label: f"{env}=op://Engineering/{rng.choice(_WORDS)}/credential"),
    ("talk", lambda rng, env, label: f"Never commit the {label}; rotate it if it leaks."),
    ("talk", lambda rng, env, label: f"senha de produção: pedir ao responsável pelo plantão"),
    ("talk", lambda rng, env, label: f"the {label} lives in the {rng.choice(_WORDS)} project's secret manager"),
    ("talk", lambda rng, env, label: f"Supabase tokens start with sbp_ and Okta ones are sent as SSWS."),
    ("identifier", lambda rng, env, label: f"if not user.check_password(password): raise Unauthorized"),
    ("identifier", lambda rng, env, label: f'secret_name = f"{rng.choice(_WORDS)}-{{env}}-db"'),
    ("identifier", lambda rng, env, label: f"const token = useAuthToken();"),
    ("hash", lambda rng, env, label: f"merged {_hexrun(rng, 12)} into main ({_hexrun(rng, 40)})"),
    ("hash", lambda rng, env, label: f"md5 of the dump: {_hexrun(rng, 32)}"),
    ("uuid", lambda rng, env, label: f"the {rng.choice(_WORDS)} job {_uuid(rng)} is stuck"),
    ("uuid", lambda rng, env, label: f"| job | {_uuid(rng)} | failed |"),
    ("url", lambda rng, env, label: f"smtp://smtp.example.com:587 sends the {rng.choice(_WORDS)} mail"),
    ("url", lambda rng, env, label: f"amqp://guest:guest@localhost:5672/"),
    ("url", lambda rng, env, label: f"https://play.google.com/store/apps/details?id=com.example.{rng.choice(_WORDS)}"),
    (
        "table",
        lambda rng, env, label: f"| Serviço | Onde fica a senha |\n| --- | --- |\n| {rng.choice(_WORDS)} | cofre |",
    ),
    ("shell", lambda rng, env, label: f"./bin/sync --api-key-file=/run/secrets/{rng.choice(_WORDS)} --dry-run"),
    (
        "shell",
        lambda rng, env, label: (
            f"docker run --rm -e {env} acme/{rng.choice(_WORDS)}:{rng.randrange(1, 9)}.{rng.randrange(20)}"
        ),
    ),
    (
        "snowflake",
        lambda rng, env, label: f"channel {rng.randrange(10**17, 10**18)} posts the {rng.choice(_WORDS)} alerts",
    ),
    (
        "version",
        lambda rng, env, label: (
            f"pinned {rng.choice(_WORDS)}-sdk=={rng.randrange(1, 9)}.{rng.randrange(30)}.{rng.randrange(30)}"
        ),
    ),
]


def samples(part: str) -> tuple[list[Sample], list[Sample]]:
    """(secrets, look-alikes) of one part: "tuning", "contaminated" or "fresh"."""
    if part == "fresh":
        import _credential_fresh

        return _credential_fresh.samples()
    rng = random.Random({"tuning": 1, "contaminated": 2}[part])
    contexts = _TUNING if part == "tuning" else _HELD_OUT
    passwords = _TUNING_PASSWORDS if part == "tuning" else _HELD_OUT_PASSWORDS
    benign_makers = _TUNING_BENIGN if part == "tuning" else _HELD_OUT_BENIGN
    providers = _providers(rng)
    secrets: list[Sample] = []
    for group, env, key, label, make in providers:
        for context, templates in contexts.items():
            template = rng.choice(templates)
            value = make()
            secrets.append(Sample(group, context, template(env, key, label, value, group), value))
    for context, template in passwords:
        for shape in _PASSWORD_SHAPES:
            value = _password(rng, shape)
            secrets.append(Sample(f"password ({shape})", context, template(value), value))
    for _ in range(6):
        sid, token = "AC" + _hexrun(rng, 32), _hexrun(rng, 32)
        secrets.append(Sample("twilio sid and token", "config", _PAIRS[part](sid, token), token))
    benign: list[Sample] = []
    for _ in range(19):
        for group, make in benign_makers:
            _, env, _, label, _ = rng.choice(providers)
            benign.append(Sample(group, "", make(rng, env, label)))
    if part == "tuning":
        import _credential_tuning

        more_secrets, more_benign = _credential_tuning.more()
        secrets += more_secrets
        benign += more_benign
    return secrets, list(dict.fromkeys(benign))
