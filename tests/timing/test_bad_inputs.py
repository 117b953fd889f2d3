"""Bad inputs to the timing and ledger public functions: one case per
(function, bad value), each a ValueError whose message names the argument."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from aftertrain.core.io import atomic_write
from aftertrain.ledger.state import claim_verdict
from aftertrain.report import read_ledger, summary_counts, update_readme
from aftertrain.timing import (
    Decision,
    Judgement,
    RatioRule,
    decide_ratio,
    look_schedule,
    median_interval,
    min_pairs,
    paired_timing,
    sequential_decisions,
)
from aftertrain.timing.compare import compare_ratios, store_ratios

NAN, INF = float("nan"), float("inf")


def f() -> None:
    pass


def _holds(t):
    return "holds"


JUDGE = {"j": Judgement("rule", _holds)}
SIDES = {"r": (f, f)}
OK_RATIOS = {"b": {"ratios": {"r": {"median": 1.0, "ci": [0.9, 1.1]}}}}

CASES = [
    # median_interval
    ("median_interval", lambda: median_interval([1.0, NAN] * 20, 0.9), "values"),
    ("median_interval", lambda: median_interval([1.0, INF] * 20, 0.9), "values"),
    ("median_interval", lambda: median_interval(np.ones((5, 5)), 0.9), "values"),
    ("median_interval", lambda: median_interval(["a", "b"], 0.9), "values"),
    ("median_interval", lambda: median_interval([], 0.9), "values"),
    ("median_interval", lambda: median_interval([1.0] * 30, 1.0), "confidence"),
    ("median_interval", lambda: median_interval([1.0] * 30, NAN), "confidence"),
    ("median_interval", lambda: median_interval([1.0] * 30, True), "confidence"),
    # min_pairs
    ("min_pairs", lambda: min_pairs(0.0), "confidence"),
    ("min_pairs", lambda: min_pairs(-0.5), "confidence"),
    ("min_pairs", lambda: min_pairs("0.9"), "confidence"),
    # paired_timing
    ("paired_timing", lambda: paired_timing(None, f), "baseline"),
    ("paired_timing", lambda: paired_timing(f, 3), "candidate"),
    ("paired_timing", lambda: paired_timing(f, f, pairs=2.5), "pairs"),
    ("paired_timing", lambda: paired_timing(f, f, pairs=True), "pairs"),
    ("paired_timing", lambda: paired_timing(f, f, calls=0), "calls"),
    ("paired_timing", lambda: paired_timing(f, f, warmup=-1), "warmup"),
    ("paired_timing", lambda: paired_timing(f, f, threads=0), "threads"),
    ("paired_timing", lambda: paired_timing(f, f, confidence=INF), "confidence"),
    ("paired_timing", lambda: paired_timing(f, f, clock="now"), "clock"),
    # RatioRule
    ("RatioRule", lambda: RatioRule(NAN, 1.0), "low"),
    ("RatioRule", lambda: RatioRule(0.5, NAN), "high"),
    ("RatioRule", lambda: RatioRule(1.2, 1.1), "low and high"),
    ("RatioRule", lambda: RatioRule(-1.0, 1.1), "low and high"),
    ("RatioRule", lambda: RatioRule(), "low or high"),
    ("RatioRule.inside", lambda: RatioRule.inside([0.9, 1.1]), "band"),
    ("RatioRule.decide", lambda: RatioRule.at_least(1.0).decide(NAN, 1.0), "ci_low"),
    ("RatioRule.decide", lambda: RatioRule.at_least(1.0).decide(1.2, 1.0), "ci_low"),
    # look_schedule
    ("look_schedule", lambda: look_schedule(0, 3), "first"),
    ("look_schedule", lambda: look_schedule(10, 0), "looks"),
    # Judgement
    ("Judgement", lambda: Judgement("", _holds), "rule"),
    ("Judgement", lambda: Judgement("rule", None), "decide"),
    # sequential_decisions
    ("sequential_decisions", lambda: sequential_decisions({}, JUDGE), "sides"),
    ("sequential_decisions", lambda: sequential_decisions({"r": f}, JUDGE), "sides['r']"),
    ("sequential_decisions", lambda: sequential_decisions({"r": (f, 1)}, JUDGE), "candidate"),
    ("sequential_decisions", lambda: sequential_decisions(SIDES, {}), "judgements"),
    ("sequential_decisions", lambda: sequential_decisions(SIDES, {"j": _holds}), "judgements"),
    ("sequential_decisions", lambda: sequential_decisions(SIDES, JUDGE, alpha=0.0), "alpha"),
    ("sequential_decisions", lambda: sequential_decisions(SIDES, JUDGE, alpha=1), "alpha"),
    ("sequential_decisions", lambda: sequential_decisions(SIDES, JUDGE, looks=0), "looks"),
    ("sequential_decisions", lambda: sequential_decisions(SIDES, JUDGE, budget_s=NAN), "budget_s"),
    ("sequential_decisions", lambda: sequential_decisions(SIDES, JUDGE, budget_s=-1), "budget_s"),
    ("sequential_decisions", lambda: sequential_decisions(SIDES, JUDGE, first=3), "first"),
    ("sequential_decisions", lambda: sequential_decisions(SIDES, JUDGE, calls={"x": 1}), "calls"),
    ("sequential_decisions", lambda: sequential_decisions(SIDES, JUDGE, calls=0), "calls"),
    (
        "sequential_decisions",
        lambda: sequential_decisions(SIDES, {"j": Judgement("rule", lambda t: "maybe")}),
        "decide must return",
    ),
    # decide_ratio
    ("decide_ratio", lambda: decide_ratio(f, f, (0.9, 1.1)), "rule"),
    (
        "decide_ratio",
        lambda: decide_ratio(f, f, RatioRule.inside((0.9, 1.1)), bogus=1),
        "unknown keyword argument(s) bogus; allowed: alpha, budget_s",
    ),
    # Decision
    ("Decision", lambda: Decision("perhaps", {"r": None}, "rule", 1, 1, 1e-6, 0.9, 1.0, 1.0), "verdict"),
    ("Decision", lambda: Decision("holds", {}, "rule", 1, 1, 1e-6, 0.9, 1.0, 1.0), "timings"),
    # compare_ratios
    ("compare_ratios", lambda: compare_ratios(OK_RATIOS, OK_RATIOS, threshold=1.0), "threshold"),
    ("compare_ratios", lambda: compare_ratios(OK_RATIOS, OK_RATIOS, threshold=NAN), "threshold"),
    ("compare_ratios", lambda: compare_ratios([], OK_RATIOS), "now"),
    (
        "compare_ratios",
        lambda: compare_ratios({"b": {"ratios": {"r": {"median": NAN, "ci": [0.9, 1.1]}}}}, OK_RATIOS),
        "now['b'] ratio 'r'",
    ),
    (
        "compare_ratios",
        lambda: compare_ratios(OK_RATIOS, {"b": {"ratios": {"r": {"median": 1.0}}}}),
        "stored['b'] ratio 'r'",
    ),
    (
        "compare_ratios",
        lambda: compare_ratios(OK_RATIOS, {"b": {"ratios": {"r": {"median": 1.0, "ci": [1.2, 1.1]}}}}),
        "stored['b'] ratio 'r'",
    ),
    # store_ratios
    ("store_ratios", lambda: store_ratios(type("B", (), {"extra_info": {}})(), [1.0]), "timings"),
    # claim_verdict
    ("claim_verdict", lambda: claim_verdict(["passed", "flaky"]), "outcomes"),
    # inputs that once failed silently or obscurely
    ("paired_timing", lambda: paired_timing(f, f, pairs=10**9), ", 100,000] for confidence"),
    (
        "paired_timing",
        lambda: paired_timing(f, f, clock=lambda: float("nan")),
        "clock must return finite seconds",
    ),
    ("claim_verdict", lambda: claim_verdict(None), "outcomes must be a list"),
    ("atomic_write", lambda: atomic_write("/tmp/x", "x", mode=-1), "mode must be an int"),
    ("atomic_write", lambda: atomic_write("/tmp/x", "x", mode="rw"), "mode must be an int"),
    ("atomic_write", lambda: atomic_write(None, "x"), "path must be a file path"),
    ("atomic_write", lambda: atomic_write("/proc/aftertrain-test.txt", "x"), "path '/proc/"),
    ("read_ledger", lambda: read_ledger(None), "path must be a file path"),
    ("summary_counts", lambda: summary_counts("x"), "ledger must be a LedgerFile"),
    (
        "update_readme",
        lambda: update_readme(Path("/nonexistent/README.md"), None),
        "readme must be an existing file",
    ),
]


@pytest.mark.parametrize("function, call, names", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_bad_input_raises_value_error_naming_the_argument(function, call, names):
    with pytest.raises(ValueError, match=re.escape(names)):
        call()
