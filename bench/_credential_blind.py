"""The blind held-out part of the generated credential set (bench/_credential_samples.py).

Written on 2026-12-07 for issue 30 by someone who did not read the detector, its tests or what it
misses, while the detector was being widened on the other parts: it judges that work. Seed 1207.
Nothing in this file may be used to tune the detector; bench/credentials.py prints only its counts
(`--spend-blind` prints its misses and refusals, and from then on it is no longer blind).

What is in it, as shapes:

- Provider token formats, most of them held by no other part (map tiles, shipping, payment
  gateways of Brazil and elsewhere, e-mail APIs, vector and model APIs, feature flags, artifact
  stores, deploy platforms, secret managers' own access tokens, cluster join tokens, VPN and wallet
  keys, chat webhooks, Azure connection strings and SAS signatures, TOTP seeds), beside the common
  ones users paste most (AWS, GitHub, OpenAI, Anthropic, Stripe, Slack, Google) in formats or
  surroundings the other parts do not use. Values whose shape carries no prefix appear only where
  a name beside them says what they are.
- Surroundings: .env with comments, systemd units, Dockerfiles, `docker run -e`, helm `--set`,
  tfvars and HCL defaults, nested YAML and JSON, TOML tables, XML, Java properties, appsettings,
  VS Code launch files, Jupyter `%env`, code literals in Python, JS/TS, Go, Rust, Kotlin, Swift,
  C#, Ruby and PHP, numbered bash history, zsh history, fish, cmd, PowerShell, curl/wget/grpcurl,
  URL queries and userinfo, `git remote -v`, raw HTTP requests, JSON and plain log lines, Python and
  Java stack traces, git diffs, commit messages, SQL, CSV, markdown tables and code fences, e-mail,
  chat and prose in English and Portuguese, one-line topics; AWS CLI transcripts and credential
  files; connection strings in many drivers for passwords.
- Password shapes: passphrases with spaces, digits only, `$` inside, hex, base64, accented
  Portuguese words, short mixed, and the `Word@123` company pattern.
- Look-alikes a careful detector must let through, because refusing them would block an owner's
  ordinary note: content hashes and lockfile checksums, ids (UUID, ULID, KSUID, ObjectId, cloud
  resource ids, API object ids), public keys and certificates (and keys that are public by design:
  Stripe `pk_live_`, PostHog `phc_`, Mapbox `pk.`, Sentry DSNs, reCAPTCHA site keys, Google OAuth
  client ids, wallet addresses), placeholders, masked values, empty values, references to env
  vars and secret managers, encrypted blobs (SOPS, ansible-vault, sealed secrets), base64 of
  prose, versions, long paths, regexes that describe tokens, prose, commit messages, SQL, logs and
  stack traces about secrets with none in them, in English and Portuguese. Also counted as
  look-alikes: values developers mark fake in a way a reader sees at once (AWS's documented
  EXAMPLE keys, tokens of all X, `password="password"` in a test). Not used either way (a careful
  person could decide both ways): password hashes, session and CSRF ids, Firebase web keys,
  Supabase anon keys, Stripe test-mode keys (these are credentials here, as they grant access).

Every value is made from random characters with the seed; none is, or was, a real credential.
The AWS documentation's example key pair is quoted because it is published as an example.
"""

from __future__ import annotations

import base64
import json
import random
from dataclasses import dataclass
from urllib.parse import quote

from _credential_samples import ALNUM, DIGITS, HEX, LOWER, UPPER, URLSAFE, Sample, _run

SEED = 1207
B64 = ALNUM + "+/"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
BASE32 = UPPER + "234567"


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(HEX) for _ in range(n))


def _digits(rng: random.Random, n: int) -> str:
    return str(rng.randrange(1, 10)) + "".join(rng.choice(DIGITS) for _ in range(n - 1))


