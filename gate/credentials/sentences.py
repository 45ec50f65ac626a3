"""Shapes where a secret's name and its value stand apart in a sentence or a statement: "I set
DEPLOY_TOKEN to ...", a row's `SET value = '...' WHERE name = '...'`, an environment lookup and
the literal it falls back to, a passphrase of plain words after "password is:". Each is read as an
assignment (gate.credentials.shapes: `(kind, triggers, pattern, how)`), so the name decides how
strict the value's check is, as it does for `NAME=value`. Standard library only: on the hooks'
path, and compiled only when a text holds a trigger.

Also (STATEMENT_SHAPES) values whose place in a statement names them: the password argument of a
database driver's connect call, the password of a Go driver's DSN.
"""

from gate.credentials.providers import NOT_SECRET_PREFIXES
from gate.credentials.values import _wordy, hex_id, literal, passphrase, random_looking

# A value as an assignment reads it: quoted (any characters but a quote, on one line), or bare.
_VALUE = (
    r"(?:(?P<q>[\"'`])(?P<qvalue>[^\"'`\n]{1,500})(?P=q)"
    r"|(?P<value>(?:[^\s\"'`,;)}\]&<]|&(?![\w.-]+=)){1,2000}))"
)
# A key of hex as products issue them: 32, 40 or 64 characters, or a UUID.
_HEX_KEY = r"[0-9a-fA-F]{32,64}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_NAMES = ("pass", "pwd", "senha", "secret", "token", "key", "auth", "credential", "appid", "_pat", "-pat", "psk")

