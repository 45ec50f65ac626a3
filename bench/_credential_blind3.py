"""The third blind part of the generated credential set: held out from everyone who tunes the detector.

Written on 2026-12-07 by an engineer who read neither the detector (gate/credentials/) nor its
tests nor any other part of the generated set (bench/_credential_samples.py only for the `Sample`
dataclass, its alphabets and `_run`), while another engineer tuned the detector on the second blind
part's misses. Nobody who tunes the detector may read this file: once its misses or refusals are
read, it is spent and no longer evidence. bench/credentials.py prints only its counts
(`--spend-blind3` prints the misses and spends it).

Seed 3141. Every value is made here from random characters in the shape a provider issues; none is,
or was, a real credential. It holds, as shapes:

- 416 credentials of 96 groups. 87 are provider groups: prefixed tokens (a prefix, an alphabet,
  a length: cloud, source hosting, CI, AI model providers, payments including Brazilian ones, mail,
  chat, observability, databases as a service, secret managers), webhook URLs whose last segment
  is the secret, a private key block's body, an age key, connection strings holding an account
  key, signed URLs' signatures, basic-auth headers, JWTs issued as service keys, and unprefixed
  keys (hex, alphanumeric, base64) that appear only beside a name or a sentence that says what
  they are. 9 are password groups: passwords in database and broker URLs, in environment and
  config entries, on command lines (flags, environment prefixes, PowerShell, cmd), in a build's
  keystore settings, in English and Portuguese notes, chats and tables;
- each in surroundings of many kinds: .env, YAML, JSON, TOML, INI, XML, properties, HCL,
  Kubernetes manifests, compose files, CI files, literals in ten languages, shell lines and
  histories, curl and PowerShell and cmd, URLs, HTTP headers, logs, tracebacks, markdown and CSV
  tables, chat, commit and e-mail messages, notes in English and in Portuguese, one-line topics;
- 360 look-alikes (19 kinds) a careful person would plainly call no secret: commit and content
  hashes, checksums, lockfile integrity strings, image digests, UUIDs and other ids (request, object, payment, chat
  ids), public keys and fingerprints, placeholders, masked values, references to environment
  variables and secret stores, versions, paths, data URIs, and prose about secrets that holds none,
  in English and Portuguese.

`samples()` returns (credentials, look-alikes), the same on every call.
"""

from __future__ import annotations

import base64
import json
import random

from _credential_samples import ALNUM, DIGITS, HEX, LOWER, UPPER, URLSAFE, Sample, _run

SEED = 3141
B64 = ALNUM + "+/"
LOWALNUM = LOWER + DIGITS
UPDIG = UPPER + DIGITS

