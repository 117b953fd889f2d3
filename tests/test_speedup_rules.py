"""The rules of the speculative timing claims (S5, S6, S7, X2, X8), without
timing: :mod:`aftertrain.experiments.speedup` judged on worlds of known
intervals.

The base world is one where every claim holds: speedups are exactly
cpp / (v_k + k c), verification costs a little more than a plain pass and
grows with k, quantized drafts cost one pass, the bigram wins at k = 4 and
the n-gram beats it. Each teeth test breaks one fact of that world and
checks that its rule, and only what depends on it, says ``broken``; an
interval straddling a bound leaves the rule undecided (None), never decided.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from aftertrain.experiments import speedup as XU
from aftertrain.experiments.speedup import BIGRAM, Cells
from aftertrain.verdicts import BROKEN, HOLDS

INT8, INT4, NGRAM, GPT = "8-bit", "4-bit", "n-gram", "draft GPT"
KS = XU.SPEEDUP_KS
C = {BIGRAM: 0.1, INT8: 1.0, INT4: 1.0, NGRAM: 0.12, GPT: 0.4}
V = {2: 1.02, 4: 1.03, 8: 1.05}
CPP = {BIGRAM: (1.5, 2.0, 2.2), INT8: (2.6, 4.0, 6.0), INT4: (2.6, 4.0, 6.0),
       NGRAM: (2.0, 3.0, 4.0), GPT: (2.5, 4.0, 5.5)}


@dataclasses.dataclass(frozen=True)
class Iv:
    """A ratio's median and interval (what the rules read of a PairedTiming)."""

    median: float
    ci_low: float
    ci_high: float


def point(x: float) -> Iv:
    return Iv(x, x, x)


def world(c=None, v=None, speedups=None) -> Cells:
    """The base world with some c, v_k or speedup intervals replaced.
    ``speedups`` maps (draft, k) to a (low, high) speedup interval."""
    c, v = {**C, **(c or {})}, {**V, **(v or {})}
    cpp = {(d, k): CPP[d][i] for d in CPP for i, k in enumerate(KS)}
    t = {f"c:{d}": x if isinstance(x, Iv) else point(x) for d, x in c.items()}
    t |= {f"v:{k}": x if isinstance(x, Iv) else point(x) for k, x in v.items()}
    for (d, k), n in cpp.items():
        low, high = (speedups or {}).get((d, k), (n / (V[k] + k * C[d]),) * 2)
        t[f"s:{d}:{k}"] = Iv(2 / (low + high), 1 / high, 1 / low)  # spec / plain
    return Cells(t, cpp)


def verdicts(cells: Cells) -> dict[str, str | None]:
    return {name: rule(cells) for name, (_, rule) in XU.RULES.items()}


def test_every_rule_holds_in_the_base_world():
    assert verdicts(world()) == dict.fromkeys(XU.RULES, HOLDS)


def fit_undecided_world() -> dict:
    """Speedups around cpp / (v_k + k c) with v_k = 1.3-1.5, each within
    +-w of it, w the mean distance d to the article's cpp / (1 + k c): the
    v_k formula's errors reach 15 w = sum d at most, the article's are at
    least sum max(0, d - w) > 0; neither sum excludes the other."""
    v = {2: 1.3, 4: 1.4, 8: 1.5}
    cells = {(d, k): CPP[d][i] for d in CPP for i, k in enumerate(KS)}
    vk = {(d, k): n / (v[k] + k * C[d]) for (d, k), n in cells.items()}
    gap = {(d, k): n / (1 + k * C[d]) - vk[d, k] for (d, k), n in cells.items()}
    w = sum(gap.values()) / len(gap)
    return dict(v=v, speedups={dk: (x - w, x + w) for dk, x in vk.items()})


#: (rule, what is wrong, the world): each breaks its rule's claim.
BROKEN_WORLDS = [
    ("S5", "the 8-bit draft costs 1.5 passes", dict(c={INT8: 1.5})),
    ("S5", "the n-gram costs half a pass", dict(c={NGRAM: 0.5})),
    ("X8 cost", "verifying 9 positions is cheaper than one pass", dict(v={8: 0.9})),
    ("X8 cost", "verifying 9 positions is cheaper than 3", dict(v={2: 1.3, 4: 1.2, 8: 1.1})),
    ("S6", "the 8-bit draft speeds up k = 2 by 1.0-1.1", dict(speedups={(INT8, 2): (1.0, 1.1)})),
    ("S6 bigram", "the bigram is slower than plain decoding at every k",
     dict(speedups={(BIGRAM, k): (0.7, 0.8) for k in KS})),
    ("S7", "the 8-bit k = 2 speedup is twice the article's prediction",
     dict(speedups={(INT8, 2): (1.7, 1.8)})),
    ("S7 match", "the 4-bit k = 8 speedup is 0.2 below the article's prediction",
     dict(speedups={(INT4, 8): (0.45, 0.46)})),
    ("X2", "the n-gram and the draft GPT are slower than plain decoding",
     dict(speedups={(d, k): (0.8, 0.9) for d in (NGRAM, GPT) for k in KS})),
]

#: The claim each rule decides.
CLAIM_OF = {"S5": "S5", "X8 cost": "X8", "S6": "S6", "S6 bigram": "S6", "S7": "S7",
            "S7 match": "S7", "X8 fit": "X8", "X2": "X2"}


def by_claim(cases):
    return [pytest.param(rule, changes, marks=pytest.mark.claim(CLAIM_OF[rule]),
                         id=f"{rule}: {label}") for rule, label, changes in cases]


