"""What a text must hold before any credential shape is worth running on it.

Each shape (gate.credentials.shapes) names its triggers, lowercase substrings one of which every
match holds, and each match also holds a run of consecutive token characters (RUN: ASCII letters,
digits and `+/=_.~-`) as long as its pattern forces: a Twilio token `AC` and 32 hex digits is a
run of 34, `password=hunter2` may be a run of none. So a text can hold a credential only if it
holds a trigger whose NEED, the shortest run of any shape it triggers, is no longer than the
longest run in the text (`quiet` says when not). Most prompts hold a trigger (`-`, `ac`, `%`), but
few hold a trigger of a shape their runs can meet: for them no pattern runs, and neither `re` nor
the shapes are imported, which cost the prompt hook more than all its other work.

FILED is generated from the shapes (tests/test_credential_triggers.py derives each shape's run
from its pattern, and prints FILED afresh when a shape changes): a trigger whose shape is missing
here, or a NEED longer than its pattern forces, would let a credential through, and the test fails.
Standard library only, and nothing imported: this module runs on every prompt.
"""

# The characters of a run: those of the widest token class the shapes use, [A-Za-z0-9+/=_.~-],
# and the four others that match an ASCII letter when a pattern ignores case (İ ı ſ K).
RUN = "+-./0123456789=ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~\u0130\u0131\u017f\u212a"

# Every trigger with its NEED, filed under its rarest character (the character least frequent in
# English prose: a text holding a trigger holds each of its characters, so a trigger is searched
# for only in a text holding that one).
FILED: dict[str, dict[str, int]] = {
    "-": {
        " -a ": 16,
        " -p ": 16,
        " -t ": 16,
        " -u ": 2,
        "-": 33,
        "--body": 4,
        "--secret-string": 4,
        "--secret-value": 4,
        "--value": 4,
        "-pat": 0,
        "-us": 35,
        "access-": 16,
        "api-": 29,
        "cfpat-": 16,
        "convertto-securestring": 22,
        "glagent-": 21,
        "glcbt-": 21,
        "gldt-": 21,
        "glffct-": 21,
        "glft-": 21,
        "glimt-": 21,
        "gloas-": 21,
        "glpat-": 21,
        "glptt-": 21,
        "glrt-": 21,
        "glsoat-": 21,
        "ico-": 23,
        "pat-": 16,
        "pul-": 23,
        "pypi-": 58,
        "redis-cli": 2,
    },
    "k": {
        " -k ": 16,
        "account-key": 40,
        "age-secret-key-": 74,
        "akcp": 29,
        "akia": 16,
        "akid": 33,
        "authtoken": 47,
        "docker login": 1,
        "flwseck": 23,
        "hooks.slack.com": 21,
        "hrku-": 23,
        "key": 0,
        "key-": 36,
        "ngrok": 47,
        "nrak-": 23,
        "okta": 42,
        "pmak-": 23,
        "private key": 10,
        "psk": 0,
        "sk-": 21,
        "sk-ant-": 39,
        "token": 0,
        "tskey-": 16,
        "webhook.office.com": 122,
    },
    "!": {"!aq": 29},
    "$": {"$aact_": 16},
    "%": {"%": 2},
    "&": {"&key=": 20},
    "/": {"/": 32, "/p:": 2, "/password:": 2, "/user:": 4},
    "0": {"0.": 59, "dt0c01.": 16, "k00": 27, "ls0tls1crudjti": 34, "sq0": 23},
    "1": {"1//0": 64, "atlasv1": 23, "fm1": 41, "v1.0-": 29},
    "4": {"401": 20, "403": 20},
    ":": {
        ":*:": 0,
        "://": 2,
        ":5432:": 0,
        ":aa": 35,
        ":apa91b": 16,
        "jdbc:oracle": 6,
        'kind: "secret"': 10,
        "kind: 'secret'": 10,
        "kind: secret": 10,
        "pin:": 2,
        "private-lines:": 16,
    },
    ";": {"; password=": 2, "; pwd=": 2, ";password=": 2, ";pwd=": 2},
    "<": {"<<<": 4},
    "?": {"?key=": 20},
    "@": {"@tcp(": 3, "@udp(": 3, "@unix(": 3},
    "_": {
        "_": 33,
        "_connect": 3,
        "_live_": 25,
        "_pat": 0,
        "_prod_": 25,
        "_sandbox_": 25,
        "_test_": 25,
        "_v1_": 71,
        "access_token$": 29,
        "app_usr-": 16,
        "ccipat_": 16,
        "ck_": 33,
        "client_secret_": 16,
        "cs_": 33,
        "dckr_pat_": 23,
        "figd_": 16,
        "gho_": 40,
        "ghp_": 40,
        "ghr_": 40,
        "ghs_": 40,
        "ghu_": 40,
        "github_pat_": 61,
        "glc_": 23,
        "glsa_": 23,
        "gsk_": 23,
        "hf_": 33,
        "lin_": 23,
        "mosquitto_passwd": 8,
        "nfp_": 16,
        "npm_": 40,
        "ntn_": 23,
        "ops_eyj": 29,
        "pk_": 33,
        "pscale_": 16,
        "rk_": 17,
        "rubygems_": 16,
        "sb_secret_": 28,
        "sbp_": 28,
        "secret_": 23,
        "shpat_": 33,
        "shpca_": 33,
        "shppa_": 33,
        "shpss_": 33,
        "sk_": 17,
        "sqa_": 16,
        "sqp_": 16,
        "squ_": 16,
        "whsec_": 30,
    },
    "3": {"a3t": 16, "iqojb3jpz2lux2vj": 80},
    "a": {"aaaaaaaaaaaaaaaaaaaa": 16, "atatt": 23, "eaa": 23},
    "b": {"abia": 16, "atbb": 16, "basic ": 14, "bearer": 20, "bot": 59, "forbidden": 20},
    "c": {
        "ac": 34,
        "acca": 16,
        "access": 5,
        "acesso": 5,
        "carteira": 3,
        "cio": 33,
        "cred": 16,
        "credencia": 5,
        "credencial": 0,
        "credential": 0,
        "creds": 5,
        "discord": 41,
        "echo": 4,
        "secret": 0,
    },
    "=": {"accountkey=": 40, "pin=": 2, "sharedaccesskey=": 40, "sig=": 4},
    "z": {"aiza": 39, "authorization": 13, "autorizad": 20, "ezak": 29, "eztk": 29, "fwogzxivyxdze": 80},
    "(": {"api(": 20, "client(": 20, "password (": 8, "password(": 8, "sdk(": 20, "service(": 20},
    "p": {
        "appid": 0,
        "dapi": 36,
        "dp.audit.": 23,
        "dp.ct.": 23,
        "dp.pt.": 23,
        "dp.sa.": 23,
        "dp.scim.": 23,
        "dp.st.": 23,
        "http": 1,
        "impdp": 4,
        "ldap": 2,
        "lftp": 2,
        "pass": 0,
        "passphrase": 0,
        "pat": 3,
        "pdo": 3,
        "pin ": 2,
        "sshpass": 2,
    },
    "s": {"asia": 16, "it is": 20},
    "u": {"auth": 0, "curl": 1, "net user": 4, "unauthori": 20},
    "w": {
        "aws": 40,
        "htpasswd": 8,
        "passwd": 0,
        "password": 0,
        "pw": 0,
        "pwd": 0,
        "ssws": 20,
        "twilio": 34,
        "wallet": 3,
        "wget": 1,
    },
    "v": {
        "chave": 0,
        "cmvmdgtu": 29,
        "hvb.": 28,
        "hvr.": 28,
        "hvs.": 28,
        "recovery phrase": 3,
        "recovery words": 3,
        "valor": 0,
        "value": 0,
        "variable": 8,
    },
    "g": {"config set": 6, "getconnection": 3, "login": 5, "segredo": 0, "sg.": 36, "sig": 0},
    "9": {"dg9ro": 33},
    "j": {"django-insecure-": 16, "eyj": 32, "sk.eyj": 47},
    "x": {"expdp": 4, "gocspx-": 31, "pplx-": 23, "xai-": 23, "xapp-": 8, "xkeysib-": 16, "xox": 8},
    "2": {"fm2": 41, "lsv2_": 16, "oy2": 23, "ya29.": 35},
    "f": {"identified": 10},
    "'": {"it's": 20, "that's": 20},
    "l": {"ltai": 16},
    "m": {"masterauth": 10, "mnemonic": 3, "rman": 4, "semente": 3},
    "q": {"mysql": 2, "mysqli": 3, "rabbitmqctl": 4, "requirepass": 10, "sqlldr": 4, "sqlplus": 4},
    ">": {"pat>": 1},
    "~": {"q~": 2},
    "8": {"r8_": 23},
    "d": {"seed": 3},
    "h": {"senha": 0, "that is": 20, "this is": 20},
    ".": {"sl.": 23, "st.": 29},
    "y": {"sntry": 23},
    "é": {"é a": 20, "é o": 20},
}

