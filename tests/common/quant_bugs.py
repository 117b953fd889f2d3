"""Deliberately broken quantizers (never in src/) that the checks must reject.

The first ones follow the kit's article protocol (:mod:`aftertrain.checks.quant`):
``(w, bits, granularity) -> (w_hat, codes, scales)``; :func:`model_quantizer`
turns one into a whole-model quantizer for the experiments' ``quantize=``.
The per-scheme bugs (:data:`SCHEME_BUGS`) follow the scheme protocol
``(w, scheme) -> (w_hat, codes, scale, zero_point)``: each is
:func:`aftertrain.checks.schemes.quantize_scheme` with one thing wrong.
"""

from __future__ import annotations

import copy

import torch

from aftertrain.checks.schemes import QuantScheme, from_codes, group_index, qparams, to_codes
from aftertrain.lm.anatomy import anatomy
from aftertrain.quant import (
    SCALE_FLOOR,
    Granularity,
    qmax_for,
    quantize_codes,
    quantized_model,
    weight_names,
)
from aftertrain.quant import scales as article_scales

G = Granularity


def _out(w, s, lo, hi, rounding=torch.round):
    q = rounding(w / s).clamp(lo, hi)
    return q * s, q, s


def correct(w, bits, g):
    """The real rule, for contrast."""
    q, s = quantize_codes(w, bits, g)
    return q.float() * s, q, s


def mean_scale(w, bits, g):
    """Broken: scale from the mean magnitude instead of the maximum."""
    qmax = qmax_for(bits)
    a = w.abs()
    m = a.mean() if g is G.PER_TENSOR else a.mean(dim=1, keepdim=True)
    return _out(w, (m / qmax).clamp_min(SCALE_FLOOR), -qmax - 1, qmax)


def wrong_axis(w, bits, g):
    """Broken: per-channel scales per column (input feature) instead of per row."""
    if g is G.PER_TENSOR:
        return correct(w, bits, g)
    qmax = qmax_for(bits)
    s = (w.abs().amax(dim=0, keepdim=True) / qmax).clamp_min(SCALE_FLOOR)
    return _out(w, s, -qmax - 1, qmax)


def floor_rounding(w, bits, g):
    """Broken: floor instead of round."""
    qmax = qmax_for(bits)
    return _out(w, article_scales(w, bits, g), -qmax - 1, qmax, torch.floor)


def clamp_past_qmax(w, bits, g):
    """Broken: qmax off by one (2**(bits-1)) in the scale and the clamp, so
    the largest magnitude gets a code that does not fit in ``bits`` bits."""
    top = 2 ** (bits - 1)
    a = w.abs()
    m = a.amax() if g is G.PER_TENSOR else a.amax(dim=1, keepdim=True)
    return _out(w, (m / top).clamp_min(SCALE_FLOOR), -top - 1, top)


def ignores_granularity(w, bits, g):
    """Broken: "per-channel" silently uses one scale for the whole tensor."""
    return correct(w, bits, G.PER_TENSOR)


