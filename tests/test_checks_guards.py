"""Guards on aftertrain.checks found by the mutation run (docs/mutation.md):
a failed row always counts as a failure, and the rule battery splits its
false-alarm rate across its tests (Bonferroni), as check_rule documents."""

from __future__ import annotations

import pytest

from aftertrain import speculative as S
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

