"""Golden files: what the agent reads, kept as reviewed text.

A changed output fails the test with a diff; `UPDATE_GOLDEN=1 pytest` rewrites the files, and
the change then shows up in review like any other.
"""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent / "golden"


def check(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"no golden file {path}: run with UPDATE_GOLDEN=1 once and review it"
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"{name} changed; if intended, UPDATE_GOLDEN=1 and review the diff"
