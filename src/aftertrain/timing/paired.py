"""Paired timing: alternating pairs, the median ratio and its interval.

One fixed-size timing (:func:`paired_timing`) and the distribution-free
interval of a median (:func:`median_interval`); the decisions built on them
are in :mod:`aftertrain.timing.sequential`, their types in
:mod:`aftertrain.timing.decision`.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import scipy.stats
import torch

from aftertrain.core.validation import check_callable, check_int

Clock = Callable[[], float]


@dataclass(frozen=True)
class Timed:
    """What a side returns to be timed by its own clock: ``seconds`` of the
    part of its call the ratio is about (a loop timing one of its parts
    where it runs: :func:`aftertrain.experiments.round_replays.in_place`),
    and the call's ``result``. :class:`Pairs` then takes ``seconds`` as the
    side's time instead of the call's wall time; the budget still counts
    the wall time."""

    seconds: float
    result: object = None

    def __post_init__(self) -> None:
        ok = isinstance(self.seconds, (int, float)) and not isinstance(self.seconds, bool)
        if not (ok and math.isfinite(self.seconds) and self.seconds >= 0):
            raise ValueError(f"Timed.seconds must be a finite number >= 0, got {self.seconds!r}")


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

    Args:
        values: 1-D, finite numbers.
        confidence: level in (0, 1).

    Returns:
        ``(low, high, coverage)``, where ``coverage = 1 - 2 P(Bin <= k-1)``
        >= ``confidence`` is the interval's actual confidence level.

    Note:
        n = 21, confidence 0.99: k = 5, the interval is the 5th to 17th
        smallest ratio, coverage 0.9928. At confidence 1 - 1e-6 n must be at
        least 21 (k = 1: the interval is min to max, coverage 1 - 2^-20).
    """
    _check_confidence(confidence)
    try:
        x = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"values must be numbers, got {type(values).__name__}") from None
    if x.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("values must be finite, got NaN or inf")
    x = np.sort(x)
    n = x.size
    k = _order_statistic_rank(n, confidence)
    if k == 0:
        raise ValueError(
            f"values must hold at least {min_pairs(confidence)} values for confidence {confidence}, got {n}"
        )
    coverage = 1.0 - 2.0 * float(scipy.stats.binom.cdf(k - 1, n, 0.5))
    return float(x[k - 1]), float(x[n - k]), coverage


def _check_confidence(confidence: float) -> None:
    if not (
        isinstance(confidence, (int, float)) and not isinstance(confidence, bool) and 0.0 < confidence < 1.0
    ):
        raise ValueError(f"confidence must be a float in (0, 1), got {confidence!r}")


def _order_statistic_rank(n: int, confidence: float) -> int:
    """Largest k with 2 * P(Bin(n, 1/2) <= k - 1) <= 1 - confidence (0 if none)."""
    cdf = scipy.stats.binom.cdf(np.arange(n), n, 0.5)
    return int(np.count_nonzero(2.0 * cdf <= 1.0 - confidence))


def min_pairs(confidence: float) -> int:
    """Fewest values for which :func:`median_interval` exists at ``confidence``:
    the smallest n with ``2 * 2^-n <= 1 - confidence`` (8 at 0.99, 21 at
    1 - 1e-6)."""
    _check_confidence(confidence)
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


MAX_PAIRS = 100_000  # far past any decision's need; more is a typo that would run for hours


class Pairs:
    """Alternating pairs of one baseline/candidate, extended round by round.

    Pair i runs baseline then candidate when i is even, candidate then
    baseline when odd; each side's time is ``calls`` consecutive calls on
    ``clock``, divided by ``calls``, or, for a side whose calls return
    :class:`Timed`, the seconds they report, divided by ``calls``.
    """

    def __init__(
        self, baseline: Callable[[], object], candidate: Callable[[], object], calls: int, clock: Clock
    ) -> None:
        self.baseline, self.candidate, self.calls, self.clock = baseline, candidate, calls, clock
        self.base: list[float] = []
        self.cand: list[float] = []
        self.walls: list[float] = []  # each pair's seconds on the clock, both sides

    def warm(self, warmup: int) -> float:
        """Run each side ``warmup`` times, alternating, outside the pairs;
        returns the seconds it took (on ``clock``)."""
        start = self.clock()
        for _ in range(warmup):
            self.baseline()
            self.candidate()
        return self.clock() - start

    def extend(self, n: int) -> None:
        """Time pairs until there are ``n``: baseline first in even pairs, candidate first in odd ones."""
        for i in range(len(self.base), n):
            if i % 2 == 0:
                b, b_wall = self._time(self.baseline)
                c, c_wall = self._time(self.candidate)
            else:
                c, c_wall = self._time(self.candidate)
                b, b_wall = self._time(self.baseline)
            self.base.append(b)
            self.cand.append(c)
            self.walls.append(b_wall + c_wall)

    def seconds(self) -> float:
        """Seconds the timed pairs took on the clock (both sides, every call;
        a :class:`Timed` side's whole calls)."""
        return math.fsum(self.walls)

    def truncate(self, n: int) -> None:
        """Keep the first ``n`` pairs (a look cut short is dropped)."""
        del self.base[n:], self.cand[n:], self.walls[n:]

    def _time(self, fn: Callable[[], object]) -> tuple[float, float]:
        """``(time, wall)``: the side's time per call (the clock's, or the
        seconds its :class:`Timed` results report) and the calls' seconds on the clock."""
        start = self.clock()
        own = [out.seconds for out in (fn() for _ in range(self.calls)) if isinstance(out, Timed)]
        wall = self.clock() - start
        if not math.isfinite(wall):
            raise ValueError(f"clock must return finite seconds, got a timing of {wall / self.calls}")
        if own and len(own) != self.calls:
            raise ValueError(f"a side returned Timed in {len(own)} of its {self.calls} calls: in all or none")
        return (math.fsum(own) if own else wall) / self.calls, wall

    def summary(self, confidence: float, threads: int, warmup: int) -> PairedTiming:
        """The pairs so far as a :class:`PairedTiming` (median ratio and its interval at ``confidence``)."""
        if min(self.base) <= 0.0:
            raise RuntimeError(
                "a baseline timing came out as 0 s, below the timer's resolution; raise `calls`"
            )
        ratios = np.asarray(self.cand) / np.asarray(self.base)
        q1, median, q3 = np.percentile(ratios, [25, 50, 75])
        ci_low, ci_high, coverage = median_interval(ratios, confidence)
        return PairedTiming(
            baseline=tuple(self.base),
            candidate=tuple(self.cand),
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
            calls=self.calls,
            warmup=warmup,
            coverage=coverage,
        )


