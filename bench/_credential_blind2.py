"""The second blind held-out part of the generated credential set (issue 30, item 1).

Written on 2026-12-07 by an engineer who had not read the detector (gate/credentials/), its
tests, its tuning or baseline data, the other parts of the set (bar the Sample dataclass and the
alphabets of bench/_credential_samples.py), nor any list of what it misses: from what credentials
and their look-alikes look like in the wild. Nobody tuning the detector may read this file, print
its misses or refusals, or read them: once they are read it is tuning data and no evidence.
bench/credentials.py prints only its counts (`--spend-blind2` prints the misses, and spends it).

Every value is made here from random characters with SEED = 2026, in the shape its issuer uses
(prefix, alphabet, length, separators): none is, or was, a real credential. It holds 470
credentials (390 of 92 provider groups, 80 passwords of 8 shapes) and 520 look-alikes; as shapes:

- provider credentials, each in four surroundings drawn from eight kinds: config files (.env,
  YAML nested under a parent, JSON, TOML, INI, XML, Java properties, HCL, docker-compose,
  Kubernetes, Dockerfile, systemd, GitHub Actions, direnv, fish), code literals (Python,
  JavaScript, TypeScript, Go, Java, Ruby, PHP, C#, Rust), shell lines (export, inline variables,
  `--token`/`--api-key` flags, curl headers, PowerShell, cmd, gh, heroku, kubectl, history),
  URLs, headers and logs, markdown and CSV tables, prose in English and in Portuguese, and chat,
  commit and e-mail messages; prefixed tokens also stand bare, with no name near them;
- provider formats: AWS key ids and secret keys, GitHub classic, app and fine-grained tokens,
  GitLab personal, deploy and trigger tokens, OpenAI project, service-account and legacy keys,
  Anthropic API and admin keys, Stripe secret, restricted and webhook keys, Slack bot, user and
  app tokens and webhook URLs, Google API keys and OAuth client secrets, Google service-account
  JSON with its private key, Azure client secrets, storage keys in connection strings, SAS
  signatures and DevOps tokens, npm, PyPI, Docker Hub, Heroku (new and UUID), DigitalOcean,
  Vercel, Netlify, Linear, Notion (new and old), Airtable, Sentry org and user tokens, Datadog,
  New Relic, Grafana service-account and cloud tokens, Twilio keys and auth tokens (also a SID
  and token pair), SendGrid, Mailgun, Postmark, Mailchimp, Shopify, Square, Adyen, Braintree,
  PayPal, Mercado Pago, PagSeguro, HashiCorp Vault, Doppler, Pulumi, Terraform Cloud, Atlassian,
  Bitbucket, Figma, Hugging Face, Replicate, Groq, Mistral, Cohere, Perplexity, OpenRouter, xAI,
  DeepSeek, LangSmith, Pinecone, Discord bot tokens and webhooks, Telegram, Cloudflare,
  Tailscale, age, WireGuard, PlanetScale, Contentful, Mapbox secret tokens, Dropbox, CircleCI,
  Buildkite, HubSpot, LaunchDarkly, Okta, Supabase, Render, Fly.io, Snyk, Auth0, Algolia,
  Databricks, JWT signing secrets, PEM private keys (RSA, EC, PKCS#8), OpenSSH private keys,
  basic-auth headers, Docker config auths, and database URLs with passwords;
- passwords of eight shapes (passphrase, accented Portuguese, digits only, symbol first,
  letters only, word and year, random, leetspeak) in config files, URLs, shell and SQL lines,
  code, tables, prose in English and Portuguese, chat, e-mail and topics;
- look-alikes, which an owner writes in notes and which are plainly no secret: hashes and
  digests, ids of every kind (UUIDs, cloud resource ids, payment object ids, Brazilian invoice
  keys and PIX keys), public keys, certificates and fingerprints, placeholders, masked values,
  references to variables and secret stores, versions, paths, URLs without passwords, logs,
  code about secrets, prose and chat about secrets with none in them, in English and Portuguese.
"""

from __future__ import annotations

import random

from _credential_samples import ALNUM, B64, DIGITS, HEX, LOWER, UPPER, URLSAFE, Sample, _run

SEED = 2026

BASE32 = LOWER + "234567"
UPHEX = "0123456789ABCDEF"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


class Provider:
    """A provider's names (group, config slug, variable, key, English label, Portuguese phrase) and
    the makers of its values' formats."""

    def __init__(self, group, slug, env, key, label, pt, makers):
        self.group, self.slug, self.env, self.key = group, slug, env, key
        self.label, self.pt, self.makers = label, pt, makers
        self.camel = key.split("_")[0] + "".join(part.title() for part in key.split("_")[1:])
        self.Pt = pt[0].upper() + pt[1:]