@pytest.mark.claim("X7")
@pytest.mark.teeth
@pytest.mark.parametrize("name, changes", by_claim(BROKEN_WORLDS))
def test_each_speedup_rule_catches_a_world_that_breaks_its_claim(name, changes):
    got = verdicts(world(**changes))
    assert got[name] == BROKEN
    assert got["S5"] == (BROKEN if name == "S5" else HOLDS)  # the costs' rule reads c only


@pytest.mark.claim("X8", "X7")
@pytest.mark.teeth
def test_fit_rule_catches_speedups_that_follow_the_article_formula():
    """X8's fit in a world where speedups are exactly cpp / (1 + k c) (as if
    verification cost one pass) while v_k says 1.3-1.5: broken."""
    v = {2: 1.3, 4: 1.4, 8: 1.5}
    article = {(d, k): (CPP[d][i] / (1 + k * C[d]),) * 2 for d in CPP for i, k in enumerate(KS)}
    got = verdicts(world(v=v, speedups=article))
    assert got["X8 fit"] == BROKEN
    assert got["X8 cost"] == HOLDS


#: (rule, how, the world): an interval across the rule's bound.
STRADDLING = [
    ("S5", "8-bit c across 1.3", dict(c={INT8: Iv(1.3, 1.2, 1.4)})),
    ("X8 cost", "v_8 across 1", dict(v={8: Iv(1.0, 0.95, 1.1)})),
    ("X8 cost", "v_8 overlapping v_2", dict(v={2: Iv(1.1, 1.0, 1.2), 8: Iv(1.2, 1.1, 1.3)})),
    ("S6", "8-bit k = 2 across 0.95", dict(speedups={(INT8, 2): (0.9, 1.0)})),
    ("S6 bigram", "every k across 1.2", dict(speedups={(BIGRAM, k): (1.0, 1.3) for k in KS})),
    ("S7", "across 1.1 x the prediction 0.867",  # slack bound 0.953
     dict(speedups={(INT8, 2): (0.9, 1.0)})),
    ("S7 match", "0.017 to 0.067 from the prediction", dict(speedups={(INT8, 2): (0.8, 0.85)})),
    ("X2", "cheap drafts across 1.1 x the bigram's 1.40",
     dict(speedups={(d, k): (1.4, 1.6) for d in (NGRAM, GPT) for k in KS})),
    ("X2", "cheap drafts 1.6-1.7 against a bigram of 1.0-1.5 (1.1 x: 1.1-1.65)",
     dict(speedups={**{(BIGRAM, k): (1.0, 1.5) for k in KS},
                    **{(d, k): (1.6, 1.7) for d in (NGRAM, GPT) for k in KS}})),
    ("X8 fit", "every speedup 0.5-3", dict(speedups={(d, k): (0.5, 3.0) for d in CPP for k in KS})),
    ("X8 fit", "speedups within the mean gap of cpp / (v_k + k c)", fit_undecided_world()),
]


@pytest.mark.parametrize("name, changes", by_claim(STRADDLING))
def test_an_interval_across_a_bound_leaves_the_rule_undecided(name, changes):
    assert verdicts(world(**changes))[name] is None


def test_speedup_is_the_inverse_ratio_with_its_interval_reversed():
    assert XU.speedup(Iv(0.5, 0.4, 0.625)) == (2.0, 1.6, 2.5)


def test_predicted_range_spans_the_formula_over_the_intervals():
    low, high = XU.predicted(3.0, 2, (0.1, 0.2), (1.1, 1.3))
    assert (low, high) == pytest.approx((3.0 / 1.7, 3.0 / 1.3))
    assert XU.predicted(3.0, 2, (0.1, 0.1)) == pytest.approx((2.5, 2.5))  # v = 1: the article's


@pytest.mark.parametrize("a, b, expected", [
    ((1.0, 2.0), (3.0, 4.0), (1.0, 3.0)),   # apart: from 3 - 2 to 4 - 1
    ((3.0, 4.0), (1.0, 2.0), (1.0, 3.0)),   # the same, swapped
    ((1.0, 3.0), (2.0, 5.0), (0.0, 4.0)),   # overlapping: 0 is possible
    ((2.0, 2.0), (2.0, 2.0), (0.0, 0.0)),
])
def test_abs_gap_is_the_range_of_the_distance(a, b, expected):
    assert XU.abs_gap(a, b) == expected


def test_combine_needs_every_part_to_hold_and_one_break_to_break():
    assert XU.combine([HOLDS, HOLDS]) == HOLDS
    assert XU.combine([HOLDS, None]) is None
    assert XU.combine([None, BROKEN, HOLDS]) == BROKEN
    assert XU.combine([]) is None


@pytest.mark.parametrize("call, argument", [
    (lambda: XU.predicted(0.0, 2, (0.1, 0.2)), "cpp"),
    (lambda: XU.predicted(2.0, 0, (0.1, 0.2)), "k"),
    (lambda: XU.predicted(2.0, 2, (0.3, 0.2)), "c"),
    (lambda: XU.predicted(2.0, 2, (0.1, 0.2), (math.nan, 1.0)), "v"),
    (lambda: XU.predicted(2.0, 2, (-0.1, 0.2)), "c"),
    (lambda: XU.abs_gap((1.0, 2.0), (2.0,)), "b"),
    (lambda: XU.speedup(Iv(1.0, 0.0, 1.2)), "t"),
    (lambda: XU.fit_verdict([]), "rows"),
    (lambda: Cells({}, {}), "cpp"),
    (lambda: world().c("5-gram"), "t lacks"),
    (lambda: XU.speedup_decisions(object(), {}, budget_s=1.0), "target"),
])
def test_bad_inputs_name_the_argument(call, argument):
    with pytest.raises(ValueError, match=argument):
        call()
