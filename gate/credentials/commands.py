"""Credentials on a command line: a password after `-p`, `-a` or `-P`, a flag that names what it
takes (`--token <value>`), a short flag then a machine-made value, a user then a password as
flags, the value a secret-storing command is given, a secret piped into a login, `config set`,
redis's `requirepass`. gate.credentials.shapes reads them in this order, after the headers.
"""

from gate.credentials.values import (
    _Near,
    _password_literal,
    _random_key,
    letters_password,
    literal,
    passphrase,
    random_looking,
)

# A command's argument: quoted, it may hold spaces (a passphrase: `-a 'harbor quindim lantern'`).
_ARG = r"(?P<q>[\"'])?(?P<value>(?(q)[^\"'\n]{1,200}|[^\s\"']+))(?(q)(?P=q))"


def _spaced_password(value: str) -> bool:
    """A password argument: a literal, and if it holds spaces, a passphrase's words."""
    return _password_literal(value) and (" " not in value or passphrase(value))


def _stored_secret(value: str) -> bool:
    """The value a secret-storing command is given: a literal that looks made, not a word, a
    number, a file (`@file`, `file://`) or a slug (`fix-token-v2`, the body of a pull request)."""
    if not literal(value, quoted=True) or value.isdigit() or value.startswith(("-", "@", "file")):
        return False
    return (
        random_looking(value)
        or any(not ch.isalnum() and ch not in "-_." for ch in value)
        or (value != value.lower() and any(ch.isdigit() for ch in value))
        or letters_password(value)
    )


