"""The credential check as it was before bench/data/credentials.json: the baseline bench/credentials.py
runs beside gate.credentials. Frozen; not used by the product.

Credentials that must never become memory.

Facts are stored in plain text, shown to every later session and kept in write.log: a key that
lands there has leaked for good. A write whose text carries something shaped like a credential is
refused, and the refusal names the kind of secret without echoing it.

Detection is by shape: provider token formats (unambiguous prefixes and lengths), private key
blocks, JWTs, and `password=`-style assignments or connection strings whose value is a literal
rather than a reference (`$VAR`, `${VAR}`, `<placeholder>`, `***`, `os.environ[...]`). Talking
*about* secrets ("the token lives in 1Password", "rotate PASSWORD yearly") stays allowed.
"""

from __future__ import annotations

import re

# (kind, pattern): the kind is what the refusal names.
_TOKENS = [
    ("an AWS access key id", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    ("a GitHub token", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b|\bgithub_pat_[A-Za-z0-9_]{50,}\b"),
    ("a GitLab token", r"\bglpat-[A-Za-z0-9_-]{20,}\b"),
    ("an Anthropic API key", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    ("an OpenAI API key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}\b"),
    ("a Stripe key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b"),
    ("a Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"),
    ("a Google API key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
    ("an npm token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("a PyPI token", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{20,}"),
    ("a SendGrid key", r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),
    ("a private key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
    ("a JSON Web Token", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
]

_SECRET_WORDS = (
    r"password|passwd|passphrase|pwd|secret|client[_-]?secret|api[_-]?key|apikey|access[_-]?key|"
    r"secret[_-]?key|private[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|token"
)
# `password = "hunter22"`, `API_KEY: abc123...`, `--password=s3cr3t`; the value is checked apart.
_ASSIGNMENT = re.compile(
    rf"(?i)(?<![A-Za-z0-9])(?:[A-Za-z0-9]+[_-])*(?:{_SECRET_WORDS})\s*(?:=|:)\s*(['\"]?)(?P<value>[^\s'\",;)]+)\1"
)
# scheme://user:password@host
_CONNECTION = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s:/@]*:(?P<value>[^\s@/]+)@[^\s/]+")
_AWS_SECRET = re.compile(r"(?i)aws.{0,20}secret.{0,20}[=:]\s*['\"]?[A-Za-z0-9/+]{40}\b")

_COMPILED = [(kind, re.compile(pattern)) for kind, pattern in _TOKENS]

# Values that stand for a secret rather than being one.
_PLACEHOLDER = re.compile(
    r"""(?ix)^(
        \$\{?[A-Za-z_][A-Za-z0-9_]*\}? |      # $VAR, ${VAR}
        %[A-Za-z_][A-Za-z0-9_]*% |          # %VAR%
        <[^>]*>? | \[[^\]]*\]? | \{\{.*\}?\}? |  # <password>, [secret], {{ vault }}
        \*+ | x+ | \.+ | -+ | _+ |          # ***, xxx, ...
        (os\.)?(environ|getenv|env)\b.* |   # os.environ["X"], getenv(...)
        process\.env\b.* |
        (none|null|nil|true|false|empty|redacted|changeme|change-me|placeholder|example|dummy|
         secret|password|token|string|str|required|optional|your[_-].*|my[_-].*)
    )$"""
)


def _literal(value: str) -> bool:
    """Whether an assigned value looks like a real secret and not a reference or a word."""
    if len(value) < 6 or _PLACEHOLDER.match(value):
        return False
    if value.isalpha() and value.islower():  # a plain word: `token: optional`, `key=value`
        return False
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*(\(\)?)?", value) and not any(
        ch.isdigit() for ch in value
    ):
        return False  # an identifier or attribute path: `settings.api_key`, `get_token()`
    return True


def find(text: str) -> str | None:
    """The kind of credential `text` seems to hold, or None."""
    for kind, pattern in _COMPILED:
        if pattern.search(text):
            return kind
    if _AWS_SECRET.search(text):
        return "an AWS secret access key"
    for match in _CONNECTION.finditer(text):
        if _literal(match.group("value")):
            return "a connection string with a password"
    for match in _ASSIGNMENT.finditer(text):
        if _literal(match.group("value")):
            return "a password or key assignment"
    return None