def _providers(rng: random.Random) -> list[Provider]:
    def run(alphabet, n):
        return _run(rng, alphabet, n)

    def pre(prefix, alphabet, n, suffix=""):
        return lambda: prefix + run(alphabet, n) + suffix

    def uuid():
        h = "".join(rng.choice(HEX) for _ in range(32))
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{rng.choice('89ab')}{h[17:20]}-{h[20:]}"

    def digits(n):
        return str(rng.randrange(10 ** (n - 1), 10**n))

    P = Provider
    return [
        P(
            "aws access key id",
            "aws",
            "AWS_ACCESS_KEY_ID",
            "aws_access_key_id",
            "AWS access key id",
            "o access key id da AWS",
            [pre("AKIA", UPPER + "234567", 16), pre("ASIA", UPPER + "234567", 16)],
        ),
        P(
            "aws secret access key",
            "aws",
            "AWS_SECRET_ACCESS_KEY",
            "aws_secret_access_key",
            "AWS secret access key",
            "a secret key da AWS",
            [lambda: run(B64, 40)],
        ),
        P(
            "github",
            "github",
            "GITHUB_TOKEN",
            "token",
            "GitHub token",
            "o token do GitHub",
            [pre(p, ALNUM, 36) for p in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")],
        ),
        P(
            "github fine-grained",
            "github",
            "GH_PAT",
            "personal_access_token",
            "GitHub fine-grained token",
            "o token fine-grained do GitHub",
            [lambda: "github_pat_11" + run(UPPER + DIGITS, 20) + "_" + run(ALNUM, 59)],
        ),
        P(
            "gitlab",
            "gitlab",
            "GITLAB_TOKEN",
            "private_token",
            "GitLab token",
            "o token do GitLab",
            [pre("glpat-", URLSAFE, 20), pre("gldt-", URLSAFE, 20), pre("glptt-", HEX, 40)],
        ),
        P(
            "openai",
            "openai",
            "OPENAI_API_KEY",
            "api_key",
            "OpenAI API key",
            "a chave da OpenAI",
            [
                lambda: "sk-proj-" + run(URLSAFE, 74) + "T3BlbkFJ" + run(URLSAFE, 74),
                lambda: "sk-svcacct-" + run(URLSAFE, 74) + "T3BlbkFJ" + run(URLSAFE, 74),
                lambda: "sk-" + run(ALNUM, 20) + "T3BlbkFJ" + run(ALNUM, 20),
            ],
        ),
        P(
            "anthropic",
            "anthropic",
            "ANTHROPIC_API_KEY",
            "api_key",
            "Anthropic API key",
            "a chave da Anthropic",
            [pre("sk-ant-api03-", URLSAFE, 93, "AA"), pre("sk-ant-admin01-", URLSAFE, 93, "AA")],
        ),
        P(
            "stripe",
            "stripe",
            "STRIPE_SECRET_KEY",
            "secret_key",
            "Stripe secret key",
            "a chave secreta do Stripe",
            [pre("sk_live_51", ALNUM, 97), pre("rk_live_51", ALNUM, 97), pre("sk_live_", ALNUM, 24)],
        ),
        P(
            "stripe webhook",
            "stripe",
            "STRIPE_WEBHOOK_SECRET",
            "webhook_secret",
            "Stripe webhook signing secret",
            "o segredo do webhook do Stripe",
            [pre("whsec_", ALNUM, 32)],
        ),
        P(
            "slack token",
            "slack",
            "SLACK_BOT_TOKEN",
            "bot_token",
            "Slack bot token",
            "o token do bot do Slack",
            [
                lambda: f"xoxb-{digits(11)}-{digits(13)}-{run(ALNUM, 24)}",
                lambda: f"xoxp-{digits(11)}-{digits(11)}-{digits(13)}-{run(HEX, 32)}",
                lambda: f"xapp-1-A{run(UPPER + DIGITS, 10)}-{digits(13)}-{run(HEX, 64)}",
            ],
        ),
        P(
            "google api key",
            "google",
            "GOOGLE_API_KEY",
            "api_key",
            "Google API key",
            "a chave de API do Google",
            [pre("AIza", URLSAFE, 35)],
        ),
        P(
            "google oauth client secret",
            "google",
            "GOOGLE_CLIENT_SECRET",
            "client_secret",
            "Google OAuth client secret",
            "o client secret do Google",
            [pre("GOCSPX-", URLSAFE, 28)],
        ),
        P(
            "azure client secret",
            "azure",
            "AZURE_CLIENT_SECRET",
            "client_secret",
            "Azure client secret",
            "o client secret do Azure",
            [lambda: run(ALNUM, 3) + str(rng.randrange(10)) + "Q~" + run(ALNUM + "_.-~", 34)],
        ),
        P(
            "azure devops pat",
            "azure_devops",
            "AZURE_DEVOPS_PAT",
            "personal_access_token",
            "Azure DevOps PAT",
            "o PAT do Azure DevOps",
            [lambda: run(BASE32, 52)],
        ),
        P(
            "npm",
            "npm",
            "NPM_TOKEN",
            "auth_token",
            "npm token",
            "o token do npm",
            [pre("npm_", ALNUM, 36)],
        ),
        P(
            "pypi",
            "pypi",
            "PYPI_API_TOKEN",
            "password",
            "PyPI API token",
            "o token do PyPI",
            [pre("pypi-AgEIcHlwaS5vcmc", URLSAFE, 140)],
        ),
        P(
            "docker hub",
            "dockerhub",
            "DOCKERHUB_TOKEN",
            "access_token",
            "Docker Hub access token",
            "o token do Docker Hub",
            [pre("dckr_pat_", URLSAFE, 27)],
        ),
        P(
            "heroku",
            "heroku",
            "HEROKU_API_KEY",
            "api_key",
            "Heroku API key",
            "a chave de API do Heroku",
            [pre("HRKU-AA", URLSAFE, 58), uuid],
        ),
        P(
            "digitalocean",
            "digitalocean",
            "DIGITALOCEAN_ACCESS_TOKEN",
            "access_token",
            "DigitalOcean token",
            "o token da DigitalOcean",
            [pre("dop_v1_", HEX, 64), pre("doo_v1_", HEX, 64)],
        ),
        P(
            "vercel",
            "vercel",
            "VERCEL_TOKEN",
            "token",
            "Vercel token",
            "o token da Vercel",
            [lambda: run(ALNUM, 24)],
        ),
        P(
            "netlify",
            "netlify",
            "NETLIFY_AUTH_TOKEN",
            "auth_token",
            "Netlify access token",
            "o token da Netlify",
            [pre("nfp_", ALNUM, 36)],
        ),
        P(
            "linear",
            "linear",
            "LINEAR_API_KEY",
            "api_key",
            "Linear API key",
            "a chave do Linear",
            [pre("lin_api_", ALNUM, 40)],
        ),
        P(
            "notion",
            "notion",
            "NOTION_API_KEY",
            "integration_token",
            "Notion integration token",
            "o token da integração do Notion",
            [pre("ntn_", ALNUM, 46), pre("secret_", ALNUM, 43)],
        ),
        P(
            "airtable",
            "airtable",
            "AIRTABLE_API_KEY",
            "api_key",
            "Airtable personal access token",
            "o token do Airtable",
            [lambda: "pat" + run(ALNUM, 14) + "." + run(HEX, 64)],
        ),
        P(
            "sentry auth token",
            "sentry",
            "SENTRY_AUTH_TOKEN",
            "auth_token",
            "Sentry auth token",
            "o auth token do Sentry",
            [lambda: "sntrys_eyJ" + run(ALNUM, 120) + "_" + run(ALNUM + "+/", 43), pre("sntryu_", HEX, 64)],
        ),
        P(
            "datadog",
            "datadog",
            "DD_API_KEY",
            "api_key",
            "Datadog API key",
            "a chave de API do Datadog",
            [lambda: run(HEX, 32), lambda: run(HEX, 40)],
        ),
        P(
            "new relic",
            "newrelic",
            "NEW_RELIC_LICENSE_KEY",
            "license_key",
            "New Relic key",
            "a chave do New Relic",
            [pre("NRAK-", UPPER + DIGITS, 27), pre("", HEX, 36, "NRAL"), pre("NRII-", URLSAFE, 32)],
        ),
        P(
            "grafana",
            "grafana",
            "GRAFANA_SERVICE_ACCOUNT_TOKEN",
            "token",
            "Grafana token",
            "o token do Grafana",
            [lambda: "glsa_" + run(ALNUM, 32) + "_" + run(HEX, 8), lambda: "glc_eyJ" + run(ALNUM, 120) + "fQ=="],
        ),
        P(
            "twilio api key",
            "twilio",
            "TWILIO_API_SECRET",
            "api_secret",
            "Twilio API secret",
            "o segredo da API do Twilio",
            [lambda: run(ALNUM, 32)],
        ),
        P(
            "twilio auth token",
            "twilio",
            "TWILIO_AUTH_TOKEN",
            "auth_token",
            "Twilio auth token",
            "o auth token do Twilio",
            [lambda: run(HEX, 32)],
        ),
        P(
            "sendgrid",
            "sendgrid",
            "SENDGRID_API_KEY",
            "api_key",
            "SendGrid API key",
            "a chave do SendGrid",
            [lambda: "SG." + run(URLSAFE, 22) + "." + run(URLSAFE, 43)],
        ),
        P(
            "mailgun",
            "mailgun",
            "MAILGUN_API_KEY",
            "api_key",
            "Mailgun API key",
            "a chave do Mailgun",
            [pre("key-", HEX, 32), lambda: run(HEX, 32) + "-" + run(HEX, 8) + "-" + run(HEX, 8)],
        ),
        P(
            "postmark",
            "postmark",
            "POSTMARK_SERVER_TOKEN",
            "server_token",
            "Postmark server token",
            "o token do servidor do Postmark",
            [uuid],
        ),
        P(
            "mailchimp",
            "mailchimp",
            "MAILCHIMP_API_KEY",
            "api_key",
            "Mailchimp API key",
            "a chave do Mailchimp",
            [lambda: run(HEX, 32) + f"-us{rng.randrange(1, 22)}"],
        ),
        P(
            "shopify",
            "shopify",
            "SHOPIFY_ADMIN_TOKEN",
            "access_token",
            "Shopify admin token",
            "o token de admin da Shopify",
            [pre("shpat_", HEX, 32), pre("shpss_", HEX, 32), pre("shpca_", HEX, 32)],
        ),
        P(
            "square",
            "square",
            "SQUARE_ACCESS_TOKEN",
            "access_token",
            "Square access token",
            "o token de acesso do Square",
            [pre("EAAA", URLSAFE, 60), pre("sq0csp-", URLSAFE, 43), pre("sq0atp-", URLSAFE, 22)],
        ),
        P(
            "adyen",
            "adyen",
            "ADYEN_API_KEY",
            "api_key",
            "Adyen API key",
            "a chave de API da Adyen",
            [lambda: "AQE" + run(ALNUM + "+/", 110) + "==-" + run(ALNUM + "+/", 43) + "=-" + run(ALNUM, 16)],
        ),
        P(
            "braintree",
            "braintree",
            "BRAINTREE_ACCESS_TOKEN",
            "access_token",
            "Braintree access token",
            "o token do Braintree",
            [lambda: "access_token$production$" + run(LOWER + DIGITS, 16) + "$" + run(HEX, 32)],
        ),
        P(
            "paypal",
            "paypal",
            "PAYPAL_CLIENT_SECRET",
            "client_secret",
            "PayPal client secret",
            "o client secret do PayPal",
            [lambda: run(URLSAFE, 80)],
        ),
        P(
            "mercado pago",
            "mercadopago",
            "MERCADOPAGO_ACCESS_TOKEN",
            "access_token",
            "Mercado Pago access token",
            "o access token do Mercado Pago",
            [lambda: f"APP_USR-{digits(16)}-{digits(6)}-{run(HEX, 32)}-{digits(9)}"],
        ),
        P(
            "pagseguro",
            "pagseguro",
            "PAGSEGURO_TOKEN",
            "token",
            "PagSeguro token",
            "o token do PagSeguro",
            [lambda: run(UPHEX, 32)],
        ),
        P(
            "vault",
            "vault",
            "VAULT_TOKEN",
            "token",
            "Vault token",
            "o token do Vault",
            [pre("hvs.", URLSAFE, 90), pre("hvb.", URLSAFE, 130), pre("s.", ALNUM, 24)],
        ),
        P(
            "doppler",
            "doppler",
            "DOPPLER_TOKEN",
            "token",
            "Doppler token",
            "o token do Doppler",
            [pre("dp.st.prd.", ALNUM, 43), pre("dp.pt.", ALNUM, 43), pre("dp.sa.", ALNUM, 43)],
        ),
        P(
            "pulumi",
            "pulumi",
            "PULUMI_ACCESS_TOKEN",
            "access_token",
            "Pulumi access token",
            "o token do Pulumi",
            [pre("pul-", HEX, 40)],
        ),
        P(
            "terraform cloud",
            "terraform",
            "TFE_TOKEN",
            "token",
            "Terraform Cloud token",
            "o token do Terraform Cloud",
            [lambda: run(ALNUM, 14) + ".atlasv1." + run(ALNUM, 67)],
        ),
        P(
            "atlassian",
            "atlassian",
            "JIRA_API_TOKEN",
            "api_token",
            "Jira API token",
            "o token de API do Jira",
            [lambda: "ATATT3xFfGF0" + run(URLSAFE, 180) + "=" + run(UPHEX, 8)],
        ),
        P(
            "bitbucket",
            "bitbucket",
            "BITBUCKET_APP_PASSWORD",
            "app_password",
            "Bitbucket app password",
            "a app password do Bitbucket",
            [pre("ATBB", ALNUM, 32, ""), lambda: "ATCTT3xFfGN0" + run(URLSAFE, 180) + "=" + run(UPHEX, 8)],
        ),
        P(
            "figma",
            "figma",
            "FIGMA_TOKEN",
            "access_token",
            "Figma access token",
            "o token do Figma",
            [pre("figd_", URLSAFE, 40)],
        ),
        P(
            "hugging face",
            "huggingface",
            "HUGGING_FACE_HUB_TOKEN",
            "token",
            "Hugging Face token",
            "o token do Hugging Face",
            [pre("hf_", UPPER + LOWER, 34)],
        ),
        P(
            "replicate",
            "replicate",
            "REPLICATE_API_TOKEN",
            "api_token",
            "Replicate API token",
            "o token do Replicate",
            [pre("r8_", ALNUM, 37)],
        ),
        P(
            "groq",
            "groq",
            "GROQ_API_KEY",
            "api_key",
            "Groq API key",
            "a chave da Groq",
            [pre("gsk_", ALNUM, 52)],
        ),
        P(
            "mistral",
            "mistral",
            "MISTRAL_API_KEY",
            "api_key",
            "Mistral API key",
            "a chave da Mistral",
            [lambda: run(ALNUM, 32)],
        ),
        P(
            "cohere",
            "cohere",
            "COHERE_API_KEY",
            "api_key",
            "Cohere API key",
            "a chave da Cohere",
            [lambda: run(ALNUM, 40)],
        ),
        P(
            "perplexity",
            "perplexity",
            "PERPLEXITY_API_KEY",
            "api_key",
            "Perplexity API key",
            "a chave da Perplexity",
            [pre("pplx-", ALNUM, 48)],
        ),
        P(
            "openrouter",
            "openrouter",
            "OPENROUTER_API_KEY",
            "api_key",
            "OpenRouter key",
            "a chave do OpenRouter",
            [pre("sk-or-v1-", HEX, 64)],
        ),
        P(
            "xai",
            "xai",
            "XAI_API_KEY",
            "api_key",
            "xAI API key",
            "a chave da xAI",
            [pre("xai-", ALNUM, 80)],
        ),
        P(
            "deepseek",
            "deepseek",
            "DEEPSEEK_API_KEY",
            "api_key",
            "DeepSeek API key",
            "a chave da DeepSeek",
            [pre("sk-", HEX, 32)],
        ),
        P(
            "langsmith",
            "langsmith",
            "LANGSMITH_API_KEY",
            "api_key",
            "LangSmith API key",
            "a chave do LangSmith",
            [lambda: f"lsv2_{rng.choice(['pt', 'sk'])}_{run(HEX, 32)}_{run(HEX, 10)}"],
        ),
        P(
            "pinecone",
            "pinecone",
            "PINECONE_API_KEY",
            "api_key",
            "Pinecone API key",
            "a chave do Pinecone",
            [lambda: "pcsk_" + run(ALNUM, 5) + "_" + run(ALNUM, 65)],
        ),
        P(
            "discord",
            "discord",
            "DISCORD_BOT_TOKEN",
            "bot_token",
            "Discord bot token",
            "o token do bot do Discord",
            [lambda: rng.choice("MNO") + run(ALNUM, 25) + "." + run(URLSAFE, 6) + "." + run(URLSAFE, 38)],
        ),
        P(
            "telegram",
            "telegram",
            "TELEGRAM_BOT_TOKEN",
            "bot_token",
            "Telegram bot token",
            "o token do bot do Telegram",
            [lambda: f"{digits(10)}:AA{run(URLSAFE, 33)}"],
        ),
        P(
            "cloudflare",
            "cloudflare",
            "CLOUDFLARE_API_TOKEN",
            "api_token",
            "Cloudflare API token",
            "o token da Cloudflare",
            [lambda: run(URLSAFE, 40), lambda: run(HEX, 37)],
        ),
        P(
            "tailscale",
            "tailscale",
            "TS_AUTHKEY",
            "auth_key",
            "Tailscale auth key",
            "a auth key do Tailscale",
            [lambda: f"tskey-{rng.choice(['auth', 'api'])}-k{run(ALNUM, 11)}-{run(ALNUM, 33)}"],
        ),
        P(
            "age",
            "age",
            "SOPS_AGE_KEY",
            "identity",
            "age secret key",
            "a chave secreta do age",
            [pre("AGE-SECRET-KEY-1", BECH32.upper(), 58)],
        ),
        P(
            "planetscale",
            "planetscale",
            "PLANETSCALE_SERVICE_TOKEN",
            "service_token",
            "PlanetScale token",
            "o token do PlanetScale",
            [pre("pscale_tkn_", URLSAFE, 43), pre("pscale_pw_", URLSAFE, 43)],
        ),
        P(
            "contentful",
            "contentful",
            "CONTENTFUL_MANAGEMENT_TOKEN",
            "management_token",
            "Contentful management token",
            "o token de gestão do Contentful",
            [pre("CFPAT-", URLSAFE, 43)],
        ),
        P(
            "mapbox",
            "mapbox",
            "MAPBOX_SECRET_TOKEN",
            "secret_token",
            "Mapbox secret token",
            "o token secreto do Mapbox",
            [lambda: "sk.eyJ1Ijoi" + run(ALNUM, 30) + "." + run(URLSAFE, 22)],
        ),
        P(
            "dropbox",
            "dropbox",
            "DROPBOX_ACCESS_TOKEN",
            "access_token",
            "Dropbox access token",
            "o token do Dropbox",
            [pre("sl.B", URLSAFE, 134)],
        ),
        P(
            "circleci",
            "circleci",
            "CIRCLECI_TOKEN",
            "token",
            "CircleCI token",
            "o token do CircleCI",
            [lambda: "CCIPAT_" + run(ALNUM, 22) + "_" + run(HEX, 40)],
        ),
        P(
            "buildkite",
            "buildkite",
            "BUILDKITE_API_TOKEN",
            "api_token",
            "Buildkite API token",
            "o token do Buildkite",
            [pre("bkua_", HEX, 40)],
        ),
        P(
            "hubspot",
            "hubspot",
            "HUBSPOT_ACCESS_TOKEN",
            "access_token",
            "HubSpot private app token",
            "o token do HubSpot",
            [lambda: f"pat-{rng.choice(['na1', 'eu1'])}-{uuid()}"],
        ),
        P(
            "launchdarkly",
            "launchdarkly",
            "LAUNCHDARKLY_SDK_KEY",
            "sdk_key",
            "LaunchDarkly SDK key",
            "a SDK key do LaunchDarkly",
            [lambda: "sdk-" + uuid(), lambda: "api-" + uuid()],
        ),
        P(
            "okta",
            "okta",
            "OKTA_API_TOKEN",
            "api_token",
            "Okta API token",
            "o token de API do Okta",
            [pre("00", URLSAFE, 40)],
        ),
        P(
            "supabase",
            "supabase",
            "SUPABASE_SERVICE_ROLE_KEY",
            "service_role_key",
            "Supabase service role key",
            "a service role key do Supabase",
            [
                pre("sbp_", HEX, 40),
                lambda: "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ" + run(URLSAFE, 120) + "." + run(URLSAFE, 43),
            ],
        ),
        P(
            "render",
            "render",
            "RENDER_API_KEY",
            "api_key",
            "Render API key",
            "a chave de API do Render",
            [pre("rnd_", ALNUM, 32)],
        ),
        P(
            "fly.io",
            "fly",
            "FLY_API_TOKEN",
            "api_token",
            "Fly.io token",
            "o token do Fly.io",
            [lambda: "fm2_lJPE" + run(ALNUM + "+/", 200) + "=="],
        ),
        P(
            "snyk",
            "snyk",
            "SNYK_TOKEN",
            "token",
            "Snyk token",
            "o token do Snyk",
            [uuid],
        ),
        P(
            "auth0",
            "auth0",
            "AUTH0_CLIENT_SECRET",
            "client_secret",
            "Auth0 client secret",
            "o client secret do Auth0",
            [lambda: run(URLSAFE, 64)],
        ),
        P(
            "algolia",
            "algolia",
            "ALGOLIA_ADMIN_API_KEY",
            "admin_api_key",
            "Algolia admin API key",
            "a chave de admin do Algolia",
            [lambda: run(HEX, 32)],
        ),
        P(
            "databricks",
            "databricks",
            "DATABRICKS_TOKEN",
            "token",
            "Databricks token",
            "o token do Databricks",
            [pre("dapi", HEX, 32)],
        ),
        P(
            "jwt signing secret",
            "auth",
            "JWT_SECRET",
            "jwt_secret",
            "JWT signing secret",
            "o segredo de assinatura do JWT",
            [lambda: run(HEX, 64), lambda: run(ALNUM + "!@#%^&*-_", 48)],
        ),
        P(
            "wireguard",
            "wireguard",
            "WG_PRIVATE_KEY",
            "private_key",
            "WireGuard private key",
            "a chave privada do WireGuard",
            [lambda: run(B64, 43) + "="],
        ),
    ]


# -- surroundings for a provider's value: each takes (provider, value) and returns the text -------
# Every one names what the value is (variable, key, label, Bearer): an unprefixed value stands only
# in these. BARE ones, used only for values of a STRONG prefix or a known shape, put nothing near it.

NAMED = {
    "config": [
        lambda p, v: f"{p.env}={v}",
        lambda p, v: f"# .env.production\nNODE_ENV=production\n{p.env}={v}\nPORT=8080",
        lambda p, v: f'{p.env}="{v}"  # rotated 2026-11',
        lambda p, v: f"{p.slug}:\n  {p.key}: {v}\n  timeout: 30",
        lambda p, v: f'integrations:\n  {p.slug}:\n    enabled: true\n    {p.key}: "{v}"',
        lambda p, v: f'{{\n  "{p.slug}": {{\n    "{p.camel}": "{v}"\n  }}\n}}',
        lambda p, v: f'[{p.slug}]\n{p.key} = "{v}"',
        lambda p, v: f"[{p.slug}]\nenabled = yes\n{p.key} = {v}",
        lambda p, v: f'<add key="{p.env}" value="{v}" />',
        lambda p, v: f"<{p.camel}>{v}</{p.camel}>",
        lambda p, v: f"{p.slug}.{p.key.replace('_', '-')}={v}",
        lambda p, v: f'variable "{p.key}" {{\n  default = "{v}"\n}}',
        lambda p, v: f"services:\n  worker:\n    image: acme/worker:1.4\n    environment:\n      - {p.env}={v}",
        lambda p, v: f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {p.slug}-creds\nstringData:\n  {p.env}: {v}",
        lambda p, v: f'[Service]\nEnvironment="{p.env}={v}"',
        lambda p, v: f'FROM python:3.12-slim\nENV {p.env}={v}\nCMD ["python", "app.py"]',
        lambda p, v: f"env:\n  {p.env}: {v}\nsteps:\n  - run: make deploy",
        lambda p, v: f"export {p.env}='{v}'",
        lambda p, v: f"set -gx {p.env} {v}",
    ],
    "code": [
        lambda p, v: f'{p.env} = "{v}"',
        lambda p, v: f'client = {p.slug.title()}Client({p.key}="{v}")',
        lambda p, v: f'os.environ["{p.env}"] = "{v}"',
        lambda p, v: f'headers = {{"Authorization": "Bearer {v}"}}',
        lambda p, v: f"const {p.camel} = '{v}';",
        lambda p, v: f'process.env.{p.env} = "{v}";',
        lambda p, v: f'export const config = {{ {p.camel}: "{v}", retries: 3 }};',
        lambda p, v: f'const {p.camel[0].upper() + p.camel[1:]} = "{v}"',
        lambda p, v: f'private static final String {p.env} = "{v}";',
        lambda p, v: f"config.{p.key} = '{v}'",
        lambda p, v: f"define('{p.env}', '{v}');",
        lambda p, v: f'var {p.camel} = "{v}";',
        lambda p, v: f'let {p.key} = "{v}";',
    ],
    "shell": [
        lambda p, v: f"export {p.env}={v}",
        lambda p, v: f"{p.env}={v} npm run deploy",
        lambda p, v: f"curl -s -H 'Authorization: Bearer {v}' https://api.{p.slug}.example/v1/me",
        lambda p, v: f'curl -H "X-API-Key: {v}" https://{p.slug}.example/api/health',
        lambda p, v: f"{p.slug}-cli login --token {v}",
        lambda p, v: f"./deploy.sh --api-key={v} --region sa-east-1",
        lambda p, v: f'$env:{p.env} = "{v}"',
        lambda p, v: f"set {p.env}={v}",
        lambda p, v: f"gh secret set {p.env} --body {v}",
        lambda p, v: f"heroku config:set {p.env}={v} -a acme-api",
        lambda p, v: f"kubectl create secret generic {p.slug} --from-literal={p.key}={v}",
        lambda p, v: f"  512  export {p.env}={v}",
    ],
    "log": [
        lambda p, v: f"https://api.{p.slug}.example/v2/items?{p.key}={v}&limit=50",
        lambda p, v: f"Authorization: Bearer {v}",
        lambda p, v: f"2026-12-06T14:02:11Z DEBUG outgoing headers={{'Authorization': 'Bearer {v}'}}",
        lambda p, v: f"DEBUG config loaded: {p.key}={v} region=sa-east-1",
        lambda p, v: f"[worker-3] WARN {p.env} is set to {v}",
    ],
    "table": [
        lambda p, v: f"| service | variable | value |\n|---|---|---|\n| {p.slug} | {p.env} | {v} |",
        lambda p, v: f"| Serviço | Chave |\n| --- | --- |\n| {p.label} | `{v}` |",
        lambda p, v: f"name,{p.key},created\n{p.slug},{v},2026-11-30",
        lambda p, v: f"| env | {p.label} |\n|---|---|\n| staging | (in Vault) |\n| prod | {v} |",
        lambda p, v: f"{p.env}\t{v}\tprod",
    ],
    "prose-en": [
        lambda p, v: f"The {p.label} for prod is {v}",
        lambda p, v: f"new {p.label}: {v} (old one revoked)",
        lambda p, v: f"Remember: {p.label} = {v}, it expires in March.",
        lambda p, v: f"I rotated the {p.label}; use {v} from now on.",
        lambda p, v: f"Note to self - {p.label} {v}",
        lambda p, v: f"For local testing, set {p.env} to {v}.",
    ],
    "prose-pt": [
        lambda p, v: f"{p.Pt} de produção é {v}",
        lambda p, v: f"Anota aí: {p.pt} é {v}",
        lambda p, v: f"troquei {p.pt} hoje, o novo valor é {v}",
        lambda p, v: f"Para testar localmente, defina {p.env} como {v}.",
        lambda p, v: f"{p.Pt}: {v} (não compartilhar)",
        lambda p, v: f"Segue {p.pt} que você pediu: {v}",
    ],
    "message": [
        lambda p, v: f"[14:02] ana: aqui {p.pt}: {v}",
        lambda p, v: f"<bob> can you try with {v}? it's the {p.label} from the shared vault",
        lambda p, v: f"@channel the {p.label} changed, new value `{v}`",
        lambda p, v: f"fix: hardcode {p.env}={v} until the vault is back",
        lambda p, v: f"chore(ci): add {p.label} {v} to the deploy job",
        lambda p, v: f"Subject: access\n\nHi Marta,\n\nthe {p.label} you asked for is {v}\n\nBest,\nJo",
        lambda p, v: f"Olá João,\n\nsegue {p.pt}: {v}\n\nAbraços,\nLuíza",
    ],
}

# Prefixes that say on their own what a value is, to anyone who has met them.
STRONG = (
    *("AKIA", "ASIA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "gldt-", "glptt-"),
    *("sk-proj-", "sk-svcacct-", "sk-ant-", "sk_live_", "rk_live_", "whsec_", "xoxb-", "xoxp-", "xapp-"),
    *("AIza", "GOCSPX-", "npm_", "pypi-", "dckr_pat_", "HRKU-", "dop_v1_", "doo_v1_", "nfp_", "lin_api_", "ntn_"),
    *("sntrys_", "sntryu_", "NRAK-", "NRII-", "glsa_", "glc_", "SG.", "shpat_", "shpss_", "shpca_", "sq0csp-"),
    *("sq0atp-", "access_token$production$", "APP_USR-", "hvs.", "hvb.", "dp.st.", "dp.pt.", "dp.sa.", "pul-"),
    *("ATATT3", "ATBB", "ATCTT3", "figd_", "hf_", "r8_", "gsk_", "pplx-", "sk-or-v1-", "xai-", "lsv2_", "pcsk_"),
    *("tskey-", "AGE-SECRET-KEY-", "pscale_", "CFPAT-", "sk.eyJ", "sl.B", "CCIPAT_", "bkua_", "pat-na1-"),
    *("pat-eu1-", "rnd_", "fm2_", "dapi"),
)
# Discord and Telegram bot tokens are known by their whole shape.
SHAPED = ("discord", "telegram")

BARE = [
    ("topic", lambda v: v),
    ("prose-en", lambda v: f"pasted by mistake: {v}"),
    ("prose-en", lambda v: f"can you check why {v} gets a 401?"),
    ("prose-pt", lambda v: f"ok, funcionou com {v}"),
    ("prose-pt", lambda v: f"{v} <- usa esse aqui"),
    ("message", lambda v: f"[09:41] rafa: {v}"),
    ("log", lambda v: f"argv: ['sync.py', '{v}', '--verbose']"),
]


# -- providers whose values need their own surroundings -------------------------------------------


def _natives(rng: random.Random) -> list[tuple[str, str, str, str]]:
    """(group, context, text, value) for shapes that live in their own files and lines."""

    def run(alphabet, n):
        return _run(rng, alphabet, n)

    def digits(n):
        return str(rng.randrange(10 ** (n - 1), 10**n))

    def pem_body(lines, width=64):
        return "\n".join(run(B64, width) for _ in range(lines)) + "\n" + run(B64, rng.randrange(20, 60)) + "=="

    out = []
    # AWS key pairs in their native files.
    for make in (
        lambda i, s: f"[default]\naws_access_key_id = {i}\naws_secret_access_key = {s}\nregion = sa-east-1",
        lambda i, s: f"AWS_ACCESS_KEY_ID={i}\nAWS_SECRET_ACCESS_KEY={s}",
        lambda i, s: f"aws configure set aws_secret_access_key {s}  # id {i}",
        lambda i, s: f"| key id | secret |\n|---|---|\n| {i} | {s} |",
    ):
        i, s = "AKIA" + run(UPPER + "234567", 16), run(B64, 40)
        out.append(("aws secret access key", "config", make(i, s), s))
    # Twilio account SID beside its auth token.
    for make in (
        lambda sid, t: f"TWILIO_ACCOUNT_SID={sid}\nTWILIO_AUTH_TOKEN={t}",
        lambda sid, t: f"client = Client('{sid}', '{t}')",
        lambda sid, t: f"curl -u {sid}:{t} https://api.twilio.com/2010-04-01/Accounts.json",
        lambda sid, t: f"twilio: conta {sid}, token {t}",
    ):
        sid, t = "AC" + run(HEX, 32), run(HEX, 32)
        out.append(("twilio sid and token", "config", make(sid, t), t))
    # Webhook URLs whose last segment is the secret.
    for make in (
        lambda t: (
            f"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/T{run(UPPER + DIGITS, 8)}/B{run(UPPER + DIGITS, 10)}/{t}"
        ),
        lambda t: (
            f'curl -X POST -d \'{{"text":"deploy ok"}}\' https://hooks.slack.com/services/T{run(UPPER + DIGITS, 10)}/B{run(UPPER + DIGITS, 10)}/{t}'
        ),
        lambda t: (
            f"o webhook do canal #alertas é https://hooks.slack.com/services/T{run(UPPER + DIGITS, 8)}/B{run(UPPER + DIGITS, 10)}/{t}"
        ),
        lambda t: (
            f"slack:\n  webhook: https://hooks.slack.com/services/T{run(UPPER + DIGITS, 8)}/B{run(UPPER + DIGITS, 10)}/{t}"
        ),
    ):
        t = run(ALNUM, 24)
        out.append(("slack webhook url", "url", make(t), t))
    for make in (
        lambda t: f"DISCORD_WEBHOOK=https://discord.com/api/webhooks/{digits(19)}/{t}",
        lambda t: f"post the alerts to https://discord.com/api/webhooks/{digits(18)}/{t}",
        lambda t: f"webhook do discord: https://discordapp.com/api/webhooks/{digits(19)}/{t}",
    ):
        t = run(URLSAFE, 68)
        out.append(("discord webhook url", "url", make(t), t))
    # Azure storage: a connection string, a named key, a SAS signature.
    for make in (
        lambda k: (
            f"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey={k};EndpointSuffix=core.windows.net"
        ),
        lambda k: f'"StorageConnection": "DefaultEndpointsProtocol=https;AccountName=stlogs{digits(3)};AccountKey={k}"',
        lambda k: f"az storage blob list --account-name acmebackup --account-key {k} -c dumps",
        lambda k: f"a chave da storage account acmeprod é {k}",
    ):
        k = run(B64, 86) + "=="
        out.append(("azure storage key", "config", make(k), k))
    for make in (
        lambda s: (
            f"https://acmeprod.blob.core.windows.net/exports/report.csv?sv=2022-11-02&ss=b&srt=o&sp=r&se=2027-01-31T00:00:00Z&spr=https&sig={s}"
        ),
        lambda s: f"AZURE_SAS_TOKEN=sv=2022-11-02&ss=bfqt&srt=sco&sp=rwdlacup&se=2027-06-30T23:59:59Z&sig={s}",
    ):
        s = run(ALNUM, 43) + "%3D"
        out.append(("azure storage key", "url", make(s), s))
    # Google service-account JSON (Firebase admin, GCP) with its PKCS#8 private key.
    for project in ("acme-prod", "app-firebase", "dados-bi"):
        body = pem_body(rng.randrange(8, 14))
        escaped = body.replace("\n", "\\n")
        text = (
            "{\n"
            '  "type": "service_account",\n'
            f'  "project_id": "{project}-{digits(6)}",\n'
            f'  "private_key_id": "{run(HEX, 40)}",\n'
            f'  "private_key": "-----BEGIN PRIVATE KEY-----\\n{escaped}\\n-----END PRIVATE KEY-----\\n",\n'
            f'  "client_email": "firebase-adminsdk-{run(LOWER + DIGITS, 5)}@{project}.iam.gserviceaccount.com"\n'
            "}"
        )
        out.append(("google service account key", "config", text, escaped))
    escaped = pem_body(10).replace("\n", "\\n")
    out.append(
        (
            "google service account key",
            "config",
            f'FIREBASE_PRIVATE_KEY="-----BEGIN PRIVATE KEY-----\\n{escaped}\\n-----END PRIVATE KEY-----\\n"',
            escaped,
        )
    )
    # PEM private keys, as files, pasted in notes, in YAML blocks.
    for kind in ("RSA PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY", "PRIVATE KEY", "RSA PRIVATE KEY"):
        body = pem_body(rng.randrange(4, 16))
        block = f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----"
        wrap = rng.choice(
            [
                lambda b: b,
                lambda b: f"key for the staging TLS cert:\n\n{b}\n",
                lambda b: "tls:\n  key: |\n" + "\n".join("    " + line for line in b.split("\n")),
                lambda b: f"chave privada do certificado de homologação:\n```\n{b}\n```",
            ]
        )
        text = wrap(block)
        out.append(("pem private key", "config", text, body if body in text else body.split("\n")[0]))
    # OpenSSH private keys.
    for wrap in (
        lambda b: b,
        lambda b: f"deploy key (read-only) for the infra repo:\n{b}",
        lambda b: f"cat > ~/.ssh/id_ed25519 <<'EOF'\n{b}\nEOF",
        lambda b: "SSH_PRIVATE_KEY: |\n" + "\n".join("  " + line for line in b.split("\n")),
    ):
        body = "b3BlbnNzaC1rZXktdjEAAAAA" + run(B64, 46) + "\n" + pem_body(rng.randrange(3, 7), 70)
        text = wrap(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----")
        out.append(("ssh private key", "config", text, body if body in text else body.split("\n")[0]))
    # Basic auth headers and Docker config auths: base64 of user:password.
    for make in (
        lambda b: f"Authorization: Basic {b}",
        lambda b: f"curl -H 'Authorization: Basic {b}' https://jenkins.internal/job/deploy/build",
        lambda b: f'headers = {{"Authorization": "Basic {b}"}}',
        lambda b: f"o header de autenticação do Nexus é Basic {b}",
    ):
        b = run(B64, rng.choice([24, 28, 32, 36])) + "="
        out.append(("basic auth header", "log", make(b), b))
    for make in (
        lambda b: f'{{\n  "auths": {{\n    "registry.acme.io": {{\n      "auth": "{b}"\n    }}\n  }}\n}}',
        lambda b: f'{{"auths":{{"https://index.docker.io/v1/":{{"auth":"{b}"}}}}}}',
        lambda b: f".dockerconfigjson: auths ghcr.io auth={b}",
    ):
        b = run(B64, rng.choice([28, 32, 40])) + "=="
        out.append(("docker config auth", "config", make(b), b))
    # Tokens that live in their tool's own config line.
    out.append(("npm", "config", f"//registry.npmjs.org/:_authToken=npm_{(t := run(ALNUM, 36))}", "npm_" + t))
    out.append(
        (
            "npm",
            "config",
            f"@acme:registry=https://npm.pkg.github.com\n//npm.pkg.github.com/:_authToken=ghp_{(t := run(ALNUM, 36))}",
            "ghp_" + t,
        )
    )
    out.append(
        (
            "pypi",
            "config",
            f"[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmc{(t := run(URLSAFE, 140))}",
            "pypi-AgEIcHlwaS5vcmc" + t,
        )
    )
    out.append(
        (
            "pypi",
            "shell",
            f"twine upload -u __token__ -p pypi-AgEIcHlwaS5vcmc{(t := run(URLSAFE, 140))} dist/*",
            "pypi-AgEIcHlwaS5vcmc" + t,
        )
    )
    out.append(
        (
            "docker hub",
            "shell",
            f"echo {(t := 'dckr_pat_' + run(URLSAFE, 27))} | docker login -u acme --password-stdin",
            t,
        )
    )
    out.append(
        (
            "github",
            "url",
            f"git clone https://x-access-token:{(t := 'ghs_' + run(ALNUM, 36))}@github.com/acme/infra.git",
            t,
        )
    )
    out.append(("github", "url", f"https://oauth2:{(t := 'glpat-' + run(URLSAFE, 20))}@gitlab.com/acme/api.git", t))
    out.append(("okta", "log", f"Authorization: SSWS {(t := '00' + run(URLSAFE, 40))}", t))
    out.append(
        (
            "okta",
            "shell",
            f'curl -H "Authorization: SSWS {(t := "00" + run(URLSAFE, 40))}" https://acme.okta.com/api/v1/users',
            t,
        )
    )
    out.append(("fly.io", "config", f'FLY_API_TOKEN="FlyV1 {(t := "fm2_lJPE" + run(ALNUM + "+/", 200) + "==")}"', t))
    out.append(
        (
            "telegram",
            "url",
            f"https://api.telegram.org/bot{(t := digits(10) + ':AA' + run(URLSAFE, 33))}/sendMessage?chat_id=-100{digits(10)}",
            t,
        )
    )
    out.append(
        (
            "wireguard",
            "config",
            f"[Interface]\nAddress = 10.8.0.2/24\nPrivateKey = {(t := run(B64, 43) + '=')}\nDNS = 1.1.1.1",
            t,
        )
    )
    out.append(
        (
            "age",
            "config",
            f"# created: 2026-11-02T10:11:12Z\n# public key: age1{run(BECH32, 58)}\n{(t := 'AGE-SECRET-KEY-1' + run(BECH32.upper(), 58))}",
            t,
        )
    )
    # Database URLs whose password is a random string.
    for make in (
        lambda pw: f"DATABASE_URL=postgres://app:{pw}@db.internal:5432/orders",
        lambda pw: f"mysql://erp:{pw}@10.0.3.7:3306/erp?charset=utf8mb4",
        lambda pw: f"MONGO_URI=mongodb+srv://svc-api:{pw}@cluster0.ab1cd.mongodb.net/prod?retryWrites=true",
        lambda pw: f"REDIS_URL=rediss://default:{pw}@redis-12345.c1.us-east-1.ec2.cloud.redislabs.com:12345",
        lambda pw: f'SQLALCHEMY_DATABASE_URI = "postgresql+psycopg://report:{pw}@replica.internal/bi"',
        lambda pw: f"a string de conexão do banco é postgresql://financeiro:{pw}@pg.acme.com.br:5432/erp",
        lambda pw: f"amqps://worker:{pw}@b-1234.mq.sa-east-1.amazonaws.com:5671",
        lambda pw: f"jdbc:sqlserver://sql01:1433;databaseName=Vendas;user=sa;password={pw}",
    ):
        pw = run(ALNUM, rng.randrange(16, 33))
        out.append(("database url", "url", make(pw), pw))
    return out


# -- passwords --------------------------------------------------------------------------------------

_WORDS_EN = ["coral", "bicycle", "lantern", "ozone", "marble", "violet", "harbor", "tundra", "pepper", "glacier"]
_WORDS_PT = ["Coração", "Açaí", "Pássaro", "Maçã", "Jacarandá", "Pão", "Tatuí", "Ônibus", "Limão", "Céu", "Íris"]


def _password(rng: random.Random, shape: str) -> str:
    year = str(rng.randrange(1980, 2031))
    if shape == "passphrase":
        sep = rng.choice("-._")
        return sep.join(rng.sample(_WORDS_EN + [w.lower() for w in ("abacaxi", "janela", "bigode")], 4))
    if shape == "accented-pt":
        return "".join(rng.sample(_WORDS_PT, 2)) + rng.choice(["", year]) + rng.choice(["!", "#", "", "*"])
    if shape == "digits":
        return "".join(rng.choice(DIGITS) for _ in range(rng.randrange(8, 13)))
    if shape == "symbol-first":
        return rng.choice("!@*%/&^?$+") + rng.choice(_WORDS_EN).title() + year
    if shape == "letters":
        if rng.random() < 0.5:
            return "".join(rng.choice(LOWER) for _ in range(rng.randrange(10, 15)))
        return "".join(w.title() for w in rng.sample(_WORDS_EN, 3))
    if shape == "word-year":
        return rng.choice(_WORDS_EN).title() + year + rng.choice("!?.#")
    if shape == "leet":
        word = rng.choice(_WORDS_EN)
        return (
            word.translate(str.maketrans("aeio", "@310")).title()
            + rng.choice(["!", "$", "#"])
            + str(rng.randrange(10, 99))
        )
    return _run(rng, ALNUM + "!#%&*+-=?@^_", rng.randrange(14, 23))


PASSWORD_SHAPES = ("passphrase", "accented-pt", "digits", "symbol-first", "letters", "word-year", "leet", "random")

# (context, whether the value must be URL-safe, template)
PASSWORDS = [
    ("config", False, lambda v: f"DB_PASSWORD={v}"),
    ("config", False, lambda v: f"POSTGRES_USER=app\nPOSTGRES_PASSWORD={v}\nPOSTGRES_DB=orders"),
    ("config", False, lambda v: f'database:\n  host: db.internal\n  user: app\n  password: "{v}"'),
    ("config", False, lambda v: f"define( 'DB_PASSWORD', '{v}' );"),
    ("config", False, lambda v: f"spring.datasource.password={v}"),
    ("config", False, lambda v: f"machine ftp.acme.com.br\nlogin backup\npassword {v}"),
    ("config", False, lambda v: f"ansible_become_password: '{v}'"),
    ("config", False, lambda v: f"[client]\nuser=root\npassword={v}"),
    ("config", False, lambda v: f"    environment:\n      MYSQL_ROOT_PASSWORD: '{v}'"),
    ("url", True, lambda v: f"postgresql://app:{v}@db.internal:5432/orders"),
    ("url", True, lambda v: f"mysql://root:{v}@10.0.3.7:3306/erp"),
    ("url", True, lambda v: f"mongodb://admin:{v}@mongo-0.mongo:27017/?authSource=admin"),
    ("url", True, lambda v: f"redis://default:{v}@redis.internal:6379/0"),
    ("url", True, lambda v: f"https://deploy:{v}@nexus.acme.com.br/repository/npm/"),
    ("url", True, lambda v: f"jdbc:postgresql://db:5432/app?user=app&password={v}"),
    ("url", True, lambda v: f"smtp://alertas%40acme.com.br:{v}@smtp.gmail.com:587"),
    ("shell", False, lambda v: f"mysql -h db.internal -u root -p'{v}' erp"),
    ("shell", False, lambda v: f"PGPASSWORD='{v}' psql -h db.internal -U app orders"),
    ("shell", False, lambda v: f"sshpass -p '{v}' ssh deploy@10.0.0.12"),
    ("shell", False, lambda v: f"curl -u admin:'{v}' https://jenkins.internal/api/json"),
    ("shell", False, lambda v: f"docker login registry.acme.io -u ci -p '{v}'"),
    ("shell", True, lambda v: f"mount -t cifs //nas/share /mnt/nas -o username=ana,password={v}"),
    ("code", False, lambda v: f"ALTER USER app WITH PASSWORD '{v}';"),
    ("code", False, lambda v: f"CREATE USER 'report'@'%' IDENTIFIED BY '{v}';"),
    ("code", False, lambda v: f'conn = psycopg.connect(host="db", user="app", password="{v}")'),
    ("code", False, lambda v: f"$db_pass = '{v}';"),
    ("table", False, lambda v: f"| host | user | password |\n|---|---|---|\n| db01 | admin | {v} |"),
    ("table", False, lambda v: f"| Sistema | Usuário | Senha |\n| --- | --- | --- |\n| ERP | financeiro | {v} |"),
    ("table", False, lambda v: f"url,username,password\nhttps://erp.acme.com.br,ana,{v}"),
    ("prose-en", False, lambda v: f"the wifi password is {v}"),
    ("prose-en", False, lambda v: f"admin login for the router: admin / {v}"),
    ("prose-en", False, lambda v: f"I changed the prod DB password to {v} this morning"),
    ("prose-en", False, lambda v: f"password for the staging VPN: {v}"),
    ("prose-pt", False, lambda v: f"a senha do wifi do escritório é {v}"),
    ("prose-pt", False, lambda v: f"usuário: financeiro\nsenha: {v}"),
    ("prose-pt", False, lambda v: f"troquei a senha do banco de produção para {v}"),
    ("prose-pt", False, lambda v: f"Senha do e-mail da empresa: {v} (não passar pra ninguém)"),
    ("message", False, lambda v: f"[09:14] carla: a senha do servidor é {v}"),
    ("message", False, lambda v: f"<dev> root pw on the box is {v}"),
    (
        "message",
        False,
        lambda v: f"Oi Pedro,\n\nA senha provisória do sistema é {v}. Troque no primeiro acesso.\n\nAtt.",
    ),
    ("topic", False, lambda v: f"senha do roteador {v}"),
    ("topic", False, lambda v: f"vpn password {v}"),
]


# -- look-alikes: each takes rng and returns a text that holds no secret ---------------------------


def _lookalikes(rng: random.Random) -> list[tuple[str, object]]:
    def run(alphabet, n):
        return _run(rng, alphabet, n)

    def hexs(n):
        return "".join(rng.choice(HEX) for _ in range(n))

    def uuid():
        h = hexs(32)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{rng.choice('89ab')}{h[17:20]}-{h[20:]}"

    def digits(n):
        return str(rng.randrange(10 ** (n - 1), 10**n))

    def pick(*options):
        return rng.choice(options)

    services = ("billing", "search", "ingest", "auth", "reports", "payments", "mailer", "checkout", "notas", "estoque")
    vendors = ("Stripe", "GitHub", "OpenAI", "Slack", "AWS", "Twilio", "SendGrid", "Datadog", "Vercel", "Mercado Pago")
    names = ("STRIPE_SECRET_KEY", "GITHUB_TOKEN", "OPENAI_API_KEY", "SLACK_BOT_TOKEN", "DB_PASSWORD")
    names += ("AWS_SECRET_ACCESS_KEY", "SENDGRID_API_KEY", "JWT_SECRET", "NPM_TOKEN", "ANTHROPIC_API_KEY")

    def svc():
        return rng.choice(services)

    def vendor():
        return rng.choice(vendors)

    def env():
        return rng.choice(names)

    def days():
        return rng.randrange(2, 120)

    def ver():
        return f"{rng.randrange(0, 12)}.{rng.randrange(0, 30)}.{rng.randrange(0, 30)}"

    return [
        # hashes and digests
        ("hash", lambda: f"commit {hexs(40)}\nAuthor: Ana Lima <ana@acme.com.br>\n\n    fix {svc()} retry"),
        ("hash", lambda: f"{hexs(64)}  dist/{svc()}-{ver()}.tar.gz"),
        ("hash", lambda: f'"integrity": "sha512-{run(B64, 86)}=="'),
        ("hash", lambda: f"    --hash=sha256:{hexs(64)}"),
        (
            "hash",
            lambda: (
                f"golang.org/x/{pick('net', 'sys', 'text', 'crypto')} v0.{rng.randrange(10, 40)}.0 h1:{run(B64, 43)}="
            ),
        ),
        ("hash", lambda: f"image: ghcr.io/acme/{svc()}@sha256:{hexs(64)}"),
        ("hash", lambda: f"Fixes the regression introduced in {hexs(12)} ({svc()} timeouts)."),
        ("hash", lambda: f'ETag: "{hexs(32)}"'),
        ("hash", lambda: f'checksum = "{hexs(64)}"'),
        (
            "hash",
            lambda: (
                f'<script src="/static/{svc()}.js" integrity="sha384-{run(B64, 64)}" crossorigin="anonymous"></script>'
            ),
        ),
        ("hash", lambda: f"md5 do backup de {rng.randrange(1, 29)}/11: {hexs(32)}"),
        ("hash", lambda: f"o commit {hexs(7)} quebrou o build do {svc()}"),
        ("hash", lambda: f"magnet:?xt=urn:btih:{hexs(40)}&dn=ubuntu-24.04.1-live-server-amd64.iso"),
        ("hash", lambda: f"git cherry-pick {hexs(40)}"),
        ("hash", lambda: f"sha1sum: {hexs(40)}  backup-{digits(8)}.sql.gz"),
        # ids
        ("id", lambda: f"request id {uuid()} failed with 502 on {svc()}"),
        ("id", lambda: f"tenant_id: {uuid()}"),
        ("id", lambda: f"subscriptionId: {uuid()}\nresourceGroup: rg-{svc()}-prod"),
        ("id", lambda: f"arn:aws:iam::{digits(12)}:role/{svc()}-deploy"),
        ("id", lambda: f"instance i-0{hexs(16)} in vpc-0{hexs(16)} failed its health check"),
        ("id", lambda: f"aws ec2 describe-security-groups --group-ids sg-0{hexs(16)}"),
        ("id", lambda: f"AMI ami-0{hexs(16)} (ubuntu 24.04)"),
        ("id", lambda: f"refund for customer cus_{run(ALNUM, 14)} (payment pi_{run(ALNUM, 24)})"),
        ("id", lambda: f"webhook event evt_{run(ALNUM, 24)} arrived twice"),
        ("id", lambda: f"price_{run(ALNUM, 24)} is the yearly plan"),
        ("id", lambda: f"post to channel C0{run(UPPER + DIGITS, 9)} as user U0{run(UPPER + DIGITS, 9)}"),
        ("id", lambda: f"guild {digits(18)} channel {digits(19)}"),
        ("id", lambda: f"https://github.com/acme/{svc()}/actions/runs/{digits(11)}"),
        ("id", lambda: f'db.orders.find({{_id: ObjectId("{hexs(24)}")}})'),
        ("id", lambda: f"job {run('0123456789ABCDEFGHJKMNPQRSTVWXYZ', 26)} queued"),
        ("id", lambda: f"pod {svc()}-{hexs(10)}-{run(LOWER + DIGITS, 5)} is in CrashLoopBackOff"),
        ("id", lambda: f"project: acme-{svc()}-{digits(6)}"),
        ("id", lambda: f"Measurement ID G-{run(UPPER + DIGITS, 10)}"),
        ("id", lambda: f"https://www.youtube.com/watch?v={run(URLSAFE, 11)}"),
        ("id", lambda: f"rastreio dos Correios: {run(UPPER, 2)}{digits(9)}BR"),
        ("id", lambda: f"chave de acesso da NF-e: {' '.join(digits(4) for _ in range(11))}"),
        ("id", lambda: f"minha chave pix é {uuid()}"),
        (
            "id",
            lambda: (
                f"linha digitável do boleto: {digits(5)}.{digits(5)} {digits(5)}.{digits(6)} {digits(5)}.{digits(6)} {rng.randrange(1, 9)} {digits(14)}"
            ),
        ),
        ("id", lambda: f"CNPJ {digits(2)}.{digits(3)}.{digits(3)}/0001-{digits(2)}"),
        ("id", lambda: f"Sentry event_id: {hexs(32)}"),
        ("id", lambda: f"trace_id={hexs(32)} span_id={hexs(16)}"),
        ("id", lambda: f"client_id: {digits(12)}-{run(LOWER + DIGITS, 32)}.apps.googleusercontent.com"),
        ("id", lambda: f"AWS account {digits(12)} ({svc()} prod)"),
        ("id", lambda: f"pedido {digits(10)} pago via PIX (end to end E{digits(8)}{digits(12)}{run(ALNUM, 11)})"),
        ("id", lambda: f"the {svc()} job {uuid()} is stuck"),
        ("id", lambda: f"| job | {uuid()} | failed |"),
        # public keys, certificates, fingerprints, addresses
        (
            "public key",
            lambda: (
                f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{run(B64, 43)} {pick('ana', 'bruno', 'ci', 'deploy')}@{pick('laptop', 'build01', 'mac')}"
            ),
        ),
        (
            "public key",
            lambda: f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ{run(B64, 300)}= {pick('ana', 'rafa', 'ops')}@workstation",
        ),
        (
            "public key",
            lambda: (
                "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA"
                + run(B64, 20)
                + "\n"
                + "\n".join(run(B64, 64) for _ in range(5))
                + "\nIDAQAB\n-----END PUBLIC KEY-----"
            ),
        ),
        (
            "public key",
            lambda: (
                "-----BEGIN CERTIFICATE-----\nMIID"
                + run(B64, 60)
                + "\n"
                + "\n".join(run(B64, 64) for _ in range(8))
                + "\n-----END CERTIFICATE-----"
            ),
        ),
        ("public key", lambda: f"ED25519 key fingerprint is SHA256:{run(B64, 43)}."),
        ("public key", lambda: f"github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{run(B64, 43)}"),
        (
            "public key",
            lambda: f"[Peer]\nPublicKey = {run(B64, 43)}=\nAllowedIPs = 10.8.0.0/24\nEndpoint = vpn.acme.com.br:51820",
        ),
        ("public key", lambda: f"recipient: age1{run(BECH32, 58)}"),
        ("public key", lambda: f"gpg fingerprint: {' '.join(run(UPHEX, 4) for _ in range(10))}"),
        ("public key", lambda: f"a chave pública do servidor é ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{run(B64, 43)}"),
        (
            "public key",
            lambda: (
                f"adicione ao authorized_keys: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{run(B64, 43)} {pick('joao', 'mari', 'ci')}@acme"
            ),
        ),
        ("public key", lambda: f"wallet address 0x{hexs(40)} (receives the test USDC)"),
        # placeholders
        ("placeholder", lambda: f"{env()}=<your {pick('key', 'token', 'secret')} here>"),
        ("placeholder", lambda: f"{env()}=YOUR_{pick('API_KEY', 'TOKEN', 'SECRET')}_HERE"),
        ("placeholder", lambda: f"{env()}=sk-... # paste yours"),
        ("placeholder", lambda: f"GITHUB_TOKEN=ghp_{'X' * 36}"),
        ("placeholder", lambda: f"{env()}=[REDACTED]  # {svc()}"),
        ("placeholder", lambda: f"{env()}=\n# fill in from the {svc()} vault"),
        ("placeholder", lambda: f'{pick("api_key", "token", "password")}: ""  # set in {svc()}.local.yaml'),
        ("placeholder", lambda: f"{pick('api_key', 'token', 'password')}: null\ntimeout: {rng.randrange(5, 60)}"),
        ("placeholder", lambda: f"Authorization: Bearer <token>  # from `{svc()}-cli auth print`"),
        ("placeholder", lambda: f"postgres://USER:PASSWORD@HOST:5432/{svc()}"),
        ("placeholder", lambda: f"mysql://<user>:<password>@<host>:3306/{svc()}"),
        ("placeholder", lambda: f"SENHA_DB=<preencher> # pedir para o time de {svc()}"),
        ("placeholder", lambda: f"senha: <a definir com o cliente {svc()}>"),
        ("placeholder", lambda: f"token: TODO ({svc()} not provisioned yet)"),
        ("placeholder", lambda: f'curl -u "$USER:$PASS" https://{svc()}.internal/api'),
        # masked values
        ("masked", lambda: f"{vendor()} key: ****************{run(ALNUM, 4)}"),
        ("masked", lambda: f"key ending in ...{run(HEX, 4)} was revoked on {rng.randrange(1, 29)} Nov"),
        ("masked", lambda: f"{env()}=********"),
        ("masked", lambda: f"senha: •••••••• (trocada em {rng.randrange(1, 29)}/11)"),
        ("masked", lambda: f"token: [hidden] ({svc()})"),
        ("masked", lambda: f"| {env()} | `****` | {svc()} |"),
        # references to variables and secret stores
        ("reference", lambda: (lambda name: f"{name}: ${{{{ secrets.{name} }}}}")(env())),
        (
            "reference",
            lambda: (
                f"export {env()}=$(aws secretsmanager get-secret-value --secret-id prod/{svc()} --query SecretString --output text)"
            ),
        ),
        (
            "reference",
            lambda: (
                f"        - name: DB_PASSWORD\n          valueFrom:\n            secretKeyRef:\n              name: {svc()}-db\n              key: password"
            ),
        ),
        ("reference", lambda: f'password: "{{{{ vault_{svc()}_password }}}}"'),
        ("reference", lambda: f'token = os.getenv("{env()}")'),
        ("reference", lambda: f"api_key = ENV.fetch('{env()}')"),
        ("reference", lambda: f'String pw = System.getenv("{env()}");'),
        ("reference", lambda: f"set PASS=%{env()}%"),
        ("reference", lambda: f"password=${{DB_PASSWORD:?missing for {svc()}}}"),
        ("reference", lambda: f"op read op://prod/{svc()}/password"),
        ("reference", lambda: f"doppler run --project {svc()} -- npm start"),
        ("reference", lambda: f"vault kv get -field=token secret/{svc()}/ci"),
        ("reference", lambda: f"gcloud secrets versions access latest --secret={svc()}-db-pass"),
        ("reference", lambda: f"az keyvault secret show --vault-name kv-{svc()} --name api-key"),
        ("reference", lambda: f"arn:aws:secretsmanager:sa-east-1:{digits(12)}:secret:prod/{svc()}-{run(ALNUM, 6)}"),
        ("reference", lambda: f"const key = process.env.{env()} ?? '';"),
        ("reference", lambda: f"{svc()}:\n  api_key: ${{{env()}}}\n  retries: {rng.randrange(1, 6)}"),
        ("reference", lambda: f"$env:{env()} = (Get-Secret -Name {svc()} -AsPlainText)"),
        # versions
        ("version", lambda: f"bumped {pick('stripe', 'openai', 'boto3', 'slack-sdk')} {ver()} -> {ver()}"),
        ("version", lambda: f"node v{rng.randrange(18, 23)}.{rng.randrange(0, 20)}.{rng.randrange(0, 9)}"),
        ("version", lambda: f"image: postgres:{rng.randrange(12, 18)}.{rng.randrange(0, 9)}-alpine"),
        (
            "version",
            lambda: (
                f"build {2026}.{rng.randrange(1, 13):02}.{rng.randrange(1, 29):02}-rc.{rng.randrange(1, 9)}+g{hexs(7)}"
            ),
        ),
        (
            "version",
            lambda: f"Stripe-Version: 20{rng.randrange(19, 26)}-{rng.randrange(1, 13):02}-{rng.randrange(1, 29):02}",
        ),
        ("version", lambda: f"Linux {svc()}-01 6.8.0-{rng.randrange(30, 60)}-generic #x86_64"),
        (
            "version",
            lambda: (
                f"Mozilla/5.0 (X11; Linux x86_64) Chrome/{rng.randrange(110, 131)}.0.{digits(4)}.{digits(3)} Safari/537.36"
            ),
        ),
        ("version", lambda: f"atualizamos o {svc()} para a versão {ver()}"),
        # paths
        ("path", lambda: f"ssh -i ~/.ssh/id_ed25519_{svc()} deploy@10.0.{rng.randrange(0, 9)}.{rng.randrange(2, 250)}"),
        ("path", lambda: f"credentials live in ~/.aws/credentials (profile {svc()})"),
        ("path", lambda: f"ssl_certificate_key /etc/ssl/private/{svc()}.acme.com.br.key;"),
        ("path", lambda: f"C:\\Users\\{pick('ana', 'joao', 'mari')}\\.kube\\config"),
        ("path", lambda: f"docker secret ls shows /run/secrets/{svc()}_db_password mounted"),
        ("path", lambda: f"sops -d secrets/{svc()}.enc.yaml > /dev/null"),
        (
            "path",
            lambda: f"s3://acme-backups/{2026}/{rng.randrange(1, 13):02}/{rng.randrange(1, 29):02}/{svc()}.dump.gz",
        ),
        ("path", lambda: f"o arquivo .env do {svc()} fica em /srv/{svc()}/shared/.env (fora do git)"),
        (
            "path",
            lambda: f"config/credentials/{pick('production', 'staging')}.yml.enc is decrypted with config/master.key",
        ),
        # URLs with no password in them
        ("url", lambda: f"https://github.com/acme/{svc()}/pull/{rng.randrange(10, 9000)}"),
        ("url", lambda: f"https://acme.atlassian.net/browse/{pick('PAY', 'OPS', 'SEC')}-{rng.randrange(10, 9000)}"),
        ("url", lambda: f"git@github.com:acme/{svc()}.git"),
        ("url", lambda: f"ssh://git@gitlab.acme.com.br:2222/{svc()}/api.git"),
        ("url", lambda: f"redis://cache.internal:6379/{rng.randrange(16)}"),
        ("url", lambda: f"postgres://db.internal:5432/{svc()}?sslmode=require"),
        ("url", lambda: f"https://{pick('ana', 'rafa', 'ci')}@bitbucket.org/acme/{svc()}.git"),
        (
            "url",
            lambda: (
                f"https://docs.{pick('stripe', 'github', 'openai', 'slack')}.com/{pick('keys', 'authentication', 'api-keys')}#rotate"
            ),
        ),
        ("url", lambda: f"https://acme.grafana.net/d/{run(ALNUM, 9)}/{svc()}?orgId=1&from=now-6h"),
        ("url", lambda: f"https://console.aws.amazon.com/iam/home#/users/{svc()}-ci?section=security_credentials"),
        ("url", lambda: f"https://sentry.io/organizations/acme/issues/{digits(10)}/"),
        ("url", lambda: f"http://localhost:{pick('3000', '5173', '8000', '8080')}/auth/callback?state={uuid()}"),
        # logs
        ("log", lambda: f"2026-12-07T09:12:44.120Z INFO GET /api/{svc()} 200 {rng.randrange(3, 900)}ms req={uuid()}"),
        ("log", lambda: f"token refreshed for user {rng.randrange(100, 99999)} (expires_in=3600)"),
        (
            "log",
            lambda: (
                f"auth failed: invalid password for user {pick('ana', 'bruno', 'root')} (attempt {rng.randrange(1, 6)})"
            ),
        ),
        ("log", lambda: f"WARN {svc()}: API key about to expire in {days()} days, rotate it"),
        ("log", lambda: f"ERROR 401 Unauthorized from {vendor()}: invalid api key"),
        ("log", lambda: f"[{svc()}] loaded {rng.randrange(2, 40)} secrets from Vault (values hidden)"),
        (
            "log",
            lambda: (
                f"Dec 07 10:{rng.randrange(10, 60)}:03 {svc()}-01 sshd[{digits(5)}]: Accepted publickey for deploy from 10.0.{rng.randrange(0, 9)}.{rng.randrange(2, 250)} port {digits(5)} ssh2: ED25519 SHA256:{run(B64, 43)}"
            ),
        ),
        # code about secrets
        ("code", lambda: "hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt())"),
        ("code", lambda: f"def rotate_{svc()}_api_key(user_id: int) -> str:"),
        ("code", lambda: f"if token is None:\n    raise AuthError('missing {svc()} token')"),
        ("code", lambda: "password = forms.CharField(widget=forms.PasswordInput)"),
        ("code", lambda: "SECRET_KEY = os.environ['DJANGO_SECRET_KEY']"),
        ("code", lambda: f"api_key: str = Field(..., min_length={pick('32', '40', '64')})"),
        ("code", lambda: f'GITHUB_TOKEN_RE = re.compile(r"gh[pousr]_[A-Za-z0-9]{{{pick("36", "36,255")}}}")'),
        ("code", lambda: f"const secret = await kms.decrypt({{ CiphertextBlob: blob, KeyId: alias }}); // {svc()}"),
        ("code", lambda: f"expect(redact(line)).not.toContain(token) // {svc()}"),
        ("code", lambda: f"token = secrets.token_urlsafe({pick('16', '32', '48')})"),
        (
            "code",
            lambda: (
                f"SELECT id, email FROM users WHERE password_reset_token IS NOT NULL AND created_at < now() - interval '{days()} days';"
            ),
        ),
        # prose about secrets, English
        ("prose-en", lambda: f"Rotate the {vendor()} key every {days()} days; the runbook is in the wiki."),
        ("prose-en", lambda: f"The {vendor()} token lives in 1Password under {svc()}."),
        ("prose-en", lambda: f"Never paste the {svc()} password here; ask the on-call lead."),
        ("prose-en", lambda: f"We moved {env()} from the .env file to Doppler last {pick('week', 'sprint', 'month')}."),
        ("prose-en", lambda: f"The {vendor()} API key was revoked yesterday after the {svc()} incident."),
        (
            "prose-en",
            lambda: (
                f"Password policy: at least {rng.randrange(10, 17)} characters, no reuse of the last {rng.randrange(3, 12)}."
            ),
        ),
        ("prose-en", lambda: f"Service accounts for {svc()} authenticate with OIDC now, no long-lived keys."),
        (
            "prose-en",
            lambda: f"If CI fails with 'bad credentials', the {vendor()} token expired: regenerate it in settings.",
        ),
        (
            "prose-en",
            lambda: (
                f"{vendor()} keys start with a fixed prefix, which is how the secret scanner spots them in {svc()}."
            ),
        ),
        ("prose-en", lambda: f"TODO: move the {svc()} webhook secret out of the repo before the audit."),
        # prose about secrets, Portuguese
        ("prose-pt", lambda: f"A senha do banco do {svc()} fica no cofre; peça ao plantão."),
        ("prose-pt", lambda: f"O token do {vendor()} expira em {days()} dias e é renovado pelo CI."),
        ("prose-pt", lambda: f"Nunca cole a chave de API do {vendor()} no chat, use o cofre."),
        ("prose-pt", lambda: f"Trocamos todas as senhas de {svc()} depois do incidente de {rng.randrange(1, 29)}/11."),
        (
            "prose-pt",
            lambda: f"A política de senhas exige {rng.randrange(10, 17)} caracteres e troca a cada {days()} dias.",
        ),
        ("prose-pt", lambda: f"O segredo do webhook do {vendor()} está no Secrets Manager, não no .env."),
        ("prose-pt", lambda: f"esqueci a senha do {svc()} de novo, vou pedir reset"),
        ("prose-pt", lambda: f"a chave antiga do {vendor()} foi revogada ontem; a nova está no 1Password"),
        ("prose-pt", lambda: f"Para gerar um token novo do {vendor()}, vá em Configurações > Tokens."),
        ("prose-pt", lambda: f"senha de produção do {svc()}: pedir ao responsável pelo plantão"),
        # chat and commits
        ("message", lambda: f"[10:{rng.randrange(10, 60)}] ana: já troquei a senha do {svc()}, está no cofre"),
        ("message", lambda: f"<bob> the {vendor()} token expired again, anyone know who owns the {svc()} bot?"),
        ("message", lambda: f"chore: rotate {vendor()} key for {svc()} (new one in Vault)"),
        ("message", lambda: f"fix(auth): stop logging the bearer token in {svc()}"),
        ("message", lambda: f"Remove .env from {svc()} and add it to .gitignore"),
        ("message", lambda: f"feat({svc()}): read {env()} from the environment"),
        (
            "message",
            lambda: f"@{pick('carla', 'diego', 'lia')} pode revogar o token do {vendor()} que vazou no log do {svc()}?",
        ),
        # tables with no secret in them
        ("table", lambda: f"| Variável | Onde está |\n|---|---|\n| {env()} | cofre da equipe de {svc()} |"),
        (
            "table",
            lambda: (
                f"| service | key id | created |\n|---|---|---|\n| {svc()} | (see IAM) | 2026-{rng.randrange(1, 13):02}-{rng.randrange(1, 29):02} |"
            ),
        ),
        ("table", lambda: f"| secret | owner | rotation |\n|---|---|---|\n| {env()} | {svc()} team | {days()} days |"),
        ("table", lambda: f"name,sha256,size\n{svc()}.tar.gz,{hexs(64)},{digits(7)}"),
        # numbers, colours, encodings
        (
            "number",
            lambda: (
                f"listen on 10.{rng.randrange(0, 255)}.{rng.randrange(0, 255)}.{rng.randrange(1, 255)}:{rng.randrange(1024, 65535)}"
            ),
        ),
        ("number", lambda: f"MAC {':'.join(hexs(2) for _ in range(6))} on eth0"),
        ("number", lambda: f"fe80::{hexs(4)}:{hexs(4)}:{hexs(4)}:{hexs(4)}%en0"),
        ("number", lambda: f"--color-primary: #{hexs(6)};"),
        ("number", lambda: f"cron: '{rng.randrange(0, 59)} {rng.randrange(0, 23)} * * {rng.randrange(0, 6)}'"),
        ("number", lambda: f"created_at: {rng.randrange(1_700_000_000, 1_800_000_000)} (epoch)"),
        ("number", lambda: f"telefone do suporte: +55 11 9{digits(4)}-{digits(4)}"),
        ("number", lambda: f"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA{run(B64, 80)}"),
        ("number", lambda: f"font: url(data:font/woff2;base64,d09GMgABAAAA{run(B64, 60)}) format('woff2');"),
    ]


def samples() -> tuple[list[Sample], list[Sample]]:
    """(credentials, look-alikes) of the second blind part; the same lists on every call."""
    rng = random.Random(SEED)
    secrets: list[Sample] = []
    for provider in _providers(rng):
        kinds = rng.sample(sorted(NAMED), 4)
        for n, kind in enumerate(kinds):
            value = rng.choice(provider.makers)()
            bare = value.startswith(STRONG) or provider.group in SHAPED
            if bare and n == 3 and rng.random() < 0.5:
                context, template = rng.choice(BARE)
                secrets.append(Sample(provider.group, context, template(value), value))
            else:
                secrets.append(Sample(provider.group, kind, rng.choice(NAMED[kind])(provider, value), value))
    for group, context, text, value in _natives(rng):
        secrets.append(Sample(group, context, text, value))
    for shape in PASSWORD_SHAPES:
        for context, url_safe, template in rng.sample(PASSWORDS, 10):
            value = _password(rng, shape)
            while url_safe and any(ch in value for ch in "@/:#?%&^+ "):
                value = _password(rng, shape)
            secrets.append(Sample(f"password ({shape})", context, template(value), value))
    benign: list[Sample] = []
    seen: set[str] = set()
    makers = _lookalikes(rng)
    for _ in range(3):
        for group, make in makers:
            text = make()
            if text not in seen:
                seen.add(text)
                benign.append(Sample(group, "", text))
    return secrets, benign
