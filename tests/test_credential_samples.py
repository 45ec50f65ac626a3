"""The credential check on the generated set (bench/_credential_samples.py): the rates the
issue asks for, on every path where text lands, on the part it was tuned on, the contaminated one
(once held out, its misses read while tuning) and the fresh one (bench/_credential_fresh.py: held
out until issue 30's second widening spent it to tune; a blind part nobody tuned on judges now).
Each must meet the target; a failure names the samples."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from credentials import generated_figures  # noqa: E402  (bench/credentials.py)

TARGET_CAUGHT, TARGET_REFUSED = 0.97, 0.005


@pytest.fixture(scope="module", params=["tuning", "contaminated", "fresh"])
def figures(request):
    return request.param, generated_figures(request.param)


def _named(part, found, key):
    return [sample.text if key == "refused" else (sample[0].text, sample[1]) for sample in found[key]]


def test_the_generated_set_is_as_large_as_asked(figures):
    _, found = figures
    assert found["secrets"] >= 300 and found["benign"] >= 300 and found["providers"] >= 40


def test_look_alikes_are_refused_at_most_half_a_percent(figures):
    # The fresh part's look-alikes were refused 10 of 317 (one shape) before they were looked at,
    # then mended; its credentials were spent to tune later.
    part, found = figures
    assert found["refused_rate"] <= TARGET_REFUSED, (part, _named(part, found, "refused"))


def test_credentials_are_caught_on_every_path(figures):
    # The fresh part, measured only until then, was caught 817 of 929 (87.9 %) as the detector was
    # when it was written (0b7bd1c) and 868 (93.4 %) after the tuning part's widening; then spent.
    part, found = figures
    assert found["caught"] >= TARGET_CAUGHT, (part, _named(part, found, "missed"))
