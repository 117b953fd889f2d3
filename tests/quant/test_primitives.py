"""Properties of the quantizer (Q1) over arbitrary finite float32 matrices.

The properties are :func:`aftertrain.checks.quant.check_quantizer`'s (round
trip within scale/2, grid and codes in range, extremes on +-qmax, zero to
zero, odd symmetry, idempotence, edge rows): here the kit runs on
aftertrain's own quantizer over hypothesis examples; its teeth are in
``tests/checks/test_quant.py``. The rest: the rule is the article's line
verbatim, it agrees with PyTorch's fake quantization except at exact ties,
the integer form, and worked numbers of the experiments.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from aftertrain import quant as Q
from aftertrain.checks.quant import check_quantizer, reference_quantizer
from aftertrain.core import tolerances as TOL
from aftertrain.experiments import quant as EQ
from aftertrain.lm.model import GPT
from aftertrain.quant import Granularity
from tests.common.quant_bugs import clamp_past_qmax, floor_rounding, mean_scale, wrong_axis
from tests.common.strategies import quant_bits, tie_matrices, weight_matrices

G = Granularity
granularities = st.sampled_from(list(Granularity))


# --- the kit's properties, on the real quantizer ---------------------------------


@pytest.mark.claim("Q1")
@given(w=weight_matrices(), bits=quant_bits, g=granularities)
def test_quantizer_passes_the_kit_on_arbitrary_matrices(w, bits, g):
    """Every guarantee of aftertrain.checks.quant over arbitrary finite
    float32 matrices (zero rows, tiny and huge magnitudes): codes in
    [-qmax, qmax] (2 bits is ternary); the largest magnitude maps to +-qmax;
    0 -> 0 and signs kept; q(-w) = -q(w); re-quantizing w_hat gives the same
    codes; error <= scale/2 (1 + 8 qmax 2**-24) + 2**-149; no NaN."""
    check_quantizer(
        reference_quantizer, bits=[bits], granularities=[g], cases={"drawn": w}
    ).raise_for_failures()


@pytest.mark.claim("Q1")
@given(data=st.data(), bits=quant_bits, g=granularities)
def test_quantizer_passes_the_kit_at_exact_ties(data, bits, g):
    """The same guarantees where every w/scale but the largest is an exact
    half-integer (round half to even decides every code)."""
    check_quantizer(
        reference_quantizer, bits=[bits], granularities=[g], cases={"ties": data.draw(tie_matrices(bits))}
    ).raise_for_failures()


@pytest.mark.claim("Q1")
def test_quantizer_passes_the_kits_default_battery():
    """The kit's own battery (all-zero rows and tensors, subnormal rows, float32's
    largest values, ties, mixed row scales) at every width, both granularities."""
    report = check_quantizer(reference_quantizer)
    report.raise_for_failures()
    assert len(report.rows) > 1000


@given(w=weight_matrices(), bits=quant_bits)
def test_per_channel_error_bound_never_exceeds_per_tensor(w, bits):
    """Per-channel's worst-case bound (its largest scale / 2) equals
    per-tensor's exactly: the largest row maximum is the tensor maximum and
    division by qmax is monotone. So it never exceeds it."""
    pc = Q.scales(w, bits, G.PER_CHANNEL)
    pt = Q.scales(w, bits, G.PER_TENSOR)
    assert float(pc.max()) <= float(pt)
    assert float(pc.max()) == float(pt)


def test_per_channel_is_not_better_element_by_element():
    """Nobody should assert per-channel error <= per-tensor error per element:
    W = [[7, 7], [5, 3]] at 4 bits. Per-tensor scale 1 reproduces W exactly;
    per-channel gives row 2 the scale 5/7 and 3 / (5/7) = 4.2 -> 4 -> 2.857."""
    w = torch.tensor([[7.0, 7.0], [5.0, 3.0]])
    err_pt = (Q.fake_quantize(w, 4, G.PER_TENSOR) - w).abs()
    err_pc = (Q.fake_quantize(w, 4, G.PER_CHANNEL) - w).abs()
    assert torch.equal(err_pt, torch.zeros_like(w))
    assert float(err_pc[1, 1]) == pytest.approx(3 - 4 * 5 / 7, rel=1e-6)


@given(data=st.data(), bits=quant_bits)
def test_pack_then_unpack_is_the_identity(data, bits):
    """Every code of the width, any count (odd counts leave a padded byte):
    unpack(pack(q)) == q, in ceil(n * bits / 8) bytes."""
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    shape = data.draw(st.tuples(st.integers(1, 9), st.integers(1, 9)))
    values = data.draw(st.lists(st.integers(lo, hi), min_size=math.prod(shape), max_size=math.prod(shape)))
    q = torch.tensor(values, dtype=torch.int8).reshape(shape)
    packed = Q.pack_codes(q, bits)
    assert packed.dtype == torch.uint8 and packed.numel() == math.ceil(q.numel() * bits / 8)
    assert torch.equal(Q.unpack_codes(packed, bits, shape), q)


@given(w=weight_matrices(), bits=quant_bits, g=granularities)
def test_quantized_tensor_stores_the_codes_and_dequantizes_to_fake_quantize(w, bits, g):
    """The integer form and the fake form are one rule: dequantize() equals
    fake_quantize bit for bit, and nbytes = ceil(n * bits / 8) + 4 * scales."""
    qt = Q.QuantizedTensor.from_float(w, bits, g)
    assert torch.equal(qt.codes(), Q.quantize_codes(w, bits, g)[0])
    assert torch.equal(qt.dequantize(), Q.fake_quantize(w, bits, g))
    n_scales = 1 if g is G.PER_TENSOR else w.shape[0]
    assert qt.nbytes == math.ceil(w.numel() * bits / 8) + 4 * n_scales


# --- Q1: exactly the article's line; agreement with PyTorch ---------------------
def article_codes(w: torch.Tensor, bits: int) -> torch.Tensor:
    """The article's three lines verbatim (per-tensor)."""
    qmax = 2 ** (bits - 1) - 1
    scale = w.abs().max() / qmax
    return (w / scale).round().clamp(-qmax - 1, qmax)


