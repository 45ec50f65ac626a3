"""The credential check on labelled samples: what it catches, what it misses, what it refuses
wrongly, per provider and per half, beside the check as it was before (the baseline).

    python bench/credentials.py [--show N]

Samples: bench/data/credentials.json, made-up credentials in the shapes providers issue and
developers paste ("secret"), and benign lookalikes: placeholders, references, prose about
secrets, code, hashes and ids ("benign"). Each group is split in two halves; the detector was
widened looking at the `tuning` half only, so the `held-out` half is the evidence (both halves
were written by the same hand, before the detector, which makes held-out weaker evidence than
an independent set). Benign text nobody tuned on: the 200 observations of the public
claude-mem-lite benchmark (developer prose full of "token", "password reset", "API key
rotation"). The tables of tests/test_secrets.py are shown apart: they were written with the
detector, so they are no evidence, only a check.

Then the generated set (bench/_credential_samples.py): the tuning part (331 credentials of 45
providers and 5 password shapes and 310 look-alikes, plus bench/_credential_tuning.py's 226 and
140), a contaminated part (331 and 311: once held out, but its misses were read while tuning),
and the fresh part (bench/_credential_fresh.py: 929 credentials of 76 providers, 31 of them only
there, 5 password shapes and 3 kinds of pair, and 317 look-alikes, in contexts neither other part
holds). The fresh part was held out until issue 30's second widening, which spent it to tune: its
misses were printed (`--spend-fresh`, now the default) and read, so it is tuning data like the
others and no evidence. The first blind part, written by another hand and never seen while
tuning (bench/_credential_blind.py: 688 credentials of 78 provider groups, 54 of them providers no
other part holds and 6 new formats of ones they hold, 8 password shapes, and 490 look-alikes), is
spent too: first its look-alikes' refusals, then its credentials' misses were printed
(`--spend-blind`), read and mended by shape (issue 30), so it is tuning data like the others and
no evidence (see docs/reliability.md). A second blind part (bench/_credential_blind2.py: 470
credentials of 92 provider groups and 8 password shapes, and 520 look-alikes), written on
2026-12-07 by a hand that read neither the detector nor the other parts while the first was
spent, judged the detector after that spending (432 of 470 caught before it, 444 after: the
evidence of the first spending), and was spent in turn: its credentials' misses were printed
(`--spend-blind2`), read and mended by shape (issue 30), so it is tuning data too (469 of 470).
A third blind part (bench/_credential_blind3.py: 416 credentials of 87 provider groups and 9
password groups, and 360 look-alikes, seed 3141), written on 2026-12-07 by yet another hand that
read neither the detector nor the other parts while the second was spent, judges the detector
now; of it only the counts are printed (`--spend-blind3` prints its misses and refusals, and
spends it). A credential is
caught only when it is caught on every path where text lands: a fact's text (insert, update,
import and the page's edit all check it with gate.memory.checking.check_field), its topic when the
sample fits on one (one line, 100 characters), and the owner's prompt (redacted: no 8 characters
of the secret may remain). A look-alike is refused when `find` names it or redaction changes it.

Also checked: that a redacted secret sample no longer holds a credential, that redaction leaves
benign text untouched, and the cost per text. (Not named secrets.py: tests put bench/ on
sys.path, where that name would hide the standard library's secrets module.)
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import _credentials_baseline as baseline  # noqa: E402
from test_secrets import NEGATIVE, POSITIVE  # noqa: E402

import _credential_samples as generated  # noqa: E402

from gate import credentials  # noqa: E402
from gate.credentials import triggers  # noqa: E402
from gate.memory import checking  # noqa: E402

DATA = ROOT / "bench" / "data" / "credentials.json"
SEED = ROOT.parent / "shared" / "data" / "claude-mem-lite" / "seed-data.json"
HALVES = ("tuning", "held-out")
ADVERSARIAL = {
    "curl -u": "curl -u ",
    "curl continuation": "curl x x \\\n",
    "sshpass -p": "sshpass -p ",
    "docker login -p": "docker login -p ",
    "mysql -p": "mysql -p ",
    "aws secret": "aws secret ",
    "key=": "key=",
    "base64": "QUJDRGVm",
    "password is": "password is ",
    "kind: Secret": "kind: Secret\n  a: QUJD\n",
    "https://a:b@": "https://a:b@",
    "eyJ.": "eyJ.",
    "Authorization: ": "Authorization: ",
    "word": "word ",
    "sk-or-v1-": "sk-or-v1-",
    "ab_": "ab_",
    "token novo do": "token novo do ",
    "changed password to": "changed password to ",
    "| secret | table": "| secret |\n|---|\n",
    "-u a -p": "-u a -p ",
    "[1] a: (chat lines)": "[1] a: ",
}


def samples() -> dict:
    data = json.loads(DATA.read_text())
    sets = {half: {"secret": [], "benign": []} for half in HALVES}
    for kind in ("secret", "benign"):
        for sample in data[kind]:
            sets[sample["half"]][kind].append((sample["group"], sample["text"]))
    seed = []
    if SEED.exists():
        for observation in json.loads(SEED.read_text())["observations"]:
            keys = ("title", "narrative", "facts", "concepts", "text")
            seed.append(("claude-mem-lite prose", " ".join(str(observation.get(k) or "") for k in keys)))
    sets["untuned prose"] = {"secret": [], "benign": seed}
    sets["tests/test_secrets.py (written with the detector)"] = {
        "secret": [("tests/test_secrets.py", text) for text, _ in POSITIVE],
        "benign": [("tests/test_secrets.py", text) for text in NEGATIVE],
    }
    return sets


def report(name: str, found, secret: list, benign: list) -> tuple[int, int, tuple]:
    """Print one detector's figures on one set; return (missed, false refusals)."""
    caught, missed = defaultdict(int), defaultdict(list)
    total = defaultdict(int)
    for group, text in secret:
        total[group] += 1
        if found(text):
            caught[group] += 1
        else:
            missed[group].append(text)
    passed, refused = defaultdict(int), defaultdict(list)
    count = defaultdict(int)
    for group, text in benign:
        count[group] += 1
        if found(text):
            refused[group].append((found(text), text))
        else:
            passed[group] += 1
    n_missed = sum(len(v) for v in missed.values())
    if not secret:
        print(f"  {name}: false refusals {sum(len(v) for v in refused.values())} of {len(benign)}")
        return 0, sum(len(v) for v in refused.values()), (total, caught, missed, count, passed, refused)
    n_refused = sum(len(v) for v in refused.values())
    print(
        f"  {name}: caught {len(secret) - n_missed} of {len(secret)}, missed {n_missed}; "
        f"false refusals {n_refused} of {len(benign)}"
    )
    return n_missed, n_refused, (total, caught, missed, count, passed, refused)


