"""Tests of aftertrain.stats: TV distance, its null distribution, chi-square.

Every statistical check is shown two ways (STYLE.md rule 6): it accepts an
exact sampler over many seeds at alpha = 1e-6, and it rejects a sampler
biased by a known TV. The target is a Zipf law over 100 cells (a stand-in
for a next-character distribution); N = 20,000 is the article's S2 sample
size. Power figures are in the module docstring of aftertrain.stats.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
import torch
from hypothesis import given
from hypothesis import strategies as st

from aftertrain.stats import (
    ALPHA,
    GoodnessOfFit,
    check_distribution,
    chisquare_gof,
    empirical_distribution,
    empirical_tv,
    tv_distance,
    tv_null_distribution,
    tv_threshold,
)
from tests.common.oracles import exact_mean_tv

K, N = 100, 20_000
ZIPF = 1.0 / np.arange(1, K + 1)
ZIPF /= ZIPF.sum()


def biased(p: np.ndarray, tv: float) -> np.ndarray:
    """``p`` with mass ``tv`` moved from its most likely cell to its 50 least
    likely ones (in proportion to p): ``TV(p, biased(p, tv)) = tv``."""
    q = p.copy()
    q[0] -= tv
    q[50:] += tv * p[50:] / p[50:].sum()
    return q


def draw(p: np.ndarray, n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).choice(p.size, size=n, p=p)


@st.composite
def distributions(draw_, min_size: int = 1, max_size: int = 20) -> np.ndarray:
    """A probability vector with some exact zeros."""
    w = draw_(
        st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 7.0]), min_size=min_size, max_size=max_size).filter(
            lambda xs: sum(xs) > 0
        )
    )
    w = np.asarray(w)
    return w / w.sum()


# --- input validation -------------------------------------------------------


@pytest.mark.parametrize(
    "bad, message",
    [
        ([0.5, 0.6], "sum to 1"),
        ([1.2, -0.2], ">= 0"),
        ([np.nan, 1.0], "finite"),
        ([[0.5, 0.5]], "1-D"),
        ([], "empty"),
    ],
)
def test_check_distribution_rejects_bad_input_naming_the_argument(bad, message):
    with pytest.raises(ValueError, match=rf"target .*{message}|target must"):
        check_distribution(np.asarray(bad, dtype=float), "target")


def test_check_distribution_accepts_tensors_and_sum_within_1e_6():
    p = check_distribution(torch.tensor([0.25, 0.75 + 5e-7], dtype=torch.float64))
    assert p.dtype == np.float64 and p.shape == (2,)
    with pytest.raises(ValueError, match="p must sum to 1"):
        check_distribution([0.25, 0.75 + 2e-6])


def test_tv_distance_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="same length"):
        tv_distance([0.5, 0.5], [1.0, 0.0, 0.0])


@pytest.mark.parametrize("samples", [np.array([0, 3]), np.array([-1, 0]), np.array([0.0, 1.0])])
def test_samples_outside_range_or_not_integers_are_rejected(samples):
    p = np.full(3, 1 / 3)
    with pytest.raises(ValueError, match="samples"):
        empirical_tv(samples, p)
    with pytest.raises(ValueError, match="samples"):
        chisquare_gof(samples, p)


def test_counts_must_match_p_and_be_nonnegative_integers():
    p = np.full(3, 1 / 3)
    with pytest.raises(ValueError, match="len\\(p\\) = 3"):
        chisquare_gof([1, 2], p, counts=True)
    with pytest.raises(ValueError, match="non-negative integers"):
        chisquare_gof([1, -2, 3], p, counts=True)
    with pytest.raises(ValueError, match="non-negative integers"):
        chisquare_gof([1.5, 2, 3], p, counts=True)


def test_null_and_threshold_reject_bad_arguments():
    with pytest.raises(ValueError, match="n must be"):
        tv_null_distribution(ZIPF, 0, 10, seed=0)
    with pytest.raises(ValueError, match="trials must be"):
        tv_null_distribution(ZIPF, 10, 0, seed=0)
    with pytest.raises(ValueError, match="alpha must be"):
        tv_threshold([0.1], 10, alpha=1.0)
    with pytest.raises(ValueError, match="alpha must be"):
        chisquare_gof([10, 12], [0.5, 0.5], counts=True).rejects(alpha=0.0)


# --- exact values -------------------------------------------------------------


@given(distributions(min_size=3, max_size=3), distributions(min_size=3, max_size=3))
def test_tv_distance_is_a_metric_bounded_by_one(p, q):
    """Formula 0.5 * sum|p - q|; symmetric, 0 on the diagonal, in [0, 1]."""
    d = tv_distance(p, q)
    assert d == pytest.approx(0.5 * np.abs(p - q).sum(), abs=0)
    assert d == tv_distance(q, p)
    assert tv_distance(p, p) == 0.0
    assert 0.0 <= d <= 1.0 + 1e-12


def test_empirical_tv_of_known_samples():
    """Samples [0, 0, 1, 2] give (0.5, 0.25, 0.25); against uniform on 4 cells
    the TV is 0.5 * (0.25 + 0 + 0 + 0.25) = 0.25."""
    samples = torch.tensor([0, 0, 1, 2])
    np.testing.assert_array_equal(empirical_distribution(samples, 4), [0.5, 0.25, 0.25, 0.0])
    assert empirical_tv(samples, np.full(4, 0.25)) == pytest.approx(0.25, abs=1e-15)


def test_tv_null_distribution_is_seeded_and_matches_direct_sampling():
    """Same seed, same array. Its mean agrees with TVs of samples drawn one by
    one (another generator path), within 6 standard errors of the difference
    of two means (a two-sided normal tail of 2e-9)."""
    a = tv_null_distribution(ZIPF, N, 400, seed=1)
    np.testing.assert_array_equal(a, tv_null_distribution(ZIPF, N, 400, seed=1))
    direct = np.array([empirical_tv(draw(ZIPF, N, seed), ZIPF) for seed in range(100)])
    se = np.sqrt(a.var() / a.size + direct.var() / direct.size)
    assert abs(a.mean() - direct.mean()) < 6 * se


# --- chi-square: pooling, impossible outcomes ---------------------------------


def test_chisquare_pools_cells_below_five_expected():
    """n = 100 on p = (0.5, 0.45, 0.03, 0.02): expected 50, 45, 3, 2. The two
    small cells (3 + 2 = 5) are pooled: 3 cells, dof 2; the statistic equals
    scipy's on the pooled counts."""
    p = np.array([0.5, 0.45, 0.03, 0.02])
    counts = np.array([48, 46, 4, 2])
    g = chisquare_gof(counts, p, counts=True)
    ref = scipy.stats.chisquare([48, 46, 6], [50, 45, 5])
    assert (g.dof, g.pooled_cells) == (2, 2)
    assert g.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert g.pvalue == pytest.approx(ref.pvalue, rel=1e-12)