class Quiet:
    """``torch.set_num_threads(threads)`` and the garbage collector off while
    timing; both restored after, also on error.

    The collector is switched off without a collection first, as
    :mod:`timeit` does: off is what keeps a collection out of one side's
    time. A full ``gc.collect()`` per timing cost 0.1-0.5 s in a test process
    holding the models (measured in the suite) and made
    the timing method's own fake-clock tests the slowest of their folder."""

    def __init__(self, threads: int) -> None:
        self.threads = threads

    def __enter__(self) -> None:
        self.threads_before = torch.get_num_threads()
        self.gc_was_enabled = gc.isenabled()
        torch.set_num_threads(self.threads)

    def off(self) -> None:
        """Keep the collector off (timing starts); no collection first."""
        gc.disable()

    def on(self) -> None:
        """Turn the collector back on if it was on (timing paused or done)."""
        if self.gc_was_enabled:
            gc.enable()

    def __exit__(self, *exc) -> None:
        self.on()
        torch.set_num_threads(self.threads_before)


def paired_timing(
    baseline: Callable[[], object],
    candidate: Callable[[], object],
    *,
    pairs: int = 21,
    warmup: int = 2,
    calls: int = 1,
    threads: int = 1,
    confidence: float = 0.99,
    clock: Clock = time.perf_counter,
) -> PairedTiming:
    """Time ``baseline`` and ``candidate`` in ``pairs`` alternating pairs.

    Pair i runs baseline then candidate when i is even, candidate then
    baseline when i is odd; each side's time is ``calls`` consecutive calls
    measured with ``clock`` and divided by ``calls``, so work shorter than
    the timer's resolution can still be timed. Before the pairs, each side
    runs ``warmup`` times (alternating, untimed).

    While timing, ``torch.set_num_threads(threads)`` is in force and the
    garbage collector is disabled (no collection first, as :mod:`timeit`
    does) so a collection does not land in one side's time; both are restored
    afterwards, also on error.

    One fixed-size timing: its interval is valid when looked at once. A
    claim's verdict is :func:`sequential_decision`, which may look several
    times.

    Args:
        baseline: zero-argument callable, the reference.
        candidate: zero-argument callable, the thing compared.
        pairs: number of pairs, at least :func:`min_pairs` (confidence)
            (8 at the default 0.99).
        warmup: untimed runs of each side first, >= 0.
        calls: calls per timing, >= 1.
        threads: torch intra-op threads while timing, >= 1.
        confidence: level of the median's interval, in (0, 1).
        clock: seconds, monotone (``time.perf_counter``; a fake in tests).

    Returns:
        A :class:`PairedTiming`; ``ratio = candidate / baseline``.

    Note:
        Keep one timing short against a scheduler time slice (about 1 ms):
        on a loaded machine a preemption then spoils a few pairs, which the
        median and its interval discard, instead of every timing. Measured on
        a 2-core machine with more runnable processes than cores, for a
        0.1 ms matmul against twice that work: ``calls=1, pairs=61`` gave a
        median ratio 1.995-2.000, while ``calls=20`` gave ratios alternating
        between 1.3 and 4 with the order in the pair. Raise ``calls`` only as far as the timer needs;
        add pairs instead.

    Long: this docstring is the protocol and its measured note; the body
    is the argument checks and four calls.
    """
    check_callable("baseline", baseline)
    check_callable("candidate", candidate)
    check_callable("clock", clock)
    _check_confidence(confidence)
    check_int(
        "pairs", pairs, least=min_pairs(confidence), most=MAX_PAIRS, why=f" for confidence {confidence}"
    )
    check_int("warmup", warmup, least=0)
    check_int("calls", calls, least=1)
    check_int("threads", threads, least=1)
    run = Pairs(baseline, candidate, calls, clock)
    quiet = Quiet(threads)
    with quiet:
        run.warm(warmup)
        quiet.off()
        run.extend(pairs)
    return run.summary(confidence, threads, warmup)
