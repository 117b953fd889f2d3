"""The rules of the speculative timing claims (S5, S6, S7, X2, X8): each
judges a decision's intervals, without timing anything.

A :class:`Cells` reads a decision's ratios, named by a :class:`RatioKey`:
``c:<draft>`` (one drafted character / one plain target step), ``v:<k>``
(one verification pass over k+1 positions / one plain step) and
``s:<draft>:<k>`` (speculative / plain time; the speedup is its inverse),
with the characters per target pass of each (draft, k). A rule of
:data:`RULES` says ``holds`` or ``broken`` only when every value inside the
intervals agrees, else None (undecided): the article's prediction cpp / (1 +
k c) is a range over the intervals (interval arithmetic), and X8's fit
bounds its error sums over one box of c, v_k and speedups
(:func:`fit_gain_range`). The experiment that times the ratios is
:mod:`aftertrain.experiments.speedup`.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple, Protocol

from aftertrain.claims.verdicts import BROKEN, HOLDS
from aftertrain.core.tolerances import (
    ARTICLE_MATCH,
    BETTER_THAN_BIGRAM,
    CHEAP_DRAFT,
    FORMULA_SLACK,
    QUANTIZED_SPEEDUP_BELOW,
    REAL_SPEEDUP,
    SAME_WORK_BAND,
)
from aftertrain.core.validation import check_int
from aftertrain.speculative import drafts as D
from aftertrain.timing import RatioRule

BIGRAM = D.DraftKind.BIGRAM.value
QUANTIZED = (D.DraftKind.INT8.value, D.DraftKind.INT4.value)
CHEAP = (D.DraftKind.NGRAM.value, D.DraftKind.GPT.value)

Range = tuple[float, float]


class Quantity(enum.Enum):
    """What a timed ratio measures (its value is the key's prefix)."""

    COST = "c"  # one drafted character / one plain target step
    VERIFY = "v"  # one verification pass over k+1 positions / one plain step
    SPEEDUP = "s"  # speculative / plain time for the same characters


class RatioKey(NamedTuple):
    """The name of one timed ratio: a quantity, with its draft (a
    :class:`~aftertrain.speculative.drafts.DraftKind` value) and/or ``k``.

    ``str(key)`` is its stable form in timings and JSON: ``c:<draft>``,
    ``v:<k>``, ``s:<draft>:<k>``; :meth:`parse` reads it back
    (``RatioKey.parse(str(key)) == key``).
    """

    quantity: Quantity
    draft: str | None = None
    k: int | None = None

    @classmethod
    def cost(cls, draft: str) -> RatioKey:
        """The key of c for ``draft``: one drafted character over one plain target step."""
        return cls(Quantity.COST, draft=draft)

    @classmethod
    def verify(cls, k: int) -> RatioKey:
        """The key of v_k: one verification pass over ``k + 1`` positions over one plain target
        step."""
        return cls(Quantity.VERIFY, k=k)

    @classmethod
    def speedup(cls, draft: str, k: int) -> RatioKey:
        """The key of the speculative over plain time for the same characters, with ``draft``
        drafting ``k`` tokens a round."""
        return cls(Quantity.SPEEDUP, draft=draft, k=k)

    def __str__(self) -> str:
        parts = [self.quantity.value, self.draft, None if self.k is None else str(self.k)]
        return ":".join(p for p in parts if p is not None)

    @classmethod
    def parse(cls, text: str) -> RatioKey:
        """The key whose ``str`` is ``text``; ``ValueError`` for any other string."""
        head, _, rest = text.partition(":") if isinstance(text, str) else ("", "", "")
        try:
            quantity = Quantity(head)
            if quantity is Quantity.VERIFY:
                return cls.verify(int(rest))
            draft, _, k = rest.rpartition(":") if quantity is Quantity.SPEEDUP else (rest, "", "")
            if not draft:
                raise ValueError(draft)
            return cls.cost(draft) if quantity is Quantity.COST else cls.speedup(draft, int(k))
        except ValueError:
            raise ValueError(
                f"text must be a ratio name c:<draft>, v:<k> or s:<draft>:<k>, got {text!r}"
            ) from None


class Interval(Protocol):
    """What a rule reads of a ratio: its median and the median's interval
    (a :class:`aftertrain.timing.PairedTiming`)."""

    median: float
    ci_low: float
    ci_high: float


def check_range(name: str, r: object) -> Range:
    """``r`` if it is a finite (low, high) tuple with low <= high, else ValueError naming ``name``."""
    if not (
        isinstance(r, tuple)
        and len(r) == 2
        and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in r)
        and all(math.isfinite(x) for x in r)
        and r[0] <= r[1]
    ):
        raise ValueError(f"{name} must be a finite (low, high) tuple with low <= high, got {r!r}")
    return r


def speedup(t: Interval) -> tuple[float, float, float]:
    """(median, low, high) of plain / speculative from the ratio
    speculative / plain."""
    if not (0.0 < t.ci_low <= t.ci_high < math.inf and 0.0 < t.median < math.inf):
        raise ValueError(
            f"t must have 0 < ci_low <= ci_high < inf and a median > 0, got "
            f"ci_low={t.ci_low!r}, median={t.median!r}, ci_high={t.ci_high!r}"
        )
    return 1.0 / t.median, 1.0 / t.ci_high, 1.0 / t.ci_low


