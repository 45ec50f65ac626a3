"""The fresh part of the generated credential set (bench/_credential_samples.py): held out until
issue 30's second widening, which spent it to tune; now tuning data like the other parts.

Written on 2026-12-07 for issue 30, after the older held-out part (seed 2) had been read while
the detector was widened (its misses were quoted in a test's comment), and before the detector
was changed again: its contexts, password shapes, extra providers and look-alikes were written
from what credentials look like where developers paste them (chat transcripts, .env files,
docker-compose, Kubernetes secrets, CI yaml, logs, curl lines, JDBC and ODBC strings, cloud CLIs),
in English and Portuguese, without looking at what the detector misses. Seed 30. It was measured
only (868 of 929 caught) until the detector was widened again on its misses: spent this stop to
tune; a blind part written by another hand judges the detector now.

The shared providers of bench/_credential_samples.py are used with these new contexts, and
`_FRESH_PROVIDERS` adds token formats that neither other part holds. Values are made from random
characters: none is, or was, a real credential.

Spent so far: its look-alikes. Ten of them (one shape) were refused after the detector's tuning,
and were printed once to mend that (false refusals block owners' writes); the figures before are
in docs/reliability.md. Its credentials have never been printed.
"""

from __future__ import annotations

import base64
import random

from _credential_samples import ALNUM, DIGITS, HEX, LOWER, UPPER, URLSAFE, Sample, _hexrun, _run, _uuid

SEED = 30
B64 = ALNUM + "+/"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def _digits(rng: random.Random, n: int) -> str:
    return str(rng.randrange(1, 10)) + "".join(rng.choice(DIGITS) for _ in range(n - 1))


