"""The speculative speedup experiment: one timed decision per group of ratios
and the claims S5, S6, S7, X2 and X8 judged on its intervals.

Every figure is a paired ratio (:mod:`aftertrain.timing`: alternating pairs
on one thread):

- ``c:<draft>``: one drafted character / one plain target step (S5);
- ``v:<k>``: one verification pass over k+1 positions / one plain step (X8);
- ``s:<draft>:<k>``: speculative / plain time for :data:`SPEEDUP_CHARS`
  characters; the speedup is its inverse (S6, S7, X8, X2).

:func:`speedup_decisions` times them in two sequential decisions (costs, then
speedups), each at alpha / 2, so a claim reading both errs with probability
<= alpha. Each claim is a rule of :data:`RULES` on a :class:`Cells`: the
intervals of c, v_k and the speedups, and the article's prediction
cpp / (1 + k c) as a range over them (interval arithmetic); X8's fit bounds
its error sums over one box of c, v_k and speedups
(:func:`fit_gain_range`). No single pair, median or wide interval decides:
a rule says ``holds`` or ``broken`` only when every value inside the
intervals agrees, else None (undecided: more pairs, or ``inconclusive`` when
the budget is spent).

``SPEEDUP_CHARS = 30`` (the article: 200): the per-character cost is what the
claims compare, and the decision needs ~30 pairs of each of the 15 cells
(5 drafts x 3 k) at its first look: ~25 s idle at 30 characters, ~9 minutes
at 50 characters under load 9 on a 2-core box.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

import numpy as np
import torch

from aftertrain import drafts as D
from aftertrain.decoding import generate
from aftertrain.experiments import speculative as XS
from aftertrain.protocol import NextTokenModel, check_model
from aftertrain.speculative import speculative_generate
from aftertrain.text import encode
from aftertrain.timing import Decision, Judgement, RatioRule, sequential_decisions
from aftertrain.tolerances import (
    ARTICLE_MATCH,
    BETTER_THAN_BIGRAM,
    CHEAP_DRAFT,
    FORMULA_SLACK,
    QUANTIZED_SPEEDUP_BELOW,
    REAL_SPEEDUP,
    SAME_WORK_BAND,
    TIMING_ALPHA,
)
from aftertrain.verdicts import BROKEN, HOLDS

SPEEDUP_KS = (2, 4, 8)
SPEEDUP_CHARS = 30
COST_CALLS = 5  # a step is ~0.1-1 ms: 5 calls per timing
BIGRAM = D.DraftKind.BIGRAM.value
QUANTIZED = (D.DraftKind.INT8.value, D.DraftKind.INT4.value)
CHEAP = (D.DraftKind.NGRAM.value, D.DraftKind.GPT.value)

Range = tuple[float, float]


class Interval(Protocol):
    """What a rule reads of a ratio: its median and the median's interval
    (a :class:`aftertrain.timing.PairedTiming`)."""

    median: float
    ci_low: float
    ci_high: float


def _check_range(name: str, r: object) -> Range:
    if not (isinstance(r, tuple) and len(r) == 2
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in r)
            and all(math.isfinite(x) for x in r) and r[0] <= r[1]):
        raise ValueError(f"{name} must be a finite (low, high) tuple with low <= high, got {r!r}")
    return r


def speedup(t: Interval) -> tuple[float, float, float]:
    """(median, low, high) of plain / speculative from the ratio
    speculative / plain."""
    if not (0.0 < t.ci_low <= t.ci_high < math.inf and 0.0 < t.median < math.inf):
        raise ValueError(f"t must have 0 < ci_low <= ci_high < inf and a median > 0, got "
                         f"ci_low={t.ci_low!r}, median={t.median!r}, ci_high={t.ci_high!r}")
    return 1.0 / t.median, 1.0 / t.ci_high, 1.0 / t.ci_low


def predicted(cpp: float, k: int, c: Range, v: Range = (1.0, 1.0)) -> Range:
    """Range of cpp / (v + k c) over the intervals ``c`` and ``v`` (the
    formula decreases in both). ``v = (1, 1)``: the article's cpp / (1 + k c)."""
    if not (isinstance(cpp, (int, float)) and not isinstance(cpp, bool) and math.isfinite(cpp)
            and cpp > 0):
        raise ValueError(f"cpp (characters per target pass) must be finite and > 0, got {cpp!r}")
    if not (isinstance(k, int) and not isinstance(k, bool) and k >= 1):
        raise ValueError(f"k must be an int >= 1, got {k!r}")
    c, v = _check_range("c", c), _check_range("v", v)
    if c[0] < 0 or v[0] <= 0:
        raise ValueError(f"c must be >= 0 and v > 0, got c={c!r}, v={v!r}")
    return cpp / (v[1] + k * c[1]), cpp / (v[0] + k * c[0])


