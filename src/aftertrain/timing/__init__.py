"""Paired timing: the ratio of a candidate's time to a baseline's (claim S8).

The articles timed on a busy laptop, where one baseline came out at 749 ms
and later at 448 ms. Their remedy, built here: run baseline and candidate
back to back, alternating which goes first (AB, BA, AB, ...), and take the
ratio ``candidate / baseline`` within each pair. Drift of the machine
(frequency scaling, other load) moves both halves of a pair alike and
cancels in the ratio; alternation keeps "runs first" (cold caches) or "runs
second" from always falling on one side.

The summary is the median of the pair ratios, with an order-statistic
confidence interval for it (:func:`median_interval`). A timing claim is a
decision (:func:`sequential_decision`): pairs are added in rounds, the
interval is looked at after each round on a fixed schedule with the error
split across the looks, and the verdict is ``holds`` (the interval inside
what the claim allows), ``broken`` (wholly outside it) or ``inconclusive``
(neither when the time budget is spent). docs/measurement.md states what
this guarantees.

Modules: :mod:`aftertrain.timing.paired` (one fixed-size paired timing, the
median's interval), :mod:`aftertrain.timing.decision` (what a claim allows,
:class:`RatioRule` and :class:`Judgement`, and the :class:`Decision`
returned) and :mod:`aftertrain.timing.sequential` (the decisions); their
public names are importable from ``aftertrain.timing``, loaded on first use.
Beside them, imported by the pytest plugin and so free of torch (it stays
light in other projects' runs): :mod:`aftertrain.timing.compare` (ratios
against a stored run, ``--benchmark-compare``) and
:mod:`aftertrain.timing.lock` (one timing at a time across pytest runs,
``--timing-lock``).
"""

import importlib

_WHERE = {
    **dict.fromkeys(
        ["Clock", "PairedTiming", "Timed", "median_interval", "min_pairs", "paired_timing"],
        "aftertrain.timing.paired",
    ),
    **dict.fromkeys(["Decision", "Judgement", "RatioRule", "Timings"], "aftertrain.timing.decision"),
    **dict.fromkeys(
        ["decide_ratio", "load1", "look_schedule", "sequential_decision", "sequential_decisions"],
        "aftertrain.timing.sequential",
    ),
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'aftertrain.timing' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
