"""What a text must hold before any credential shape is worth running on it.

Each shape (gate.credentials.shapes) names its triggers, lowercase substrings one of which every
match holds, and each match also holds a run of consecutive token characters (RUN: ASCII letters,
digits and `+/=_.~-`) as long as its pattern forces: a Twilio token `AC` and 32 hex digits is a
run of 34, `password=hunter2` may be a run of none; and most hold one of a few strings (an `=` or
a `:`, a quote, an upper-case `PASSWORD`). So a text can hold a credential only if it holds a
trigger one of whose shapes' matches it could hold: a run as long as that shape's, and one of its
strings (gate.credentials.needs). `quiet` says when not: first by each trigger's NEED, the
shortest run of the shapes it triggers, then shape by shape. Most prompts hold a trigger (`-`,
`ac`, `%`), but few could hold a match of its shapes: for them no pattern runs, and neither `re`
nor the shapes are imported, which cost the prompt hook more than all its other work.

FILED is generated from the shapes (tests/test_credential_triggers.py derives each shape's needs
from its pattern, and prints FILED afresh when a shape changes): a trigger or a shape missing
here, or a NEED longer than its patterns force, would let a credential through, and the test
fails. Standard library only; this module runs on every prompt.
"""

# The characters of a run: those of the widest token class the shapes use, [A-Za-z0-9+/=_.~-],
# and the four others that match an ASCII letter when a pattern ignores case (İ ı ſ K).
RUN = "+-./0123456789=ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~\u0130\u0131\u017f\u212a"

