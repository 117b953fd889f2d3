"""Paired timing: the ratio of a candidate's time to a baseline's (claim S8).

The articles timed on a busy laptop, where one baseline came out at 749 ms
and later at 448 ms. Their remedy, built here: run baseline and candidate
back to back, alternating which goes first (AB, BA, AB, ...), and take the
ratio ``candidate / baseline`` within each pair. Drift of the machine
(frequency scaling, other load) moves both halves of a pair alike and
cancels in the ratio; alternation keeps "runs first" (cold caches) or "runs
second" from always falling on one side.

The summary is the median of the pair ratios, with an order-statistic
confidence interval for it (:func:`median_interval`), and the verdicts the
claims need: no difference (the interval inside an equivalence band), or
slower / faster by at least a factor (the interval beyond it).
"""

from __future__ import annotations

import gc
import math
import time
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import scipy.stats
import torch


def median_interval(
    values: np.ndarray | list[float],
    confidence: float,
) -> tuple[float, float, float]:
    """Distribution-free confidence interval for the median of ``values``.

    With ``x_(1) <= ... <= x_(n)`` the sorted values, the interval is
    ``[x_(k), x_(n+1-k)]`` for the largest ``k`` with
    ``2 * P(Binomial(n, 1/2) <= k - 1) <= 1 - confidence``: the true median
    lies below ``x_(k)`` only if fewer than ``k`` of ``n`` independent values
    fall below it, an event of probability ``P(Bin(n, 1/2) <= k - 1)``;
    likewise above. Exact for any continuous distribution of i.i.d. values.

    Why this and not a bootstrap: it needs no assumption on the shape of the
    ratio distribution (timing noise is skewed, with rare large outliers), its
    coverage is exact rather than asymptotic at the small n timing affords
    (the bootstrap of a median is unreliable at n ~ 20), and it is
    deterministic: no resampling seed.

    Returns:
        ``(low, high, coverage)``, where ``coverage = 1 - 2 P(Bin <= k-1)``
        >= ``confidence`` is the interval's actual confidence level.

    Note:
        n = 21, confidence 0.99: k = 5, the interval is the 5th to 17th
        smallest ratio, coverage 0.9928. At confidence 1 - 1e-6 n must be at
        least 21 (k = 1: the interval is min to max, coverage 1 - 2^-20).
    """
    x = np.sort(np.asarray(values, dtype=np.float64))
    if x.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {x.shape}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    n = x.size
    k = _order_statistic_rank(n, confidence)
    if k == 0:
        raise ValueError(
            f"values must hold at least {min_pairs(confidence)} values for "
            f"confidence {confidence}, got {n}"
        )
    coverage = 1.0 - 2.0 * float(scipy.stats.binom.cdf(k - 1, n, 0.5))
    return float(x[k - 1]), float(x[n - k]), coverage


def _order_statistic_rank(n: int, confidence: float) -> int:
    """Largest k with 2 * P(Bin(n, 1/2) <= k - 1) <= 1 - confidence (0 if none)."""
    cdf = scipy.stats.binom.cdf(np.arange(n), n, 0.5)
    return int(np.count_nonzero(2.0 * cdf <= 1.0 - confidence))


