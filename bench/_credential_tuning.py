"""More of the tuning part of the generated credential set (bench/_credential_samples.py), added
on 2026-12-07 for issue 30 while the detector was widened: contexts, providers and look-alikes
thought of then (pod specs, Helm values, Terraform, SDK calls, .npmrc, httpie and PowerShell
lines, log lines, questions and answers in chat, Oracle and ADO.NET connection strings), written
apart from the fresh part (bench/_credential_fresh.py, held out then) and never copied from it. The
detector may be tuned on these. Seed 11, so the older tuning samples stay as they were.
"""

from __future__ import annotations

import base64
import random

from _credential_samples import ALNUM, DIGITS, HEX, LOWER, UPPER, URLSAFE, Sample, _hexrun, _run, _uuid

SEED = 11


def _digits(rng: random.Random, n: int) -> str:
    return str(rng.randrange(1, 10)) + "".join(rng.choice(DIGITS) for _ in range(n - 1))


def _extra_providers(rng: random.Random) -> list[tuple[str, str, str, str, object]]:
    r = lambda alphabet, n: lambda: _run(rng, alphabet, n)  # noqa: E731
    pre = lambda prefix, alphabet, n, suffix="": lambda: prefix + _run(rng, alphabet, n) + suffix  # noqa: E731
    return [
        (
            "airtable",
            "AIRTABLE_TOKEN",
            "token",
            "Airtable token",
            lambda: "pat" + _run(rng, ALNUM, 14) + "." + _hexrun(rng, 64),
        ),
        ("dropbox", "DROPBOX_ACCESS_TOKEN", "access_token", "Dropbox token", pre("sl.", URLSAFE, 135)),
        ("buildkite", "BUILDKITE_API_TOKEN", "api_token", "Buildkite token", pre("bkua_", HEX, 40)),
        ("nuget", "NUGET_API_KEY", "api_key", "NuGet key", pre("oy2", LOWER + DIGITS, 43)),
        (
            "asana",
            "ASANA_PAT",
            "personal_access_token",
            "Asana PAT",
            lambda: f"2/{_digits(rng, 16)}/{_digits(rng, 16)}:{_hexrun(rng, 32)}",
        ),
        ("infracost", "INFRACOST_API_KEY", "api_key", "Infracost key", pre("ico-", ALNUM, 32)),
        ("flutterwave", "FLW_SECRET_KEY", "secret_key", "Flutterwave secret", pre("FLWSECK-", HEX, 32, "-X")),
        ("cohere", "CO_API_KEY", "api_key", "Cohere key", r(ALNUM, 40)),
        ("mistral", "MISTRAL_API_KEY", "api_key", "Mistral key", r(ALNUM, 32)),
        ("linode", "LINODE_TOKEN", "token", "Linode token", r(HEX, 64)),
        (
            "ngrok",
            "NGROK_AUTHTOKEN",
            "authtoken",
            "ngrok authtoken",
            lambda: "2" + _run(rng, ALNUM, 26) + "_" + _run(rng, ALNUM, 21),
        ),
        ("razorpay", "RAZORPAY_KEY_SECRET", "key_secret", "Razorpay secret", r(ALNUM, 24)),
    ]


_CONTEXTS = [
    ("pod spec", lambda env, key, label, value: f'        env:\n        - name: {env}\n          value: "{value}"'),
    ("helm", lambda env, key, label, value: f"# values-prod.yaml\nsecrets:\n  {key}: {value}\nreplicaCount: 3"),
    ("terraform", lambda env, key, label, value: f'provider "acme" {{\n  {key} = "{value}"\n}}'),
    ("sdk", lambda env, key, label, value: f'acme.{key} = "{value}"'),
    ("npmrc", lambda env, key, label, value: f"//registry.example.com/:_authToken={value}\nalways-auth=true"),
    ("httpie", lambda env, key, label, value: f"http GET api.example.com/v1/me 'X-Auth-Token:{value}'"),
    ("powershell", lambda env, key, label, value: f'$headers = @{{ "Authorization" = "Bearer {value}" }}'),
    (
        "log",
        lambda env, key, label, value: f"[2026-09-30 23:59:01] production.ERROR: upstream refused {key}={value} (403)",
    ),
    ("log", lambda env, key, label, value: f"WARNING: using {env} from the command line: {value}"),
    ("chat-en", lambda env, key, label, value: f"> what's the {label} again?\nit's {value}"),
    ("chat-pt", lambda env, key, label, value: f"me passa o {label}? -> {value}"),
    ("prose-en", lambda env, key, label, value: f"Paste {value} into the {label} field of the dashboard."),
    ("prose-pt", lambda env, key, label, value: f"Coloquei {value} como {label} no servidor de testes."),
    ("dotenv", lambda env, key, label, value: f"{env} = {value}"),
    (
        "cloud-cli",
        lambda env, key, label, value: (
            f"az login --service-principal -u http://acme-ci -p {value} --tenant contoso.onmicrosoft.com"
        ),
    ),
    ("cloud-cli", lambda env, key, label, value: f"netlify deploy --prod --auth {value}"),
    ("cloud-cli", lambda env, key, label, value: f"oc login --token={value} --server=https://api.ocp.example.com:6443"),
    ("cloud-cli", lambda env, key, label, value: f"npm config set //registry.example.com/:_authToken {value}"),
    ("cloud-cli", lambda env, key, label, value: f"echo {value} | gh auth login --with-token"),
    ("cloud-cli", lambda env, key, label, value: f"doctl auth init -t {value}"),
    ("ci", lambda env, key, label, value: f"pipeline {{\n  environment {{\n    {env} = '{value}'\n  }}\n}}"),
    ("ci", lambda env, key, label, value: f"env:\n  global:\n    - {env}={value}"),
    ("php", lambda env, key, label, value: f"define('{env}', '{value}');"),
    ("ruby", lambda env, key, label, value: f"ENV['{env}'] ||= '{value}'"),
    ("go", lambda env, key, label, value: f'os.Setenv("{env}", "{value}")'),
    ("java", lambda env, key, label, value: f'System.setProperty("acme.{key}", "{value}");'),
    ("docker config", lambda env, key, label, value: f'{{"auths": {{"registry.example.com": {{"auth": "{value}"}}}}}}'),
    (
        "github action",
        lambda env, key, label, value: (
            f"      - uses: acme/deploy@v3\n        with:\n          {key.replace('_', '-')}: {value}"
        ),
    ),
]

