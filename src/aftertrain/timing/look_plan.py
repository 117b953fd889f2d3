"""The planning of a sequential decision
(:func:`aftertrain.timing.sequential.sequential_decisions`) between its
looks: what a look costs at the pace so far (:func:`first_look_cost`,
:func:`round_cost`), and which ratios the next look extends
(:func:`still_needed`): those that can still decide an undecided judgement.
Planning changes only how long a decision runs, never the intervals a
verdict is read from.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Mapping

import numpy as np

from aftertrain.timing.decision import Decision, Judgement
from aftertrain.timing.paired import PairedTiming, Pairs


def still_needed(
    judgements: Mapping[str, Judgement],
    decided: Mapping[str, Decision],
    timings: dict[str, PairedTiming],
    runs: dict[str, Pairs],
    sizes: tuple[int, ...],
    budget_s: float,
    elapsed: Callable[[], float],
) -> tuple[set[str], list[str]]:
    """After a look: the ratios that get the next look's pairs (those
    :func:`_plan` names for some undecided judgement), and the undecided
    judgements no pairs of this decision can decide (:func:`_plan` names none)."""
    need: set[str] = set()
    stuck = []
    for name, judgement in judgements.items():
        if name in decided:
            continue
        wants = _plan(judgement, timings, runs, sizes, budget_s - elapsed(), elapsed())
        if wants:
            need |= wants
        else:
            stuck.append(name)
    return need, stuck


def _plan(
    judgement: Judgement,
    timings: dict[str, PairedTiming],
    runs: dict[str, Pairs],
    sizes: tuple[int, ...],
    left: float,
    elapsed: float,
) -> set[str]:
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
    widest = sorted(timings, key=lambda n: (timings[n].ci_low - timings[n].ci_high) / timings[n].median)
    for i in range(1, len(widest) + 1):
        prefix = set(widest[:i])
        reach = _reachable(runs, prefix, sizes, left, elapsed)
        if not reach or judgement.decide(_projected(timings, prefix, reach)) is not None:
            return prefix
    return set(timings)


def _projected(timings: dict[str, PairedTiming], names: set[str], pairs: float) -> dict[str, PairedTiming]:
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


def first_look_cost(warm_s: dict[str, float], per_call: dict[str, int], warmup: int, first: int) -> float:
    """Seconds of the first look's ``first`` pairs of every ratio at the
    warm-up's pace (one call a side per warm-up pair); 0 without a warm-up."""
    if warmup == 0:
        return 0.0
    return sum(first * per_call[n] * s / warmup for n, s in warm_s.items())


def round_cost(runs: dict[str, Pairs], names: set[str], size: int, elapsed: float) -> float:
    """Seconds to bring the ratios ``names`` to ``size`` pairs: each ratio's
    own seconds per pair so far, scaled by the run's overhead (elapsed time
    over the time the pairs themselves took)."""
    timed = sum(r.seconds() for r in runs.values())
    overhead = elapsed / timed if timed > 0 else 1.0
    return overhead * sum(
        max(size - len(runs[n].base), 0) * runs[n].seconds() / len(runs[n].base)
        for n in names
        if runs[n].base
    )


def _reachable(
    runs: dict[str, Pairs], names: set[str], sizes: tuple[int, ...], left: float, elapsed: float
) -> int:
    """The largest of the coming look sizes ``sizes`` to which the ratios
    ``names`` can be brought within ``left`` seconds (0 when none)."""
    reach = 0
    for size in sizes:
        if round_cost(runs, names, size, elapsed) <= left:
            reach = size
    return reach