_USERS = ["ana", "bruno", "carla", "diego", "erika", "felipe", "gabi", "hugo", "iris", "joao", "kenji", "lara"]
_HOSTS = ["db-prod-1", "pg.internal", "orders-db", "mysql-03", "analytics-pg", "core-db", "billing-db"]
_SERVICES = ["api", "worker", "web", "scheduler", "billing", "ingest", "notifier"]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _providers(rng: random.Random) -> list[tuple[str, str, str, str, str, object]]:
    """(group, env name, config key, label in English, label in Portuguese, make the value)."""
    r = lambda alphabet, n: lambda: _run(rng, alphabet, n)  # noqa: E731
    pre = lambda prefix, alphabet, n, suffix="": lambda: prefix + _run(rng, alphabet, n) + suffix  # noqa: E731

    def jwt(payload: dict) -> str:
        head = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
        body = _b64url(json.dumps(payload, separators=(",", ":")).encode())
        return f"{head}.{body}.{_run(rng, URLSAFE, 43)}"

    def supabase_service() -> str:
        ref = _run(rng, LOWER, 20)
        iat = rng.randrange(1_690_000_000, 1_760_000_000)
        return jwt({"iss": "supabase", "ref": ref, "role": "service_role", "iat": iat, "exp": iat + 315_360_000})

    def sentry_org() -> str:
        payload = {
            "iat": rng.randrange(1_700_000_000, 1_760_000_000),
            "url": "https://sentry.io",
            "org": _run(rng, LOWER, 8),
        }
        return "sntrys_" + _b64url(json.dumps(payload, separators=(",", ":")).encode()) + "_" + _run(rng, URLSAFE, 43)

    return [
        (
            "aws temporary key id",
            "AWS_ACCESS_KEY_ID",
            "aws_access_key_id",
            "AWS access key",
            "chave de acesso da AWS",
            pre("ASIA", UPDIG, 16),
        ),
        (
            "aws access key id",
            "AWS_ACCESS_KEY_ID",
            "aws_access_key_id",
            "AWS key id",
            "access key da AWS",
            pre("AKIA", UPDIG, 16),
        ),
        (
            "aws secret key",
            "AWS_SECRET_ACCESS_KEY",
            "aws_secret_access_key",
            "AWS secret access key",
            "secret key da AWS",
            r(B64, 40),
        ),
        (
            "github oauth",
            "GITHUB_OAUTH_TOKEN",
            "oauth_token",
            "GitHub OAuth token",
            "token OAuth do GitHub",
            pre("gho_", ALNUM, 36),
        ),
        (
            "github app",
            "GH_APP_TOKEN",
            "installation_token",
            "GitHub App installation token",
            "token da GitHub App",
            pre("ghs_", ALNUM, 36),
        ),
        (
            "github classic",
            "GITHUB_PAT",
            "github_token",
            "GitHub personal token",
            "token pessoal do GitHub",
            pre("ghp_", ALNUM, 36),
        ),
        (
            "gitlab runner",
            "RUNNER_TOKEN",
            "runner_token",
            "GitLab runner token",
            "token do runner do GitLab",
            pre("glrt-", URLSAFE, 20),
        ),
        (
            "gitlab deploy",
            "GITLAB_DEPLOY_TOKEN",
            "deploy_token",
            "GitLab deploy token",
            "deploy token do GitLab",
            pre("gldt-", URLSAFE, 20),
        ),
        (
            "gitlab pat",
            "GITLAB_PAT",
            "private_token",
            "GitLab access token",
            "token do GitLab",
            pre("glpat-", URLSAFE, 20),
        ),
        (
            "anthropic admin",
            "ANTHROPIC_ADMIN_KEY",
            "admin_key",
            "Anthropic admin key",
            "chave admin da Anthropic",
            pre("sk-ant-admin01-", URLSAFE, 93, "AA"),
        ),
        (
            "anthropic",
            "ANTHROPIC_API_KEY",
            "anthropic_api_key",
            "Claude API key",
            "chave da API da Anthropic",
            pre("sk-ant-api03-", URLSAFE, 93, "AA"),
        ),
        (
            "openai service account",
            "OPENAI_API_KEY",
            "openai_key",
            "OpenAI service account key",
            "chave da OpenAI",
            pre("sk-svcacct-", URLSAFE, 74),
        ),
        (
            "openai project",
            "OPENAI_KEY",
            "openai_api_key",
            "OpenAI key",
            "chave da OpenAI",
            pre("sk-proj-", URLSAFE, 132),
        ),
        (
            "openrouter",
            "OPENROUTER_API_KEY",
            "openrouter_key",
            "OpenRouter key",
            "chave do OpenRouter",
            pre("sk-or-v1-", HEX, 64),
        ),
        (
            "stripe restricted",
            "STRIPE_RESTRICTED_KEY",
            "stripe_key",
            "Stripe restricted key",
            "chave restrita do Stripe",
            pre("rk_live_", ALNUM, 99),
        ),
        (
            "stripe secret",
            "STRIPE_API_KEY",
            "stripe_secret",
            "Stripe live key",
            "chave do Stripe",
            pre("sk_live_", ALNUM, 99),
        ),
        (
            "slack user",
            "SLACK_USER_TOKEN",
            "user_token",
            "Slack user token",
            "token de usuário do Slack",
            lambda: (
                f"xoxp-{rng.randrange(10**11, 10**12)}-{rng.randrange(10**11, 10**12)}-{rng.randrange(10**12, 10**13)}-{_run(rng, HEX, 32)}"
            ),
        ),
        (
            "slack app",
            "SLACK_APP_TOKEN",
            "app_token",
            "Slack app-level token",
            "token do app do Slack",
            lambda: f"xapp-1-A{_run(rng, UPDIG, 10)}-{rng.randrange(10**12, 10**13)}-{_run(rng, HEX, 64)}",
        ),
        (
            "google oauth access",
            "GOOGLE_ACCESS_TOKEN",
            "access_token",
            "Google access token",
            "access token do Google",
            pre("ya29.a0", URLSAFE, 150),
        ),
        ("gemini", "GEMINI_API_KEY", "gemini_api_key", "Gemini API key", "chave do Gemini", pre("AIza", URLSAFE, 35)),
        (
            "google oauth secret",
            "GOOGLE_OAUTH_CLIENT_SECRET",
            "client_secret",
            "OAuth client secret",
            "client secret do Google",
            pre("GOCSPX-", URLSAFE, 28),
        ),
        ("npm", "NPM_AUTH_TOKEN", "npmAuthToken", "npm publish token", "token do npm", pre("npm_", ALNUM, 36)),
        (
            "pypi",
            "TWINE_PASSWORD",
            "pypi_token",
            "PyPI upload token",
            "token do PyPI",
            pre("pypi-AgEIcHlwaS5vcmcCJ", URLSAFE, 150),
        ),
        (
            "sendgrid",
            "SENDGRID_KEY",
            "sendgrid_api_key",
            "SendGrid key",
            "chave do SendGrid",
            lambda: "SG." + _run(rng, URLSAFE, 22) + "." + _run(rng, URLSAFE, 43),
        ),
        (
            "brevo",
            "BREVO_API_KEY",
            "brevo_key",
            "Brevo API key",
            "chave do Brevo",
            lambda: "xkeysib-" + _run(rng, HEX, 64) + "-" + _run(rng, ALNUM, 16),
        ),
        (
            "resend",
            "RESEND_API_KEY",
            "resend_key",
            "Resend key",
            "chave do Resend",
            lambda: "re_" + _run(rng, ALNUM, 8) + "_" + _run(rng, ALNUM, 24),
        ),
        (
            "hugging face",
            "HUGGINGFACE_HUB_TOKEN",
            "hf_token",
            "Hugging Face token",
            "token do Hugging Face",
            pre("hf_", ALNUM, 34),
        ),
        ("vault batch", "VAULT_TOKEN", "vault_token", "Vault token", "token do Vault", pre("hvb.", URLSAFE, 138)),
        (
            "vault service",
            "VAULT_ROOT_TOKEN",
            "root_token",
            "Vault root token",
            "root token do Vault",
            pre("hvs.", URLSAFE, 92),
        ),
        (
            "digitalocean oauth",
            "DO_OAUTH_TOKEN",
            "do_token",
            "DigitalOcean OAuth token",
            "token da DigitalOcean",
            pre("doo_v1_", HEX, 64),
        ),
        (
            "shopify shared secret",
            "SHOPIFY_API_SECRET",
            "shared_secret",
            "Shopify app secret",
            "segredo do app Shopify",
            pre("shpss_", HEX, 32),
        ),
        (
            "databricks",
            "DATABRICKS_PAT",
            "databricks_token",
            "Databricks PAT",
            "token do Databricks",
            pre("dapi", HEX, 32, "-3"),
        ),
        (
            "supabase service role",
            "SUPABASE_SERVICE_ROLE_KEY",
            "service_role_key",
            "Supabase service role key",
            "service role key do Supabase",
            supabase_service,
        ),
        (
            "langsmith",
            "LANGSMITH_API_KEY",
            "langsmith_key",
            "LangSmith key",
            "chave do LangSmith",
            lambda: "lsv2_pt_" + _run(rng, HEX, 32) + "_" + _run(rng, HEX, 10),
        ),
        (
            "pinecone",
            "PINECONE_API_KEY",
            "pinecone_key",
            "Pinecone key",
            "chave do Pinecone",
            lambda: "pcsk_" + _run(rng, ALNUM, 5) + "_" + _run(rng, ALNUM, 63),
        ),
        ("xai", "XAI_API_KEY", "xai_key", "xAI key", "chave da xAI", pre("xai-", ALNUM, 80)),
        (
            "fireworks",
            "FIREWORKS_API_KEY",
            "fireworks_key",
            "Fireworks key",
            "chave da Fireworks",
            pre("fw_", ALNUM, 24),
        ),
        (
            "elevenlabs",
            "ELEVENLABS_API_KEY",
            "xi_api_key",
            "ElevenLabs key",
            "chave do ElevenLabs",
            pre("sk_", HEX, 48),
        ),
        ("mistral", "MISTRAL_API_KEY", "mistral_api_key", "Mistral API key", "chave da Mistral", r(ALNUM, 32)),
        ("cohere", "COHERE_API_KEY", "cohere_api_key", "Cohere API key", "chave da Cohere", r(ALNUM, 40)),
        ("deepseek", "DEEPSEEK_API_KEY", "deepseek_key", "DeepSeek key", "chave do DeepSeek", pre("sk-", HEX, 32)),
        (
            "age",
            "SOPS_AGE_KEY",
            "age_secret_key",
            "age secret key",
            "chave secreta do age",
            pre("AGE-SECRET-KEY-1", "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
        ),
        (
            "atlassian",
            "JIRA_API_TOKEN",
            "jira_token",
            "Jira API token",
            "token do Jira",
            lambda: "ATATT3xFfGF0" + _run(rng, URLSAFE, 170) + "=" + _run(rng, HEX.upper(), 8),
        ),
        (
            "bitbucket",
            "BITBUCKET_APP_PASSWORD",
            "app_password",
            "Bitbucket app password",
            "app password do Bitbucket",
            lambda: "ATBB" + _run(rng, ALNUM, 28) + _run(rng, HEX.upper(), 8),
        ),
        (
            "terraform cloud",
            "TFE_TOKEN",
            "tfe_token",
            "Terraform Cloud token",
            "token do Terraform Cloud",
            lambda: _run(rng, ALNUM, 14) + ".atlasv1." + _run(rng, ALNUM, 67),
        ),
        ("pulumi", "PULUMI_ACCESS_TOKEN", "pulumi_token", "Pulumi token", "token do Pulumi", pre("pul-", HEX, 40)),
        (
            "doppler service",
            "DOPPLER_TOKEN",
            "doppler_token",
            "Doppler service token",
            "token do Doppler",
            pre("dp.st.dev.", ALNUM, 43),
        ),
        ("sentry org", "SENTRY_AUTH_TOKEN", "sentry_token", "Sentry auth token", "token do Sentry", sentry_org),
        (
            "sentry user",
            "SENTRY_TOKEN",
            "sentry_user_token",
            "Sentry user token",
            "token de usuário do Sentry",
            pre("sntryu_", HEX, 64),
        ),
        ("figma", "FIGMA_TOKEN", "figma_token", "Figma token", "token do Figma", pre("figd_", URLSAFE, 40)),
        (
            "airtable",
            "AIRTABLE_PAT",
            "airtable_token",
            "Airtable token",
            "token do Airtable",
            lambda: "pat" + _run(rng, ALNUM, 14) + "." + _run(rng, HEX, 64),
        ),
        (
            "square",
            "SQUARE_ACCESS_TOKEN",
            "square_token",
            "Square access token",
            "token do Square",
            pre("EAAA", URLSAFE, 60),
        ),
        (
            "planetscale",
            "PLANETSCALE_TOKEN",
            "pscale_token",
            "PlanetScale token",
            "token do PlanetScale",
            pre("pscale_tkn_", URLSAFE, 43),
        ),
        ("netlify", "NETLIFY_AUTH_TOKEN", "netlify_token", "Netlify token", "token do Netlify", pre("nfp_", ALNUM, 36)),
        ("render", "RENDER_API_KEY", "render_key", "Render API key", "chave do Render", pre("rnd_", ALNUM, 32)),
        ("sonarqube", "SONAR_TOKEN", "sonar_token", "SonarQube token", "token do SonarQube", pre("squ_", HEX, 40)),
        (
            "datadog app key",
            "DD_APP_KEY",
            "datadog_app_key",
            "Datadog application key",
            "application key do Datadog",
            r(HEX, 40),
        ),
        (
            "contentful",
            "CONTENTFUL_MANAGEMENT_TOKEN",
            "cma_token",
            "Contentful management token",
            "token do Contentful",
            pre("CFPAT-", URLSAFE, 43),
        ),
        (
            "dynatrace",
            "DT_API_TOKEN",
            "dynatrace_token",
            "Dynatrace token",
            "token do Dynatrace",
            lambda: "dt0c01." + _run(rng, UPDIG, 24) + "." + _run(rng, UPDIG, 64),
        ),
        (
            "braintree",
            "BRAINTREE_ACCESS_TOKEN",
            "braintree_token",
            "Braintree access token",
            "token do Braintree",
            lambda: "access_token$production$" + _run(rng, LOWALNUM, 16) + "$" + _run(rng, HEX, 32),
        ),
        (
            "mercado pago",
            "MP_ACCESS_TOKEN",
            "mercadopago_access_token",
            "Mercado Pago access token",
            "access token do Mercado Pago",
            lambda: (
                f"APP_USR-{rng.randrange(10**15, 10**16)}-{rng.randrange(10**5, 10**6)}-{_run(rng, HEX, 32)}-{rng.randrange(10**8, 10**9)}"
            ),
        ),
        (
            "asaas",
            "ASAAS_API_KEY",
            "asaas_key",
            "Asaas key",
            "chave do Asaas",
            pre("$aact_YTU5YTE0M2M2N2I4MTliNzk0YTI5N2U5MzdjNWZmNDQ6OjAwMDAwMDAwMDAwMD", B64, 60),
        ),
        (
            "pagseguro",
            "PAGSEGURO_TOKEN",
            "pagseguro_token",
            "PagSeguro token",
            "token do PagSeguro",
            r(UPPER + DIGITS, 32),
        ),
        (
            "razorpay",
            "RAZORPAY_KEY_SECRET",
            "razorpay_secret",
            "Razorpay key secret",
            "segredo do Razorpay",
            r(ALNUM, 24),
        ),
        (
            "buildkite",
            "BUILDKITE_API_TOKEN",
            "buildkite_token",
            "Buildkite token",
            "token do Buildkite",
            pre("bkua_", HEX, 40),
        ),
        (
            "circleci",
            "CIRCLE_TOKEN",
            "circleci_token",
            "CircleCI token",
            "token do CircleCI",
            lambda: "CCIPAT_" + _run(rng, ALNUM, 22) + "_" + _run(rng, HEX, 40),
        ),
        (
            "tailscale",
            "TS_AUTHKEY",
            "tailscale_authkey",
            "Tailscale auth key",
            "auth key do Tailscale",
            lambda: "tskey-auth-" + _run(rng, ALNUM, 17) + "-" + _run(rng, ALNUM, 33),
        ),
        (
            "ngrok",
            "NGROK_AUTHTOKEN",
            "authtoken",
            "ngrok authtoken",
            "authtoken do ngrok",
            lambda: _run(rng, ALNUM, 27) + "_" + _run(rng, ALNUM, 21),
        ),
        (
            "salesforce",
            "SF_ACCESS_TOKEN",
            "sf_access_token",
            "Salesforce session token",
            "token do Salesforce",
            lambda: "00D" + _run(rng, ALNUM, 12) + "!" + "AQ" + _run(rng, ALNUM + "._", 94),
        ),
        (
            "azure devops",
            "AZURE_DEVOPS_PAT",
            "ado_pat",
            "Azure DevOps PAT",
            "PAT do Azure DevOps",
            r(LOWER + "234567", 52),
        ),
        ("jenkins", "JENKINS_API_TOKEN", "jenkins_token", "Jenkins API token", "token do Jenkins", pre("11", HEX, 32)),
        (
            "firebase server key",
            "FCM_SERVER_KEY",
            "fcm_server_key",
            "FCM server key",
            "server key do FCM",
            lambda: "AAAA" + _run(rng, URLSAFE, 7) + ":APA91b" + _run(rng, URLSAFE, 134),
        ),
        (
            "honeycomb",
            "HONEYCOMB_API_KEY",
            "honeycomb_key",
            "Honeycomb ingest key",
            "chave do Honeycomb",
            pre("hcaik_", LOWALNUM, 58),
        ),
        (
            "mapbox secret",
            "MAPBOX_SECRET_TOKEN",
            "mapbox_secret",
            "Mapbox secret token",
            "token secreto do Mapbox",
            lambda: "sk.eyJ1Ijoi" + _run(rng, URLSAFE, 60) + "." + _run(rng, URLSAFE, 22),
        ),
        ("shippo", "SHIPPO_API_KEY", "shippo_key", "Shippo key", "chave do Shippo", pre("shippo_live_", HEX, 40)),
        (
            "clerk",
            "CLERK_SECRET_KEY",
            "clerk_secret",
            "Clerk secret key",
            "chave secreta do Clerk",
            pre("sk_live_", ALNUM, 50),
        ),
        ("fly", "FLY_API_TOKEN", "fly_token", "Fly.io token", "token do Fly", pre("fm2_", B64, 180)),
        ("weights and biases", "WANDB_API_KEY", "wandb_key", "W&B API key", "chave do W&B", r(HEX, 40)),
        (
            "twitch",
            "TWITCH_CLIENT_SECRET",
            "twitch_client_secret",
            "Twitch client secret",
            "client secret da Twitch",
            r(LOWALNUM, 30),
        ),
        (
            "auth0",
            "AUTH0_CLIENT_SECRET",
            "auth0_client_secret",
            "Auth0 client secret",
            "client secret do Auth0",
            r(URLSAFE, 64),
        ),
    ]


# -- surroundings: each takes (rng, env, key, label, label_pt, value) and names what the value is --


def _host(rng):
    return rng.choice(_HOSTS)


_CONTEXTS = [
    ("env", lambda g, e, k, n, p, v: f"# {n}\n{e}={v}\nLOG_LEVEL=info"),
    ("env", lambda g, e, k, n, p, v: f'{e}="{v}"'),
    ("yaml", lambda g, e, k, n, p, v: f"{g.split()[0]}:\n  enabled: true\n  {k}: {v}\n  timeout: 30"),
    ("json", lambda g, e, k, n, p, v: json.dumps({"env": "production", k: v, "retries": 3}, indent=2)),
    ("toml", lambda g, e, k, n, p, v: f'[integrations.{g.split()[0]}]\n{k} = "{v}"\nregion = "sa-east-1"'),
    ("ini", lambda g, e, k, n, p, v: f"[default]\n{k} = {v}\noutput = json"),
    ("xml", lambda g, e, k, n, p, v: f'<configuration>\n  <setting name="{k}">{v}</setting>\n</configuration>'),
    ("properties", lambda g, e, k, n, p, v: f"app.{k.replace('_', '-')}={v}\napp.debug=false"),
    ("hcl", lambda g, e, k, n, p, v: f'variable "{k}" {{\n  type    = string\n  default = "{v}"\n}}'),
    (
        "k8s",
        lambda g, e, k, n, p, v: (
            f'apiVersion: v1\nkind: Secret\nmetadata:\n  name: {g.split()[0]}-creds\nstringData:\n  {e}: "{v}"'
        ),
    ),
    (
        "compose",
        lambda g, e, k, n, p, v: (
            f"services:\n  {rng_service(v)}:\n    image: app:latest\n    environment:\n      - {e}={v}"
        ),
    ),
    (
        "ci-github",
        lambda g, e, k, n, p, v: f"      - name: deploy\n        env:\n          {e}: {v}\n        run: make deploy",
    ),
    ("ci-gitlab", lambda g, e, k, n, p, v: f'variables:\n  {e}: "{v}"\ndeploy:\n  script: ./deploy.sh'),
    ("python", lambda g, e, k, n, p, v: f'client = Client({k}="{v}")'),
    ("python", lambda g, e, k, n, p, v: f'os.environ.setdefault("{e}", "{v}")'),
    ("javascript", lambda g, e, k, n, p, v: f"const {camel(k)} = '{v}';"),
    ("typescript", lambda g, e, k, n, p, v: f'export const config = {{ {camel(k)}: "{v}" }} as const;'),
    ("go", lambda g, e, k, n, p, v: f'const {camel(k)} = "{v}"'),
    ("rust", lambda g, e, k, n, p, v: f'let {k} = "{v}";'),
    ("java", lambda g, e, k, n, p, v: f'private static final String {e} = "{v}";'),
    ("csharp", lambda g, e, k, n, p, v: f'var {camel(k)} = "{v}"; // {n}'),
    ("ruby", lambda g, e, k, n, p, v: f"ENV['{e}'] ||= '{v}'"),
    ("php", lambda g, e, k, n, p, v: f"'{k}' => '{v}',"),
    ("kotlin", lambda g, e, k, n, p, v: f'val {camel(k)} = "{v}"'),
    ("shell-export", lambda g, e, k, n, p, v: f"export {e}='{v}'"),
    ("shell-history", lambda g, e, k, n, p, v: f"  512  cd ~/src/app\n  513  {e}={v} npm run sync\n  514  git status"),
    ("curl", lambda g, e, k, n, p, v: f'curl -sS -H "Authorization: Bearer {v}" https://api.example.com/v1/me  # {n}'),
    ("powershell", lambda g, e, k, n, p, v: f'[Environment]::SetEnvironmentVariable("{e}", "{v}", "User")'),
    ("cmd", lambda g, e, k, n, p, v: f"setx {e} {v}"),
    ("gh-cli", lambda g, e, k, n, p, v: f'gh secret set {e} --body "{v}"'),
    ("url", lambda g, e, k, n, p, v: f"https://hooks.example.com/ingest?{k}={v}&source=cron"),
    (
        "http-header",
        lambda g, e, k, n, p, v: (
            f"GET /v2/projects HTTP/1.1\nHost: api.example.com\nX-Api-Key: {v}\nAccept: application/json"
        ),
    ),
    ("log", lambda g, e, k, n, p, v: f"2026-12-06T14:02:11Z DEBUG loaded config {k}={v} from environment"),
    (
        "traceback",
        lambda g, e, k, n, p, v: (
            f'Traceback (most recent call last):\n  File "sync.py", line 41, in <module>\n    connect({k}="{v}")\nConnectionError: 401 Unauthorized'
        ),
    ),
    (
        "markdown-table",
        lambda g, e, k, n, p, v: f"| Service | Variable | Value |\n|---|---|---|\n| {g} | `{e}` | `{v}` |",
    ),
    ("csv", lambda g, e, k, n, p, v: f"service,variable,value\n{g},{e},{v}"),
    ("chat", lambda g, e, k, n, p, v: f"[10:42] carla: can you try with my {n}? {v}\n[10:43] bruno: works, thanks"),
    (
        "commit",
        lambda g, e, k, n, p, v: (
            f"fix: point staging at the new account\n\nUses {n} {v} until the vault entry is ready."
        ),
    ),
    (
        "email",
        lambda g, e, k, n, p, v: (
            f"Subject: access for the contractor\n\nHi Ana,\nthe {n} for the sandbox is {v} — please keep it out of the repo.\nThanks"
        ),
    ),
    ("prose-en", lambda g, e, k, n, p, v: f"rotated the {n} this morning: {v}"),
    ("prose-en", lambda g, e, k, n, p, v: f"Note to self: the {n} for staging is now {v} (old one revoked)."),
    ("prose-en", lambda g, e, k, n, p, v: f"If the deploy fails again, set {e} to {v} and rerun."),
    ("prose-pt", lambda g, e, k, n, p, v: f"segue {p}: {v}"),
    (
        "prose-pt",
        lambda g, e, k, n, p, v: f"Rotacionei hoje cedo ({p}); o valor novo é {v} e o antigo já foi revogado.",
    ),
    ("prose-pt", lambda g, e, k, n, p, v: f"pra rodar local, coloca {e}={v} no teu .env"),
    ("prose-pt", lambda g, e, k, n, p, v: f"{p} de homologação: {v} (não commitar!)"),
    ("prose-pt", lambda g, e, k, n, p, v: f"Pessoal, atualizei {e} no cofre e no CI. Valor: {v}"),
    ("topic-en", lambda g, e, k, n, p, v: f"new {n}: {v}"),
    ("topic-pt", lambda g, e, k, n, p, v: f"{p} = {v}"),
]


def rng_service(value: str) -> str:
    return _SERVICES[sum(map(ord, value)) % len(_SERVICES)]


def camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# Shapes whose value is only part of what is pasted: (group, make (text, value) pairs in context).
def _embedded(rng: random.Random) -> list[Sample]:
    out: list[Sample] = []

    def slack_webhook():
        secret = _run(rng, ALNUM, 24)
        return f"https://hooks.slack.com/services/T{_run(rng, UPDIG, 10)}/B{_run(rng, UPDIG, 10)}/{secret}", secret

    def discord_webhook():
        secret = _run(rng, URLSAFE, 68)
        return f"https://discord.com/api/webhooks/{rng.randrange(10**17, 10**18)}/{secret}", secret

    for make, group in ((slack_webhook, "slack webhook"), (discord_webhook, "discord webhook")):
        forms = [
            ("yaml", lambda u: f"alerts:\n  webhook_url: {u}"),
            ("env", lambda u: f"ALERT_WEBHOOK_URL={u}"),
            ("shell", lambda u: f'curl -X POST -d \'{{"text":"deploy ok"}}\' {u}'),
            ("prose-en", lambda u: f"webhook for #ops alerts: {u}"),
            ("prose-pt", lambda u: f"o webhook do canal de alertas é {u}"),
            ("json", lambda u: json.dumps({"notify": {"url": u}})),
        ]
        for context, form in forms:
            url, secret = make()
            out.append(Sample(group, context, form(url), secret))

    # Azure storage connection strings: the account key is the secret.
    for context, form in [
        (
            "env",
            lambda a, key: (
                f"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName={a};AccountKey={key};EndpointSuffix=core.windows.net"
            ),
        ),
        (
            "json",
            lambda a, key: json.dumps(
                {
                    "ConnectionStrings": {
                        "Blob": f"DefaultEndpointsProtocol=https;AccountName={a};AccountKey={key};EndpointSuffix=core.windows.net"
                    }
                },
                indent=2,
            ),
        ),
        ("prose-pt", lambda a, key: f"chave da storage account {a}: {key}"),
        ("csharp", lambda a, key: f'var conn = "DefaultEndpointsProtocol=https;AccountName={a};AccountKey={key}";'),
        ("prose-en", lambda a, key: f"storage account key for {a} is {key}"),
    ]:
        key = _run(rng, B64, 86) + "=="
        out.append(Sample("azure storage key", context, form(_run(rng, LOWER, 10), key), key))

    # Signed URLs: the signature is the secret.
    for context, form in [
        (
            "url",
            lambda sig: (
                f"https://acct.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r&se=2027-01-01T00:00:00Z&sig={sig}"
            ),
        ),
        (
            "prose-en",
            lambda sig: (
                f"SAS link for the backup (valid till Jan): https://acct.blob.core.windows.net/backups/dump.sql?sp=r&sv=2022-11-02&sig={sig}"
            ),
        ),
        (
            "prose-pt",
            lambda sig: (
                f"link SAS do dump: https://bkp.blob.core.windows.net/dumps/full.gz?sp=rl&sv=2022-11-02&sig={sig}"
            ),
        ),
        (
            "log",
            lambda sig: f"INFO uploading to https://media.blob.core.windows.net/in/x.png?sv=2022-11-02&sp=cw&sig={sig}",
        ),
    ]:
        sig = _run(rng, ALNUM, 43) + "%3D"
        out.append(Sample("azure sas", context, form(sig), sig))

    # Cloudinary URLs: api secret after the key.
    for context, form in [
        ("env", lambda k, s: f"CLOUDINARY_URL=cloudinary://{k}:{s}@demo-shop"),
        ("prose-pt", lambda k, s: f"CLOUDINARY_URL do projeto: cloudinary://{k}:{s}@loja"),
        ("yaml", lambda k, s: f"media:\n  cloudinary_url: cloudinary://{k}:{s}@media"),
        ("prose-en", lambda k, s: f"cloudinary api secret is {s} (key {k})"),
    ]:
        secret = _run(rng, URLSAFE, 27)
        out.append(Sample("cloudinary", context, form(rng.randrange(10**14, 10**15), secret), secret))

    # Private key bodies: the base64 body is the secret.
    for kind, context, form in [
        ("OPENSSH", "prose-en", lambda block: f"deploy key for the build box:\n{block}"),
        ("RSA", "markdown", lambda block: f"chave do bastion (apagar depois):\n```\n{block}\n```"),
        ("EC", "prose-pt", lambda block: f"chave privada do servidor de CI:\n{block}"),
        ("OPENSSH", "chat", lambda block: f"ana: here's the key, delete after use\n{block}"),
        ("", "env", lambda block: 'TLS_KEY="' + block + '"'),
    ]:
        lines = [_run(rng, B64, 64) for _ in range(5)] + [_run(rng, B64, 24) + "="]
        body = "\n".join(lines)
        label = f"{kind} PRIVATE KEY" if kind else "PRIVATE KEY"
        block = f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"
        out.append(Sample("private key", context, form(block), body))

    # Basic auth headers: base64 of user:password.
    for context, form in [
        (
            "http-header",
            lambda b: f"POST /api/v1/import HTTP/1.1\nAuthorization: Basic {b}\nContent-Type: application/json",
        ),
        ("curl", lambda b: f"curl -H 'Authorization: Basic {b}' https://registry.example.com/v2/_catalog"),
        ("log", lambda b: f"DEBUG > Authorization: Basic {b}"),
        ("prose-pt", lambda b: f"o header de auth do proxy é Authorization: Basic {b}"),
    ]:
        pair = f"{rng.choice(_USERS)}:{_run(rng, ALNUM + '!@#', 14)}".encode()
        b = base64.b64encode(pair).decode()
        out.append(Sample("basic auth", context, form(b), b))
    return out


# -- passwords ------------------------------------------------------------------------------------

_SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "tu",
    "ra",
    "ben",
    "cor",
    "dal",
    "fi",
    "gu",
    "jo",
    "ne",
    "pas",
    "qui",
    "sol",
    "ve",
    "xan",
    "zu",
]