def test_chisquare_pools_further_until_the_pool_expects_five():
    """Expected 90, 4, 3, 2, 1: the cells under 5 (4, 3, 2, 1) sum to 10 and
    suffice; expected 95, 3, 1, 1: 3 + 1 + 1 = 5 pooled, dof 1."""
    g = chisquare_gof([90, 4, 3, 2, 1], [0.9, 0.04, 0.03, 0.02, 0.01], counts=True)
    assert (g.dof, g.pooled_cells) == (1, 4)
    g = chisquare_gof([95, 2, 2, 1], [0.95, 0.03, 0.01, 0.01], counts=True)
    assert (g.dof, g.pooled_cells) == (1, 3)


def test_sample_in_zero_probability_cell_is_impossible():
    """p-value 0, statistic inf; the degrees of freedom are those of the
    possible cells (three of five here: dof 2), as without the impossible sample."""
    g = chisquare_gof(np.array([0, 1, 2]), np.array([0.5, 0.5, 0.0]))
    assert g.pvalue == 0.0 and g.rejects()
    g = chisquare_gof([30, 0, 30, 1, 30], [0.3, 0.0, 0.3, 0.0, 0.4], counts=True)
    assert (g.statistic, g.pvalue, g.dof) == (math.inf, 0.0, 2)


def test_zero_probability_cells_without_samples_are_ignored():
    p = np.array([0.5, 0.0, 0.5])
    g = chisquare_gof(np.array([50, 0, 50]), p, counts=True)
    assert g.dof == 1 and g.pvalue == pytest.approx(1.0)


