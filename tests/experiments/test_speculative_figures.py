"""Every figure of the S2, S4 and X1 tables computed a second way.

The claims' tests compare these tables with stored baselines and judge the
verdicts; here each figure of a row is recomputed independently on a toy
GPT: the null's median and 99% quantile by sorting a skewed null by hand
(where the mean, the median and the quantile all differ), the TV threshold
from its closed form, the TV from the samples' counts, the acceptance and
characters per pass from the counts, the X1 prediction as the sum
``sum_{i<=k} a^i / k`` (not the closed form the code uses), and the counts of
a draft equal to the target from the round structure (every draft accepted).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from aftertrain import stats
from aftertrain.experiments import speculative as XS
from aftertrain.lm.text import load_corpus
from tests.common.toys import toy_gpt

N = 2_000
#: A skewed null of 150 TVs: 140 in [0.01, 0.024) and a heavy tail of 10 in
#: [0.1, 0.55], so its mean (0.0375), its median (0.01745) and its 99% quantile
#: (0.4755) differ by far more than the tolerances below; its first draw
#: (0.0239) is none of them.
NULL = np.concatenate([0.01 + 0.0001 * np.arange(140)[::-1], 0.1 + 0.05 * np.arange(10)])


def _skewed_null(monkeypatch):
    calls = []

    def fake(p, n, trials, seed):
        calls.append((n, trials, seed))
        return NULL.copy()

    monkeypatch.setattr(stats, "tv_null_distribution", fake)
    return calls


@pytest.fixture(scope="module")
def target():
    return toy_gpt(100, seed=3)


@pytest.fixture(scope="module")
def draft():
    return toy_gpt(100, seed=4)


def test_first_token_figures_are_the_skewed_nulls_summaries(target, draft, monkeypatch):
    """direct_tv is the null's first draw, null_median its middle order
    statistics, null_q99 the linear interpolation at 0.99 (n - 1) = 147.51,
    tv_threshold mean + sqrt(ln(1e6) / (2 n)); TV and chi-square from the
    same first characters, recounted here."""
    calls = _skewed_null(monkeypatch)
    (row,) = XS.first_token_table(target, {"toy": draft}, n=N, seed=5, null_trials=len(NULL))
    assert calls == [(N, len(NULL), 5)]
    s = sorted(NULL.tolist())
    assert row.direct_tv == NULL[0]
    assert row.null_median == pytest.approx((s[74] + s[75]) / 2, rel=0, abs=1e-15)
    assert row.null_q99 == pytest.approx(s[147] + 0.51 * (s[148] - s[147]), rel=1e-12)
    mean = sum(s) / len(s)
    assert abs(mean - row.null_median) > 0.02  # the summaries differ on this null
    assert row.tv_threshold == pytest.approx(mean + math.sqrt(math.log(1e6) / (2 * N)), rel=1e-12)
    context = load_corpus().val_text[XS.S2_CONTEXT_SLICE]
    first, p = XS.first_token_samples(target, draft, context, N, 1.0, torch.Generator().manual_seed(5))
    counts = np.bincount(first.numpy(), minlength=100)
    assert row.tv == pytest.approx(0.5 * np.abs(counts / N - p.numpy()).sum(), rel=1e-12)
    assert row.chi2_pvalue == stats.chisquare_gof(first.numpy(), p.numpy()).pvalue


@pytest.mark.teeth
def test_first_token_check_catches_a_threshold_from_the_median():
    """The summaries above differ on the skewed null by more than the test's
    tolerance: a threshold from the median (or a q99 taken as the max) fails."""
    s = sorted(NULL.tolist())
    margin = math.sqrt(math.log(1e6) / (2 * N))
    wrong = float(np.median(NULL)) + margin
    right = sum(s) / len(s) + margin
    assert wrong != pytest.approx(right, rel=1e-12)
    assert max(s) != pytest.approx(s[147] + 0.51 * (s[148] - s[147]), rel=1e-12)


@pytest.fixture(scope="module")
def acceptance(target, draft):
    return XS.acceptance_table(target, {"toy": draft, "same": target}, ks=(1, 2, 3), n_new=60)


def test_acceptance_and_chars_per_pass_are_the_counts_ratios(acceptance):
    assert [(r.draft, r.k) for r in acceptance] == [(d, k) for d in ("toy", "same") for k in (1, 2, 3)]
    for r in acceptance:
        assert r.acceptance == r.accepted / r.drafted
        assert r.chars_per_pass == 60 / r.target_passes
        assert r.target_passes + r.accepted == 60  # each pass emits one character not drafted


def test_x1_prediction_is_the_sum_of_the_k1_rates_powers(acceptance):
    """predicted(a, k) = E[accepted before the first rejection, capped at k] / k
    = sum_{i=1..k} a^i / k, summed term by term here."""
    for draft in ("toy", "same"):
        rows = [r for r in acceptance if r.draft == draft]
        a = rows[0].acceptance
        for r in rows:
            assert r.predicted_acceptance == pytest.approx(
                sum(a**i for i in range(1, r.k + 1)) / r.k, rel=1e-12
            )


def test_a_draft_equal_to_the_target_has_every_draft_accepted(acceptance):
    """p = q: every drafted character is accepted, so a round emits its k
    drafts and one more; 60 characters take ceil(60 / (k + 1)) passes."""
    for r in (r for r in acceptance if r.draft == "same"):
        assert (r.acceptance, r.accepted) == (1.0, r.drafted)
        assert r.target_passes == math.ceil(60 / (r.k + 1)), r