@pytest.mark.claim("Q1")
@given(data=st.data(), bits=quant_bits)
def test_rule_is_exactly_the_articles_formula(data, bits):
    """Bit for bit the article's ``(w / scale).round().clamp(-qmax-1, qmax)``
    and ``q * scale``, per tensor, and per channel as the same lines applied
    row by row; at exact ties (where a reciprocal-multiply would differ) and
    on arbitrary matrices without all-zero rows (where the article's scale
    would be 0 and our floor applies)."""
    for w in (data.draw(tie_matrices(bits)), data.draw(weight_matrices())):
        if bool((w.abs().amax(dim=1) < Q.qmax_for(bits) * Q.SCALE_FLOOR).any()):
            continue  # the zero guard departs from the article here, by design
        q, s = Q.quantize_codes(w, bits, G.PER_TENSOR)
        assert torch.equal(q.float(), article_codes(w, bits))
        assert torch.equal(Q.fake_quantize(w, bits, G.PER_TENSOR), article_codes(w, bits) * s)
        rows = torch.stack([article_codes(r, bits) for r in w])
        assert torch.equal(Q.quantize_codes(w, bits, G.PER_CHANNEL)[0].float(), rows)


def torch_fake_quantize(w: torch.Tensor, s: torch.Tensor, bits: int, g: Granularity):
    qmax = Q.qmax_for(bits)
    if g is G.PER_TENSOR:
        return torch.fake_quantize_per_tensor_affine(w, float(s), 0, -qmax - 1, qmax)
    zero = torch.zeros(w.shape[0], dtype=torch.int32)
    return torch.fake_quantize_per_channel_affine(w, s.reshape(-1), zero, 0, -qmax - 1, qmax)


@pytest.mark.claim("Q1")
@given(data=st.data(), bits=quant_bits, g=granularities)
def test_fake_quantize_agrees_with_pytorch_except_where_division_and_reciprocal_round_apart(data, bits, g):
    """PyTorch's CPU kernels compute round(w * (1/scale)) with a float32
    reciprocal; the article divides. At the same scale the two agree bit for
    bit at every element except those where fl(w/s) and fl(w * fl(1/s))
    round to different integers (only next to exact half-integers), and
    there they differ by exactly one step s. Where PyTorch's product
    overflows to Inf (within an ulp of float32's max) ours saturates, so
    theirs is compared saturated. Checked at exact ties and on arbitrary
    matrices."""
    for w in (data.draw(tie_matrices(bits)), data.draw(weight_matrices())):
        check_agrees_with_pytorch(w, bits, g)


