"""The median interval and the ratio summary of :mod:`aftertrain.timing.paired`
on skewed ratios, where every order statistic, quantile rule and summary
differs from its neighbours.

Timing ratios are right-skewed (a preempted pair is slow, never fast), so
the interval ``[x_(k), x_(n+1-k)]`` is asymmetric about the median, and the
mean lies above the median. The values below are distinct and unevenly
spaced and handed over unsorted: a rank off by one, the interval's two ends
taken from the wrong side, a symmetric interval about the median, the mean
for the median, or another interpolation of the quartiles (lower, higher,
nearest, midpoint) each give a different number. The ranks and coverages
are computed here with exact fractions (``math.comb``), not with scipy as
the module does.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from aftertrain.timing.paired import Pairs, median_interval

#: 21 ratios: quantiles of a right-skewed law (1 + 0.1 E^1.5, E a standard
#: exponential), from 1.0004 to 1.7226, in a fixed shuffled order. Sorted,
#: neighbouring values differ by 1.6e-3 or more.
_U = (np.arange(21) + 0.5) / 21
SKEWED = 1.0 + 0.1 * (-np.log1p(-_U)) ** 1.5
SHUFFLE = [13, 2, 20, 7, 0, 16, 9, 4, 18, 11, 1, 14, 6, 19, 3, 10, 17, 5, 12, 8, 15]
RATIOS = SKEWED[SHUFFLE]


def exact_rank(n: int, confidence: float) -> tuple[int, Fraction]:
    """Largest k with 2 P(Bin(n, 1/2) <= k - 1) <= 1 - confidence, and the
    coverage 1 - 2 P(Bin <= k - 1), by exact binomial sums."""
    k, best = 0, Fraction(0)
    tail = Fraction(0)
    for j in range(1, n + 1):
        tail += Fraction(math.comb(n, j - 1), 2**n)  # P(Bin <= j - 1)
        if 2 * tail <= Fraction(1) - Fraction(confidence):
            k, best = j, tail
    return k, 1 - 2 * best


def test_skewed_ratios_separate_every_neighbouring_order_statistic():
    s = np.sort(RATIOS)
    assert np.diff(s).min() > 1.6e-3
    median = s[10]
    assert s[16] - median > 2 * (median - s[4])  # the 99% interval is asymmetric
    assert RATIOS.mean() - median > 0.02


#: Confidence 1 - 15094 / 2^21 (exact in binary) is the n = 21, k = 5
#: boundary itself: 2 P(Bin <= 4) equals 1 - confidence, which the rule admits.
AT_K5 = 1 - 15094 / 2**21


@pytest.mark.parametrize(("confidence", "rank"), [(0.99, 5), (0.95, 6), (0.9, 7), (1 - 1e-6, 1), (AT_K5, 5)])
def test_median_interval_of_skewed_ratios_is_the_exact_order_statistics(confidence, rank):
    """[x_(k), x_(n+1-k)] with k from exact binomial sums: n = 21 gives k = 5
    at 0.99 (5th and 17th smallest, coverage 0.99277), k = 6 at 0.95, k = 7
    at 0.9, k = 1 (min and max) at 1 - 1e-6, and k = 5 at the confidence
    where 2 P(Bin <= 4) = 1 - confidence exactly. Both ends exact."""
    s = sorted(RATIOS.tolist())
    k, coverage = exact_rank(21, confidence)
    low, high, cov = median_interval(RATIOS, confidence)
    assert k == rank
    assert (low, high) == (s[k - 1], s[21 - k])
    assert cov == pytest.approx(float(coverage), rel=1e-12)


def test_median_interval_hand_worked_at_n21_and_0p99():
    """The docstring's case worked by hand: P(Bin(21, 1/2) <= 4) = (1 + 21 +
    210 + 1330 + 5985) / 2^21 = 7547 / 2097152 = 0.0035987, twice that
    0.0071974 <= 0.01; at k = 6, P(<= 5) adds 20349: 2 * 27896 / 2^21 =
    0.0266 > 0.01. So k = 5 and coverage 1 - 15094 / 2^21 = 0.9928026."""
    s = np.sort(RATIOS)
    low, high, cov = median_interval(RATIOS, 0.99)
    assert (low, high) == (s[4], s[16])
    assert cov == pytest.approx(1 - 15094 / 2**21, rel=1e-12)


def _summary(ratios: np.ndarray):
    """The summary of pairs whose ratios are ``ratios``; the baselines take
    0.5, 1 and 2 s in turn (powers of two: the ratios divide back exactly),
    so a median of ratios and a ratio of medians differ."""
    run = Pairs(lambda: None, lambda: None, 1, lambda: 0.0)
    run.base = [2.0 ** (i % 3 - 1) for i in range(ratios.size)]
    run.cand = (ratios * np.array(run.base)).tolist()
    return run.summary(0.9, threads=1, warmup=0)


def linear_quantile(sorted_values: list[float], q: float) -> float:
    """Hyndman and Fan's type 7 (numpy's default), by hand: position
    h = (n - 1) q, interpolated between the values at floor(h) and ceil(h)."""
    h = (len(sorted_values) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (h - lo) * (sorted_values[hi] - sorted_values[lo])


def test_summary_of_ten_skewed_ratios_has_linear_quartiles_and_midpoint_median():
    """n = 10: the quartiles sit at positions 2.25 and 6.75 and the median at
    4.5, so linear interpolation differs from lower, higher, nearest and
    midpoint, and the median (mean of the 5th and 6th values) from either
    of them and from the mean. Min and max are the extremes; the interval
    at 0.9 is the 2nd and 9th values (k = 2: 2 P(Bin(10, 1/2) <= 1) =
    22 / 1024 <= 0.1)."""
    ratios = RATIOS[:10]
    s = sorted(ratios.tolist())
    t = _summary(ratios)
    assert t.q1 == pytest.approx(linear_quantile(s, 0.25), rel=1e-15)
    assert t.q3 == pytest.approx(linear_quantile(s, 0.75), rel=1e-15)
    assert t.median == pytest.approx((s[4] + s[5]) / 2, rel=1e-15)
    assert (t.minimum, t.maximum) == (s[0], s[-1])
    assert (t.ci_low, t.ci_high) == (s[1], s[8])
    assert t.coverage == pytest.approx(1 - 22 / 1024, rel=1e-12)
    for method in ("lower", "higher", "nearest", "midpoint"):
        other = np.quantile(ratios, [0.25, 0.5, 0.75], method=method)
        assert abs(other[0] - t.q1) > 1e-4 or abs(other[2] - t.q3) > 1e-4, method
    assert abs(ratios.mean() - t.median) > 1e-3