SENTENCE_ASSIGNMENTS: list[tuple[str, tuple[str, ...], str, str]] = [
    # "I set OCTOPUS_API_KEY to ...", "defini o DEPLOY_TOKEN como ...", "defina X como ...": a name
    # set to a value in prose, as in a shell's `set`; the name, a variable's, decides.
    (
        "a password or key assignment",
        _NAMES,
        r"(?i)\b(?:set|setei|defini|defina|define|configurei|configure|configura)[ \t]+(?:the[ \t]+|o[ \t]+|a[ \t]+)?(?P<name>[A-Za-z][\w.-]{0,80})"
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
        r"(?:token|chave)[ \t]+de[ \t]+(?:api|acesso))[ \t]+(?:do|da|de|for|of)[ \t]+(?P<name>[\w.-]{1,40})[ \t]+"
        r"(?P<value>[A-Za-z0-9+/=_.~-]{16,}+)",
        "placed",
    ),
    # A password, where it belongs, then its value ending the line, as in a topic: "senha do
    # roteador <value>", "password for staging <value>". No "is" says a value follows, so a word is
    # no password here (`password-bare`), nor a version (`3.12.1`).
    (
        "a password in prose",
        ("pass", "senha"),
        r"(?i)\b(?:password|passwd|senha)[ \t]+(?:do|da|de|for|of|to)[ \t]+(?:the[ \t]+|o[ \t]+|a[ \t]+)?"
        r"(?P<name>[\w.-]{1,40})[ \t]+(?![\d.]+\.\d+[.,;)]?[ \t]*(?:\r?\n|$))"
        r"(?P<value>[^\s\"'`,;]{6,64})(?=[ \t]*[.,;)]?[ \t]*(?:\r?\n|$))",
        "password-bare",
    ),
    # An ODBC or ADO connection string's password runs to its semicolon: `...;Uid=app;Pwd=a b c;`.
    (
        "a password or key assignment",
        (";pwd=", ";password=", "; pwd=", "; password="),
        r"(?i);[ \t]*(?:pwd|password)[ \t]*=[ \t]*(?P<q>)(?P<qvalue>[^;\n{}]{1,200}?)[ \t]*(?=;|$)",
        "quoted-password",
    ),
    # A URL's query parameter `key` (Google's `?key=...`): machine-made, no id nor hash.
    (
        "a password or key assignment",
        ("?key=", "&key="),
        r"[?&](?P<name>key)=(?P<value>[A-Za-z0-9._~+/-]{16,200}=*)",
        "weak",
    ),
    # A product's key and a hex run: "the deepgram key is <40 hex>", "a chave da Deepgram é <hex>".
    # Not after a word that makes a key an id's or a hash's (`cache key`, `gpg key`: _ID_KEYS).
    (
        "a key or token in prose",
        ("key", "token"),
        r"(?i)\b(?P<name>[a-z][\w-]{1,30})[ \t]+(?:key|token)\b(?:[ \t]*(?:is|was|=|:))?[ \t]+"
        r"(?P<value>" + _HEX_KEY + r")(?![\w-])",
        "product-key",
    ),
    (
        "a key or token in prose",
        ("chave", "token"),
        r"(?i)\b(?:chave|token)[ \t]+(?:do|da|de)[ \t]+(?P<name>[a-z][\w-]{1,30})[ \t]*(?:é|era|:|=)[ \t]+"
        r"(?P<value>" + _HEX_KEY + r")(?![\w-])",
        "product-key",
    ),
    # A password that is one capitalised word, ending its clause: "a senha do wifi é Jabuticaba.",
    # "the password is Marmalade". Not a word saying what the password is (`Required`, `Inválida`).
    (
        "a password in prose",
        ("pass", "pw", "senha"),
        r"(?im)\b(?:password|passwd|pw|senha)\b[^\n]{0,40}?\b(?:is|é|era|ficou)[ \t]*:?[ \t]+"
        r"(?P<value>(?-i:[A-ZÀ-Ý][a-zà-ÿ]{5,19}))(?=[ \t]*(?:[.,;!]|$))",
        "capitalised",
    ),
    # SQL gives a user's password after `IDENTIFIED BY`: `CREATE USER 'x'@'%' IDENTIFIED BY '...'`
    # (Oracle's unquoted).
    (
        "a password or key assignment",
        ("identified",),
        r"(?i)\bidentified[ \t]+(?:with[ \t]+\w{1,40}[ \t]+)?by[ \t]+(?:password[ \t]+)?"
        r"(?:(?P<q>[\"'])(?P<qvalue>[^\"'\n]{1,200})(?P=q)|(?P<value>[^\s;\"'(),]{1,200})(?=[\s;]|$))",
        "quoted-password",
    ),
    # A password given to a function named for it: MySQL's `PASSWORD('...')`, Django's
    # `user.set_password('...')`.
    (
        "a password or key assignment",
        ("password(", "password ("),
        r"(?i)(?<![A-Za-z0-9])(?:[a-z]{1,20}_)?password[ \t]*\([ \t]*(?P<q>[\"'])(?P<qvalue>[^\"'\n]{1,200})(?P=q)[ \t]*\)",
        "quoted-password",
    ),
    # A password in parentheses after its name: "remove the hardcoded admin password (<value>)".
    (
        "a password in prose",
        ("pass", "pw", "senha"),
        r"(?i)\b(?:password|passwd|pw|pwd|senha)[ \t]+\((?P<value>[^()\"'`\n]{1,200})\)",
        "password-paren",
    ),
    # An XML element named for a password, holding a passphrase: `<password>a b c</password>`.
    (
        "a password or key assignment",
        ("pass", "pwd", "senha"),
        r"(?i)<(?P<name>[\w.:-]{0,40}(?:password|passwd|passphrase|pass|pwd|senha))>(?P<value>[^<>\n]{1,200})</(?P=name)>",
        "passphrase",
    ),
]


def _machine_key(value: str) -> bool:
    """A machine-made key, not an id: no hex (a hash, a trace), nor an id's prefix (`req_...`)."""
    head = value.replace("-", "_").split("_", 1)[0].lower()
    return (
        random_looking(value)
        and not hex_id(value)
        and not all(ch in "0123456789abcdefABCDEF-" for ch in value)
        and not ("_" in value.replace("-", "_") and head in NOT_SECRET_PREFIXES)
    )