def fresh_providers(rng: random.Random) -> list[tuple[str, str, str, str, object]]:
    """Token formats only this part holds: (group, env, key, label, make). `make` returns the
    value, or (text as pasted, the secret in it) when the value is a URL around the secret."""
    r = lambda alphabet, n: lambda: _run(rng, alphabet, n)  # noqa: E731
    pre = lambda prefix, alphabet, n, suffix="": lambda: prefix + _run(rng, alphabet, n) + suffix  # noqa: E731

    def url(make_secret, shape):
        def make():
            secret = make_secret()
            return shape(secret), secret

        return make

    return [
        (
            "atlassian",
            "ATLASSIAN_API_TOKEN",
            "api_token",
            "Atlassian API token",
            lambda: "ATATT3xFfGF0" + _run(rng, URLSAFE, 180) + "=" + _run(rng, HEX.upper(), 8),
        ),
        ("bitbucket", "BITBUCKET_APP_PASSWORD", "app_password", "Bitbucket app password", pre("ATBB", ALNUM, 32)),
        ("sentry", "SENTRY_AUTH_TOKEN", "auth_token", "Sentry auth token", pre("sntryu_", HEX, 64)),
        ("figma", "FIGMA_TOKEN", "access_token", "Figma token", pre("figd_", URLSAFE, 40)),
        ("pulumi", "PULUMI_ACCESS_TOKEN", "access_token", "Pulumi token", pre("pul-", HEX, 40)),
        (
            "terraform cloud",
            "TFE_TOKEN",
            "token",
            "Terraform Cloud token",
            lambda: _run(rng, ALNUM, 14) + ".atlasv1." + _run(rng, ALNUM, 67),
        ),
        ("square", "SQUARE_ACCESS_TOKEN", "access_token", "Square access token", pre("EAAA", URLSAFE, 60)),
        (
            "mercado pago",
            "MP_ACCESS_TOKEN",
            "access_token",
            "access token do Mercado Pago",
            lambda: f"APP_USR-{_digits(rng, 16)}-{_digits(rng, 6)}-{_hexrun(rng, 32)}-{_digits(rng, 9)}",
        ),
        (
            "planetscale",
            "PLANETSCALE_SERVICE_TOKEN",
            "service_token",
            "PlanetScale token",
            pre("pscale_tkn_", URLSAFE, 43),
        ),
        ("age", "SOPS_AGE_KEY", "age_key", "age secret key", pre("AGE-SECRET-KEY-1", BECH32, 58)),
        ("netlify", "NETLIFY_AUTH_TOKEN", "auth_token", "Netlify token", pre("nfp_", ALNUM, 36)),
        ("openrouter", "OPENROUTER_API_KEY", "api_key", "OpenRouter key", pre("sk-or-v1-", HEX, 64)),
        ("xai", "XAI_API_KEY", "api_key", "xAI key", pre("xai-", ALNUM, 80)),
        (
            "langsmith",
            "LANGSMITH_API_KEY",
            "api_key",
            "LangSmith key",
            lambda: "lsv2_pt_" + _hexrun(rng, 32) + "_" + _hexrun(rng, 10),
        ),
        (
            "tailscale",
            "TS_AUTHKEY",
            "authkey",
            "Tailscale auth key",
            lambda: "tskey-auth-k" + _run(rng, ALNUM, 10) + "CNTRL-" + _run(rng, ALNUM, 33),
        ),
        (
            "slack webhook",
            "SLACK_WEBHOOK_URL",
            "webhook_url",
            "Slack webhook",
            url(
                lambda: _run(rng, ALNUM, 24),
                lambda s: (
                    f"https://hooks.slack.com/services/T{_run(rng, UPPER + DIGITS, 8)}/B{_run(rng, UPPER + DIGITS, 10)}/{s}"
                ),
            ),
        ),
        (
            "discord webhook",
            "DISCORD_WEBHOOK_URL",
            "webhook_url",
            "Discord webhook",
            url(lambda: _run(rng, URLSAFE, 68), lambda s: f"https://discord.com/api/webhooks/{_digits(rng, 18)}/{s}"),
        ),
        (
            "cloudinary",
            "CLOUDINARY_URL",
            "cloudinary_url",
            "Cloudinary URL",
            url(lambda: _run(rng, URLSAFE, 27), lambda s: f"cloudinary://{_digits(rng, 15)}:{s}@acme-media"),
        ),
        (
            "firebase fcm",
            "FCM_SERVER_KEY",
            "server_key",
            "FCM server key",
            lambda: "AAAA" + _run(rng, URLSAFE, 7) + ":APA91b" + _run(rng, URLSAFE, 134),
        ),
        ("alibaba", "ALIBABA_CLOUD_ACCESS_KEY_ID", "access_key_id", "Alibaba access key", pre("LTAI", ALNUM, 20)),
        ("sonarqube", "SONAR_TOKEN", "token", "SonarQube token", pre("squ_", HEX, 40)),
        (
            "circleci",
            "CIRCLE_TOKEN",
            "token",
            "CircleCI token",
            lambda: "CCIPAT_" + _run(rng, ALNUM, 22) + "_" + _hexrun(rng, 40),
        ),
        ("rubygems", "GEM_HOST_API_KEY", "api_key", "RubyGems key", pre("rubygems_", HEX, 48)),
        ("hubspot", "HUBSPOT_ACCESS_TOKEN", "access_token", "HubSpot token", lambda: "pat-na1-" + _uuid(rng)),
        (
            "dynatrace",
            "DT_API_TOKEN",
            "api_token",
            "Dynatrace token",
            lambda: "dt0c01." + _run(rng, UPPER + DIGITS, 24) + "." + _run(rng, UPPER + DIGITS, 64),
        ),
        ("postmark", "POSTMARK_SERVER_TOKEN", "server_token", "Postmark server token", lambda: _uuid(rng)),
        ("azure storage", "AZURE_STORAGE_KEY", "account_key", "Azure storage account key", pre("", B64, 86, "==")),
        ("wandb", "WANDB_API_KEY", "api_key", "W&B API key", r(HEX, 40)),
        (
            "openai service account",
            "OPENAI_API_KEY",
            "api_key",
            "OpenAI service account key",
            pre("sk-svcacct-", URLSAFE, 74),
        ),
        ("github app", "GITHUB_TOKEN", "token", "GitHub installation token", pre("ghs_", ALNUM, 36)),
        (
            "basic auth",
            "HTTP_AUTH",
            "authorization",
            "basic auth credentials",
            lambda: base64.b64encode(
                f"{rng.choice(['ci', 'deploy', 'admin'])}:{_run(rng, ALNUM, 16)}".encode()
            ).decode(),
        ),
    ]


# -- contexts: (env, key, label, value) -> text -------------------------------------------------