def _password(rng: random.Random, in_url: bool) -> str:
    """A password as people choose or generate them; one that sits in a URL holds no URL syntax."""
    symbols = "!*-_.~" if in_url else "!@#$%*-_"
    style = rng.randrange(4)
    if style == 0:
        return _run(rng, ALNUM + symbols, rng.randrange(12, 21))
    if style == 1:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(3)).capitalize()
        return word + rng.choice(symbols) + str(rng.randrange(10, 9999))
    if style == 2:
        words = ["".join(rng.choice(_SYLLABLES) for _ in range(2)) for _ in range(3)]
        return rng.choice("-.").join(words) + str(rng.randrange(10, 99))
    return _run(rng, ALNUM, 6) + rng.choice("#!?") + _run(rng, ALNUM, 7)


_PASSWORDS: list[tuple[str, list[tuple[str, object]]]] = [
    (
        "password in database url",
        [
            ("env", lambda rng, v: f"DATABASE_URL=postgres://{rng.choice(_USERS)}:{v}@{_host(rng)}:5432/app"),
            ("yaml", lambda rng, v: f"datasource:\n  url: mysql://root:{v}@{_host(rng)}:3306/shop"),
            ("python", lambda rng, v: f'engine = create_engine("postgresql+psycopg://app:{v}@{_host(rng)}/orders")'),
            ("prose-en", lambda rng, v: f"prod db conn string: postgresql://readonly:{v}@{_host(rng)}:5432/metrics"),
            ("prose-pt", lambda rng, v: f"string de conexão do banco: mysql://admin:{v}@{_host(rng)}/erp"),
            ("java", lambda rng, v: f'String url = "jdbc:postgresql://{_host(rng)}:5432/app?user=app&password={v}";'),
            ("url", lambda rng, v: f"mongodb://svc_{rng.choice(_USERS)}:{v}@mongo-0.internal:27017/?authSource=admin"),
            ("log", lambda rng, v: f"ERROR could not connect to postgres://etl:{v}@{_host(rng)}/dw: timeout"),
        ],
    ),
    (
        "password in broker url",
        [
            ("env", lambda rng, v: f"CELERY_BROKER_URL=amqp://celery:{v}@rabbitmq:5672//"),
            ("env", lambda rng, v: f"REDIS_URL=rediss://default:{v}@cache.example.net:6380"),
            ("yaml", lambda rng, v: f"queue:\n  url: amqps://jobs:{v}@mq.internal/vhost"),
            ("prose-pt", lambda rng, v: f"o redis de staging agora pede senha: redis://:{v}@redis-stg:6379/1"),
            ("prose-en", lambda rng, v: f"kafka sasl creds: user pipeline, password {v}"),
            (
                "compose",
                lambda rng, v: f"services:\n  worker:\n    environment:\n      BROKER: amqp://guest2:{v}@rabbit:5672/",
            ),
        ],
    ),
    (
        "password in env and config",
        [
            ("env", lambda rng, v: f"POSTGRES_PASSWORD={v}\nPOSTGRES_USER=app"),
            (
                "yaml",
                lambda rng, v: f'smtp:\n  host: smtp.example.com\n  username: no-reply@example.com\n  password: "{v}"',
            ),
            ("json", lambda rng, v: json.dumps({"db": {"user": "svc", "password": v, "host": _host(rng)}}, indent=2)),
            ("ini", lambda rng, v: f"[client]\nuser = backup\npassword = {v}"),
            ("xml", lambda rng, v: f'<Resource name="jdbc/app" username="app" password="{v}" />'),
            ("properties", lambda rng, v: f"spring.mail.password={v}\nspring.mail.username=alerts"),
            ("toml", lambda rng, v: f'[redis]\nhost = "cache"\npassword = "{v}"'),
            ("k8s", lambda rng, v: f'env:\n  - name: MYSQL_ROOT_PASSWORD\n    value: "{v}"'),
            (
                "hcl",
                lambda rng, v: f'resource "aws_db_instance" "main" {{\n  username = "admin"\n  password = "{v}"\n}}',
            ),
        ],
    ),
    (
        "password on command line",
        [
            ("shell", lambda rng, v: f"PGPASSWORD='{v}' psql -h {_host(rng)} -U app -d orders"),
            ("shell", lambda rng, v: f"mysqldump -u root --password='{v}' shop > shop.sql"),
            (
                "shell-history",
                lambda rng, v: (
                    f" 1021  ssh deploy@10.0.3.7\n 1022  sshpass -p '{v}' scp dump.gz deploy@10.0.3.7:/tmp\n 1023  exit"
                ),
            ),
            ("powershell", lambda rng, v: f'$pw = ConvertTo-SecureString "{v}" -AsPlainText -Force'),
            ("cmd", lambda rng, v: f"net use Z: \\\\fileserver\\share /user:CORP\\svc_backup {v}"),
            ("shell", lambda rng, v: f"docker login registry.example.com -u ci --password '{v}'"),
            ("shell", lambda rng, v: f"curl -u admin:{v} https://jenkins.example.com/api/json"),
            ("shell", lambda rng, v: f"htpasswd -b -c /etc/nginx/.htpasswd ops '{v}'"),
        ],
    ),
    (
        "keystore password",
        [
            ("properties", lambda rng, v: f"storePassword={v}\nkeyPassword={v}\nkeyAlias=upload"),
            ("kotlin", lambda rng, v: f'signingConfigs {{ create("release") {{ storePassword = "{v}" }} }}'),
            ("prose-pt", lambda rng, v: f"senha do keystore de release do app Android: {v}"),
            ("shell", lambda rng, v: f"keytool -genkeypair -alias upload -keystore upload.jks -storepass '{v}'"),
            ("prose-en", lambda rng, v: f"the .p12 export password is {v}"),
        ],
    ),
    (
        "password in english note",
        [
            ("prose-en", lambda rng, v: f"the staging DB password is now {v}"),
            ("prose-en", lambda rng, v: f"Grafana admin login: admin / {v}"),
            ("prose-en", lambda rng, v: f"reset the root password on {_host(rng)} to {v} after the incident"),
            ("prose-en", lambda rng, v: f"VPN: user {rng.choice(_USERS)}, pass {v}"),
            (
                "email",
                lambda rng, v: (
                    f"Subject: your account\n\nYour temporary password is {v}. You will be asked to change it at first login."
                ),
            ),
            ("topic-en", lambda rng, v: f"pgadmin password {v}"),
            (
                "commit",
                lambda rng, v: (
                    f"chore: seed admin user\n\nInitial admin password set to {v}; change it after first deploy."
                ),
            ),
            ("prose-en", lambda rng, v: f"Jenkins: login ci-bot, password: {v}"),
        ],
    ),
    (
        "senha em nota em português",
        [
            ("prose-pt", lambda rng, v: f"a senha do banco de staging agora é {v}"),
            ("prose-pt", lambda rng, v: f"Login do painel admin: usuário admin, senha {v}"),
            ("prose-pt", lambda rng, v: f"troquei a senha do root do {_host(rng)} para {v}"),
            ("prose-pt", lambda rng, v: f"senha do wi-fi do escritório do cliente: {v}"),
            (
                "email",
                lambda rng, v: (
                    f"Assunto: acesso ao servidor\n\nOlá Bruno,\nsua senha provisória é {v}. Troque no primeiro acesso.\nAbs"
                ),
            ),
            ("topic-pt", lambda rng, v: f"senha do pgadmin {v}"),
            ("prose-pt", lambda rng, v: f"A senha do certificado A1 (e-CNPJ) é {v}, guardar no cofre."),
            ("prose-pt", lambda rng, v: f"acesso FTP do fornecedor: user integra, senha: {v}"),
        ],
    ),
    (
        "password in chat",
        [
            ("chat", lambda rng, v: f"[09:12] diego: what's the pw for the staging rabbit?\n[09:13] lara: {v}"),
            ("chat", lambda rng, v: f"gabi: qual a senha do mongo de dev?\nhugo: senha: {v}"),
            ("chat", lambda rng, v: f"<kenji> redis password for prod-cache is {v}\n<iris> thx"),
            ("chat", lambda rng, v: f"erika: a senha do admin do Keycloak é {v}\nfelipe: valeu"),
            ("chat", lambda rng, v: f"@joao the sftp password is {v}, user is uploads"),
        ],
    ),
    (
        "password in table",
        [
            (
                "markdown-table",
                lambda rng, v: f"| Host | Usuário | Senha |\n|---|---|---|\n| {_host(rng)} | postgres | {v} |",
            ),
            (
                "markdown-table",
                lambda rng, v: f"| env | login | password |\n| --- | --- | --- |\n| staging | admin | `{v}` |",
            ),
            ("csv", lambda rng, v: f"system,username,password\nerp,integracao,{v}"),
            ("csv", lambda rng, v: f"ambiente;usuario;senha\nhomologacao;sa;{v}"),
            ("markdown-table", lambda rng, v: f"| Serviço | Senha |\n|---|---|\n| SMTP | {v} |"),
        ],
    ),
]