def predicted(cpp: float, k: int, c: Range, v: Range = (1.0, 1.0)) -> Range:
    """Range of cpp / (v + k c) over the intervals ``c`` and ``v`` (the
    formula decreases in both). ``v = (1, 1)``: the article's cpp / (1 + k c)."""
    if not (isinstance(cpp, (int, float)) and not isinstance(cpp, bool) and math.isfinite(cpp) and cpp > 0):
        raise ValueError(f"cpp (characters per target pass) must be finite and > 0, got {cpp!r}")
    check_int("k", k, least=1)
    c, v = check_range("c", c), check_range("v", v)
    if c[0] < 0 or v[0] <= 0:
        raise ValueError(f"c must be >= 0 and v > 0, got c={c!r}, v={v!r}")
    return cpp / (v[1] + k * c[1]), cpp / (v[0] + k * c[0])


def abs_gap(a: Range, b: Range) -> Range:
    """Range of |x - y| for x in ``a`` and y in ``b``."""
    a, b = check_range("a", a), check_range("b", b)
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

    ``t`` maps ratio names (``str`` of a :class:`RatioKey`) to intervals;
    ``cpp`` maps (draft, k) to the characters per target pass of the run."""

    def __init__(self, t: Mapping[str, Interval], cpp: Mapping[tuple[str, int], float]) -> None:
        if not isinstance(t, Mapping):
            raise ValueError(f"t must map ratio names to intervals, got {type(t).__name__}")
        if not (isinstance(cpp, Mapping) and cpp):
            raise ValueError(
                f"cpp must map at least one (draft, k) cell to its characters per pass, got {cpp!r}"
            )
        self.t, self.cpp = t, cpp

    def ratio(self, key: RatioKey) -> Interval:
        """The interval of the ratio ``key``; ``ValueError`` when ``t`` lacks it."""
        if str(key) not in self.t:
            raise ValueError(f"t lacks the ratio {str(key)!r} (it has {sorted(self.t)})")
        return self.t[str(key)]

    def c(self, draft: str) -> Range:
        """The interval (low, high) of c for ``draft``; ValueError when not timed."""
        r = self.ratio(RatioKey.cost(draft))
        return r.ci_low, r.ci_high

    def v(self, k: int) -> Range:
        """The interval (low, high) of v_k; ValueError when not timed."""
        r = self.ratio(RatioKey.verify(k))
        return r.ci_low, r.ci_high

    def s(self, draft: str, k: int) -> Range:
        """The interval (low, high) of the speedup (plain over speculative time) of ``draft`` at
        ``k``: the inverted interval of the timed ratio (:func:`speedup`); ValueError when not
        timed."""
        return speedup(self.ratio(RatioKey.speedup(draft, k)))[1:]

    def cells(self, drafts: Iterable[str] | None = None) -> list[tuple[str, int]]:
        """The (draft, k) cells of the run in ``cpp``'s order, only those of ``drafts`` when
        given."""
        drafts = None if drafts is None else set(drafts)
        return [(d, k) for d, k in self.cpp if drafts is None or d in drafts]

    def ks(self) -> list[int]:
        """The draft lengths k of the run, ascending, each once."""
        return sorted({k for _, k in self.cpp})

    def article(self, d: str, k: int) -> Range:
        """The article's predicted speedup of draft ``d`` at ``k``: the range of
        ``cpp / (1 + k c)`` over c's interval (:func:`predicted`)."""
        return predicted(self.cpp[d, k], k, self.c(d))


def s5(cells: Cells) -> str | None:
    """Quantized drafts' c inside SAME_WORK_BAND; the bigram's and the
    n-gram's at most CHEAP_DRAFT."""
    same, cheap = RatioRule.inside(SAME_WORK_BAND), RatioRule.at_most(CHEAP_DRAFT)
    return combine(
        [same.decide(*cells.c(d)) for d in QUANTIZED]
        + [cheap.decide(*cells.c(d)) for d in (BIGRAM, D.DraftKind.NGRAM.value)]
    )


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
        verdicts.append(
            HOLDS if s_hi <= FORMULA_SLACK * p_lo else BROKEN if s_lo > FORMULA_SLACK * p_hi else None
        )
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
    they are tighter: on 5,000 random boxes the joint bounds alone were a
    median 0.13 of the ranges' width, and this is never wider."""
    check_range("s", s)
    with_vk = predicted(cpp, k, c, v)  # validates cpp, k, c >= 0, v > 0
    if v[0] < 1.0:
        raise ValueError(f"v must lie at or above 1 (verification costs at least a pass), got {v!r}")

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
    a_gap, b_gap = abs_gap(with_vk, s), abs_gap(predicted(cpp, k, c), s)
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
    return [
        {"cpp": cells.cpp[d, k], "k": k, "c": cells.c(d), "v": cells.v(k), "speedup": cells.s(d, k)}
        for d, k in cells.cells()
    ]


def x8_fit(cells: Cells) -> str | None:
    """X8's fit on every cell of ``cells``: HOLDS, BROKEN or None (undecided), by
    :func:`fit_verdict` on :func:`fit_rows`."""
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
    "S7": (f"measured speedup <= {FORMULA_SLACK} x cpp / (1 + k c) everywhere", s7_never_underrates),
    "S7 match": (f"|cpp / (1 + k c) - speedup| <= {ARTICLE_MATCH} for quantized drafts", s7_matches),
    "X8 fit": ("mean |error| of cpp / (v_k + k c) below that of cpp / (1 + k c)", x8_fit),
    "X2": (f"a cheap draft's speedup > 1 and > {BETTER_THAN_BIGRAM} x the bigram's best", x2),
}
#: The rules of the first decision (cheap steps, many pairs in seconds).
COST_RULES = ("S5", "X8 cost")