_CONTEXTS = {
    "env-file": [
        lambda env, key, label, value: f"# {label}, rotated 2026-10\n{env}='{value}'",
        lambda env, key, label, value: f"NODE_ENV=production\nPORT=8080\n{env}={value}\nLOG_LEVEL=info",
    ],
    "compose": [
        lambda env, key, label, value: (
            f"services:\n  worker:\n    image: acme/worker:2.4\n    environment:\n      - {env}={value}"
        ),
    ],
    "kube": [
        lambda env, key, label, value: (
            f'apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-secrets\ntype: Opaque\nstringData:\n  {key}: "{value}"'
        ),
        lambda env, key, label, value: (
            f"kubectl create secret generic app-secrets --from-literal={key}={value} -n prod"
        ),
    ],
    "ci": [
        lambda env, key, label, value: (
            f"jobs:\n  deploy:\n    runs-on: ubuntu-latest\n    env:\n      {env}: {value}\n    steps:\n      - run: make deploy"
        ),
        lambda env, key, label, value: (
            f'deploy:\n  stage: deploy\n  variables:\n    {env}: "{value}"\n  script:\n    - ./deploy.sh'
        ),
    ],
    "code": [
        lambda env, key, label, value: f'{key.upper()} = os.environ.get("{env}", "{value}")',
        lambda env, key, label, value: f"const client = new Client({{ {key}: '{value}' }});",
    ],
    "curl": [
        lambda env, key, label, value: (
            f"curl -sS https://api.example.com/v2/export -H 'X-Api-Key: {value}' -o out.json"
        ),
        lambda env, key, label, value: f"curl 'https://api.example.com/v1/items?{key}={value}&limit=50'",
    ],
    "cloud-cli": [
        lambda env, key, label, value: f'gh secret set {env} --body "{value}"',
        lambda env, key, label, value: f"fly secrets set {env}={value} -a acme-api",
        lambda env, key, label, value: (
            f"az keyvault secret set --vault-name kv-prod --name {key.replace('_', '-')} --value {value}"
        ),
        lambda env, key, label, value: f"aws ssm put-parameter --name /prod/{key} --type SecureString --value {value}",
    ],
    "log": [
        lambda env, key, label, value: (
            f"2026-11-02 09:14:55,120 DEBUG client: headers={{'Authorization': 'Bearer {value}', 'Accept': 'application/json'}}"
        ),
        lambda env, key, label, value: (
            f'time="2026-11-02T09:14:55Z" level=debug msg="config loaded" {key}={value} region=sa-east-1'
        ),
    ],
    "chat-en": [
        lambda env, key, label, value: f"[14:03] joana: here is the {label} for staging: {value}\n[14:04] rui: thanks!",
        lambda env, key, label, value: f"User: my {label} {value} keeps returning 401, what am I doing wrong?",
    ],
    "chat-pt": [
        lambda env, key, label, value: f"[09:12] paulo: pessoal, {label} novo: {value}\n[09:13] ana: valeu",
        lambda env, key, label, value: f"usa esse {label} aqui pra testar: {value} (depois eu revogo)",
    ],
    "topic": [
        lambda env, key, label, value: f"{label} (prod): {value}",
    ],
}

# Passwords: their own shapes and contexts.
_PASSWORD_CONTEXTS = [
    ("jdbc", lambda value: f"jdbc:postgresql://db.prod.internal:5432/app?user=app&password={value}&ssl=true"),
    ("jdbc", lambda value: f"jdbc:sqlserver://sql01.corp:1433;databaseName=erp;user=sa;password={value};encrypt=true"),
    (
        "odbc",
        lambda value: (
            f"Driver={{ODBC Driver 18 for SQL Server}};Server=tcp:sql.example.net,1433;Database=erp;Uid=erp_app;Pwd={value};Encrypt=yes;"
        ),
    ),
    (
        "compose",
        lambda value: f"services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_PASSWORD: {value}",
    ),
    ("config", lambda value: f"machine api.example.com\n  login deploy\n  password {value}"),
    ("config", lambda value: f"ansible_user: deploy\nansible_become_password: {value}"),
    ("url", lambda value: f"DATABASE_URL=mysql://root:{value}@127.0.0.1:3306/shop"),
    ("shell", lambda value: f"PGPASSWORD='{value}' psql -h db.internal -U app orders"),
    ("shell", lambda value: f"docker login registry.example.com -u ci -p {value}"),
    ("log", lambda value: f"DEBUG db: connecting host=db.internal user=app password={value} sslmode=require"),
    ("chat-pt", lambda value: f"[09:12] paulo: login do painel é admin / {value}"),
    ("chat-en", lambda value: f"creds for the staging box are deploy / {value}"),
    ("prose-pt", lambda value: f"usuário root, senha {value}, não passa pra ninguém"),
    ("topic", lambda value: f"senha do wifi do escritório: {value}"),
]
_PASSWORD_WORDS = [
    "tigre",
    "lanterna",
    "cobre",
    "mangue",
    "farol",
    "violeta",
    "granite",
    "walrus",
    "pepper",
    "cactus",
    "biscoito",
    "jangada",
    "marble",
    "thunder",
    "caju",
    "orbit",
]
_PASSWORD_SHAPES = ("passphrase", "leet", "word-year", "letters", "random")


