"""Statistics for judging a sampler against a discrete distribution.

Two checks, used by claims S2 (the first character of speculative decoding
follows the target) and X6 (so does the joint law of several characters):

- total variation distance, ``TV(p, q) = 0.5 * sum_i |p_i - q_i|``, of the
  samples' empirical distribution from the target, judged against the TV of
  the same number of draws taken straight from the target
  (:func:`tv_null_distribution`, :func:`tv_threshold`);
- Pearson's chi-square goodness of fit with small cells pooled
  (:func:`chisquare_gof`).

Every check here runs at a false-alarm rate of at most :data:`ALPHA` = 1e-6
per test, so a suite of a few hundred statistical tests fails by chance less
than once in a thousand runs.

Measured power (target: a Zipf law over 100 cells, ``p_i ~ 1 / (i + 1)``;
N = 20,000 samples; the bias moves mass from the most likely cell to the 50
least likely ones in proportion to their p; 500 seeds per row; the script
is in docs/measurement.md):

    TV bias   chi-square rejects   TV > tv_threshold
    0         0 / 500              0 / 500
    0.020     421 / 500            10 / 500
    0.0225    490 / 500            65 / 500
    0.025     497 / 500            195 / 500
    0.0325    500 / 500            494 / 500
    0.035     500 / 500            498 / 500
    0.040     500 / 500            500 / 500

So at N = 20,000 chi-square detects a TV bias of 0.025 (99% of seeds) and
the TV check one of 0.035 (the TV of direct draws itself averages 0.0227
here, standard deviation 0.0021; the threshold is 0.0413).

Chi-square is therefore the sharper test; the TV check is the article's
figure, kept because it is the one the article reports.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.stats
import torch

from aftertrain.core.tolerances import ALPHA, MIN_EXPECTED, NULL_TRIALS, SUM_TOLERANCE
from aftertrain.core.validation import check_probability, check_real

__all__ = [
    "ALPHA",
    "SUM_TOLERANCE",
    "NULL_TRIALS",
    "MIN_EXPECTED",
    "check_distribution",
    "tv_distance",
    "empirical_distribution",
    "empirical_tv",
    "tv_null_distribution",
    "tv_threshold",
    "GoodnessOfFit",
    "chisquare_gof",
]

ArrayLike = np.ndarray | torch.Tensor | list | tuple


def _as_1d(x: ArrayLike, name: str) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as err:  # ragged nesting, unconvertible objects
        raise ValueError(f"{name} must be a 1-D array of numbers, got {type(x).__name__}") from err
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    return arr


def _real_1d(x: ArrayLike, name: str) -> np.ndarray:
    """``x`` as a 1-D float64 array; bool, int and float inputs only."""
    arr = _as_1d(x, name)
    if not (
        arr.dtype == np.bool_ or np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise ValueError(f"{name} must be numeric (real), got dtype {arr.dtype}")
    return arr.astype(np.float64)


MAX_NULL_CELLS = 10**9  # int64 counts of tv_null_distribution: 8 GB; more cannot be held


def _check_count(value, name: str, least: int) -> int:
    """``value`` as an int after checking it is an integer (not a bool) >= ``least``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < least:
        raise ValueError(f"{name} must be an int >= {least}, got {value!r}")
    return int(value)


def _check_alpha(alpha) -> float:
    check_probability("alpha", alpha)
    return float(alpha)


def check_distribution(p: ArrayLike, name: str = "p") -> np.ndarray:
    """``p`` as a float64 array after checking it is a probability vector.

    Invariant of the result: 1-D, finite, every entry >= 0, and
    ``|sum(p) - 1| <= 1e-6`` (:data:`SUM_TOLERANCE`). The array is returned
    as given, not renormalised.

    Raises:
        ValueError: naming ``name``, if any of the above fails.
    """
    arr = _real_1d(p, name)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0 everywhere, got min {arr.min()!r}")
    total = float(arr.sum())
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise ValueError(f"{name} must sum to 1 within {SUM_TOLERANCE:g}, got {total!r}")
    return arr


def tv_distance(p: ArrayLike, q: ArrayLike) -> float:
    """Total variation distance ``0.5 * sum_i |p_i - q_i|``, in [0, 1].

    Equals the largest difference in probability the two laws give one
    event: ``max_A |P(A) - Q(A)|``.
    """
    p = check_distribution(p, "p")
    q = check_distribution(q, "q")
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same length, got {p.size} and {q.size}")
    return float(0.5 * np.abs(p - q).sum())


def _check_samples(samples: ArrayLike, size: int) -> np.ndarray:
    _check_count(size, "size", 1)
    arr = _as_1d(samples, "samples")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"samples must be integer indices, got dtype {arr.dtype}")
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi >= size:
        raise ValueError(f"samples must be indices in [0, {size}), got values in [{lo}, {hi}]")
    return arr.astype(np.int64)


def empirical_distribution(samples: ArrayLike, size: int) -> np.ndarray:
    """Frequency of each index ``0 .. size-1`` among ``samples`` (sums to 1)."""
    arr = _check_samples(samples, size)
    return np.bincount(arr, minlength=size) / arr.size