COMMAND_LINES: list[tuple[str, tuple[str, ...], str, object]] = [
    (
        "a password on a command line",
        ("mysql",),
        r"\s-p(?P<q>[\"'])?(?P<value>(?(q)[^\"'\n]{4,200}|[^\s'\"]{4,}))(?(q)(?P=q))",
        _Near(("mysql",), _spaced_password),
    ),
    (
        "a password on a command line",
        ("redis-cli",),
        r"\s-a\s*" + _ARG,
        _Near(("redis-cli",), _spaced_password),
    ),
    (
        "a password on a command line",
        ("sshpass",),
        r"\s-p\s*" + _ARG,
        _Near(("sshpass",), _spaced_password),
    ),
    (
        "a password on a command line",
        ("docker login",),
        r"\s(?:-p|--password)[= ]\s*" + _ARG,
        _Near(("docker login",), _spaced_password),
    ),
    # A command that stores a secret, and the value it is given: `gh secret set X --body <value>`,
    # `az keyvault secret set ... --value <value>`, `aws ssm put-parameter --type SecureString
    # --value <value>`, `aws secretsmanager create-secret --secret-string <value>`.
    (
        "a secret on a command line",
        ("--value", "--body", "--secret-string", "--secret-value"),
        r"\s(?:--value|--body|--secret-string|--secret-value)[= \t]+(?P<q>[\"']?)(?P<value>[^\s\"']+)(?P=q)",
        _Near(
            ("secret", "securestring", "password", "token", "api-key", "api_key", "apikey"),
            _stored_secret,
        ),
    ),
    # A flag that names what it takes, then a space: `--token <value>`, `--db-password <value>`
    # (`--token=<value>` is an assignment).
    (
        "a password or key on a command line",
        # (one dash too: Java's `-storepass <value>`, Go's `-token <value>`.) Triggered by the words
        # a flag must hold, not by its dash, which nearly every text holds.
        ("token", "key", "secret", "pass", "pwd", "senha", "auth"),
        r"(?<![\w-])--?(?P<flag>[\w-]*?(?:token|key|secret|password|passwd|pass|pwd|senha|auth))[ \t]+(?P<q>[\"']?)"
        r"(?P<value>[^\s\"']+)(?P=q)",
        lambda v, match: (
            random_looking(v)
            if match.group("flag").lower().endswith("key")
            else literal(
                v, password=match.group("flag").lower().endswith(("password", "passwd", "pass", "pwd", "senha"))
            )
        ),
    ),
    # A short flag then a machine-made value: `az login -p <secret>`, `doctl auth init -t <token>`.
    (
        "a password or key on a command line",
        (" -p ", " -t ", " -a ", " -k "),
        r" -[ptakPTAK] +(?P<q>[\"']?)(?P<value>[A-Za-z0-9+/=_.~-]{16,}+)(?P=q)",
        _random_key,
    ),
    # A user then a password as flags: `-u admin -p <password>` (az, docker, mysql, sshpass alike).
    (
        "a password on a command line",
        (" -u ",),  # (lowercased: `-U sa -P ...` too)
        r"\s-[uU][ \t]+[\"']?[^\s\"']+[\"']?[ \t]+-[pP][ \t]*(?P<q>[\"']?)(?P<value>[^\s\"']+)(?P=q)",
        lambda v: _password_literal(v) and not all(ch.isdigit() or ch in ".:/-," for ch in v),
    ),
    # PowerShell's plain text made a secure string: `ConvertTo-SecureString '<password>' -AsPlainText`.
    (
        "a password on a command line",
        ("convertto-securestring",),
        r"(?i)ConvertTo-SecureString[ \t]+(?:-String[ \t]+)?(?P<q>[\"'])(?P<value>[^\"'\n]+)(?P=q)",
        lambda v: literal(v, quoted=True, password=True),
    ),
    # A secret piped into a login: `echo <token> | gh auth login --with-token`.
    (
        "a password or key on a command line",
        ("echo",),
        r"\becho[ \t]+(?:-[neE]{1,3}[ \t]+)?(?P<q>[\"']?)(?P<value>[^\s\"'|]+)(?P=q)[ \t]*\|[^\n|]*"
        r"(?:--with-token|--password-stdin|\blogin\b|\bsudo[ \t]+-S\b|\bchpasswd\b|\bpasswd\b)",
        _password_literal,
    ),
    # The same given on a here-string: `docker login -u ci --password-stdin <<< '<password>'`.
    (
        "a password or key on a command line",
        ("<<<",),
        r"(?:--with-token|--password-stdin|\blogin\b|\bsudo[ \t]+-S\b|\bchpasswd\b|\bpasswd[ \t]+--stdin)"
        r"[^\n<]{0,200}<<<[ \t]*" + _ARG,
        _spaced_password,
    ),
    # `npm config set //registry/:_authToken <token>`, `yarn config set npmAuthToken <token>`.
    (
        "a password or key assignment",
        ("config set",),
        r"(?i)\bconfig[ \t]+set[ \t]+(?:\S*?(?:token|password|secret|key|auth)\S*)[ \t]+(?P<q>[\"']?)"
        r"(?P<value>[^\s\"']+)(?P=q)",
        lambda v: literal(v, quoted=True) and not v.startswith("-"),
    ),
    (
        "a password or key assignment",
        ("requirepass", "masterauth"),
        r"\b(?:requirepass|masterauth)\s+(?P<q>[\"']?)(?P<value>[^\s\"']+)(?P=q)",
        literal,
    ),
    # htpasswd's and mosquitto_passwd's batch mode: `htpasswd -b[c] <file> <user> <password>`.
    (
        "a password on a command line",
        ("htpasswd", "mosquitto_passwd"),
        r"\b(?:htpasswd|mosquitto_passwd)(?P<flag>(?:[ \t]+-[A-Za-z]{1,6}){1,4})[ \t]+[^\s-]\S{0,200}[ \t]+[\"']?[\w.@-]{1,64}[\"']?[ \t]+"
        + _ARG,
        lambda v, match: "b" in match.group("flag") and _spaced_password(v),
    ),
    # Samba's tools take the password after the user and a `%`: `smbclient -U 'CORP\\ana%<password>'`.
    (
        "a password on a command line",
        ("%",),
        r"(?:\s-U[ \t]*|--user(?:name)?[= ])[\"']?(?:[\w.-]{1,64}\\{1,2})?[\w.@$-]{1,64}%(?P<value>[^\s\"']{1,200})",
        _password_literal,
    ),
    # Windows-style flags, as xfreerdp and rdesktop take them: `/u:<user> /p:<password>`.
    (
        "a password on a command line",
        ("/p:", "/password:"),
        r"(?<![\w/])/(?:p|password):" + _ARG,
        _Near(("/u:", "/d:", "rdp", "/v:"), _spaced_password),
    ),
    # Commands that set a user's password, given the user and then the password: `net user <name>
    # <password>`, `rabbitmqctl add_user <name> <password>`, `net use ... /user:<name> <password>`.
    (
        "a password on a command line",
        ("net user", "rabbitmqctl", "/user:"),
        r"(?i)(?:\bnet[ \t]+user|\brabbitmqctl[ \t]+(?:add_user|change_password)|\bnet[ \t]+use\b[^\n]{0,200}?/user:)"
        r"[ \t]*[\"']?[\w.@\\-]{1,64}[\"']?[ \t]+" + _ARG,
        _spaced_password,
    ),
    # LDAP tools take the bind password after `-w`; lftp the user and password joined by a comma.
    ("a password on a command line", ("ldap",), r"\s-w[ \t]+" + _ARG, _Near(("ldap",), _spaced_password)),
    (
        "a password on a command line",
        ("lftp",),
        r"\s-u[ \t]+[\"']?[^\s,\"']{1,64},(?P<value>[^\s\"']{1,200})",
        _Near(("lftp",), _password_literal),
    ),
    # Oracle's tools: `sqlplus <user>/<password>@<database>`.
    (
        "a password on a command line",
        ("sqlplus", "sqlldr", "expdp", "impdp", "rman"),
        r"\b(?:sqlplus|sqlldr|expdp|impdp|rman)(?:[ \t]+-\w+)*[ \t]+[\"']?[\w$#.]{1,30}/"
        r"(?P<value>[^\s@/\"']{1,200})@",
        _password_literal,
    ),
]
