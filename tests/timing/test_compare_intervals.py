"""The ratio compare of :mod:`aftertrain.timing.compare` on asymmetric
intervals, where each end of each interval and each median give a different
answer.

A stored timing ratio's interval is skewed like the ratios it comes from:
here median 1.0 in [0.8, 1.5]. With the threshold 1.1 the rule's limits are
stored high x 1.1 = 1.65 (regressed when this run's LOW end lies above it)
and stored low / 1.1 = 0.7273 (improved when this run's HIGH end lies
below it); same when this run's interval lies within [0.7273, 1.65]. Each
case below sits where one wrong end (or a median in place of an end) flips
the status; the expected statuses are worked by hand from those two limits.
"""

from __future__ import annotations

import pytest

from aftertrain.timing.compare import compare_ratios


def _run(median: float, low: float, high: float) -> dict:
    return {"bench": {"ratios": {"r": {"median": median, "ci": [low, high]}}}}


STORED = _run(1.0, 0.8, 1.5)


@pytest.mark.parametrize(
    ("now", "status", "why"),
    [
        ((1.8, 1.66, 1.9), "regressed", "low 1.66 > 1.65"),
        ((1.7, 1.6, 1.8), "inconclusive", "median 1.7 > 1.65 but low 1.6 is not; high 1.8 > 1.65"),
        ((1.3, 1.2, 1.4), "same", "within [0.7273, 1.65]; above stored median x 1.1 and low x 1.1"),
        ((1.6, 1.55, 1.64), "same", "high 1.64 <= 1.65: the stored HIGH end bounds it, not the low"),
        ((0.85, 0.8, 0.9), "same", "high 0.9 is below stored median / 1.1 (0.909), not below 0.7273"),
        ((0.7, 0.6, 0.75), "inconclusive", "median 0.7 < 0.7273 but high 0.75 is not; low 0.6 < 0.7273"),
        ((0.6, 0.5, 0.7), "improved", "high 0.7 < 0.7273"),
        ((1.0, 0.7, 1.7), "inconclusive", "median 1.0 within [0.7273, 1.65], both ends outside it"),
        ((1.6, 1.2, 1.7), "inconclusive", "median 1.6 and low within, high 1.7 > 1.65"),
    ],
)
def test_compare_reads_the_right_end_of_each_asymmetric_interval(now, status, why):
    [change] = compare_ratios(_run(*now), STORED, threshold=1.1)
    assert change.status == status, why
    assert change.stored == (1.0, 0.8, 1.5) and change.now == now


def test_an_interval_whose_low_end_is_above_its_high_end_is_refused():
    """A stored or current interval must have low <= high (a swapped pair
    would decide "same" or "regressed" from nonsense)."""
    with pytest.raises(ValueError, match="low <= high"):
        compare_ratios(_run(1.0, 1.2, 0.9), STORED, threshold=1.1)
    with pytest.raises(ValueError, match="low <= high"):
        compare_ratios(STORED, _run(1.0, 1.2, 0.9), threshold=1.1)


@pytest.mark.parametrize("threshold", [1, 1.0, 0.9, float("inf")])
def test_a_threshold_of_at_most_1_or_not_finite_is_refused(threshold):
    """``threshold`` > 1 and finite: exactly 1 is refused (every change
    would be a regression or an improvement); just above 1 is taken."""
    with pytest.raises(ValueError, match="threshold must be a finite number > 1"):
        compare_ratios(STORED, STORED, threshold=threshold)
    assert compare_ratios(STORED, STORED, threshold=1.0000001)[0].status == "same"