def abs_gap(a: Range, b: Range) -> Range:
    """Range of |x - y| for x in ``a`` and y in ``b``."""
    a, b = _check_range("a", a), _check_range("b", b)
    low = max(0.0, b[0] - a[1], a[0] - b[1])
    return low, max(a[1] - b[0], b[1] - a[0])


def combine(verdicts: Iterable[str | None]) -> str | None:
    """Every part holds: holds; any part broken: broken; else undecided."""
    verdicts = list(verdicts)
    if BROKEN in verdicts:
        return BROKEN
    return HOLDS if verdicts and all(v == HOLDS for v in verdicts) else None


class Cells:
    """A decision's ratios read as c, v_k and speedups, with the article's prediction.

    ``t`` maps ``c:<draft>``, ``v:<k>`` and ``s:<draft>:<k>`` to intervals;
    ``cpp`` maps (draft, k) to the characters per target pass of the run."""

    def __init__(self, t: Mapping[str, Interval], cpp: Mapping[tuple[str, int], float]) -> None:
        if not isinstance(t, Mapping):
            raise ValueError(f"t must map ratio names to intervals, got {type(t).__name__}")
        if not (isinstance(cpp, Mapping) and cpp):
            raise ValueError(f"cpp must map at least one (draft, k) cell to its characters per "
                             f"pass, got {cpp!r}")
        self.t, self.cpp = t, cpp

    def _ratio(self, name: str) -> Interval:
        if name not in self.t:
            raise ValueError(f"t lacks the ratio {name!r} (it has {sorted(self.t)})")
        return self.t[name]

    def c(self, draft: str) -> Range:
        r = self._ratio(f"c:{draft}")
        return r.ci_low, r.ci_high

    def v(self, k: int) -> Range:
        r = self._ratio(f"v:{k}")
        return r.ci_low, r.ci_high

    def s(self, draft: str, k: int) -> Range:
        return speedup(self._ratio(f"s:{draft}:{k}"))[1:]

    def cells(self, drafts: Iterable[str] | None = None) -> list[tuple[str, int]]:
        drafts = None if drafts is None else set(drafts)
        return [(d, k) for d, k in self.cpp if drafts is None or d in drafts]

    def ks(self) -> list[int]:
        return sorted({k for _, k in self.cpp})

    def article(self, d: str, k: int) -> Range:
        return predicted(self.cpp[d, k], k, self.c(d))


def s5(cells: Cells) -> str | None:
    """Quantized drafts' c inside SAME_WORK_BAND; the bigram's and the
    n-gram's at most CHEAP_DRAFT."""
    same, cheap = RatioRule.inside(SAME_WORK_BAND), RatioRule.at_most(CHEAP_DRAFT)
    return combine([same.decide(*cells.c(d)) for d in QUANTIZED]
                   + [cheap.decide(*cells.c(d)) for d in (BIGRAM, D.DraftKind.NGRAM.value)])


def x8_cost(cells: Cells) -> str | None:
    """Every v_k at least 1, and the largest k's above the smallest k's."""
    ks = cells.ks()
    lo_k, hi_k = cells.v(ks[0]), cells.v(ks[-1])
    grows = HOLDS if hi_k[0] > lo_k[1] else BROKEN if hi_k[1] < lo_k[0] else None
    return combine([RatioRule.at_least(1.0).decide(*cells.v(k)) for k in ks] + [grows])


def s6_quantized_slower(cells: Cells) -> str | None:
    """Every quantized speedup at most QUANTIZED_SPEEDUP_BELOW."""
    rule = RatioRule.at_most(QUANTIZED_SPEEDUP_BELOW)
    return combine(rule.decide(*cells.s(d, k)) for d, k in cells.cells(QUANTIZED))


def s6_bigram_faster(cells: Cells) -> str | None:
    """Some k gives the bigram a speedup above REAL_SPEEDUP."""
    lows_highs = [cells.s(d, k) for d, k in cells.cells((BIGRAM,))]
    if any(low > REAL_SPEEDUP for low, _ in lows_highs):
        return HOLDS
    if all(high <= REAL_SPEEDUP for _, high in lows_highs):
        return BROKEN
    return None