def _password(rng: random.Random, shape: str) -> str:
    words = rng.sample(_PASSWORD_WORDS, 3)
    if shape == "passphrase":
        return "-".join(words) + "-" + str(rng.randrange(10, 100))
    if shape == "leet":
        word = words[0].capitalize().replace("a", "@").replace("o", "0").replace("e", "3")
        return word + rng.choice("!#$%&*") + words[1].capitalize() + str(rng.randrange(1, 99))
    if shape == "word-year":
        return words[0].capitalize() + words[1] + "@" + str(rng.randrange(2015, 2031))
    if shape == "letters":
        return "".join(rng.choice(LOWER) for _ in range(rng.randrange(10, 15)))
    return _run(rng, ALNUM + "!#$%&*+-=?@^_.", rng.randrange(14, 24))


# Credentials that need a second value beside them: an AWS key pair, a Twilio SID and token, a
# private key. (group, context, make(rng) -> (text, secret)).
def _pairs(rng: random.Random) -> list[tuple[str, str, str, str]]:
    out = []
    for _ in range(3):
        key_id, secret = "AKIA" + _run(rng, UPPER + DIGITS, 16), _run(rng, B64, 40)
        out.append(
            (
                "aws key pair",
                "csv",
                "User name,Password,Access key ID,Secret access key,Console login link\n"
                f"ci-deploy,,{key_id},{secret},https://123456789012.signin.aws.amazon.com/console",
                secret,
            )
        )
        key_id, secret = "AKIA" + _run(rng, UPPER + DIGITS, 16), _run(rng, B64, 40)
        out.append(
            (
                "aws key pair",
                "cloud-cli",
                f"aws configure set aws_access_key_id {key_id} && aws configure set aws_secret_access_key {secret}",
                secret,
            )
        )
        sid, token = "AC" + _hexrun(rng, 32), _hexrun(rng, 32)
        out.append(("twilio sid and token", "code", f'client = Client("{sid}", "{token}")', token))
        sid, token = "AC" + _hexrun(rng, 32), _hexrun(rng, 32)
        out.append(
            (
                "twilio sid and token",
                "curl",
                f"curl -X POST https://api.twilio.com/2010-04-01/Accounts/{sid}/Messages.json "
                f"-u {sid}:{token} -d To=+5511999990000",
                token,
            )
        )
        body = [_run(rng, B64, 64) for _ in range(6)]
        out.append(
            (
                "private key",
                "json",
                '{"type": "service_account", "project_id": "acme-prod", "private_key": '
                f'"-----BEGIN PRIVATE KEY-----\\n{chr(92).join(line + "n" for line in body)}-----END PRIVATE KEY-----\\n"}}',
                body[2],
            )
        )
        out.append(
            (
                "private key",
                "kube",
                "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/tls\nstringData:\n  tls.key: |\n"
                "    -----BEGIN EC PRIVATE KEY-----\n"
                + "".join(f"    {line}\n" for line in body[:3])
                + "    -----END EC PRIVATE KEY-----",
                body[1],
            )
        )
    return out


# -- look-alikes: what owners legitimately write that looks like a credential ---------------------

_WORDS = ["checkout", "ledger", "notifier", "scheduler", "gateway", "invoices", "catalog", "onboarding"]