def table(detail, show: int) -> None:
    total, caught, missed, count, passed, refused = detail
    for group in total:
        line = f"    {group:<34} caught {caught[group]:>3} / {total[group]:<3} missed {len(missed[group])}"
        print(line)
        for text in missed[group][:show]:
            print(f"        missed: {text[:110]!r}")
    for group in count:
        print(f"    {group:<34} passed {passed[group]:>3} / {count[group]:<3} false refusals {len(refused[group])}")
        for kind, text in refused[group][:show]:
            print(f"        refused as {kind}: {text[:100]!r}")


def leaked(value: str, text: str) -> bool:
    """Whether `text` still holds 8 characters of the secret `value` (all of a shorter one)."""
    n = min(len(value), 8)
    return any(value[at : at + n] in text for at in range(len(value) - n + 1))


def missed_paths(sample: generated.Sample) -> list[str]:
    """The paths where text lands on which a generated credential gets through."""
    missed = []
    if checking.check_field("text", sample.text)[1] is None:
        missed.append("text")
    if (
        "\n" not in sample.text
        and len(sample.text) <= checking.MAX_TOPIC
        and checking.check_field("topic", sample.text)[1] is None
    ):
        missed.append("topic")
    if leaked(sample.value, credentials.redact(sample.text)):
        missed.append("prompt")
    return missed


# The parts written apart from bench/_credential_samples.py, by their module. The ones still
# UNSEEN print only their counts unless spent on the command line (`--spend-<part>`); the others
# were spent to tune and print their misses like the tuning parts.
APART = {"blind": "_credential_blind", "blind2": "_credential_blind2", "blind3": "_credential_blind3"}
UNSEEN = ("blind3",)


def generated_figures(part: str) -> dict:
    """Caught and refused on one part of the generated set."""
    if part in APART:
        secrets, benign = importlib.import_module(APART[part]).samples()
    else:
        secrets, benign = generated.samples(part)
    missed = [(sample, paths) for sample in secrets if (paths := missed_paths(sample))]
    refused = [
        sample for sample in benign if credentials.find(sample.text) or credentials.redact(sample.text) != sample.text
    ]
    return {
        "secrets": len(secrets),
        "providers": len({sample.group for sample in secrets}),
        "missed": missed,
        "benign": len(benign),
        "refused": refused,
        "caught": 1 - len(missed) / len(secrets),
        "refused_rate": len(refused) / len(benign),
    }