def affine_zero_point(w, bits, g):
    """Broken: asymmetric min-max quantization with a zero point, so 0 gets a
    non-zero code (the scheme the article does not use)."""
    lo, hi = w.min(), w.max()
    s = ((hi - lo) / (2**bits - 1)).clamp_min(SCALE_FLOOR)
    zp = torch.round(-lo / s) - 2 ** (bits - 1)
    q = (torch.round(w / s) + zp).clamp(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return (q - zp) * s, q, s


def zero_scale(w, bits, g):
    """Broken: no zero guard, so an all-zero row gives 0/0 = NaN."""
    qmax = qmax_for(bits)
    a = w.abs()
    m = a.amax() if g is G.PER_TENSOR else a.amax(dim=1, keepdim=True)
    return _out(w, m / qmax, -qmax - 1, qmax)


BROKEN = [
    mean_scale,
    wrong_axis,
    floor_rounding,
    clamp_past_qmax,
    ignores_granularity,
    affine_zero_point,
    zero_scale,
]


def model_quantizer(element_rule):
    """A whole-model quantizer like ``quantized_model`` with another element rule."""

    def quantize(model, bits, g, names=None):
        m = copy.deepcopy(model)
        params = dict(m.named_parameters())
        with torch.no_grad():
            for n in weight_names(model) if names is None else names:
                params[n].copy_(element_rule(params[n].detach(), bits, g)[0])
        return m

    quantize.__name__ = element_rule.__name__
    return quantize


def skip_embeddings(model, bits, g, names=None):
    """Broken: the embedding tables (our GPT's tok and pos; a transformers
    model's token table, and its position table where it has one) are
    silently left in float32."""
    embeddings = anatomy(model).embeddings
    names = weight_names(model) if names is None else list(names)
    kept = [n for n in names if n not in embeddings]
    return quantized_model(model, bits, g, kept)


def unchanged(model, bits, g, names=None):
    """Broken: returns a float32 copy (quantization silently not applied)."""
    return copy.deepcopy(model)


# --- per-scheme bugs (the scheme protocol) -----------------------------------


def _affine(w, scheme: QuantScheme, scale, zero, lo, hi):
    """``q = clamp(round(w / s + z), lo, hi)``, ``w_hat = (q - z) * s`` (or
    the float shift's form) with one ``scale`` and ``zero`` per group."""
    index, _ = group_index(tuple(w.shape), scheme.granularity)
    s, z = scale[index], zero[index]
    q = torch.round(to_codes(w, s, z, scheme.mapping)).clamp(lo, hi)
    return from_codes(q, s, z, scheme.mapping), q, scale, zero


def zero_point_not_rounded(w, scheme: QuantScheme):
    """Broken (ASYMMETRIC): ``z = qmin - lo / scale`` left unrounded, so 0 is
    off the grid and the codes sit on a shifted one."""
    p = qparams(w, scheme)
    index, n = group_index(tuple(w.shape), scheme.granularity)
    lo = (
        w.new_zeros(n)
        .scatter_reduce(0, index.reshape(-1), w.reshape(-1), "amin", include_self=False)
        .clamp_max(0)
    )
    zero = -scheme.qmax - 1 - lo / p.scale.float()
    return _affine(w, scheme, p.scale.float(), zero, *scheme.code_range)


def clamped_one_short(w, scheme: QuantScheme):
    """Broken: codes clamped to ``[lo, hi - 1]``, one short of the range at
    the top, so each group's largest value loses a step."""
    p = qparams(w, scheme)
    lo, hi = scheme.code_range
    return _affine(w, scheme, p.scale.float(), p.zero.float(), lo, hi - 1)


def scale_from_next_group(w, scheme: QuantScheme):
    """Broken (per group): every group quantized with the next group's scale
    (and zero point), as an off-by-one in the group index does."""
    p = qparams(w, scheme)
    return _affine(w, scheme, p.scale.float().roll(-1), p.zero.float().roll(-1), *scheme.code_range)


def scale_three_eps_off(w, scheme: QuantScheme):
    """Broken: every scale multiplied by 1 + 3 eps (float32 eps 2**-23), as a
    scale computed through a few extra roundings (a division by a
    reciprocal, a float64 -> float32 -> float64 trip) drifts: relative error
    5-7 u (u = 2**-24), over the kit's 4 u, under 4 eps."""
    p = qparams(w, scheme)
    scale = p.scale.float() * (1 + 3 * 2.0**-23)
    return _affine(w, scheme, scale, p.zero.float(), *scheme.code_range)


def full_range_scale_restricted_clamp(w, scheme: QuantScheme):
    """Broken: the scale ``max|w| / 2**(bits-1)`` of the full range, the
    codes clamped to the restricted ``[-qmax, qmax]``: the largest magnitude
    lands on ``2**(bits-1)`` and is clipped a whole step."""
    p = qparams(w, scheme)
    scale = (p.amax / 2 ** (scheme.bits - 1)).clamp_min(scheme.scale_floor).float()
    return _affine(w, scheme, scale, torch.zeros_like(scale), -scheme.qmax, scheme.qmax)


SCHEME_BUGS = [
    zero_point_not_rounded,
    clamped_one_short,
    scale_from_next_group,
    full_range_scale_restricted_clamp,
]