_PASSWORD_CONTEXTS = [
    ("jdbc", lambda value: f"jdbc:oracle:thin:scott/{value}@//db.corp:1521/ORCL"),
    ("ado", lambda value: f"Server=tcp:sql.corp,1433;Database=shop;User Id=shop;Password={value};"),
    ("pod spec", lambda value: f"        - name: DB_PASS\n          value: {value}"),
    ("shell", lambda value: f"mysqldump -uroot --password={value} shop > shop.sql"),
    ("shell", lambda value: f"export MYSQL_PWD={value}"),
    ("pgpass", lambda value: f"# ~/.pgpass\ndb.corp:5432:orders:report:{value}"),
    ("git", lambda value: f"https://deploy:{value}@git.example.com\n"),
    ("php", lambda value: f"define('DB_PASSWORD', '{value}');"),
    ("chat-en", lambda value: f"login: admin\npass: {value}"),
    ("chat-pt", lambda value: f"a nova senha é {value} (troca no primeiro login)"),
    ("log", lambda value: f"INFO connecting with user=report password={value}"),
]
_PASSWORD_SHAPES = ("symbol-first", "letters", "letters-mixed", "word-year", "random")


def _password(rng: random.Random, shape: str) -> str:
    word = rng.choice(["Granada", "Pelican", "Tundra", "Citrine", "Mosaic", "Ribeira", "Sabiá", "Ipanema"])
    year = str(rng.randrange(1990, 2031))
    if shape == "symbol-first":
        return rng.choice("!@*%/#") + word + year
    if shape == "letters":
        return "".join(rng.choice(LOWER) for _ in range(rng.randrange(9, 14)))
    if shape == "letters-mixed":
        return word + rng.choice(["Red", "Gold", "Wave", "Rock"]) + rng.choice(["Fox", "Sun", "Bay"])
    if shape == "word-year":
        return word.lower() + year + rng.choice("!?#.*")
    return _run(rng, ALNUM + "!#%&*+-=?@^_", rng.randrange(12, 20))


_WORDS = ["orders", "mailer", "crm", "analytics", "uploads", "search", "pricing"]


