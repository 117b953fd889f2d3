"""The exact probes' margin (aftertrain.checks.rule_exact) at float32 and
bfloat16: wide enough that a correct rule which renormalises p and q in the
handed dtype (a softmax of their logs, as transformers' rule does) passes,
narrow enough that a rule whose acceptance threshold is off by twice the
margin fails. The margins are worked out from the dtypes' eps by hand."""

from __future__ import annotations

import pytest
import torch

from aftertrain.checks import speculative as CS
from aftertrain.checks import zoo
from aftertrain.checks.rule_exact import below_one, margin

LOW = [torch.float32, torch.bfloat16]


@pytest.mark.parametrize(
    "dtype, expected",
    [
        (torch.float64, 1e-12),  # 4 eps = 8.9e-16 is below the floor 1e-12
        (torch.float32, 4 * 2.0**-23),  # 4.77e-7
        (torch.bfloat16, 4 * 2.0**-7),  # 3.1e-2
        (torch.float16, 4 * 2.0**-10),
    ],
)
def test_the_margin_is_four_ulps_of_the_dtype_and_at_least_1e_12(dtype, expected):
    """margin(dtype) = max(4 eps, 1e-12), as its docstring says."""
    assert margin(dtype) == expected


@pytest.mark.parametrize("dtype", [torch.float64, *LOW, torch.float16])
def test_below_one_is_the_largest_value_below_one_in_the_dtype(dtype):
    """Representable in dtype, below 1, and its next value up is 1."""
    x = torch.tensor(below_one(dtype), dtype=dtype)
    assert float(x) == below_one(dtype) < 1.0
    assert torch.nextafter(x, torch.ones((), dtype=dtype)) == 1.0


def _renormalising(dtype: torch.dtype):
    """The correct rule fed p and q renormalised in ``dtype`` (a softmax of
    their logs): p/q moves by a few ulps of ``dtype``."""
    rule = zoo.make_rule()

    def renormalised(p, q, drafts, u, v):
        assert p.dtype == q.dtype == dtype
        return rule(torch.softmax(p.log(), -1), torch.softmax(q.log(), -1), drafts, u, v)

    return renormalised


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_a_correct_rule_that_renormalises_passes_the_exact_probes(dtype):
    """No false alarm: the probes sit a margin away from where renormalising
    in the dtype moves p/q."""
    report = CS.check_rule_exact(_renormalising(dtype), dtype=dtype)
    assert report.passed, str(report)


def _threshold_off(factor: float):
    """Accepts while u < (p/q) * factor: a threshold moved by ``factor``."""
    rule = zoo.make_rule()

    def off(p, q, drafts, u, v):
        return rule(p, q, drafts, u / factor, v)

    return off


@pytest.mark.teeth
@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_check_rule_exact_catches_a_threshold_off_by_twice_the_margin(dtype):
    """u = (p/q)(1 + margin) must reject; a rule accepting below
    (p/q)(1 + 2 margin) accepts it, on both threshold probes (p/q = 1/2 and
    3/4)."""
    report = CS.check_rule_exact(_threshold_off(1 + 2 * margin(dtype)), dtype=dtype)
    failed = {r.case for r in report.rows if not r.passed}
    m = f"{margin(dtype):.2g}"
    assert {f"u {m} above p/q = 0.5 rejects", f"u {m} above p/q = 0.75 rejects"} <= failed, str(report)


# --- each probe's verdict reads the whole answer --------------------------------------------


def _failed_rows(report):
    return [(r.case, r.check) for r in report.rows if not r.passed]


@pytest.mark.teeth
def test_probe_check_catches_the_right_count_with_the_wrong_token():
    """A rule that skips the residual's renormalisation accepts and rejects
    as a correct one; the probes "residual renormalised" fail on its token
    alone."""
    report = CS.check_rule_exact(zoo.make_rule(zoo.RuleBug.SKIP_RENORMALISATION))
    failed = _failed_rows(report)
    assert any(
        case.startswith("residual renormalised") and check == "forced uniforms" for case, check in failed
    ), str(report)


@pytest.mark.teeth
def test_zero_residual_batch_row_catches_a_token_outside_p():
    """In the batch with one all-zero residual (p(0) = 0), a rule that
    draws argmax of a NaN residual emits token 0: that row's
    "forced uniforms" check fails."""
    report = CS.check_rule_exact(zoo.make_rule(zoo.RuleBug.NAN_RESIDUAL_ARGMAX))
    assert ("batch of 16, row 5 an all-zero residual", "forced uniforms") in _failed_rows(report)


