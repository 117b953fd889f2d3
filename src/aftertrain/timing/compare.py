"""Paired ratios in pytest-benchmark's runs, and their compare across runs.

Absolute times compare only on one machine (pytest-benchmark's own
``--benchmark-compare``); the paired ratio candidate / baseline of a
benchmark (:mod:`aftertrain.timing`) much less depends on the machine. Each
timing benchmark stores its ratios in ``extra_info["ratios"]``
(:func:`store_ratios`); with ``--benchmark-compare`` the ratios of this run
are compared with the stored run's (:func:`compare_ratios`), rule:

- ``not comparable`` when the two runs were taken on different machines
  (:func:`machine`: CPU model and flags, cores, torch build, threads): a
  ratio of two kernels depends on the instructions the CPU has;
- ``inconclusive`` when a timing decision of this benchmark in this run was
  itself inconclusive (a loaded machine), or when the intervals decide
  neither a change nor its absence;
- ``regressed`` when this run's interval lies wholly above the stored
  interval's upper end times ``threshold`` (``now.low > stored.high * t``);
- ``improved`` when it lies wholly below the stored lower end divided by it;
- ``same`` when it lies wholly within ``[stored.low / t, stored.high * t]``.

Both intervals are those of the sequential decision that timed them, at its
level ``1 - alpha / (looks * ratios)`` (:class:`aftertrain.timing.Decision`),
so a regression is called with the claims' own alpha. ``threshold`` defaults
to :data:`aftertrain.core.tolerances.RATIO_REGRESSION`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from aftertrain.core.enums import StrEnum
from aftertrain.core.tolerances import RATIO_REGRESSION


class RatioStatus(StrEnum):
    """How a ratio of this run compares with the stored run's."""

    REGRESSED = "regressed"
    IMPROVED = "improved"
    SAME = "same"
    INCONCLUSIVE = "inconclusive"
    NOT_COMPARABLE = "not comparable"


REGRESSED, IMPROVED, SAME = RatioStatus.REGRESSED, RatioStatus.IMPROVED, RatioStatus.SAME
INCONCLUSIVE, NOT_COMPARABLE = RatioStatus.INCONCLUSIVE, RatioStatus.NOT_COMPARABLE

#: The key under which the ledger adds torch's build and threads to
#: pytest-benchmark's ``machine_info``.
MACHINE_KEY = "aftertrain"


def machine(machine_info: Mapping) -> dict:
    """What makes two benchmark runs' ratios comparable, from
    pytest-benchmark's ``machine_info``: CPU model, its flags, cores, and
    the torch build and thread count the ledger adds under :data:`MACHINE_KEY`."""
    if not isinstance(machine_info, Mapping):
        raise ValueError(f"machine_info must be a mapping, got {type(machine_info).__name__}")
    cpu = machine_info.get("cpu") or {}
    ours = machine_info.get(MACHINE_KEY) or {}
    return {
        "cpu": cpu.get("brand_raw") or machine_info.get("processor") or "unknown",
        "flags": sorted(cpu.get("flags") or []),
        "cores": cpu.get("count"),
        "torch": ours.get("torch"),
        "threads": ours.get("threads"),
    }


def machine_difference(stored: Mapping, now: Mapping) -> str | None:
    """``"stored on X, now Y"`` naming what differs between two
    :func:`machine` records (flags by the ones only one has), or None. A
    field one record does not know (None, e.g. a run stored before torch's
    build was recorded) is not a difference."""
    parts_stored, parts_now = [], []
    for key in ("cpu", "cores", "torch", "threads"):
        if None not in (stored.get(key), now.get(key)) and stored.get(key) != now.get(key):
            parts_stored.append(f"{key} {stored.get(key)}")
            parts_now.append(f"{key} {now.get(key)}")
    only_stored = sorted(set(stored["flags"]) - set(now["flags"]))
    only_now = sorted(set(now["flags"]) - set(stored["flags"]))
    if (only_stored or only_now) and stored["flags"] and now["flags"]:
        parts_stored.append("flags +" + ",".join(only_stored[:6]) if only_stored else "fewer flags")
        parts_now.append("flags +" + ",".join(only_now[:6]) if only_now else "fewer flags")
    if not parts_stored:
        return None
    return f"stored on {'; '.join(parts_stored)}, now {'; '.join(parts_now)}"


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
        raise ValueError(
            f"timings must be a Decision or a mapping of PairedTiming, got {type(timings).__name__}"
        )
    ratios = benchmark.extra_info.setdefault("ratios", {})
    for name, t in timings.items():
        ratios[str(name)] = {
            "median": t.median,
            "ci": [t.ci_low, t.ci_high],
            "confidence": t.confidence,
            "pairs": len(t.ratios),
        }


