"""Bad inputs to every public function of aftertrain.stats: each raises
ValueError whose message names the offending argument (house rule: no silent
NaN, no negative threshold, no TypeError from deep inside numpy)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from aftertrain import stats

P3 = np.full(3, 1 / 3)
NULL = np.array([0.02, 0.03])


def gof():
    return stats.chisquare_gof(np.array([10, 11, 12]), P3, counts=True)


CASES = [
    # (id, call, argument named in the message)
    ("check_distribution: sum off", lambda: stats.check_distribution([0.5, 0.6], "target"), "target"),
    ("check_distribution: negative", lambda: stats.check_distribution([1.2, -0.2]), "p"),
    ("check_distribution: NaN", lambda: stats.check_distribution([math.nan, 1.0]), "p"),
    ("check_distribution: inf", lambda: stats.check_distribution([math.inf, 0.0]), "p"),
    ("check_distribution: 2-D", lambda: stats.check_distribution([[0.5, 0.5]]), "p"),
    ("check_distribution: empty", lambda: stats.check_distribution([]), "p"),
    ("check_distribution: strings", lambda: stats.check_distribution(["a", "b"]), "p"),
    ("check_distribution: complex", lambda: stats.check_distribution(np.array([1 + 0j, 0j])), "p"),
    ("check_distribution: ragged", lambda: stats.check_distribution([[0.5], [0.25, 0.25]]), "p"),
    ("tv_distance: lengths", lambda: stats.tv_distance([0.5, 0.5], [1.0, 0.0, 0.0]), "p and q"),
    ("tv_distance: q NaN", lambda: stats.tv_distance([0.5, 0.5], [math.nan, 1.0]), "q"),
    ("empirical_distribution: size 0", lambda: stats.empirical_distribution([0], 0), "size"),
    ("empirical_distribution: size bool", lambda: stats.empirical_distribution([0], True), "size"),
    ("empirical_distribution: size float", lambda: stats.empirical_distribution([0], 2.0), "size"),
    ("empirical_distribution: out of range", lambda: stats.empirical_distribution([0, 3], 3), "samples"),
    ("empirical_distribution: negative", lambda: stats.empirical_distribution([-1], 3), "samples"),
    ("empirical_distribution: floats", lambda: stats.empirical_distribution([0.0, 1.0], 3), "samples"),
    ("empirical_distribution: empty", lambda: stats.empirical_distribution(np.array([], int), 3), "samples"),
    ("empirical_tv: p bad", lambda: stats.empirical_tv([0], [0.2, 0.2]), "p"),
    ("empirical_tv: tensor out of range", lambda: stats.empirical_tv(torch.tensor([5]), P3), "samples"),
    ("tv_null_distribution: n 0", lambda: stats.tv_null_distribution(P3, 0, 10, 0), "n"),
    ("tv_null_distribution: n bool", lambda: stats.tv_null_distribution(P3, True, 10, 0), "n"),
    ("tv_null_distribution: n float", lambda: stats.tv_null_distribution(P3, 100.0, 10, 0), "n"),
    ("tv_null_distribution: trials 0", lambda: stats.tv_null_distribution(P3, 10, 0, 0), "trials"),
    ("tv_null_distribution: seed negative", lambda: stats.tv_null_distribution(P3, 10, 5, -1), "seed"),
    ("tv_null_distribution: seed None", lambda: stats.tv_null_distribution(P3, 10, 5, None), "seed"),
    ("tv_null_distribution: p bad", lambda: stats.tv_null_distribution([0.5], 10, 5, 0), "p"),
    ("tv_threshold: NaN null", lambda: stats.tv_threshold([0.02, math.nan], 100), "null"),
    ("tv_threshold: negative null", lambda: stats.tv_threshold([-0.02, 0.01], 100), "null"),
    ("tv_threshold: null above 1", lambda: stats.tv_threshold([1.5], 100), "null"),
    ("tv_threshold: inf null", lambda: stats.tv_threshold([math.inf], 100), "null"),
    ("tv_threshold: empty null", lambda: stats.tv_threshold([], 100), "null"),
    ("tv_threshold: string null", lambda: stats.tv_threshold(["x"], 100), "null"),
    ("tv_threshold: n 0", lambda: stats.tv_threshold(NULL, 0), "n"),
    ("tv_threshold: n float", lambda: stats.tv_threshold(NULL, 20_000.0), "n"),
    ("tv_threshold: alpha 1", lambda: stats.tv_threshold(NULL, 100, alpha=1.0), "alpha"),
    ("tv_threshold: alpha 0", lambda: stats.tv_threshold(NULL, 100, alpha=0.0), "alpha"),
    ("tv_threshold: alpha NaN", lambda: stats.tv_threshold(NULL, 100, alpha=math.nan), "alpha"),
    ("tv_threshold: alpha string", lambda: stats.tv_threshold(NULL, 100, alpha="1e-6"), "alpha"),
    ("rejects: alpha 0", lambda: gof().rejects(alpha=0.0), "alpha"),
    ("rejects: alpha NaN", lambda: gof().rejects(alpha=math.nan), "alpha"),
    ("rejects: alpha negative", lambda: gof().rejects(alpha=-1e-6), "alpha"),
    ("chisquare_gof: p bad", lambda: stats.chisquare_gof([0, 1], [0.5, 0.4]), "p"),
    ("chisquare_gof: samples out of range", lambda: stats.chisquare_gof([0, 3], P3), "samples"),
    ("chisquare_gof: samples float", lambda: stats.chisquare_gof([0.5], P3), "samples"),
    (
        "chisquare_gof: counts length",
        lambda: stats.chisquare_gof([1, 2], P3, counts=True),
        "samples_or_counts",
    ),
    (
        "chisquare_gof: counts negative",
        lambda: stats.chisquare_gof([1, -2, 3], P3, counts=True),
        "samples_or_counts",
    ),
    (
        "chisquare_gof: counts fractional",
        lambda: stats.chisquare_gof([1.5, 2, 3], P3, counts=True),
        "samples_or_counts",
    ),
    (
        "chisquare_gof: counts NaN",
        lambda: stats.chisquare_gof([math.nan, 2, 3], P3, counts=True),
        "samples_or_counts",
    ),
    (
        "chisquare_gof: counts all zero",
        lambda: stats.chisquare_gof([0, 0, 0], P3, counts=True),
        "samples_or_counts",
    ),
    (
        "chisquare_gof: counts strings",
        lambda: stats.chisquare_gof(["1", "2", "3"], P3, counts=True),
        "samples_or_counts",
    ),
    (
        "chisquare_gof: min_expected 0",
        lambda: stats.chisquare_gof([0, 1], P3, min_expected=0),
        "min_expected",
    ),
    (
        "chisquare_gof: min_expected NaN",
        lambda: stats.chisquare_gof([0, 1], P3, min_expected=math.nan),
        "min_expected",
    ),
    (
        "chisquare_gof: min_expected inf",
        lambda: stats.chisquare_gof([0, 1], P3, min_expected=math.inf),
        "min_expected",
    ),
    ("chisquare_gof: counts flag not bool", lambda: stats.chisquare_gof([0, 1], P3, counts="yes"), "counts"),
    # inputs that once failed silently or obscurely
    (
        "chisquare_gof: min_expected past the samples",
        lambda: stats.chisquare_gof([0, 1, 2], P3, min_expected=1e9),
        "min_expected",
    ),
    (
        "tv_null_distribution: trials past memory",
        lambda: stats.tv_null_distribution([0.5, 0.5], 10, 10**12, 0),
        "trials",
    ),
    ("tv_null_distribution: n past int64", lambda: stats.tv_null_distribution([0.5, 0.5], 2**63, 1, 0), "n"),
]


@pytest.mark.parametrize("call, argument", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_raises_value_error_naming_the_argument(call, argument):
    with pytest.raises(ValueError, match=rf"^{argument}\b"):
        call()
