"""Paired ratios in pytest-benchmark's runs, and their compare across runs.

Absolute times compare only on one machine (pytest-benchmark's own
``--benchmark-compare``); the paired ratio candidate / baseline of a
benchmark (:mod:`aftertrain.timing`) much less depends on the machine. Each
timing benchmark stores its ratios in ``extra_info["ratios"]``
(:func:`store_ratios`); with ``--benchmark-compare`` the ratios of this run
are compared with the stored run's (:func:`compare_ratios`), rule:

- ``regressed`` when this run's interval lies wholly above the stored
  interval's upper end times ``threshold`` (``now.low > stored.high * t``);
- ``improved`` when it lies wholly below the stored lower end divided by it;
- ``same`` otherwise (the intervals leave the change within the threshold,
  or do not decide it).

``threshold`` defaults to :data:`aftertrain.core.tolerances.RATIO_REGRESSION`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from aftertrain.core.tolerances import RATIO_REGRESSION

REGRESSED, IMPROVED, SAME = "regressed", "improved", "same"


def store_ratios(benchmark, timings) -> None:
    """Record paired ratios in ``benchmark.extra_info["ratios"]``: name ->
    ``{"median", "ci", "confidence", "pairs"}``. ``timings`` is a
    :class:`aftertrain.timing.Decision` (its timings; the decision itself
    goes to ``extra_info["decision"]``) or a mapping name -> PairedTiming."""
    from aftertrain.timing import Decision

    if isinstance(timings, Decision):
        benchmark.extra_info.setdefault("decisions", []).append(timings.as_dict())
        timings = timings.timings
    if not isinstance(timings, Mapping):
        raise ValueError(f"timings must be a Decision or a mapping of PairedTiming, "
                         f"got {type(timings).__name__}")
    ratios = benchmark.extra_info.setdefault("ratios", {})
    for name, t in timings.items():
        ratios[str(name)] = {"median": t.median, "ci": [t.ci_low, t.ci_high],
                             "confidence": t.confidence, "pairs": len(t.ratios)}


@dataclass(frozen=True)
class RatioChange:
    """One ratio of one benchmark, stored and now, and the rule's status."""

    benchmark: str
    ratio: str
    stored: tuple[float, float, float]  # median, low, high
    now: tuple[float, float, float]
    status: str

    def line(self) -> str:
        """One line, e.g. for a regression's reason."""
        return (f"{self.benchmark} [{self.ratio}]: ratio {self.now[0]:.3f} "
                f"[{self.now[1]:.3f}, {self.now[2]:.3f}] against stored {self.stored[0]:.3f} "
                f"[{self.stored[1]:.3f}, {self.stored[2]:.3f}]: {self.status}")


def _interval(entry: object, where: str) -> tuple[float, float, float]:
    try:
        median, (low, high) = float(entry["median"]), map(float, entry["ci"])
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{where} must hold 'median' and 'ci' [low, high], got {entry!r}") from None
    if not all(math.isfinite(v) and v > 0 for v in (median, low, high)) or not low <= high:
        raise ValueError(f"{where} must be finite positive ratios with low <= high, got {entry!r}")
    return median, low, high


def compare_ratios(
    now: Mapping[str, Mapping],
    stored: Mapping[str, Mapping],
    threshold: float = RATIO_REGRESSION,
) -> list[RatioChange]:
    """Compare the paired ratios of benchmarks present in both runs.

    Args:
        now, stored: benchmark full name -> its ``extra_info`` (those
            without ``"ratios"`` are left out).
        threshold: > 1, the factor a ratio's interval must move past.

    Returns:
        One :class:`RatioChange` per ratio present in both, sorted by
        benchmark and ratio name.
    """
    if not (isinstance(threshold, (int, float)) and math.isfinite(threshold) and threshold > 1):
        raise ValueError(f"threshold must be a finite number > 1, got {threshold!r}")
    for name, runs in (("now", now), ("stored", stored)):
        if not isinstance(runs, Mapping):
            raise ValueError(f"{name} must map benchmark names to extra_info, got "
                             f"{type(runs).__name__}")
    out = []
    for bench in sorted(set(now) & set(stored)):
        a, b = now[bench].get("ratios") or {}, stored[bench].get("ratios") or {}
        for ratio in sorted(set(a) & set(b)):
            n = _interval(a[ratio], f"now[{bench!r}] ratio {ratio!r}")
            s = _interval(b[ratio], f"stored[{bench!r}] ratio {ratio!r}")
            status = (REGRESSED if n[1] > s[2] * threshold else
                      IMPROVED if n[2] < s[1] / threshold else SAME)
            out.append(RatioChange(bench, ratio, s, n, status))
    return out


def ratio_table(changes: list[RatioChange]) -> list[str]:
    """Lines of a plain-text table: benchmark, ratio, stored and now
    (median [interval]), status."""
    rows = [("benchmark", "ratio", "stored", "now", "status")]
    for c in changes:
        rows.append((c.benchmark, c.ratio,
                     f"{c.stored[0]:.3f} [{c.stored[1]:.3f}, {c.stored[2]:.3f}]",
                     f"{c.now[0]:.3f} [{c.now[1]:.3f}, {c.now[2]:.3f}]", c.status))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
