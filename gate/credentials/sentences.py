"""Shapes where a secret's name and its value stand apart in a sentence or a statement: "I set
DEPLOY_TOKEN to ...", a row's `SET value = '...' WHERE name = '...'`, an environment lookup and
the literal it falls back to, a passphrase of plain words after "password is:". Each is read as an
assignment (gate.credentials.shapes: `(kind, triggers, pattern, how)`), so the name decides how
strict the value's check is, as it does for `NAME=value`. Standard library only: on the hooks'
path, and compiled only when a text holds a trigger.
"""

# A value as an assignment reads it: quoted (any characters but a quote, on one line), or bare.
_VALUE = (
    r"(?:(?P<q>[\"'`])(?P<qvalue>[^\"'`\n]{1,500})(?P=q)"
    r"|(?P<value>(?:[^\s\"'`,;)}\]&<]|&(?![\w.-]+=)){1,2000}))"
)
_NAMES = ("pass", "pwd", "senha", "secret", "token", "key", "auth", "credential", "appid", "_pat", "-pat", "psk")

SENTENCE_ASSIGNMENTS: list[tuple[str, tuple[str, ...], str, str]] = [
    # "I set OCTOPUS_API_KEY to ...", "defini o DEPLOY_TOKEN como ...": a name set to a value in
    # prose, as in a shell's `set`; the name, a variable's, decides.
    (
        "a password or key assignment",
        _NAMES,
        r"(?i)\b(?:set|setei|defini|configurei)[ \t]+(?:the[ \t]+|o[ \t]+|a[ \t]+)?(?P<name>[A-Za-z][\w.-]{0,80})"
        r"[ \t]+(?:to|para|pra|como)[ \t]+" + _VALUE,
        "name",
    ),
    # A key-value table's row: `UPDATE settings SET value = '...' WHERE name = 'api_token'`.
    (
        "a password or key assignment",
        _NAMES,
        r"(?i)\bset[ \t]+[\"'`]?(?:value|valor|val|secret_value)[\"'`]?[ \t]*=[ \t]*" + _VALUE + r"[ \t]+where[ \t]+"
        r"[\"'`]?(?:name|key|chave|nome|setting)[\"'`]?[ \t]*=[ \t]*[\"'](?P<name>[\w.-]{1,80})[\"']",
        "name",
    ),
    # The literal an environment lookup falls back to: Ruby's `ENV.fetch("DB_PASSWORD") { "..." }`,
    # `ENV["X"] || "..."`, JavaScript's `process.env.API_KEY || "..."` and `?? "..."`.
    (
        "a password or key assignment",
        _NAMES,
        r"[\"'](?P<name>[\w.-]{1,80})[\"'][ \t]*[)\]][ \t]*(?:\{|\|\||\?\?|\bor\b)[ \t]*" + _VALUE,
        "name",
    ),
    (
        "a password or key assignment",
        _NAMES,
        r"\benv\.(?P<name>[\w]{1,80})[ \t]*(?:\|\||\?\?)[ \t]*" + _VALUE,
        "name",
    ),
    # A key, where it belongs, then its value, as in a topic: "o token de API do Jenkins <value>",
    # "the deploy key for staging <value>". (Not an id after a place: "api key for tenant <uuid>".)
    (
        "a key or token in prose",
        ("token", "key", "chave", "secret", "segredo"),
        r"(?i)\b(?:(?:api|access|auth|deploy|secret)[ \t]+(?:key|token)|token|chave|secret|segredo|"
        r"(?:token|chave)[ \t]+de[ \t]+(?:api|acesso))[ \t]+(?:do|da|de|for|of)[ \t]+[\w.-]{1,40}[ \t]+"
        r"(?P<value>[A-Za-z0-9+/=_.~-]{16,}+)",
        "placed",
    ),
]