def s7_never_underrates(cells: Cells) -> str | None:
    """Measured speedup <= FORMULA_SLACK x cpp / (1 + k c), every cell."""
    verdicts = []
    for d, k in cells.cells():
        (s_lo, s_hi), (p_lo, p_hi) = cells.s(d, k), cells.article(d, k)
        verdicts.append(HOLDS if s_hi <= FORMULA_SLACK * p_lo else
                        BROKEN if s_lo > FORMULA_SLACK * p_hi else None)
    return combine(verdicts)


def s7_matches(cells: Cells) -> str | None:
    """|cpp / (1 + k c) - speedup| <= ARTICLE_MATCH for the quantized drafts."""
    verdicts = []
    for d, k in cells.cells(QUANTIZED):
        low, high = abs_gap(cells.article(d, k), cells.s(d, k))
        verdicts.append(HOLDS if high <= ARTICLE_MATCH else BROKEN if low > ARTICLE_MATCH else None)
    return combine(verdicts)


def fit_gain_range(cpp: float, k: int, c: Range, v: Range, s: Range) -> Range:
    """Outer bounds of |A - s| - |B - s| over the box c x v x s, where
    A = cpp / (v + k c) charges verification its cost v_k and
    B = cpp / (1 + k c) is the article's prediction: below 0 where the v_k
    formula is nearer the measured speedup s.

    Needs ``v[0] >= 1``: then A <= B, and with g = 2s - A - B and
    u = B - A >= 0 the gain is clip(g, -u, u); g increases in s, c and v,
    u increases in v and decreases in c, so
    ``max(-u_min, min(g_max, u_max))`` and ``min(u_min, max(g_min, -u_max))``
    bound it, each term taken at a corner of the box. One c (and one v)
    serves both formulas, unlike two independent ranges of A and B, whose
    bounds (``max|A - s| - min|B - s|`` and the other way) are kept where
    they are tighter: on random boxes the result is a median 0.13 of their
    width, and never wider."""
    for name, r in (("c", c), ("v", v), ("s", s)):
        _check_range(name, r)
    predicted(cpp, k, c, v)  # validates cpp, k, c >= 0, v > 0
    if v[0] < 1.0:
        raise ValueError(f"v must lie at or above 1 (verification costs at least a pass), "
                         f"got {v!r}")

    def a(cc: float, vv: float) -> float:
        return cpp / (vv + k * cc)

    def b(cc: float) -> float:
        return cpp / (1.0 + k * cc)

    def g(ss: float, cc: float, vv: float) -> float:
        return 2.0 * ss - a(cc, vv) - b(cc)

    def u(cc: float, vv: float) -> float:
        return b(cc) - a(cc, vv)

    high = max(-u(c[1], v[0]), min(g(s[1], c[1], v[1]), u(c[0], v[1])))
    low = min(u(c[1], v[0]), max(g(s[0], c[0], v[0]), -u(c[0], v[1])))
    # the independent ranges bound it too (|A - s| - |B - s| <= max|A - s| - min|B - s|):
    # keep the tighter end of each, so this is never wider than the range rule
    a_gap, b_gap = abs_gap(predicted(cpp, k, c, v), s), abs_gap(predicted(cpp, k, c), s)
    return max(low, a_gap[0] - b_gap[1]), min(high, a_gap[1] - b_gap[0])


def fit_verdict(rows: list[dict]) -> str | None:
    """X8's fit: the mean |error| of cpp / (v_k + k c) below that of
    cpp / (1 + k c). Each row is a cell: ``cpp``, ``k`` and the ranges
    ``c``, ``v`` and ``speedup`` (low, high). Holds when the sum of the
    cells' largest possible gains (:func:`fit_gain_range`) is below 0,
    broken when the sum of the smallest is above 0: the sum of per-cell
    bounds bounds the sum over every c, v and speedup in their intervals.
    When some v interval reaches below 1 (the formulas may cross), the
    cruder rule on independent ranges: holds when the largest possible
    error sum of the v_k formula is below the smallest possible of the
    article's, broken the other way round."""
    gains = fit_gain_sum(rows)
    if gains is not None:
        if gains[1] < 0.0:
            return HOLDS
        if gains[0] > 0.0:
            return BROKEN
        return None
    art = [abs_gap(predicted(r["cpp"], r["k"], r["c"]), r["speedup"]) for r in rows]
    vk = [abs_gap(predicted(r["cpp"], r["k"], r["c"], r["v"]), r["speedup"]) for r in rows]
    if sum(h for _, h in vk) < sum(lo for lo, _ in art):
        return HOLDS
    if sum(lo for lo, _ in vk) > sum(h for _, h in art):
        return BROKEN
    return None