# --- the checks accept exact samplers ------------------------------------------


def test_chisquare_no_false_alarm_and_uniform_pvalues_for_exact_sampler():
    """200 seeds of an exact sampler at N = 20,000: no p-value below alpha
    = 1e-6 (chance of any: 2e-4), and the p-values are uniform (KS test
    p-value above 1e-6): the pooled test is calibrated, not just lenient."""
    pvalues = np.array([chisquare_gof(draw(ZIPF, N, seed), ZIPF).pvalue for seed in range(200)])
    assert pvalues.min() >= ALPHA
    assert scipy.stats.kstest(pvalues, "uniform").pvalue > ALPHA


def test_chisquare_no_false_alarm_with_pooled_cells():
    """A law whose tail expects fewer than 5 samples per cell at n = 500,
    pooled; 200 seeds, no rejection at alpha = 1e-6."""
    p = np.r_[np.full(10, 0.09), np.full(50, 0.1 / 50)]  # tail cells expect 1 each
    results = [chisquare_gof(draw(p, 500, seed), p) for seed in range(200)]
    assert all(r.pooled_cells >= 5 for r in results)
    assert not any(r.rejects() for r in results)


def test_tv_of_exact_sampler_stays_below_threshold():
    """50 seeds: the TV of N direct draws never exceeds tv_threshold, whose
    false-alarm rate is <= 1e-6 by McDiarmid's inequality."""
    threshold = tv_threshold(tv_null_distribution(ZIPF, N, 1000, seed=0), N)
    tvs = [empirical_tv(draw(ZIPF, N, seed), ZIPF) for seed in range(50)]
    assert max(tvs) < threshold


# --- the checks reject biased samplers (the checks have teeth) -------------------


@pytest.mark.claim("X7")
@pytest.mark.teeth
def test_chisquare_catches_a_sampler_biased_by_tv_0p025():
    """TV bias 0.025 at N = 20,000: detected in 497 of 500 seeds when measured
    (aftertrain.stats docstring); here 20 fixed seeds, all rejected."""
    q = biased(ZIPF, 0.025)
    assert tv_distance(ZIPF, q) == pytest.approx(0.025)
    assert all(chisquare_gof(draw(q, N, 100 + seed), ZIPF).rejects() for seed in range(20))


@pytest.mark.claim("X7")
@pytest.mark.teeth
def test_tv_threshold_catches_a_sampler_biased_by_tv_0p04():
    """TV bias 0.04 at N = 20,000: detected in 500 of 500 seeds when measured;
    here 20 fixed seeds, all above the threshold."""
    threshold = tv_threshold(tv_null_distribution(ZIPF, N, 1000, seed=0), N)
    q = biased(ZIPF, 0.04)
    assert all(empirical_tv(draw(q, N, 100 + seed), ZIPF) > threshold for seed in range(20))


def test_goodness_of_fit_rejects_compares_with_alpha():
    g = GoodnessOfFit(statistic=1.0, dof=1, pvalue=1e-7, pooled_cells=0)
    assert g.rejects() and not g.rejects(alpha=1e-8)


def test_chisquare_judges_p_within_the_sum_tolerance_as_renormalised():
    """A p accepted by check_distribution may sum to 1 - 5e-7 (float32
    softmax rows do); the expected counts are then n * p / sum(p), so the
    test gives exactly what the renormalised p gives (and scipy, which wants
    observed and expected totals equal to 1e-8, does not refuse it)."""
    p = np.array([0.5, 0.3, 0.2 - 5e-7])
    counts = np.array([52, 27, 21])
    g = chisquare_gof(counts, p, counts=True)
    ref = scipy.stats.chisquare(counts, 100 * p / p.sum())
    assert g.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert g.pvalue == pytest.approx(ref.pvalue, rel=1e-12)