# Every trigger with its NEED and the places of the shapes it triggers in gate.credentials.needs.ALL
# (-1: what is found without a shape, a table's column or a .netrc entry), filed under its rarest
# character (the character least frequent in English prose: a text holding a trigger holds each
# of its characters, so a trigger is searched for only in a text holding that one).
FILED: dict[str, dict[str, tuple[int, tuple[int, ...]]]] = {
    "-": {
        " -a ": (16, (74,)),
        " -p ": (16, (74,)),
        " -t ": (16, (74,)),
        " -u ": (2, (75,)),
        "-": (33, (56,)),
        "--body": (4, (72,)),
        "--secret-string": (4, (72,)),
        "--secret-value": (4, (72,)),
        "--value": (4, (72,)),
        "-pat": (0, (93, 100, 106, 107, 108, 109)),
        "-us": (35, (27,)),
        "access-": (16, (53,)),
        "api-": (29, (44,)),
        "cfpat-": (16, (53,)),
        "convertto-securestring": (22, (76,)),
        "glagent-": (21, (7,)),
        "glcbt-": (21, (7,)),
        "gldt-": (21, (7,)),
        "glffct-": (21, (7,)),
        "glft-": (21, (7,)),
        "glimt-": (21, (7,)),
        "gloas-": (21, (7,)),
        "glpat-": (21, (7,)),
        "glptt-": (21, (7,)),
        "glrt-": (21, (7,)),
        "glsoat-": (21, (7,)),
        "ico-": (23, (52,)),
        "pat-": (16, (53,)),
        "pul-": (23, (52,)),
        "pypi-": (58, (20,)),
        "redis-cli": (2, (69,)),
    },
    "k": {
        " -k ": (16, (74,)),
        "account-key": (40, (35,)),
        "age-secret-key-": (74, (3,)),
        "akcp": (29, (44,)),
        "akia": (16, (4, 57)),
        "akid": (33, (49,)),
        "authtoken": (47, (51,)),
        "docker login": (1, (71,)),
        "flwseck": (23, (52,)),
        "hooks.slack.com": (21, (13,)),
        "hrku-": (23, (52,)),
        "key": (0, (-1, 22, 73, 93, 94, 96, 99, 100, 101, 105, 106, 107, 108, 109, 110, 114, 121, 122, 123, 125, 127)),
        "key-": (36, (26,)),
        "ngrok": (47, (51,)),
        "nrak-": (23, (52,)),
        "okta": (42, (24,)),
        "pmak-": (23, (52,)),
        "private key": (10, (0,)),
        "psk": (0, (93, 100, 101, 106, 107, 108, 109)),
        "sk-": (21, (9, 55)),
        "sk-ant-": (39, (8,)),
        "token": (
            0,
            (-1, 15, 22, 73, 93, 94, 96, 99, 100, 101, 105, 106, 107, 108, 109, 110, 114, 115, 121, 122, 123, 125, 127),
        ),
        "tskey-": (16, (53,)),
        "webhook.office.com": (122, (48,)),
    },
    "!": {"!aq": (29, (44,))},
    "$": {"$aact_": (16, (53,))},
    "%": {"%": (2, (82,))},
    "&": {"&key=": (20, (113,))},
    "/": {"/": (32, (54,)), "/p:": (2, (83,)), "/password:": (2, (83,)), "/user:": (4, (84,))},
    "0": {
        "0.": (59, (47,)),
        "dt0c01.": (16, (53,)),
        "k00": (27, (45,)),
        "ls0tls1crudjti": (34, (2,)),
        "sq0": (23, (52,)),
    },
    "1": {"1//0": (64, (41,)), "atlasv1": (23, (52,)), "fm1": (41, (46,)), "v1.0-": (29, (44,))},
    "4": {"401": (20, (92,)), "403": (20, (92,))},
    ":": {
        ":*:": (0, (60,)),
        "://": (2, (58,)),
        ":5432:": (0, (60,)),
        ":aa": (35, (29,)),
        ":apa91b": (16, (53,)),
        "jdbc:oracle": (6, (59,)),
        'kind: "secret"': (10, (66,)),
        "kind: 'secret'": (10, (66,)),
        "kind: secret": (10, (66,)),
        "pin:": (2, (95,)),
        "private-lines:": (16, (1,)),
    },
    ";": {"; password=": (2, (112,)), "; pwd=": (2, (112,)), ";password=": (2, (112,)), ";pwd=": (2, (112,))},
    "<": {"<<<": (4, (78,))},
    "?": {"?key=": (20, (113,))},
    "@": {"@tcp(": (3, (89,)), "@udp(": (3, (89,)), "@unix(": (3, (89,))},
    "_": {
        "_": (33, (50, 56)),
        "_connect": (3, (88,)),
        "_live_": (25, (42,)),
        "_pat": (0, (93, 100, 106, 107, 108, 109)),
        "_prod_": (25, (42,)),
        "_sandbox_": (25, (42,)),
        "_test_": (25, (42,)),
        "_v1_": (71, (31,)),
        "access_token$": (29, (44,)),
        "app_usr-": (16, (53,)),
        "ccipat_": (16, (53,)),
        "ck_": (33, (49,)),
        "client_secret_": (16, (53,)),
        "cs_": (33, (49,)),
        "dckr_pat_": (23, (52,)),
        "figd_": (16, (53,)),
        "gho_": (40, (5,)),
        "ghp_": (40, (5,)),
        "ghr_": (40, (5,)),
        "ghs_": (40, (5,)),
        "ghu_": (40, (5,)),
        "github_pat_": (61, (6,)),
        "glc_": (23, (52,)),
        "glsa_": (23, (52,)),
        "gsk_": (23, (52,)),
        "hf_": (33, (28,)),
        "lin_": (23, (52,)),
        "mosquitto_passwd": (8, (81,)),
        "nfp_": (16, (53,)),
        "npm_": (40, (19,)),
        "ntn_": (23, (52,)),
        "ops_eyj": (29, (44,)),
        "pk_": (33, (49,)),
        "pscale_": (16, (53,)),
        "rk_": (17, (10,)),
        "rubygems_": (16, (53,)),
        "sb_secret_": (28, (25,)),
        "sbp_": (28, (25,)),
        "secret_": (23, (52,)),
        "shpat_": (33, (32,)),
        "shpca_": (33, (32,)),
        "shppa_": (33, (32,)),
        "shpss_": (33, (32,)),
        "sk_": (17, (10, 43)),
        "sqa_": (16, (53,)),
        "sqp_": (16, (53,)),
        "squ_": (16, (53,)),
        "whsec_": (30, (11,)),
    },
    "3": {"a3t": (16, (4,)), "iqojb3jpz2lux2vj": (80, (40,))},
    "a": {"aaaaaaaaaaaaaaaaaaaa": (16, (53,)), "atatt": (23, (52,)), "eaa": (23, (52,))},
    "b": {
        "abia": (16, (4,)),
        "atbb": (16, (53,)),
        "basic ": (14, (91,)),
        "bearer": (20, (64,)),
        "bot": (59, (15,)),
        "forbidden": (20, (92,)),
    },
    "c": {
        "ac": (34, (67,)),
        "acca": (16, (4,)),
        "access": (5, (124,)),
        "acesso": (5, (124,)),
        "carteira": (3, (130,)),
        "cio": (33, (49,)),
        "cred": (16, (99,)),
        "credencia": (5, (124,)),
        "credencial": (0, (-1,)),
        "credential": (0, (-1, 93, 96, 100, 101, 105, 106, 107, 108, 109, 121, 122, 124)),
        "creds": (5, (124,)),
        "discord": (41, (14, 15)),
        "echo": (4, (77,)),
        "secret": (
            0,
            (-1, 22, 57, 73, 93, 94, 96, 99, 100, 101, 105, 106, 107, 108, 109, 110, 121, 122, 123, 125, 127),
        ),
    },
    "=": {"accountkey=": (40, (35,)), "pin=": (2, (95,)), "sharedaccesskey=": (40, (35,)), "sig=": (4, (36,))},
    "z": {
        "aiza": (39, (16,)),
        "authorization": (13, (61, 62, 63)),
        "autorizad": (20, (92,)),
        "ezak": (29, (44,)),
        "eztk": (29, (44,)),
        "fwogzxivyxdze": (80, (40,)),
    },
    "(": {
        "api(": (20, (90,)),
        "client(": (20, (90,)),
        "password (": (8, (118,)),
        "password(": (8, (118,)),
        "sdk(": (20, (90,)),
        "service(": (20, (90,)),
    },
    "p": {
        "appid": (0, (93, 94, 100, 106, 107, 108, 109)),
        "dapi": (36, (33,)),
        "dp.audit.": (23, (52,)),
        "dp.ct.": (23, (52,)),
        "dp.pt.": (23, (52,)),
        "dp.sa.": (23, (52,)),
        "dp.scim.": (23, (52,)),
        "dp.st.": (23, (52,)),
        "http": (1, (65,)),
        "impdp": (4, (87,)),
        "ldap": (2, (85,)),
        "lftp": (2, (86,)),
        "pass": (0, (-1, 73, 93, 94, 95, 97, 98, 100, 101, 104, 106, 107, 108, 109, 111, 116, 119, 120, 129)),
        "passphrase": (0, (128,)),
        "pat": (3, (52, 96, 105, 121, 125)),
        "pdo": (3, (88,)),
        "pin ": (2, (95,)),
        "sshpass": (2, (70,)),
    },
    "s": {"asia": (16, (4, 57)), "it is": (20, (126,))},
    "u": {
        "auth": (0, (73, 93, 100, 101, 106, 107, 108, 109)),
        "curl": (1, (65,)),
        "net user": (4, (84,)),
        "unauthori": (20, (92,)),
    },
    "w": {
        "aws": (40, (57,)),
        "htpasswd": (8, (81,)),
        "passwd": (0, (-1, 128)),
        "password": (0, (-1, 105, 123, 125, 128)),
        "pw": (0, (95, 97, 104, 116, 119, 128, 129)),
        "pwd": (0, (-1, 73, 93, 94, 100, 101, 106, 107, 108, 109, 120)),
        "ssws": (20, (23,)),
        "twilio": (34, (22,)),
        "wallet": (3, (130,)),
        "wget": (1, (65,)),
    },
    "v": {
        "chave": (0, (-1, 96, 99, 105, 110, 115, 121, 122, 123, 125, 127)),
        "cmvmdgtu": (29, (44,)),
        "hvb.": (28, (30,)),
        "hvr.": (28, (30,)),
        "hvs.": (28, (30,)),
        "recovery phrase": (3, (130,)),
        "recovery words": (3, (130,)),
        "valor": (0, (-1,)),
        "value": (0, (-1, 102)),
        "variable": (8, (103,)),
    },
    "g": {
        "config set": (6, (79,)),
        "getconnection": (3, (88,)),
        "login": (5, (124,)),
        "segredo": (0, (-1, 96, 99, 110, 121, 122, 123, 125, 127)),
        "sg.": (36, (21,)),
        "sig": (0, (93,)),
    },
    "9": {"dg9ro": (33, (49,))},
    "j": {"django-insecure-": (16, (37,)), "eyj": (32, (39,)), "sk.eyj": (47, (38,))},
    "x": {
        "expdp": (4, (87,)),
        "gocspx-": (31, (17,)),
        "pplx-": (23, (52,)),
        "xai-": (23, (52,)),
        "xapp-": (8, (12,)),
        "xkeysib-": (16, (53,)),
        "xox": (8, (12,)),
    },
    "2": {"fm2": (41, (46,)), "lsv2_": (16, (53,)), "oy2": (23, (52,)), "ya29.": (35, (18,))},
    "f": {"identified": (10, (117,))},
    "'": {"it's": (20, (126,)), "that's": (20, (126,))},
    "l": {"ltai": (16, (53,))},
    "m": {"masterauth": (10, (80,)), "mnemonic": (3, (130,)), "rman": (4, (87,)), "semente": (3, (130,))},
    "q": {
        "mysql": (2, (68,)),
        "mysqli": (3, (88,)),
        "rabbitmqctl": (4, (84,)),
        "requirepass": (10, (80,)),
        "sqlldr": (4, (87,)),
        "sqlplus": (4, (87,)),
    },
    ">": {"pat>": (1, (101,))},
    "~": {"q~": (2, (34,))},
    "8": {"r8_": (23, (52,))},
    "d": {"seed": (3, (130,))},
    "h": {
        "senha": (
            0,
            (-1, 73, 93, 95, 97, 100, 101, 104, 105, 106, 107, 108, 109, 111, 116, 119, 120, 123, 125, 128, 129),
        ),
        "that is": (20, (126,)),
        "this is": (20, (126,)),
    },
    ".": {"sl.": (23, (52,)), "st.": (29, (44,))},
    "y": {"sntry": (23, (52,))},
    "é": {"é a": (20, (126,)), "é o": (20, (126,))},
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
    none whose shapes' runs its own runs can meet, or none of whose shapes' strings it holds
    (gate.credentials.needs, loaded only then)."""
    if not found:
        return True
    longest = longest_run(text) if min(_ALL[trigger][0] for trigger in found) > 0 else -1
    if longest >= 0 and all(_ALL[trigger][0] > longest for trigger in found):
        return True
    from gate.credentials import needs

    if longest < 0:
        longest = longest_run(text)
    for trigger in found:
        for place in _ALL[trigger][1]:
            if place < 0:
                return False
            run, strings = needs.ALL[place]
            if run <= longest and (not strings or any(string in text for string in strings)):
                return False
    return True
