"""Which team's memory a project shares, and a member's connection to it.

A project's facts are a team's when `MEMORY_GATE_DB` is a PostgreSQL URL, or when `memory-gate
team connect URL` wrote the setting beside the project's local database (`memory.team.json`), so
that one developer can use a team's memory for one repository and a local file for another. The
turn ledger (what each turn read, was shown and owes) stays in the local file either way: the
hooks never read this module and never wait on the network.

The project's name in the team's memory is what every member's memory-gate must agree on:
`MEMORY_GATE_PROJECT`, or the name `team connect` was given, else the repository's git remote
`origin` as host and path (`github.com/acme/api`: no scheme, user, password or `.git`), which is
the same on every clone. A project with neither is refused with that mend, rather than named
after a folder that differs from machine to machine.

The setting never holds a password: `team connect` refuses a URL with one and names libpq's own
means (PGPASSWORD, ~/.pgpass, a service file).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from gate import clock, config
from gate.engine import postgres
from gate.engine.teamfacts import TeamFacts, Who, project

SOURCE_ENV = "MEMORY_GATE_DB"


@dataclass(frozen=True)
class Team:
    """A team's memory as this project uses it: where (`url`), under which name (`project`), and
    what said so (`source`: MEMORY_GATE_DB, or the setting file's path)."""

    url: str
    project: str
    source: str

    @property
    def shown(self) -> str:
        return postgres.shown(self.url)


setting_path = config.team_setting


def find(settings: config.Settings) -> Team | None:
    """The team's memory this project uses, or None for its local file alone. Raises
    config.ConfigError, naming the mend, for a setting memory-gate cannot use."""
    if settings.team_url:
        check_url(settings.team_url, SOURCE_ENV)
        name = settings.team_project or remote_name(settings.project_dir)
        if not name:
            raise config.ConfigError(
                "MEMORY_GATE_DB names a team's memory, and this project has no name there: set "
                "MEMORY_GATE_PROJECT to the name every member uses (e.g. github.com/acme/api), or give "
                "the repository a git remote named origin"
            )
        return Team(settings.team_url, name, SOURCE_ENV)
    path = setting_path(config.find_database(settings))
    try:
        with open(path, encoding="utf-8") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return None
    except PermissionError:
        if not os.access(os.path.dirname(path), os.X_OK):
            return None  # the folder cannot be entered: opening the database says so, with the mend
        raise config.ConfigError(
            f"cannot read {path} (permission denied): fix its permissions, or run "
            "`memory-gate team disconnect` to use the local memory"
        ) from None
    except OSError as error:
        raise config.ConfigError(
            f"cannot read {path} ({error.strerror}): fix its permissions, or run "
            "`memory-gate team disconnect` to use the local memory"
        ) from None
    try:
        data = json.loads(raw)
        url, name = data["url"], data["project"]
        if not (isinstance(url, str) and url and isinstance(name, str) and name):
            raise ValueError
    except (ValueError, KeyError, TypeError):
        raise config.ConfigError(
            f"{path} is not a team setting memory-gate wrote: run `memory-gate team connect URL` again, "
            "or `memory-gate team disconnect` to use the local memory"
        ) from None
    return Team(url, settings.team_project or name, path)


def check_url(url: str, where: str = "the setting") -> None:
    """A URL the setting, or MEMORY_GATE_DB (`where`), may hold: PostgreSQL's, with no password
    in it, so that no file or environment memory-gate reads spreads one."""
    from urllib.parse import parse_qs, urlsplit

    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme not in config.TEAM_SCHEMES:
        raise config.ConfigError(
            f"{postgres.shown(url)} is not a PostgreSQL URL: write it as postgresql://USER@HOST:PORT/DATABASE"
        )
    parts = urlsplit(url)
    try:
        _ = parts.port  # read for its ValueError
    except ValueError:
        raise config.ConfigError(
            f"{postgres.shown(url)} has a port that is not a number: write it as postgresql://USER@HOST:PORT/DATABASE"
        ) from None
    in_query = any(key.lower() == "password" for key in parse_qs(parts.query, keep_blank_values=True))
    if parts.password is not None or in_query:
        raise config.ConfigError(
            f"{postgres.shown(url)} ({where}) holds a password, and memory-gate never stores one: take it "
            "out of the URL and give it to libpq instead, in ~/.pgpass (HOST:PORT:DATABASE:USER:PASSWORD, "
            "mode 600), PGPASSWORD or a service file"
        )


def connect(settings: config.Settings, url: str, name: str | None) -> Team:
    """Write the setting that puts this project on the team's memory at `url`, under `name` (by
    default the git remote), after checking that the database can be reached and its schema is
    up to date. Nothing is written when it cannot."""
    check_url(url)
    name = (name or "").strip() or remote_name(settings.project_dir)
    if not name:
        raise config.ConfigError(
            f"{settings.project_dir} has no git remote named origin to name the project by: give the name "
            "every member uses, e.g. memory-gate team connect URL --project github.com/acme/api"
        )
    config.project_name(name, "--project")  # the same rules as MEMORY_GATE_PROJECT's
    conn = postgres.connect(url)
    try:
        with conn.transaction():
            project(conn, name, clock.now())
    finally:
        conn.close()
    path = setting_path(config.find_database(settings))
    # The folder and the setting are the member's alone, as the local memory's are (0700, 0600):
    # the URL names the team's server and the member's role.
    missing, folder = [], os.path.dirname(os.path.abspath(path))
    while not os.path.exists(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    for folder in reversed(missing):
        os.makedirs(folder, mode=0o700, exist_ok=True)
    temporary = f"{path}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with open(fd, "w", encoding="utf-8") as handle:
        json.dump({"url": url, "project": name}, handle, ensure_ascii=False)
        handle.write("\n")
    os.replace(temporary, path)
    return Team(url, name, path)


def disconnect(settings: config.Settings) -> str | None:
    """Remove the setting, and the member's mirror of the team's words (gate.search.mirror);
    the setting's path, or None when there was none."""
    from gate.search import mirror

    database = config.find_database(settings)
    mirror.remove(mirror.path_for(database))
    path = setting_path(database)
    try:
        os.unlink(path)
    except FileNotFoundError:
        return None
    return path


# -- the project's name, from git -------------------------------------------------------------


def _git_dir(folder: str) -> str | None:
    """The git folder of the repository holding `folder` (a worktree's .git file followed)."""
    here = os.path.abspath(folder)
    while True:
        candidate = os.path.join(here, ".git")
        if os.path.isdir(candidate):
            return candidate
        if os.path.isfile(candidate):
            try:
                with open(candidate, encoding="utf-8") as handle:
                    line = handle.readline().strip()
            except OSError:
                return None
            if line.startswith("gitdir:"):
                gitdir = os.path.join(here, line.removeprefix("gitdir:").strip())
                try:  # a worktree's config is its main repository's
                    with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as handle:
                        return os.path.normpath(os.path.join(gitdir, handle.read().strip()))
                except OSError:
                    return gitdir
            return None
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def origin_url(folder: str) -> str | None:
    """The url of the remote `origin` in the git config of the repository holding `folder`."""
    gitdir = _git_dir(folder)
    if gitdir is None:
        return None
    try:
        with open(os.path.join(gitdir, "config"), encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    inside = False
    for line in lines:
        line = line.strip()
        if line.startswith("["):
            inside = line.replace(" ", "").replace("\t", "").lower() == '[remote"origin"]'
        elif inside and "=" in line:
            key, _, value = line.partition("=")
            if key.strip().lower() == "url":
                return value.strip().strip('"') or None
    return None


def remote_name(folder: str) -> str | None:
    """The project's name from its git remote: host and path, lowercase, no scheme, user,
    password, port or `.git` (`git@github.com:Acme/API.git` and `https://tok@github.com/acme/api`
    are both `github.com/acme/api`: the forges take a repository's path in any case, so clones
    made with either spelling are one project)."""
    url = origin_url(folder)
    return name_of(url) if url else None


def name_of(url: str) -> str | None:
    if "://" in url:
        rest = url.split("://", 1)[1]
        host, _, path = rest.partition("/")
    elif ":" in url.split("/", 1)[0]:  # scp-like: [user@]host:path
        host, _, path = url.partition(":")
    else:  # a path on this machine: the same only where every member mounts it alike
        host, path = "", url
    host = host.rpartition("@")[2].split(":")[0].lower()  # no user, password or port
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")]
    path = path.rstrip("/")
    name = f"{host}/{path.lower()}" if host else path
    return name or None


# -- a member's connection ---------------------------------------------------------------------


class Member:
    """One member's connection to the project in the team's memory: opened at the first call,
    dropped when the network fails, opened again at the next call."""

    def __init__(self, team: Team, member: str, *, deadline: float = postgres.CALL_DEADLINE_S):
        self.team, self.member, self.deadline = team, member, deadline
        self._conn = None
        self._project: int | None = None

    def facts(self, session: str, tool_use_id: str | None = None) -> TeamFacts:
        """The project's facts, changed by this member in `session`. Raises postgres.Unreachable."""
        if self._conn is not None and (self._conn.closed or self._conn.broken):
            self.drop()
        if self._conn is None:
            conn = postgres.connect(self.team.url, self.member, self.deadline)
            try:
                with postgres.reaching(self.team.url, conn, self.deadline), conn.transaction():
                    self._project = project(conn, self.team.project, clock.now())
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return TeamFacts(
            self._conn, self._project, Who(self.member, session, tool_use_id), url=self.team.url, deadline=self.deadline
        )

    @property
    def conn(self):
        """The open connection, or None."""
        return self._conn

    def open_facts(self) -> TeamFacts | None:
        """The project's facts over the connection already open (None when there is none),
        for work beside the tool calls that changes no fact (embedding)."""
        if self._conn is None or self._conn.closed or self._conn.broken:
            return None
        return TeamFacts(
            self._conn, self._project, Who(self.member, "embedder"), url=self.team.url, deadline=self.deadline
        )

    def drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # a connection already lost may fail to close; it is gone either way
                pass
            self._conn, self._project = None, None

    close = drop
