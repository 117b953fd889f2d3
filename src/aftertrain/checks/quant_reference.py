"""The two sides a guarantee of :func:`aftertrain.checks.quant.check_quantizer`
compares (:mod:`aftertrain.checks.quant_guarantees`): the quantizer's answer
(:func:`call_quantizer`, read per element as an :class:`Output` by
:func:`as_output`) and the scheme's view of the weight (:class:`Reference`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from aftertrain.checks.precision import output_slack
from aftertrain.checks.report import EDGE, FAILURE
from aftertrain.checks.schemes import (
    Mapping,
    QParams,
    QuantScheme,
    from_codes,
    group_index,
    qparams,
    to_codes,
)
from aftertrain.core import tolerances as T
from aftertrain.quant.primitives import FLOAT32_MAX, SCALE_FLOOR

Quantizer = Callable[[torch.Tensor, QuantScheme], torch.Tensor | tuple[torch.Tensor, ...]]
#: float32's unit roundoff (2**-24), the unit of the guarantees' float slack.
U = T.FLOAT32_UNIT_ROUNDOFF
#: A group whose ``max|w|`` exceeds this is at float32's edge: its range
#: ``hi - lo``, its shift or a code's value ``qmin * s`` can overflow (the
#: asymmetric range and shift each reach ``2 max|w|``, with rounding room).
OVERFLOW_EDGE = FLOAT32_MAX / 4
#: torchao's scale floor for int8 weights (float32's machine epsilon, 1.19e-7).
FLOAT32_EPS = torch.finfo(torch.float32).eps


@dataclass(frozen=True)
class Output:
    """A quantizer's answer in float64, ``scale`` and ``zero`` per element
    (None where not returned)."""

    w_hat: torch.Tensor
    codes: torch.Tensor | None = None
    scale: torch.Tensor | None = None
    zero: torch.Tensor | None = None


@dataclass(frozen=True)
class Reference:
    """The scheme's view of ``w``, per element, float64: scale ``s``, zero
    point ``z``, float slack scale ``R``, ``judged`` (a normal or declared
    floored scale) and ``floored`` (the floor is in force), ``edge`` (a
    group at the format's edge), the codes ``code_lo`` and ``code_hi`` the
    group's grid reaches, and ``drift``, how far a declared ``scale_dtype``'s
    rounding may move ``w_hat``."""

    w: torch.Tensor
    p: QParams
    s: torch.Tensor
    z: torch.Tensor
    R: torch.Tensor
    judged: torch.Tensor
    floored: torch.Tensor
    mapping: Mapping
    edge: torch.Tensor
    code_lo: torch.Tensor
    code_hi: torch.Tensor
    drift: torch.Tensor

    @classmethod
    def of(cls, w: torch.Tensor, scheme: QuantScheme) -> Reference:
        """The scheme's view of ``w`` (any shape) under ``scheme``, per element in float64:
        ``w`` itself, or its copy in the declared ``input_dtype`` (an element that overflows
        that copy keeps its float32 value and puts its group at the format's edge); scale and
        zero point from :func:`aftertrain.checks.schemes.qparams`, the slack scale ``R``
        (``max|w|`` of the group; 4 times that for an asymmetric mapping, whose range and shift
        each reach ``2 max|w|``), ``judged`` (a group holding a nonzero value whose raw scale
        is a normal float32, or 0 for a constant group of normal values, or the scheme
        declares a floor: an all-zero group is never judged, it must stay 0), ``floored``
        (judged, and the raw scale is below the scale in use: the floor is in force) and
        ``edge`` (a group at the format's edge: a nonzero group whose raw scale is subnormal
        and not floored, ``max|w| > OVERFLOW_EDGE``, or a value or scale past the declared
        low precision's largest). ``drift``: with a ``scale_dtype``, the scale's rounding in
        that dtype times the codes' reach ``R / s + 1`` (plus a float zero point's rounding
        times the scale); with an ``output_dtype``, half an ulp of ``max|w| + s`` there
        (:func:`~aftertrain.checks.precision.output_slack`), a group past its largest value
        at the format's edge."""
        over = torch.zeros(w.shape, dtype=torch.bool)
        if scheme.input_dtype is not None:
            low = w.to(scheme.input_dtype).float()
            over = ~torch.isfinite(low)
            w = torch.where(over, w, low)
        p = qparams(w, scheme)
        i = p.index
        # asymmetric: the range hi - lo and the shift each reach 2 amax
        R = p.amax * (1.0 if scheme.mapping.symmetric else 4.0)
        normal = p.amax >= SCALE_FLOOR
        judged = (p.amax > 0) & (
            (p.raw >= SCALE_FLOOR) | (scheme.scale_floor > SCALE_FLOOR) | ((p.raw == 0) & normal)
        )
        # an all-zero group is no edge: its w_hat must be 0 (the ``edge`` row)
        edge = (~judged & (p.amax > 0)) | (p.amax > OVERFLOW_EDGE)
        edge |= torch.zeros_like(edge).scatter_reduce(0, i.reshape(-1), over.reshape(-1), "amax")
        drift = torch.zeros_like(p.scale)
        if scheme.scale_dtype is not None:
            low_s = p.scale.float().to(scheme.scale_dtype).double()
            edge |= ~torch.isfinite(low_s)
            drift = (low_s - p.scale).abs().nan_to_num(0.0, 0.0, 0.0) * (R / p.scale + 1)
            if scheme.mapping.float_zero:
                low_z = p.zero.float().to(scheme.scale_dtype).double()
                dz = (low_z - p.zero).abs().nan_to_num(0.0, 0.0, 0.0)
                drift += dz * (1.0 if scheme.mapping is Mapping.ASYMMETRIC_FLOAT_SHIFT else p.scale)
        if scheme.output_dtype is not None:
            drift = drift + output_slack(scheme.output_dtype, p.amax + p.scale)  # |w_hat| <= amax + s
            edge |= p.amax > torch.finfo(scheme.output_dtype).max
        return cls(
            w.double(),
            p,
            p.scale[i],
            p.zero[i],
            R[i],
            judged[i],
            (judged & (p.raw < p.scale))[i],
            scheme.mapping,
            edge[i],
            p.code_lo[i],
            p.code_hi[i],
            drift[i],
        )

    def severity(self, bad: torch.Tensor) -> str:
        """EDGE when every element in ``bad`` (a mask of ``w``'s shape) lies
        in a group at the format's edge, else FAILURE."""
        return FAILURE if bool((bad & ~self.edge).any()) else EDGE

    def steps(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` in code units on the reference grid."""
        return to_codes(x, self.s, self.z, self.mapping)

    def grid_slack(self) -> torch.Tensor:
        """Per element, how far ``w_hat / s`` may lie from a whole code, in code units:
        ``QUANT_GRID_SLACK_ULPS * u * R / s`` (the float32 roundings of the quantizer's divide
        and multiply, relative to the group's range) plus half the smallest subnormal over
        ``s``. Note: at 8 bits, ``R / s`` is about 127, so the slack is about
        ``4 * 127 * 2**-24 = 3.0e-5`` of a step."""
        slack = T.QUANT_GRID_SLACK_ULPS * U * self.R + T.QUANT_SUBNORMAL_HALF + self.drift
        return slack / self.s

    def saturated(self, w_hat: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
        """Elements held at +-float32 max because their code's value
        ``(k - z) * s`` lies past it (SYMMETRIC_FULL's ``qmin * s`` at
        ``w = -3.4e38``): exempt from the grid."""
        value = from_codes(codes, self.s, self.z, self.mapping)
        return (w_hat.abs() == FLOAT32_MAX) & (value.abs() > FLOAT32_MAX)

    def round_trip_bound(self) -> torch.Tensor:
        """Per element, the largest ``|w_hat - w|`` a correct quantizer reaches: half a step
        (``s / 2``) plus ``QUANT_ROUND_TRIP_SLACK_ULPS / 2 * u * R`` (float32 rounding,
        relative to the group's range ``R``) plus half the smallest subnormal, plus the
        ``drift`` of a declared scale precision; SYMMETRIC_SIGNED_SCALE adds how far ``w`` lies
        past the grid's short end (``qmax * s``, up to one step: neural-compressor clips it)."""
        bound = self.s / 2 + T.QUANT_ROUND_TRIP_SLACK_ULPS / 2 * U * self.R + T.QUANT_SUBNORMAL_HALF
        if self.mapping is Mapping.SYMMETRIC_SIGNED_SCALE:
            k = self.steps(self.w)
            bound = bound + ((k - self.code_hi).clamp_min(0) + (self.code_lo - k).clamp_min(0)) * self.s
        return bound + self.drift


def call_quantizer(quantize: Quantizer, w: torch.Tensor, scheme: QuantScheme):
    """The quantizer's answer (a tensor or a tuple of 3 or 4), the exception
    it raised, or a line saying what is wrong with what it returned."""
    try:
        out = quantize(w.clone(), scheme)
    except Exception as e:  # the kit reports any exception
        return e
    extra: tuple = ()
    if isinstance(out, tuple):
        if len(out) not in (3, 4):
            return f"returned a tuple of {len(out)}, not (w_hat, codes, scale, zero_point)"
        out, *extra = out
    if not isinstance(out, torch.Tensor) or not out.is_floating_point():
        return f"returned {type(out).__name__}, not a floating-point tensor"
    if out.shape != w.shape:
        return f"returned shape {tuple(out.shape)} for {tuple(w.shape)}"
    if not extra:
        return (out,)
    codes, scale, zero = (*extra, None)[:3]
    if not isinstance(codes, torch.Tensor) or codes.shape != w.shape:
        return "codes must be a tensor of w's shape"
    return out, codes, scale, zero


def as_output(raw: tuple, w: torch.Tensor, scheme: QuantScheme) -> Output | str:
    """``raw`` (from :func:`call_quantizer`) as an :class:`Output` per element."""
    if len(raw) == 1:
        return Output(raw[0].detach().double())
    out, codes, scale, zero = raw
    parts = []
    for label, x in (("scale", scale), ("zero_point", zero)):
        parts.append(None if x is None else per_element(x, w, scheme, label))
        if isinstance(parts[-1], str):
            return parts[-1]
    return Output(out.detach().double(), codes.detach().double(), *parts)


def per_element(x, w: torch.Tensor, scheme: QuantScheme, label: str) -> torch.Tensor | str:
    """``x`` (one entry per group, or broadcastable to ``w``) per element, float64."""
    index, n = group_index(tuple(w.shape), scheme.granularity)
    if not isinstance(x, torch.Tensor):
        return f"{label} must be a tensor or None, got {type(x).__name__}"
    x = x.detach().double()
    if x.numel() == n:
        return x.reshape(-1)[index]
    try:
        return x.broadcast_to(w.shape)
    except RuntimeError:
        return (
            f"{label} of shape {tuple(x.shape)} has neither one entry per group ({n}) "
            f"nor broadcasts to {tuple(w.shape)}"
        )
