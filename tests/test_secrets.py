import pytest

from gate import secrets

# Made-up credentials in the shapes providers issue. None of them is real.
POSITIVE = [
    ("AWS key id AKIAIOSFODNN7EXAMPLE in the CI vars", "an AWS access key id"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "an AWS secret access key"),
    ("use ghp_16C7e42F292c6912E7710c838347Ae178B4a for the bot", "a GitHub token"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWX", "a GitHub token"),
    ("glpat-Fk3xQ9vLm2Tz7RbW1yNc", "a GitLab token"),
    ("ANTHROPIC_API_KEY is sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345", "an Anthropic API key"),
    ("the key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD", "an OpenAI API key"),
    ("sk-abcdefghijklmnopqrstuvwxyz0123456789abcd", "an OpenAI API key"),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "a Stripe key"),
    ("slack bot xoxb-1234567890-abcdefghijkl", "a Slack token"),
    ("maps key AIzaSyD-1234567890abcdefghijklmnopqrstu", "a Google API key"),
    ("npm_abcdefghijklmnopqrstuvwxyz0123456789 publishes", "an npm token"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA", "a private key"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----", "a private key"),
    ("-----BEGIN PRIVATE KEY-----", "a private key"),
    ("auth header eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "a JSON Web Token"),
    ('password = "hunter2hunter2"', "a password or key assignment"),
    ("DB_PASSWORD=S3cr3t!Pass in .env", "a password or key assignment"),
    ("api_key: 9f8e7d6c5b4a3210", "a password or key assignment"),
    ("run it with --password=Tr0ub4dor&3", "a password or key assignment"),
    ("postgres://app:Sup3rS3cret@db.internal:5432/orders", "a connection string with a password"),
    ("redis://:p4ssw0rd99@cache:6379/0", "a connection string with a password"),
]

NEGATIVE = [
    "The password reset flow sends an email with a one-hour link.",
    "Set PASSWORD in .env; it is never committed.",
    "api_key is read from the environment by settings.py.",
    "token=${GITHUB_TOKEN} in the workflow.",
    "password: $DB_PASSWORD",
    "DB_PASSWORD=<your password>",
    "secret = os.environ['APP_SECRET']",
    "api_key = settings.api_key",
    "token = get_token()",
    "postgres://app@localhost/orders has no password locally.",
    "postgres://app:${PGPASSWORD}@db/orders",
    "mysql://root:****@db/app",
    "Commit 4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed the login.",
    "We use scikit-learn (sk-learn) for the ranking model.",
    "The JWT middleware rejects tokens older than 15 minutes.",
    "Rotate the AWS access keys every 90 days; they are in Vault.",
    "key=value pairs are parsed by parse_kv().",
    "The token bucket allows 100 requests per second.",
    "Keys are sorted with sorted(items, key=len).",
    "The GitHub token lives in 1Password under deploy-bot.",
    "Secrets are injected by External Secrets Operator.",
    "ssh-keygen -t ed25519 made the deploy key; the public half is in the repo.",
    "Use password: optional in the schema.",
]


@pytest.mark.parametrize("text, kind", POSITIVE)
def test_credentials_are_found_and_named(text, kind):
    assert secrets.find(text) == kind


@pytest.mark.parametrize("text", NEGATIVE)
def test_talk_about_secrets_is_not_a_secret(text):
    assert secrets.find(text) is None