def empirical_tv(samples: ArrayLike, p: ArrayLike) -> float:
    """TV distance of the samples' empirical distribution from ``p``."""
    p = check_distribution(p, "p")
    return tv_distance(empirical_distribution(samples, p.size), p)


def tv_null_distribution(p: ArrayLike, n: int, trials: int, seed: int) -> np.ndarray:
    """TV distances of ``n`` draws taken straight from ``p``, ``trials`` times.

    The article's "same-sample-size baseline" (S2: 0.0134 at n = 20,000) is
    one value of this distribution; a sampler's TV should be judged against
    the distribution, not one draw of it. Vectorised: each trial is one
    multinomial count vector, ``TV = 0.5 * sum_i |counts_i / n - p_i|``.

    Args:
        p: the target distribution (1-D).
        n: samples per trial, >= 1.
        trials: number of trials, >= 1 (the checks use :data:`NULL_TRIALS`).
        seed: seed (an int >= 0) of the ``numpy.random.Generator`` used;
            same seed, same result.

    Returns:
        float64 array of shape ``(trials,)``.

    Note:
        For a Zipf law over 100 cells at n = 20,000 the mean is 0.0227 and
        the standard deviation 0.0021; the article's single baseline draw on
        its (more peaked) distribution was 0.0134.
    """
    p = check_distribution(p, "p")
    _check_count(n, "n", 1)
    if n >= 2**63:
        raise ValueError(f"n must be below 2**63 (numpy's multinomial counts are int64), got {n!r}")
    _check_count(trials, "trials", 1)
    _check_count(seed, "seed", 0)
    if trials * p.size > MAX_NULL_CELLS:
        raise ValueError(
            f"trials * len(p) must be at most {MAX_NULL_CELLS:,} (the count matrix "
            f"held in memory), got {trials} * {p.size}"
        )
    p = p / p.sum()  # multinomial needs sum(p[:-1]) <= 1 exactly
    counts = np.random.default_rng(seed).multinomial(n, p, size=trials)  # (trials, K)
    return 0.5 * np.abs(counts / n - p).sum(axis=1)


def tv_threshold(null: ArrayLike, n: int, alpha: float = ALPHA) -> float:
    """TV above which ``n`` samples are judged not drawn from the target.

    ``threshold = mean(null) + sqrt(ln(1 / alpha) / (2 n))``.

    Why a bound and not a quantile of ``null``: an empirical quantile at
    level 1 - 1e-6 would need millions of trials. The bound is
    distribution-free instead: changing one of ``n`` independent samples
    moves the empirical TV by at most ``1 / n``, so McDiarmid's inequality
    gives ``P(TV >= E[TV] + t) <= exp(-2 n t^2)``; with ``t`` as above that
    is ``alpha``. ``E[TV]`` is estimated by the mean of ``null``
    (:func:`tv_null_distribution` with the same ``n``), whose standard
    error at a thousand trials is ~7e-5, far below the margin. ``E[TV]`` also
    has an exact form, ``sum_i E|X_i - n p_i| / (2 n)`` with ``X_i ~
    Binomial(n, p_i)`` (linearity of expectation over the cells), which
    tests/test_stats.py pins the threshold to.

    Args:
        null: TVs of direct draws, each in [0, 1] (NaN or negative values
            mean the null was computed wrongly: ``ValueError``).
        n: the sample size of the draws ``null`` was computed with and of
            the samples judged, >= 1.
        alpha: false-alarm rate, in (0, 1).

    Note:
        n = 20,000, alpha = 1e-6: margin ``sqrt(13.82 / 40,000) = 0.0186``.
        The bound is loose (the null's own spread is ~0.002), so this check
        catches a TV bias of about 0.035; :func:`chisquare_gof` catches 0.025
        (module docstring).
    """
    arr = _real_1d(null, "null")
    outside = ~((arr >= 0.0) & (arr <= 1.0))  # NaN is outside too
    if outside.any():
        raise ValueError(
            f"null must hold TV distances in [0, 1] (no NaN), got {arr[outside][0]!r} among its values"
        )
    _check_count(n, "n", 1)
    alpha = _check_alpha(alpha)
    return float(arr.mean() + math.sqrt(math.log(1.0 / alpha) / (2.0 * n)))


@dataclass(frozen=True)
class GoodnessOfFit:
    """Result of :func:`chisquare_gof`.

    ``statistic`` is Pearson's ``sum (O - E)^2 / E`` over the pooled cells,
    ``dof`` = pooled cells - 1, ``pooled_cells`` the number of original cells
    merged into the pooled remainder cell (0 when none were).
    """

    statistic: float
    dof: int
    pvalue: float
    pooled_cells: int

    def rejects(self, alpha: float = ALPHA) -> bool:
        """True when ``pvalue < alpha``: the samples do not follow ``p``."""
        return self.pvalue < _check_alpha(alpha)


