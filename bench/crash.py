"""A writer killed with SIGKILL at random points, again and again.

    python bench/crash.py [--kills 200]

Each round starts a writer (search, then a write of inserts, updates and deletes, in a loop) on
one database and kills it after a random delay. After every kill: `PRAGMA integrity_check` and
the word index's integrity check pass, every committed change has its write.log line, and the
lines of writes that never committed are recognisable as such (their write id is not in the
database). With --vectors the writers embed through a fake endpoint (tests/fake_embeddings.py)
and every vector must also match its fact's current text. Prints how many writes committed and
how many log lines were left by writes that died before their commit.
"""

from __future__ import annotations

import argparse
import math
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from _crash import WRITER, verify  # noqa: E402
from fake_embeddings import FakeEmbeddings, vector  # noqa: E402

from gate.engine import store  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--vectors", action="store_true", help="writers embed through a fake endpoint")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    fake = FakeEmbeddings(dimension=32) if args.vectors else None
    extra = [fake.url] if fake else []

    def embed(text: str) -> list[float]:
        values = vector(text, 32)
        norm = math.sqrt(sum(v * v for v in values))
        return [v / norm for v in values]

    check = embed if fake else None
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memory" / "memory.db"
        store.connect(path).close()
        for round_ in range(args.kills):
            writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(round_), *extra],
                                      stdout=subprocess.PIPE, text=True)
            writer.stdout.readline()
            time.sleep(rng.uniform(0.0, 0.2))
            writer.send_signal(signal.SIGKILL)
            writer.wait()
            writer.stdout.close()
            verify(path, check)  # raises AssertionError with what broke
        writes, uncommitted, torn = verify(path, check)
    if fake:
        fake.close()
    vectors_note = " and every vector matched its fact" if fake else ""
    print(f"{args.kills} writers killed with SIGKILL in {time.perf_counter() - started:.0f} s: after every kill the "
          f"database and word index passed their integrity checks, every committed change had its log line{vectors_note}")
    print(f"{writes} writes committed; {uncommitted} log lines of writes that never committed (recognised by "
          f"their write id), {torn} torn lines")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