@dataclass(frozen=True)
class RatioChange:
    """One ratio of one benchmark, stored and now, and the rule's status."""

    benchmark: str
    ratio: str
    stored: tuple[float, float, float]  # median, low, high
    now: tuple[float, float, float]
    status: RatioStatus
    note: str = ""

    def line(self) -> str:
        """One line, e.g. for a regression's reason."""
        return (
            f"{self.benchmark} [{self.ratio}]: ratio {self.now[0]:.3f} "
            f"[{self.now[1]:.3f}, {self.now[2]:.3f}] against stored {self.stored[0]:.3f} "
            f"[{self.stored[1]:.3f}, {self.stored[2]:.3f}]: {self.status}"
            + (f" ({self.note})" if self.note else "")
        )


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
    machines: tuple[Mapping, Mapping] | None = None,
) -> list[RatioChange]:
    """Compare the paired ratios of benchmarks present in both runs.

    Args:
        now, stored: benchmark full name -> its ``extra_info`` (those
            without ``"ratios"`` are left out).
        threshold: > 1, the factor a ratio's interval must move past.
        machines: ``(stored, now)`` :func:`machine` records; when they
            differ every ratio is ``not comparable``. None: not known.

    Returns:
        One :class:`RatioChange` per ratio present in both, sorted by
        benchmark and ratio name.
    """
    if not (isinstance(threshold, (int, float)) and math.isfinite(threshold) and threshold > 1):
        raise ValueError(f"threshold must be a finite number > 1, got {threshold!r}")
    for name, runs in (("now", now), ("stored", stored)):
        if not isinstance(runs, Mapping):
            raise ValueError(f"{name} must map benchmark names to extra_info, got {type(runs).__name__}")
    elsewhere = machine_difference(*machines) if machines is not None else None
    out = []
    for bench in sorted(set(now) & set(stored)):
        a, b = now[bench].get("ratios") or {}, stored[bench].get("ratios") or {}
        undecided = any(d.get("verdict") == INCONCLUSIVE.value for d in now[bench].get("decisions") or [])
        for ratio in sorted(set(a) & set(b)):
            n = _interval(a[ratio], f"now[{bench!r}] ratio {ratio!r}")
            s = _interval(b[ratio], f"stored[{bench!r}] ratio {ratio!r}")
            note = ""
            if elsewhere:
                status, note = NOT_COMPARABLE, elsewhere
            elif undecided:
                status, note = INCONCLUSIVE, "this run's timing decision was inconclusive"
            elif n[1] > s[2] * threshold:
                status = REGRESSED
            elif n[2] < s[1] / threshold:
                status = IMPROVED
            elif s[1] / threshold <= n[1] and n[2] <= s[2] * threshold:
                status = SAME
            else:
                status = INCONCLUSIVE
            out.append(RatioChange(bench, ratio, s, n, status, note))
    return out


def ratio_table(changes: list[RatioChange]) -> list[str]:
    """Lines of a plain-text table: benchmark, ratio, stored and now
    (median [interval]), status."""
    rows = [("benchmark", "ratio", "stored", "now", "status")]
    for c in changes:
        rows.append(
            (
                c.benchmark,
                c.ratio,
                f"{c.stored[0]:.3f} [{c.stored[1]:.3f}, {c.stored[2]:.3f}]",
                f"{c.now[0]:.3f} [{c.now[1]:.3f}, {c.now[2]:.3f}]",
                str(c.status),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