def check_agrees_with_pytorch(w, bits, g, quantizer=reference_quantizer) -> int:
    """Ours equals PyTorch's fake quantization at our scale except where
    division and reciprocal-multiply round apart, and there by one step.
    Returns the number of such elements."""
    s = Q.scales(w, bits, g)
    _, q, s_ours = quantizer(w, bits, g)
    ours = Q.dequantize(q.to(torch.int8), s_ours)
    theirs = torch_fake_quantize(w, s, bits, g).clamp(-Q.FLOAT32_MAX, Q.FLOAT32_MAX)
    apart = torch.round(w / s) != torch.round(w * (1 / s))
    assert torch.equal(ours[~apart], theirs[~apart])
    # theirs = k * s with |k| <= 128, so theirs / s rounds back to k exactly.
    steps = (torch.round(ours / s) - torch.round(theirs / s)).abs()
    assert bool((steps[apart] == 1).all()), steps[apart]
    return int(apart.sum())


@pytest.mark.claim("Q1")
def test_fake_quantize_equals_pytorch_on_reference_weights_but_for_exact_ties(aftertrain_model, claim_record):
    """On the 2-D weights of the model (the reference's 15), every width 2..8 and both
    granularities: torch.fake_quantize_per_{tensor,channel}_affine at our
    scale gives the same bits except at elements where w / scale is an exact
    half-integer in float32 but w * (1/scale) is not (or the reverse). Such
    elements exist in trained weights (on a 300-step model: blocks.1.f1 at
    8 bits per-tensor, -0.016155 / scale = -19.5 exactly); they are counted,
    and must be fewer than 1 in 10,000 of the elements checked (a tie needs
    the quotient to land on a half-integer exactly)."""
    apart = total = 0
    for p in aftertrain_model.parameters():
        if p.dim() != 2:
            continue
        for bits in range(2, 9):
            for g in Granularity:
                apart += check_agrees_with_pytorch(p.detach(), bits, g)
                total += p.numel()
    claim_record.measured(
        "{apart} of {total} element-quantizations differ from PyTorch's "
        "(division vs reciprocal at exact ties), each by one step",
        apart=apart,
        total=total,
    )
    weights = sum(p.numel() for p in aftertrain_model.parameters() if p.dim() == 2)  # 631,808 on ours
    assert total == weights * 7 * 2  # the 2-D weights' elements, 7 widths, 2 granularities
    assert apart < total * TOL.TORCH_TIE_FRACTION


W_TEETH = torch.tensor([[0.9, -1.3, 0.2, 0.05], [-0.1, 0.3, -0.02, 0.25]])


@pytest.mark.claim("Q1")
@pytest.mark.parametrize("broken", [floor_rounding, wrong_axis, mean_scale, clamp_past_qmax])
@pytest.mark.teeth
def test_pytorch_agreement_check_catches_broken_quantizers(broken):
    """Teeth of the agreement with PyTorch (per-channel, 4 bits)."""
    check_agrees_with_pytorch(-W_TEETH, 4, G.PER_CHANNEL)
    with pytest.raises(AssertionError):
        check_agrees_with_pytorch(-W_TEETH, 4, G.PER_CHANNEL, broken)


@pytest.mark.teeth
def test_pack_check_catches_a_code_outside_the_width():
    """A code past qmax (what clamp_past_qmax makes) cannot be packed silently."""
    _, q, _ = clamp_past_qmax(-W_TEETH, 4, G.PER_TENSOR)
    q = q.to(torch.int8)
    assert int(q.max()) == 8
    with pytest.raises(ValueError, match="codes"):
        Q.pack_codes(q, 4)


def test_largest_float32_saturates_instead_of_overflowing():
    """Found by hypothesis: w = float32 max at 6 bits; fl(w / 31) * 31 rounds
    past the largest float. w_hat saturates at float32 max (error 0) where
    PyTorch's fake quantization gives Inf."""
    w = torch.tensor([[Q.FLOAT32_MAX, -Q.FLOAT32_MAX / 3]])
    for bits in range(2, 9):
        for g in Granularity:
            out = Q.fake_quantize(w, bits, g)
            assert bool(torch.isfinite(out).all())
    check_quantizer(reference_quantizer, cases={"float32 max": w}).raise_for_failures()
    s = Q.scales(w, 6, G.PER_TENSOR)
    assert torch.isinf(torch_fake_quantize(w, s, 6, G.PER_TENSOR)[0, 0])


