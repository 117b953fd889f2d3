"""Guards on aftertrain.timing (each pins a rule one plausible slip would break; docs/mutation.md).

Each test drives the timing code with a fake clock or fixed numbers, and
checks it against what the docstrings state independently of the code: the
pair order, the doubling look schedule, the Bonferroni split over looks *and*
ratios, the "wholly outside" rule for broken, the first verdict kept, and the
thread count restored."""

from __future__ import annotations

import math

import pytest
import torch

from aftertrain.claims.verdicts import BROKEN, HOLDS, INCONCLUSIVE
from aftertrain.core.tolerances import TIMING_ALPHA, TIMING_LOOKS
from aftertrain.timing import (
    Judgement,
    RatioRule,
    look_schedule,
    min_pairs,
    paired_timing,
    sequential_decisions,
)


class FakeClock:
    """A clock only the fake work moves."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def steady(self, seconds: float, log: list | None = None, name: str = ""):
        def run() -> None:
            self.now += seconds
            if log is not None:
                log.append(name)

        return run

    def cycling(self, seconds: list[float]):
        """Calls that take each of ``seconds`` in turn, over and over."""
        calls = []

        def run() -> None:
            self.now += seconds[len(calls) % len(seconds)]
            calls.append(None)

        return run


def test_pairs_alternate_baseline_first_then_candidate_first():
    """Pair i: baseline then candidate when i is even, the other way when
    odd (paired_timing's docstring), so a drift in the machine's speed
    does not favour one side."""
    clock, log = FakeClock(), []
    paired_timing(
        clock.steady(1.0, log, "b"),
        clock.steady(1.0, log, "c"),
        pairs=5,
        warmup=0,
        confidence=0.9,
        clock=clock,
    )
    assert log == ["b", "c", "c", "b", "b", "c", "c", "b", "b", "c"]


@pytest.mark.parametrize(
    "first, looks, expected",
    [
        (5, 4, (5, 10, 20, 40)),
        (21, 1, (21,)),
        (1, 3, (1, 2, 4)),
    ],
)
def test_look_schedule_doubles(first, looks, expected):
    assert look_schedule(first, looks) == expected


#: Candidate seconds spread evenly over 1..2 (baseline 1 s): the median's
#: interval narrows look by look, [1, 2], [1.1, 1.9], [1.2, 1.7] at 13, 26
#: and 52 pairs (alpha 1e-3 over three looks).
SPREAD = [1 + i / 10 for i in range(11)]


@pytest.mark.parametrize("high, verdict", [(1.75, HOLDS), (1.6, INCONCLUSIVE)])
def test_the_third_look_has_four_times_the_first_looks_pairs(high, verdict):
    """Against [0.9, 1.75] the interval is decided at the third look, after
    first * 2**(looks-1) pairs. Against [0.9, 1.6] it still crosses 1.6 there
    ([1.2, 1.7]): nothing stops the decision early on a prediction (the
    medians move as pairs come), it ends inconclusive after the last look,
    with no note."""
    clock = FakeClock()
    sides = {"r": (clock.steady(1.0), clock.cycling(SPREAD))}
    band = RatioRule.inside((0.9, high))
    j = Judgement("band", lambda t: band.decide(t["r"].ci_low, t["r"].ci_high))
    d = sequential_decisions(sides, {"x": j}, looks=3, alpha=1e-3, warmup=0, budget_s=1e9, clock=clock)["x"]
    first = min_pairs(1 - 1e-3 / 3)
    assert (d.verdict, d.looks, d.pairs, d.note) == (verdict, 3, 4 * first, "")


def test_a_judgement_undecided_even_on_the_medians_stops_at_once():
    """Undecided with every ratio at its median (as a judgement waiting on
    intervals from elsewhere is): no pairs can decide it, it stops after the
    first look, saying why."""
    clock = FakeClock()
    sides = {"r": (clock.steady(1.0), clock.steady(1.0))}
    d = sequential_decisions(
        sides,
        {"x": Judgement("never", lambda t: None)},
        looks=3,
        alpha=1e-3,
        warmup=0,
        budget_s=1e9,
        clock=clock,
    )["x"]
    assert (d.verdict, d.looks) == (INCONCLUSIVE, 1) and d.note.startswith("stopped early")


def _steady_and_noisy(**options):
    """A steady ratio and a noisy one (spread over 1..2), judged together:
    every ratio inside [0.9, 1.8]; three looks at alpha 1e-3. Returns
    (the decision, the first look's pairs, sides, judgements, clock)."""
    clock = FakeClock()
    sides = {
        "steady": (clock.steady(1.0), clock.steady(1.0)),
        "noisy": (clock.steady(1.0), clock.cycling(SPREAD)),
    }
    band = RatioRule.inside((0.9, 1.8))
    every = {
        "x": Judgement(
            "every ratio in the band",
            lambda t: band.decide(min(x.ci_low for x in t.values()), max(x.ci_high for x in t.values())),
        )
    }
    d = sequential_decisions(
        sides, every, looks=3, alpha=1e-3, warmup=0, budget_s=1e9, clock=clock, **options
    )["x"]
    return d, min_pairs(1 - 1e-3 / 6), sides, every, clock


def test_only_the_ratios_that_can_still_decide_get_more_pairs():
    """Every ratio inside [0.9, 1.8]: ``steady`` is decided at the first look
    and keeps its pairs; ``noisy`` (spread over 1..2) goes on to the third look."""
    d, first, *_ = _steady_and_noisy()
    assert {n: len(t.ratios) for n, t in d.timings.items()} == {"steady": first, "noisy": 4 * first}


@pytest.mark.parametrize("n_sides", [1, 2, 3])
def test_each_interval_is_at_alpha_over_looks_times_ratios(n_sides):
    """Bonferroni over the scheduled looks and the ratios: with ``n_sides``
    ratios every interval is at 1 - alpha / (looks * n_sides), and the first
    look has min_pairs of that confidence."""
    clock = FakeClock()
    sides = {f"r{i}": (clock.steady(1.0), clock.steady(1.0)) for i in range(n_sides)}
    same = Judgement(
        "all equal",
        lambda t: RatioRule.inside((0.9, 1.1)).decide(
            min(x.ci_low for x in t.values()), max(x.ci_high for x in t.values())
        ),
    )
    d = sequential_decisions(sides, {"same": same}, warmup=0, clock=clock, budget_s=1e9)["same"]
    confidence = 1 - TIMING_ALPHA / (TIMING_LOOKS * n_sides)
    assert d.confidence == pytest.approx(confidence, abs=1e-15)
    assert d.pairs == min_pairs(confidence)
    assert all(t.confidence == d.confidence for t in d.timings.values())


@pytest.mark.parametrize(
    "rule, interval, verdict",
    [
        (RatioRule.inside((0.9, 1.1)), (0.95, 1.05), HOLDS),
        (RatioRule.inside((0.9, 1.1)), (0.85, 1.05), None),  # crosses the low bound
        (RatioRule.inside((0.9, 1.1)), (0.95, 1.15), None),  # crosses the high bound
        (RatioRule.inside((0.9, 1.1)), (0.5, 0.89), BROKEN),  # wholly below
        (RatioRule.inside((0.9, 1.1)), (1.11, 2.0), BROKEN),  # wholly above
        (RatioRule.at_least(1.5), (1.4, 2.0), None),
        (RatioRule.at_least(1.5), (1.0, 1.49), BROKEN),
        (RatioRule.at_least(1.5), (1.5, 3.0), HOLDS),
        (RatioRule.at_most(0.5), (0.4, 0.6), None),
        (RatioRule.at_most(0.5), (0.51, 0.7), BROKEN),
    ],
)
def test_ratio_rule_is_broken_only_when_the_interval_is_wholly_outside(rule, interval, verdict):
    assert rule.decide(*interval) == verdict


def test_a_judgement_keeps_its_first_verdict_while_another_needs_more_looks():
    """'early' says holds at look 1 and would say broken if asked again;
    'late' (ratios spread over 1..2) decides at look 3. The decision keeps
    early's first verdict and its look, and asks it nothing more."""
    clock = FakeClock()
    first = min_pairs(1 - 1e-3 / 6)
    sides = {"r": (clock.steady(1.0), clock.steady(1.0)), "n": (clock.steady(1.0), clock.cycling(SPREAD))}
    asked = []

    def early(t):
        asked.append(len(t["r"].ratios))
        return HOLDS if len(t["r"].ratios) == first else BROKEN

    band = RatioRule.inside((0.9, 1.8))
    judged = sequential_decisions(
        sides,
        {
            "early": Judgement("early", early),
            "late": Judgement("late", lambda t: band.decide(t["n"].ci_low, t["n"].ci_high)),
        },
        looks=3,
        alpha=1e-3,
        warmup=0,
        budget_s=1e9,
        clock=clock,
    )
    assert (judged["early"].verdict, judged["early"].looks) == (HOLDS, 1)
    assert (judged["late"].verdict, judged["late"].looks) == (HOLDS, 3)
    assert asked == [first]


@pytest.mark.parametrize("timed_threads", [1, 2])
def test_torch_threads_are_restored_to_what_they_were(timed_threads):
    """The caller's thread count comes back after timing, whatever threads
    the timing used (set to 3 here, neither 1 nor 2)."""
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        clock = FakeClock()
        paired_timing(
            clock.steady(1.0),
            clock.steady(1.0),
            pairs=5,
            warmup=0,
            confidence=0.9,
            threads=timed_threads,
            clock=clock,
        )
        assert torch.get_num_threads() == 3
        sequential_decisions(
            {"r": (clock.steady(1.0), clock.steady(1.0))},
            {"x": Judgement("x", lambda t: HOLDS)},
            threads=timed_threads,
            warmup=0,
            clock=clock,
        )
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)


def test_budget_estimate_counts_the_next_round():
    """3 s per pair, first look of n pairs (3n s): a budget of 5n s is not
    yet spent, but the next round (n more pairs, 3n s) would pass it, so
    the decision stops at look 1."""
    clock = FakeClock()
    first = min_pairs(1 - TIMING_ALPHA / TIMING_LOOKS)
    d = sequential_decisions(
        {"r": (clock.steady(1.0), clock.steady(2.0))},
        {"x": Judgement("never", lambda t: None)},
        warmup=0,
        budget_s=5.0 * first,
        clock=clock,
    )["x"]
    assert d.looks == 1 and math.isclose(d.seconds, 3.0 * first)


@pytest.mark.parametrize(
    "candidate_s, same, slower_2, faster_2",
    [
        (1.0, True, False, False),  # ratio 1: no difference
        (0.5, False, False, True),  # twice as fast: outside the band below
        (0.95, True, False, False),
        (0.85, False, False, False),  # just below the band's low edge
        (2.0, False, True, False),  # twice as slow: outside the band above
        (1.15, False, False, False),
    ],
)
def test_paired_timing_verdicts_on_exact_ratios(candidate_s, same, slower_2, faster_2):
    """Exact ratios on a fake clock (interval = the ratio): "no difference"
    needs the interval inside (0.9, 1.1) on both sides."""
    clock = FakeClock()
    t = paired_timing(
        clock.steady(1.0), clock.steady(candidate_s), pairs=8, warmup=0, confidence=0.99, clock=clock
    )
    assert t.ci_low == pytest.approx(candidate_s) and t.ci_high == pytest.approx(candidate_s)
    assert t.holds_no_difference((0.9, 1.1)) is same
    assert t.slower_by_at_least(2.0) is slower_2
    assert t.faster_by_at_least(2.0) is faster_2


def test_a_joint_judgement_extends_only_the_widest_intervals_it_needs():
    """A judgement on the sum of the intervals' widths (no single ratio decides
    it alone): the two wide ratios (spread over 1..2) get more pairs, the
    four steady ones keep the first look's."""
    clock = FakeClock()
    sides = {f"s{i}": (clock.steady(1.0), clock.steady(1.0)) for i in range(4)}
    sides |= {f"w{i}": (clock.steady(1.0), clock.cycling(SPREAD)) for i in range(2)}

    def total_width(t):
        width = sum(x.ci_high - x.ci_low for x in t.values())
        return HOLDS if width < 1.3 else None

    d = sequential_decisions(
        sides,
        {"x": Judgement("narrow", total_width)},
        looks=3,
        alpha=1e-3,
        warmup=0,
        budget_s=1e9,
        clock=clock,
    )["x"]
    first = min_pairs(1 - 1e-3 / 18)
    assert d.verdict == HOLDS
    pairs = {n: len(t.ratios) for n, t in d.timings.items()}
    assert {pairs[f"s{i}"] for i in range(4)} == {first}
    assert min(pairs["w0"], pairs["w1"]) > first


def test_every_ratio_extends_each_ratio_at_every_look():
    """The same decision as above with ``every_ratio=True`` (a decision whose
    intervals later judgements read): the steady ratio, decided at the first
    look, gets the third look's pairs too."""
    d, first, sides, every, clock = _steady_and_noisy(every_ratio=True)
    assert d.verdict == HOLDS
    assert {n: len(t.ratios) for n, t in d.timings.items()} == {"steady": 4 * first, "noisy": 4 * first}
    with pytest.raises(ValueError, match="every_ratio must be a bool"):
        sequential_decisions(sides, every, every_ratio=1, clock=clock)