def test_chisquare_pool_short_of_five_takes_in_the_next_smallest_cell():
    """Expected 90, 6, 2, 2 (n = 100): the cells under 5 sum to only 4, so
    the next smallest (6) joins them: cells 90 and 10, dof 1, three cells
    pooled, and the statistic is scipy's on (88, 7 + 3 + 2) against (90, 10)."""
    g = chisquare_gof([88, 7, 3, 2], [0.9, 0.06, 0.02, 0.02], counts=True)
    ref = scipy.stats.chisquare([88, 12], [90, 10])
    assert (g.dof, g.pooled_cells) == (1, 3)
    assert g.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert g.pvalue == pytest.approx(ref.pvalue, rel=1e-12)


def test_chisquare_keeps_a_cell_expecting_exactly_five():
    """Cochran's rule asks expected >= 5, so a cell expecting exactly 5 stays
    on its own: expected 90, 5, 3, 2 pool only 3 + 2 = 5, giving cells
    (90, 5, 5), dof 2, and scipy's statistic on (88, 6, 4 + 2)."""
    g = chisquare_gof([88, 6, 4, 2], [0.9, 0.05, 0.03, 0.02], counts=True)
    ref = scipy.stats.chisquare([88, 6, 6], [90, 5, 5])
    assert (g.dof, g.pooled_cells) == (2, 2)
    assert g.statistic == pytest.approx(ref.statistic, rel=1e-12)


def test_tv_threshold_is_the_null_mean_plus_the_mcdiarmid_margin():
    """Hand-computed: margin sqrt(ln(1 / alpha) / (2 n)); at n = 20,000 and
    alpha = 1e-6 that is sqrt(13.8155 / 40,000) = 0.0185846 (the docstring's
    0.0186), added to the mean of the null (0.02 here); at alpha = 0.01 and
    n = 50 it is sqrt(4.60517 / 100) = 0.214597."""
    assert tv_threshold([0.01, 0.03], 20_000) == pytest.approx(0.02 + 0.0185846, abs=1e-7)
    assert tv_threshold([0.1], 50, alpha=0.01) == pytest.approx(0.1 + 0.2145966, abs=1e-7)


# --- thresholds pinned to independent computations, and teeth just beyond them ---
#
# A check that loosens still passes a correct sampler, so each threshold is
# pinned to a computation that shares no code with aftertrain.stats, and each
# teeth case sits just beyond the threshold: detected by the check as it is,
# missed by the same check loosened by a factor of two (shown in the test).


def mcdiarmid_margin(n: int, alpha: float) -> float:
    return float(np.sqrt(np.log(1 / alpha) / (2 * n)))


def test_tv_null_mean_is_the_exact_expected_tv_at_the_same_n():
    """The null's mean is E[TV] at the n asked for: exact value 0.0227290 for
    the Zipf law at N = 20,000 (binomial sums); the mean of 1,000 trials has
    standard error sd / sqrt(1000) = 6.5e-5, so 6 standard errors (two-sided
    normal tail 2e-9) is the tolerance. A null drawn with another sample
    size misses: E[TV] ~ 1 / sqrt(n), so n / 2 gives 0.032 and even n * 1.1
    moves it by 0.0011 (16 standard errors)."""
    exact = exact_mean_tv(ZIPF, N)
    assert exact == pytest.approx(0.0227290, abs=1e-7)
    null = tv_null_distribution(ZIPF, N, 1000, seed=3)
    assert abs(null.mean() - exact) < 6 * null.std() / np.sqrt(null.size)
    # The same at a small n, where the law is far from normal: n = 50.
    small = tv_null_distribution(ZIPF, 50, 4000, seed=4)
    assert abs(small.mean() - exact_mean_tv(ZIPF, 50)) < 6 * small.std() / np.sqrt(small.size)


def test_tv_threshold_is_exact_expected_tv_plus_mcdiarmid_margin():
    """tv_threshold(tv_null_distribution(p, N, 1000), N) = E[TV] + sqrt(ln(1 /
    alpha) / (2 N)) = 0.022729 + 0.018585 = 0.041314, to 6 standard errors
    of the null mean (4e-4, 2% of the margin). Computing the threshold from
    another statistic of the null (a 99% quantile: +0.005), another n
    (margin at 2 N: -0.0054), or another alpha (1e-5: -0.0016) all miss."""
    threshold = tv_threshold(tv_null_distribution(ZIPF, N, 1000, seed=5), N)
    expected = exact_mean_tv(ZIPF, N) + mcdiarmid_margin(N, ALPHA)
    assert expected == pytest.approx(0.041314, abs=1e-6)
    assert threshold == pytest.approx(expected, abs=4e-4)


