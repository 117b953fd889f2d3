"""aftertrain.checks.assertions.rule_reports, the one call behind
``assert_rule`` and ``aftertrain check rule``: the precisions it hands a
rule. p and q come in ``dtype``; with ``exact`` the forced-uniform probes
hand u and v in ``dtype`` too, and the statistical battery draws its
uniforms in float64, or float32 for a lower ``dtype`` (its docstring:
``torch.promote_types(dtype, float32)``, as a sampler deployed in bfloat16
draws ``torch.rand`` in float32)."""

from __future__ import annotations

import pytest
import torch

from aftertrain.checks import zoo
from aftertrain.checks.assertions import rule_reports


@pytest.mark.parametrize("dtype, uniforms", [
    (torch.float64, torch.float64),
    (torch.float32, torch.float32),
    (torch.bfloat16, torch.float32),
    (torch.float16, torch.float32),
], ids=str)
def test_the_uniforms_handed_to_a_rule_are_in_the_documented_dtype(dtype, uniforms):
    """With exact: the probes hand p, q, u, v in dtype; the battery hands p, q
    in dtype and u, v in promote_types(dtype, float32); the correct rule passes both."""
    seen = []
    rule = zoo.make_rule()

    def spy(p, q, drafts, u, v):
        seen.append((p.dtype, q.dtype, u.dtype, v.dtype))
        return rule(p, q, drafts, u, v)
    exact, battery = rule_reports(spy, exact=True, dtype=dtype, n=100)
    assert exact.passed and battery.passed, (str(exact), str(battery))
    # check_rule_exact hands everything in dtype; check_rule draws its own uniforms
    assert set(seen) == {(dtype, dtype, dtype, dtype), (dtype, dtype, uniforms, uniforms)}


def test_without_exact_the_rule_takes_p_q_and_drafts_in_the_dtype():
    """Without exact only check_rule runs, handing p and q in dtype."""
    seen = set()
    rule = zoo.make_rule()

    def spy(p, q, drafts):
        seen.add((p.dtype, q.dtype))
        g = torch.Generator().manual_seed(0)
        n, k = drafts.shape
        u = torch.rand(n, k, dtype=torch.float32, generator=g)
        v = torch.rand(n, dtype=torch.float32, generator=g)
        return rule(p, q, drafts, u, v)
    [report] = rule_reports(spy, dtype=torch.bfloat16, n=100)
    assert seen == {(torch.bfloat16, torch.bfloat16)} and "dtype=bfloat16" in report.subject


def _one_round_rule():
    """A correct rule of one round per call (p (k+1, V), q (k, V), drafts
    (k,)), its uniforms from torch's global generator."""
    rule = zoo.make_rule()

    def one(p, q, drafts):
        u = torch.rand(1, drafts.shape[0], dtype=torch.float64)
        v = torch.rand(1, dtype=torch.float64)
        a, t = rule(p[None], q[None], drafts[None], u, v)
        return int(a[0]), int(t[0])
    return one


def test_assert_rule_passes_sequential_through_to_the_checks():
    """assert_rule(..., sequential=True) wraps a one-round rule as
    rule_reports does: a correct one-round rule passes (handed whole
    batches, it would raise)."""
    from aftertrain.checks.assertions import assert_rule

    assert assert_rule(_one_round_rule(), sequential=True, n=100) is None
