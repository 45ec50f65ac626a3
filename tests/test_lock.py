"""The lock files in requirements/ answer for pyproject.toml: scripts/test and scripts/install
install them with --require-hashes and then memory-gate with --no-deps, so a dependency added or
raised in pyproject.toml without `scripts/lock` would go missing, or stay too old, unnoticed."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", re.M)


def pinned(lock: str) -> dict[str, set[str]]:
    versions: dict[str, set[str]] = {}
    for name, version in PIN.findall((REPO / "requirements" / f"{lock}.txt").read_text()):
        versions.setdefault(canonicalize_name(name), set()).add(version)
    return versions


def wanted(*extras: str) -> list[Requirement]:
    return [Requirement(text) for text in PROJECT["dependencies"] + [r for extra in extras for r in PROJECT["optional-dependencies"][extra]]]


@pytest.mark.parametrize("lock, requirements", [
    ("runtime", wanted("meaning")),
    ("team", wanted("team", "meaning")),
    ("test", wanted("test")),
    ("build", [Requirement(text) for text in ["hatchling>=1.21", "editables"]]),
], ids=["runtime", "team", "test", "build"])
def test_every_dependency_is_pinned_at_a_version_pyproject_allows(lock, requirements):
    versions = pinned(lock)
    for requirement in requirements:
        name = canonicalize_name(requirement.name)
        assert name in versions, f"{name} is not in requirements/{lock}.txt: run scripts/lock"
        assert all(requirement.specifier.contains(v, prereleases=True) for v in versions[name]), (
            f"requirements/{lock}.txt pins {name} at {sorted(versions[name])}, outside {requirement.specifier}: run scripts/lock")


def test_every_pin_carries_hashes():
    for lock in ("runtime", "team", "test", "build"):
        text = (REPO / "requirements" / f"{lock}.txt").read_text()
        entries = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 2)[2])
        assert entries and all("--hash=sha256:" in entry for entry in entries if PIN.match(entry)), lock


def test_the_build_backend_is_the_locked_one():
    system = tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]
    assert system["requires"] == ["hatchling>=1.21"]
    assert "hatchling>=1.21" in (REPO / "requirements" / "build.in").read_text()
