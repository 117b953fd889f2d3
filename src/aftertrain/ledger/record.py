"""``ClaimRecord``: the type of the ``claim_record`` fixture.

A test reports to the claims ledger through it, never through strings:
figures, tables (rows whose type names the table: :mod:`aftertrain.claims.tables`)
and timing decisions.
Everything goes into the test's ``user_properties``, so it reaches the
ledger under pytest-xdist too.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import pytest

from aftertrain.claims.tables import TableRow, spec_of
from aftertrain.claims.verdicts import BROKEN, HOLDS, INCONCLUSIVE
from aftertrain.ledger import benchmark
from aftertrain.ledger.state import (
    INCONCLUSIVE_PROPERTY,
    MEASURED_PROPERTY,
    NOT_RUN_PROPERTY,
    TABLE_PROPERTY,
    TIMED_PROPERTY,
    UNTIMED_PROPERTY,
    Part,
)

if TYPE_CHECKING:  # the ledger does not import torch (aftertrain.timing does)
    from aftertrain.timing import Decision, Judgement, RatioRule

NOT_TIMED = "not timed"

#: When this run's whole timing budget ends (``--timing-budget-total``, set
#: at configuration), on :data:`clock`.
DEADLINE = pytest.StashKey[float]()

#: The clock of the whole-run budget (a test replaces it with a fake one).
clock: Callable[[], float] = time.monotonic


def start_total_budget(config: pytest.Config, seconds: float | None = None) -> None:
    """Start the run's whole timing budget: ``--timing-budget-total``
    seconds from now (``seconds`` when given: what an xdist worker is told is
    left of its controller's)."""
    left = float(config.getoption("timing_budget_total")) if seconds is None else float(seconds)
    config.stash[DEADLINE] = clock() + left


def budget_left(config: pytest.Config) -> float:
    """Seconds left of the run's whole timing budget (inf when not started)."""
    deadline = config.stash.get(DEADLINE, None)
    return float("inf") if deadline is None else deadline - clock()


def timing_enabled(config: pytest.Config) -> bool:
    """Whether this run times: pytest-benchmark is loaded and neither
    disabled (``--benchmark-disable``) nor off under pytest-xdist (where
    this project's workers turn it back on: :mod:`aftertrain.ledger.workers`)."""
    session = benchmark.session(config)
    return session is not None and not session.disabled and not session.skip


def timing_budget(config: pytest.Config) -> float:
    """Seconds per timing decision: ``--timing-budget``, a third of it under
    ``AFTERTRAIN_QUICK=1`` (``aftertrain report --quick``)."""
    budget = float(config.getoption("timing_budget"))
    return budget / 3 if os.environ.get("AFTERTRAIN_QUICK") == "1" else budget


def record_not_run(node: pytest.Item, part: Part, reason: str) -> None:
    """Name a part of ``node``'s claims that did not run (e.g. the baseline
    comparison, for a model with no stored baselines); the claim's verdict is
    then decided by the parts that ran, and this one is named beside it."""
    if not isinstance(part, Part):
        raise ValueError(f"part must be a Part ({', '.join(p.value for p in Part)}), got {part!r}")
    if not isinstance(reason, str) or not reason:
        raise ValueError(f"reason must be a non-empty str, got {reason!r}")
    node.user_properties.append((NOT_RUN_PROPERTY, (part.value, reason)))


class ClaimRecord:
    """What one test reports to the claims ledger."""

    def __init__(self, node: pytest.Item, config: pytest.Config) -> None:
        self._node = node
        self._config = config

    def measured(self, text: str) -> None:
        """A measured figure, shown next to the claim's verdict."""
        if not isinstance(text, str) or not text:
            raise ValueError(f"text must be a non-empty str, got {text!r}")
        self._node.user_properties.append((MEASURED_PROPERTY, text))

    def table(self, table: TableRow | list[TableRow] | dict[str, TableRow]) -> None:
        """A table of figures for the report: one row, a list of rows or a
        dict of rows of a row type that names its table
        (:func:`aftertrain.claims.tables.table`); stored under that table's
        name as its record. ``ValueError`` for anything else
        (:func:`aftertrain.claims.tables.spec_of`)."""
        spec = spec_of(table)
        self._node.user_properties.append((TABLE_PROPERTY, (spec.name_of(table), spec.to_record(table))))

    @property
    def timed(self) -> bool:
        """Whether timing runs here (see :func:`timing_enabled`)."""
        return timing_enabled(self._config)

    @property
    def budget_s(self) -> float:
        """Seconds for the next timing decision: :func:`timing_budget`, or
        what is left of the run's whole budget when that is less."""
        return min(timing_budget(self._config), budget_left(self._config))

    def budget_or_inconclusive(self) -> float:
        """:attr:`budget_s` (> 0); when nothing is left of the run's whole
        budget, the test ends here as inconclusive (failed under
        ``--timing-strict``) without timing anything."""
        budget = self.budget_s
        if budget <= 0:
            total = self._config.getoption("timing_budget_total")
            self._inconclusive(f"inconclusive: the run's timing budget is spent "
                               f"(--timing-budget-total {total:g} s); not timed")
        return budget

    def _inconclusive(self, reason: str) -> None:
        if self._config.getoption("timing_strict"):
            pytest.fail(f"--timing-strict: {reason}", pytrace=False)
        self._node.user_properties.append((INCONCLUSIVE_PROPERTY, reason))
        pytest.skip(reason)

    def require_timing(self) -> None:
        """Skip the test as ``not timed`` (the claim is ``skipped``, never
        ``holds``) when this run does not time. Either way the test is its
        claims' timed part."""
        self._mark_timed()
        if not self.timed:
            self._node.user_properties.append((UNTIMED_PROPERTY, NOT_TIMED))
            pytest.skip(NOT_TIMED)

    def _mark_timed(self) -> None:
        if (TIMED_PROPERTY, True) not in self._node.user_properties:
            self._node.user_properties.append((TIMED_PROPERTY, True))

    def decide(
        self,
        sides: Mapping[str, tuple[Callable[[], object], Callable[[], object]]],
        judgements: Mapping[str, Judgement],
        **kwargs,
    ) -> dict[str, Decision]:
        """:func:`aftertrain.timing.sequential_decisions` with this run's
        budget (after :meth:`require_timing`); a decision whose budget ran
        out before its first look ends the test as inconclusive here."""
        from aftertrain.timing import sequential_decisions

        self.require_timing()
        kwargs.setdefault("budget_s", self.budget_or_inconclusive())
        decisions = sequential_decisions(sides, judgements, **kwargs)
        for decision in decisions.values():
            if decision.looks == 0:
                self.conclude(decision)
        return decisions

    def ratio(self, baseline: Callable[[], object], candidate: Callable[[], object],
              rule: RatioRule, **kwargs) -> Decision:
        """:func:`aftertrain.timing.decide_ratio` with this run's budget
        (after :meth:`require_timing`); a decision whose budget ran out
        before its first look ends the test as inconclusive here."""
        from aftertrain.timing import decide_ratio

        self.require_timing()
        kwargs.setdefault("budget_s", self.budget_or_inconclusive())
        decision = decide_ratio(baseline, candidate, rule, **kwargs)
        if decision.looks == 0:
            self.conclude(decision)
        return decision

    def conclude(self, decision: Decision) -> Decision:
        """Turn a decision into the test's outcome: ``holds`` returns it,
        ``broken`` raises AssertionError with its reason (so a strict xfail
        absorbs it), ``inconclusive`` skips the test as inconclusive (the
        claim's verdict; with ``--timing-strict`` it fails instead). The
        test is its claims' timed part."""
        self._mark_timed()
        if decision.verdict == HOLDS:
            return decision
        if decision.verdict == BROKEN:
            raise AssertionError(decision.reason)
        if decision.verdict == INCONCLUSIVE:
            self._inconclusive(decision.reason)
        raise ValueError(f"decision.verdict must be {HOLDS!r}, {BROKEN!r} or "
                         f"{INCONCLUSIVE!r}, got {decision.verdict!r}")
