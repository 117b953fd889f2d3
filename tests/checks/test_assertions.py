"""aftertrain.checks.assertions.rule_reports, the one call behind
``assert_rule`` and ``aftertrain check rule``: the precisions it hands a
rule, and the same exact verdict at every seed. p and q come in ``dtype``;
with ``exact`` the forced-uniform probes hand u and v in ``dtype`` too, and
the statistical battery draws its uniforms in ``uniforms``, by default
``dtype`` (as the rule's own ``torch.rand_like(p)`` does: gpt-fast's
bfloat16 defect), float32 when told."""

from __future__ import annotations

import pytest
import torch

from aftertrain.checks import zoo
from aftertrain.checks.assertions import assert_rule, rule_reports
from aftertrain.checks.speculative import check_rule_exact


@pytest.mark.parametrize(
    "dtype, uniforms, drawn",
    [
        (torch.float64, None, torch.float64),
        (torch.float32, None, torch.float32),
        (torch.bfloat16, None, torch.bfloat16),
        (torch.bfloat16, torch.float32, torch.float32),
        (torch.float16, torch.float32, torch.float32),
    ],
    ids=str,
)
def test_the_uniforms_handed_to_a_rule_are_in_the_documented_dtype(dtype, uniforms, drawn):
    """With exact: the probes hand p, q, u, v in dtype; the battery hands p, q
    in dtype and u, v in ``uniforms`` (default dtype); the correct rule passes both."""
    seen = []
    rule = zoo.make_rule()

    def spy(p, q, drafts, u, v):
        seen.append((p.dtype, q.dtype, u.dtype, v.dtype))
        return rule(p, q, drafts, u, v)

    exact, battery = rule_reports(spy, exact=True, dtype=dtype, n=100, uniforms=uniforms)
    assert exact.passed and battery.passed, (str(exact), str(battery))
    # check_rule_exact hands everything in dtype; check_rule draws its own uniforms
    assert set(seen) == {(dtype, dtype, dtype, dtype), (dtype, dtype, drawn, drawn)}


@pytest.mark.teeth
def test_exact_bfloat16_battery_catches_gpt_fasts_rand_like_zero():
    """gpt-fast in bfloat16 accepts while ``rand_like(p) <= p/q``: bfloat16
    uniforms are 0 with probability ~2e-3, so drafts with p = 0 are
    accepted. With exact at bfloat16 the battery draws its uniforms in
    bfloat16 and its support check fails (tokens with p = 0 emitted, the
    disjoint-supports case among them) with the exact acceptance count;
    told ``uniforms=float32`` (a sampler that draws float32) the same battery
    passes, and the correct rule passes at bfloat16 uniforms too."""
    gpt_fast = zoo.make_rule(zoo.RuleBug.BFLOAT16_RAND_ACCEPT_U_LE)
    _, battery = rule_reports(gpt_fast, exact=True, dtype=torch.bfloat16, n=5000)
    failed = [r for r in battery.rows if not r.passed]
    assert {r.check for r in failed} == {"support", "acceptance"}, str(battery)
    assert any(r.case.startswith("disjoint") and r.check == "support" for r in failed), str(battery)
    _, float32 = rule_reports(gpt_fast, exact=True, dtype=torch.bfloat16, n=5000, uniforms=torch.float32)
    assert not [r for r in float32.rows if not r.passed and r.check == "support"], str(float32)


def uniform_fallback(p, q, drafts, u, v):
    """The zoo's correct rule but for one defect class of the public rules:
    an all-zero residual replaced by the uniform law over the whole
    vocabulary (a token with p = 0 is emitted where v falls on it)."""
    N, k = drafts.shape
    px = p[:, :k].gather(2, drafts.unsqueeze(2)).squeeze(2)
    qx = q.gather(2, drafts.unsqueeze(2)).squeeze(2)
    accepted = (u * qx < px).long().cumprod(1).sum(1)
    rows = torch.arange(N)
    p_n = p[rows, accepted]
    q_n = torch.cat([q, q.new_zeros(N, 1, q.shape[-1])], 1)[rows, accepted]
    r = (p_n - q_n).clamp_min(0)
    r = torch.where(r.sum(-1, keepdim=True) > 0, r, torch.ones_like(r))
    cdf = r.cumsum(-1)
    x = torch.minimum(
        v.unsqueeze(-1).to(cdf.dtype) * cdf[:, -1:],
        torch.nextafter(cdf[:, -1:], torch.zeros_like(cdf[:, -1:])),
    )
    token = torch.searchsorted(cdf, x, right=True).squeeze(-1).clamp_max(r.shape[-1] - 1)
    return accepted, token


@pytest.mark.teeth
def test_exact_probes_catches_a_uniform_fallback_alike_at_every_seed():
    """Every input of an exact probe is forced (the batch probe's row v
    included), so a real defect gives the same failures at seeds 0 to 3
    through check_rule_exact, rule_reports and assert_rule; the batch probe's
    zero-residual row catches it (its v is forced onto token 0, p(0) = 0)."""

    def failed(report):
        return sorted(r.line() for r in report.rows if not r.passed)

    sets = {tuple(failed(check_rule_exact(uniform_fallback, seed=s))) for s in range(4)}
    sets |= {tuple(failed(rule_reports(uniform_fallback, exact=True, n=100, seed=s)[0])) for s in (0, 3)}
    assert len(sets) == 1, sets
    [lines] = sets
    assert any(line.startswith("batch of 16, row 5") for line in lines), lines
    messages = set()
    for s in (0, 3):
        with pytest.raises(AssertionError) as info:
            assert_rule(uniform_fallback, exact=True, n=100, seed=s)
        messages.add(str(info.value).split("\n\n")[0].split("check_rule(")[0])
    assert len(messages) == 1, messages


def test_uniforms_need_exact():
    with pytest.raises(ValueError, match="uniforms applies only with exact=True"):
        rule_reports(zoo.make_rule(), uniforms=torch.float32, n=100)


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


def test_every_kit_has_one_import_place_with_its_one_line_assertion():
    """``from aftertrain.checks.<kit> import ...`` gives the kit's types, its
    check and its one-line assertion, as ``torchao.quantization`` is
    torchao's; ``aftertrain.checks.assertions`` gathers the three."""
    from aftertrain.checks import assertions, prune, quant, speculative

    for module, names in (
        (
            speculative,
            (
                "check_rule",
                "check_rule_exact",
                "check_generator",
                "sequential",
                "drawing_uniforms",
                "assert_rule",
                "rule_reports",
            ),
        ),
        (
            quant,
            (
                "QuantScheme",
                "Mapping",
                "PerTensor",
                "PerAxis",
                "PerGroup",
                "check_quantizer",
                "assert_quantizer",
                "quantize_scheme",
                "Report",
                "Row",
            ),
        ),
        (
            prune,
            ("NM", "Scope", "Structured", "Unstructured", "check_pruner", "assert_pruner", "Report", "Row"),
        ),
    ):
        assert set(names) <= set(module.__all__), module.__name__
        assert all(getattr(module, n) is not None for n in module.__all__), module.__name__
    assert assertions.assert_quantizer is quant.assert_quantizer
    assert assertions.assert_pruner is prune.assert_pruner
    assert assertions.assert_rule is speculative.assert_rule
