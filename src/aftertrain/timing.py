"""Paired timing: the ratio of a candidate's time to a baseline's (claim S8).

The articles timed on a busy laptop, where one baseline came out at 749 ms
and later at 448 ms. Their remedy, built here: run baseline and candidate
back to back, alternating which goes first (AB, BA, AB, ...), and take the
ratio ``candidate / baseline`` within each pair. Drift of the machine
(frequency scaling, other load) moves both halves of a pair alike and
cancels in the ratio; alternation keeps "runs first" (cold caches) or "runs
second" from always falling on one side.

The summary is the median of the pair ratios, with an order-statistic
confidence interval for it (:func:`median_interval`). A timing claim is a
decision (:func:`sequential_decision`): pairs are added in rounds, the
interval is looked at after each round on a fixed schedule with the error
split across the looks, and the verdict is ``holds`` (the interval inside
what the claim allows), ``broken`` (wholly outside it) or ``inconclusive``
(neither when the time budget is spent). docs/measurement.md states what
this guarantees.
"""

from __future__ import annotations

import gc
import math
import os
import time
from dataclasses import asdict, dataclass
from typing import Callable, Mapping

import numpy as np
import scipy.stats
import torch

from aftertrain.tolerances import TIMING_ALPHA, TIMING_BUDGET_S, TIMING_LOOKS
from aftertrain.verdicts import BROKEN, HOLDS, INCONCLUSIVE

Clock = Callable[[], float]


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
            f"values must hold at least {min_pairs(confidence)} values for "
            f"confidence {confidence}, got {n}"
        )
    coverage = 1.0 - 2.0 * float(scipy.stats.binom.cdf(k - 1, n, 0.5))
    return float(x[k - 1]), float(x[n - k]), coverage


def _check_confidence(confidence: float) -> None:
    if not (isinstance(confidence, (int, float)) and not isinstance(confidence, bool)
            and 0.0 < confidence < 1.0):
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


def _check_int(name: str, value: object, least: int, why: str = "") -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise ValueError(f"{name} must be an int >= {least}{why}, got {value!r}")


def _check_callable(name: str, value: object) -> None:
    if not callable(value):
        raise ValueError(f"{name} must be callable, got {type(value).__name__}")


class _Pairs:
    """Alternating pairs of one baseline/candidate, extended round by round.

    Pair i runs baseline then candidate when i is even, candidate then
    baseline when odd; each side's time is ``calls`` consecutive calls on
    ``clock``, divided by ``calls``.
    """

    def __init__(self, baseline: Callable[[], object], candidate: Callable[[], object],
                 calls: int, clock: Clock) -> None:
        self.baseline, self.candidate, self.calls, self.clock = baseline, candidate, calls, clock
        self.base: list[float] = []
        self.cand: list[float] = []

    def warm(self, warmup: int) -> None:
        for _ in range(warmup):
            self.baseline()
            self.candidate()

    def extend(self, n: int) -> None:
        for i in range(len(self.base), n):
            if i % 2 == 0:
                b = self._time(self.baseline)
                c = self._time(self.candidate)
            else:
                c = self._time(self.candidate)
                b = self._time(self.baseline)
            self.base.append(b)
            self.cand.append(c)

    def _time(self, fn: Callable[[], object]) -> float:
        start = self.clock()
        for _ in range(self.calls):
            fn()
        return (self.clock() - start) / self.calls

    def summary(self, confidence: float, threads: int, warmup: int) -> PairedTiming:
        if min(self.base) <= 0.0:
            raise RuntimeError(
                "a baseline timing came out as 0 s, below the timer's resolution; "
                "raise `calls`"
            )
        ratios = np.asarray(self.cand) / np.asarray(self.base)
        q1, median, q3 = np.percentile(ratios, [25, 50, 75])
        ci_low, ci_high, coverage = median_interval(ratios, confidence)
        return PairedTiming(
            baseline=tuple(self.base), candidate=tuple(self.cand),
            ratios=tuple(float(r) for r in ratios), median=float(median),
            minimum=float(ratios.min()), maximum=float(ratios.max()),
            q1=float(q1), q3=float(q3), ci_low=ci_low, ci_high=ci_high,
            confidence=confidence, threads=threads, torch_version=torch.__version__,
            calls=self.calls, warmup=warmup, coverage=coverage,
        )