def _basic_pair(value: str) -> bool:
    """Base64 of `user:password`, as HTTP Basic sends them."""
    import binascii  # (standard library)

    try:
        pair = binascii.a2b_base64(value + "=" * (-len(value) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return pair.isprintable() and 0 < pair.find(":") < len(pair) - 1


def _quoted_password(value: str) -> bool:
    return literal(value, quoted=True, password=True) and (" " not in value or passphrase(value))


STATEMENT_SHAPES: list[tuple[str, tuple[str, ...], str, object]] = [
    # A driver's connect call takes the address, the user and then the password: PHP's `new
    # PDO($dsn, 'app', '...')` and `mysqli_connect('db', 'app', '...')`, Java's
    # `DriverManager.getConnection(url, "app", "...")`.
    (
        "a password in a connect call",
        ("pdo", "getconnection", "_connect", "mysqli"),
        r"\b(?:PDO|getConnection|mysqli(?:_connect|_real_connect)?|(?:oci|odbc|sqlsrv|mysql|pg|db2|mssql)_connect)"
        r"[ \t]*\([^()\n]{1,200}?,[ \t]*[\"'][^\"'\n]{1,64}[\"'][ \t]*,[ \t]*"
        r"(?P<q>[\"'])(?P<value>[^\"'\n]{1,200})(?P=q)",
        _quoted_password,
    ),
    # Go's MySQL driver: `user:password@tcp(host:port)/db` (no scheme, so no URL shape reads it).
    (
        "a connection string with a password",
        ("@tcp(", "@unix(", "@udp("),
        r"(?<![\w:/.-])[\w.-]{1,64}:(?P<value>[^\s\"'/]{1,200}?)@(?:tcp|unix|udp)\(",
        _quoted_password,
    ),
    # A machine-made value passed to a client's constructor: `new AcmeClient("...")`,
    # `acme.NewClient("...")`, `Api("...")`.
    (
        "a key or token in code",
        ("client(", "api(", "sdk(", "service("),
        r"(?i)\b\w{0,40}(?:client|api|sdk|service)[ \t]*\([ \t]*(?P<q>[\"'])(?P<value>[A-Za-z0-9+/=_.~-]{20,200})(?P=q)"
        r"[ \t]*\)",
        _machine_key,
    ),
    # HTTP Basic credentials named by their scheme, the header's name left out: "o header do Nexus
    # é Basic <base64>": base64 of a `user:password` pair, or machine-made (not an identifier's words).
    (
        "an Authorization header",
        ("basic ",),
        r"\bBasic[ \t]+(?P<value>[A-Za-z0-9+/]{14,}={0,2})(?![\w+/=])",
        lambda value: _basic_pair(value) or (random_looking(value) and not _wordy(value)),
    ),
    # A value the text says was refused as a credential: "why <value> gets a 403", "tentei com
    # <value> e deu 401", "using <value> I get Unauthorized".
    (
        "a key or token in prose",
        ("401", "403", "unauthori", "forbidden", "autorizad"),
        r"(?i)\b(?:with|using|why|com|usando|tentei)[ \t]+(?:the[ \t]+|o[ \t]+|a[ \t]+)?(?P<value>[A-Za-z0-9+/=_.~-]{20,200}+)"
        r"[^\n]{0,40}?(?:\b401\b|\b403\b|unauthori[sz]ed|forbidden|n[ãa]o autorizad)",
        _machine_key,
    ),
]

# Words before "key" that make it an id's, a hash's or a public key's, not a product's secret.
ID_KEYS = frozenset(
    "the a an this that these my our your his her their its new old same o essa esse nossa nosso "
    "cache sort primary foreign partition idempotency object s3 redis dict map lookup hash row shard "
    "routing dedup dedupe index composite unique gpg pgp ssh signing public commit git sha cursor "
    "pagination page session request trace correlation etag storage bucket blob file cdn record "
    "message event cluster host ssh-ed25519 fingerprint checksum build cache-key user tenant account "
    "customer org team project repo branch run job workspace store release version upload download "
    "image asset media document doc item entity node range group state tracking dedupe routing".split()
)
# Words that say what a password is, not what it is: "the password is Required".
PASSWORD_STATES = frozenset(
    "required optional invalid incorrect wrong expired missing empty blank hidden masked encrypted "
    "hashed stored correct valid weak strong enabled disabled changed reset updated rotated unknown "
    "protected mandatory needed shared saved secure insecure different same "
    "obrigatória obrigatório obrigatoria obrigatorio inválida inválido invalida invalido incorreta "
    "incorreto expirada expirado vazia vazio fraca forte correta correto errada errado alterada "
    "alterado trocada trocado salva salvo oculta oculto segura seguro diferente mesma".split()
)
