"""The cost account of a speculative call: the loop's time, part by part.

Each :class:`Part` of the loop (the draft's steps, the target's
verification, the rule, the rest: the loop's own bookkeeping) is replayed
over every round of a seeded run, on its own decoders prefilled as the
loop's (:mod:`aftertrain.experiments.round_replays`).

Each part is timed against the loop it replays
(:func:`aftertrain.experiments.speculative.speculative_decoding`) as a paired
ratio part / loop in one sequential decision (:func:`account_decisions`),
by one of three methods (:class:`Method`): replayed alone; knocked out
(:func:`knockouts`: the loop with the part's results looked up, its share
1 - without / loop); or in place (:func:`in_place`: the whole loop with a
clock read around each part, the part's seconds against the plain loop's).
Where the parts leave each other's code and data cold (the target's pass
leaves the rule and a table draft's steps cold, and they then cost two to
three times what they cost alone), alone misses that cost and knocked out
counts it twice; in place charges each part what it costs where the loop
runs it.
The account A of a (draft, k) is the sum of its parts' medians, its interval
the sums of their ends: the intervals hold together with probability
``>= 1 - alpha`` (Bonferroni over every ratio and look), so the sum of the
ends bounds the sum of the medians. A near 1 says the loop costs what its
parts cost; :func:`round_costs` then puts each part per target pass in the
unit of the formula (plain decoding's time per character) beside what
``cpp / (1 + k c)`` charges for it.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aftertrain.core.tolerances import TIMING_ALPHA, TIMING_LOOKS
from aftertrain.experiments import speculative as XS
from aftertrain.experiments.round_replays import RUN_PARTS, Part, in_place, knockouts, part_replays
from aftertrain.experiments.speedup_rules import Interval
from aftertrain.experiments.speedup_tables import SpeedupRow
from aftertrain.lm.protocol import NextTokenModel, check_model
from aftertrain.timing import Decision, Judgement, RatioRule, sequential_decisions

#: What the account must explain of the loop's time: the median sum in
#: EXPLAINED_MEDIAN and its interval inside EXPLAINED (the parts are the
#: loop's own work, so anything beyond a few percent either way is work the
#: account misses or counts twice).
EXPLAINED = (0.90, 1.10)
EXPLAINED_MEDIAN = (0.95, 1.05)


class Method(enum.Enum):
    """How a part's time is taken: ``ALONE``, the part replayed by itself
    over every round (:func:`part_replays`); ``KNOCKOUT``, what the loop
    saves when the part's results are looked up instead of made
    (:func:`knockouts`: its share is 1 - without / loop), so the cache
    state the other parts leave it, and the one it leaves them, count too;
    ``IN_PLACE``, the part's seconds on a clock read around it inside the
    whole loop (:func:`in_place`), the bookkeeping replayed alone."""

    ALONE = "alone"
    KNOCKOUT = "knockout"
    IN_PLACE = "in-place"


def part_key(draft: str, k: int, part: Part) -> str:
    """The ratio name of ``part`` of the loop of ``draft`` at ``k``: ``<part>:<draft>:<k>``."""
    return f"{part.value}:{draft}:{k}"


def cell_name(draft: str, k: int) -> str:
    """The judgement name of the account of ``draft`` at ``k``: ``<draft> k=<k>``."""
    return f"{draft} k={k}"


def part_share(timing: Interval, part: Part, method: Method) -> tuple[float, float, float]:
    """(median, low, high) of ``part``'s share of the loop's time from its
    ratio's timing: the ratio itself for a part replayed alone and for the
    rest, 1 - the ratio (its interval's ends swapped) for a part knocked out."""
    if method is Method.KNOCKOUT and part in RUN_PARTS:
        return 1.0 - timing.median, 1.0 - timing.ci_high, 1.0 - timing.ci_low
    return timing.median, timing.ci_low, timing.ci_high


@dataclass(frozen=True)
class AccountRow:
    """The account of one (draft, k) at a decision's look: each part's share
    of the loop's time (:func:`part_share`, at the median) and their sum with
    its interval (the sums of the parts' interval ends)."""

    draft: str
    k: int
    method: Method
    shares: dict[Part, float]
    accounted: float
    low: float
    high: float
    looks: int
    pairs: int

    @property
    def explained(self) -> bool:
        """The median sum inside EXPLAINED_MEDIAN and its interval inside EXPLAINED."""
        return (
            EXPLAINED_MEDIAN[0] <= self.accounted <= EXPLAINED_MEDIAN[1]
            and EXPLAINED[0] <= self.low
            and self.high <= EXPLAINED[1]
        )


def _shares(timings: Mapping[str, Interval], draft: str, k: int, method: Method) -> dict[Part, tuple]:
    """Each part's (median, low, high) share of ``draft`` at ``k``;
    ``ValueError`` when ``timings`` lacks a ratio."""
    keys = {p: part_key(draft, k, p) for p in Part}
    missing = [key for key in keys.values() if key not in timings]
    if missing:
        raise ValueError(f"decision lacks the ratios {missing} (it has {sorted(timings)})")
    return {p: part_share(timings[key], p, method) for p, key in keys.items()}


def account_row(decision: Decision, draft: str, k: int, method: Method = Method.ALONE) -> AccountRow:
    """The :class:`AccountRow` of ``draft`` at ``k`` from a decision holding
    its four part ratios timed by ``method``; ``ValueError`` when it lacks one."""
    shares = _shares(decision.timings, draft, k, method)
    return AccountRow(
        draft,
        k,
        method,
        {p: s[0] for p, s in shares.items()},
        *(math.fsum(s[i] for s in shares.values()) for i in range(3)),
        decision.looks,
        min(len(decision.timings[part_key(draft, k, p)].ratios) for p in Part),
    )


def _explained(draft: str, k: int, method: Method) -> Callable[[Mapping], str | None]:
    """Holds when the account's interval lies inside EXPLAINED, broken when
    wholly outside it (as :class:`RatioRule` on the sums of the ends)."""
    rule = RatioRule.inside(EXPLAINED)

    def decide(t: Mapping) -> str | None:
        shares = _shares(t, draft, k, method).values()
        return rule.decide(math.fsum(s[1] for s in shares), math.fsum(s[2] for s in shares))

    return decide


def account_decisions(
    target: NextTokenModel,
    cells: Mapping[tuple[str, int], NextTokenModel],
    *,
    budget_s: float,
    alpha: float = TIMING_ALPHA,
    looks: int = TIMING_LOOKS,
    method: Method = Method.ALONE,
    n_new: int = 30,
    clock: Callable[[], float] | None = None,
) -> dict[tuple[str, int], Decision]:
    """The account of each cell ``(draft name, k) -> draft model``: its four
    parts (:func:`part_replays` for ``Method.ALONE``, :func:`knockouts` for
    ``Method.KNOCKOUT``, :func:`in_place` for ``Method.IN_PLACE``, whose
    clock reads use ``clock`` too) each timed against the loop they replay,
    ``n_new`` characters after the validation prompt at temperature 1, in one
    sequential decision (alpha over every ratio and at most ``looks``
    looks; ``budget_s`` seconds for all). Each cell's judgement holds when
    its account's interval lies inside EXPLAINED (:func:`_explained`); read
    a cell with :func:`account_row`."""
    check_model(target, "target")
    if not (isinstance(cells, Mapping) and cells):
        raise ValueError(f"cells must map at least one (draft, k) to a draft model, got {cells!r}")
    if not isinstance(method, Method):
        raise ValueError(f"method must be one of {[m.name for m in Method]} (a Method), got {method!r}")
    clocked = {} if clock is None else {"clock": clock}
    sides, judgements = {}, {}
    for (name, k), draft in cells.items():
        check_model(draft, f"cells[{name!r}, {k!r}]")
        loop = XS.speculative_decoding(target, draft, k, n_new, 1.0)
        if method is Method.IN_PLACE:
            replays = in_place(target, draft, k, n_new, 1.0, **clocked)
        else:
            replays = (part_replays if method is Method.ALONE else knockouts)(target, draft, k, n_new, 1.0)
        for part, replay in replays.items():
            sides[part_key(name, k, part)] = (loop, replay)
        judgements[cell_name(name, k)] = Judgement(
            f"{cell_name(name, k)}: the parts' sum of the loop's time inside {list(EXPLAINED)}",
            _explained(name, k, method),
        )
    decided = sequential_decisions(
        sides, judgements, warmup=1, alpha=alpha, looks=looks, budget_s=budget_s, **clocked
    )
    return {cell: decided[cell_name(*cell)] for cell in cells}


@dataclass(frozen=True)
class RoundCost:
    """One target pass of a (draft, k) in plain decoding's time per
    character, part by part, beside what ``cpp / (1 + k c)`` charges: the
    verification (the target's pass and the rule) 1, the drafting ``k c``,
    the bookkeeping 0; ``unaccounted`` is the loop's time beyond its parts'
    sum (1 - A of it; negative where the parts sum to more), charged 0 too.
    ``overrates`` names the one whose cost exceeds its charge the most."""

    draft: str
    k: int
    verification: float
    drafting: float
    bookkeeping: float
    unaccounted: float
    charged_drafting: float

    @property
    def excess(self) -> dict[str, float]:
        """Each part's cost beyond its charge, per target pass."""
        return {
            "verification": self.verification - 1.0,
            "drafting": self.drafting - self.charged_drafting,
            "bookkeeping": self.bookkeeping,
            "loop beyond its parts": self.unaccounted,
        }

    @property
    def overrates(self) -> str:
        """The part whose excess is the largest."""
        excess = self.excess
        return max(excess, key=excess.get)


def round_costs(row: AccountRow, speedup: SpeedupRow) -> RoundCost:
    """The parts of ``row`` per target pass, at the medians: a part's share
    r of the loop's time T is ``r T / P`` per pass, and T / P is ``cpp / s``
    plain characters' time (s the speedup, plain over speculative time for
    the same characters), so a part costs ``r cpp / s``; the formula charges
    1 for the verification and ``k c`` for the drafting (``speedup``'s own
    c); what the parts leave of the loop costs ``(1 - A) cpp / s``. Note:
    8-bit at k = 2 with cpp 3, s 0.8 and shares 0.6 / 0.36 / 0.04 (drafting /
    verification + rule / rest) costs 2.25 / 1.35 / 0.15 per pass, nothing
    unaccounted."""
    if (row.draft, row.k) != (speedup.draft, speedup.k):
        raise ValueError(
            f"row and speedup must be the same cell, got {row.draft} k={row.k} "
            f"and {speedup.draft} k={speedup.k}"
        )
    unit = speedup.chars_per_pass / speedup.speedup
    s = row.shares
    return RoundCost(
        row.draft,
        row.k,
        (s[Part.VERIFY] + s[Part.RULE]) * unit,
        s[Part.DRAFT] * unit,
        s[Part.REST] * unit,
        (1.0 - row.accounted) * unit,
        row.k * speedup.c,
    )


__all__ = [
    "EXPLAINED",
    "EXPLAINED_MEDIAN",
    "RUN_PARTS",
    "AccountRow",
    "Method",
    "Part",
    "RoundCost",
    "account_decisions",
    "account_row",
    "cell_name",
    "knockouts",
    "part_share",
    "part_key",
    "part_replays",
    "round_costs",
]