def report_generated(show: int, spend: Iterable[str] = ()) -> None:
    for part in (*generated.PARTS, *APART):
        figures = generated_figures(part)
        shown = 0 if part in UNSEEN and part not in spend else show
        print(
            f"generated, {part}: caught {figures['secrets'] - len(figures['missed'])} of {figures['secrets']} "
            f"credentials of {figures['providers']} groups on every path ({100 * figures['caught']:.1f} %); "
            f"refused {len(figures['refused'])} of {figures['benign']} look-alikes ({100 * figures['refused_rate']:.2f} %)"
        )
        by_context = defaultdict(int)
        for sample, _ in figures["missed"]:
            by_context[sample.context] += 1
        if by_context and shown:
            print(
                "    missed by context: "
                + ", ".join(f"{context} {count}" for context, count in sorted(by_context.items()))
            )
        for sample, paths in figures["missed"][:shown]:
            print(f"        missed on {'/'.join(paths)} ({sample.group}, {sample.context}): {sample.text[:90]!r}")
        for sample in figures["refused"][:shown]:
            print(f"        refused ({sample.group}): {sample.text[:90]!r}")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--show", type=int, default=3, help="examples printed per group (default 3)")
    parser.add_argument(
        "--spend-fresh",
        action="store_true",
        help="kept for old command lines: the fresh part was spent to tune, its misses are printed like the others'",
    )
    for part in ("blind", "blind2"):
        parser.add_argument(
            f"--spend-{part}",
            action="store_true",
            help=f"kept for old command lines: the {part} part was spent to tune, its misses are printed like the others'",
        )
    parser.add_argument(
        "--spend-blind3",
        action="store_true",
        help="print the third blind part's misses too (it is then no longer blind)",
    )
    args = parser.parse_args(argv)
    sets = samples()
    failed = False
    report_generated(args.show, spend=["blind3"] if args.spend_blind3 else [])
    for half, kinds in sets.items():
        secret, benign = kinds["secret"], kinds["benign"]
        print(f"{half}: {len(secret)} credentials, {len(benign)} benign texts")
        report("baseline (the check before)", baseline.find, secret, benign)
        n_missed, n_refused, detail = report("gate/credentials.py", credentials.find, secret, benign)
        table(detail, args.show)
        failed |= bool(n_missed or n_refused)
        print()

    everything = [text for kinds in sets.values() for kind in kinds.values() for _, text in kind]
    leaks = [
        text for kinds in sets.values() for _, text in kinds["secret"] if credentials.find(credentials.redact(text))
    ]
    changed = [text for kinds in sets.values() for _, text in kinds["benign"] if credentials.redact(text) != text]
    print(
        f"redaction: {len(leaks)} redacted credential samples still hold a credential; "
        f"{len(changed)} benign texts changed by redaction"
    )
    for text in leaks[: args.show]:
        print(f"  still found in: {credentials.redact(text)[:110]!r}")
    failed |= bool(leaks or changed)

    started = time.perf_counter()
    for text in everything:
        credentials.find(text)
    found_cost = (time.perf_counter() - started) / len(everything)
    started = time.perf_counter()
    for text in everything:
        credentials.redact(text)
    redact_cost = (time.perf_counter() - started) / len(everything)
    prose = [text for _, text in sets["untuned prose"]["benign"]]
    quiet = sum(1 for text in prose if not credentials.triggered(text))
    print(
        f"cost: find {1e6 * found_cost:.0f} us, redact {1e6 * redact_cost:.0f} us per text "
        f"(mean length {sum(map(len, everything)) // len(everything)} characters)"
    )
    print(f"prefilter: {quiet} of {len(prose)} untuned prose texts hold no trigger (no regex runs for them)")
    idle = sum(1 for text in prose if triggers.quiet(text, triggers.present(text.lower())))
    print(
        f"front: {idle} of {len(prose)} untuned prose texts could hold no shape's match "
        "(gate.credentials.triggers: the detector is not even imported for them)"
    )
    # Hostile pastes of 200k characters (a prompt is redacted whole, on the hook path): each
    # shape must cost linear time, whatever repeats.
    worst = []
    for name, unit in ADVERSARIAL.items():
        text = (unit * (200_000 // len(unit) + 1))[:200_000]
        started = time.perf_counter()
        credentials.redact(text)
        worst.append((time.perf_counter() - started, name))
    took, name = max(worst)
    print(
        f"200,000-character hostile pastes: redact at most {1e3 * took:.0f} ms ({name!r}), "
        f"median {1e3 * sorted(worst)[len(worst) // 2][0]:.0f} ms over {len(worst)}"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
