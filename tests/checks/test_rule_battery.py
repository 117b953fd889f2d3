"""Guards on aftertrain.checks (each pins a rule one plausible slip would break; docs/mutation.md):
a failed row always counts as a failure, and the rule battery splits its
false-alarm rate across its tests (Bonferroni), as check_rule documents."""

from __future__ import annotations

import pytest
import torch

from aftertrain import speculative as S
from aftertrain.checks import rule_battery
from aftertrain.checks import speculative as CS
from aftertrain.checks.report import Report, Row


@pytest.mark.parametrize("detail", ["", "why it failed"])
def test_a_failed_row_is_a_failure_with_or_without_a_detail(detail):
    report = Report("subject")
    report.add(Row("case", "check", True))
    assert report.passed
    report.add(Row("case", "check", False, detail=detail))
    assert not report.passed and len(report.failures) == 1
    with pytest.raises(AssertionError, match="case: check failed"):
        report.raise_for_failures()


@pytest.fixture(scope="module")
def correct_report():
    return CS.check_rule(CS.drawing_uniforms(S.verify_with_uniforms), n=100, alpha=1e-6)


def test_the_default_battery_runs_each_test_at_alpha_over_83(correct_report):
    """check_rule's docstring: m = 83 statistical tests in the default
    battery, each at alpha / m (1.2e-8 at alpha = 1e-6). The chi-square and
    chi-square rows carry that level as their bound."""
    assert correct_report.passed, str(correct_report)
    levels = {r.bound for r in correct_report.rows if r.check == "chi-square"}
    assert levels and all(level == pytest.approx(1e-6 / 83, rel=1e-12) for level in levels)
    stat_rows = [r for r in correct_report.rows if r.check in ("chi-square", "tv")]
    assert len(stat_rows) == 2 * len({(r.case, r.position) for r in stat_rows})
    # the count a record prints as "N checks": an outputs row per case, an acceptance row
    # at each drafted position, support, chi-square and TV at each position some round reached
    cases = rule_battery.battery(0)
    reached = {(r.case, r.position) for r in correct_report.rows if r.check == "support"}
    assert len(correct_report.rows) == len(cases) + sum(c.k for c in cases) + 3 * len(reached)
    assert 0 < len(reached) <= sum(c.k + 1 for c in cases)


def _swap_one(weights, s):
    """Per-layer magnitude pruning that removes the second-smallest |w| in
    place of the smallest: counts exact, magnitude order broken by the
    ratio of those two weights."""
    masks = {}
    for n, w in weights.items():
        k = round(s * w.numel())
        order = torch.argsort(w.abs().reshape(-1), stable=True)
        drop = order[:k].clone()
        if 0 < k < w.numel():
            drop[0] = order[k]  # keeps the smallest, removes the (k+1)-th smallest
        keep = torch.ones(w.numel(), dtype=torch.bool)
        keep[drop] = False
        masks[n] = keep.view(w.shape)
    return masks


def test_prune_magnitude_check_fails_a_swap_just_beyond_its_limit():
    """Removed |w| = 1.5 against a kept |w| = 1.0: beyond the check's limit
    (removed <= kept) by less than a factor of two, so a check loosened by
    two would pass it."""
    from aftertrain.checks.prune import Scope, check_pruner

    case = {"w": torch.tensor([[1.0, 1.5, 4.0, 5.0]])}
    report = check_pruner(
        _swap_one, scope=Scope.PER_LAYER, nested=False, sparsities=[0.25], cases={"near tie": case}
    )
    rows = [r for r in report.rows if r.check == "magnitude"]
    assert rows and not rows[0].passed and (rows[0].value, rows[0].bound) == (1.5, 1.0)
    assert not report.passed


@pytest.fixture(scope="module")
def always_accept_report():
    from aftertrain.checks import zoo

    return CS.check_rule(CS.drawing_uniforms(zoo.make_rule("always accept")), n=100, seed=0)


def test_rule_battery_rows_just_beyond_their_threshold_fail(always_accept_report):
    """The zoo's "always accept" at n = 100, seed 0 gives rows just beyond
    their limits: TV between the same-sample bound and twice it, and
    chi-square p-values between the per-test level / 100 and the level. Each
    such row must fail (a check loosened by two, or by a factor 100 in
    alpha, would pass them), and every row's verdict is its figure against
    its recorded limit."""
    rows = always_accept_report.rows
    tv_band = [r for r in rows if r.check == "tv" and r.tv_threshold < r.tv <= 2 * r.tv_threshold]
    chi_band = [r for r in rows if r.check == "chi-square" and r.bound / 100 <= r.p_value < r.bound]
    assert tv_band and chi_band  # the case really sits just beyond both limits
    assert not any(r.passed for r in tv_band + chi_band)
    for r in rows:
        if r.check == "tv":
            assert r.passed is (r.tv <= r.tv_threshold), r
        elif r.check == "chi-square":
            assert r.passed is (r.p_value >= r.bound), r