def min_pairs(confidence: float) -> int:
    """Fewest values for which :func:`median_interval` exists at ``confidence``:
    the smallest n with ``2 * 2^-n <= 1 - confidence`` (8 at 0.99, 21 at
    1 - 1e-6)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    n = max(1, math.ceil(math.log2(2.0 / (1.0 - confidence))) - 1)
    while _order_statistic_rank(n, confidence) == 0:
        n += 1
    return n


@dataclass(frozen=True)
class PairedTiming:
    """Times of alternating baseline/candidate pairs and their ratio summary.

    Times are seconds per call (a timing of ``calls`` calls divided by
    ``calls``). ``ratios[i] = candidate[i] / baseline[i]``: above 1 the
    candidate is slower. ``median``, ``minimum``, ``maximum``, ``q1``, ``q3``
    summarise the ratios (quartiles by linear interpolation);
    ``[ci_low, ci_high]`` is the order-statistic interval of the median at
    level ``confidence`` (actual level ``coverage``, see
    :func:`median_interval`).
    """

    baseline: tuple[float, ...]
    candidate: tuple[float, ...]
    ratios: tuple[float, ...]
    median: float
    minimum: float
    maximum: float
    q1: float
    q3: float
    ci_low: float
    ci_high: float
    confidence: float
    threads: int
    torch_version: str
    calls: int
    warmup: int
    coverage: float

    def holds_no_difference(self, band: tuple[float, float] = (0.9, 1.1)) -> bool:
        """True when the interval lies inside ``band``: ``band[0] <= ci_low``
        and ``ci_high <= band[1]`` (equivalence: any difference is smaller
        than the band allows, at the interval's confidence)."""
        low, high = band
        if not 0.0 < low <= 1.0 <= high:
            raise ValueError(f"band must satisfy 0 < band[0] <= 1 <= band[1], got {band!r}")
        return low <= self.ci_low and self.ci_high <= high

    def slower_by_at_least(self, factor: float) -> bool:
        """True when the candidate takes at least ``factor`` times the
        baseline's time: ``ci_low >= factor``."""
        _check_factor(factor)
        return self.ci_low >= factor

    def faster_by_at_least(self, factor: float) -> bool:
        """True when the candidate is at least ``factor`` times as fast:
        ``ci_high <= 1 / factor``."""
        _check_factor(factor)
        return self.ci_high <= 1.0 / factor

    def as_dict(self) -> dict:
        """JSON-able summary (tuples become lists), e.g. for
        ``benchmark.extra_info``."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def _check_factor(factor: float) -> None:
    if not (isinstance(factor, (int, float)) and math.isfinite(factor) and factor > 0):
        raise ValueError(f"factor must be a finite number > 0, got {factor!r}")


def paired_timing(
    baseline: Callable[[], object],
    candidate: Callable[[], object],
    *,
    pairs: int = 21,
    warmup: int = 2,
    calls: int = 1,
    threads: int = 1,
    confidence: float = 0.99,
) -> PairedTiming:
    """Time ``baseline`` and ``candidate`` in ``pairs`` alternating pairs.

    Pair i runs baseline then candidate when i is even, candidate then
    baseline when i is odd; each side's time is ``calls`` consecutive calls
    measured with ``time.perf_counter`` and divided by ``calls``, so work
    shorter than the timer's resolution can still be timed. Before the pairs,
    each side runs ``warmup`` times (alternating, untimed).

    While timing, ``torch.set_num_threads(threads)`` is in force and the
    garbage collector is disabled (after one ``gc.collect()``) so a
    collection does not land in one side's time; both are restored
    afterwards, also on error.

    Args:
        baseline: zero-argument callable, the reference.
        candidate: zero-argument callable, the thing compared.
        pairs: number of pairs, at least :func:`min_pairs` (confidence)
            (8 at the default 0.99).
        warmup: untimed runs of each side first, >= 0.
        calls: calls per timing, >= 1.
        threads: torch intra-op threads while timing, >= 1.
        confidence: level of the median's interval, in (0, 1).

    Returns:
        A :class:`PairedTiming`; ``ratio = candidate / baseline``.

    Note:
        Keep one timing short against a scheduler time slice (about 1 ms):
        on a loaded machine a preemption then spoils a few pairs, which the
        median and its interval discard, instead of every timing. Measured on
        a 2-core box at load average 5, for a 0.1 ms matmul against twice
        that work: ``calls=1, pairs=61`` gave a median ratio 1.995-2.000,
        while ``calls=20`` gave ratios alternating between 1.3 and 4 with the
        order in the pair. Raise ``calls`` only as far as the timer needs;
        add pairs instead.
    """
    if not callable(baseline):
        raise ValueError(f"baseline must be callable, got {type(baseline).__name__}")
    if not callable(candidate):
        raise ValueError(f"candidate must be callable, got {type(candidate).__name__}")
    if not (isinstance(confidence, float) and 0.0 < confidence < 1.0):
        raise ValueError(f"confidence must be a float in (0, 1), got {confidence!r}")
    needed = min_pairs(confidence)
    for name, value, least in (("pairs", pairs, needed), ("warmup", warmup, 0),
                               ("calls", calls, 1), ("threads", threads, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            why = f" for confidence {confidence}" if name == "pairs" else ""
            raise ValueError(f"{name} must be an int >= {least}{why}, got {value!r}")

    threads_before = torch.get_num_threads()
    gc_was_enabled = gc.isenabled()
    torch.set_num_threads(threads)
    try:
        for _ in range(warmup):
            baseline()
            candidate()
        gc.collect()
        gc.disable()
        base_times, cand_times = [], []
        for i in range(pairs):
            if i % 2 == 0:
                b = _time_calls(baseline, calls)
                c = _time_calls(candidate, calls)
            else:
                c = _time_calls(candidate, calls)
                b = _time_calls(baseline, calls)
            base_times.append(b)
            cand_times.append(c)
    finally:
        if gc_was_enabled:
            gc.enable()
        torch.set_num_threads(threads_before)

    if min(base_times) <= 0.0:
        raise RuntimeError(
            "a baseline timing came out as 0 s, below the timer's resolution; "
            "raise `calls`"
        )
    ratios = np.asarray(cand_times) / np.asarray(base_times)
    q1, median, q3 = np.percentile(ratios, [25, 50, 75])
    ci_low, ci_high, coverage = median_interval(ratios, confidence)
    return PairedTiming(
        baseline=tuple(base_times),
        candidate=tuple(cand_times),
        ratios=tuple(float(r) for r in ratios),
        median=float(median),
        minimum=float(ratios.min()),
        maximum=float(ratios.max()),
        q1=float(q1),
        q3=float(q3),
        ci_low=ci_low,
        ci_high=ci_high,
        confidence=confidence,
        threads=threads,
        torch_version=torch.__version__,
        calls=calls,
        warmup=warmup,
        coverage=coverage,
    )


def _time_calls(fn: Callable[[], object], calls: int) -> float:
    """Seconds per call of ``calls`` consecutive calls of ``fn``."""
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls
