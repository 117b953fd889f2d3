"""A pruner's counting convention (aftertrain.checks.patterns.Rounding,
``keep_at_least``; aftertrain.checks.prune_counts): declared, a pruner
counting so passes; undeclared, the count rows the convention explains are
mismatches naming the declaration; torch-pruning's count, its "nothing
when the count reaches every row" and its p = inf ranking are told apart
on the battery's 10- and 20-row matrices."""

from __future__ import annotations

import math

import pytest

from aftertrain.checks.patterns import Counting
from aftertrain.checks.prune import (
    Rounding,
    Scope,
    Structured,
    Unstructured,
    check_pruner,
    structured_battery,
)
from aftertrain.checks.prune_battery import ROUNDING_SIZES
from aftertrain.checks.prune_counts import CONVENTIONS
from tests.common.kit import failed_checks
from tests.common.prune_bugs import global_counted, rows_counted, torch_pruning_rows

KEPT_TRUNCATED_1 = Counting(Rounding.KEPT_TRUNCATED, 1)


def test_the_roundings_part_at_the_batterys_sizes():
    """Rounding's Note, and ROUNDING_SIZES' comment: at 10, 20 and 30 weights
    0.9 removes 9, 18, 27 by every rounding but torch-pruning's float
    ``n - int(n * (1 - s))``: 10, 19, 28; 0.05 of 10 removes 0 half to even,
    1 half up; 0.5 of 5 removes 2 half to even, 3 half up and ceil."""
    assert [Rounding.KEPT_TRUNCATED.removed(0.9, n) for n in ROUNDING_SIZES] == [10, 19, 28]
    for r in (Rounding.HALF_EVEN, Rounding.HALF_UP, Rounding.FLOOR, Rounding.CEIL):
        assert [r.removed(0.9, n) for n in ROUNDING_SIZES] == [9, 18, 27], r
    assert [r.removed(0.05, 10) for r in Rounding] == [0, 1, 0, 1, 1]
    assert [r.removed(0.5, 5) for r in Rounding] == [2, 3, 2, 3, 3]
    assert KEPT_TRUNCATED_1.removed(0.9, 10) == 9 and KEPT_TRUNCATED_1.removed(1.0, 1) == 0
    assert (
        KEPT_TRUNCATED_1.formula(0.9, 10)
        == "10 - int(10 * (1 - 0.9)) = 10, at most 10 - 1 = 9 (keep_at_least=1)"
    )


@pytest.mark.parametrize("counting", CONVENTIONS, ids=lambda c: f"{c.rounding.name}-keep{c.keep_at_least}")
def test_a_row_pruner_passes_its_declared_count_and_undeclared_reads_a_mismatch_naming_it(counting):
    """Every convention, on the structured battery: declared, the report
    passes; undeclared (half to even, none kept), every failed row is a
    count mismatch whose ``fits`` is the declaration."""
    prune = rows_counted(counting.removed)
    declared = Structured(0, 2, rounding=counting.rounding, keep_at_least=counting.keep_at_least)
    report = check_pruner(prune, pattern=declared)
    assert report.passed, str(report)
    undeclared = check_pruner(prune, pattern=Structured(0, 2))
    if counting == Counting():
        return
    failed = [r for r in undeclared.rows if not r.passed]
    assert failed and not undeclared.passed
    assert {(r.check, r.outcome, r.fits) for r in failed} == {("count", "mismatch", str(declared))}
    assert undeclared.mismatches[0].endswith(f"(declare {declared})"), undeclared.mismatches[0]


def test_a_global_pruner_counting_by_torch_pruning_is_named_so():
    """An unstructured pattern takes the same keywords: a global pruner
    counting ``N - int(N * (1 - s))`` passes them and is named by them."""
    prune = global_counted(Rounding.KEPT_TRUNCATED.removed)
    pattern = Unstructured(Scope.GLOBAL, rounding=Rounding.KEPT_TRUNCATED)
    assert str(pattern) == "Unstructured(GLOBAL, rounding=Rounding.KEPT_TRUNCATED)"
    assert check_pruner(prune, pattern=pattern).passed
    undeclared = check_pruner(prune, scope=Scope.GLOBAL)
    assert {r.fits for r in undeclared.rows if not r.passed} == {str(pattern)}


@pytest.mark.teeth
def test_count_check_catches_torch_pruning_counts_claimed_as_ceil():
    """Exact arithmetic makes ``n - int(n * (1 - s))`` a ceil; float64 does
    not: 0.9 of 10 rows keeps ``int(0.9999999999999998) = 0``. Without the
    battery's "ten and twenty" case a ceil declaration passes such a
    pruner; with it, the 10- and 20-row counts fail."""
    prune = rows_counted(KEPT_TRUNCATED_1.removed)
    ceil = Structured(0, 2, rounding=Rounding.CEIL, keep_at_least=1)
    cases = structured_battery()
    without = {k: v for k, v in cases.items() if k != "ten and twenty"}
    assert check_pruner(prune, pattern=ceil, cases=without).passed
    report = check_pruner(prune, pattern=ceil)
    failed = [r for r in report.rows if not r.passed]
    assert [r.case for r in failed] == ["ten and twenty, sparsity 0.9, twenty"], str(report)
    assert failed[0].outcome == "mismatch" and failed[0].fits == str(
        Structured(0, 2, rounding=Rounding.KEPT_TRUNCATED, keep_at_least=1)
    )


@pytest.mark.teeth
def test_count_check_catches_torch_pruning_pruning_nothing_when_its_count_reaches_every_row():
    """torch-pruning skips a layer whose count reaches every row
    (``check_pruning_group``), so 0.9 of 10 rows removes none: declared in
    its own convention (kept_truncated, keep_at_least=1, which wants 9),
    those rows fail as failures, not mismatches; p = 2 ranks correctly."""
    declared = Structured(0, 2, rounding=Rounding.KEPT_TRUNCATED, keep_at_least=1)
    report = check_pruner(torch_pruning_rows(2), pattern=declared)
    assert failed_checks(report) == {"count", "nested"}
    assert not report.mismatches
    ten = [r for r in report.rows if r.case == "ten and twenty, sparsity 0.9, ten" and r.check == "count"]
    assert [(r.value, r.bound, r.outcome) for r in ten] == [(0.0, 9.0, "failure")]


@pytest.mark.teeth
def test_magnitude_check_catches_torch_pruning_ranking_rows_at_p_inf():
    """``|w|.pow(inf).sum(1)`` is inf for every row holding a weight above 1
    and 0 for every row below: the rows tie and go in index order, so a
    removed row's max-norm exceeds a kept one's."""
    declared = Structured(0, math.inf, rounding=Rounding.KEPT_TRUNCATED, keep_at_least=1)
    report = check_pruner(torch_pruning_rows(math.inf), pattern=declared)
    assert "magnitude" in failed_checks(report)
    assert "magnitude" not in failed_checks(check_pruner(torch_pruning_rows(2), pattern=Structured(0, 2)))


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: Structured(0, 2, rounding="floor"), ["rounding must be a Rounding", "'floor'"]),
        (lambda: Unstructured(Scope.GLOBAL, keep_at_least=-1), ["keep_at_least", "-1"]),
        (lambda: Structured(0, 2, keep_at_least=1.5), ["keep_at_least", "1.5"]),
    ],
)
def test_a_bad_counting_declaration_raises_a_value_error_naming_it(make, words):
    with pytest.raises(ValueError) as e:
        make()
    assert all(w in str(e.value) for w in words), str(e.value)
