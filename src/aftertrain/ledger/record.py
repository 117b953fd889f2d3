"""``ClaimRecord``: the type of the ``claim_record`` fixture.

A test reports to the claims ledger through it, never through strings:
figures (:meth:`ClaimRecord.measured`, a template whose placeholders name the
figures they show: :func:`shown`), tables (rows whose type names the table:
:mod:`aftertrain.claims.tables`) and timing decisions.
Everything goes into the test's ``user_properties``, so it reaches the
ledger under pytest-xdist too.
"""

from __future__ import annotations

import enum
import numbers
import os
import string
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import pytest

from aftertrain.claims.tables import TableRow, spec_of
from aftertrain.claims.verdicts import BROKEN, HOLDS, INCONCLUSIVE
from aftertrain.core.validation import check_real
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


class Shown(str):
    """A text of figures written by :func:`shown`; :attr:`figures` names
    what its placeholders showed (``row:<RowType>.<field>`` or
    ``value:<name>``), in order, each once."""

    figures: tuple[str, ...] = ()


_NUMBER = numbers.Real
_FORMATTER = string.Formatter()


def _parse(template: str) -> list[tuple[str, str | None, str, str | None]]:
    try:
        parts = list(_FORMATTER.parse(template))
    except ValueError as exc:
        raise ValueError(f"template must be a format string, got {template!r}: {exc}") from None
    for _, name, spec, _ in parts:
        if name is not None and (not name or "{" in spec):
            raise ValueError(
                f"template {template!r}: each placeholder names its figure "
                f"({{RowType.field}} or {{name}}), without nested fields"
            )
    return parts


def _figure(name: str, value: object, conversion: str | None, template: str, named: bool) -> str | None:
    """The figure a placeholder shows (None for a label), after checking
    that its value is of the kind the template says."""
    if conversion in ("s", "r"):
        if not isinstance(value, enum.Enum) and (not isinstance(value, str) or isinstance(value, Shown)):
            raise ValueError(
                f"template {template!r}: {{{name}!{conversion}}} is a label and "
                f"takes a str or an Enum member, got {value!r}"
            )
        return None
    if isinstance(value, Shown):
        return ""
    items = value.values() if isinstance(value, Mapping) else value if isinstance(value, tuple) else (value,)
    # a bool is a number to Python, but True written as a figure is "1.00"
    if not all(v is None or (isinstance(v, _NUMBER) and not isinstance(v, bool)) for v in items):
        raise ValueError(
            f"template {template!r}: {{{name}}} shows a figure and takes a number (not a bool) "
            f"(a tuple or dict of numbers, or None), a text of shown(...), or a "
            f"label written {{{name}!s}}; got {value!r}"
        )
    head = _head(name)
    if named:
        return f"value:{head}"
    return f"row:{head}.{_head(name[len(head) + 1 :])}"


def _head(name: str) -> str:
    """``CsrRatio.ci[0]`` -> ``CsrRatio``; ``ci[0]`` -> ``ci``."""
    return name.split(".", 1)[0].split("[", 1)[0]


def shown(template: str, /, *rows: object, sep: str = "; ", **values: object) -> Shown:
    """A text of figures: ``template`` (a literal :meth:`str.format` string)
    with each placeholder naming what it shows, so the figure inventory reads
    the figures from the call (``tests/common/measured.py``):

    - ``{RowType.field:.4f}``: a field of a row given in ``rows`` (a
      :class:`aftertrain.claims.tables.TableRow`, bound by its type's name;
      ``{CsrRatio.ci[0]}`` indexes a field);
    - ``{name:.4f}``: the named value ``name=...`` (a number, a tuple or
      dict of numbers, or None); ``{name}`` may also be a text of
      :func:`shown` (its own figures);
    - ``{name!s}`` or ``{name!r}``: a label (a str or an Enum member; a
      number is refused).

    At most one element of ``rows`` may be a collection (a list, tuple,
    generator or dict): the template is written once per element, joined
    with ``sep``, a row bound by its type's name, anything else as
    ``{value}`` (a dict also binds each key as ``{key}``); a single row is
    bound in every one, and a callable value is called with the element.
    ``ValueError`` naming the placeholder when a value is missing or of the
    wrong kind."""
    if not isinstance(template, str):
        raise ValueError(f"template must be a str, got {template!r}")
    if not isinstance(sep, str):
        raise ValueError(f"sep must be a str, got {sep!r}")
    parts = _parse(template)
    fixed, each = _bind(rows)
    figures: list[str] = []
    texts = [_write(template, parts, {**fixed, **bound}, values, item, figures) for item, bound in each]
    text = Shown(sep.join(texts))
    text.figures = tuple(figures)
    return text


