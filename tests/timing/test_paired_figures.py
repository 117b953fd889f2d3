"""The figures a paired timing gives the tables (P7's quartiles, every
ratio's median and interval) computed a second way on a fake clock: the
quartiles by hand-written linear interpolation between order statistics, the
interval's ranks from scipy's binomial distribution, on skewed ratios where
the quartiles, the median and the mean all differ."""

from __future__ import annotations

import pytest
from scipy import stats as sps

from aftertrain.timing import paired_timing

#: Baseline 1 s per call; candidate times giving ratios with a long right tail.
RATIOS = (0.8, 0.9, 0.95, 1.0, 1.0, 1.05, 1.1, 1.3, 2.0, 4.0, 9.0)


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def work(self, seconds):
        it = iter(seconds)

        def run() -> None:
            self.now += next(it)

        return run


def _interpolated(sorted_values, q: float) -> float:
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (pos - lo) * (sorted_values[hi] - sorted_values[lo])


def _timing(ratios, confidence=0.9):
    clock = _Clock()
    return paired_timing(
        clock.work([1.0] * len(ratios)),
        clock.work(list(ratios)),
        pairs=len(ratios),
        warmup=0,
        calls=1,
        confidence=confidence,
        clock=clock,
    )


def test_quartiles_median_and_interval_of_skewed_ratios():
    """n = 11: q1 at position 2.5, q3 at 7.5 (linear); the interval
    [x_(k), x_(n+1-k)] with the largest k such that 2 P(Bin(11, 1/2) <= k-1)
    <= 0.1, here k = 3 (2 P(<= 2) = 0.065), coverage 1 - 0.065."""
    t = _timing(RATIOS)
    s = sorted(RATIOS)
    assert t.ratios == pytest.approx(RATIOS, rel=1e-12)
    assert t.q1 == pytest.approx(_interpolated(s, 0.25), rel=1e-12)
    assert t.q3 == pytest.approx(_interpolated(s, 0.75), rel=1e-12)
    assert (t.q1, t.q3) == pytest.approx((0.975, 1.65), rel=1e-12)
    # the fake clock's differences carry float rounding (1.05 comes back as 1.0500000000000007)
    assert (t.median, t.minimum, t.maximum) == pytest.approx((s[5], s[0], s[-1]), rel=1e-12)
    k = max(j for j in range(1, 7) if 2 * sps.binom.cdf(j - 1, 11, 0.5) <= 0.1)
    assert k == 3
    assert (t.ci_low, t.ci_high) == pytest.approx((s[k - 1], s[11 - k]), rel=1e-12)
    assert t.coverage == pytest.approx(1 - 2 * sps.binom.cdf(k - 1, 11, 0.5), rel=1e-12)


@pytest.mark.teeth
def test_quartile_check_catches_nearest_rank_quartiles():
    """Nearest-rank quartiles (s[2], s[8]) or the mean in place of the median
    differ from the figures asserted above on these ratios."""
    s = sorted(RATIOS)
    assert s[2] != pytest.approx(_interpolated(s, 0.25), rel=1e-12)
    assert s[8] != pytest.approx(_interpolated(s, 0.75), rel=1e-12)
    assert sum(s) / len(s) != pytest.approx(s[5], rel=1e-12)
