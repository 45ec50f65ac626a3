"""The credential check on the three parts of the generated set written apart (bench/credentials.py
APART): each as large as asked, well formed, the same on every run, and held to issue 30's targets
(at least 97 % of the credentials caught on every path where text lands, at most 0.5 % of the
look-alikes refused) and to its floor, the figures after which fewer caught or more refused is a
regression. No failure here names a sample, and the third part's misses are never printed: its
figures are counts only, so that it stays blind.

- blind (bench/_credential_blind.py), written by another hand without reading the detector, its
  tests or its misses, is blind no more: its look-alikes' refusals were printed, read and mended by
  shape in one stop, then its credentials' misses (121) in another (issue 30). Its figures are
  tuning data, no evidence. The first measuring run, after the part was committed (d3d49c3) and
  against the detector as it was then (main at 36b09ae): 514 of 688 credentials caught on every
  path (74.7 %), 31 of 490 look-alikes refused (6.33 %). After the second widening (tuned on the
  other parts only, merged at 1848b5f): 567 of 688 (82.4 %), 31 of 490. Then the look-alike half
  was spent: its 31 refusals were printed and the detector mended on their shapes (public keys,
  placeholders, hashes, a WebSocket nonce, sealed secrets): 567 of 688, 0 of 490. Then the
  credential half was spent: its 121 misses were printed and the detector mended on their shapes
  (provider formats with a fixed head, a name and its value apart in a sentence, a statement or a
  record, passwords as commands, SQL and drivers take them, a key named on the line after it, seed
  phrases, PuTTY files): 686 of 688 (99.7 %), 0 of 490.
- blind2 (bench/_credential_blind2.py), written by a hand that read neither the detector nor the
  other parts while the first was spent, is blind no more either: its credentials' misses were
  printed (`bench/credentials.py --spend-blind2`), read and mended by shape (issue 30). The one
  measuring run made after the part was committed (d37908a) and before anyone tuned on it, against
  main's detector at a496ebd: caught 432 of the 470 credentials on every path (91.9 %), refused 0 of
  the 520 look-alikes (0.00 %). Then, against main at db8cc57, after the first blind part was spent
  to tune (this part still unseen): 444 of 470 (94.5 %), 0 of 520. That 444 is the evidence figure
  of the first blind part's spending. Then this part's credential half was spent: its 26 misses
  were printed and the detector mended on their shapes (passphrases of words joined by a dot,
  hyphen or underscore, a clause of two words before "is", a .netrc entry, a password led by &, hex
  or a UUID under a product's key column, Fly.io, `sk-<name>-` redacted whole, a value then "it's
  the <X> key", "<X> key; use <value>", "defina X como V", "senha do <place> <value>", Basic
  credentials without the header's name): 469 of 470 (99.8 %), 0 of 520.
- blind3 (bench/_credential_blind3.py), written by yet another hand, judges the detector now. The
  first measuring run's figures, against main at db8cc57: caught 405 of 416 credentials of 96
  groups on every path (97.4 %), refused 0 of 360 look-alikes (0.00 %). The second, counts only
  again, after the second blind part was spent to tune: 407 of 416 (97.8 %), 0 of 360. Being
  evidence, not tuning data, a shortfall against the targets is an expected failure that states
  only counts; falling under the floor fails.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from credentials import generated_figures  # noqa: E402  (bench/credentials.py)

CAUGHT_TARGET, REFUSED_TARGET = 0.97, 0.005


def _password_named(group: str) -> bool:
    return group.startswith("password")


def _password_or_senha(group: str) -> bool:
    return "password" in group or "senha" in group


@dataclass(frozen=True)
class Part:
    name: str
    module: str
    secrets: int  # at least this many credentials,
    benign: int  # look-alikes,
    providers: int  # provider groups
    passwords: int  # and password groups,
    password_group: Callable[[str], bool]  # telling a password group by its name,
    contexts: frozenset[str]  # and credentials in at least these contexts
    caught: int  # the floor: at least this many caught on every path
    refused: int  # and at most this many look-alikes refused
    blind: bool  # evidence, not tuning data: a shortfall against the targets is expected, in counts


PARTS = [
    Part(
        "blind", "_credential_blind", secrets=400, benign=350, providers=40, passwords=5,
        password_group=_password_named, contexts=frozenset(), caught=686, refused=0, blind=False,
    ),
    Part(
        "blind2", "_credential_blind2", secrets=300, benign=300, providers=40, passwords=6,
        password_group=_password_named, contexts=frozenset({"config", "url", "shell", "table", "prose-en", "prose-pt"}),
        caught=469, refused=0, blind=False,
    ),
    Part(
        "blind3", "_credential_blind3", secrets=300, benign=300, providers=40, passwords=6,
        password_group=_password_or_senha, contexts=frozenset(), caught=407, refused=0, blind=True,
    ),
]  # fmt: skip
BY_PART = pytest.mark.parametrize("part", PARTS, ids=[part.name for part in PARTS])


@cache
def figures(name: str) -> dict:
    return generated_figures(name)


def samples(part: Part):
    return importlib.import_module(part.module).samples()


@BY_PART
def test_the_part_is_as_large_as_asked(part):
    secrets, benign = samples(part)
    passwords = {sample.group for sample in secrets if part.password_group(sample.group)}
    providers = {sample.group for sample in secrets} - passwords
    assert len(secrets) >= part.secrets and len(benign) >= part.benign
    assert len(providers) >= part.providers and len(passwords) >= part.passwords
    assert part.contexts <= {sample.context for sample in secrets}


@BY_PART
def test_every_credential_holds_its_value_and_nothing_repeats(part):
    secrets, benign = samples(part)
    assert all(sample.value and sample.value in sample.text for sample in secrets)
    assert all(not sample.value for sample in benign)
    assert len({sample.text for sample in secrets}) == len(secrets)
    assert len({sample.text for sample in benign}) == len(benign) == len(set(benign))


@BY_PART
def test_the_part_is_the_same_every_run(part):
    assert samples(part) == samples(part)


@BY_PART
def test_credentials_are_caught_on_every_path(part):
    found = figures(part.name)
    caught = found["secrets"] - len(found["missed"])
    counts = f"{part.name}: caught {caught} of {found['secrets']} credentials on every path"
    assert caught >= part.caught, f"{counts}, fewer than the floor of {part.caught}"
    if caught < CAUGHT_TARGET * found["secrets"]:
        if part.blind:
            pytest.xfail(f"{counts}, under 97 %")
        pytest.fail(f"{counts}: below issue 30's 97 %")


@BY_PART
def test_look_alikes_are_not_refused(part):
    found = figures(part.name)
    refused = len(found["refused"])
    counts = f"{part.name}: refused {refused} of {found['benign']} look-alikes"
    assert refused <= part.refused, f"{counts}, more than the floor of {part.refused}"
    if refused > REFUSED_TARGET * found["benign"]:
        if part.blind:
            pytest.xfail(f"{counts}, over 0.5 %")
        pytest.fail(f"{counts}: above issue 30's 0.5 %")
