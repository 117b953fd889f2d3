"""What a timing claim is judged by and what its decision is: a
:class:`RatioRule` (the band a median ratio must lie in), a
:class:`Judgement` (a claim read off several ratios' intervals) and the
:class:`Decision` :func:`aftertrain.timing.sequential_decisions` returns
(holds, broken or inconclusive, with the intervals it was read from).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aftertrain.claims.verdicts import BROKEN, HOLDS, INCONCLUSIVE
from aftertrain.core.validation import check_callable
from aftertrain.timing.paired import PairedTiming


@dataclass(frozen=True)
class RatioRule:
    """What a claim allows the median ratio to be: ``[low, high]``.

    ``RatioRule.inside((0.9, 1.1))`` (no difference), ``at_least(2.0)``
    (slower by at least 2), ``at_most(0.5)`` (at least 2x faster). Against an
    interval ``[ci_low, ci_high]`` of the median: ``holds`` when the interval
    lies inside ``[low, high]``, ``broken`` when it lies wholly outside
    (``ci_high < low`` or ``ci_low > high``), undecided otherwise.
    """

    low: float = 0.0
    high: float = math.inf

    def __post_init__(self) -> None:
        for name in ("low", "high"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and not isinstance(v, bool)) or math.isnan(v):
                raise ValueError(f"{name} must be a number, got {v!r}")
        if not 0.0 <= self.low < self.high:
            raise ValueError(
                f"low and high must satisfy 0 <= low < high, got low={self.low!r}, high={self.high!r}"
            )
        if (self.low, self.high) == (0.0, math.inf):
            raise ValueError("low or high must bound the ratio, got low=0 and high=inf")

    @classmethod
    def inside(cls, band: tuple[float, float]) -> RatioRule:
        """The rule ``low <= ratio <= high`` for ``band = (low, high)``."""
        if not (isinstance(band, tuple) and len(band) == 2):
            raise ValueError(f"band must be a (low, high) tuple, got {band!r}")
        return cls(*band)

    @classmethod
    def at_least(cls, bound: float) -> RatioRule:
        """The rule ``ratio >= bound``."""
        return cls(low=bound)

    @classmethod
    def at_most(cls, bound: float) -> RatioRule:
        """The rule ``ratio <= bound``."""
        return cls(high=bound)

    def decide(self, ci_low: float, ci_high: float) -> str | None:
        """``holds``, ``broken`` or None (undecided) for the interval."""
        if not (math.isfinite(ci_low) and math.isfinite(ci_high) and ci_low <= ci_high):
            raise ValueError(
                f"ci_low, ci_high must be finite with ci_low <= ci_high, got {ci_low!r}, {ci_high!r}"
            )
        if self.low <= ci_low and ci_high <= self.high:
            return HOLDS
        if ci_high < self.low or ci_low > self.high:
            return BROKEN
        return None

    def __str__(self) -> str:
        if self.high == math.inf:
            return f">= {self.low:g}"
        if self.low == 0.0:
            return f"<= {self.high:g}"
        return f"in [{self.low:g}, {self.high:g}]"


Timings = Mapping[str, PairedTiming]


@dataclass(frozen=True)
class Decision:
    """The outcome of :func:`sequential_decision`.

    ``verdict`` is ``holds``, ``broken`` or ``inconclusive``; ``timings``
    are the intervals at the look that decided (or the last look taken),
    each at level ``confidence = 1 - alpha / (max_looks * len(timings))``.
    An ``inconclusive`` decision whose budget ran out before its first look
    has ``looks == 0`` and no timings.
    """

    verdict: str
    timings: dict[str, PairedTiming]
    rule: str
    looks: int
    max_looks: int
    alpha: float
    confidence: float
    seconds: float
    load1: float
    note: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in (HOLDS, BROKEN, INCONCLUSIVE):
            raise ValueError(
                f"verdict must be {HOLDS!r}, {BROKEN!r} or {INCONCLUSIVE!r}, got {self.verdict!r}"
            )
        if not self.timings and not (self.verdict == INCONCLUSIVE and self.looks == 0):
            raise ValueError(
                "timings must hold at least one PairedTiming, got none "
                "(only an inconclusive decision with looks=0 has none)"
            )

    @property
    def timing(self) -> PairedTiming:
        """The one timing of a single-ratio decision."""
        if len(self.timings) != 1:
            raise ValueError(
                f"timing needs a decision of one ratio, this one has "
                f"{len(self.timings)}: {', '.join(self.timings)}"
            )
        return next(iter(self.timings.values()))

    @property
    def pairs(self) -> int:
        """The most pairs any of the decision's ratios got."""
        return max((len(t.ratios) for t in self.timings.values()), default=0)

    def intervals(self) -> str:
        """Each ratio's median and interval, ``name: m [low, high]``, comma-separated."""
        return ", ".join(
            f"{name}: {t.median:.3f} [{t.ci_low:.3f}, {t.ci_high:.3f}]" for name, t in self.timings.items()
        )

    @property
    def reason(self) -> str:
        """One line: the verdict, the rule, the intervals, pairs, seconds, load."""
        note = f"; {self.note}" if self.note else ""
        if self.looks == 0:
            return (
                f"{self.verdict}: {self.rule}; the budget ran out before the first look "
                f"(of {self.max_looks}, alpha {self.alpha:g}) in {self.seconds:.1f} s, "
                f"1-minute load {self.load1:.2f}{note}"
            )
        return (
            f"{self.verdict}: {self.rule}; {self.intervals()} after {self.pairs} pairs "
            f"(look {self.looks} of {self.max_looks}, alpha {self.alpha:g}) in "
            f"{self.seconds:.1f} s, 1-minute load {self.load1:.2f}{note}"
        )

    def as_dict(self) -> dict:
        """The decision as JSON-ready data (the ledger's and pytest-benchmark's ``extra_info``)."""
        return {
            "verdict": self.verdict,
            "rule": self.rule,
            "looks": self.looks,
            "max_looks": self.max_looks,
            "alpha": self.alpha,
            "confidence": self.confidence,
            "seconds": self.seconds,
            "load1": self.load1,
            "pairs": self.pairs,
            "note": self.note,
            "timings": {
                k: {"median": t.median, "ci": [t.ci_low, t.ci_high], "pairs": len(t.ratios)}
                for k, t in self.timings.items()
            },
        }


@dataclass(frozen=True)
class Judgement:
    """One claim judged on the intervals of a decision's ratios: ``rule``
    says what is decided (in words, for the reason); ``decide`` maps the
    timings to ``holds``, ``broken`` or None (undecided)."""

    rule: str
    decide: Callable[[Timings], str | None]

    def __post_init__(self) -> None:
        if not isinstance(self.rule, str) or not self.rule:
            raise ValueError(f"rule must be a non-empty description, got {self.rule!r}")
        check_callable("decide", self.decide)