@pytest.mark.claim("X7")
@pytest.mark.teeth
def test_tv_check_catches_bias_just_beyond_its_limit_that_a_2x_looser_check_misses():
    """TV bias 0.04 at N = 20,000 sits just beyond the check's detection
    limit (0.035, module docstring): all 20 fixed seeds exceed the threshold
    0.0413 (their TVs average 0.055, 5.7 standard deviations above it). The
    same check with its margin doubled (threshold 0.0227 + 2 * 0.0186 =
    0.0599) misses some of these very samples, so a check that loosens by a
    factor of two fails this test."""
    threshold = tv_threshold(tv_null_distribution(ZIPF, N, 1000, seed=0), N)
    looser = float(np.mean(tv_null_distribution(ZIPF, N, 1000, seed=0))) + 2 * mcdiarmid_margin(N, ALPHA)
    q = biased(ZIPF, 0.04)
    tvs = np.array([empirical_tv(draw(q, N, 200 + seed), ZIPF) for seed in range(20)])
    assert (tvs > threshold).all(), (tvs.min(), threshold)
    assert not (tvs > looser).all(), (tvs.min(), looser)


def test_chisquare_rejects_exactly_beyond_the_closed_form_critical_value():
    """Two equal cells, n = 10,000, counts (5,000 + d, 5,000 - d): the
    statistic is 4 d^2 / n and, at one degree of freedom, the critical value
    at alpha = 1e-6 is z^2 with z = Phi^-1(1 - 5e-7) = 4.89164, i.e. 23.9282.
    d = 244 gives 23.8144 (not rejected), d = 245 gives 24.01 (rejected):
    the decision flips within 0.5% of the closed-form threshold, so a
    p-value or alpha that is off by any factor that matters is caught."""
    z = scipy.stats.norm.isf(ALPHA / 2)
    assert z**2 == pytest.approx(23.9282, abs=1e-4)
    p = np.array([0.5, 0.5])
    for d, rejects in ((244, False), (245, True)):
        g = chisquare_gof(np.array([5000 + d, 5000 - d]), p, counts=True)
        assert g.statistic == pytest.approx(4 * d * d / 10_000, rel=1e-12)
        assert g.dof == 1 and g.pooled_cells == 0
        assert g.rejects() is rejects, (d, g)


@pytest.mark.claim("X7")
@pytest.mark.teeth
def test_chisquare_catches_bias_just_beyond_its_limit_that_a_2x_looser_check_misses():
    """TV bias 0.03 at N = 20,000, just beyond chi-square's detection limit
    (0.025, module docstring): noncentrality N sum (q - p)^2 / p = 229, so
    the statistic averages ~328 against a critical value of 180.8 (99 dof,
    alpha 1e-6), 4.5 standard deviations above it: all 20 fixed seeds
    reject. A check whose statistic is halved (or critical value doubled,
    361.6) misses some of these very samples."""
    critical = scipy.stats.chi2.isf(ALPHA, K - 1)
    assert critical == pytest.approx(180.792, abs=1e-3)
    q = biased(ZIPF, 0.03)
    fits = [chisquare_gof(draw(q, N, 300 + seed), ZIPF) for seed in range(20)]
    assert all(f.dof == K - 1 for f in fits)
    assert all(f.rejects() for f in fits)
    assert not all(f.statistic > 2 * critical for f in fits)


def reference_pooled_chisquare(counts: np.ndarray, p: np.ndarray, min_expected: float = 5.0):
    """Pooling written out by hand (a loop, no shared code): cells of p = 0
    dropped; cells taken smallest expected first (ties by index) into one
    pool while a cell expects < min_expected or the pool so far expects <
    min_expected; statistic sum (O - E)^2 / E by hand."""
    n, mass = counts.sum(), p[p > 0].sum()  # mass: 1 up to rounding, as chisquare_gof divides
    cells = sorted((n * p[i] / mass, i) for i in range(p.size) if p[i] > 0)
    pool_e = pool_o = 0.0
    pooled = 0
    while (
        cells
        and pooled < len(cells)
        and (cells[pooled][0] < min_expected or (pooled and pool_e < min_expected))
    ):
        pool_e += cells[pooled][0]
        pool_o += counts[cells[pooled][1]]
        pooled += 1
    obs = [float(counts[i]) for _, i in cells[pooled:]]
    exp = [e for e, _ in cells[pooled:]]
    if pooled:
        obs.append(pool_o)
        exp.append(pool_e)
    stat = sum((o - e) ** 2 / e for o, e in zip(obs, exp, strict=True))
    return stat, len(obs) - 1, (pooled if pooled else 0)


