"""Timing claims as sequential decisions: holds, broken or inconclusive.

Pairs are added in rounds on a schedule of looks fixed in advance, the
error split across the looks and the ratios (Bonferroni), until every
judgement has a verdict or the time budget is spent. docs/measurement.md
states what this guarantees.
"""

from __future__ import annotations

import dataclasses
import math
import os
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from aftertrain.claims.verdicts import BROKEN, HOLDS, INCONCLUSIVE
from aftertrain.core.tolerances import TIMING_ALPHA, TIMING_BUDGET_S, TIMING_LOOKS
from aftertrain.core.validation import check_callable, check_int, check_real
from aftertrain.timing.paired import (
    Clock,
    PairedTiming,
    Pairs,
    Quiet,
    min_pairs,
)


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
    def inside(cls, band: tuple[float, float]) -> RatioRule:
        if not (isinstance(band, tuple) and len(band) == 2):
            raise ValueError(f"band must be a (low, high) tuple, got {band!r}")
        return cls(*band)

    @classmethod
    def at_least(cls, bound: float) -> RatioRule:
        return cls(low=bound)

    @classmethod
    def at_most(cls, bound: float) -> RatioRule:
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
    An ``inconclusive`` decision whose budget ran out before its first look
    has ``looks == 0`` and no timings.
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
    note: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in (HOLDS, BROKEN, INCONCLUSIVE):
            raise ValueError(f"verdict must be {HOLDS!r}, {BROKEN!r} or {INCONCLUSIVE!r}, "
                             f"got {self.verdict!r}")
        if not self.timings and not (self.verdict == INCONCLUSIVE and self.looks == 0):
            raise ValueError("timings must hold at least one PairedTiming, got none "
                             "(only an inconclusive decision with looks=0 has none)")

    @property
    def timing(self) -> PairedTiming:
        """The one timing of a single-ratio decision."""
        if len(self.timings) != 1:
            raise ValueError(f"timing needs a decision of one ratio, this one has "
                             f"{len(self.timings)}: {', '.join(self.timings)}")
        return next(iter(self.timings.values()))

    @property
    def pairs(self) -> int:
        return max((len(t.ratios) for t in self.timings.values()), default=0)

    def intervals(self) -> str:
        return ", ".join(f"{name}: {t.median:.3f} [{t.ci_low:.3f}, {t.ci_high:.3f}]"
                         for name, t in self.timings.items())

    @property
    def reason(self) -> str:
        """One line: the verdict, the rule, the intervals, pairs, seconds, load."""
        if self.looks == 0:
            return (f"{self.verdict}: {self.rule}; the budget ran out before the first look "
                    f"(of {self.max_looks}, alpha {self.alpha:g}) in {self.seconds:.1f} s, "
                    f"1-minute load {self.load1:.2f}")
        note = f"; {self.note}" if self.note else ""
        return (f"{self.verdict}: {self.rule}; {self.intervals()} after {self.pairs} pairs "
                f"(look {self.looks} of {self.max_looks}, alpha {self.alpha:g}) in "
                f"{self.seconds:.1f} s, 1-minute load {self.load1:.2f}{note}")

    def as_dict(self) -> dict:
        return {"verdict": self.verdict, "rule": self.rule, "looks": self.looks,
                "max_looks": self.max_looks, "alpha": self.alpha,
                "confidence": self.confidence, "seconds": self.seconds, "load1": self.load1,
                "pairs": self.pairs, "note": self.note,
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
    check_int("first", first, least=1)
    check_int("looks", looks, least=1)
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
        check_callable("decide", self.decide)


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
    every_ratio: bool = False,
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

    After a look only the ratios that can still decide an undecided
    judgement get more pairs (:func:`_plan`: the ratios it stays undecided
    on when the others are taken as known); the rest keep their pairs and
    intervals. A judgement undecided even with every ratio of the decision
    at its median (it waits on intervals it reads from elsewhere) stops at
    once as ``inconclusive`` with a ``note`` saying so: the budget is not
    spent on a verdict no pairs can buy. Both change only how long a
    decision runs, never the intervals a verdict is read from.
    ``every_ratio=True`` turns both off: every ratio gets every look's pairs
    until every judgement is decided (for a decision whose intervals later
    judgements read too, which its own judgements cannot speak for).

    The budget is also checked after every pair, the first round's
    included: a round it cuts short is dropped (the look before it stands),
    and a first round cut short gives ``inconclusive`` with no look
    (``looks == 0``). So a decision ends within ``budget_s`` plus one pair.

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
        budget_s: seconds, > 0, warm-up included (exceeded by at most one pair).
        warmup, calls, threads: as :func:`paired_timing` (``calls`` per
            name or one for all).
        clock: seconds, monotone; times the calls and the budget.
        every_ratio: extend every ratio at every look (see above).

    Returns:
        name -> :class:`Decision`, one per judgement.
    """
    per_call, confidence, schedule = _checked_plan(sides, judgements, alpha, looks, first,
                                                   budget_s, warmup, calls, threads, clock)
    if not isinstance(every_ratio, bool):
        raise ValueError(f"every_ratio must be a bool, got {every_ratio!r}")

    def decision(verdict: str, name: str, look: int, timings: dict, note: str = "") -> Decision:
        return Decision(verdict=verdict, timings=timings, rule=judgements[name].rule,
                        looks=look, max_looks=looks, alpha=alpha, confidence=confidence,
                        seconds=clock() - start, load1=load1(), note=note)

    runs = {n: Pairs(b, c, per_call[n], clock) for n, (b, c) in sides.items()}
    decided: dict[str, Decision] = {}
    quiet = Quiet(threads)
    start = clock()
    last, timings = 0, {}
    need = set(runs)
    with quiet:
        for run in runs.values():
            run.warm(warmup)
        for look, size in enumerate(schedule, start=1):
            before = {n: len(r.base) for n, r in runs.items()}
            if look > 1 and clock() - start + _round_cost(runs, need, size, clock() - start) \
                    > budget_s:
                break
            quiet.off()
            cut = _extend_or_cut({n: runs[n] for n in runs if n in need}, size,
                                 lambda: clock() - start > budget_s)
            quiet.on()
            if cut:  # this look is not taken: the one before stands
                for n, run in runs.items():
                    run.truncate(before[n])
                break
            last = look
            timings = {n: r.summary(confidence, threads, warmup) if n in need or not timings
                       else timings[n] for n, r in runs.items()}
            for name, said in _verdicts(judgements, decided, timings).items():
                decided[name] = decision(said, name, look, timings)
            if len(decided) == len(judgements) or look == len(schedule):
                break
            need = set(runs) if every_ratio else set()
            for name, judgement in judgements.items():
                if name in decided or every_ratio:
                    continue
                wants = _plan(judgement, timings, runs, schedule[look:],
                              budget_s - (clock() - start), clock() - start)
                if not wants:
                    decided[name] = decision(INCONCLUSIVE, name, look, timings, note=(
                        "stopped early: undecided even with every ratio of this decision "
                        "at its median"))
                else:
                    need |= wants
            if not need:
                break
    return {name: decided.get(name) or decision(INCONCLUSIVE, name, last, timings)
            for name in judgements}


def _plan(judgement: Judgement, timings: dict[str, PairedTiming], runs: dict[str, Pairs],
          sizes: tuple[int, ...], left: float, elapsed: float) -> set[str]:
    """The ratios whose further pairs can still decide ``judgement``; empty
    when it is undecided even with every ratio taken as known (its interval
    collapsed to its median): then narrowing this decision's intervals
    cannot decide it; only medians moving, or narrower intervals it reads
    from elsewhere (the speedup judgements read the cost decision's, fixed
    by then), could.

    Each ratio is asked alone: with every other ratio taken as known, does
    it keep the judgement undecided? Those that do are extended. When none
    does alone (the judgement reads the ratios jointly, e.g. a sum), the
    fewest of the relatively widest whose intervals, as today's ratios
    predict them at the largest look the budget allows (:func:`_projected`),
    decide it; every ratio when none do. A ratio left out keeps its pairs
    and its interval, which holds its median with the same guarantee (its
    pair count is a scheduled look's)."""
    points = _projected(timings, set(timings), math.inf)
    if judgement.decide(points) is None:
        return set()
    wants = {n for n in timings if judgement.decide({**points, n: timings[n]}) is None}
    if wants:
        return wants
    widest = sorted(timings, key=lambda n: (timings[n].ci_low - timings[n].ci_high)
                    / timings[n].median)
    for i in range(1, len(widest) + 1):
        prefix = set(widest[:i])
        reach = _reachable(runs, prefix, sizes, left, elapsed)
        if not reach or judgement.decide(_projected(timings, prefix, reach)) is not None:
            return prefix
    return set(timings)


def _projected(timings: dict[str, PairedTiming], names: set[str], pairs: float
               ) -> dict[str, PairedTiming]:
    """``timings`` with the intervals of ``names`` as they would be at
    ``pairs`` pairs if the ratios so far were the law: the order-statistic
    interval of n pairs spans about the quantiles 0.5 -+ z / (2 sqrt(n)) (z
    the normal quantile of its confidence), read off today's ratios and kept
    inside today's interval; ``pairs = inf`` collapses them to the median.
    (At the first look's few pairs the interval is about the sample's whole
    range, so it narrows much faster than 1/sqrt(pairs) at first.)"""
    out = dict(timings)
    for n in names:
        t = timings[n]
        if pairs == math.inf:
            low = high = t.median
        else:
            z = statistics.NormalDist().inv_cdf(1.0 - (1.0 - t.confidence) / 2.0)
            q = min(0.5, z / (2.0 * math.sqrt(pairs)))
            a, b = np.quantile(np.asarray(t.ratios), [0.5 - q, 0.5 + q])
            low = min(max(float(a), t.ci_low), t.median)
            high = max(min(float(b), t.ci_high), t.median)
        out[n] = dataclasses.replace(t, ci_low=low, ci_high=high)
    return out


def _round_cost(runs: dict[str, Pairs], names: set[str], size: int, elapsed: float) -> float:
    """Seconds to bring the ratios ``names`` to ``size`` pairs: each ratio's
    own seconds per pair so far, scaled by the run's overhead (elapsed time
    over the time the pairs themselves took)."""
    timed = sum(r.seconds() for r in runs.values())
    overhead = elapsed / timed if timed > 0 else 1.0
    return overhead * sum(max(size - len(runs[n].base), 0) * runs[n].seconds() / len(runs[n].base)
                          for n in names if runs[n].base)


def _reachable(runs: dict[str, Pairs], names: set[str], sizes: tuple[int, ...], left: float,
               elapsed: float) -> int:
    """The largest of the coming look sizes ``sizes`` to which the ratios
    ``names`` can be brought within ``left`` seconds (0 when none)."""
    reach = 0
    for size in sizes:
        if _round_cost(runs, names, size, elapsed) <= left:
            reach = size
    return reach


def _checked_plan(sides, judgements, alpha, looks, first, budget_s, warmup, calls, threads,
                  clock) -> tuple[dict[str, int], float, list[int]]:
    """:func:`sequential_decisions`' arguments checked: (calls per ratio, the
    per-interval confidence, the look schedule)."""
    if not isinstance(sides, Mapping) or not sides:
        raise ValueError(f"sides must be a non-empty mapping name -> (baseline, candidate), "
                         f"got {sides!r}")
    for name, pair in sides.items():
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise ValueError(f"sides[{name!r}] must be a (baseline, candidate) tuple, got {pair!r}")
        check_callable(f"sides[{name!r}] baseline", pair[0])
        check_callable(f"sides[{name!r}] candidate", pair[1])
    if not isinstance(judgements, Mapping) or not judgements:
        raise ValueError(f"judgements must be a non-empty mapping name -> Judgement, "
                         f"got {judgements!r}")
    for name, j in judgements.items():
        if not isinstance(j, Judgement):
            raise ValueError(f"judgements[{name!r}] must be a Judgement, got {type(j).__name__}")
    check_callable("clock", clock)
    if not (isinstance(alpha, float) and 0.0 < alpha < 1.0):
        raise ValueError(f"alpha must be a float in (0, 1), got {alpha!r}")
    check_int("looks", looks, least=1)
    check_real("budget_s", budget_s, low=0, low_open=True, what="a number of seconds")
    check_int("warmup", warmup, least=0)
    check_int("threads", threads, least=1)
    per_call = dict(calls) if isinstance(calls, Mapping) else dict.fromkeys(sides, calls)
    if set(per_call) != set(sides):
        raise ValueError(f"calls must name the same ratios as sides, got {sorted(per_call)}")
    for name, c in per_call.items():
        check_int(f"calls[{name!r}]", c, least=1)
    confidence = 1.0 - alpha / (looks * len(sides))
    least = min_pairs(confidence)
    if first is None:
        first = least
    check_int("first", first, least=least, why=f" for confidence {confidence:.3g}")
    return per_call, confidence, look_schedule(first, looks)


def _extend_or_cut(runs: dict[str, Pairs], size: int, over: Callable[[], bool]) -> bool:
    """Bring every ratio of ``runs`` to ``size`` pairs, each ratio's in turn;
    True when the budget (``over()``) ran out before the last pair of the look."""
    last_run = list(runs.values())[-1]
    for run in runs.values():
        for pairs in range(len(run.base) + 1, size + 1):
            run.extend(pairs)
            if over() and not (pairs == size and run is last_run):
                return True
    return False


def _verdicts(judgements: Mapping[str, Judgement], decided: Mapping[str, Decision],
              timings: dict) -> dict[str, str]:
    """What each judgement not yet decided says at this look (holds or broken;
    the ones that say None are left out)."""
    out = {}
    for name, judgement in judgements.items():
        if name in decided:
            continue
        said = judgement.decide(timings)
        if said not in (HOLDS, BROKEN, None):
            raise ValueError(f"judgements[{name!r}].decide must return {HOLDS!r}, "
                             f"{BROKEN!r} or None, got {said!r}")
        if said is not None:
            out[name] = said
    return out


#: The keyword arguments :func:`sequential_decision` and :func:`decide_ratio`
#: pass on to :func:`sequential_decisions`.
_DECISION_OPTIONS = frozenset({"alpha", "looks", "first", "budget_s", "warmup", "calls",
                               "threads", "clock", "every_ratio"})


def sequential_decision(
    sides: Mapping[str, tuple[Callable[[], object], Callable[[], object]]],
    decide: Callable[[Timings], str | None],
    *,
    rule: str,
    **kwargs,
) -> Decision:
    """:func:`sequential_decisions` of one judgement ``Judgement(rule,
    decide)`` (keyword arguments passed on)."""
    unknown = sorted(set(kwargs) - _DECISION_OPTIONS)
    if unknown:
        raise ValueError(f"unknown keyword argument(s) {', '.join(unknown)}; allowed: "
                         f"{', '.join(sorted(_DECISION_OPTIONS))}")
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
    if "rule" in kwargs:
        raise ValueError("unknown keyword argument(s) rule (the rule is the RatioRule argument)")
    return sequential_decision(
        {"ratio": (baseline, candidate)},
        lambda t: rule.decide(t["ratio"].ci_low, t["ratio"].ci_high),
        rule=f"median ratio {rule}", **kwargs)