_ALL = {trigger: need for triggers in FILED.values() for trigger, need in triggers.items()}
TRIGGERS = frozenset(_ALL)
_FILED = tuple(FILED.items())
# Bytes of RUN kept, every other byte a space; the non-ASCII ones of RUN become `a` before.
_BYTES = bytes(byte if chr(byte) in RUN else 32 for byte in range(256))
_WIDE = {ord(ch): "a" for ch in RUN if not ch.isascii()}


def present(low: str) -> set[str]:
    """The triggers the lowercased text holds. Every fact a search returns is redacted, so this
    runs a dozen times per search: a test of one character per file, then a search for the
    triggers filed under those the text holds (about half the time of a search for each
    trigger, on the claude-mem-lite observations and LoCoMo's turns), and no regex (an
    alternation of a hundred triggers is slower in `re` than the substring tests, and the hooks
    must not import it)."""
    return {trigger for rare, triggers in _FILED if rare in low for trigger in triggers if trigger in low}


def longest_run(text: str) -> int:
    """The length of the longest run of RUN characters in `text`."""
    if text.isascii():
        data = text.encode("ascii")
    else:
        data = text.translate(_WIDE).encode("ascii", "replace")  # any other character: `?`, no RUN
    return max(map(len, data.translate(_BYTES).split()), default=0)


def quiet(text: str, found: set[str]) -> bool:
    """Whether no shape can match `text`, which holds the triggers `found` (`present`): none, or
    none whose shapes' runs its own runs can meet."""
    if not found:
        return True
    need = min(_ALL[trigger] for trigger in found)
    return need > 0 and longest_run(text) < need