def test_storage_bytes_of_a_partly_quantized_model_counts_the_float32_rest():
    """Hand-counted on the article's shapes, only ``head.weight`` (100 x 128)
    at 8 bits per-tensor: codes 12,800 B; the other 631,808 - 12,800 2-D
    weights stay float32 (4 B each, counted in ``weight_code_bytes``); one
    4-byte scale; every other parameter (637,156 - 12,800) in float32."""
    s = Q.storage_bytes(GPT(), 8, Granularity.PER_TENSOR, ["head.weight"])
    assert s["weight_code_bytes"] == 12_800 + 4 * (631_808 - 12_800)
    assert s["scale_bytes"] == 4
    assert s["parameters_quantized_bytes"] == 12_800 + 4 + 4 * (637_156 - 12_800)
    assert (s["weights_fp32_bytes"], s["parameters_fp32_bytes"]) == (4 * 631_808, 4 * 637_156)


def test_compounding_excess_is_all_at_once_minus_the_sum():
    """Q8's figures from hand numbers: penalties 0.1 and 0.2 sum to 0.3; all
    at once 0.5, so the excess is +0.2 (positive: the errors compound)."""
    c = EQ.compounding([EQ.SensitivityRow("a", 1.1, 0.1), EQ.SensitivityRow("b", 1.2, 0.2)], 0.5)
    assert c.to_record() == pytest.approx(
        {"sum_of_penalties": 0.3, "all_at_once": 0.5, "excess": 0.2}, abs=1e-15
    )


def test_reconstruction_figures_of_a_hand_quantized_row():
    """2 bits (qmax 1) on one row w = (1e-4, 2e-5, -6e-5, 0): scale 1e-4,
    codes (1, 0, -1, 0), so half the elements become 0 and the mean absolute
    error is (0 + 2e-5 + 4e-5 + 0) / 4 = 1.5e-5, per-tensor and per-channel
    alike (one row). The zero fraction counts codes, not small values."""
    w = torch.tensor([[1e-4, 2e-5, -6e-5, 0.0]])
    figs = EQ.reconstruction_figures(w, bits=2)
    for g in ("per-tensor", "per-channel"):
        assert figs[g].zero_fraction == 0.5
        assert figs[g].mean_abs_error == pytest.approx(1.5e-5, rel=1e-6)


# --- edge inputs: values exactly on the rounding grid (round half to even) ---
def test_codes_of_exact_half_steps_round_half_to_even():
    """4 bits, max |w| = 7 so scale = 1 exactly and w / scale is exact: the
    half steps -3.5, 2.5, 0.5, -0.5, 1.5, -2.5, 3.5 give -4, 2, 0, 0, 2, -2, 4
    (torch.round, half to even; half away from zero would give -4, 3, 1, -1,
    2, -3, 4). torch's own fake quantization agrees on this grid."""
    w = torch.tensor([[7.0, -3.5, 2.5, 0.5, -0.5, 1.5, -2.5, 3.5, -7.0]])
    codes, scale = Q.quantize_codes(w, 4, Q.Granularity.PER_TENSOR)
    assert float(scale) == 1.0
    assert codes.tolist() == [[7, -4, 2, 0, 0, 2, -2, 4, -7]]
    torch_fq = torch.fake_quantize_per_tensor_affine(w, 1.0, 0, -8, 7)
    assert torch.equal(Q.fake_quantize(w, 4, Q.Granularity.PER_TENSOR), torch_fq)


def test_per_channel_half_steps_use_each_rows_scale():
    """8 bits, rows with max |w| 127 and 254: scales 1 and 2 exactly; 0.5 and
    1.0 (= 0.5 step of row 2) both land on a half step and round to even
    (0); 1.5 and 3.0 round to 2; 2.5 and 5.0 to 2."""
    w = torch.tensor([[127.0, 0.5, 1.5, 2.5], [254.0, 1.0, 3.0, 5.0]])
    codes, scale = Q.quantize_codes(w, 8, Q.Granularity.PER_CHANNEL)
    assert scale.flatten().tolist() == [1.0, 2.0]
    assert codes.tolist() == [[127, 0, 2, 2], [127, 0, 2, 2]]
