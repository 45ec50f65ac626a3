"""scripts/install and scripts/uninstall, run as a new user runs them: a fresh HOME, a PATH
without ~/.local/bin, and then the checkout moved away."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from claude_harness import CLAUDE, OFFLINE_ENV, needs_claude
from conftest import REPO


def checkout_copy(root: Path) -> Path:
    """The files of this checkout that git knows (a fresh clone, with uncommitted changes)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True, text=True, check=True)
    copy = root / "checkout"
    for name in listed.stdout.splitlines():
        source = REPO / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    return copy


def fresh_env(home: Path, *extra_path: str) -> dict[str, str]:
    """An empty HOME and a PATH without ~/.local/bin; pip keeps this machine's own settings and
    cache (the fresh HOME would otherwise fetch every wheel again)."""
    path = os.pathsep.join([*extra_path, "/usr/local/bin", "/usr/bin", "/bin"])
    pip = {key: value for key, value in os.environ.items() if key.startswith("PIP_")}
    pip.setdefault("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
    return {"HOME": str(home), "PATH": path, **pip, **OFFLINE_ENV}


def test_a_python_too_old_is_refused_before_anything_is_built(tmp_path):
    fake = tmp_path / "python3.10"
    fake.write_text('#!/bin/sh\ncase "$1" in --version) echo "Python 3.10.12";; *) exit 1;; esac\n')
    fake.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    result = subprocess.run([REPO / "scripts" / "install", "--python", str(fake)], capture_output=True, text=True, env=fresh_env(home))
    assert result.returncode == 1
    assert "needs Python 3.11 or later" in result.stderr and "Python 3.10.12" in result.stderr and "Nothing was installed" in result.stderr
    assert list(home.iterdir()) == []


def test_a_claude_code_too_old_for_the_mod_is_refused_first_with_the_exact_mend(tmp_path):
    fake = tmp_path / "bin" / "claude"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\ncase "$1" in --version) echo "2.1.197 (Claude Code)";; *) exit 1;; esac\n')
    fake.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    result = subprocess.run([REPO / "scripts" / "install"], capture_output=True, text=True, env=fresh_env(home, str(fake.parent)))
    assert result.returncode == 1
    assert "PROBLEM: Claude Code 2.1.197" in result.stderr and "mods need 2.1.287 or later" in result.stderr
    assert "Mend: npm install -g @anthropic-ai/claude-code@2.1.332" in result.stderr and "Nothing was installed" in result.stderr
    assert list(home.iterdir()) == []


def test_a_python_not_installed_is_named_without_the_shells_own_error(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    result = subprocess.run([REPO / "scripts" / "install", "--python", "python3.10-nowhere"], capture_output=True, text=True, env=fresh_env(home))
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == (
        "scripts/install: memory-gate needs Python 3.11 or later; python3.10-nowhere is not installed.")
    assert "command not found" not in result.stderr and "line " not in result.stderr
    assert list(home.iterdir()) == []


def test_install_help_is_its_leading_comment_and_nothing_else(tmp_path):
    result = subprocess.run([REPO / "scripts" / "install", "--help"], capture_output=True, text=True, env=fresh_env(tmp_path))
    lines = result.stdout.splitlines()
    assert result.returncode == 0 and lines[0] == "Install memory-gate for this user and turn it on in Claude Code."
    assert lines[-1].endswith("`memory-gate doctor` ends it.") and "set -euo pipefail" not in result.stdout


@needs_claude
def shell_runs(home: Path, env: dict[str, str]) -> str:
    """What `memory-gate --version` prints in a new interactive bash of the owner (its ~/.bashrc
    read), with the PATH the install ran under; "" when that shell does not find it."""
    done = subprocess.run(["bash", "-i", "-c", "memory-gate --version"], capture_output=True, text=True,
                          env=env, cwd=home, stdin=subprocess.DEVNULL, timeout=60)
    return done.stdout


def test_install_survives_a_moved_checkout_and_uninstall_takes_it_out(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    claude_bin = str(Path(CLAUDE).parent)
    env = {**fresh_env(home, claude_bin), "SHELL": "/bin/bash"}
    checkout = checkout_copy(tmp_path)
    installed = subprocess.run([checkout / "scripts" / "install"], cwd=checkout, capture_output=True, text=True, env=env, timeout=600)
    assert installed.returncode == 0, installed.stderr
    data = home / ".local" / "share" / "memory-gate"
    exe = data / "venv" / "bin" / "memory-gate"
    assert f"installed: {exe}" in installed.stdout and "this checkout is no longer needed" in installed.stdout
    assert (data / "marketplace" / "mods" / "memory-gate" / "bin" / "installed").read_text() == f"{exe}\n"
    assert (home / ".local" / "bin" / "memory-gate").resolve() == exe.resolve()
    # ~/.local/bin is not on this PATH: the one line to add, for the owner's shell; added where it
    # says, the README's next command works in a new shell.
    assert shell_runs(home, env) == ""
    advice = installed.stdout.split("Add this one line to ", 1)[1].splitlines()
    assert advice[0].startswith("~/.bashrc,") and advice[1] == '  export PATH="$HOME/.local/bin:$PATH"', advice
    with open(home / ".bashrc", "a") as rc:
        rc.write(advice[1].strip() + "\n")
    assert "memory-gate " in shell_runs(home, env)
    # What a plugin cannot bring: Claude Code's own auto memory off.
    assert json.loads((home / ".claude" / "settings.json").read_text())["autoMemoryEnabled"] is False
    # Both engines' schemas ship in the package, beside the modules that apply them.
    [engine] = (data / "venv").glob("lib/python3*/site-packages/gate/engine")
    assert {"schema.sql", "schema-postgres.sql"} <= {path.name for path in engine.iterdir()}

    checkout.rename(tmp_path / "moved")
    project = tmp_path / "project"
    project.mkdir()
    listed = subprocess.run([CLAUDE, "mcp", "list"], cwd=project, capture_output=True, text=True, env=env, timeout=120)
    [line] = [line for line in listed.stdout.splitlines() if line.startswith("plugin:memory-gate:memory:")]
    assert "Connected" in line and str(data / "marketplace") in line, listed.stdout

    removed = subprocess.run([tmp_path / "moved" / "scripts" / "uninstall"], capture_output=True, text=True, env=env, timeout=300)
    assert removed.returncode == 0, removed.stderr
    assert not data.exists() and not (home / ".local" / "bin" / "memory-gate").exists()
    plugins = subprocess.run([CLAUDE, "plugin", "list"], cwd=project, capture_output=True, text=True, env=env, timeout=120)
    assert "memory-gate@memory-gate" not in plugins.stdout
    # Nothing of the plugin is left: not Claude Code's cached copies, not the setting install wrote.
    assert not (home / ".claude" / "plugins" / "cache" / "memory-gate").exists()
    assert "autoMemoryEnabled" not in (home / ".claude" / "settings.json").read_text()