def _b64_of(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


_BENIGN = [
    (
        "git",
        lambda rng: (
            f"Merge pull request #{rng.randrange(100, 9999)} from acme/{rng.choice(_WORDS)} ({_hexrun(rng, 40)})"
        ),
    ),
    ("git", lambda rng: f"HEAD is now at {_hexrun(rng, 7)} fix {rng.choice(_WORDS)} token refresh"),
    ("checksum", lambda rng: f'sha256 = "{_hexrun(rng, 64)}"'),
    (
        "checksum",
        lambda rng: f'resolved "https://registry.yarnpkg.com/{rng.choice(_WORDS)}/-/x-1.0.0.tgz#{_hexrun(rng, 40)}"',
    ),
    ("checksum", lambda rng: f"{rng.choice(_WORDS)}==1.{rng.randrange(9)}.0 --hash=sha256:{_hexrun(rng, 64)}"),
    ("public key", lambda rng: f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{_run(rng, ALNUM + '+/', 60)} deploy@ci"),
    (
        "public key",
        lambda rng: (
            f"-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE{_run(rng, ALNUM + '+/', 50)}\n-----END PUBLIC KEY-----"
        ),
    ),
    ("base64", lambda rng: f"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA{_run(rng, ALNUM + '+/', 40)}"),
    (
        "base64",
        lambda rng: f"value: {_b64_of(rng.choice(['ola mundo', 'release notes v2', 'modo manutencao ligado']))}",
    ),
    ("uuid", lambda rng: f"X-Correlation-Id: {_uuid(rng)}"),
    ("uuid", lambda rng: f"terraform state lineage {_uuid(rng)}"),
    ("object ids", lambda rng: f"payment pi_{_run(rng, ALNUM, 24)} succeeded for invoice in_{_run(rng, ALNUM, 24)}"),
    ("object ids", lambda rng: f"https://www.youtube.com/watch?v={_run(rng, URLSAFE, 11)}"),
    (
        "object ids",
        lambda rng: f"Slack channel C{_run(rng, UPPER + DIGITS, 10)}, user U{_run(rng, UPPER + DIGITS, 10)}",
    ),
    (
        "aws ids",
        lambda rng: f'aws_account_id = "{_digits(rng, 12)}"\nrole_arn = "arn:aws:iam::{_digits(rng, 12)}:role/deploy"',
    ),
    (
        "version",
        lambda rng: (
            f"Node.js v{rng.randrange(16, 23)}.{rng.randrange(20)}.{rng.randrange(10)}, npm {rng.randrange(8, 11)}.{rng.randrange(10)}.{rng.randrange(10)}"
        ),
    ),
    (
        "version",
        lambda rng: (
            f"build {rng.randrange(2024, 2027)}.{rng.randrange(1, 13)}.{rng.randrange(1, 29)}+{_hexrun(rng, 8)}"
        ),
    ),
    ("path", lambda rng: f"/home/ci/.cache/pip/wheels/{_hexrun(rng, 2)}/{_hexrun(rng, 2)}/{_hexrun(rng, 56)}"),
    ("path", lambda rng: f"static/js/main.{_hexrun(rng, 8)}.chunk.js"),
    (
        "reference",
        lambda rng: (
            f"        - name: DB_PASS\n          valueFrom:\n            secretKeyRef:\n              name: {rng.choice(_WORDS)}-db\n              key: password"
        ),
    ),
    ("reference", lambda rng: f'token = "${{var.{rng.choice(_WORDS)}_token}}"'),
    ("reference", lambda rng: "//registry.npmjs.org/:_authToken=${NPM_TOKEN}"),
    ("reference", lambda rng: f"password = random_password.{rng.choice(_WORDS)}.result"),
    ("reference", lambda rng: f"api_key: !env_var {rng.choice(_WORDS).upper()}_API_KEY"),
    ("no password", lambda rng: f"jdbc:mysql://db.corp:3306/{rng.choice(_WORDS)}?useSSL=true&serverTimezone=UTC"),
    ("no password", lambda rng: "Server=sql.corp;Database=shop;Integrated Security=SSPI;"),
    ("masked", lambda rng: f"password: {'*' * rng.randrange(6, 12)}"),
    ("masked", lambda rng: f"token ghp_****{_run(rng, ALNUM, 4)} expires in {rng.randrange(2, 30)} days"),
    (
        "settings",
        lambda rng: (
            f"SESSION_TIMEOUT=3600\nTOKEN_ISSUER=https://auth.example.com\nKEY_ROTATION_DAYS={rng.randrange(30, 120)}"
        ),
    ),
    ("talk", lambda rng: f"reset the {rng.choice(_WORDS)} password through the admin console, then log out everywhere"),
    ("talk", lambda rng: "a chave da API fica no cofre; peça acesso ao time de plataforma"),
    (
        "log",
        lambda rng: (
            f"DEBUG oauth: token exchange ok, scope=read:{rng.choice(_WORDS)} expires_in={rng.choice([300, 3600])}"
        ),
    ),
    ("log", lambda rng: f"request_id={_hexrun(rng, 32)} status=200 duration_ms={rng.randrange(5, 900)}"),
]


def more() -> tuple[list[Sample], list[Sample]]:
    """(secrets, look-alikes) added to the tuning part."""
    from _credential_samples import _providers

    rng = random.Random(SEED)
    providers = _providers(rng) + _extra_providers(rng)
    secrets: list[Sample] = []
    for group, env, key, label, make in providers:
        for context, template in rng.sample(_CONTEXTS, 3):
            value = make()
            secrets.append(Sample(group, context, template(env, key, label, value), value))
    for context, template in _PASSWORD_CONTEXTS:
        for shape in _PASSWORD_SHAPES:
            value = _password(rng, shape)
            secrets.append(Sample(f"password ({shape})", context, template(value), value))
    benign: list[Sample] = []
    for _ in range(5):
        for group, make in _BENIGN:
            benign.append(Sample(group, "", make(rng)))
    return secrets, list(dict.fromkeys(benign))