class _Quiet:
    """``torch.set_num_threads(threads)`` and the garbage collector off
    (after one collection) while timing; both restored after, also on error."""

    def __init__(self, threads: int) -> None:
        self.threads = threads

    def __enter__(self) -> None:
        self.threads_before = torch.get_num_threads()
        self.gc_was_enabled = gc.isenabled()
        torch.set_num_threads(self.threads)

    def off(self) -> None:
        gc.collect()
        gc.disable()

    def on(self) -> None:
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
    garbage collector is disabled (after one ``gc.collect()``) so a
    collection does not land in one side's time; both are restored
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
        a 2-core box at load average 5, for a 0.1 ms matmul against twice
        that work: ``calls=1, pairs=61`` gave a median ratio 1.995-2.000,
        while ``calls=20`` gave ratios alternating between 1.3 and 4 with the
        order in the pair. Raise ``calls`` only as far as the timer needs;
        add pairs instead.
    """
    _check_callable("baseline", baseline)
    _check_callable("candidate", candidate)
    _check_callable("clock", clock)
    _check_confidence(confidence)
    _check_int("pairs", pairs, min_pairs(confidence), f" for confidence {confidence}")
    _check_int("warmup", warmup, 0)
    _check_int("calls", calls, 1)
    _check_int("threads", threads, 1)
    run = _Pairs(baseline, candidate, calls, clock)
    quiet = _Quiet(threads)
    with quiet:
        run.warm(warmup)
        quiet.off()
        run.extend(pairs)
    return run.summary(confidence, threads, warmup)


# --- decisions ---------------------------------------------------------------------


@dataclass(frozen=True)
class RatioRule:
    """What a claim allows the median ratio to be: ``[low, high]``.

    ``RatioRule.inside((0.9, 1.1))`` (no difference), ``at_least(2.0)``
    (slower by at least 2), ``at_most(0.5)`` (at least 2x faster). Against an
    interval ``[ci_low, ci_high]`` of the median: ``holds`` when the interval
    lies inside ``[low, high]``, ``broken`` when it lies wholly outside
    (``ci_high < low`` or ``ci_low > high``), undecided otherwise.
    """

    low: float = 0.0
    high: float = math.inf

    def __post_init__(self) -> None:
        for name in ("low", "high"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and not isinstance(v, bool)) or math.isnan(v):
                raise ValueError(f"{name} must be a number, got {v!r}")
        if not 0.0 <= self.low < self.high:
            raise ValueError(f"low and high must satisfy 0 <= low < high, got "
                             f"low={self.low!r}, high={self.high!r}")
        if (self.low, self.high) == (0.0, math.inf):
            raise ValueError("low or high must bound the ratio, got low=0 and high=inf")

    @classmethod
    def inside(cls, band: tuple[float, float]) -> "RatioRule":
        if not (isinstance(band, tuple) and len(band) == 2):
            raise ValueError(f"band must be a (low, high) tuple, got {band!r}")
        return cls(*band)

    @classmethod
    def at_least(cls, bound: float) -> "RatioRule":
        return cls(low=bound)

    @classmethod
    def at_most(cls, bound: float) -> "RatioRule":
        return cls(high=bound)

    def decide(self, ci_low: float, ci_high: float) -> str | None:
        """``holds``, ``broken`` or None (undecided) for the interval."""
        if not (math.isfinite(ci_low) and math.isfinite(ci_high) and ci_low <= ci_high):
            raise ValueError(f"ci_low, ci_high must be finite with ci_low <= ci_high, got "
                             f"{ci_low!r}, {ci_high!r}")
        if self.low <= ci_low and ci_high <= self.high:
            return HOLDS
        if ci_high < self.low or ci_low > self.high:
            return BROKEN
        return None

    def __str__(self) -> str:
        if self.high == math.inf:
            return f">= {self.low:g}"
        if self.low == 0.0:
            return f"<= {self.high:g}"
        return f"in [{self.low:g}, {self.high:g}]"


Timings = Mapping[str, PairedTiming]


@dataclass(frozen=True)
class Decision:
    """The outcome of :func:`sequential_decision`.

    ``verdict`` is ``holds``, ``broken`` or ``inconclusive``; ``timings``
    are the intervals at the look that decided (or the last look taken),
    each at level ``confidence = 1 - alpha / (max_looks * len(timings))``.
    """

    verdict: str
    timings: dict[str, PairedTiming]
    rule: str
    looks: int
    max_looks: int
    alpha: float
    confidence: float
    seconds: float
    load1: float

    def __post_init__(self) -> None:
        if self.verdict not in (HOLDS, BROKEN, INCONCLUSIVE):
            raise ValueError(f"verdict must be {HOLDS!r}, {BROKEN!r} or {INCONCLUSIVE!r}, "
                             f"got {self.verdict!r}")
        if not self.timings:
            raise ValueError("timings must hold at least one PairedTiming, got none")

    @property
    def timing(self) -> PairedTiming:
        """The one timing of a single-ratio decision."""
        if len(self.timings) != 1:
            raise ValueError(f"timing needs a decision of one ratio, this one has "
                             f"{len(self.timings)}: {', '.join(self.timings)}")
        return next(iter(self.timings.values()))

    @property
    def pairs(self) -> int:
        return max(len(t.ratios) for t in self.timings.values())

    def intervals(self) -> str:
        return ", ".join(f"{name}: {t.median:.3f} [{t.ci_low:.3f}, {t.ci_high:.3f}]"
                         for name, t in self.timings.items())

    @property
    def reason(self) -> str:
        """One line: the verdict, the rule, the intervals, pairs, seconds, load."""
        return (f"{self.verdict}: {self.rule}; {self.intervals()} after {self.pairs} pairs "
                f"(look {self.looks} of {self.max_looks}, alpha {self.alpha:g}) in "
                f"{self.seconds:.1f} s, 1-minute load {self.load1:.2f}")

    def as_dict(self) -> dict:
        return {"verdict": self.verdict, "rule": self.rule, "looks": self.looks,
                "max_looks": self.max_looks, "alpha": self.alpha,
                "confidence": self.confidence, "seconds": self.seconds, "load1": self.load1,
                "pairs": self.pairs,
                "timings": {k: {"median": t.median, "ci": [t.ci_low, t.ci_high],
                                "pairs": len(t.ratios)} for k, t in self.timings.items()}}


def load1() -> float:
    """The 1-minute load average (NaN where the OS has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return math.nan


def look_schedule(first: int, looks: int) -> tuple[int, ...]:
    """Pair counts at which the intervals are looked at: ``first * 2**j``,
    ``j < looks`` (fixed before any timing, so the error can be split across
    them)."""
    _check_int("first", first, 1)
    _check_int("looks", looks, 1)
    return tuple(first * 2 ** j for j in range(looks))


@dataclass(frozen=True)
class Judgement:
    """One claim judged on the intervals of a decision's ratios: ``rule``
    says what is decided (in words, for the reason); ``decide`` maps the
    timings to ``holds``, ``broken`` or None (undecided)."""

    rule: str
    decide: Callable[[Timings], str | None]

    def __post_init__(self) -> None:
        if not isinstance(self.rule, str) or not self.rule:
            raise ValueError(f"rule must be a non-empty description, got {self.rule!r}")
        _check_callable("decide", self.decide)


def sequential_decisions(
    sides: Mapping[str, tuple[Callable[[], object], Callable[[], object]]],
    judgements: Mapping[str, Judgement],
    *,
    alpha: float = TIMING_ALPHA,
    looks: int = TIMING_LOOKS,
    first: int | None = None,
    budget_s: float = TIMING_BUDGET_S,
    warmup: int = 2,
    calls: int | Mapping[str, int] = 1,
    threads: int = 1,
    clock: Clock = time.perf_counter,
) -> dict[str, Decision]:
    """Decide timing claims: add pairs in rounds until every judgement gives
    a verdict or the time budget is spent.

    ``sides`` names each ratio's ``(baseline, candidate)``. Round j brings
    every ratio to ``look_schedule(first, looks)[j]`` pairs (the alternating
    order continues across rounds); then each judgement not yet decided sees
    every ratio's :class:`PairedTiming`, each with its order-statistic
    interval at ``confidence = 1 - alpha / (looks * len(sides))``, and says
    ``holds``, ``broken`` or None. A judgement keeps the first verdict it
    gives (with the timings of that look). Before a round the time it will
    take is estimated from the rounds so far; if the elapsed time plus that
    estimate exceeds ``budget_s``, or the schedule is done, the judgements
    still undecided are ``inconclusive`` (with the last look's timings).
    The first round always runs.

    Guarantee (Bonferroni over the scheduled looks and the ratios): if the
    pair ratios of each side are independent draws with median m, then with
    probability >= 1 - alpha every interval at every scheduled look holds
    its m, whichever look the run stops at. A judgement that says ``holds``
    / ``broken`` only when the intervals exclude every value of the medians
    that would contradict it is then wrong with probability <= alpha, and
    all the judgements of one call are right together with that probability.

    Args:
        sides: name -> (baseline, candidate), zero-argument callables; >= 1.
        judgements: name -> :class:`Judgement`; >= 1.
        alpha: total error in (0, 1), split across looks and ratios.
        looks: the most looks, >= 1.
        first: pairs at the first look; default (and at least)
            :func:`min_pairs` of the per-interval confidence.
        budget_s: seconds, > 0 (soft: a round that has started finishes).
        warmup, calls, threads: as :func:`paired_timing` (``calls`` per
            name or one for all).
        clock: seconds, monotone; times the calls and the budget.

    Returns:
        name -> :class:`Decision`, one per judgement.
    """
    if not isinstance(sides, Mapping) or not sides:
        raise ValueError(f"sides must be a non-empty mapping name -> (baseline, candidate), "
                         f"got {sides!r}")
    for name, pair in sides.items():
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise ValueError(f"sides[{name!r}] must be a (baseline, candidate) tuple, got {pair!r}")
        _check_callable(f"sides[{name!r}] baseline", pair[0])
        _check_callable(f"sides[{name!r}] candidate", pair[1])
    if not isinstance(judgements, Mapping) or not judgements:
        raise ValueError(f"judgements must be a non-empty mapping name -> Judgement, "
                         f"got {judgements!r}")
    for name, j in judgements.items():
        if not isinstance(j, Judgement):
            raise ValueError(f"judgements[{name!r}] must be a Judgement, got {type(j).__name__}")
    _check_callable("clock", clock)
    if not (isinstance(alpha, float) and 0.0 < alpha < 1.0):
        raise ValueError(f"alpha must be a float in (0, 1), got {alpha!r}")
    _check_int("looks", looks, 1)
    if not (isinstance(budget_s, (int, float)) and not isinstance(budget_s, bool)
            and math.isfinite(budget_s) and budget_s > 0):
        raise ValueError(f"budget_s must be a finite number of seconds > 0, got {budget_s!r}")
    _check_int("warmup", warmup, 0)
    _check_int("threads", threads, 1)
    per_call = dict(calls) if isinstance(calls, Mapping) else dict.fromkeys(sides, calls)
    if set(per_call) != set(sides):
        raise ValueError(f"calls must name the same ratios as sides, got {sorted(per_call)}")
    for name, c in per_call.items():
        _check_int(f"calls[{name!r}]", c, 1)
    confidence = 1.0 - alpha / (looks * len(sides))
    least = min_pairs(confidence)
    if first is None:
        first = least
    _check_int("first", first, least, f" for confidence {confidence:.3g}")
    schedule = look_schedule(first, looks)

    def decision(verdict: str, name: str, look: int, timings: dict) -> Decision:
        return Decision(verdict=verdict, timings=timings, rule=judgements[name].rule,
                        looks=look, max_looks=looks, alpha=alpha, confidence=confidence,
                        seconds=clock() - start, load1=load1())

    runs = {n: _Pairs(b, c, per_call[n], clock) for n, (b, c) in sides.items()}
    decided: dict[str, Decision] = {}
    quiet = _Quiet(threads)
    start = clock()
    last, timings = 0, {}
    with quiet:
        for run in runs.values():
            run.warm(warmup)
        for look, size in enumerate(schedule, start=1):
            if look > 1:
                elapsed = clock() - start
                done = schedule[look - 2]
                if elapsed + elapsed / done * (size - done) > budget_s:
                    break
            quiet.off()
            for run in runs.values():
                run.extend(size)
            quiet.on()
            last = look
            timings = {n: r.summary(confidence, threads, warmup) for n, r in runs.items()}
            for name, judgement in judgements.items():
                if name in decided:
                    continue
                said = judgement.decide(timings)
                if said not in (HOLDS, BROKEN, None):
                    raise ValueError(f"judgements[{name!r}].decide must return {HOLDS!r}, "
                                     f"{BROKEN!r} or None, got {said!r}")
                if said is not None:
                    decided[name] = decision(said, name, look, timings)
            if len(decided) == len(judgements):
                break
    return {name: decided.get(name) or decision(INCONCLUSIVE, name, last, timings)
            for name in judgements}


def sequential_decision(
    sides: Mapping[str, tuple[Callable[[], object], Callable[[], object]]],
    decide: Callable[[Timings], str | None],
    *,
    rule: str,
    **kwargs,
) -> Decision:
    """:func:`sequential_decisions` of one judgement ``Judgement(rule,
    decide)`` (keyword arguments passed on)."""
    return sequential_decisions(sides, {"claim": Judgement(rule, decide)}, **kwargs)["claim"]


def decide_ratio(
    baseline: Callable[[], object],
    candidate: Callable[[], object],
    rule: RatioRule,
    **kwargs,
) -> Decision:
    """:func:`sequential_decision` of one ratio ``candidate / baseline``
    against ``rule`` (keyword arguments passed on)."""
    if not isinstance(rule, RatioRule):
        raise ValueError(f"rule must be a RatioRule, got {type(rule).__name__}")
    return sequential_decision(
        {"ratio": (baseline, candidate)},
        lambda t: rule.decide(t["ratio"].ci_low, t["ratio"].ci_high),
        rule=f"median ratio {rule}", **kwargs)