def _bind(rows: tuple[object, ...]) -> tuple[dict[str, object], list[tuple[object, dict[str, object]]]]:
    """The single rows by their type's name, and per element of the one
    collection what it binds (one empty binding when there is none)."""
    fixed: dict[str, object] = {}
    each: list[tuple[object, dict[str, object]]] | None = None
    for arg in rows:
        if isinstance(arg, TableRow):
            fixed[type(arg).__name__] = arg
            continue
        if each is not None or isinstance(arg, (str, bytes)) or not isinstance(arg, Iterable):
            raise ValueError(f"rows must be rows (TableRow) and at most one collection, got {arg!r}")
        items = arg.items() if isinstance(arg, Mapping) else ((None, r) for r in arg)
        each = []
        for key, item in items:
            bound = {type(item).__name__: item} if isinstance(item, TableRow) else {"value": item}
            each.append((item, bound | ({} if key is None else {"key": key})))
    return fixed, [(None, {})] if each is None else each


def _write(
    template: str,
    parts: list,
    names: dict[str, object],
    values: dict[str, object],
    item: object,
    figures: list[str],
) -> str:
    """The template written once (``item``: the collection's element, passed
    to a callable value); the figures it shows are added to ``figures``."""
    out = []
    for literal, name, spec, conversion in parts:
        out.append(literal)
        if name is None:
            continue
        head = _head(name)
        if head in values:
            value = values[head]
            names[head] = value(item) if callable(value) else value
        try:
            value = _FORMATTER.get_field(name, (), names)[0]
        except (KeyError, AttributeError, IndexError, TypeError) as exc:
            given = sorted({*names, *values})
            raise ValueError(
                f"template {template!r}: no value for {{{name}}} ({exc!r}); given {given}"
            ) from None
        figure = _figure(name, value, conversion, template, head in values or head in ("key", "value"))
        if figure and figure not in figures:
            figures.append(figure)
        if isinstance(value, Shown):
            figures += [f for f in value.figures if f not in figures]
        out.append(format(_FORMATTER.convert_field(value, conversion), spec))
    return "".join(out)


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

    def measured(self, template: str, /, *rows: object, sep: str = "; ", **values: object) -> None:
        """Measured figures, shown next to the claim's verdict as the text
        ``shown(template, *rows, sep=sep, **values)`` writes (:func:`shown`:
        each placeholder names the row field or value it shows). A template
        with no placeholder is a text with no figure."""
        text = shown(template, *rows, sep=sep, **values)
        if not text:
            raise ValueError(f"template must write a non-empty text, got {template!r} with rows {rows!r}")
        self._node.user_properties.append((MEASURED_PROPERTY, str(text)))

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

    def budget_or_inconclusive(self, reserve: float = 0.0) -> float:
        """:attr:`budget_s` (> 0); when nothing is left of the run's whole
        budget (no more than ``reserve`` seconds, kept for the timing claims
        still to come), the test ends here as inconclusive (failed under
        ``--timing-strict``) without timing anything."""
        check_real("reserve", reserve, low=0.0, what="a number of seconds")
        budget = self.budget_s
        if budget_left(self._config) <= reserve:  # budget_s <= 0 exactly when nothing is left
            total = self._config.getoption("timing_budget_total")
            kept = f", {reserve:g} s of it kept for the timing claims after this one" if reserve else ""
            self._inconclusive(
                f"inconclusive: the run's timing budget is spent "
                f"(--timing-budget-total {total:g} s{kept}); not timed"
            )
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

    def ratio(
        self, baseline: Callable[[], object], candidate: Callable[[], object], rule: RatioRule, **kwargs
    ) -> Decision:
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
        raise ValueError(
            f"decision.verdict must be {HOLDS!r}, {BROKEN!r} or {INCONCLUSIVE!r}, got {decision.verdict!r}"
        )
