"""Properties of the quantizer (Q1) over arbitrary finite float32 matrices.

Each property is a ``check_*`` function that takes a quantizer
``(w, bits, granularity) -> (codes, scales)``: the property test runs it on
:func:`aftertrain.quant.quantize_codes` over hypothesis examples, and a teeth
test shows that a deliberately broken quantizer (kept here, never in ``src/``)
fails the same check on a fixed input. The oracles compute the article's
scale on their own (``max|w| / qmax`` per tensor or per row), so a quantizer
cannot pass by returning scales that fit its own mistakes.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from aftertrain import quant as Q
from aftertrain.model import GPT
from aftertrain.quant import Granularity
from strategies import quant_bits, tie_matrices, weight_matrices

G = Granularity
granularities = st.sampled_from(list(Granularity))

# Float tolerance of the error bound. |w - fl(q * s)| <= s/2 + (error of the
# quotient w/s, <= qmax * u * s) + (error of the product, <= qmax * u * s),
# with u = 2**-24 the float32 unit roundoff: relative 4 * qmax * u on s/2.
# The absolute 2**-149 (half the smallest subnormal) covers a product that
# rounds in the subnormal range.
U = 2.0**-24
SUBNORMAL_HALF = 2.0**-149


def error_bound_tolerance(bits: int) -> float:
    return 1 + 4 * Q.qmax_for(bits) * U


def article_scale(w: torch.Tensor, bits: int, g: Granularity) -> torch.Tensor:
    """The oracle: max|w| / qmax over the tensor or over each row (float64)."""
    a = w.double().abs()
    m = a.max() if g is G.PER_TENSOR else a.amax(dim=1, keepdim=True)
    return m / Q.qmax_for(bits)


def normal_rows(w: torch.Tensor, bits: int, g: Granularity) -> torch.Tensor:
    """Rows (or the tensor) whose scale is not floored: max|w| >= qmax * floor."""
    a = w.abs()
    m = a.amax().expand(w.shape[0]) if g is G.PER_TENSOR else a.amax(dim=1)
    return m >= Q.qmax_for(bits) * Q.SCALE_FLOOR


# --- the checks ---------------------------------------------------------------


def check_codes_in_range(quantizer, w, bits, g):
    q, _ = quantizer(w, bits, g)
    qmax = Q.qmax_for(bits)
    assert int(q.min()) >= -qmax and int(q.max()) <= qmax, (int(q.min()), int(q.max()), qmax)


def check_largest_maps_to_qmax(quantizer, w, bits, g):
    q, _ = quantizer(w, bits, g)
    qmax = Q.qmax_for(bits)
    rows = normal_rows(w, bits, g)
    if g is G.PER_TENSOR:
        i = int(w.abs().argmax())
        if rows.all():
            assert int(q.reshape(-1)[i]) == qmax * int(torch.sign(w.reshape(-1)[i]))
        return
    idx = w.abs().argmax(dim=1, keepdim=True)
    got = q.gather(1, idx).squeeze(1).long()
    want = qmax * torch.sign(w.gather(1, idx).squeeze(1)).long()
    assert torch.equal(got[rows], want[rows]), (got, want)


def check_zero_and_sign(quantizer, w, bits, g):
    q, _ = quantizer(w, bits, g)
    assert bool((q[w == 0] == 0).all()), "a zero weight got a non-zero code"
    assert bool((torch.sign(q.float()) * torch.sign(w) >= 0).all()), "a sign flipped"


def check_odd_symmetry(quantizer, w, bits, g):
    q, _ = quantizer(w, bits, g)
    q_neg, _ = quantizer(-w, bits, g)
    assert torch.equal(q_neg, -q)


def check_idempotent(quantizer, w, bits, g):
    q, s = quantizer(w, bits, g)
    q2, _ = quantizer(Q.dequantize(q, s), bits, g)
    assert torch.equal(q2, q)


def check_error_within_half_scale(quantizer, w, bits, g):
    q, s = quantizer(w, bits, g)
    w_hat = Q.dequantize(q, s).double()
    # A floored scale (all-zero or subnormal-sized rows) is the oracle's too.
    scale = article_scale(w, bits, g).clamp_min(Q.SCALE_FLOOR)
    bound = scale / 2 * error_bound_tolerance(bits) + SUBNORMAL_HALF
    err = (w.double() - w_hat).abs()
    assert bool((err <= bound).all()), float((err - bound).max())


def check_no_nan(quantizer, w, bits, g):
    q, s = quantizer(w, bits, g)
    assert bool(torch.isfinite(Q.dequantize(q, s)).all()) and bool((s > 0).all())


CHECKS = [check_codes_in_range, check_largest_maps_to_qmax, check_zero_and_sign,
          check_odd_symmetry, check_idempotent, check_error_within_half_scale, check_no_nan]


# --- the properties, on the real quantizer -----------------------------------


@pytest.mark.claim("Q1")
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__[6:])
@given(w=weight_matrices(), bits=quant_bits, g=granularities)
def test_quantizer_property_holds_on_arbitrary_matrices(check, w, bits, g):
    """Each check over arbitrary finite float32 matrices (zero rows, tiny and
    huge magnitudes). Codes in [-qmax, qmax] (2 bits is ternary); the largest
    magnitude maps to +-qmax (rows whose scale is not floored); 0 -> 0 and
    signs kept or zeroed; q(-w) = -q(w); re-quantizing w_hat gives the same
    codes; error <= scale/2 times (1 + 4 qmax 2**-24), the float32 rounding
    of one quotient and one product; no NaN."""
    check(Q.quantize_codes, w, bits, g)


@pytest.mark.claim("Q1")
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__[6:])
@given(data=st.data(), bits=quant_bits, g=granularities)
def test_quantizer_property_holds_at_exact_ties(check, data, bits, g):
    """The same checks where every w/scale but the largest is an exact
    half-integer (round half to even decides every code)."""
    check(Q.quantize_codes, data.draw(tie_matrices(bits)), bits, g)


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
    values = data.draw(st.lists(st.integers(lo, hi), min_size=math.prod(shape),
                                max_size=math.prod(shape)))
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
def test_fake_quantize_agrees_with_pytorch_except_where_division_and_reciprocal_round_apart(
    data, bits, g
):
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


def check_agrees_with_pytorch(w, bits, g, quantizer=Q.quantize_codes) -> int:
    """Ours equals PyTorch's fake quantization at our scale except where
    division and reciprocal-multiply round apart, and there by one step.
    Returns the number of such elements."""
    s = Q.scales(w, bits, g)
    q, s_ours = quantizer(w, bits, g)
    ours = Q.dequantize(q, s_ours)
    theirs = torch_fake_quantize(w, s, bits, g).clamp(-Q.FLOAT32_MAX, Q.FLOAT32_MAX)
    apart = torch.round(w / s) != torch.round(w * (1 / s))
    assert torch.equal(ours[~apart], theirs[~apart])
    # theirs = k * s with |k| <= 128, so theirs / s rounds back to k exactly.
    steps = (torch.round(ours / s) - torch.round(theirs / s)).abs()
    assert bool((steps[apart] == 1).all()), steps[apart]
    return int(apart.sum())


@pytest.mark.claim("Q1")
def test_fake_quantize_equals_pytorch_on_reference_weights_but_for_exact_ties(reference,
                                                                              record_property):
    """On the 15 weights of the reference model, every width 2..8 and both
    granularities: torch.fake_quantize_per_{tensor,channel}_affine at our
    scale gives the same bits except at elements where w / scale is an exact
    half-integer in float32 but w * (1/scale) is not (or the reverse). Such
    elements exist in trained weights (on a 300-step model: blocks.1.f1 at
    8 bits per-tensor, -0.016155 / scale = -19.5 exactly); they are counted,
    and must be fewer than 1 in 10,000 of the elements checked (a tie needs
    the quotient to land on a half-integer exactly)."""
    apart = total = 0
    for name, p in reference.named_parameters():
        if p.dim() != 2:
            continue
        for bits in range(2, 9):
            for g in Granularity:
                apart += check_agrees_with_pytorch(p.detach(), bits, g)
                total += p.numel()
    record_property("measured", f"{apart} of {total} element-quantizations differ from PyTorch's "
                                f"(division vs reciprocal at exact ties), each by one step")
    assert apart < total / 10_000


# --- bad input ------------------------------------------------------------------


@pytest.mark.parametrize("bits", [1, 9, 0, -3, 4.0, True, "8"])
def test_bits_outside_2_to_8_is_rejected_naming_bits(bits):
    with pytest.raises(ValueError, match="bits"):
        Q.fake_quantize(torch.ones(2, 2), bits, G.PER_TENSOR)


@pytest.mark.parametrize("w", [
    torch.ones(2, 2, dtype=torch.int64),
    torch.tensor([[1.0, float("nan")]]),
    torch.tensor([[1.0, float("inf")]]),
    torch.tensor([[-float("inf"), 0.0]]),
    torch.empty(0, 3),
], ids=["integer", "nan", "inf", "-inf", "empty"])
def test_bad_tensor_is_rejected_naming_w(w):
    with pytest.raises(ValueError, match="w must"):
        Q.fake_quantize(w, 8, G.PER_CHANNEL)


@pytest.mark.parametrize("g", ["per-channel", None, 1])
def test_unknown_granularity_is_rejected_naming_granularity(g):
    with pytest.raises(ValueError, match="granularity"):
        Q.fake_quantize(torch.ones(2, 2), 8, g)


def test_per_channel_needs_a_matrix():
    with pytest.raises(ValueError, match="2-D"):
        Q.fake_quantize(torch.ones(4), 8, G.PER_CHANNEL)


def test_unknown_parameter_name_is_rejected_naming_names():
    reference = GPT()
    with pytest.raises(ValueError, match="names"):
        Q.quantized_model(reference, 8, G.PER_CHANNEL, ["tok.weight", "blocks.9.f1.weight"])
    with pytest.raises(ValueError, match="names"):
        Q.quantized_model(reference, 8, G.PER_CHANNEL, ["ln.weight"])  # 1-D
    with pytest.raises(ValueError, match="names"):
        Q.quantized_model(reference, 8, G.PER_CHANNEL, "tok.weight")


def test_all_zero_tensor_and_rows_quantize_to_zero_without_nan():
    """The guard: scale floored at the smallest normal float32, so 0/scale = 0."""
    for g in Granularity:
        for bits in range(2, 9):
            w = torch.zeros(3, 4)
            w[1] = torch.tensor([1.0, -2.0, 0.5, 0.0])
            out = Q.fake_quantize(w, bits, g)
            assert torch.equal(out[[0, 2]], torch.zeros(2, 4))
            assert bool(torch.isfinite(out).all())
            assert torch.equal(Q.fake_quantize(torch.zeros(2, 2), bits, g), torch.zeros(2, 2))


# --- teeth: broken quantizers the checks reject ---------------------------------


def _round_and_clamp(w, s, lo, hi, rounding=torch.round):
    return rounding(w / s).clamp(lo, hi).to(torch.int8), s


def mean_scale(w, bits, g):
    """Broken: scale from the mean magnitude instead of the maximum."""
    qmax = Q.qmax_for(bits)
    a = w.abs()
    m = a.mean() if g is G.PER_TENSOR else a.mean(dim=1, keepdim=True)
    return _round_and_clamp(w, (m / qmax).clamp_min(Q.SCALE_FLOOR), -qmax - 1, qmax)


def wrong_axis(w, bits, g):
    """Broken: per-channel scales per column (input feature) instead of per row."""
    if g is G.PER_TENSOR:
        return Q.quantize_codes(w, bits, g)
    qmax = Q.qmax_for(bits)
    s = (w.abs().amax(dim=0, keepdim=True) / qmax).clamp_min(Q.SCALE_FLOOR)
    return _round_and_clamp(w, s, -qmax - 1, qmax)


def floor_rounding(w, bits, g):
    """Broken: floor instead of round."""
    qmax = Q.qmax_for(bits)
    return _round_and_clamp(w, Q.scales(w, bits, g), -qmax - 1, qmax, torch.floor)


def clamp_past_qmax(w, bits, g):
    """Broken: qmax off by one (2**(bits-1)) in the scale and the clamp, so
    the largest magnitude gets a code that does not fit in ``bits`` bits."""
    top = 2 ** (bits - 1)
    a = w.abs()
    m = a.amax() if g is G.PER_TENSOR else a.amax(dim=1, keepdim=True)
    return _round_and_clamp(w, (m / top).clamp_min(Q.SCALE_FLOOR), -top - 1, top)


def ignores_granularity(w, bits, g):
    """Broken: "per-channel" silently uses one scale for the whole tensor."""
    return Q.quantize_codes(w, bits, G.PER_TENSOR)


def affine_zero_point(w, bits, g):
    """Broken: asymmetric min-max quantization with a zero point, so 0 gets a
    non-zero code (the scheme the article does not use)."""
    lo, hi = w.min(), w.max()
    s = ((hi - lo) / (2**bits - 1)).clamp_min(Q.SCALE_FLOOR)
    zp = torch.round(-lo / s) - 2 ** (bits - 1)
    return (torch.round(w / s) + zp).clamp(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1), s


def zero_scale(w, bits, g):
    """Broken: no zero guard, so an all-zero row gives 0/0 = NaN."""
    qmax = Q.qmax_for(bits)
    a = w.abs()
    m = a.amax() if g is G.PER_TENSOR else a.amax(dim=1, keepdim=True)
    return torch.round(w / (m / qmax)).clamp(-qmax - 1, qmax), m / qmax


W_TEETH = torch.tensor([[0.9, -1.3, 0.2, 0.05], [-0.1, 0.3, -0.02, 0.25], [0.0, 0.0, 0.0, 0.0]])
W_COLS = torch.tensor([[0.9, -1.3], [-0.1, 0.3]])  # row 2's max is 0.3; column maxima 0.9, 1.3

TEETH = [
    (check_codes_in_range, clamp_past_qmax, W_TEETH, G.PER_TENSOR),
    (check_codes_in_range, mean_scale, -W_TEETH, G.PER_TENSOR),
    (check_largest_maps_to_qmax, wrong_axis, W_COLS, G.PER_CHANNEL),
    (check_largest_maps_to_qmax, mean_scale, -W_TEETH, G.PER_CHANNEL),
    (check_largest_maps_to_qmax, ignores_granularity, W_TEETH, G.PER_CHANNEL),
    (check_zero_and_sign, affine_zero_point, W_TEETH, G.PER_TENSOR),
    (check_odd_symmetry, floor_rounding, W_TEETH, G.PER_CHANNEL),
    (check_idempotent, mean_scale, W_TEETH, G.PER_TENSOR),
    (check_error_within_half_scale, floor_rounding, W_TEETH, G.PER_CHANNEL),
    (check_error_within_half_scale, wrong_axis, W_COLS, G.PER_CHANNEL),
    (check_error_within_half_scale, mean_scale, W_TEETH, G.PER_TENSOR),
    (check_no_nan, zero_scale, W_TEETH, G.PER_CHANNEL),
]


@pytest.mark.claim("Q1")
@pytest.mark.parametrize("check, broken, w, g", TEETH,
                         ids=[f"{c.__name__[6:]}-{b.__name__}" for c, b, _, _ in TEETH])
def test_property_check_rejects_a_broken_quantizer(check, broken, w, g):
    """Each check fails on a fixed matrix for a broken quantizer, and passes
    on the same matrix for the real one (so the failure is the variant's)."""
    check(Q.quantize_codes, w, 4, g)
    with pytest.raises(AssertionError):
        check(broken, w, 4, g)


@pytest.mark.claim("Q1")
@pytest.mark.parametrize("broken", [floor_rounding, wrong_axis, mean_scale, clamp_past_qmax])
def test_pytorch_agreement_check_rejects_broken_quantizers(broken):
    """Teeth of the agreement with PyTorch (per-channel, 4 bits)."""
    with pytest.raises(AssertionError):
        check_agrees_with_pytorch(-W_TEETH[:2], 4, G.PER_CHANNEL, broken)


@pytest.mark.claim("X7")
def test_wrong_axis_per_channel_scales_are_caught():
    """X7's teeth claim: scales per input column instead of per output row
    fail the error bound and the largest-maps-to-qmax check."""
    for check in (check_error_within_half_scale, check_largest_maps_to_qmax):
        with pytest.raises(AssertionError):
            check(wrong_axis, W_COLS, 4, G.PER_CHANNEL)


def test_pack_check_rejects_a_code_outside_the_width():
    """A code past qmax (what clamp_past_qmax makes) cannot be packed silently."""
    q, _ = clamp_past_qmax(-W_TEETH, 4, G.PER_TENSOR)
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
            check_error_within_half_scale(Q.quantize_codes, w, bits, g)
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
    c = Q.compounding([{"penalty": 0.1}, {"penalty": 0.2}], 0.5)
    assert c == pytest.approx({"sum_of_penalties": 0.3, "all_at_once": 0.5, "excess": 0.2},
                              abs=1e-15)


def test_reconstruction_figures_of_a_hand_quantized_row():
    """2 bits (qmax 1) on one row w = (1e-4, 2e-5, -6e-5, 0): scale 1e-4,
    codes (1, 0, -1, 0), so half the elements become 0 and the mean absolute
    error is (0 + 2e-5 + 4e-5 + 0) / 4 = 1.5e-5, per-tensor and per-channel
    alike (one row). The zero fraction counts codes, not small values."""
    w = torch.tensor([[1e-4, 2e-5, -6e-5, 0.0]])
    figs = Q.reconstruction_figures(w, bits=2)
    for g in ("per-tensor", "per-channel"):
        assert figs[g]["zero_fraction"] == 0.5
        assert figs[g]["mean_abs_error"] == pytest.approx(1.5e-5, rel=1e-6)
