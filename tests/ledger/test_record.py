"""Time budgets of the timing decisions, on a fake clock: one decision,
its first look included, ends within its budget plus one pair; the run's
whole budget (``--timing-budget-total``) bounds every decision by what is
left and makes a decision with nothing left ``inconclusive`` without
timing anything. Cost: about 1 CPU s (one in-process pytester run).
"""

from __future__ import annotations

import json

import pytest

from aftertrain.ledger import record
from aftertrain.timing import RatioRule, decide_ratio, min_pairs
from tests.common.inner_runs import outside_any_run

pytest_plugins = ["pytester"]

SAME = RatioRule.inside((0.9, 1.1))


class Clock:
    """A clock that only moves when the timed work moves it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _work(clock: Clock, seconds: float):
    def run() -> None:
        clock.now += seconds

    return run


def test_a_first_look_that_does_not_fit_is_cut_inconclusive_with_no_look():
    """A first look of at least 25 pairs of 2 x 1 s does not fit 10 s: the
    decision stops within the budget plus one pair (2 s), with no look."""
    clock = Clock()
    d = decide_ratio(_work(clock, 1.0), _work(clock, 1.0), SAME, budget_s=10.0, warmup=0, clock=clock)
    assert (d.verdict, d.looks, d.timings) == ("inconclusive", 0, {})
    assert clock.now <= 10.0 + 2.0
    assert "the budget ran out before the first look" in d.reason


def test_a_first_look_the_warm_up_predicts_will_not_fit_is_not_started():
    """One warm-up pair of 2 x 1 s predicts 2 s a pair: the first look (25+
    pairs, 50+ s) would not fit 10 s, so no pair is timed after the warm-up
    (the clock stands at its 2 s); inconclusive, no look, the prediction in
    the reason. With 60 s the same look is started and decides."""
    clock = Clock()
    d = decide_ratio(_work(clock, 1.0), _work(clock, 1.0), SAME, budget_s=10.0, warmup=1, clock=clock)
    assert (d.verdict, d.looks, d.timings, clock.now) == ("inconclusive", 0, {}, 2.0)
    first = min_pairs(1 - 1e-6 / 8)
    assert (
        f"the first look ({first} pairs of each of 1 ratio) would take about "
        f"{2.0 * first:.1f} s at the warm-up's pace, more than the 8.0 s left; not timed" in d.reason
    )
    d = decide_ratio(_work(clock, 1.0), _work(clock, 1.0), SAME, budget_s=60.0, warmup=1, clock=clock)
    assert (d.verdict, d.looks) == ("holds", 1)


def test_a_first_look_over_two_ratios_is_cut_in_the_second():
    """Two ratios, timed one after the other: the first ratio's first look
    (25+ pairs of 2 x 0.1 s) fits 8 s, the second's does not; the look is
    dropped whole (no look, no timings) within the budget plus one pair."""
    from aftertrain.timing import Judgement, sequential_decisions

    clock = Clock()
    sides = {name: (_work(clock, 0.1), _work(clock, 0.1)) for name in ("a", "b")}
    [d] = sequential_decisions(
        sides, {"x": Judgement("any", lambda t: None)}, budget_s=8.0, warmup=0, clock=clock
    ).values()
    assert (d.verdict, d.looks, d.timings) == ("inconclusive", 0, {})
    assert 5.0 < clock.now <= 8.0 + 0.2


def test_a_later_look_cut_short_leaves_the_look_before():
    """Look 1 (25 pairs, ~0.5 s) fits and does not decide (the ratio
    spreads over 0.95..1.11, against [0.9, 1.1]; the interval these ratios
    predict at look 2's pairs would decide, so look 2 is worth starting);
    look 2 starts
    within the estimate, then every
    call gets 10x slower (a load arriving): the cut look is dropped, the
    decision keeps look 1's pairs, inconclusive, within the budget plus one
    slow pair (0.3 s)."""
    clock, first = Clock(), 25
    state = {"pairs": 0, "slow": 1.0}

    def baseline() -> None:
        clock.now += 0.01 * state["slow"]

    def candidate() -> None:
        state["pairs"] += 1
        clock.now += (0.0095 + 0.00016 * (state["pairs"] % 11)) * state["slow"]
        if state["pairs"] == first:
            state["slow"] = 10.0

    d = decide_ratio(baseline, candidate, SAME, budget_s=2.0, warmup=0, clock=clock, first=first)
    assert (d.verdict, d.looks, d.pairs) == ("inconclusive", 1, first)
    assert first < state["pairs"] < 2 * first  # look 2 was started and cut
    assert clock.now <= 2.0 + 0.3


RUN = '''
import pytest

from aftertrain.ledger import record
from aftertrain.timing import RatioRule

SAME = RatioRule.inside((0.9, 1.1))


def work(seconds):
    def run():
        record.clock.now += seconds
    return run


@pytest.mark.claim("Q11")
def test_first_decides(claim_record):
    """25 pairs of 2 x 0.2 s = 10 s: decided at the first look."""
    claim_record.conclude(claim_record.ratio(work(0.2), work(0.2), SAME, warmup=0,
                                             clock=record.clock))


@pytest.mark.claim("P7")
def test_second_gets_what_is_left(claim_record):
    """15 s of 30 s are left after the first and 5 s of setup: the first
    look (10 s) does not fit 5 s, so it is cut at the budget."""
    record.clock.now += 15.0
    claim_record.conclude(claim_record.ratio(work(0.2), work(0.2), SAME, warmup=0,
                                             clock=record.clock))


@pytest.mark.claim("X4")
def test_third_finds_nothing_left(claim_record):
    before = record.clock.now
    try:
        claim_record.ratio(work(0.2), work(0.2), SAME, warmup=0, clock=record.clock)
    finally:
        assert record.clock.now == before  # nothing was timed


@pytest.mark.claim("X8")
def test_fourth_decides_several_with_nothing_left(claim_record):
    from aftertrain.timing import Judgement

    before = record.clock.now
    try:
        claim_record.decide({"r": (work(0.2), work(0.2))},
                            {"x": Judgement("any", lambda t: None)}, warmup=0, clock=record.clock)
    finally:
        assert record.clock.now == before
'''


def _run_with_30_s_total(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, source: str
) -> tuple[pytest.RunResult, dict[str, dict]]:
    """Run ``source`` as a test file under ``--timing-budget-total 30`` on a
    fake clock (this module's ``record.clock``); it must exit 0 (inconclusive
    is not a failure). Returns the run and its ledger's claims by ID."""
    outside_any_run(monkeypatch)
    monkeypatch.setattr(record, "clock", Clock())
    pytester.makepyfile(test_budget=source)
    path = pytester.path / "claims.json"
    result = pytester.runpytest(
        "-p", "aftertrain.ledger", "--timing-budget-total", "30", "--claims-json", str(path)
    )
    assert result.ret == 0, result.stdout.str()
    return result, {c["id"]: c for c in json.loads(path.read_text())["claims"]}


def test_the_whole_run_budget_bounds_every_decision(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    """--timing-budget-total 30 on a fake clock: the first decision (10 s)
    decides; the second gets the 5 s left, which its first look does not
    fit (inconclusive, no look); the third has nothing left (inconclusive
    without timing), through ``claim_record.ratio`` and ``.decide`` alike.
    pytest passes: inconclusive is not a failure."""
    _, e = _run_with_30_s_total(pytester, monkeypatch, RUN)
    assert e["Q11"]["verdict"] == "holds"
    assert e["P7"]["verdict"] == "inconclusive"
    assert "the budget ran out before the first look" in e["P7"]["reasons"][0]
    assert e["X4"]["verdict"] == "inconclusive"
    for cid in ("X4", "X8"):
        assert e[cid]["verdict"] == "inconclusive"
        assert e[cid]["reasons"] == [
            "inconclusive: the run's timing budget is spent (--timing-budget-total 30 s); not timed"
        ]
    assert record.clock.now <= 30.0 + 0.4


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e308", "86401"])
def test_a_bad_total_budget_is_a_usage_error(pytester: pytest.Pytester, value):
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest("-p", "aftertrain.ledger", f"--timing-budget-total={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--timing-budget-total must be a finite number of seconds > 0*"])


RESERVE = """
import pytest


@pytest.mark.claim("X2")
def test_leaves_the_reserve(claim_record):
    claim_record.budget_or_inconclusive(reserve=40.0)


@pytest.mark.claim("X3")
def test_has_more_than_the_reserve(claim_record):
    assert claim_record.budget_or_inconclusive(reserve=5.0) == 20.0


def test_a_bad_reserve_is_refused_by_name(claim_record):
    with pytest.raises(ValueError, match="reserve must be a finite number of seconds >= 0.0, got -1"):
        claim_record.budget_or_inconclusive(reserve=-1)
"""


def test_a_decision_leaves_the_reserve_it_is_asked_to_keep(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    """``budget_or_inconclusive(reserve=R)`` (the speculative fixture keeps
    R s for the cheaper timing claims after it): with 30 s left of the run's
    budget, a reserve of 40 s ends the test inconclusive, naming the reserve,
    without timing; a reserve of 5 s gives the per-decision budget (20 s)."""
    result, e = _run_with_30_s_total(pytester, monkeypatch, RESERVE)
    assert e["X2"]["verdict"] == "inconclusive"
    assert e["X2"]["reasons"] == [
        "inconclusive: the run's timing budget is spent (--timing-budget-total 30 s, 40 s of it "
        "kept for the timing claims after this one); not timed"
    ]
    assert e["X3"]["verdict"] != "inconclusive"
    result.assert_outcomes(passed=2, skipped=1)
