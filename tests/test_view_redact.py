"""Credentials in old data are masked wherever the viewer shows text, by gate/secrets.py's own
detector, and prose about secrets is left alone."""

import pytest

from gate import secrets
from gate.view.redact import redact

GITHUB = "ghp_" + "a1B2" * 9
CASES = [
    (f"CI pushes with {GITHUB} nightly", GITHUB, "CI pushes with [redacted: a GitHub token] nightly"),
    ("set password=hunter2222x in the env", "hunter2222x", "set password=[redacted: a password or key] in the env"),
    ("db at postgres://app:s3cr3tpw@db.internal/app", "s3cr3tpw", "db at postgres://app:[redacted: a password]@db.internal/app"),
    ("key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\nend", "MIIEow", "key:\n[redacted: a private key]\nend"),
    ("AKIAABCDEFGHIJKLMNOP is the key id", "AKIAABCDEFGHIJKLMNOP", "[redacted: an AWS access key id] is the key id"),
]


@pytest.mark.parametrize("text, secret, shown", CASES)
def test_a_credential_is_masked_and_the_rest_kept(text, secret, shown):
    assert secrets.find(text) is not None  # the detector that refuses it on the way in
    masked = redact(text)
    assert secret not in masked and masked == secrets.redact(text) and "[redacted: " in masked
    # The rest of the text stays readable.
    kept = shown.split("[redacted: ")[0]
    assert masked.startswith(kept)


@pytest.mark.parametrize("text", [
    "The deploy token lives in the team vault.",
    "Rotate PASSWORD yearly; the value is ${DB_PASSWORD}.",
    "token: optional",
    "",
])
def test_prose_about_secrets_is_left_alone(text):
    assert redact(text) == text


def test_none_reads_as_empty():
    assert redact(None) == ""