def fit_gain_sum(rows: list[dict]) -> Range | None:
    """The cells' :func:`fit_gain_range` bounds summed (low, high): below 0
    the v_k formula's error sum is the smaller; None when some v interval
    reaches below 1 (the joint bound does not apply). Rows as
    :func:`fit_verdict`'s."""
    if not rows:
        raise ValueError("rows must hold at least one cell")
    if not all(r["v"][0] >= 1.0 for r in rows):
        return None
    gains = [fit_gain_range(r["cpp"], r["k"], r["c"], r["v"], r["speedup"]) for r in rows]
    return sum(lo for lo, _ in gains), sum(h for _, h in gains)


def fit_rows(cells: Cells) -> list[dict]:
    """X8's fit rows of every cell: cpp, k and the ranges of c, v_k and the speedup."""
    return [{"cpp": cells.cpp[d, k], "k": k, "c": cells.c(d), "v": cells.v(k),
             "speedup": cells.s(d, k)} for d, k in cells.cells()]


def x8_fit(cells: Cells) -> str | None:
    return fit_verdict(fit_rows(cells))


def x2(cells: Cells) -> str | None:
    """Some cheap draft's speedup above 1 and above BETTER_THAN_BIGRAM x
    every bigram speedup."""
    bigram = [cells.s(d, k) for d, k in cells.cells((BIGRAM,))]
    best_low, best_high = max(lo for lo, _ in bigram), max(h for _, h in bigram)
    cheap = [cells.s(d, k) for d, k in cells.cells(CHEAP)]
    if any(lo > 1.0 and lo > BETTER_THAN_BIGRAM * best_high for lo, _ in cheap):
        return HOLDS
    if all(h <= 1.0 or h <= BETTER_THAN_BIGRAM * best_low for _, h in cheap):
        return BROKEN
    return None


#: name -> (what is decided, in words; the rule on the cells).
RULES: dict[str, tuple[str, Callable[[Cells], str | None]]] = {
    "S5": ("quantized drafts' c in [0.8, 1.3], bigram's and n-gram's c <= 0.25", s5),
    "X8 cost": ("v_k >= 1 for every k and v_8 > v_2", x8_cost),
    "S6": (f"every quantized speedup <= {QUANTIZED_SPEEDUP_BELOW}", s6_quantized_slower),
    "S6 bigram": (f"the bigram's best speedup > {REAL_SPEEDUP}", s6_bigram_faster),
    "S7": (f"measured speedup <= {FORMULA_SLACK} x cpp / (1 + k c) everywhere",
           s7_never_underrates),
    "S7 match": (f"|cpp / (1 + k c) - speedup| <= {ARTICLE_MATCH} for quantized drafts",
                 s7_matches),
    "X8 fit": ("mean |error| of cpp / (v_k + k c) below that of cpp / (1 + k c)", x8_fit),
    "X2": (f"a cheap draft's speedup > 1 and > {BETTER_THAN_BIGRAM} x the bigram's best", x2),
}
#: The rules of the first decision (cheap steps, many pairs in seconds).
COST_RULES = ("S5", "X8 cost")


