"""The third blind part of the generated credential set (bench/_credential_blind3.py): its size and
shape, and the detector's figures on it, printed as counts only so the part stays blind.

The targets are issue 30's: at least 97 % of the credentials caught on every path where text
lands, at most 0.5 % of the look-alikes refused. A shortfall is an expected failure that states only
counts; the floors below are the figures of the one measuring run, so falling under them fails.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import _credential_blind3 as blind3  # noqa: E402

# The first measuring run's figures, against main at db8cc57: caught 405 of 416 credentials of 96
# groups on every path (97.4 %), refused 0 of 360 look-alikes (0.00 %). The second, counts only
# again, after the second blind part was spent to tune: 407 of 416 (97.8 %), 0 of 360. Below
# these is a regression.
BEFORE_CAUGHT: int | None = 407
BEFORE_REFUSED: int | None = 0


@pytest.fixture(scope="module")
def figures() -> dict:
    import credentials as bench_credentials

    return bench_credentials.generated_figures("blind3")


def test_size_and_shape():
    secrets, benign = blind3.samples()
    providers = {s.group for s in secrets if "password" not in s.group and "senha" not in s.group}
    passwords = {s.group for s in secrets} - providers
    assert len(secrets) >= 300
    assert len(providers) >= 40
    assert len(passwords) >= 6
    assert len(benign) >= 300
    assert all(s.value and s.value in s.text for s in secrets)
    assert all(not s.value for s in benign)
    assert len({s.text for s in secrets}) == len(secrets)
    assert len({s.text for s in benign}) == len(benign)


def test_deterministic():
    assert blind3.samples() == blind3.samples()


def test_caught_on_every_path(figures):
    caught = figures["secrets"] - len(figures["missed"])
    if BEFORE_CAUGHT is not None:
        assert caught >= BEFORE_CAUGHT, f"caught {caught} of {figures['secrets']}, fewer than {BEFORE_CAUGHT}"
    if caught < 0.97 * figures["secrets"]:
        pytest.xfail(f"caught {caught} of {figures['secrets']} credentials, under 97 %")


def test_look_alikes_refused(figures):
    refused = len(figures["refused"])
    if BEFORE_REFUSED is not None:
        assert refused <= BEFORE_REFUSED, f"refused {refused} of {figures['benign']}, more than {BEFORE_REFUSED}"
    if refused > 0.005 * figures["benign"]:
        pytest.xfail(f"refused {refused} of {figures['benign']} look-alikes, over 0.5 %")
