"""Every figure of the S5, X8 and S6/S7 tables computed a second way from
hand-made timings: each ratio a different number (so a figure read under
another draft's or k's key shows), per-call times with even counts and
skewed values (so a median taken as a mean, or of the wrong side, shows),
the speedup as the inverse ratio with its interval's ends swapped, and both
predictions from their formulas written out here."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from aftertrain.experiments.speedup import SPEEDUP_KS, speedup_tables, target_figure
from aftertrain.experiments.speedup_rules import RatioKey
from aftertrain.timing import Decision

DRAFTS = ("bigram", "8-bit")


def _timing(median: float, scale: float):
    """A ratio ``median`` in [0.9, 1.2] x median; baseline per-call times
    whose median (2.5 x scale) is not their mean (4 x scale)."""
    return SimpleNamespace(
        median=median,
        ci_low=0.9 * median,
        ci_high=1.2 * median,
        baseline=[scale * x for x in (1.0, 2.0, 3.0, 10.0)],
        candidate=[median * scale * x for x in (1.0, 1.0, 5.0, 20.0)],
    )


@pytest.fixture(scope="module")
def world():
    cpp = {(d, k): 1.0 + 0.1 * i + 0.01 * k for i, d in enumerate(DRAFTS) for k in SPEEDUP_KS}
    c = {"bigram": 0.05, "8-bit": 0.7}
    v = {k: 1.0 + 0.03 * k for k in SPEEDUP_KS}
    ratio = {(d, k): 0.5 + 0.1 * i + 0.02 * k for i, d in enumerate(DRAFTS) for k in SPEEDUP_KS}
    t = {str(RatioKey.cost(d)): _timing(c[d], 1e-3 * (i + 1)) for i, d in enumerate(DRAFTS)}
    t |= {str(RatioKey.verify(k)): _timing(v[k], 2e-3) for k in SPEEDUP_KS}
    t |= {str(RatioKey.speedup(d, k)): _timing(ratio[d, k], 1e-2) for d, k in cpp}
    return SimpleNamespace(
        tables=speedup_tables(SimpleNamespace(timings=t), cpp), cpp=cpp, c=c, v=v, ratio=ratio
    )


def test_cost_rows_are_each_drafts_ratio_and_median_times(world):
    for i, r in enumerate(world.tables.costs):
        scale = 1e-3 * (i + 1)
        assert (r.draft, r.c, r.c_low, r.c_high) == (
            DRAFTS[i],
            world.c[r.draft],
            0.9 * world.c[r.draft],
            1.2 * world.c[r.draft],
        )
        assert r.target_us == pytest.approx(2.5 * scale * 1e6, rel=1e-12)  # (2 + 3) / 2
        assert r.draft_us == pytest.approx(3.0 * world.c[r.draft] * scale * 1e6, rel=1e-12)


def test_verify_rows_are_each_ks_ratio_and_median_times(world):
    assert [r.k for r in world.tables.verify] == list(SPEEDUP_KS)
    for r in world.tables.verify:
        assert (r.v_k, r.v_low, r.v_high) == (world.v[r.k], 0.9 * world.v[r.k], 1.2 * world.v[r.k])
        assert r.step_us == pytest.approx(2.5 * 2e-3 * 1e6, rel=1e-12)
        assert r.verify_us == pytest.approx(3.0 * world.v[r.k] * 2e-3 * 1e6, rel=1e-12)


def test_speedup_rows_invert_the_ratio_and_apply_both_formulas(world):
    rows = world.tables.speedups
    assert [(r.draft, r.k) for r in rows] == list(world.cpp)
    for r in rows:
        ratio, cpp, c = world.ratio[r.draft, r.k], world.cpp[r.draft, r.k], world.c[r.draft]
        assert r.chars_per_pass == cpp
        assert r.speedup == pytest.approx(1 / ratio, rel=1e-12)
        assert (r.speedup_min, r.speedup_max) == pytest.approx(
            (1 / (1.2 * ratio), 1 / (0.9 * ratio)), rel=1e-12
        )
        assert r.predicted == pytest.approx(cpp / (1 + r.k * c), rel=1e-12)
        assert r.predicted_vk == pytest.approx(cpp / (world.v[r.k] + r.k * c), rel=1e-12)
        assert (r.c, r.v_k) == (c, world.v[r.k])  # the costs the predictions used, by draft and k


def test_share_is_the_speedup_over_the_prediction_with_v_k(world):
    """SpeedupRow.share, written out from the world's own ratio, cpp, c and v_k."""
    for r in world.tables.speedups:
        ratio, cpp, c = world.ratio[r.draft, r.k], world.cpp[r.draft, r.k], world.c[r.draft]
        assert r.share == pytest.approx((1 / ratio) / (cpp / (world.v[r.k] + r.k * c)), rel=1e-12)


def test_target_figures_invert_each_ratio_and_name_the_verdict():
    """The speedup targets: the share (the loop over its charge) and the
    n-gram's speedup (speculative over plain) are each one over its own
    ratio's median, the range one over the interval's high end to one over
    its low end; the decision's verdict in the targets' words."""
    t = {"share": _timing(1.05, 1e-2), "n-gram": _timing(0.4, 2e-2)}
    for verdict, words in (("holds", "met"), ("broken", "not met"), ("inconclusive", "undecided")):
        decision = Decision(
            verdict, t, "rule", looks=2, max_looks=8, alpha=1e-6, confidence=0.99, seconds=1.0, load1=0.0
        )
        for name, ratio in (("share", 1.05), ("n-gram", 0.4)):
            *figures, said = target_figure(decision, name)
            assert figures == pytest.approx([1 / ratio, 1 / (1.2 * ratio), 1 / (0.9 * ratio)], rel=1e-12), (
                name
            )
            assert said == words