# -- look-alikes ----------------------------------------------------------------------------------


def _uuid(rng: random.Random) -> str:
    h = _run(rng, HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{rng.choice('89ab')}{h[17:20]}-{h[20:32]}"


_EMPTY = ["<changeme>", "${DB_PASS}", "<redacted>", "null", "<senha>", "~"]


def _lookalike_makers() -> list[tuple[str, object]]:
    hx = lambda rng, n: _run(rng, HEX, n)  # noqa: E731
    return [
        ("masked", lambda rng: f"a chave antiga (final {_run(rng, ALNUM, 4)}) foi revogada às {rng.randrange(8, 19)}h"),
        (
            "prose",
            lambda rng: (
                f"Gerei um token novo no GitHub com escopo repo e salvei no secret ACTIONS_TOKEN do {rng.choice(_SERVICES)}-{rng.randrange(100)}"
            ),
        ),
        ("object id", lambda rng: f"ID do pagamento no Mercado Pago: {rng.randrange(10**10, 10**11)}"),
        ("checksum", lambda rng: f"hash do arquivo de backup (sha1): {hx(rng, 40)}"),
        (
            "env reference",
            lambda rng: (
                f"DATABASE_URL=postgres://${{PGUSER}}:${{PGPASSWORD}}@{_host(rng)}:5432/{rng.choice(_SERVICES)}"
            ),
        ),
        ("env reference", lambda rng: f'password: "{{{{ vault_{rng.choice(_SERVICES)}_db_password }}}}"  # ansible'),
        (
            "placeholder",
            lambda rng: (
                f"exemplo: postgres://user:password@localhost:5432/{rng.choice(_SERVICES)}_{rng.randrange(100)}"
            ),
        ),
        (
            "version",
            lambda rng: (
                f"versão {rng.randrange(1, 9)}.{rng.randrange(30)}.{rng.randrange(30)} do app publicada na Play Store (build {rng.randrange(100, 9999)})"
            ),
        ),
        ("commit hash", lambda rng: f"fixed in {hx(rng, 40)}, see the PR for details"),
        ("commit hash", lambda rng: f"corrigido no commit {hx(rng, 40)}"),
        ("commit hash", lambda rng: f"git cherry-pick {hx(rng, 40)}"),
        ("commit hash", lambda rng: f"This reverts commit {hx(rng, 40)}."),
        ("commit hash", lambda rng: f"bisect says the first bad commit is {hx(rng, 12)}"),
        (
            "checksum",
            lambda rng: (
                f"{hx(rng, 64)}  memory-gate-{rng.randrange(1, 4)}.{rng.randrange(20)}.{rng.randrange(10)}.tar.gz"
            ),
        ),
        ("checksum", lambda rng: f"SHA256 do instalador: {hx(rng, 64)}"),
        ("checksum", lambda rng: f"md5sum dump.sql -> {hx(rng, 32)}"),
        ("checksum", lambda rng: f'sha256 = "{hx(rng, 64)}"  # pinned source tarball'),
        ("lockfile integrity", lambda rng: f'"integrity": "sha512-{_run(rng, B64, 86)}=="'),
        (
            "lockfile integrity",
            lambda rng: f"github.com/pkg/errors v0.{rng.randrange(8, 10)}.{rng.randrange(10)} h1:{_run(rng, B64, 43)}=",
        ),
        ("lockfile integrity", lambda rng: f'hash = "sha256-{_run(rng, B64, 43)}=";  # nix source hash'),
        ("image digest", lambda rng: f"image: ghcr.io/acme/api@sha256:{hx(rng, 64)}"),
        ("image digest", lambda rng: f"Digest: sha256:{hx(rng, 64)}"),
        (
            "git lfs pointer",
            lambda rng: (
                f"version https://git-lfs.github.com/spec/v1\noid sha256:{hx(rng, 64)}\nsize {rng.randrange(10**4, 10**8)}"
            ),
        ),
        ("uuid", lambda rng: f"request_id={_uuid(rng)} status=500 path=/api/orders"),
        ("uuid", lambda rng: f"o pedido {_uuid(rng)} ficou preso na fila"),
        ("uuid", lambda rng: f'"tenantId": "{_uuid(rng)}"'),
        ("uuid", lambda rng: f"trace id {_uuid(rng)} shows the retry loop"),
        ("uuid", lambda rng: f"terraform state lineage: {_uuid(rng)}"),
        ("object id", lambda rng: f'ObjectId("{hx(rng, 24)}") não existe mais na coleção users'),
        ("object id", lambda rng: f"customer cus_{_run(rng, ALNUM, 14)} was charged twice"),
        ("object id", lambda rng: f"refund the payment intent pi_{_run(rng, ALNUM, 24)}"),
        ("object id", lambda rng: f"price id for the pro plan: price_{_run(rng, ALNUM, 24)}"),
        ("object id", lambda rng: f"completion chatcmpl-{_run(rng, ALNUM, 29)} returned an empty message"),
        ("object id", lambda rng: f"assistant asst_{_run(rng, ALNUM, 24)} uses the file file-{_run(rng, ALNUM, 22)}"),
        ("object id", lambda rng: f"Slack channel C{_run(rng, UPDIG, 10)} is #deploys"),
        ("object id", lambda rng: f"ULID {_run(rng, '0123456789ABCDEFGHJKMNPQRSTVWXYZ', 26)} ordena por tempo"),
        ("object id", lambda rng: f"run {rng.randrange(10**9, 10**10)} of workflow ci.yml failed on macOS"),
        (
            "object id",
            lambda rng: f"aws arn: arn:aws:iam::{rng.randrange(10**11, 10**12)}:role/{rng.choice(_SERVICES)}-deployer",
        ),
        (
            "object id",
            lambda rng: (
                f"pod {rng.choice(_SERVICES)}-{_run(rng, HEX, 10)}-{_run(rng, LOWALNUM, 5)} em CrashLoopBackOff"
            ),
        ),
        (
            "public key",
            lambda rng: (
                f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_run(rng, B64, 43)} {rng.choice(_USERS)}@laptop  # public key, add it to authorized_keys"
            ),
        ),
        (
            "public key",
            lambda rng: (
                f"chave pública do deploy: ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{_run(rng, B64, 120)} deploy@ci"
            ),
        ),
        ("public key", lambda rng: f"GPG fingerprint: {' '.join(_run(rng, HEX.upper(), 4) for _ in range(10))}"),
        (
            "public key",
            lambda rng: (
                f"-----BEGIN PUBLIC KEY-----\n{_run(rng, B64, 64)}\n{_run(rng, B64, 24)}==\n-----END PUBLIC KEY-----"
            ),
        ),
        ("public key", lambda rng: f"host key fingerprint SHA256:{_run(rng, B64, 43)} (ED25519)"),
        (
            "placeholder",
            lambda rng: (
                f"{rng.choice(['OPENAI_API_KEY', 'STRIPE_SECRET_KEY', 'GITHUB_TOKEN', 'SENTRY_DSN', 'DB_PASSWORD'])}=<{rng.choice(['your-key-here', 'paste token', 'coloque aqui', 'YOUR_TOKEN', 'senha'])}>  # line {rng.randrange(1, 200)}"
            ),
        ),
        ("placeholder", lambda rng: f'api_key: "{"x" * rng.randrange(16, 40)}"  # replace with your own'),
        ("placeholder", lambda rng: f"export ANTHROPIC_API_KEY=sk-ant-... # set yours (step {rng.randrange(1, 99)})"),
        (
            "placeholder",
            lambda rng: (
                f"substitua TOKEN_AQUI pelo token do {rng.choice(['GitHub', 'GitLab', 'Slack', 'Notion', 'Jira'])} (passo {rng.randrange(1, 99)})"
            ),
        ),
        ("placeholder", lambda rng: f"password: {rng.choice(_EMPTY)}  # {rng.choice(_SERVICES)}-{rng.randrange(1000)}"),
        ("masked", lambda rng: f"token: ghp_****************************{_run(rng, ALNUM, 4)}"),
        ("masked", lambda rng: f"chave atual termina em ...{_run(rng, ALNUM, 4)} (sk-proj-••••)"),
        (
            "masked",
            lambda rng: (
                f"{rng.choice(['DB_PASSWORD', 'API_KEY', 'SECRET_KEY', 'AUTH_TOKEN'])}=****** (masked by CI, job {rng.randrange(10**6)})"
            ),
        ),
        ("masked", lambda rng: f"Authorization: Bearer [REDACTED] req={_run(rng, HEX, 8)}"),
        (
            "env reference",
            lambda rng: (
                f"token: ${{{{ secrets.{rng.choice(['NPM_TOKEN', 'PYPI_TOKEN', 'DOCKERHUB_TOKEN', 'SLACK_WEBHOOK'])} }}}}  # step {rng.randrange(1, 50)}"
            ),
        ),
        (
            "env reference",
            lambda rng: (
                f'api_key = os.environ["{rng.choice(["OPENAI_API_KEY", "MISTRAL_KEY", "COHERE_KEY", "GROQ_KEY"])}"]  # {rng.randrange(1000)}'
            ),
        ),
        (
            "env reference",
            lambda rng: (
                f"const key = process.env.{rng.choice(['STRIPE_KEY', 'CLERK_SECRET', 'RESEND_KEY'])} ?? ''; // v{rng.randrange(1, 20)}"
            ),
        ),
        (
            "env reference",
            lambda rng: (
                f"valueFrom:\n  secretKeyRef:\n    name: {rng.choice(_SERVICES)}-secrets\n    key: {rng.choice(['password', 'api-key', 'token'])}"
            ),
        ),
        (
            "env reference",
            lambda rng: f'password = data.vault_generic_secret.db.data["password"]  # module {rng.choice(_SERVICES)}',
        ),
        (
            "env reference",
            lambda rng: (
                f"a senha fica no cofre em secret/data/{rng.choice(['prod', 'stg', 'dev'])}/{rng.choice(_SERVICES)}/db"
            ),
        ),
        ("env reference", lambda rng: f"$env:API_TOKEN = (Get-Secret -Name {rng.choice(_SERVICES)}Token -AsPlainText)"),
        (
            "version",
            lambda rng: (
                f"bumped ruff from 0.{rng.randrange(1, 15)}.{rng.randrange(20)} to 0.{rng.randrange(1, 15)}.{rng.randrange(20)}"
            ),
        ),
        (
            "version",
            lambda rng: f"build {rng.randrange(1, 9)}.{rng.randrange(40)}.{rng.randrange(100)}+{hx(rng, 7)} published",
        ),
        ("path", lambda rng: f"the key lives in ~/.ssh/id_ed25519_{rng.choice(_USERS)}, never in the repo"),
        ("path", lambda rng: f"static/js/main.{hx(rng, 8)}.chunk.js is 2 MB too big"),
        (
            "path",
            lambda rng: (
                f"credentials file: ~/.config/gcloud/application_default_credentials.json (profile {rng.choice(_USERS)})"
            ),
        ),
        (
            "data uri",
            lambda rng: f"background: url(data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA{_run(rng, B64, 60)}=);",
        ),
        (
            "prose",
            lambda rng: (
                f"We rotate the Stripe and Slack tokens every {rng.randrange(30, 120)} days; the runbook is in docs/ops."
            ),
        ),
        (
            "prose",
            lambda rng: f"a senha do banco foi trocada ontem, peça para o {rng.choice(_USERS).capitalize()} pelo cofre",
        ),
        (
            "prose",
            lambda rng: (
                f"never paste API keys into issues; use the secret manager (ticket OPS-{rng.randrange(100, 9999)})"
            ),
        ),
        (
            "prose",
            lambda rng: f"o token expira em {rng.randrange(1, 72)} horas, depois é preciso gerar outro no painel",
        ),
        (
            "prose",
            lambda rng: (
                f"password reset emails are failing for about {rng.randrange(2, 40)}% of users since the deploy"
            ),
        ),
        ("prose", lambda rng: f"A política exige senha com pelo menos {rng.randrange(10, 17)} caracteres e 2FA."),
        ("prose", lambda rng: f"moved the GitHub token from the .env to 1Password (item {rng.choice(_SERVICES)}-ci)"),
        (
            "prose",
            lambda rng: f"secret scanning flagged {rng.randrange(2, 30)} old commits; all keys were already revoked",
        ),
        (
            "prose",
            lambda rng: (
                f"a chave da API do {rng.choice(['Gemini', 'Asaas', 'Mercado Pago', 'Resend'])} está na variável de ambiente, não no código"
            ),
        ),
        (
            "prose",
            lambda rng: (
                f"getAccessTokenFromRefreshToken{rng.choice(['Async', 'Sync', 'OrThrow', 'Cached'])}() returns null when the session expired"
            ),
        ),
        ("code", lambda rng: f'if not token:\n    raise AuthError("missing token")  # L{rng.randrange(1, 500)}'),
        ("code", lambda rng: f"PASSWORD_MIN_LENGTH = {rng.randrange(8, 20)}"),
        ("code", lambda rng: f'regex para token: r"^gh[pousr]_[A-Za-z0-9]{{36}}$"  # v{rng.randrange(1, 9)}'),
        ("code", lambda rng: f'const SECRET_HEADER = "X-Api-Key"; // {rng.randrange(1000)}'),
        (
            "number",
            lambda rng: (
                f"pedido #{rng.randrange(10**6, 10**7)} pago via Pix, e2e E{rng.randrange(10**7, 10**8)}2026{rng.randrange(10**10, 10**11)}"
            ),
        ),
        ("color", lambda rng: f"--brand: #{hx(rng, 6)}; --accent: #{hx(rng, 6)};"),
        (
            "url",
            lambda rng: (
                f"https://github.com/acme/{rng.choice(_SERVICES)}/pull/{rng.randrange(1, 5000)}#discussion_r{rng.randrange(10**9, 10**10)}"
            ),
        ),
        ("url", lambda rng: f"https://docs.example.com/auth/api-keys?lang=pt-BR&section={rng.randrange(1, 30)}"),
    ]


def samples() -> tuple[list[Sample], list[Sample]]:
    """(credentials, look-alikes) of the third blind part: the same lists on every call."""
    rng = random.Random(SEED)
    secrets: list[Sample] = []
    for group, env, key, label, label_pt, make in _providers(rng):
        for context, form in rng.sample(_CONTEXTS, 4):
            value = make()
            secrets.append(Sample(group, context, form(group, env, key, label, label_pt, value), value))
    secrets += _embedded(rng)
    for group, forms in _PASSWORDS:
        for context, form in forms:
            value = _password(rng, "url" in group)
            secrets.append(Sample(group, context, form(rng, value), value))

    benign: list[Sample] = []
    seen: set[str] = set()
    makers = _lookalike_makers()
    while len(benign) < 360:
        group, make = makers[len(benign) % len(makers)]
        text = make(rng)
        if text in seen:
            continue
        seen.add(text)
        benign.append(Sample(group, "look-alike", text))
    return secrets, benign
