"""Settings and paths: the one module that reads the environment.

Every knob is a `MEMORY_GATE_*` variable with a default that works (README lists them). The
variables Claude Code sets for its hooks and servers (`CLAUDE_PROJECT_DIR`,
`CLAUDE_CODE_SESSION_ID`) are read here too, so the rest of the package takes plain values.

A project's database lives at `$MEMORY_GATE_HOME/projects/<key>/memory/memory.db`, `<key>`
being Claude Code's own name for the project folder, so memory sits beside Claude Code's
transcripts of the same project.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_EMBED_MODEL = "bge-m3"
# bge-m3 puts texts on one subject closer than this cosine distance; other models need their own.
DEFAULT_MAX_DISTANCE = 0.55


class ConfigError(ValueError):
    """A setting holds a value memory-gate cannot use; the message names the variable."""


@dataclass(frozen=True)
class Settings:
    home: Path
    project_dir: Path
    cwd: Path
    session_id: str | None
    database: Path | None
    embed_url: str | None
    embed_model: str
    max_distance: float


def load(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> Settings:
    env = os.environ if environ is None else environ
    here = Path(cwd if cwd is not None else os.getcwd()).absolute()
    home = Path(env.get("MEMORY_GATE_HOME") or Path.home() / ".claude").expanduser().absolute()
    project = env.get("CLAUDE_PROJECT_DIR")
    database = env.get("MEMORY_GATE_DB")
    return Settings(
        home=home,
        project_dir=Path(project).expanduser().absolute() if project else here,
        cwd=here,
        session_id=env.get("CLAUDE_CODE_SESSION_ID") or None,
        database=Path(database).expanduser().absolute() if database else None,
        embed_url=(env.get("MEMORY_GATE_EMBED_URL") or "").strip() or None,
        embed_model=(env.get("MEMORY_GATE_EMBED_MODEL") or "").strip() or DEFAULT_EMBED_MODEL,
        max_distance=_max_distance(env.get("MEMORY_GATE_MAX_DISTANCE")),
    )


def _max_distance(raw: str | None) -> float:
    if raw is None or not raw.strip():
        return DEFAULT_MAX_DISTANCE
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0.0 < value <= 2.0:
        raise ConfigError(
            f"MEMORY_GATE_MAX_DISTANCE={raw!r} is not a cosine distance: "
            f"set a number above 0 and at most 2 (default {DEFAULT_MAX_DISTANCE} for bge-m3)"
        )
    return value


def project_key(folder: Path) -> str:
    """Claude Code's name for a project folder: the absolute path, every character other than a
    letter or digit turned into '-' (so '/home/me/my.app' is '-home-me-my-app')."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(Path(folder).absolute()))


def database_for(home: Path, folder: Path) -> Path:
    return home / "projects" / project_key(folder) / "memory" / "memory.db"


def find_database(settings: Settings) -> Path:
    """The database this session uses: `MEMORY_GATE_DB` when set; else the nearest existing one
    for the working folder or a folder above it; else where the project root's will be created."""
    if settings.database is not None:
        return settings.database
    for folder in (settings.cwd, *settings.cwd.parents):
        candidate = database_for(settings.home, folder)
        if candidate.exists():
            return candidate
    return database_for(settings.home, settings.project_dir)