@given(
    st.lists(st.sampled_from([0.0, 0.002, 0.01, 0.03, 0.1, 0.3]), min_size=2, max_size=12).filter(
        lambda w: sum(1 for x in w if x > 0) >= 2
    ),
    st.integers(30, 400),
    st.integers(0, 2**32 - 1),
)
def test_chisquare_pooling_matches_a_hand_written_pooling(weights, n, seed):
    """On laws with many small cells (expected counts from 0.06 to 120) and
    counts drawn from them, the statistic, degrees of freedom and pooled-cell
    count equal the hand-written pooling's (whenever two cells or more
    remain): a pooling that forgets a cell, pools the largest cells, or stops
    short of min_expected disagrees."""
    p = np.asarray(weights) / sum(weights)
    counts = np.random.default_rng(seed).multinomial(n, p)
    stat, dof, pooled = reference_pooled_chisquare(counts, p)
    g = chisquare_gof(counts, p, counts=True)
    if dof < 1:
        assert (g.dof, g.pvalue) == (0, 1.0)
        return
    assert (g.dof, g.pooled_cells) == (dof, pooled)
    assert g.statistic == pytest.approx(stat, rel=1e-9, abs=1e-12)
    assert g.pvalue == pytest.approx(scipy.stats.chi2.sf(stat, dof), rel=1e-9, abs=1e-300)


def test_s2_table_threshold_is_the_exact_one_at_its_own_sample_size():
    """The S2 table (speculative.first_token_table) computes its TV threshold
    from a null drawn at its own n: on a toy target (a random logit table
    over the 100 characters) its tv_threshold equals E[TV](p, n) + the
    McDiarmid margin at n, to 6 (bounded) standard errors of the null
    mean, 9.5e-4. Guards the
    call site: a null drawn with another n, or n and trials swapped, misses
    (E[TV] at n = 1000 is 4.5 times the value at 20,000)."""
    from aftertrain.experiments import speculative as XS
    from aftertrain.lm import text as _text
    from tests.common.toys import ToyTable

    target, draft = ToyTable(100, seed=1, order=1), ToyTable(100, seed=2, order=1)
    n = 20_000
    (row,) = XS.first_token_table(target, {"toy": draft}, n=n, null_trials=1000)
    context = _text.load_corpus().val_text[XS.S2_CONTEXT_SLICE]
    _, p = XS.first_token_samples(target, draft, context, 1, 1.0, torch.Generator().manual_seed(0))
    p = p.numpy()
    # Efron-Stein: one draw moves the TV by <= 1 / n, so Var(TV) <= 1 / (2 n)
    # for any p: sd <= 0.005 at n = 20,000; 6 standard errors of 1,000 trials.
    tolerance = 6 * np.sqrt(1 / (2 * n)) / np.sqrt(1000)
    assert row.tv_threshold == pytest.approx(exact_mean_tv(p, n) + mcdiarmid_margin(n, ALPHA), abs=tolerance)


# --- edge inputs: the rejection is strict at alpha; cells at exactly min_expected ---
def test_rejects_is_strict_at_alpha_and_cells_at_exactly_min_expected_stay_alone():
    """A p-value equal to alpha is not a rejection (p < alpha); a cell whose
    expected count is exactly min_expected is not pooled (Cochran: >= 5)."""
    assert not GoodnessOfFit(1.0, 1, ALPHA, 0).rejects()
    assert GoodnessOfFit(1.0, 1, np.nextafter(ALPHA, 0), 0).rejects()
    g = chisquare_gof([95, 5], [0.95, 0.05], counts=True)
    assert (g.dof, g.pooled_cells) == (1, 0)