def _b64_of(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


_PHRASES = [
    "welcome to the staging environment",
    "maintenance window sunday 02:00",
    "bem-vindo ao ambiente de testes",
    "feature flags loaded from file",
    "hello from the build bot",
    "relatório mensal de faturamento",
    "this banner is shown on login",
]

_BENIGN = [
    ("git", lambda rng: f"git revert {_hexrun(rng, 40)} --no-edit"),
    (
        "git",
        lambda rng: (
            f"Cherry-picked {_hexrun(rng, 7)} and {_hexrun(rng, 40)} onto release/{rng.randrange(1, 9)}.{rng.randrange(20)}"
        ),
    ),
    (
        "checksum",
        lambda rng: f"{_hexrun(rng, 64)}  dist/{rng.choice(_WORDS)}-{rng.randrange(1, 5)}.{rng.randrange(20)}.0.tar.gz",
    ),
    ("checksum", lambda rng: f'"integrity": "sha512-{_run(rng, B64, 86)}=="'),
    (
        "checksum",
        lambda rng: (
            f"github.com/acme/{rng.choice(_WORDS)} v1.{rng.randrange(20)}.{rng.randrange(9)} h1:{_run(rng, B64, 43)}="
        ),
    ),
    ("checksum", lambda rng: f"FROM python:3.12-slim@sha256:{_hexrun(rng, 64)}"),
    ("uuid", lambda rng: f"Idempotency-Key: {_uuid(rng)}"),
    (
        "uuid",
        lambda rng: (
            f'{{"level":"error","trace_id":"{_hexrun(rng, 32)}","span_id":"{_hexrun(rng, 16)}","msg":"timeout"}}'
        ),
    ),
    ("uuid", lambda rng: f"chave pix aleatória para o reembolso: {_uuid(rng)}"),
    (
        "aws ids",
        lambda rng: (
            f'{{"UserId": "AIDA{_run(rng, UPPER + DIGITS, 17)}", "Account": "{_digits(rng, 12)}", '
            f'"Arn": "arn:aws:iam::{_digits(rng, 12)}:user/ci"}}'
        ),
    ),
    (
        "aws ids",
        lambda rng: (
            f"arn:aws:secretsmanager:sa-east-1:{_digits(rng, 12)}:secret:prod/{rng.choice(_WORDS)}-{_run(rng, ALNUM, 6)}"
        ),
    ),
    (
        "object ids",
        lambda rng: f"refund failed for charge ch_{_run(rng, ALNUM, 24)} (customer cus_{_run(rng, ALNUM, 14)})",
    ),
    ("object ids", lambda rng: f"https://docs.google.com/document/d/{_run(rng, URLSAFE, 44)}/edit"),
    ("object ids", lambda rng: f"chave de acesso da NF-e: {' '.join(_digits(rng, 4) for _ in range(11))}"),
    (
        "public key",
        lambda rng: (
            f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_run(rng, B64, 43)} {rng.choice(['ana', 'rui', 'ci'])}@laptop"
        ),
    ),
    ("public key", lambda rng: f"ED25519 key fingerprint is SHA256:{_run(rng, B64, 43)}."),
    (
        "base64",
        lambda rng: (
            f"kind: ConfigMap\nbinaryData:\n  banner.txt: {_b64_of(rng.choice(_PHRASES) + ' #' + str(rng.randrange(100)))}"
        ),
    ),
    ("base64", lambda rng: f"echo {_b64_of(rng.choice(_PHRASES))} | base64 -d"),
    (
        "version",
        lambda rng: (
            f'"{rng.choice(_WORDS)}-client": "^{rng.randrange(1, 9)}.{rng.randrange(30)}.{rng.randrange(30)}", "node": ">=20.11.1"'
        ),
    ),
    (
        "version",
        lambda rng: f"image: postgres:{rng.randrange(12, 17)}.{rng.randrange(9)}-alpine3.{rng.randrange(15, 21)}",
    ),
    ("path", lambda rng: f"/var/lib/postgresql/data/pg_wal/0000000100000000000000{_hexrun(rng, 2).upper()}"),
    (
        "path",
        lambda rng: (
            f"src/components/{rng.choice(['Token', 'Password', 'ApiKey'])}Input.{rng.choice(['tsx', 'vue'])} renders the {rng.choice(_WORDS)} form"
        ),
    ),
    (
        "reference",
        lambda rng: (
            '      - name: login\n        run: echo "${{ secrets.REGISTRY_PASSWORD }}" | docker login -u ci --password-stdin'
        ),
    ),
    ("reference", lambda rng: f"password: {{{{ .Values.{rng.choice(_WORDS)}.db.password | quote }}}}"),
    ("reference", lambda rng: "POSTGRES_PASSWORD_FILE: /run/secrets/db_password"),
    (
        "reference",
        lambda rng: (
            f"spring.datasource.password=${{DB_PASSWORD}}\nspring.datasource.url=jdbc:postgresql://db:5432/{rng.choice(_WORDS)}"
        ),
    ),
    (
        "reference",
        lambda rng: f"kubectl get secret {rng.choice(_WORDS)}-db -o jsonpath='{{.data.password}}' | base64 -d",
    ),
    (
        "reference",
        lambda rng: f'curl -H "Authorization: Bearer $API_TOKEN" https://api.example.com/v1/{rng.choice(_WORDS)}',
    ),
    ("reference", lambda rng: f'PGPASSWORD="$DB_PASS" psql -h db.internal -U app {rng.choice(_WORDS)}'),
    ("no password", lambda rng: f"Server=sql01;Database={rng.choice(_WORDS)};Trusted_Connection=True;Encrypt=yes;"),
    ("no password", lambda rng: f"jdbc:postgresql://db.prod.internal:5432/{rng.choice(_WORDS)}?sslmode=require"),
    ("masked", lambda rng: f"api_key: sk-{'*' * 24}{_run(rng, LOWER, 4)}"),
    (
        "masked",
        lambda rng: f"{rng.choice(['token', 'password', 'senha'])}=[REDACTED] user={rng.choice(['ana', 'rui', 'ci'])}",
    ),
    (
        "settings",
        lambda rng: (
            f"TOKEN_TTL_SECONDS={rng.choice([900, 3600, 86400])}\nPASSWORD_MIN_LENGTH={rng.randrange(8, 17)}\nAPI_KEY_HEADER=X-Api-Key"
        ),
    ),
    ("talk", lambda rng: f"esqueci a senha do {rng.choice(_WORDS)}, pedi o reset pelo link do e-mail"),
    (
        "talk",
        lambda rng: (
            f"The {rng.choice(_WORDS)} token expires after {rng.randrange(2, 60)} minutes; refresh it with the refresh_token grant."
        ),
    ),
    ("talk", lambda rng: "a senha precisa ter pelo menos 12 caracteres, com número e símbolo"),
    ("log", lambda rng: f"INFO auth: token refreshed for user {rng.randrange(1000, 99999)}, expires_in=3600"),
    ("log", lambda rng: f"cf-ray: {_hexrun(rng, 16)}-GRU x-request-id: {_hexrun(rng, 32)}"),
]


