"""The second blind part of the generated credential set (bench/_credential_blind2.py): as large as
issue 30 asks, well formed, the same on every run, and held to issue 30's targets.

It is blind no more: its credential half was spent to tune (issue 30): its misses were printed
(`bench/credentials.py --spend-blind2`), read and mended by shape. So its figures are tuning data,
no evidence: they are kept as a floor against regression. The part that judges the detector now is
a third blind part (bench/_credential_blind3.py), written by another hand, with its own test. No
failure here names a sample.
"""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import _credential_blind2 as blind2  # noqa: E402

# Issue 30's targets: at least 97 % caught on every path where text lands, at most 0.5 % of the
# look-alikes refused.
CAUGHT_TARGET = 0.97
REFUSED_TARGET = 0.005

# The floor. The one measuring run of bench/credentials.py made after the part was committed
# (d37908a) and before anyone tuned on it, against main's detector at a496ebd: caught 432 of the
# 470 credentials on every path (91.9 %), refused 0 of the 520 look-alikes (0.00 %). Then, against
# main at db8cc57, after the first blind part was spent to tune (this part still unseen): 444 of 470
# (94.5 %), 0 of 520. That 444 is the evidence figure of the first blind part's spending. Then this
# part's credential half was spent: its 26 misses were printed and the detector mended on their
# shapes (passphrases of words joined by a dot, hyphen or underscore, a clause of two words before
# "is", a .netrc entry, a password led by &, hex or a UUID under a product's key column, Fly.io,
# `sk-<name>-` redacted whole, a value then "it's the <X> key", "<X> key; use <value>", "defina X
# como V", "senha do <place> <value>", Basic credentials without the header's name): 469 of 470
# (99.8 %), 0 of 520. Tuned on, so no evidence; fewer caught, or more refused, is a regression.
BEFORE_CAUGHT = 469
BEFORE_REFUSED = 0


@cache
def figures() -> dict:
    spec = importlib.util.spec_from_file_location("bench_credentials_blind2", BENCH / "credentials.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench.generated_figures("blind2")


def test_the_part_is_as_large_as_asked():
    secrets, benign = blind2.samples()
    providers = {s.group for s in secrets if not s.group.startswith("password")}
    passwords = {s.group for s in secrets if s.group.startswith("password")}
    assert len(secrets) >= 300
    assert len(providers) >= 40
    assert len(passwords) >= 6
    assert len(benign) >= 300
    contexts = {s.context for s in secrets}
    assert {"config", "url", "shell", "table", "prose-en", "prose-pt"} <= contexts


def test_every_credential_holds_its_value_and_nothing_repeats():
    secrets, benign = blind2.samples()
    assert all(s.value and s.value in s.text for s in secrets)
    assert all(not s.value for s in benign)
    assert len({s.text for s in secrets}) == len(secrets)
    assert len({s.text for s in benign}) == len(benign)


def test_the_part_is_the_same_on_every_call():
    assert blind2.samples() == blind2.samples()


def test_credentials_are_caught_on_every_path():
    result = figures()
    caught = result["secrets"] - len(result["missed"])
    counts = f"caught {caught} of {result['secrets']} on every path"
    assert caught >= BEFORE_CAUGHT, f"{counts}, fewer than the {BEFORE_CAUGHT} caught after the part was spent"
    assert caught >= CAUGHT_TARGET * result["secrets"], f"{counts}: below issue 30's 97 %"


def test_look_alikes_are_not_refused():
    result = figures()
    refused = len(result["refused"])
    counts = f"refused {refused} of {result['benign']} look-alikes"
    assert refused <= BEFORE_REFUSED, f"{counts}, more than the {BEFORE_REFUSED} refused after the part was spent"
    assert refused <= REFUSED_TARGET * result["benign"], f"{counts}: above issue 30's 0.5 %"