def speedup_decisions(target: NextTokenModel, drafts: Mapping[str, NextTokenModel], *,
                      budget_s: float, alpha: float = TIMING_ALPHA
                      ) -> tuple[dict[str, Decision], dict[tuple[str, int], float]]:
    """Time every ratio and decide every rule of :data:`RULES`.

    Two decisions, each at ``alpha / 2``: the costs c and v_k (judged for
    :data:`COST_RULES`), then the speedups (judged with the costs' final
    intervals). ``drafts`` maps each :class:`aftertrain.drafts.DraftKind`
    value to its model; ``budget_s`` is seconds per rule. Returns the
    decisions by rule name (each carrying the costs' timings too) and the
    characters per target pass of each (draft, k)."""
    check_model(target, "target")
    names = {kind.value for kind in D.DraftKind}
    if not isinstance(drafts, Mapping) or set(drafts) != names:
        raise ValueError(f"drafts must map every draft kind {sorted(names)} to a model, got "
                         f"{sorted(drafts) if isinstance(drafts, Mapping) else drafts!r}")
    for name, draft in drafts.items():
        check_model(draft, f"drafts[{name!r}]")
    if not (isinstance(budget_s, (int, float)) and not isinstance(budget_s, bool)
            and math.isfinite(budget_s) and budget_s > 0):
        raise ValueError(f"budget_s must be a finite number of seconds > 0, got {budget_s!r}")
    if not (isinstance(alpha, float) and 0.0 < alpha < 1.0):
        raise ValueError(f"alpha must be a float in (0, 1), got {alpha!r}")
    prompt = XS.prompt_text()
    ids = encode(prompt)
    half = alpha / 2
    costs = {f"c:{name}": (XS.plain_step(target, 1.0), XS.draft_step(draft, 1.0))
             for name, draft in drafts.items()}
    for k in SPEEDUP_KS:
        costs[f"v:{k}"] = (XS.plain_step(target, 1.0), XS.verify_step(target, k, 1.0))

    def spec_run(draft: NextTokenModel, k: int):
        return speculative_generate(target, draft, prompt, SPEEDUP_CHARS, k, 1.0,
                                    torch.Generator().manual_seed(XS.SEED))

    cpp = {(name, k): spec_run(draft, k).chars_per_pass
           for name, draft in drafts.items() for k in SPEEDUP_KS}

    def judgements(names: Iterable[str], extra: Mapping[str, Interval]) -> dict[str, Judgement]:
        return {n: Judgement(RULES[n][0], lambda t, f=RULES[n][1]: f(Cells({**extra, **t}, cpp)))
                for n in names}

    decisions = sequential_decisions(costs, judgements(COST_RULES, {}), calls=COST_CALLS,
                                     alpha=half, budget_s=budget_s * len(COST_RULES))
    cost_timings = max((d.timings for d in decisions.values()),
                       key=lambda t: len(next(iter(t.values())).ratios))  # the last look

    def plain() -> None:
        generate(target, ids, SPEEDUP_CHARS, 1.0, torch.Generator().manual_seed(XS.SEED))

    sides = {f"s:{name}:{k}": (plain, lambda draft=draft, k=k: spec_run(draft, k))
             for name, draft in drafts.items() for k in SPEEDUP_KS}
    rest = [n for n in RULES if n not in COST_RULES]
    decisions |= sequential_decisions(sides, judgements(rest, cost_timings), warmup=1,
                                      alpha=half, budget_s=budget_s * len(rest))
    for n in rest:  # the speedup decisions' timings with the costs', for the tables
        d = decisions[n]
        decisions[n] = dataclasses.replace(d, timings={**cost_timings, **d.timings})
    return decisions, cpp


def speedup_tables(decision: Decision, cpp: Mapping[tuple[str, int], float]) -> dict:
    """The claims' tables at a decision's look: ``c``, ``v_k`` and (when the
    decision timed them) ``speedups`` with both predictions."""
    t = decision.timings
    drafts = list(dict.fromkeys(d for d, _ in cpp))
    costs = [{"draft": d, "c": t[f"c:{d}"].median, "c_low": t[f"c:{d}"].ci_low,
              "c_high": t[f"c:{d}"].ci_high,
              "target_us": float(np.median(t[f"c:{d}"].baseline)) * 1e6,
              "draft_us": float(np.median(t[f"c:{d}"].candidate)) * 1e6} for d in drafts]
    verify = [{"k": k, "v_k": t[f"v:{k}"].median, "v_low": t[f"v:{k}"].ci_low,
               "v_high": t[f"v:{k}"].ci_high,
               "verify_us": float(np.median(t[f"v:{k}"].candidate)) * 1e6,
               "step_us": float(np.median(t[f"v:{k}"].baseline)) * 1e6} for k in SPEEDUP_KS]
    c = {r["draft"]: r["c"] for r in costs}
    v = {r["k"]: r["v_k"] for r in verify}
    speedups = []
    for d, k in cpp if f"s:{BIGRAM}:{SPEEDUP_KS[0]}" in t else ():
        med, low, high = speedup(t[f"s:{d}:{k}"])
        speedups.append({"draft": d, "k": k, "chars_per_pass": cpp[d, k], "speedup": med,
                         "speedup_min": low, "speedup_max": high,  # the interval's ends
                         "predicted": cpp[d, k] / (1 + k * c[d]),
                         "predicted_vk": cpp[d, k] / (v[k] + k * c[d])})
    return {"c": costs, "v_k": verify, "speedups": speedups}
