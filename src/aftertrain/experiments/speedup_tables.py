"""The tables of the speedup claims (S5, X8; S6, S7, X2) as typed rows, and
:func:`speedup_tables`, which reads them off one look of a decision of
:func:`aftertrain.experiments.speedup.speedup_decisions`: each ratio's
median and interval, the costs c and v_k, and the speedup's two
predictions from them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from aftertrain.claims import tables as TB
from aftertrain.claims.tables import TableRow, table
from aftertrain.experiments.speedup_rules import BIGRAM, RatioKey, speedup
from aftertrain.timing import Decision


@table(TB.SPEC_DRAFT_COST, ("S5",))
@dataclass(frozen=True)
class CostRow(TableRow):
    """S5: c of one draft (median and interval), and the medians of one plain
    target step and one drafted character in microseconds."""

    draft: str
    c: float
    c_low: float
    c_high: float
    target_us: float
    draft_us: float


@table(TB.SPEC_VERIFY_COST, ("X8",))
@dataclass(frozen=True)
class VerifyRow(TableRow):
    """X8: v_k (median and interval), and the medians of one verification pass
    and one plain step in microseconds."""

    k: int
    v_k: float
    v_low: float
    v_high: float
    verify_us: float
    step_us: float


@table(TB.SPEC_SPEEDUP, ("S6", "S7", "X2"))
@dataclass(frozen=True)
class SpeedupRow(TableRow):
    """S6 / S7 / X2: plain / speculative time of one draft at ``k`` (median and
    the interval's ends), with the predictions ``cpp / (1 + k c)`` and
    ``cpp / (v_k + k c)`` and the costs ``c`` and ``v_k`` they used: the
    medians at the cost decision's last look, which the speedup judgements
    read (S5's and X8's tables show their own decision's look, which may be
    an earlier one)."""

    draft: str
    k: int
    chars_per_pass: float
    speedup: float
    speedup_min: float
    speedup_max: float
    predicted: float
    predicted_vk: float
    c: float
    v_k: float

    @property
    def share(self) -> float:
        """The measured speedup's share of the prediction with the
        verification's cost, ``speedup / predicted_vk``: 1 when the loop
        costs what the formula charges (a verification pass and k drafted
        characters a round), below 1 by what else it pays (the share target,
        :data:`aftertrain.experiments.speedup.SHARE_TARGET`, asks at least
        0.90 of the best draft)."""
        return self.speedup / self.predicted_vk


@dataclass(frozen=True)
class SpeedupTables:
    """The three tables of a decision's look (``speedups`` empty when the
    decision did not time them)."""

    costs: list[CostRow]
    verify: list[VerifyRow]
    speedups: list[SpeedupRow]


def speedup_tables(decision: Decision, cpp: Mapping[tuple[str, int], float]) -> SpeedupTables:
    """The claims' tables at a decision's look: the costs c, the v_k and
    (when the decision timed them) the speedups with both predictions, for
    the drafts and ks of ``cpp`` (characters per pass by (draft, k))."""
    t = decision.timings
    drafts = list(dict.fromkeys(d for d, _ in cpp))
    ks = list(dict.fromkeys(k for _, k in cpp))
    cost = {d: t[str(RatioKey.cost(d))] for d in drafts}
    costs = [
        CostRow(
            d,
            cost[d].median,
            cost[d].ci_low,
            cost[d].ci_high,
            target_us=float(np.median(cost[d].baseline)) * 1e6,
            draft_us=float(np.median(cost[d].candidate)) * 1e6,
        )
        for d in drafts
    ]
    ver = {k: t[str(RatioKey.verify(k))] for k in ks}
    verify = [
        VerifyRow(
            k,
            ver[k].median,
            ver[k].ci_low,
            ver[k].ci_high,
            verify_us=float(np.median(ver[k].candidate)) * 1e6,
            step_us=float(np.median(ver[k].baseline)) * 1e6,
        )
        for k in ks
    ]
    c = {r.draft: r.c for r in costs}
    v = {r.k: r.v_k for r in verify}
    speedups = []
    for d, k in cpp if str(RatioKey.speedup(BIGRAM, ks[0])) in t else ():
        med, low, high = speedup(t[str(RatioKey.speedup(d, k))])
        speedups.append(
            SpeedupRow(
                d,
                k,
                cpp[d, k],
                med,
                speedup_min=low,
                speedup_max=high,
                predicted=cpp[d, k] / (1 + k * c[d]),
                predicted_vk=cpp[d, k] / (v[k] + k * c[d]),
                c=c[d],
                v_k=v[k],
            )
        )
    return SpeedupTables(costs, verify, speedups)