@pytest.mark.teeth
def test_batch_consistency_catches_a_change_in_the_last_row_only():
    """A rule correct row by row but changing the last row of a batch of
    more than one fails "batch consistency"."""
    rule = zoo.make_rule()

    def last_row_off(p, q, drafts, u, v):
        accepted, token = rule(p, q, drafts, u, v)
        if drafts.shape[0] > 1:
            token = token.clone()
            token[-1] = (token[-1] + 1) % p.shape[-1]
        return accepted, token

    report = CS.check_rule_exact(last_row_off)
    assert any(check == "batch consistency" for _, check in _failed_rows(report)), str(report)


@pytest.mark.teeth
def test_batch_consistency_catches_a_batch_bug_only_on_the_callers_cases():
    """``cases`` replace the fixed case in the batch probe: a rule that
    changes the last row of a batch only at V = 5 (no probe and no fixed
    case has 5 symbols) passes without them and fails "batch consistency"
    on the caller's V = 5 case."""
    rule = zoo.make_rule()

    def last_row_off_at_v5(p, q, drafts, u, v):
        accepted, token = rule(p, q, drafts, u, v)
        if drafts.shape[0] > 1 and p.shape[-1] == 5:
            token = token.clone()
            token[-1] = (token[-1] + 1) % 5
        return accepted, token

    p = torch.tensor([[0.1, 0.2, 0.3, 0.2, 0.2]] * 3, dtype=torch.float64)
    q = torch.tensor([[0.3, 0.1, 0.2, 0.2, 0.2]] * 2, dtype=torch.float64)
    assert CS.check_rule_exact(last_row_off_at_v5).passed
    report = CS.check_rule_exact(last_row_off_at_v5, cases=[("five symbols", p, q)])
    assert _failed_rows(report) == [("batch of 64 equals row by row (five symbols)", "batch consistency")], (
        str(report)
    )


def test_the_rules_renormalise_attribute_is_used_when_none_is_given():
    """``renormalise`` defaults to the rule's attribute: the search calls it."""
    calls = []
    rule = zoo.make_rule()

    def spy(r):
        calls.append(r.shape)
        return r

    rule.renormalise = spy
    report = CS.check_rule_exact(rule)
    assert report.passed, str(report)
    assert calls


def _dirichlet_row():
    """The row the search starts from: p[0] of _rounded_up_probes (Dirichlet, V = 8, seed 2024)."""
    import numpy as np

    return torch.from_numpy(np.random.default_rng(2024).dirichlet(np.ones(8), size=3))[0]


def test_the_zero_residual_search_steps_by_ulps_when_the_margin_is_too_coarse():
    """A rule that renormalises by dividing by the sum (float64): raising a
    cell by the margin (1e-12) lowers every other cell of Q below P, but
    raising it by one ulp leaves the sum, so the other cells equal and the
    raised one above: the search must find that step (not give up after the
    margin)."""
    from aftertrain.checks.rule_probes import _zero_residual_pair

    def normalise(r):
        return r / r.sum()

    p = _dirichlet_row()
    found = _zero_residual_pair(p, torch.float64, normalise)
    assert found is not None
    x, q = found
    P, Q = normalise(p), normalise(q)
    assert bool((P <= Q).all()) and float(P[x] / Q[x]) < below_one(torch.float64)
    report = CS.check_rule_exact(zoo.make_rule(), renormalise=normalise)
    assert report.passed, str(report)


def test_the_zero_residual_search_refuses_a_pair_whose_ratio_rounds_to_one():
    """A renormalise that rounds to float32 maps p and every raised q (by
    at most 64 ulps of float64) to the same values: P <= Q holds with
    P_x / Q_x = 1, which a forced u below 1 would accept, so no step works
    and check_rule_exact says so (ValueError), as its docstring promises."""
    from aftertrain.checks.rule_probes import _zero_residual_pair

    def to_float32(r):
        return r.float().double()

    assert _zero_residual_pair(_dirichlet_row(), torch.float64, to_float32) is None
    with pytest.raises(ValueError, match="renormalise leaves no all-zero residual"):
        CS.check_rule_exact(zoo.make_rule(), renormalise=to_float32)
