"""aftertrain.checks.strategies: the public hypothesis strategies draw what
they say (each relation, shape and edge), and a property test written with
them catches a broken implementation (teeth) and passes a correct one."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from aftertrain.checks import strategies as S
from aftertrain.checks import zoo
from aftertrain.checks.prune import NM, check_pruner
from aftertrain.checks.quant import Mapping, PerAxis, QuantScheme, check_quantizer
from aftertrain.quant.primitives import SCALE_FLOOR

FAST = settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@FAST
@given(st.data())
def test_every_relation_draws_what_it_names(data):
    relation = data.draw(st.sampled_from(S.ALL_RELATIONS))
    p, q = data.draw(S.verification_case(relations=(relation,)))
    assert p.shape[0] == q.shape[0] + 1 and p.dtype == q.dtype == torch.float64
    assert bool((p >= 0).all()) and bool((q >= 0).all())
    for i in range(q.shape[0]):
        if relation == "zero residual":
            assert bool((p[i] <= q[i]).all()) and not torch.equal(p[i], q[i])
        if relation == "ulp-close":
            gap = (p[i] - q[i]).abs()
            assert bool(
                (gap <= 4 * torch.finfo(torch.float64).eps * p[i].clamp_min(1e-300) + 4 * 2.0**-1074).all()
            )
        if relation == "one-hot":
            assert sorted(q[i].tolist())[-1] == 1.0 and int((q[i] > 0).sum()) == 1


@pytest.mark.teeth
def test_distributions_catches_a_nan_residual_read_by_argmax():
    """Teeth: ``distributions()`` reaches the zero residuals where the zoo's
    NaN-argmax rule emits token 0 with p(0) = 0 (forced rejection at
    u = 1 - eps); the correct rule holds on as many examples."""
    top = 1 - 2.0**-53

    def emits_outside_p(rule, case) -> bool:
        p, q = case
        k = q.shape[0]
        drafts = torch.tensor([[int(torch.argmax(q[0]))] + [0] * (k - 1)])
        for v in (0.125, 0.875):
            a, t = rule(
                p[None],
                q[None],
                drafts,
                torch.full((1, k), top, dtype=torch.float64),
                torch.tensor([v], dtype=torch.float64),
            )
            if int(a[0]) == 0 and float(p[0, int(t[0])]) == 0:
                return True
        return False

    broken = zoo.make_rule(zoo.RuleBug.NAN_RESIDUAL_ARGMAX)
    found = find(
        S.distributions(max_vocab=4, max_k=1, relations=("zero residual",)),
        lambda case: emits_outside_p(broken, case),
        settings=settings(max_examples=300, derandomize=True, database=None, phases=[Phase.generate]),
    )
    assert float(found[0][0, 0]) == 0.0

    @settings(max_examples=20, derandomize=True, deadline=None, database=None)
    @given(S.distributions(max_vocab=4, max_k=2))
    def correct_holds(case):
        assert not emits_outside_p(zoo.make_rule(), case)

    correct_holds()


@FAST
@given(S.weights(max_rows=4, max_cols=8))
def test_weights_are_finite_float32_matrices_and_the_reference_passes_on_them(w):
    assert w.dtype == torch.float32 and w.dim() == 2 and bool(torch.isfinite(w).all())
    from aftertrain.checks.schemes import quantize_scheme

    scheme = QuantScheme(4, Mapping.SYMMETRIC, PerAxis(0))
    assert check_quantizer(lambda x, s: quantize_scheme(x, s), schemes=[scheme], cases={"w": w}).passed


@pytest.mark.teeth
def test_mixed_row_scales_catches_a_per_tensor_scale_claimed_per_row():
    """The strategies reach subnormal rows and mixed row scales, and a
    per-tensor scale claimed per row fails on a drawn matrix (teeth)."""
    settings_ = settings(max_examples=200, derandomize=True, database=None)
    sub = find(
        S.subnormal_rows(), lambda w: bool(((w != 0) & (w.abs() < SCALE_FLOOR)).any()), settings=settings_
    )
    assert bool(((sub != 0) & (sub.abs() < SCALE_FLOOR)).any())
    scheme = QuantScheme(8, Mapping.SYMMETRIC, PerAxis(0))

    def per_tensor(w, s):
        scale = w.abs().amax().clamp_min(SCALE_FLOOR) / 127
        return torch.round(w / scale).clamp(-127, 127) * scale

    found = find(
        S.mixed_row_scales(max_rows=3, max_cols=4),
        lambda w: not check_quantizer(per_tensor, schemes=[scheme], cases={"w": w}).passed,
        settings=settings_,
    )
    assert found.shape[0] >= 2


@FAST
@given(S.nm_shapes(), st.data())
def test_nm_shapes_are_whole_blocks_and_a_correct_pruner_passes_on_them(shape, data):
    n, m, rows, cols = shape
    assert 1 <= n < m and cols % m == 0
    w = data.draw(S.weight_matrix(max_rows=rows, max_cols=cols, col_multiple=m))

    def n_of_m(weights, sparsity):
        out = {}
        for name, x in weights.items():
            blocks = x.abs().reshape(-1, m)
            keep = torch.zeros_like(blocks, dtype=torch.bool)
            keep.scatter_(1, blocks.topk(n, dim=1, sorted=False).indices, True)
            out[name] = keep.reshape(x.shape)
        return out

    report = check_pruner(n_of_m, pattern=NM(n, m), cases={"w": {"w": w}})
    assert {r.check for r in report.rows if not r.passed} <= {"magnitude"}, str(report)


def test_an_unknown_relation_is_refused():
    with pytest.raises(ValueError, match="relations must be a non-empty subset"):
        S.distributions(relations=("sideways",))
