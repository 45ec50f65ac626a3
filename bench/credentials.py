"""The credential check on real prose: how often it refuses what it should and nothing else.

    python bench/credentials.py

Negatives: the 200 observations of the public claude-mem-lite benchmark (developer prose full of
"token", "password reset", "API key rotation", connection strings without passwords) and the
negative samples of tests/test_secrets.py. Positives: the positive samples there (made-up
credentials in the shapes providers issue). Prints the false refusals (which must be none) and
the share of credentials caught, and the check's cost per fact. (Not named secrets.py: tests put
bench/ on sys.path, where that name would hide the standard library's secrets module.)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from test_secrets import NEGATIVE, POSITIVE  # noqa: E402

from gate import secrets  # noqa: E402

SEED = ROOT.parent / "shared" / "data" / "claude-mem-lite" / "seed-data.json"


def main() -> int:
    prose = list(NEGATIVE)
    if SEED.exists():
        for observation in json.loads(SEED.read_text())["observations"]:
            prose.append(" ".join(str(observation.get(k) or "") for k in ("title", "narrative", "facts", "concepts", "text")))
    started = time.perf_counter()
    false = [text for text in prose if secrets.find(text)]
    caught = [text for text, _ in POSITIVE if secrets.find(text)]
    elapsed = time.perf_counter() - started
    print(f"false refusals: {len(false)} of {len(prose)} texts of ordinary prose and code")
    for text in false[:5]:
        print(f"  {secrets.find(text)}: {text[:100]}")
    print(f"credentials caught: {len(caught)} of {len(POSITIVE)}")
    print(f"cost: {1e6 * elapsed / (len(prose) + len(POSITIVE)):.0f} microseconds per text")
    return 1 if false or len(caught) < len(POSITIVE) else 0


if __name__ == "__main__":
    raise SystemExit(main())
