"""The guarantees of :func:`aftertrain.checks.quant.check_quantizer`, one
function per report row: a quantizer's output (:class:`Output`) judged
against the scheme's view of the weight (:class:`Reference`). Formulas and
tolerances in :mod:`aftertrain.checks.quant`'s docstring."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from aftertrain.checks.report import Report, Row
from aftertrain.checks.schemes import (
    Mapping,
    PerAxis,
    PerGroup,
    PerTensor,
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
U = T.FLOAT32_UNIT_ROUNDOFF
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
    floored scale) and ``floored`` (the floor is in force)."""

    w: torch.Tensor
    p: QParams
    s: torch.Tensor
    z: torch.Tensor
    R: torch.Tensor
    judged: torch.Tensor
    floored: torch.Tensor
    mapping: Mapping

    @classmethod
    def of(cls, w: torch.Tensor, scheme: QuantScheme) -> Reference:
        p = qparams(w, scheme)
        i = p.index
        # asymmetric: the range hi - lo and the shift each reach 2 amax
        R = p.amax * (1.0 if scheme.mapping.symmetric else 4.0)
        judged = (p.raw >= SCALE_FLOOR) | (scheme.scale_floor > SCALE_FLOOR)
        return cls(w.double(), p, p.scale[i], p.zero[i], R[i], judged[i],
                   (judged & (p.raw < p.scale))[i], scheme.mapping)

    def steps(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` in code units on the reference grid."""
        return to_codes(x, self.s, self.z, self.mapping)

    def grid_slack(self) -> torch.Tensor:
        return T.QUANT_GRID_SLACK_ULPS * U * self.R / self.s + T.QUANT_SUBNORMAL_HALF / self.s

    def saturated(self, w_hat: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
        """Elements held at +-float32 max because their code's value
        ``(k - z) * s`` lies past it (SYMMETRIC_FULL's ``qmin * s`` at
        ``w = -3.4e38``): exempt from the grid."""
        value = from_codes(codes, self.s, self.z, self.mapping)
        return (w_hat.abs() == FLOAT32_MAX) & (value.abs() > FLOAT32_MAX)

    def round_trip_bound(self) -> torch.Tensor:
        return self.s / 2 + T.QUANT_ROUND_TRIP_SLACK_ULPS / 2 * U * self.R \
            + T.QUANT_SUBNORMAL_HALF


def check_case(report: Report, quantize: Quantizer, case: str, w: torch.Tensor,
               scheme: QuantScheme) -> None:
    """Every row of one case under one scheme."""
    out = _call(quantize, w, scheme)
    if not _check_output(report, case, out, w, scheme):
        return
    ref = Reference.of(w, scheme)
    hint = functools.cache(lambda: _looks_like(w, out.w_hat, scheme))
    _check_round_trip(report, case, ref, out, hint)
    _check_grid(report, case, ref, out, scheme, hint)
    if out.codes is not None:
        _check_codes(report, case, ref, out, scheme)
    _check_extremes(report, case, ref, out, scheme, hint)
    if scheme.mapping.keeps_zero:
        _check_zero(report, case, ref, out)
    if (~ref.judged).any():
        _check_edge(report, case, ref, out, scheme)
    if scheme.mapping.odd:
        _check_odd(report, case, quantize, w, scheme, out)
    if scheme.mapping.idempotent:
        _check_idempotent(report, case, quantize, scheme, ref, out)


def _call(quantize: Quantizer, w: torch.Tensor, scheme: QuantScheme) -> Output | Exception | str:
    """The quantizer's output as an :class:`Output`, the exception it raised,
    or a line saying what is wrong with what it returned."""
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
        return Output(out.detach().double())
    codes, scale, zero = (*extra, None)[:3]
    if not isinstance(codes, torch.Tensor) or codes.shape != w.shape:
        return "codes must be a tensor of w's shape"
    parts = []
    for label, x in (("scale", scale), ("zero_point", zero)):
        parts.append(None if x is None else _per_element(x, w, scheme, label))
        if isinstance(parts[-1], str):
            return parts[-1]
    return Output(out.detach().double(), codes.detach().double(), *parts)


def _per_element(x, w: torch.Tensor, scheme: QuantScheme, label: str) -> torch.Tensor | str:
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
        return (f"{label} of shape {tuple(x.shape)} has neither one entry per group ({n}) "
                f"nor broadcasts to {tuple(w.shape)}")


def _check_output(report: Report, case: str, out, w: torch.Tensor, scheme: QuantScheme) -> bool:
    """Record the ``output`` (or ``refused``) row; True when ``out`` can be judged."""
    g = scheme.granularity
    ragged = isinstance(g, PerGroup) and w.shape[1] % g.group_size != 0
    if isinstance(out, ValueError) and ragged and str(out):
        report.add(Row(case, "refused", True, detail=f"ValueError: {out}"))
        return False
    if isinstance(out, Exception):
        report.add(Row(case, "output", False, detail=f"raised {type(out).__name__}: {out}"))
        return False
    if isinstance(out, str):
        report.add(Row(case, "output", False, detail=out))
        return False
    bad = int((~torch.isfinite(out.w_hat)).sum())
    report.add(Row(case, "output", bad == 0, value=float(bad), bound=0.0,
                   detail=f"{bad} values not finite" if bad else ""))
    return bad == 0

def _worst(x: torch.Tensor) -> float:
    return float(x.max()) if x.numel() else 0.0


def _check_round_trip(report: Report, case: str, ref: Reference, out: Output, hint) -> None:
    err = (ref.w - out.w_hat).abs()
    excess = (err / ref.round_trip_bound())[ref.judged]
    ok = bool((excess <= 1).all())
    report.add(Row(case, "round-trip", ok, value=_worst(excess), bound=1.0,
                   detail="" if ok else f"|w - w_hat| reaches {_worst(excess):.4g} x the bound "
                                        f"scale/2 + 4 u R{hint()}"))
    if ref.floored.any():
        cost = _worst((err / (ref.p.raw[ref.p.index] / 2))[ref.floored])
        ok = bool((excess[ref.floored[ref.judged]] <= 1).all())
        report.add(Row(case, "floor", ok, value=cost, detail=f"groups at the scale floor err up "
                       f"to {cost:.4g} x their unfloored half step"))


def _check_grid(report: Report, case: str, ref: Reference, out: Output, scheme: QuantScheme,
                hint) -> None:
    lo, hi = scheme.code_range
    steps = ref.steps(out.w_hat)
    outward = torch.where(steps > 0, torch.ceil(steps), torch.floor(steps)).clamp(lo, hi)
    keep = ref.judged & ~ref.saturated(out.w_hat, outward)
    steps = steps[keep]
    k = torch.round(steps)
    off = (steps - k).abs()
    slack = ref.grid_slack()[keep]
    ok = bool((off <= slack).all()) and bool(((k >= lo) & (k <= hi)).all())
    report.add(Row(case, "grid", ok, value=_worst(off), bound=_worst(slack),
                   detail="" if ok else f"w_hat in steps is {_worst(off):.4g} off an integer "
                   f"or outside [{lo}, {hi}] (codes reach {_span(k)}){hint()}"))


def _span(k: torch.Tensor) -> str:
    return f"[{float(k.min()):.0f}, {float(k.max()):.0f}]" if k.numel() else "[]"


def _check_codes(report: Report, case: str, ref: Reference, out: Output,
                 scheme: QuantScheme) -> None:
    codes = out.codes
    lo, hi = scheme.code_range
    integral = bool((codes == torch.round(codes)).all())
    fits = bool(((codes >= lo) & (codes <= hi)).all())
    if not scheme.mapping.symmetric:  # stored signed or unsigned
        fits = fits or bool(((codes >= 0) & (codes <= 2**scheme.bits - 1)).all())
    report.add(Row(case, "codes", integral and fits, value=_worst(codes.abs()), bound=float(hi),
                   detail="" if integral and fits else f"codes integral {integral}, span "
                                                       f"{_span(codes)}, allowed [{lo}, {hi}]"))
    if out.scale is None:
        return
    zero = torch.zeros(()) if out.zero is None else out.zero
    dequant = from_codes(codes, out.scale, zero, scheme.mapping)
    keep = ref.judged & ~ref.saturated(out.w_hat, codes)
    gap = ((dequant - out.w_hat).abs() - ref.round_trip_bound() + ref.s / 2)[keep]
    ok = bool((gap <= 0).all())
    report.add(Row(case, "codes match w_hat", ok, detail="" if ok else
                   f"w_hat is not (codes - zero_point) * scale (off by up to {_worst(gap):.4g} "
                   f"beyond the float slack)"))
    rel = ((out.scale - ref.s).abs() / ref.s)[ref.judged]
    ok = bool((rel <= 4 * U).all())
    report.add(Row(case, "scale", ok, value=_worst(rel), bound=4 * U, detail="" if ok else
                   f"a scale differs from its own group's {scheme.mapping.name} scale by "
                   f"{_worst(rel):.4g} (relative)"))
    if scheme.mapping is Mapping.ASYMMETRIC and out.zero is not None:
        ok = bool((out.zero == torch.round(out.zero)).all())
        frac = _worst((out.zero - torch.round(out.zero)).abs())
        report.add(Row(case, "zero point", ok, value=frac, bound=0.0, detail="" if ok else
                       f"the zero point is {frac:.4g} off an integer (not rounded)"))


def _check_extremes(report: Report, case: str, ref: Reference, out: Output,
                    scheme: QuantScheme, hint) -> None:
    """At each judged group's smallest and largest w: the nearest code in range."""
    p, n = ref.p, ref.p.scale.numel()
    flat = torch.arange(ref.w.numel())
    picks = []
    for values in (ref.w, -ref.w):
        top = values.reshape(-1).new_full((n,), -float("inf")).scatter_reduce(
            0, p.index.reshape(-1), values.reshape(-1), "amax")
        at = values.reshape(-1) == top[p.index.reshape(-1)]
        first = torch.full((n,), ref.w.numel()).scatter_reduce(0, p.index.reshape(-1)[at],
                                                                flat[at], "amin")
        picks.append(first)
    idx = torch.cat(picks).unique()
    idx = idx[ref.judged.reshape(-1)[idx]]
    lo, hi = scheme.code_range
    want = ref.steps(ref.w).reshape(-1)[idx].clamp(lo, hi)
    got = torch.round(ref.steps(out.w_hat).reshape(-1)[idx])
    miss = (got - want).abs() - 0.5 - ref.grid_slack().reshape(-1)[idx]
    ok = bool((miss <= 0).all())
    report.add(Row(case, "extremes", ok, detail="" if ok else
                   f"group extremes map to codes {got[miss > 0][:3].tolist()}, not the nearest "
                   f"of {want[miss > 0][:3].tolist()}{hint()}"))


def _check_zero(report: Report, case: str, ref: Reference, out: Output) -> None:
    zero_ok = bool((out.w_hat[ref.w == 0] == 0).all())
    sign_ok = bool((torch.sign(out.w_hat) * torch.sign(ref.w) >= 0).all())
    report.add(Row(case, "zero", zero_ok and sign_ok, detail="" if zero_ok and sign_ok else
                   ("a zero weight became non-zero; " if not zero_ok else "")
                   + ("a sign flipped" if not sign_ok else "")))


def _check_edge(report: Report, case: str, ref: Reference, out: Output,
                scheme: QuantScheme) -> None:
    # symmetric: w_hat anywhere between 0 and 2w; asymmetric: within the group's range
    reach = ref.p.amax[ref.p.index] * (1.0 if scheme.mapping.symmetric else 2.0)
    excess = ((ref.w - out.w_hat).abs() - reach).clamp_min(0)[~ref.judged]
    ok = bool((excess <= T.QUANT_SUBNORMAL_HALF).all())
    report.add(Row(case, "edge", ok, value=_worst(excess), bound=T.QUANT_SUBNORMAL_HALF,
                   detail="" if ok else f"on a subnormal-scale group |w - w_hat| exceeds "
                                        f"its reach by {_worst(excess):.4g}"))


def _check_odd(report: Report, case: str, quantize: Quantizer, w: torch.Tensor,
               scheme: QuantScheme, out: Output) -> None:
    neg = _call(quantize, -w, scheme)
    if not isinstance(neg, Output):
        report.add(Row(case, "odd", False, detail=f"on -w: {_describe(neg)}"))
        return
    ok = torch.equal(neg.w_hat, -out.w_hat)
    report.add(Row(case, "odd", ok, detail="" if ok else f"quantize(-w) != -quantize(w) at "
                                                         f"{int((neg.w_hat != -out.w_hat).sum())} "
                                                         f"elements"))


def _check_idempotent(report: Report, case: str, quantize: Quantizer, scheme: QuantScheme,
                      ref: Reference, out: Output) -> None:
    again = _call(quantize, out.w_hat.float(), scheme)
    if not isinstance(again, Output):
        report.add(Row(case, "idempotent", False, detail=f"on w_hat: {_describe(again)}"))
        return
    if not ref.judged.any():
        return
    k = torch.round(ref.steps(out.w_hat)[ref.judged])
    k2 = torch.round(ref.steps(again.w_hat)[ref.judged])
    ok = torch.equal(k2, k)
    report.add(Row(case, "idempotent", ok, detail="" if ok else
                   f"re-quantizing w_hat moves {int((k2 != k).sum())} codes"))


def _describe(out) -> str:
    return f"raised {type(out).__name__}: {out}" if isinstance(out, Exception) else str(out)


def _fits(w: torch.Tensor, w_hat: torch.Tensor, scheme: QuantScheme) -> bool:
    """``w_hat`` passes ``scheme``'s round trip and grid on its judged groups."""
    ref = Reference.of(w, scheme)
    if not ref.judged.any():
        return False
    steps = ref.steps(w_hat)[ref.judged]
    k = torch.round(steps)
    lo, hi = scheme.code_range
    return (bool(((ref.w - w_hat).abs() <= ref.round_trip_bound())[ref.judged].all())
            and bool(((steps - k).abs() <= ref.grid_slack()[ref.judged]).all())
            and bool(((k >= lo) & (k <= hi)).all()))


def _looks_like(w: torch.Tensor, w_hat: torch.Tensor, scheme: QuantScheme) -> str:
    """``"; looks like X"`` for the first other scheme ``w_hat`` fits, else ``""``."""
    others = [replace(scheme, mapping=m) for m in Mapping if m is not scheme.mapping]
    others += [replace(scheme, granularity=g) for g in (PerTensor(), PerAxis(0), PerAxis(1))
               if g != scheme.granularity]
    if scheme.scale_floor != FLOAT32_EPS:
        others.append(replace(scheme, scale_floor=FLOAT32_EPS))
    for other in others:
        if _fits(w, w_hat, other):
            what = (other.mapping.name if other.mapping is not scheme.mapping else
                    str(other.granularity) if other.granularity != scheme.granularity else
                    f"a scale floor of {other.scale_floor:.3g}")
            return f"; looks like {what}"
    return ""
