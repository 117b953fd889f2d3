"""S2's figures of the null (:func:`aftertrain.experiments.speculative.first_token_table`)
on a skewed null, where its median, its 99% quantile, its mean and its first
draw all differ.

The report prints "median M, 99% quantile Q" of direct sampling's TVs beside
the threshold; the table's other tests run on the real null, whose summaries
lie close together. Here the null is replaced by a fixed skewed one (the
models and the samples stay real, on two tiny GPTs), and each figure is
checked against an independent computation: the standard library's median,
Hyndman and Fan's type-7 quantile worked by hand, math.fsum for the mean.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
import scipy.stats

from aftertrain import stats
from aftertrain.experiments import speculative as ES
from tests.common.toys import tiny_gpt

#: 100 TVs, right-skewed (lognormal quantiles of median 0.01, shape 1) in a
#: shuffled order: median 0.0100008 (the midpoint of the 50th and 51st;
#: lower 0.0098754, higher 0.0101261), 99% quantile 0.0880291 (position
#: 98.01: lower 0.0875908, higher 0.1314221), mean 0.0162641, first 0.0332131.
SKEWED_NULL = (0.01 * scipy.stats.lognorm.ppf((np.arange(100) + 0.5) / 100, s=1.0))[
    np.random.default_rng(7).permutation(100)
]


def type7_quantile(values, q: float) -> float:
    """numpy's default quantile by hand: position h = (n - 1) q between the
    sorted values at floor(h) and floor(h) + 1."""
    s = sorted(values)
    h = (len(s) - 1) * q
    lo = math.floor(h)
    return s[lo] + (h - lo) * (s[min(lo + 1, len(s) - 1)] - s[lo])


def test_first_token_row_reports_the_nulls_median_quantile_first_draw_and_threshold(monkeypatch):
    """null_median: the midpoint of the middle two of 100 (statistics.median);
    null_q99: linear interpolation at position 98.01; direct_tv: the null's
    first draw (one run of n direct samples, the article's single baseline);
    tv_threshold: the null's mean plus sqrt(ln(1e6) / (2 n)). Tolerance 1e-12
    (float64 rounding); the lower/higher median and quantile, the mean or the
    95% quantile in their place differ by 1.2e-4 or more."""
    n = 200
    monkeypatch.setattr(stats, "tv_null_distribution", lambda p, m, trials, seed: SKEWED_NULL.copy())
    [row] = ES.first_token_table(
        tiny_gpt(0, n_head=1, n_embd=8, block_size=128),
        {"tiny": tiny_gpt(1, n_head=1, n_embd=8, block_size=128)},
        n=n,
        null_trials=100,
    )
    values = SKEWED_NULL.tolist()
    assert row.null_median == pytest.approx(statistics.median(values), abs=1e-12)
    assert row.null_q99 == pytest.approx(type7_quantile(values, 0.99), abs=1e-12)
    assert row.direct_tv == values[0]
    margin = math.sqrt(math.log(1e6) / (2 * n))
    assert row.tv_threshold == pytest.approx(math.fsum(values) / 100 + margin, abs=1e-12)
    # the input separates the summaries the row could have confused
    s = sorted(values)
    assert min(abs(row.null_median - v) for v in (s[49], s[50], np.mean(s))) > 1.2e-4
    assert min(abs(row.null_q99 - v) for v in (s[98], s[99], np.quantile(s, 0.95))) > 4e-4
