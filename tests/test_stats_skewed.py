"""The TV threshold and null of :mod:`aftertrain.stats` on inputs that tell
summaries apart.

tests/test_stats.py pins the threshold on nulls of one or two values, where
the mean and the median coincide. Here the null is skewed and many-valued
(mean, median, upper quantile and maximum all differ by far more than the
tolerance), so a threshold built from the wrong summary of the null, or a
null summed over the wrong axis or without the factor 1/2, fails. Every
expected value is computed independently: :func:`math.fsum` for the mean,
a hand-worked two-cell law, a per-trial re-implementation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from aftertrain.stats import tv_null_distribution, tv_threshold

N = 20_000
#: McDiarmid's margin at n = 20,000 and alpha = 1e-6, worked by hand:
#: sqrt(ln(1e6) / 40,000) = sqrt(13.815511 / 40,000) = 0.0185846.
MARGIN = 0.0185846

#: 41 TVs from a right-skewed law (quantiles of a lognormal of median 0.01 and
#: shape 1): mean 0.01604, median 0.01000, 99% quantile 0.08098, max 0.09497,
#: min 0.00105; each differs from the mean by 6e-3 or more, 6e4 times the
#: tolerance of the pins below.
SKEWED_NULL = 0.01 * scipy.stats.lognorm.ppf((np.arange(41) + 0.5) / 41, s=1.0)


def test_skewed_null_separates_its_summaries():
    """The input has the property the pins below rely on: each wrong summary
    is at least 6e-3 from the mean (the threshold's tolerance is 1e-7)."""
    mean = math.fsum(SKEWED_NULL) / SKEWED_NULL.size
    for wrong in (
        np.median(SKEWED_NULL),
        np.quantile(SKEWED_NULL, 0.99),
        SKEWED_NULL.max(),
        SKEWED_NULL.min(),
        np.quantile(SKEWED_NULL, 0.5, method="lower"),
    ):
        assert abs(wrong - mean) > 6e-3


def test_tv_threshold_of_a_skewed_null_is_its_mean_plus_the_margin():
    """threshold = mean(null) + sqrt(ln(1/alpha) / (2n)), the mean by
    math.fsum and the margin worked by hand (7 digits: tolerance 1e-7 on the
    margin: tolerance 1e-7). The median (0.01000), the 99% quantile, the
    maximum or the minimum in place of the mean each miss by 6e-3 or more."""
    mean = math.fsum(SKEWED_NULL) / SKEWED_NULL.size
    assert tv_threshold(SKEWED_NULL, N) == pytest.approx(mean + MARGIN, abs=1e-7)


def test_tv_threshold_margin_shrinks_as_one_over_root_n_and_grows_with_log_one_over_alpha():
    """The margin scales
    as 1 / sqrt(n): at n = 80,000 it is half that at 20,000; at alpha = 1e-2
    it is sqrt(ln 100 / 40,000) = 0.0107298."""
    mean = math.fsum(SKEWED_NULL) / SKEWED_NULL.size
    assert tv_threshold(SKEWED_NULL, 4 * N) == pytest.approx(mean + MARGIN / 2, abs=1e-7)
    assert tv_threshold(SKEWED_NULL, N, alpha=1e-2) == pytest.approx(mean + 0.0107298, abs=1e-7)


def test_tv_null_of_a_two_cell_law_at_one_draw_is_its_hand_worked_law():
    """p = (0.9, 0.1), one draw per trial: TV is 0.1 when cell 0 is drawn
    (probability 0.9) and 0.9 otherwise, so the null takes exactly those two
    values; the mean is E[TV] = 0.9 * 0.1 + 0.1 * 0.9 = 0.18, the median 0.1.
    100,000 trials: the mean's standard error is 0.8 * 0.3 / sqrt(1e5) =
    7.6e-4; 6 of them (a two-sided normal tail of 2e-9) is 4.6e-3, below the
    0.08 between mean and median. A null without the factor 1/2 takes 0.2 and
    1.8; one summed over trials instead of cells has the wrong shape."""
    null = tv_null_distribution([0.9, 0.1], 1, 100_000, seed=3)
    assert null.shape == (100_000,)
    assert set(np.round(null, 12)) == {0.1, 0.9}
    assert abs(null.mean() - 0.18) < 6 * 0.8 * 0.3 / math.sqrt(null.size)
    assert np.median(null) == pytest.approx(0.1)
    assert np.isclose(null, 0.9).mean() == pytest.approx(0.1, abs=6 * math.sqrt(0.09 / 1e5))


def test_tv_null_matches_a_per_trial_reimplementation_on_a_skewed_law():
    """Each trial of the null is ``0.5 * sum_i |X_i / n - p_i|`` for one
    multinomial count vector: re-computed here trial by trial with math.fsum
    from the same numpy stream (numpy draws a batch of multinomials row by
    row), on a Zipf law over 30 cells at n = 500, where the null is skewed
    (mean above median). Exact to 1e-12."""
    p = 1.0 / np.arange(1, 31)
    p /= p.sum()
    null = tv_null_distribution(p, 500, 64, seed=11)
    rng = np.random.default_rng(11)
    q = p / p.sum()
    expected = [
        0.5 * math.fsum(abs(c / 500 - pi) for c, pi in zip(rng.multinomial(500, q), q, strict=True))
        for _ in range(64)
    ]
    np.testing.assert_allclose(null, expected, rtol=0, atol=1e-12)
    assert np.mean(null) > np.median(null)
