"""The ``count`` rows of :func:`aftertrain.checks.prune.check_pruner` and
the counting convention their figures fit.

A pattern that counts (:class:`~aftertrain.checks.patterns.Unstructured`,
:class:`~aftertrain.checks.patterns.Structured`) declares its
:class:`~aftertrain.checks.patterns.Counting`: a
:class:`~aftertrain.checks.patterns.Rounding` of ``s * n`` and the least it
keeps. A pruner that counts by another convention (torch-pruning's
``n - int(n * (1 - s))``, a ``math.floor``, never the last slice) fails
the declared count on some rows only; when another convention fits more
of the count rows than the declared one, each failed row it fits is a
mismatch naming it, "looks like rounding=Rounding.FLOOR (declare
Structured(dim=0, norm=2, rounding=Rounding.FLOOR))", so a user tells a
convention from a bug. A row no convention fits stays a failure.
"""

from __future__ import annotations

import dataclasses

from aftertrain.checks.patterns import Counting, Rounding, Structured, Unstructured
from aftertrain.checks.report import MISMATCH, Report, Row

#: The conventions a report's counts are matched against, in the order a
#: tie is named: every rounding, keeping nothing, then at least one.
CONVENTIONS = tuple(Counting(r, k) for k in (0, 1) for r in Rounding)

#: A count row with the sparsity it was judged at.
Counted = tuple[Row, float]


def count_row(at: str, got: int, n: int, s: float, counting: Counting, unit: str = "") -> Row:
    """The ``count`` row: ``got`` removed of ``n`` (``unit``: e.g. " slices
    along dim 0") against ``counting``'s count at sparsity ``s``."""
    want = counting.removed(s, n)
    return Row(
        at,
        "count",
        got == want,
        value=float(got),
        bound=float(want),
        n=n,
        detail="" if got == want else f"removed {got} of {n}{unit}, {counting.formula(s, n)}",
    )


def name_fitting_count(report: Report, pattern: Unstructured | Structured, counted: list[Counted]) -> Report:
    """``report``, or a copy whose failed count rows (``counted``, each with
    its sparsity) that the best-fitting other convention explains are
    mismatches naming it: best is the first of :data:`CONVENTIONS` fitting
    the most count rows, when that is more than the declared one fits."""
    if all(row.passed for row, _ in counted):
        return report
    declared = pattern.counting

    def fitted(c: Counting) -> int:
        return sum(int(row.value) == c.removed(s, row.n) for row, s in counted)

    best = max((c for c in CONVENTIONS if c != declared), key=fitted)
    if fitted(best) <= fitted(declared):
        return report
    alt = dataclasses.replace(pattern, rounding=best.rounding, keep_at_least=best.keep_at_least)
    words = best.words().removeprefix(", ") or f"rounding=Rounding.{Rounding.HALF_EVEN.name}"
    swap = {
        id(row): dataclasses.replace(
            row, severity=MISMATCH, fits=str(alt), detail=f"{row.detail}; looks like {words} (declare {alt})"
        )
        for row, s in counted
        if not row.passed and int(row.value) == best.removed(s, row.n)
    }
    assert len(report.failures) == sum(not r.passed for r in report.rows), "a pruner's report has rows only"
    out = Report(report.subject, strict=report.strict)
    for row in report.rows:
        out.add(swap.get(id(row), row))
    return out
