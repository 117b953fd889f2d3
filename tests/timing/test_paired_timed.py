"""A side that times itself: a call returning :class:`aftertrain.timing.Timed`
is timed by the seconds it reports (a part of a loop, timed where it runs:
:func:`aftertrain.experiments.round_replays.in_place`), while the budget
counts the call's whole time on the clock. Checked on a fake clock against
the ratios computed here."""

from __future__ import annotations

import math

import pytest

from aftertrain.timing import RatioRule, Timed, decide_ratio, paired_timing
from aftertrain.timing.paired import Pairs
from tests.common.clocks import FakeClock


def _reporting(clock: FakeClock, wall: list[float], part: list[float]):
    """A callable whose i-th call takes ``wall[i]`` seconds and reports ``part[i]`` of them."""
    walls, parts = iter(wall), iter(part)

    def run() -> Timed:
        clock.now += next(walls)
        return Timed(next(parts), result="made")

    return run


def test_a_timed_side_is_timed_by_what_it_reports_per_call():
    """Baseline 4, 8, 4, 8 s a call; the candidate takes 5 s a call and
    reports 1, 1, 2, 6 s (2 calls a timing: 1 + 1, 2 + 6): its times per
    call are 1 and 4, the ratios 1/4 and 4/8 (pair 0 baseline first, pair 1
    candidate first), on the reported seconds, not the 5 s it took."""
    clock = FakeClock()
    t = paired_timing(
        clock.work([4.0, 4.0, 8.0, 8.0]),
        _reporting(clock, [5.0] * 4, [1.0, 1.0, 2.0, 6.0]),
        pairs=2,
        warmup=0,
        calls=2,
        confidence=0.5,
        clock=clock,
    )
    assert t.baseline == (4.0, 8.0) and t.candidate == (1.0, 4.0)
    assert t.ratios == (0.25, 0.5)


def test_the_budget_counts_a_timed_sides_whole_calls():
    """A pair's seconds are both sides' calls on the clock (3 + 10 s),
    whatever the candidate reports (1 s); a truncated pair's seconds go with it."""
    clock = FakeClock()
    pairs = Pairs(clock.work([3.0] * 3), _reporting(clock, [10.0] * 3, [1.0] * 3), 1, clock)
    pairs.extend(3)
    assert pairs.cand == [1.0, 1.0, 1.0] and pairs.seconds() == 39.0
    pairs.truncate(2)
    assert pairs.seconds() == 26.0


def test_a_decision_reads_a_timed_sides_reported_seconds():
    """Candidate taking the loop's 1 s and reporting 0.05 s of it: the
    ratio is 0.05, inside (0.04, 0.06), holds at the first look."""
    clock = FakeClock()

    def loop() -> None:
        clock.now += 1.0

    def part() -> Timed:
        clock.now += 1.0
        return Timed(0.05)

    d = decide_ratio(loop, part, RatioRule.inside((0.04, 0.06)), clock=clock, budget_s=1e9)
    assert d.verdict == "holds" and d.timing.median == pytest.approx(0.05)


def test_a_side_returning_timed_in_some_calls_only_is_refused():
    clock = FakeClock()
    answers = iter([Timed(1.0), None])

    def mixed():
        clock.now += 1.0
        return next(answers)

    pairs = Pairs(clock.work([1.0, 1.0]), mixed, 2, clock)
    with pytest.raises(ValueError, match="returned Timed in 1 of its 2 calls"):
        pairs.extend(1)


@pytest.mark.parametrize("seconds", [-1.0, math.nan, math.inf, "1", None, True])
def test_timed_seconds_must_be_a_finite_number_at_least_zero(seconds):
    with pytest.raises(ValueError, match=r"Timed\.seconds must be a finite number >= 0"):
        Timed(seconds)