def _observed(samples_or_counts: ArrayLike, p: np.ndarray, counts: bool) -> np.ndarray:
    """The observed count per cell of :func:`chisquare_gof` (float64), checked."""
    if counts:
        obs = _as_1d(samples_or_counts, "samples_or_counts")
        if not (np.issubdtype(obs.dtype, np.integer) or np.issubdtype(obs.dtype, np.floating)):
            raise ValueError(f"samples_or_counts (counts) must be numeric, got dtype {obs.dtype}")
        if obs.shape != p.shape:
            raise ValueError(f"samples_or_counts (counts) must have len(p) = {p.size} cells, got {obs.size}")
        if not np.all(np.isfinite(obs.astype(np.float64))) or np.any(obs < 0) or np.any(obs != np.round(obs)):
            raise ValueError("samples_or_counts (counts) must be non-negative integers")
        return obs.astype(np.float64)
    obs = np.bincount(_check_samples(samples_or_counts, p.size), minlength=p.size)
    return obs.astype(np.float64)


def _pooled(obs: np.ndarray, expected: np.ndarray, min_expected: float) -> tuple[np.ndarray, np.ndarray, int]:
    """(observed, expected, cells pooled): every cell expecting fewer than
    ``min_expected`` pooled into one, the last; if together they still fall
    short, the next smallest cells join until they do not."""
    order = np.argsort(expected, kind="stable")  # smallest expected first
    below = int((expected < min_expected).sum())
    reach = int(np.searchsorted(np.cumsum(expected[order]) >= min_expected, True)) + 1
    pooled = min(max(below, reach), expected.size) if below else 0
    if pooled:
        pool, keep = order[:pooled], order[pooled:]
        obs = np.append(obs[keep], obs[pool].sum())
        expected = np.append(expected[keep], expected[pool].sum())
    return obs, expected, pooled


def _checked_gof_inputs(
    samples_or_counts: ArrayLike, p: ArrayLike, counts: bool, min_expected: float
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`chisquare_gof`'s arguments checked: ``(p, observed counts per
    cell)``, at least one sample; ValueError naming the argument otherwise."""
    p = check_distribution(p, "p")
    check_real("min_expected", min_expected, low=0.0, low_open=True)
    if not isinstance(counts, (bool, np.bool_)):
        raise ValueError(f"counts must be a bool, got {counts!r}")
    obs = _observed(samples_or_counts, p, counts)
    if obs.sum() <= 0:
        raise ValueError("samples_or_counts must hold at least one sample")
    return p, obs


def chisquare_gof(
    samples_or_counts: ArrayLike,
    p: ArrayLike,
    *,
    counts: bool = False,
    min_expected: float = MIN_EXPECTED,
) -> GoodnessOfFit:
    """Pearson's chi-square test of samples (or counts) against ``p``.

    Cells with expected count ``n * p_i < min_expected`` are pooled into one
    cell, the smallest first; if that cell still expects fewer than
    ``min_expected``, the next smallest cells join it until it does. The
    chi-square approximation of the statistic is then sound (Cochran's rule
    of thumb: every expected count >= 5). The p-value comes from
    ``scipy.stats.chisquare`` on the pooled cells.

    A sample in a cell with ``p_i == 0`` is an impossible outcome: the
    result then has ``pvalue = 0`` and ``statistic = inf``.

    False-alarm rate: for an exact sampler the p-value is (approximately)
    uniform, so ``rejects(alpha)`` fires with probability ``alpha``; the
    claims use ``alpha = 1e-6`` (:data:`ALPHA`).

    Args:
        samples_or_counts: 1-D integer sample indices in ``[0, len(p))``, or,
            with ``counts=True``, one non-negative integer count per cell.
        p: the target distribution.
        counts: read the first argument as counts instead of samples.
        min_expected: the smallest expected count a cell may have, a finite
            number > 0 (default :data:`MIN_EXPECTED`, Cochran's 5).
    """
    p, obs = _checked_gof_inputs(samples_or_counts, p, counts, min_expected)
    n = obs.sum()
    impossible = p == 0
    if np.any(obs[impossible] > 0):
        return GoodnessOfFit(statistic=math.inf, dof=int((~impossible).sum()) - 1, pvalue=0.0, pooled_cells=0)
    obs, expected = obs[~impossible], n * p[~impossible] / p[~impossible].sum()
    if min_expected > max(n, MIN_EXPECTED):
        # Raised above the default past the samples themselves: no cell, not even
        # all of them pooled, could expect it, so the test could never run.
        raise ValueError(
            f"min_expected must be at most the number of samples ({int(n)}): no cell "
            f"can expect {min_expected:g}, so nothing would be tested (default "
            f"{MIN_EXPECTED:g})"
        )

    obs, expected, pooled = _pooled(obs, expected, min_expected)
    if obs.size < 2:
        # One cell left (all mass in one cell, or too few samples to split
        # the mass into two cells of min_expected): nothing to test.
        return GoodnessOfFit(statistic=0.0, dof=0, pvalue=1.0, pooled_cells=pooled)
    stat, pvalue = scipy.stats.chisquare(obs, expected)
    return GoodnessOfFit(
        statistic=float(stat), dof=int(obs.size - 1), pvalue=float(pvalue), pooled_cells=pooled
    )