def _uuid(rng: random.Random) -> str:
    h = _hex(rng, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{rng.choice('89ab')}{h[17:20]}-{h[20:]}"


def _bytes(rng: random.Random, n: int) -> bytes:
    return bytes(rng.randrange(256) for _ in range(n))


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


# -- providers ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Provider:
    group: str
    name: str  # as people write it
    env: str
    key: str  # snake_case config key
    label: str  # English, no article: "Mapbox secret token"
    rotulo: str  # Portuguese, with its article: "o token secreto do Mapbox"
    host: str
    make: object  # () -> value, or (text as pasted, the secret in it)
    evident: bool  # the value's own shape says what it is (prefix or structure)


# Shapes, from what each provider issues (written as shapes, never real values):
#   Mapbox secret      sk.<base64url JSON {"u":user,"a":id}>.<22 chars>
#   Shippo             shippo_live_<40 hex>
#   Braintree          access_token$production$<16 lower alnum>$<32 hex>
#   Brevo              xkeysib-<64 hex>-<16 alnum>
#   Resend             re_<8 alnum>_<24 alnum>
#   Pinecone           pcsk_<5 alnum>_<63 alnum>
#   ElevenLabs         sk_<48 hex>
#   DeepSeek           sk-<32 hex>
#   Together AI        tgp_v1_<43 base64url>
#   Fireworks          fw_<24 alnum>
#   Neon               napi_<64 lower alnum>
#   PostHog personal   phx_<43 alnum>          (phc_ project keys are public: look-alikes)
#   LaunchDarkly       api-<uuid> / sdk-<uuid>
#   JFrog              AKCp<69 alnum> / cmVmdGtu<56 alnum> (reference token)
#   Octopus Deploy     API-<26..32 upper alnum>
#   Cloudflare origin  v1.0-<24 hex>-<146 hex>
#   Backblaze B2       K00<digit><27 base64 chars>
#   Salesforce session 00D<12 alnum>!AQ<94 of alnum . _>
#   EasyPost           EZAK<54 lower alnum>
#   1Password service  ops_eyJ<base64url JSON>
#   Bitwarden machine  0.<uuid>.<30 alnum>:<22 base64>==
#   Infisical service  st.<24 hex>.<32 hex>.<32 hex>
#   kubeadm bootstrap  <6 lower alnum>.<16 lower alnum>
#   WireGuard private  base64 of a clamped 32-byte X25519 scalar (44 chars, "=" last)
#   Ethereum private   0x<64 hex>, named
#   BIP39 seed phrase  12 words of the BIP39 list, named
#   Teams webhook      https://<tenant>.webhook.office.com/webhookb2/<uuid>@<uuid>/IncomingWebhook/<32 hex>/<uuid>
#   Azure DevOps PAT   52 of [a-z2-7], named
#   Azure Service Bus  Endpoint=sb://...;SharedAccessKeyName=...;SharedAccessKey=<43 base64>=
#   Azure SAS          ...&sig=<43 base64, url-encoded>%3D
#   Meta Graph         EAA[BGJ]<150..200 alnum>
#   X (Twitter) bearer AAAAAAAAAAAAAAAAAAAAA<alnum>%3D<alnum>
#   Asaas              $aact_prod_000<base64 of "<32 hex>::<digits>::$aach_<uuid>">
#   Efí (Gerencianet)  Client_Secret_<40 hex>
#   Intercom           base64 of "tok:<uuid with _>:1:0", named
#   Contentful         CFPAT-<43 base64url>
#   Typeform           tfp_<44 base64url>_<14 alnum>
#   Prefect            pnu_<36 alnum>
#   Render             rnd_<32 alnum>
#   Fly.io             fo1_<43 base64url>
#   Clerk              sk_live_<40 alnum>
#   Cerebras           csk-<48 lower alnum>
#   Voyage AI          pa-<43 base64url>
#   Yandex Cloud       AQVN<36 base64url>
#   Mandrill           md-<22 base64url>
#   TOTP seed          otpauth://totp/<issuer>:<user>?secret=<32 base32>&issuer=<issuer>
#   Auth0, Hetzner, PayPal, Splunk HEC, Jenkins, Elastic: no prefix, named only.
def _providers(rng: random.Random) -> list[Provider]:
    def mapbox():
        claims = json.dumps(
            {"u": rng.choice(["acme-maps", "rotas-sp", "fleetview"]), "a": _pick(rng, LOWER + DIGITS, 25)}
        )
        return "sk." + _b64url(claims.replace(" ", "").encode()) + "." + _run(rng, URLSAFE, 22)

    def onepassword():
        claims = {
            "signInAddress": "acme.1password.com",
            "userAuth": {
                "method": "SRPg-4096",
                "alg": "PBES2g-HS256",
                "iterations": 650000,
                "salt": _run(rng, URLSAFE, 22),
            },
            "email": _pick(rng, LOWER + DIGITS, 13) + "@1passwordserviceaccounts.com",
            "srpX": _hex(rng, 64),
            "muk": {"alg": "A256GCM", "ext": True, "k": _run(rng, URLSAFE, 43), "kty": "oct"},
            "secretKey": "A3-" + "-".join(_pick(rng, UPPER + DIGITS, 5) for _ in range(5)),
            "throttleSecret": {"seed": _hex(rng, 64), "deviceUuid": _pick(rng, LOWER + DIGITS, 26)},
            "deviceUuid": _pick(rng, LOWER + DIGITS, 26),
        }
        return "ops_" + _b64url(json.dumps(claims, separators=(",", ":")).encode())

    def wireguard():
        raw = bytearray(_bytes(rng, 32))
        raw[0] &= 248
        raw[31] = (raw[31] & 127) | 64
        return _b64(bytes(raw))

    def seed_phrase():
        return " ".join(rng.sample(_BIP39, 12))

    def teams():
        tenant, group, hook = _uuid(rng), _uuid(rng), _hex(rng, 32)
        url = (
            f"https://{rng.choice(['acme', 'contoso', 'ribeira'])}.webhook.office.com/webhookb2/{_uuid(rng)}@{tenant}"
            f"/IncomingWebhook/{hook}/{group}"
        )
        return url, hook

    def service_bus():
        key = _b64(_bytes(rng, 32))
        ns = rng.choice(["acme-prod", "pedidos-bus", "events-eu"])
        return (
            f"Endpoint=sb://{ns}.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={key}",
            key,
        )

    def sas():
        sig = quote(_b64(_bytes(rng, 32)), safe="")
        account = rng.choice(["acmeprod", "backupsbr", "mediastore01"])
        url = (
            f"https://{account}.blob.core.windows.net/{rng.choice(['backups', 'exports', 'uploads'])}?sv=2022-11-02&ss=b"
            f"&srt=co&sp=rl&se=2027-0{rng.randrange(1, 10)}-01T00:00:00Z&st=2026-12-01T00:00:00Z&spr=https&sig={sig}"
        )
        return url, sig

    def asaas():
        inner = f"{_hex(rng, 32)}::{'0' * 12}{_digits(rng, 7)}::$aach_{_uuid(rng)}"
        return "$aact_prod_000" + _b64(inner.encode())

    def intercom():
        return _b64(f"tok:{_uuid(rng).replace('-', '_')}:1:0".encode())

    def elastic():
        if rng.random() < 0.5:
            return "essu_" + _b64(_run(rng, URLSAFE, 20).encode() + b":" + _run(rng, URLSAFE, 22).encode())
        return _b64(f"{_run(rng, URLSAFE, 20)}:{_run(rng, URLSAFE, 22)}".encode())

    def totp():
        issuer = rng.choice(["Acme", "GitLab", "Grafana", "Painel"])
        secret = _pick(rng, BASE32, 32)
        user = rng.choice(["ana.souza", "rui", "ops"])
        return f"otpauth://totp/{issuer}:{user}%40example.com?secret={secret}&issuer={issuer}", secret

    def openai():
        if rng.random() < 0.7:
            return "sk-proj-" + _run(rng, URLSAFE, 74) + "T3BlbkFJ" + _run(rng, URLSAFE, 74)
        return "sk-" + _run(rng, ALNUM, 20) + "T3BlbkFJ" + _run(rng, ALNUM, 20)

    def stripe():
        prefix = rng.choice(["sk_live_51", "rk_live_51", "sk_test_51", "sk_live_51"])
        return prefix + _run(rng, ALNUM, 97)

    def slack():
        if rng.random() < 0.5:
            return f"xoxp-{_digits(rng, 12)}-{_digits(rng, 13)}-{_digits(rng, 13)}-{_hex(rng, 32)}"
        return f"xapp-1-A{_pick(rng, UPPER + DIGITS, 10)}-{_digits(rng, 13)}-{_hex(rng, 64)}"

    def discord():
        user_id = _digits(rng, rng.choice([18, 19]))
        return _b64(user_id.encode()).rstrip("=") + "." + _run(rng, URLSAFE, 6) + "." + _run(rng, URLSAFE, 38)

    def jfrog():
        if rng.random() < 0.5:
            return "AKCp8" + _run(rng, ALNUM, 68)
        return "cmVmdGtuOjAxOjE3" + _run(rng, ALNUM, 48)

    def launchdarkly():
        return rng.choice(["api-", "sdk-"]) + _uuid(rng)

    def gitlab_ci():
        return rng.choice(["glrt-", "gldt-"]) + _run(rng, URLSAFE, 20)

    def google_oauth():
        if rng.random() < 0.7:
            return "ya29.a0A" + _run(rng, URLSAFE, 160)
        return "1//0" + _pick(rng, ALNUM, 1) + _run(rng, URLSAFE, 98)

    def pre(prefix: str, alphabet: str, n: int, suffix: str = ""):
        return lambda: prefix + _run(rng, alphabet, n) + suffix

    def plain(alphabet: str, n: int):
        return lambda: _run(rng, alphabet, n)

    P = Provider
    # fmt: off
    return [
        # -- the common ones, in formats or places the other parts do not use
        P("openai", "OpenAI", "OPENAI_API_KEY", "openai_api_key", "OpenAI API key", "a chave da OpenAI", "api.openai.com", openai, True),
        P("anthropic", "Anthropic", "ANTHROPIC_API_KEY", "anthropic_api_key", "Anthropic key", "a chave da Anthropic", "api.anthropic.com", lambda: rng.choice(["sk-ant-api03-", "sk-ant-admin01-"]) + _run(rng, URLSAFE, 93) + "AA", True),
        P("stripe", "Stripe", "STRIPE_SECRET_KEY", "stripe_secret_key", "Stripe secret key", "a chave secreta da Stripe", "api.stripe.com", stripe, True),
        P("github classic", "GitHub", "GITHUB_TOKEN", "github_token", "GitHub token", "o token do GitHub", "api.github.com", pre("ghp_", ALNUM, 36), True),
        P("github oauth", "GitHub", "GH_OAUTH_TOKEN", "oauth_token", "GitHub OAuth token", "o token OAuth do GitHub", "api.github.com", pre("gho_", ALNUM, 36), True),
        P("github fine-grained", "GitHub", "GH_PAT", "personal_access_token", "GitHub PAT", "o PAT do GitHub", "api.github.com", lambda: "github_pat_11" + _run(rng, UPPER + DIGITS, 20) + "_" + _run(rng, ALNUM, 59), True),
        P("gitlab", "GitLab", "GITLAB_PRIVATE_TOKEN", "private_token", "GitLab token", "o token do GitLab", "gitlab.com", pre("glpat-", URLSAFE, 20), True),
        P("gitlab ci tokens", "GitLab", "CI_RUNNER_TOKEN", "runner_token", "GitLab runner token", "o token do runner do GitLab", "gitlab.example.com", gitlab_ci, True),
        P("slack user/app", "Slack", "SLACK_USER_TOKEN", "slack_token", "Slack token", "o token do Slack", "slack.com", slack, True),
        P("google api", "Google", "GOOGLE_MAPS_API_KEY", "maps_api_key", "Google Maps key", "a chave do Google Maps", "maps.googleapis.com", pre("AIza", URLSAFE, 35), True),
        P("google oauth token", "Google", "GOOGLE_ACCESS_TOKEN", "access_token", "Google OAuth token", "o token OAuth do Google", "www.googleapis.com", google_oauth, True),
        P("aws session token", "AWS", "AWS_SESSION_TOKEN", "aws_session_token", "AWS session token", "o token de sessão da AWS", "sts.amazonaws.com", lambda: "IQoJb3JpZ2luX2VjE" + _run(rng, B64, 340), True),
        P("hugging face", "Hugging Face", "HUGGING_FACE_HUB_TOKEN", "hf_token", "Hugging Face token", "o token do Hugging Face", "huggingface.co", pre("hf_", ALNUM, 34), True),
        P("sendgrid", "SendGrid", "SENDGRID_KEY", "sendgrid_key", "SendGrid key", "a chave do SendGrid", "api.sendgrid.com", lambda: "SG." + _run(rng, URLSAFE, 22) + "." + _run(rng, URLSAFE, 43), True),
        P("npm", "npm", "NODE_AUTH_TOKEN", "npm_token", "npm token", "o token do npm", "registry.npmjs.org", pre("npm_", ALNUM, 36), True),
        P("discord", "Discord", "DISCORD_TOKEN", "discord_token", "Discord bot token", "o token do bot do Discord", "discord.com", discord, True),
        P("telegram", "Telegram", "TG_BOT_TOKEN", "bot_token", "Telegram bot token", "o token do bot do Telegram", "api.telegram.org", lambda: f"{_digits(rng, 10)}:AA{_run(rng, URLSAFE, 33)}", True),
        P("shopify", "Shopify", "SHOPIFY_API_SECRET", "shopify_secret", "Shopify secret", "o segredo da Shopify", "acme.myshopify.com", lambda: rng.choice(["shpss_", "shpca_", "shppa_", "shpat_"]) + _hex(rng, 32), True),
        P("digitalocean", "DigitalOcean", "DO_TOKEN", "do_token", "DigitalOcean token", "o token da DigitalOcean", "api.digitalocean.com", lambda: rng.choice(["dop_v1_", "doo_v1_"]) + _hex(rng, 64), True),
        P("heroku", "Heroku", "HEROKU_API_TOKEN", "heroku_token", "Heroku token", "o token do Heroku", "api.heroku.com", pre("HRKU-AA", URLSAFE, 58), True),
        P("databricks", "Databricks", "DATABRICKS_PAT", "databricks_pat", "Databricks PAT", "o PAT do Databricks", "adb-1234.azuredatabricks.net", lambda: "dapi" + _hex(rng, 32) + rng.choice(["", "-2", "-3"]), True),
        # -- providers no other part holds
        P("mapbox", "Mapbox", "MAPBOX_SECRET_TOKEN", "mapbox_secret_token", "Mapbox secret token", "o token secreto do Mapbox", "api.mapbox.com", mapbox, True),
        P("shippo", "Shippo", "SHIPPO_API_KEY", "shippo_key", "Shippo key", "a chave do Shippo", "api.goshippo.com", pre("shippo_live_", HEX, 40), True),
        P("braintree", "Braintree", "BRAINTREE_ACCESS_TOKEN", "braintree_access_token", "Braintree access token", "o access token do Braintree", "payments.braintree-api.com", lambda: f"access_token$production${_pick(rng, LOWER + DIGITS, 16)}${_hex(rng, 32)}", True),
        P("brevo", "Brevo", "BREVO_API_KEY", "brevo_api_key", "Brevo API key", "a chave do Brevo", "api.brevo.com", lambda: f"xkeysib-{_hex(rng, 64)}-{_run(rng, ALNUM, 16)}", True),
        P("resend", "Resend", "RESEND_API_KEY", "resend_api_key", "Resend key", "a chave do Resend", "api.resend.com", lambda: f"re_{_run(rng, ALNUM, 8)}_{_run(rng, ALNUM, 24)}", True),
        P("pinecone", "Pinecone", "PINECONE_API_KEY", "pinecone_api_key", "Pinecone key", "a chave do Pinecone", "api.pinecone.io", lambda: f"pcsk_{_run(rng, ALNUM, 5)}_{_run(rng, ALNUM, 63)}", True),
        P("elevenlabs", "ElevenLabs", "ELEVENLABS_API_KEY", "xi_api_key", "ElevenLabs key", "a chave da ElevenLabs", "api.elevenlabs.io", pre("sk_", HEX, 48), True),
        P("deepseek", "DeepSeek", "DEEPSEEK_API_KEY", "deepseek_api_key", "DeepSeek key", "a chave do DeepSeek", "api.deepseek.com", pre("sk-", HEX, 32), True),
        P("together", "Together AI", "TOGETHER_API_KEY", "together_api_key", "Together key", "a chave da Together", "api.together.xyz", pre("tgp_v1_", URLSAFE, 43), True),
        P("fireworks", "Fireworks", "FIREWORKS_API_KEY", "fireworks_api_key", "Fireworks key", "a chave da Fireworks", "api.fireworks.ai", pre("fw_", ALNUM, 24), False),
        P("neon", "Neon", "NEON_API_KEY", "neon_api_key", "Neon API key", "a chave da Neon", "console.neon.tech", pre("napi_", LOWER + DIGITS, 64), True),
        P("posthog personal", "PostHog", "POSTHOG_PERSONAL_API_KEY", "personal_api_key", "PostHog personal key", "a chave pessoal do PostHog", "us.posthog.com", pre("phx_", ALNUM, 43), True),
        P("launchdarkly", "LaunchDarkly", "LD_SDK_KEY", "sdk_key", "LaunchDarkly key", "a chave do LaunchDarkly", "app.launchdarkly.com", launchdarkly, False),
        P("jfrog", "JFrog", "ARTIFACTORY_API_KEY", "artifactory_api_key", "Artifactory key", "a chave do Artifactory", "acme.jfrog.io", jfrog, True),
        P("octopus", "Octopus Deploy", "OCTOPUS_API_KEY", "octopus_api_key", "Octopus API key", "a chave do Octopus", "acme.octopus.app", lambda: "API-" + _pick(rng, UPPER + DIGITS, rng.randrange(26, 33)), True),
        P("cloudflare origin ca", "Cloudflare", "CF_ORIGIN_CA_KEY", "origin_ca_key", "Cloudflare Origin CA key", "a chave Origin CA da Cloudflare", "api.cloudflare.com", lambda: f"v1.0-{_hex(rng, 24)}-{_hex(rng, 146)}", True),
        P("backblaze b2", "Backblaze", "B2_APPLICATION_KEY", "application_key", "B2 application key", "a application key do B2", "api.backblazeb2.com", lambda: "K00" + str(rng.randrange(1, 6)) + _run(rng, B64, 27), False),
        P("salesforce", "Salesforce", "SF_ACCESS_TOKEN", "sf_access_token", "Salesforce session token", "o token de sessão do Salesforce", "acme.my.salesforce.com", lambda: "00D" + _run(rng, ALNUM, 12) + "!AQ" + _run(rng, ALNUM + "._", 94), True),
        P("easypost", "EasyPost", "EASYPOST_API_KEY", "easypost_api_key", "EasyPost key", "a chave do EasyPost", "api.easypost.com", pre("EZAK", LOWER + DIGITS, 54), True),
        P("1password service account", "1Password", "OP_SERVICE_ACCOUNT_TOKEN", "service_account_token", "1Password service account token", "o token da conta de serviço do 1Password", "acme.1password.com", onepassword, True),
        P("bitwarden", "Bitwarden", "BWS_ACCESS_TOKEN", "bws_access_token", "Bitwarden access token", "o access token do Bitwarden", "vault.bitwarden.com", lambda: f"0.{_uuid(rng)}.{_run(rng, ALNUM, 30)}:{_run(rng, B64, 22)}==", True),
        P("infisical", "Infisical", "INFISICAL_TOKEN", "infisical_token", "Infisical service token", "o token do Infisical", "app.infisical.com", lambda: f"st.{_hex(rng, 24)}.{_hex(rng, 32)}.{_hex(rng, 32)}", True),
        P("kubeadm", "kubeadm", "KUBEADM_TOKEN", "bootstrap_token", "kubeadm bootstrap token", "o token de bootstrap do kubeadm", "10.0.0.10:6443", lambda: _run(rng, LOWER + DIGITS, 6) + "." + _run(rng, LOWER + DIGITS, 16), False),
        P("wireguard", "WireGuard", "WG_PRIVATE_KEY", "private_key", "WireGuard private key", "a chave privada do WireGuard", "vpn.example.com", wireguard, False),
        P("ethereum key", "Ethereum", "DEPLOYER_PRIVATE_KEY", "private_key", "deployer wallet private key", "a chave privada da carteira", "rpc.example.org", lambda: "0x" + _hex(rng, 64), False),
        P("seed phrase", "wallet", "WALLET_MNEMONIC", "mnemonic", "wallet seed phrase", "a frase-semente da carteira", "rpc.example.org", seed_phrase, False),
        P("teams webhook", "Teams", "TEAMS_WEBHOOK_URL", "teams_webhook", "Teams webhook", "o webhook do Teams", "webhook.office.com", teams, True),
        P("azure devops", "Azure DevOps", "AZURE_DEVOPS_PAT", "azure_devops_pat", "Azure DevOps PAT", "o PAT do Azure DevOps", "dev.azure.com", plain(LOWER + "234567", 52), False),
        P("azure service bus", "Azure Service Bus", "SERVICEBUS_CONNECTION", "servicebus_connection", "Service Bus connection string", "a connection string do Service Bus", "servicebus.windows.net", service_bus, True),
        P("azure sas", "Azure Storage", "BACKUP_SAS_URL", "sas_url", "SAS URL", "a URL SAS do storage", "blob.core.windows.net", sas, True),
        P("meta graph", "Meta", "FB_PAGE_ACCESS_TOKEN", "page_access_token", "Facebook page token", "o token da página do Facebook", "graph.facebook.com", lambda: "EAA" + rng.choice("BGJ") + _run(rng, ALNUM, rng.randrange(150, 200)), True),
        P("x bearer", "X", "TWITTER_BEARER_TOKEN", "bearer_token", "X API bearer token", "o bearer token do X", "api.x.com", lambda: "A" * 21 + _run(rng, ALNUM, 24) + "%3D" + _run(rng, ALNUM, 50), True),
        P("asaas", "Asaas", "ASAAS_API_KEY", "asaas_api_key", "Asaas API key", "a chave de API do Asaas", "api.asaas.com", asaas, True),
        P("efi", "Efí", "EFI_CLIENT_SECRET", "client_secret", "Efí client secret", "o client secret da Efí", "pix.api.efipay.com.br", pre("Client_Secret_", HEX, 40), True),
        P("intercom", "Intercom", "INTERCOM_ACCESS_TOKEN", "intercom_access_token", "Intercom access token", "o token do Intercom", "api.intercom.io", intercom, False),
        P("contentful", "Contentful", "CONTENTFUL_MANAGEMENT_TOKEN", "management_token", "Contentful token", "o token do Contentful", "api.contentful.com", pre("CFPAT-", URLSAFE, 43), True),
        P("typeform", "Typeform", "TYPEFORM_TOKEN", "typeform_token", "Typeform token", "o token do Typeform", "api.typeform.com", lambda: f"tfp_{_run(rng, URLSAFE, 44)}_{_run(rng, ALNUM, 14)}", True),
        P("prefect", "Prefect", "PREFECT_API_KEY", "prefect_api_key", "Prefect key", "a chave do Prefect", "api.prefect.cloud", pre("pnu_", ALNUM, 36), True),
        P("render", "Render", "RENDER_API_KEY", "render_api_key", "Render key", "a chave do Render", "api.render.com", pre("rnd_", ALNUM, 32), True),
        P("fly.io", "Fly.io", "FLY_API_TOKEN", "fly_token", "Fly token", "o token do Fly", "api.fly.io", pre("fo1_", URLSAFE, 43), True),
        P("clerk", "Clerk", "CLERK_SECRET_KEY", "clerk_secret_key", "Clerk secret key", "a chave secreta do Clerk", "api.clerk.com", pre("sk_live_", ALNUM, 40), True),
        P("cerebras", "Cerebras", "CEREBRAS_API_KEY", "cerebras_api_key", "Cerebras key", "a chave da Cerebras", "api.cerebras.ai", pre("csk-", LOWER + DIGITS, 48), True),
        P("voyage", "Voyage AI", "VOYAGE_API_KEY", "voyage_api_key", "Voyage key", "a chave da Voyage", "api.voyageai.com", pre("pa-", URLSAFE, 43), False),
        P("yandex cloud", "Yandex Cloud", "YC_API_KEY", "yc_api_key", "Yandex Cloud API key", "a chave da Yandex Cloud", "llm.api.cloud.yandex.net", pre("AQVN", URLSAFE, 36), True),
        P("mandrill", "Mandrill", "MANDRILL_API_KEY", "mandrill_key", "Mandrill key", "a chave do Mandrill", "mandrillapp.com", pre("md-", URLSAFE, 22), False),
        P("totp seed", "TOTP", "MFA_OTPAUTH_URI", "otpauth_uri", "2FA seed", "a semente do 2FA", "example.com", totp, True),
        P("auth0", "Auth0", "AUTH0_CLIENT_SECRET", "client_secret", "Auth0 client secret", "o client secret do Auth0", "acme.us.auth0.com", plain(URLSAFE, 64), False),
        P("hetzner", "Hetzner", "HCLOUD_TOKEN", "hcloud_token", "Hetzner Cloud token", "o token da Hetzner", "api.hetzner.cloud", plain(ALNUM, 64), False),
        P("paypal", "PayPal", "PAYPAL_CLIENT_SECRET", "paypal_client_secret", "PayPal client secret", "o client secret do PayPal", "api-m.paypal.com", lambda: "E" + _run(rng, URLSAFE, 79), False),
        P("splunk hec", "Splunk", "SPLUNK_HEC_TOKEN", "hec_token", "Splunk HEC token", "o token do HEC do Splunk", "splunk.example.com:8088", lambda: _uuid(rng).upper(), False),
        P("jenkins", "Jenkins", "JENKINS_API_TOKEN", "jenkins_api_token", "Jenkins API token", "o token de API do Jenkins", "ci.example.com", lambda: "11" + _hex(rng, 32), False),
        P("elastic", "Elastic", "ELASTIC_API_KEY", "elastic_api_key", "Elastic API key", "a API key do Elastic", "acme.es.us-east-1.aws.found.io", elastic, False),
    ]
    # fmt: on


# A part of the BIP39 English list (real words of it: a seed phrase is words, not random letters).
_BIP39 = (
    "abandon ability able about above absent absorb abstract absurd abuse access accident account accuse achieve "
    "acid acoustic acquire across act action actor actress actual adapt add addict address adjust admit adult "
    "advance advice aerobic affair afford afraid again age agent agree ahead aim air airport aisle alarm album "
    "alcohol alert alien all alley allow almost alone alpha already also alter always amateur amazing among amount "
    "wisdom wolf woman wonder wood wool word work world worry worth wrap wreck wrestle wrist write wrong yard year "
    "yellow you young youth zebra zero zone zoo"
).split()


# -- where provider values land: (context, needs a name beside the value?, make(c) -> text) -------


@dataclass(frozen=True)
class C:
    env: str
    key: str
    camel: str
    pascal: str
    dash: str
    label: str
    rotulo: str
    name: str
    short: str
    host: str
    v: str
    n: int  # a number for history lines, ports, line numbers
    day: int


def _c(p: Provider, value: str, rng: random.Random) -> C:
    parts = p.key.split("_")
    camel = parts[0] + "".join(part.title() for part in parts[1:])
    short = p.name.lower().replace(" ", "").replace(".", "").replace("í", "i")
    return C(
        p.env,
        p.key,
        camel,
        camel[0].upper() + camel[1:],
        p.key.replace("_", "-"),
        p.label,
        p.rotulo,
        p.name,
        short,
        p.host,
        value,
        rng.randrange(100, 2000),
        rng.randrange(1, 29),
    )


NAMED, BARE = False, True  # BARE: the text names nothing; only values whose shape says what they are

# fmt: off
_CONTEXTS: dict[str, list[tuple[str, bool, object]]] = {
    "config": [
        ("dotenv comment", NAMED, lambda c: f'# {c.name} (prod) - rotated 2026-11-{c.day:02d}\n{c.env}="{c.v}"  # do not share'),
        ("dotenv block", NAMED, lambda c: f"APP_URL=https://app.example.com\nSENTRY_ENVIRONMENT=production\n{c.env}={c.v}\nFEATURE_X=1"),
        ("systemd", NAMED, lambda c: f'[Service]\nUser=app\nEnvironment="{c.env}={c.v}"\nExecStart=/opt/app/bin/server'),
        ("dockerfile", NAMED, lambda c: f'FROM node:20-alpine\nWORKDIR /app\nENV {c.env}={c.v}\nCMD ["node", "server.js"]'),
        ("dockerfile arg", NAMED, lambda c: f"ARG {c.env}={c.v}\nRUN ./scripts/fetch-assets.sh"),
        ("tfvars", NAMED, lambda c: f'region      = "sa-east-1"\n{c.key} = "{c.v}"'),
        ("hcl default", NAMED, lambda c: f'variable "{c.key}" {{\n  type      = string\n  sensitive = true\n  default   = "{c.v}"\n}}'),
        ("yaml nested", NAMED, lambda c: (f"app:\n  integrations:\n    {c.short}:\n      enabled: true\n      {c.key}: {c.v}\n      timeout: 10s" )),
        ("toml table", NAMED, lambda c: f"[integrations.{c.short}]\nenabled = true\n{c.key} = '{c.v}'"),
        ("json nested", NAMED, lambda c: json.dumps({"integrations": {c.short: {c.camel: c.v, "enabled": True}}}, indent=2)),
        ("appsettings", NAMED, lambda c: f'{{\n  "{c.name.replace(" ", "")}": {{\n    "{c.pascal}": "{c.v}",\n    "Retries": 3\n  }}\n}}'),
        ("xml", NAMED, lambda c: f"<configuration>\n  <{c.camel}>{c.v}</{c.camel}>\n  <timeout>30</timeout>\n</configuration>"),
        ("java properties", NAMED, lambda c: f"{c.short}.{c.key.replace('_', '.')}={c.v}\n{c.short}.timeout=30s"),
        ("launch.json", NAMED, lambda c: f'"env": {{\n  "{c.env}": "{c.v}",\n  "DEBUG": "app:*"\n}}'),
        ("circleci", NAMED, lambda c: (f"jobs:\n  build:\n    docker:\n      - image: cimg/node:20.11\n    environment:\n      {c.env}: {c.v}" )),
        ("bitbucket pipelines", NAMED, lambda c: (f"pipelines:\n  default:\n    - step:\n        script:\n          - export {c.env}={c.v}\n          - npm test" )),
        ("azure pipelines", NAMED, lambda c: (f"variables:\n  - name: {c.env}\n    value: '{c.v}'\n  - name: buildConfiguration\n    value: Release" )),
        ("jenkinsfile", NAMED, lambda c: f"withEnv([\"{c.env}={c.v}\"]) {{\n  sh 'make release'\n}}"),
        ("k8s configmap", NAMED, lambda c: f'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: api-config\ndata:\n  {c.env}: "{c.v}"'),
        ("ansible vars", NAMED, lambda c: f'# group_vars/prod.yml\n{c.key}: "{c.v}"  # TODO: move to vault'),
    ],
    "shell": [
        ("bash history", NAMED, lambda c: f"  {c.n}  export {c.env}={c.v}\n  {c.n + 1}  npm run deploy"),
        ("zsh history", NAMED, lambda c: f": 17335{c.n:04d}:0;{c.env}={c.v} python sync.py --full"),
        ("fish", NAMED, lambda c: f"set -gx {c.env} {c.v}"),
        ("cmd setx", NAMED, lambda c: f'setx {c.env} "{c.v}"'),
        ("powershell env", NAMED, lambda c: f'[Environment]::SetEnvironmentVariable("{c.env}", "{c.v}", "User")'),
        ("docker run", NAMED, lambda c: f"docker run -d --name api -e {c.env}={c.v} -p 8080:8080 acme/api:1.9.2"),
        ("helm set", NAMED, lambda c: f"helm upgrade --install api ./charts/api -n prod --set secrets.{c.camel}={c.v}"),
        ("terraform var", NAMED, lambda c: f"terraform apply -var '{c.key}={c.v}' -auto-approve"),
        ("script flag", NAMED, lambda c: f"./scripts/release.sh --{c.dash} {c.v} --channel stable"),
        ("wget header", NAMED, lambda c: f'wget --header="Authorization: Bearer {c.v}" https://{c.host}/v1/export.csv'),
        ("grpcurl", NAMED, lambda c: f"grpcurl -H 'authorization: Bearer {c.v}' {c.host}:443 list"),
        ("curl form", NAMED, lambda c: f"curl -X POST https://{c.host}/oauth/check -d 'token={c.v}'"),
        ("curl -u", BARE, lambda c: f"curl -u {c.v}: https://{c.host}/v1/balance"),
        ("cli positional", BARE, lambda c: f"{c.short}-cli login {c.v}"),
    ],
    "code": [
        ("python kwarg", NAMED, lambda c: f'client = {c.name.replace(" ", "").replace(".", "")}Client({c.key}="{c.v}", timeout=30)'),
        ("python environ", NAMED, lambda c: f'os.environ["{c.env}"] = "{c.v}"'),
        ("jupyter", NAMED, lambda c: f"%env {c.env}={c.v}"),
        ("js config", NAMED, lambda c: f"export const config = {{\n  {c.camel}: '{c.v}',\n  retries: 3,\n}};"),
        ("ts fetch", NAMED, lambda c: (f"await fetch('https://{c.host}/v1/items', {{\n  headers: {{ Authorization: `Bearer {c.v}` }},\n}});" )),
        ("go header", NAMED, lambda c: f'req.Header.Set("X-Api-Key", "{c.v}")'),
        ("rust", NAMED, lambda c: f'let {c.key} = "{c.v}";'),
        ("kotlin", NAMED, lambda c: f'const val {c.key.upper()} = "{c.v}"'),
        ("swift", NAMED, lambda c: f'static let {c.camel} = "{c.v}"'),
        ("csharp", NAMED, lambda c: f'private const string {c.pascal} = "{c.v}";'),
        ("ruby", NAMED, lambda c: f"{c.name.replace(' ', '').replace('.', '')}.{c.key} = '{c.v}'"),
        ("php array", NAMED, lambda c: f"return [\n    '{c.key}' => '{c.v}',\n    'timeout' => 30,\n];"),
        ("java spring default", NAMED, lambda c: f'@Value("${{{c.short}.{c.camel}:{c.v}}}")\nprivate String {c.camel};'),
        ("positional", BARE, lambda c: f'client = new {c.name.replace(" ", "").replace(".", "")}Client("{c.v}");'),
    ],
    "url": [
        ("query", NAMED, lambda c: f"https://{c.host}/v1/report?{c.key}={c.v}&format=csv"),
        ("websocket query", NAMED, lambda c: f"wss://stream.example.com/socket?token={c.v}&v=2"),
        ("git userinfo", NAMED, lambda c: f"git clone https://x-token:{c.v}@git.example.com/acme/infra.git"),
        ("git remote -v", NAMED, lambda c: (f"origin\thttps://deploy:{c.v}@git.example.com/acme/app.git (fetch)\norigin\thttps://deploy:{c.v}@git.example.com/acme/app.git (push)" )),
        ("token as user", BARE, lambda c: f"https://{c.v}@{c.host}/v2/"),
    ],
    "http": [
        ("raw request", NAMED, lambda c: (f"POST /v2/messages HTTP/1.1\nHost: {c.host}\nAuthorization: Bearer {c.v}\nContent-Type: application/json" )),
        ("header line", NAMED, lambda c: f"X-Api-Key: {c.v}"),
    ],
    "log": [
        ("json log", NAMED, lambda c: json.dumps({ "ts": f"2026-12-{c.day:02d}T10:22:03Z", "level": "debug", "msg": "outgoing request", "headers": {"x-api-key": c.v}, } )),
        ("plain log", NAMED, lambda c: f"2026-12-{c.day:02d} 10:22:03 WARN [{c.short}] retrying with {c.key}={c.v} (attempt 2/5)"),
        ("python traceback", NAMED, lambda c: (f'Traceback (most recent call last):\n  File "/app/jobs/sync.py", line {c.n}, in run\n    client = Client(api_key="{c.v}")\nConnectionError: timed out' )),
        ("java trace", NAMED, lambda c: (f"Caused by: com.acme.http.HttpException: 401 for https://{c.host}/v1/items?access_token={c.v}\n\tat com.acme.http.Client.send(Client.java:{c.n})" )),
        ("requests error", NAMED, lambda c: (f"requests.exceptions.HTTPError: 403 Client Error: Forbidden for url: https://{c.host}/v1/export?key={c.v}" )),
    ],
    "vcs": [
        ("git diff", NAMED, lambda c: f"diff --git a/.env b/.env\n--- a/.env\n+++ b/.env\n@@ -3,2 +3,2 @@\n-{c.env}=\n+{c.env}={c.v}"),
        ("commit en", BARE, lambda c: f"chore: hardcode the {c.name} key for the demo ({c.v}), revert after friday"),
        ("commit pt", BARE, lambda c: f"fix: atualiza {c.rotulo} para {c.v}"),
    ],
    "sql": [
        ("insert", NAMED, lambda c: f"INSERT INTO integrations (provider, api_key) VALUES ('{c.short}', '{c.v}');"),
        ("update", NAMED, lambda c: f"UPDATE settings SET value = '{c.v}' WHERE name = '{c.key}';"),
    ],
    "table": [
        ("csv", NAMED, lambda c: f"provider,env,{c.key}\n{c.short},prod,{c.v}"),
        ("markdown en", BARE, lambda c: (f"| Service | Env | Value | Notes |\n|:--|:--|:--|:--|\n| {c.name} | production | `{c.v}` | rotated 2026-11 |" )),
        ("markdown pt", BARE, lambda c: (f"| Sistema | Credencial | Observação |\n|---|---|---|\n| {c.name} | {c.v} | usar só em homologação |" )),
        ("code fence", NAMED, lambda c: f"```bash\nexport {c.env}={c.v}\n```"),
    ],
    "prose-en": [
        ("fyi", NAMED, lambda c: f"FYI the {c.label} we use in prod is {c.v} - don't share it outside the team."),
        ("posting", NAMED, lambda c: f"Posting the {c.label} so you can test tonight: {c.v}"),
        ("set to", NAMED, lambda c: f"I set {c.env} to {c.v} and the build went green."),
        ("email", NAMED, lambda c: f"Hi Ana,\n\nYour {c.label} is:\n\n{c.v}\n\nKeep it safe.\n-- Platform team"),
        ("question", BARE, lambda c: f"Can you check why {c.v} gets a 403 from {c.name}? It worked yesterday."),
        ("slack export", NAMED, lambda c: f"rui.lima  10:42 AM\nhere you go\n{c.v}\n(that's the {c.label})"),
    ],
    "prose-pt": [
        ("segue", NAMED, lambda c: f"segue {c.rotulo}: {c.v}"),
        ("servidor", NAMED, lambda c: f"{c.rotulo[0].upper() + c.rotulo[1:]} que tá no servidor de prod é {c.v}, cuidado"),
        ("coloca no env", NAMED, lambda c: f"coloca isso no .env: {c.env}={c.v}"),
        ("gente", NAMED, lambda c: f"Gente, troquei {c.rotulo}. Agora é {c.v}. A anterior foi revogada."),
        ("deu 401", BARE, lambda c: f"Tentei com {c.v} e deu 401, alguém sabe o que houve?"),
        ("whatsapp", NAMED, lambda c: f"[07/12/26 09:14] Paulo: {c.rotulo} é {c.v}\n[07/12/26 09:15] Ana: valeu!"),
    ],
    "topic": [
        ("topic", NAMED, lambda c: f"{c.name} {c.key}: {c.v}"),
        ("topic pt", NAMED, lambda c: f"{c.rotulo} {c.v}"),
    ],
}
# fmt: on

# Every provider lands in one context of each of these classes, then in two more of the rest.
_EVERY = ("config", "shell", "code", "prose-en", "prose-pt")
_URL_CONTEXTS = {"query", "websocket query", "git userinfo", "git remote -v", "token as user"}
# Contexts that send the value to an HTTP API, and the values nobody sends that way (keys, seeds,
# join tokens, and URLs or connection strings that are the whole credential).
_HTTP_CONTEXTS = _URL_CONTEXTS | {
    "raw request",
    "header line",
    "wget header",
    "grpcurl",
    "curl form",
    "curl -u",
    "ts fetch",
    "go header",
    "json log",
    "java trace",
    "requests error",
}
_NOT_HTTP = {
    "kubeadm",
    "wireguard",
    "ethereum key",
    "seed phrase",
    "totp seed",
    "azure service bus",
    "teams webhook",
    "azure sas",
}


# -- pairs and whole files: AWS, Twilio, Confluent, Scaleway; private keys -------------------------


def _pairs(rng: random.Random) -> list[Sample]:
    out = []
    aws = [
        (
            "aws credentials file",
            lambda i, s: f"[default]\naws_access_key_id = {i}\naws_secret_access_key = {s}\nregion = sa-east-1",
        ),
        (
            "aws configure",
            lambda i, s: (
                f"$ aws configure\nAWS Access Key ID [None]: {i}\nAWS Secret Access Key [None]: {s}\n"
                "Default region name [None]: sa-east-1\nDefault output format [None]: json"
            ),
        ),
        ("boto3", lambda i, s: f'boto3.client("s3", aws_access_key_id="{i}", aws_secret_access_key="{s}")'),
        (
            "terraform provider",
            lambda i, s: (
                f'provider "aws" {{\n  region     = "us-east-1"\n  access_key = "{i}"\n  secret_key = "{s}"\n}}'
            ),
        ),
        ("rclone", lambda i, s: f"[s3]\ntype = s3\nprovider = AWS\naccess_key_id = {i}\nsecret_access_key = {s}"),
        ("s3cfg", lambda i, s: f"[default]\naccess_key = {i}\nsecret_key = {s}\nhost_base = s3.amazonaws.com"),
        (
            "docker run",
            lambda i, s: f"docker run --rm -e AWS_ACCESS_KEY_ID={i} -e AWS_SECRET_ACCESS_KEY={s} amazon/aws-cli s3 ls",
        ),
        ("prose-pt", lambda i, s: f"a chave de acesso é {i} e a secreta é {s}"),
        ("prose-en", lambda i, s: f"new IAM user for the backup job: {i} / {s}"),
        (
            "sts json",
            lambda i, s: json.dumps(
                {
                    "Credentials": {
                        "AccessKeyId": "ASIA" + i[4:],
                        "SecretAccessKey": s,
                        "Expiration": "2026-12-07T18:00:00Z",
                    }
                },
                indent=2,
            ),
        ),
        ("markdown table", lambda i, s: f"| Access key | Secret |\n|---|---|\n| {i} | {s} |"),
        ("env", lambda i, s: f"AWS_ACCESS_KEY_ID={i}\nAWS_SECRET_ACCESS_KEY={s}\nAWS_DEFAULT_REGION=sa-east-1"),
    ]
    for context, make in aws:
        for _ in range(2):
            key_id, secret = "AKIA" + _pick(rng, UPPER + "234567", 16), _run(rng, B64, 40)
            out.append(Sample("aws key pair", f"pair/{context}", make(key_id, secret), secret))
    twilio = [
        ("env", lambda s, t: f"TWILIO_SID={s}\nTWILIO_TOKEN={t}"),
        ("yaml", lambda s, t: f"sms:\n  provider: twilio\n  account_sid: {s}\n  auth_token: {t}"),
        ("prose-pt", lambda s, t: f"conta da Twilio {s}, token {t}"),
        ("node", lambda s, t: f"const client = require('twilio')('{s}', '{t}');"),
    ]
    for context, make in twilio:
        for _ in range(2):
            sid, token = "AC" + _hex(rng, 32), _hex(rng, 32)
            out.append(Sample("twilio sid and token", f"pair/{context}", make(sid, token), token))
    confluent = [
        (
            "properties",
            lambda k, s: (
                "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain."
                f'PlainLoginModule required username="{k}" password="{s}";'
            ),
        ),
        ("env", lambda k, s: f"CONFLUENT_CLOUD_API_KEY={k}\nCONFLUENT_CLOUD_API_SECRET={s}"),
        ("prose-en", lambda k, s: f"Kafka creds for the cluster: key {k}, secret {s}"),
    ]
    for context, make in confluent:
        for _ in range(2):
            key, secret = _pick(rng, UPPER + DIGITS, 16), _run(rng, B64, 64)
            out.append(Sample("confluent key and secret", f"pair/{context}", make(key, secret), secret))
    scaleway = [
        ("env", lambda a, s: f"SCW_ACCESS_KEY={a}\nSCW_SECRET_KEY={s}\nSCW_DEFAULT_REGION=fr-par"),
        ("yaml", lambda a, s: f"profiles:\n  prod:\n    access_key: {a}\n    secret_key: {s}"),
    ]
    for context, make in scaleway:
        for _ in range(2):
            access, secret = "SCW" + _pick(rng, UPPER + DIGITS, 17), _uuid(rng)
            out.append(Sample("scaleway key and secret", f"pair/{context}", make(access, secret), secret))
    for _ in range(3):
        token = _pick(rng, LOWER + DIGITS, 6) + "." + _pick(rng, LOWER + DIGITS, 16)
        text = (
            f"kubeadm join 10.0.{rng.randrange(256)}.10:6443 --token {token} \\\n"
            f"    --discovery-token-ca-cert-hash sha256:{_hex(rng, 64)}"
        )
        out.append(Sample("kubeadm", "file/kubeadm join", text, token))
        raw = bytearray(_bytes(rng, 32))
        raw[0] &= 248
        raw[31] = (raw[31] & 127) | 64
        key = _b64(bytes(raw))
        text = (
            f"[Interface]\nPrivateKey = {key}\nAddress = 10.8.0.{rng.randrange(2, 250)}/32\nDNS = 1.1.1.1\n\n"
            f"[Peer]\nPublicKey = {_b64(_bytes(rng, 32))}\nEndpoint = vpn.example.com:51820\nAllowedIPs = 0.0.0.0/0"
        )
        out.append(Sample("wireguard", "file/wg0.conf", text, key))
        secret = _pick(rng, BASE32, 32)
        text = f"QR do 2FA do painel (se perder o celular): otpauth://totp/Painel:ops?secret={secret}&issuer=Painel&digits=6"
        out.append(Sample("totp seed", "file/otpauth", text, secret))
    for i in range(9):
        body = [_run(rng, B64, 70) for _ in range(5)]
        kind = ("openssh", "pgp", "putty")[i % 3]
        if kind == "openssh":
            text = (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA"
                + body[0][24:]
                + "\n"
                + "\n".join(body[1:])
                + "\n-----END OPENSSH PRIVATE KEY-----"
            )
        elif kind == "pgp":
            text = (
                "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQVYBGV"
                + body[0][7:]
                + "\n"
                + "\n".join(body[1:])
                + "\n="
                + _run(rng, B64, 4)
                + "\n-----END PGP PRIVATE KEY BLOCK-----"
            )
        else:
            text = (
                "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy@ci\nPublic-Lines: 2\n"
                f"AAAAC3NzaC1lZDI1NTE5AAAAI{_run(rng, B64, 43)}\n\nPrivate-Lines: 1\n{body[2][:44]}\n"
                f"Private-MAC: {_hex(rng, 64)}"
            )
        out.append(Sample("private key (openssh, pgp, putty)", f"file/{kind}", text, body[2][:44]))
    return out


# -- passwords ------------------------------------------------------------------------------------

_PW_WORDS = [
    "girassol",
    "jacaranda",
    "cachoeira",
    "bergamota",
    "mandacaru",
    "tempest",
    "harvest",
    "lighthouse",
    "saffron",
    "juniper",
    "pelourinho",
    "capivara",
    "quindim",
    "borboleta",
    "cinnamon",
    "glacier",
]
_PW_ACCENTED = ["Coração", "Maçã", "São-Jorge", "Pão-de-Açúcar", "Ipê-Amarelo", "Açaí", "Pinhão", "Jabuticaba"]
_PW_COMPANY = ["Mudar", "Acme", "Verao", "Brasil", "Senha", "Empresa", "Suporte", "Welcome"]
_PASSWORD_SHAPES = (
    "passphrase-spaces",
    "digits",
    "dollar-inside",
    "hex",
    "base64",
    "accented",
    "short-mixed",
    "company-pattern",
)


def _password(rng: random.Random, shape: str) -> str:
    if shape == "passphrase-spaces":
        return " ".join(rng.sample(_PW_WORDS, rng.choice([3, 4])))
    if shape == "digits":
        return _digits(rng, rng.randrange(8, 11))
    if shape == "dollar-inside":
        return rng.choice(_PW_WORDS)[:5].capitalize() + "$" + _run(rng, ALNUM, 5) + "$" + str(rng.randrange(10, 99))
    if shape == "hex":
        return _hex(rng, 32)
    if shape == "base64":
        return _b64(_bytes(rng, 18))
    if shape == "accented":
        return rng.choice(_PW_ACCENTED) + rng.choice("#!*") + str(rng.randrange(1990, 2027))
    if shape == "short-mixed":
        while True:
            value = _run(rng, ALNUM, 6) + rng.choice("!#*@%") + rng.choice(DIGITS)
            value = "".join(rng.sample(value, len(value)))
            if not value[0].isdigit():
                return value
    return rng.choice(_PW_COMPANY) + "@" + rng.choice(["123", "2025", "2026", "1234", "321"])


# (context, url-encode the password?, make(password) -> text)
# fmt: off
_PASSWORD_CONTEXTS = [
    ("my.cnf", False, lambda p: f'[client]\nuser=root\npassword="{p}"\nhost=127.0.0.1'),
    ("redis-cli", False, lambda p: f"redis-cli -h cache.internal -p 6379 -a '{p}' --no-auth-warning"),
    ("htpasswd", False, lambda p: f"htpasswd -b -c /etc/nginx/.htpasswd admin '{p}'"),
    ("mongosh url", True, lambda p: f'mongosh "mongodb://admin:{p}@mongo01.internal:27017/?authSource=admin"'),
    ("sql alter user", False, lambda p: f"ALTER USER app WITH PASSWORD '{p}';"),
    ("sql create user", False, lambda p: f"CREATE USER 'relatorios'@'%' IDENTIFIED BY '{p}';"),
    ("sql seed", False, lambda p: f"INSERT INTO users (email, password) VALUES ('admin@example.com', '{p}');"),
    ("nmcli", False, lambda p: f"nmcli dev wifi connect \"Escritorio-5G\" password '{p}'"),
    ("wpa_supplicant", False, lambda p: f'network={{\n    ssid="Escritorio"\n    psk="{p}"\n}}'),
    ("django settings", False, lambda p: (f"DATABASES = {{\n    'default': {{\n        'ENGINE': 'django.db.backends.postgresql',\n        'USER': 'app',\n        'PASSWORD': '{p}',\n    }}\n}}" )),
    ("rails erb default", False, lambda p: f'production:\n  adapter: postgresql\n  password: <%= ENV.fetch("DB_PASSWORD") {{ "{p}" }} %>'),
    ("docker run", False, lambda p: f"docker run -d -e MYSQL_ROOT_PASSWORD='{p}' -p 3306:3306 mysql:8.4"),
    ("helm set", False, lambda p: f"helm install pg bitnami/postgresql --set auth.postgresPassword='{p}'"),
    ("terraform", False, lambda p: f'resource "aws_db_instance" "main" {{\n  username = "app"\n  password = "{p}"\n}}'),
    ("smbclient", False, lambda p: f"smbclient //fs01/financeiro -U 'CORP\\ana%{p}'"),
    ("xfreerdp", False, lambda p: f"xfreerdp /v:10.0.3.7 /u:Administrator /p:'{p}' /cert:ignore"),
    ("openssl passout", False, lambda p: f"openssl pkcs12 -export -in cert.pem -inkey key.pem -out app.p12 -passout 'pass:{p}'"),
    ("keytool", False, lambda p: f"keytool -importkeystore -srckeystore app.p12 -destkeystore app.jks -deststorepass '{p}'"),
    ("sqlcmd", False, lambda p: f"sqlcmd -S sql01.corp -U sa -P '{p}' -Q \"SELECT @@VERSION\""),
    ("pip.conf", True, lambda p: f"[global]\nindex-url = https://ci:{p}@pypi.example.com/simple"),
    ("poetry toml", False, lambda p: f'[http-basic.private]\nusername = "ci"\npassword = "{p}"'),
    ("maven settings", False, lambda p: f"<server>\n  <id>nexus</id>\n  <username>ci</username>\n  <password>{p}</password>\n</server>"),
    ("nuget config", False, lambda p: (f'<packageSourceCredentials>\n  <acme>\n    <add key="Username" value="ci" />\n    <add key="ClearTextPassword" value="{p}" />\n  </acme>\n</packageSourceCredentials>' )),
    ("go mysql dsn", False, lambda p: f'dsn := "app:{p}@tcp(db.internal:3306)/shop?parseTime=true"'),
    ("psycopg2", False, lambda p: f'conn = psycopg2.connect(host="db.internal", user="app", password="{p}", dbname="orders")'),
    ("node pool", False, lambda p: f"const pool = new Pool({{ host: 'db', user: 'app', password: '{p}', database: 'shop' }});"),
    ("php pdo", False, lambda p: f"$pdo = new PDO('mysql:host=db;dbname=shop', 'app', '{p}');"),
    ("java driver", False, lambda p: f'Connection c = DriverManager.getConnection(url, "app", "{p}");'),
    ("npgsql", False, lambda p: f'"ConnectionStrings": {{ "Default": "Host=db;Username=app;Password={p};Database=shop" }}'),
    ("rust url", True, lambda p: f'let url = "postgres://app:{p}@localhost:5432/app";'),
    ("log", False, lambda p: f"2026-12-07 08:01:12 INFO login attempt user=admin pass={p} result=ok"),
    ("stack trace", True, lambda p: ("sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) could not connect to server\n" f"  engine url: postgresql+psycopg2://app:{p}@db.internal:5432/orders" )),
    ("markdown table pt", False, lambda p: f"| Acesso | Usuário | Senha |\n|---|---|---|\n| VPN | ana.souza | {p} |"),
    ("chat pt", False, lambda p: f"a senha do wi-fi mudou pra {p}"),
    ("chat pt login", False, lambda p: f"[10:02] bia: login do roteador: admin / senha: {p}"),
    ("chat en", False, lambda p: f"new pw for the grafana admin -> {p}"),
    ("email", False, lambda p: f"Welcome to Acme!\nYour temporary password is: {p}\nYou will be asked to change it."),
    ("commit", False, lambda p: f"fix: remove the hardcoded admin password ({p}) from seed.py"),
    ("topic", False, lambda p: f"senha do cofre do RH: {p}"),
]
# fmt: on


_UNDELIMITED = {"log", "chat pt", "chat pt login", "chat en"}


# -- look-alikes ----------------------------------------------------------------------------------

_SERVICES = ["checkout", "faturamento", "notifier", "ledger", "catalog", "payouts", "search", "onboarding", "estoque"]
_PROSE = [
    "deploy finished without errors",
    "manutenção programada no domingo",
    "release notes for 4.2",
    "bem-vindo ao painel",
    "the cache was warmed at startup",
    "relatório diário enviado",
]


def _ulid(rng):
    return _pick(rng, "0123456789ABCDEFGHJKMNPQRSTVWXYZ", 26)


# fmt: off
_BENIGN: list[tuple[str, object]] = [
    # hashes and checksums
    ("hash", lambda r: f"git bisect good {_hex(r, 40)}"),
    ("hash", lambda r: f'Revert "add retry to {r.choice(_SERVICES)}"\n\nThis reverts commit {_hex(r, 40)}.'),
    ("hash", lambda r: f"(cherry picked from commit {_hex(r, 40)})"),
    ("hash", lambda r: (f'[[package]]\nname = "serde"\nversion = "1.0.{r.randrange(100, 220)}"\nsource = "registry+https://github.com/rust-lang/crates.io-index"\nchecksum = "{_hex(r, 64)}"' )),
    ("hash", lambda r: f'{{file = "requests-2.32.{r.randrange(5)}-py3-none-any.whl", hash = "sha256:{_hex(r, 64)}"}}'),
    ("hash", lambda r: f'"narHash": "sha256-{_b64(_bytes(r, 32))}",'),
    ("hash", lambda r: f'  hashes = [\n    "h1:{_b64(_bytes(r, 32))}",\n    "zh:{_hex(r, 64)}",\n  ]'),
    ("hash", lambda r: (f"version https://git-lfs.github.com/spec/v1\noid sha256:{_hex(r, 64)}\nsize {r.randrange(10**4, 10**8)}" )),
    ("hash", lambda r: (f'<script src="/static/app.js" integrity="sha384-{_b64(_bytes(r, 48))}" crossorigin="anonymous"></script>' )),
    ("hash", lambda r: f"Cache restored from key: Linux-node-modules-{_hex(r, 64)}"),
    ("hash", lambda r: (f'ETag: "{_hex(r, 32)}"\nx-amz-request-id: {_pick(r, UPPER + DIGITS, 16)}\nx-amz-id-2: {_b64(_bytes(r, 57))}' )),
    ("hash", lambda r: f"ipfs://bafybei{_pick(r, 'abcdefghijklmnopqrstuvwxyz234567', 52)}/metadata.json"),
    ("hash", lambda r: f"Content-Digest: sha-256=:{_b64(_bytes(r, 32))}:"),
    # ids
    ("id", lambda r: f'db.orders.find({{ _id: ObjectId("{_hex(r, 24)}") }})'),
    ("id", lambda r: f"event {_ulid(r)} replayed on {r.choice(_SERVICES)}"),
    ("id", lambda r: f"ksuid={_run(r, ALNUM, 27)} stage=ingest"),
    ("id", lambda r: (f"aws ec2 stop-instances --instance-ids i-0{_hex(r, 16)}\nvolume vol-0{_hex(r, 16)} in subnet-0{_hex(r, 16)}" )),
    ("id", lambda r: (f"/subscriptions/{_uuid(r)}/resourceGroups/rg-prod/providers/Microsoft.Web/sites/{r.choice(_SERVICES)}-api" )),
    ("id", lambda r: f"https://github.com/acme/app/actions/runs/{_digits(r, 11)}/job/{_digits(r, 11)}"),
    ("id", lambda r: (f"Stripe event evt_1{_run(r, ALNUM, 23)} for price_1{_run(r, ALNUM, 23)} on acct_1{_run(r, ALNUM, 15)}" )),
    ("id", lambda r: f"chatcmpl-{_run(r, ALNUM, 29)} used file-{_run(r, ALNUM, 24)} in thread_{_run(r, ALNUM, 24)}"),
    ("id", lambda r: f'{{"id": "msg_01{_run(r, ALNUM, 22)}", "type": "message", "stop_reason": "end_turn"}}'),
    ("id", lambda r: f"request-id: req_011C{_run(r, ALNUM, 18)} (retry after 30 s)"),
    ("id", lambda r: (f"NAME                          READY   STATUS\napi-{_pick(r, LOWER + DIGITS, 10)}-{_pick(r, LOWER + DIGITS, 5)}   1/1     Running" )),
    ("id", lambda r: (f"CONTAINER ID   IMAGE\n{_hex(r, 12)}   acme/{r.choice(_SERVICES)}:{r.randrange(1, 9)}.{r.randrange(30)}.{r.randrange(10)}" )),
    ("id", lambda r: f"bws secret get {_uuid(r)} --output env"),
    ("id", lambda r: f"Sentry event {_hex(r, 32)} - TypeError in {r.choice(_SERVICES)}"),
    ("id", lambda r: f"tx 0x{_hex(r, 64)} confirmed in block {_digits(r, 8)}"),
    ("id", lambda r: (f"linha digitável: {_digits(r, 5)}.{_digits(r, 5)} {_digits(r, 5)}.{_digits(r, 6)} {_digits(r, 5)}.{_digits(r, 6)} {r.randrange(1, 10)} {_digits(r, 14)}" )),
    ("id", lambda r: f"Google Analytics G-{_pick(r, UPPER + DIGITS, 10)}, Tag Manager GTM-{_pick(r, UPPER + DIGITS, 7)}"),
    # keys and values that are public by design
    ("public", lambda r: f"STRIPE_PUBLISHABLE_KEY=pk_live_51{_run(r, ALNUM, 97)}"),
    ("public", lambda r: f"posthog.init('phc_{_run(r, ALNUM, 43)}', {{ api_host: 'https://us.i.posthog.com' }})"),
    ("public", lambda r: (f"mapboxgl.accessToken = 'pk.{_b64url(json.dumps({'u': 'acme', 'a': _pick(r, LOWER + DIGITS, 25)}, separators=(',', ':')).encode())}.{_run(r, URLSAFE, 22)}';" )),
    ("public", lambda r: (f'Sentry.init({{ dsn: "https://{_hex(r, 32)}@o{_digits(r, 6)}.ingest.us.sentry.io/{_digits(r, 7)}" }});' )),
    ("public", lambda r: f'<div class="g-recaptcha" data-sitekey="6L{_run(r, URLSAFE, 38)}"></div>'),
    ("public", lambda r: f"GOOGLE_CLIENT_ID={_digits(r, 12)}-{_pick(r, LOWER + DIGITS, 32)}.apps.googleusercontent.com"),
    ("public", lambda r: f"send the refund to 0x{_hex(r, 40)} (the treasury address)"),
    ("public", lambda r: f"age recipient: age1{_pick(r, BECH32, 58)}"),
    ("public", lambda r: (f"[Peer]\nPublicKey = {_b64(_bytes(r, 32))}\nAllowedIPs = 10.8.0.0/24\nEndpoint = vpn.example.com:51820" )),
    ("public", lambda r: (f"ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB{_run(r, B64, 91)}= ana@notebook" )),
    ("public", lambda r: f"github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_run(r, B64, 43)}"),
    ("public", lambda r: ("-----BEGIN CERTIFICATE-----\nMIID" + _run(r, B64, 60) + "\n" + _run(r, B64, 64) + "\n-----END CERTIFICATE-----" )),
    ("public", lambda r: ("-----BEGIN PGP SIGNATURE-----\n\niQIzBAABCAAdFiEE" + _run(r, B64, 48) + "\n=" + _run(r, B64, 4) + "\n-----END PGP SIGNATURE-----" )),
    ("public", lambda r: json.dumps({"kty": "EC", "crv": "P-256", "kid": _hex(r, 8), "x": _run(r, URLSAFE, 43), "y": _run(r, URLSAFE, 43)} )),
    ("public", lambda r: f"untrusted comment: minisign public key {_hex(r, 16).upper()}\nRWQ{_run(r, B64, 53)}"),
    ("public", lambda r: (f"pub   ed25519 2026-01-{r.randrange(10, 29)} [SC]\n      {_hex(r, 40).upper()}\nuid           [ultimate] Ana Souza <ana@example.com>" )),
    ("public", lambda r: f"kubeadm certs: --discovery-token-ca-cert-hash sha256:{_hex(r, 64)}"),
    ("public", lambda r: f"test card 4242 4242 4242 4242, any CVC, expiry 12/{r.randrange(27, 35)}"),
    # placeholders, masked and empty values
    ("placeholder", lambda r: f"{r.choice(['OPENAI_API_KEY', 'STRIPE_SECRET_KEY', 'BREVO_API_KEY'])}=<your-token>"),
    ("placeholder", lambda r: f"SENHA_DO_BANCO=<sua-senha-aqui>  # {r.choice(_SERVICES)}"),
    ("placeholder", lambda r: f"TOKEN=coloque_seu_token_aqui\nAPI_URL=https://{r.choice(_SERVICES)}.example.com"),
    ("placeholder", lambda r: f"api_key: ${{SECRET}}\nendpoint: https://{r.choice(_SERVICES)}.internal"),
    ("placeholder", lambda r: f'set "{r.choice(["API_KEY", "TOKEN", "DB_PASS"])}=%{r.choice(["API_KEY", "TOKEN", "DB_PASS"])}%"'),
    ("placeholder", lambda r: f"ENV PINECONE_API_KEY=__PINECONE_API_KEY__\nENV RELEASE={r.randrange(100, 999)}"),
    ("placeholder", lambda r: f'"apiKey": "#{{ApiKey}}", "tenant": "{r.choice(_SERVICES)}"'),
    ("placeholder", lambda r: f"curl -H 'Authorization: Bearer <token>' https://api.example.com/v1/{r.choice(_SERVICES)}"),
    ("placeholder", lambda r: f"OPENAI_API_KEY=sk-{'x' * r.choice([24, 32, 48])}"),
    ("placeholder", lambda r: f"GITHUB_TOKEN=ghp_{'X' * 36}  # {r.choice(_SERVICES)}"),
    ("placeholder", lambda r: (f"aws_access_key_id = AKIA{'X' * 16}\naws_secret_access_key = {'x' * 40}\nregion = {r.choice(['us-east-1', 'sa-east-1'])}" )),
    ("placeholder", lambda r: (f"docs example: AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY ({r.choice(_SERVICES)})" )),
    ("placeholder", lambda r: (f"def test_login_{r.choice(_SERVICES)}(client):\n    user = make_user(email='ana@example.com', password='password')\n    assert client.login(user.email, 'password')" )),
    ("masked", lambda r: f"OPENAI_API_KEY=sk-...{_run(r, ALNUM, 4)}"),
    ("masked", lambda r: f"| STRIPE_SECRET_KEY | sk_live_…{_run(r, ALNUM, 4)} | Stripe dashboard → Developers |"),
    ("masked", lambda r: f"Using token ghp_••••••••{_run(r, ALNUM, 4)} for {r.choice(_SERVICES)}"),
    ("masked", lambda r: f"aws_access_key_id: AKIA************{_pick(r, UPPER + DIGITS, 4)}"),
    ("masked", lambda r: f"DATABASE_URL=postgres://app:***@db.internal:5432/{r.choice(_SERVICES)}"),
    ("masked", lambda r: (f"2026-12-0{r.randrange(1, 8)} 10:00:01 DEBUG headers={{'Authorization': 'Bearer [FILTERED]', 'X-Request-Id': '{_uuid(r)}'}}" )),
    ("masked", lambda r: f"senha: ******** (alterada em {r.randrange(1, 29)}/11)"),
    ("empty", lambda r: (f"# .env.example\nOPENAI_API_KEY=\nSTRIPE_SECRET_KEY=\nDATABASE_URL=\nPORT={r.choice([3000, 8080, 8000])}" )),
    ("empty", lambda r: f"env:\n  - OPENAI_API_KEY\n  - STRIPE_SECRET_KEY\n  - {r.choice(['SLACK_BOT_TOKEN', 'DD_API_KEY'])}"),
    ("empty", lambda r: f"unset AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN\nexport AWS_PROFILE={r.choice(['prod', 'staging'])}"),
    ("empty", lambda r: (f'required_env = ["DATABASE_URL", "JWT_SECRET", "{r.choice(["RESEND_API_KEY", "PINECONE_API_KEY"])}"]' )),
    # references to variables and secret managers, encrypted blobs
    ("reference", lambda r: (f"aws secretsmanager get-secret-value --secret-id prod/{r.choice(_SERVICES)}/db --query SecretString --output text" )),
    ("reference", lambda r: f"gcloud secrets versions access latest --secret={r.choice(_SERVICES)}-stripe-key"),
    ("reference", lambda r: (f"MasterUserPassword: '{{{{resolve:secretsmanager:prod/{r.choice(_SERVICES)}:SecretString:password}}}}'" )),
    ("reference", lambda r: (f"@Microsoft.KeyVault(SecretUri=https://kv-prod.vault.azure.net/secrets/{r.choice(_SERVICES)}-api-key/)" )),
    ("reference", lambda r: (f"  data:\n  - secretKey: password\n    remoteRef:\n      key: prod/{r.choice(_SERVICES)}/db\n      property: password" )),
    ("reference", lambda r: f"doppler run --project {r.choice(_SERVICES)} --config prd -- npm start"),
    ("reference", lambda r: f"op run --env-file=.env.{r.choice(['prod', 'staging'])} -- ./deploy.sh"),
    ("reference", lambda r: f'token = os.getenv("{r.choice(["HCLOUD_TOKEN", "FLY_API_TOKEN", "NEON_API_KEY"])}")'),
    ("reference", lambda r: f"password: process.env.{r.choice(['DB_PASSWORD', 'PGPASSWORD'])}, host: '{r.choice(_SERVICES)}-db'"),
    ("reference", lambda r: f"arn:aws:ssm:sa-east-1:{_digits(r, 12)}:parameter/prod/{r.choice(_SERVICES)}/api_key"),
    ("reference", lambda r: f"docker login ghcr.io -u ana --password-stdin < ~/.config/ghcr/{r.choice(_SERVICES)}.token"),
    ("encrypted", lambda r: (f"api_key: ENC[AES256_GCM,data:{_b64(_bytes(r, 30))},iv:{_b64(_bytes(r, 32))},tag:{_b64(_bytes(r, 16))},type:str]" )),
    ("encrypted", lambda r: "db_password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  " + "\n  ".join(_hex(r, 80) for _ in range(3))),
    ("encrypted", lambda r: f"spec:\n  encryptedData:\n    password: AgB{_run(r, B64, 120)}"),
    # base64 of prose, versions, paths, encodings that are not secrets
    ("base64", lambda r: f"Content-Transfer-Encoding: base64\n\n{_b64((r.choice(_PROSE) + '. ' + r.choice(_PROSE)).encode())}"),
    ("base64", lambda r: (f'{{"event": "push", "payload": "{_b64(json.dumps({"service": r.choice(_SERVICES), "status": "ok"}).encode())}"}}' )),
    ("base64", lambda r: (f"https://app.example.com/callback?state={_b64url(json.dumps({'returnTo': '/' + r.choice(_SERVICES)}).encode())}" )),
    ("base64", lambda r: f"Sec-WebSocket-Key: {_b64(_bytes(r, 16))}\nSec-WebSocket-Version: 13"),
    ("base64", lambda r: f"Content-Security-Policy: script-src 'self' 'nonce-{_b64(_bytes(r, 16))}'"),
    ("base64", lambda r: (f'{{"version":3,"file":"app.js","mappings":"AAAA,SAAS{_pick(r, "ABCDEFGIKMOQSUWYacegikmoqsuwy", 40)};AACA"}}' )),
    ("version", lambda r: (f"github.com/acme/{r.choice(_SERVICES)} v0.0.0-2026{r.randrange(10, 13)}{r.randrange(10, 29)}120000-{_hex(r, 12)}" )),
    ("version", lambda r: f"Server Version: v1.{r.randrange(28, 33)}.{r.randrange(10)}-eks-{_hex(r, 7)}"),
    ("version", lambda r: (f'versionCode {_digits(r, 10)}\nversionName "{r.randrange(1, 9)}.{r.randrange(30)}.{r.randrange(10)}"' )),
    ("version", lambda r: (f"{r.choice(_SERVICES)} {r.randrange(1, 6)}.{r.randrange(20)}.0-rc.{r.randrange(1, 5)}+build.{_hex(r, 7)}" )),
    ("path", lambda r: (f"/home/ana/.cache/huggingface/hub/models--acme--{r.choice(_SERVICES)}-base/snapshots/{_hex(r, 40)}/config.json" )),
    ("path", lambda r: (f"node_modules/.pnpm/@acme+{r.choice(_SERVICES)}@1.{r.randrange(9)}.0_{_pick(r, LOWER + DIGITS, 26)}/node_modules/index.js" )),
    ("path", lambda r: (f"/nix/store/{_pick(r, '0123456789abcdfghijklmnpqrsvwxyz', 32)}-python3-3.12.{r.randrange(9)}/bin/python3" )),
    ("path", lambda r: f"C:\\Users\\joao\\AppData\\Local\\Temp\\{_uuid(r).upper()}\\setup.log"),
    ("path", lambda r: f"s3://datalake-raw/{r.choice(_SERVICES)}/2026/12/07/part-00000-{_uuid(r)}.c000.snappy.parquet"),
    ("path", lambda r: (f"/usr/lib/python3/dist-packages/google/auth/credentials.py:{r.randrange(40, 400)}: DeprecationWarning" )),
    ("path", lambda r: f"ssl_certificate_key /etc/ssl/private/{r.choice(_SERVICES)}.key;"),
    ("path", lambda r: f"https://www.notion.so/acme/Runbook-{r.choice(_SERVICES)}-{_hex(r, 32)}"),
    ("path", lambda r: (f"https://www.figma.com/design/{_run(r, ALNUM, 22)}/{r.choice(_SERVICES).title()}-v2?node-id={r.randrange(1, 900)}-{r.randrange(1, 900)}" )),
    # regexes and docs that describe tokens
    ("pattern", lambda r: f'AWS_KEY = re.compile(r"AKIA[0-9A-Z]{{16}}")  # {r.choice(_SERVICES)} scanner'),
    ("pattern", lambda r: (f"[[rules]]\nid = \"slack-token\"\nregex = '''xox[baprs]-[0-9a-zA-Z-]{{10,48}}'''\ntags = [\"{r.choice(['slack', 'chat'])}\"]" )),
    ("pattern", lambda r: (f"GitHub classic tokens start with ghp_ and 36 letters or digits; fine-grained ones with github_pat_ ({r.randrange(2, 9)} min read)." )),
    ("pattern", lambda r: (f"Chaves da AWS começam com AKIA e têm 20 caracteres; a secreta tem 40 (doc interna, seção {r.randrange(1, 9)})." )),
    # talk, commits, SQL, logs and traces about secrets, none in them
    ("talk", lambda r: (f"Rotate the {r.choice(['Stripe', 'OpenAI', 'Brevo'])} key every {r.choice([30, 60, 90])} days and never paste it in chat." )),
    ("talk", lambda r: f"nunca comite o .env do {r.choice(_SERVICES)}; as chaves ficam no cofre"),
    ("talk", lambda r: f"the token from the previous message was revoked at 10:{r.randrange(10, 59)}, ignore it"),
    ("talk", lambda r: f"a senha expirou de novo, abri o chamado #{r.randrange(1000, 9999)} pro suporte"),
    ("talk", lambda r: f"gerei uma nova chave de API pro {r.choice(_SERVICES)} e revoguei a antiga; já está no Vault"),
    ("talk", lambda r: f"I reset my password and now the {r.choice(_SERVICES)} SSO loop is gone."),
    ("talk", lambda r: f"we use a token bucket rate limiter: {r.randrange(10, 100)} tokens, refill 5/s"),
    ("talk", lambda r: f"passwords are hashed with argon2id (m={r.choice([19456, 65536])}, t=2, p=1)"),
    ("talk", lambda r: (f"run `gh auth token` to print yours, then export it as GH_TOKEN before `make {r.choice(['release', 'publish'])}`" )),
    ("talk", lambda r: (f"Kubernetes join tokens expire after {r.choice([1, 2, 24])} h; create one with `kubeadm token create --print-join-command`." )),
    ("commit", lambda r: f"fix(auth): stop logging Authorization headers in {r.choice(_SERVICES)}"),
    ("commit", lambda r: f"feat: rotação automática do refresh token (#{r.randrange(100, 999)})"),
    ("commit", lambda r: f"chore: move {r.choice(_SERVICES)} secrets to Vault and drop them from .env.example"),
    ("sql", lambda r: (f"ALTER TABLE users ADD COLUMN api_key_hash char(64);\nCREATE INDEX ON sessions (token_id); -- {r.choice(_SERVICES)}" )),
    ("sql", lambda r: (f"SELECT id, email FROM users WHERE password_reset_token IS NOT NULL AND created_at > now() - interval '{r.randrange(1, 30)} days';" )),
    ("sql", lambda r: (f"INSERT INTO api_keys (id, owner, key_hash) VALUES ('{_uuid(r)}', '{r.choice(_SERVICES)}', '{_hex(r, 64)}');" )),
    ("log", lambda r: (f"2026-12-07T10:{r.randrange(10, 59)}:00Z WARN 401 Unauthorized: invalid api key for tenant {_uuid(r)}" )),
    ("log", lambda r: (f"INFO token refreshed for client {r.choice(_SERVICES)}-web, expires_in={r.choice([300, 3600])}, scope=openid profile" )),
    ("trace", lambda r: (f'Traceback (most recent call last):\n  File "/app/{r.choice(_SERVICES)}/settings.py", line {r.randrange(10, 200)}, in <module>\n    STRIPE_KEY = os.environ["STRIPE_SECRET_KEY"]\nKeyError: \'STRIPE_SECRET_KEY\'' )),
    ("trace", lambda r: (f'psycopg.OperationalError: connection failed: FATAL:  password authentication failed for user "{r.choice(["app", "relatorios", "etl"])}"' )),
    ("trace", lambda r: (f"botocore.exceptions.NoCredentialsError: Unable to locate credentials ({r.choice(_SERVICES)} worker)" )),
    ("trace", lambda r: f"jwt.exceptions.ExpiredSignatureError: Signature has expired (iat={_digits(r, 10)})"),
    ("shell", lambda r: f"kubectl create secret generic {r.choice(_SERVICES)}-env --from-env-file=.env.prod -n prod"),
    ("shell", lambda r: (f"openssl rand -hex 32 > /run/secrets/{r.choice(_SERVICES)}_jwt && chmod 600 /run/secrets/{r.choice(_SERVICES)}_jwt" )),
    ("shell", lambda r: f'ssh-keygen -t ed25519 -C "ana@{r.choice(_SERVICES)}" -f ~/.ssh/id_{r.choice(_SERVICES)}'),
    ("shell", lambda r: (f"  {r.randrange(100, 999)}  git config --global credential.helper 'cache --timeout={r.choice([3600, 7200])}'" )),
    ("table", lambda r: (f"| Variável | Para quê | Onde pegar |\n|---|---|---|\n| {r.choice(['OPENAI_API_KEY', 'ASAAS_API_KEY'])} | chamadas de API | cofre do time |\n| PORT | porta HTTP | `{r.choice([3000, 8080])}` |" )),
    ("table", lambda r: (f"| Secret | Owner | Rotation |\n|---|---|---|\n| {r.choice(_SERVICES)}-db-password | platform | {r.choice([30, 90])} days |" )),
]
# fmt: on


def samples() -> tuple[list[Sample], list[Sample]]:
    """(credentials, look-alikes) of the blind part."""
    rng = random.Random(SEED)
    secrets: list[Sample] = []
    for provider in _providers(rng):
        chosen = []
        rest = []
        for cls, contexts in _CONTEXTS.items():
            usable = [
                (cls, ctx)
                for ctx in contexts
                if (provider.evident or ctx[1] is NAMED)
                and not (provider.group in _NOT_HTTP and ctx[0] in _HTTP_CONTEXTS)
            ]
            if cls in _EVERY:
                chosen.append(rng.choice(usable))
            else:
                rest += usable
        chosen += rng.sample(rest, 2)
        for cls, (name, _, template) in chosen:
            made = provider.make()
            shown, secret = made if isinstance(made, tuple) else (made, made)
            if name in _URL_CONTEXTS and shown == secret:
                shown = secret = quote(secret, safe="%")
            text = template(_c(provider, shown, rng))
            secrets.append(Sample(provider.group, f"{cls}/{name}", text, secret))
    secrets += _pairs(rng)
    for context, encode, template in _PASSWORD_CONTEXTS:
        # A passphrase with spaces only where quotes or delimiters show where it ends; no hex
        # where a password column could as well hold an MD5 hash.
        shapes = [
            shape
            for shape in _PASSWORD_SHAPES
            if not (shape == "passphrase-spaces" and context in _UNDELIMITED)
            and not (shape == "hex" and context == "sql seed")
        ]
        for shape in rng.sample(shapes, 3):
            value = _password(rng, shape)
            if encode:
                value = quote(value, safe="")
            secrets.append(Sample(f"password ({shape})", f"password/{context}", template(value), value))
    benign: list[Sample] = []
    for _ in range(4):
        for group, make in _BENIGN:
            benign.append(Sample(group, "", make(rng)))
    return secrets, list(dict.fromkeys(benign))
