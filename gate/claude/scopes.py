"""Where an install of memory-gate into Claude Code's settings goes, and what it remembers: a
scope's files (the user's settings and state file, or a project's, keyed by its git root as
Claude Code keys it), the record of what install added (so that uninstall takes out that and
nothing else), and the settings files where the memory-gate plugin is enabled. Apart from
gate.claude.install, which merges memory-gate's entries into those files and writes them: this
is where they are, not what goes in.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from gate.claude.settingsfile import Document, FileError, Path_, make_dirs, write_atomic


class InstallError(Exception):
    """A file install or uninstall cannot safely change; the message says what to do."""


# -- scopes -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scope:
    """Where one install goes: the settings file for hooks and rules, and where in Claude Code's
    state file the server goes."""

    label: str
    settings: Path
    state: Path
    server_at: Path_
    root: Path | None = None  # the project's folder, for a project install


def user_scope(claude_dir: str | os.PathLike, state_file: str | os.PathLike) -> Scope:
    return Scope("your user (every project)", Path(claude_dir) / "settings.json", Path(state_file), ())


def project_root(folder: str | os.PathLike) -> Path:
    """The folder Claude Code keys a project by: the git root above `folder`, else the folder
    (Claude Code 2.1.328 looks up local-scope servers by the git root from any subfolder)."""
    start = Path(os.path.realpath(folder))
    if not start.is_dir():
        raise InstallError(f"--project {folder}: no such folder")
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start


def project_scope(folder: str | os.PathLike, state_file: str | os.PathLike) -> Scope:
    root = project_root(folder)
    given = Path(os.path.realpath(folder))
    label = f"the project {root}" + ("" if root == given else f" (the git root of {given})")
    return Scope(label, root / ".claude" / "settings.local.json", Path(state_file), ("projects", str(root)), root)


# -- the record of what install created -------------------------------------------------------


def read_record(path: Path) -> dict:
    """{file: {"added": [JSON Pointers to what install added, "" for the file], "dirs": [folders it
    created, deepest first]}}; {} when absent or unreadable (uninstall then takes out every
    memory-gate entry, and the containers that leaves empty)."""
    try:
        files = json.loads(path.read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return files if isinstance(files, dict) else {}


def write_record(path: Path, files: dict) -> None:
    if not files:
        path.unlink(missing_ok=True)
        return
    about = "What memory-gate install added to Claude Code's files, so that memory-gate uninstall takes out that and nothing else."
    make_dirs(path.parent)
    write_atomic(path, (json.dumps({"about": about, "files": files}, indent=2) + "\n").encode(), 0o600)


# -- the plugin and this install together -----------------------------------------------------

PLUGIN = "memory-gate"


def plugin_enabled_in(paths: list[Path]) -> list[Path]:
    """The settings files among `paths` that enable the memory-gate plugin (`enabledPlugins`,
    where `claude plugin install` turns it on, keyed `memory-gate@<marketplace>`)."""
    found = []
    for path in paths:
        try:
            enabled = Document.read(path).data.get("enabledPlugins")
        except FileError:
            continue
        if isinstance(enabled, dict) and any(
            isinstance(key, str) and key.split("@", 1)[0] == PLUGIN and value is True for key, value in enabled.items()
        ):
            found.append(path)
    return found


def plugin_settings(claude_dir: str | os.PathLike, project: Path | None) -> list[Path]:
    """Where the plugin may be enabled for a session in `project`: the user's settings and the
    project's shared and personal ones."""
    paths = [Path(claude_dir) / "settings.json"]
    if project is not None:
        paths += [project / ".claude" / "settings.json", project / ".claude" / "settings.local.json"]
    return paths
