"""Timing claims as sequential decisions: holds, broken or inconclusive.

Pairs are added in rounds on a schedule of looks fixed in advance, the
error split across the looks and the ratios (Bonferroni), until every
judgement has a verdict or the time budget is spent; between looks,
:mod:`aftertrain.timing.look_plan` says what the next look costs and which
ratios it extends. docs/measurement.md states what this guarantees.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping

from aftertrain.claims.verdicts import BROKEN, HOLDS, INCONCLUSIVE
from aftertrain.core.tolerances import TIMING_ALPHA, TIMING_BUDGET_S, TIMING_LOOKS
from aftertrain.core.validation import check_callable, check_int, check_real
from aftertrain.timing.decision import Decision, Judgement, RatioRule, Timings
from aftertrain.timing.look_plan import first_look_cost, round_cost, still_needed
from aftertrain.timing.paired import (
    Clock,
    Pairs,
    Quiet,
    min_pairs,
)


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
    return tuple(first * 2**j for j in range(looks))


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
    judgement get more pairs
    (:func:`aftertrain.timing.look_plan.still_needed`: the ratios it stays undecided
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
    A first look the warm-up pairs predict will not fit what is left is not
    started: ``inconclusive``, no look, the prediction in the ``note``.

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

    Long: this docstring states the guarantee and every argument, and the
    body is one loop, a look per round, read in order (the budget, the
    pairs, the intervals, the verdicts, the ratios the next look extends);
    split, its state (the runs, the start, the last look) would travel
    through every piece.
    """
    per_call, confidence, schedule = _checked_plan(
        sides, judgements, alpha, looks, first, budget_s, warmup, calls, threads, clock
    )
    if not isinstance(every_ratio, bool):
        raise ValueError(f"every_ratio must be a bool, got {every_ratio!r}")

    def decision(verdict: str, name: str, look: int, timings: dict, note: str = "") -> Decision:
        return Decision(
            verdict=verdict,
            timings=timings,
            rule=judgements[name].rule,
            looks=look,
            max_looks=looks,
            alpha=alpha,
            confidence=confidence,
            seconds=clock() - start,
            load1=load1(),
            note=note,
        )

    runs = {n: Pairs(b, c, per_call[n], clock) for n, (b, c) in sides.items()}
    decided: dict[str, Decision] = {}
    quiet = Quiet(threads)
    start = clock()
    last, timings = 0, {}
    need = set(runs)
    with quiet:
        warm_s = {name: run.warm(warmup) for name, run in runs.items()}
        first_s = first_look_cost(warm_s, per_call, warmup, schedule[0])
        left = budget_s - (clock() - start)
        if first_s > left:
            return {
                name: decision(
                    INCONCLUSIVE,
                    name,
                    0,
                    {},
                    note=(
                        f"the first look ({schedule[0]} pairs of each of {len(runs)} "
                        f"ratio{'s' if len(runs) > 1 else ''}) would take "
                        f"about {first_s:.1f} s at the warm-up's pace, more than the "
                        f"{left:.1f} s left; not timed"
                    ),
                )
                for name in judgements
            }
        for look, size in enumerate(schedule, start=1):
            before = {n: len(r.base) for n, r in runs.items()}
            if look > 1 and clock() - start + round_cost(runs, need, size, clock() - start) > budget_s:
                break
            quiet.off()
            cut = _extend_or_cut(
                {n: runs[n] for n in runs if n in need}, size, lambda: clock() - start > budget_s
            )
            quiet.on()
            if cut:  # this look is not taken: the one before stands
                for n, run in runs.items():
                    run.truncate(before[n])
                break
            last = look
            timings = {
                n: r.summary(confidence, threads, warmup) if n in need or not timings else timings[n]
                for n, r in runs.items()
            }
            for name, said in _verdicts(judgements, decided, timings).items():
                decided[name] = decision(said, name, look, timings)
            if len(decided) == len(judgements) or look == len(schedule):
                break
            if every_ratio:
                need = set(runs)
                continue
            need, stuck = still_needed(
                judgements, decided, timings, runs, schedule[look:], budget_s, lambda: clock() - start
            )
            for name in stuck:
                decided[name] = decision(
                    INCONCLUSIVE,
                    name,
                    look,
                    timings,
                    note=("stopped early: undecided even with every ratio of this decision at its median"),
                )
            if not need:
                break
    return {name: decided.get(name) or decision(INCONCLUSIVE, name, last, timings) for name in judgements}


def _checked_plan(
    sides, judgements, alpha, looks, first, budget_s, warmup, calls, threads, clock
) -> tuple[dict[str, int], float, list[int]]:
    """:func:`sequential_decisions`' arguments checked: (calls per ratio, the
    per-interval confidence, the look schedule)."""
    if not isinstance(sides, Mapping) or not sides:
        raise ValueError(f"sides must be a non-empty mapping name -> (baseline, candidate), got {sides!r}")
    for name, pair in sides.items():
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise ValueError(f"sides[{name!r}] must be a (baseline, candidate) tuple, got {pair!r}")
        check_callable(f"sides[{name!r}] baseline", pair[0])
        check_callable(f"sides[{name!r}] candidate", pair[1])
    if not isinstance(judgements, Mapping) or not judgements:
        raise ValueError(f"judgements must be a non-empty mapping name -> Judgement, got {judgements!r}")
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


def _verdicts(
    judgements: Mapping[str, Judgement], decided: Mapping[str, Decision], timings: dict
) -> dict[str, str]:
    """What each judgement not yet decided says at this look (holds or broken;
    the ones that say None are left out)."""
    out = {}
    for name, judgement in judgements.items():
        if name in decided:
            continue
        said = judgement.decide(timings)
        if said not in (HOLDS, BROKEN, None):
            raise ValueError(
                f"judgements[{name!r}].decide must return {HOLDS!r}, {BROKEN!r} or None, got {said!r}"
            )
        if said is not None:
            out[name] = said
    return out


#: The keyword arguments :func:`sequential_decision` and :func:`decide_ratio`
#: pass on to :func:`sequential_decisions`.
_DECISION_OPTIONS = frozenset(
    {"alpha", "looks", "first", "budget_s", "warmup", "calls", "threads", "clock", "every_ratio"}
)


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
        raise ValueError(
            f"unknown keyword argument(s) {', '.join(unknown)}; allowed: "
            f"{', '.join(sorted(_DECISION_OPTIONS))}"
        )
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
        rule=f"median ratio {rule}",
        **kwargs,
    )