def samples() -> tuple[list[Sample], list[Sample]]:
    """(secrets, look-alikes) of the fresh part."""
    from _credential_samples import _providers  # the shared token formats

    rng = random.Random(SEED)
    providers = [(g, e, k, label, make) for g, e, k, label, make in _providers(rng)] + fresh_providers(rng)
    secrets: list[Sample] = []
    for group, env, key, label, make in providers:
        for context, templates in _CONTEXTS.items():
            made = make()
            shown, secret = made if isinstance(made, tuple) else (made, made)
            secrets.append(Sample(group, context, rng.choice(templates)(env, key, label, shown), secret))
    for context, template in _PASSWORD_CONTEXTS:
        for shape in _PASSWORD_SHAPES:
            value = _password(rng, shape)
            secrets.append(Sample(f"password ({shape})", context, template(value), value))
    for shape in _PASSWORD_SHAPES:
        value = _password(rng, shape)
        encoded = _b64_of(value)
        secrets.append(
            Sample(
                f"password ({shape})",
                "kube",
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n"
                f"data:\n  username: {_b64_of('app')}\n  password: {encoded}",
                encoded,
            )
        )
    secrets += [Sample(group, context, text, secret) for group, context, text, secret in _pairs(rng)]
    benign: list[Sample] = []
    for _ in range(10):
        for group, make in _BENIGN:
            benign.append(Sample(group, "", make(rng)))
    return secrets, list(dict.fromkeys(benign))
