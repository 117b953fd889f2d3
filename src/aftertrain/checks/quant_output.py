"""The rows of :func:`aftertrain.checks.quant.check_quantizer` that judge one
output of the quantizer alone (:func:`judge`, no further call of it): the
round trip, the grid, the codes and scale, the group extremes, zero and
sign, and the groups at the format's edge, each against the scheme's view
of the weight (:class:`~aftertrain.checks.quant_reference.Reference`).
Formulas and tolerances in :mod:`aftertrain.checks.quant`'s docstring;
the rows that call the quantizer again, and the classing of a failure, are
:mod:`aftertrain.checks.quant_guarantees`'."""

from __future__ import annotations

from collections.abc import Callable

import torch

from aftertrain.checks.quant_reference import Output, Reference, U
from aftertrain.checks.report import Report, Row
from aftertrain.checks.schemes import Mapping, QuantScheme, from_codes
from aftertrain.core import tolerances as T

#: A failed row's severity from the elements that break it (``Reference.severity``).
Severity = Callable[[torch.Tensor], str]


def judge(report: Report, case: str, ref: Reference, out: Output, scheme: QuantScheme) -> None:
    """Add to ``report`` the rows that judge ``out`` alone (no further call
    of the quantizer), each failed row's severity from ``ref``: an edge
    finding where it fails only on groups at the format's edge."""
    _check_round_trip(report, case, ref, out)
    _check_grid(report, case, ref, out, scheme)
    if out.codes is not None:
        _check_codes(report, case, ref, out, scheme)
    if scheme.mapping is not Mapping.ASYMMETRIC_FREE_ZERO:  # the nearest code of a free zero is its own
        _check_extremes(report, case, ref, out, scheme)
    if scheme.mapping.keeps_zero:
        check_zero(report, case, ref.w, out.w_hat, ref.severity)
    if (~ref.judged).any():
        # symmetric: w_hat anywhere between 0 and 2w; asymmetric: within the group's range
        reach = ref.p.amax[ref.p.index] * (1.0 if scheme.mapping.symmetric else 2.0)
        check_edge(report, case, ref.w, out.w_hat, reach, ref.judged, ref.severity)


def worst(x: torch.Tensor) -> float:
    """The largest value of ``x`` (NaN counts as inf), 0 when ``x`` is empty."""
    return float(x.nan_to_num(float("inf")).max()) if x.numel() else 0.0


def _check_round_trip(report: Report, case: str, ref: Reference, out: Output) -> None:
    err = (ref.w - out.w_hat).abs()
    excess = err / ref.round_trip_bound()
    bad = ref.judged & ~(excess <= 1)
    ok = not bool(bad.any())
    most = worst(excess[ref.judged])
    report.add(
        Row(
            case,
            "round-trip",
            ok,
            value=most,
            bound=1.0,
            severity=ref.severity(bad),
            detail="" if ok else f"|w - w_hat| reaches {most:.4g} x the bound scale/2 + 4 u R",
        )
    )
    if ref.floored.any():
        cost = worst((err / (ref.p.raw[ref.p.index] / 2))[ref.floored])
        bad = ref.floored & ~(excess <= 1)
        report.add(
            Row(
                case,
                "floor",
                not bool(bad.any()),
                value=cost,
                severity=ref.severity(bad),
                detail=f"groups at the scale floor err up to {cost:.4g} x their unfloored half step",
            )
        )


def _check_grid(report: Report, case: str, ref: Reference, out: Output, scheme: QuantScheme) -> None:
    """``w_hat`` in steps of ``s`` is an integer in the group's code range; a free
    zero point (ASYMMETRIC_FREE_ZERO): each group's ``w_hat`` spans at most
    ``2**bits - 1`` steps of ``s`` from its smallest value, whatever the zero."""
    lo, hi = ref.code_lo, ref.code_hi
    steps = ref.steps(out.w_hat)
    slack = ref.grid_slack()
    if scheme.mapping is Mapping.ASYMMETRIC_FREE_ZERO:
        n, i = ref.p.scale.numel(), ref.p.index.reshape(-1)
        least = (
            out.w_hat.reshape(-1)
            .new_full((n,), float("inf"))
            .scatter_reduce(0, i, out.w_hat.reshape(-1), "amin")
        )
        steps = (out.w_hat - least[ref.p.index]) / ref.s
        slack = slack + ref.drift / ref.s  # the anchor, the smallest w_hat, drifts too
    outward = torch.where(steps > 0, torch.ceil(steps), torch.floor(steps)).clamp(lo, hi)
    keep = ref.judged & ~ref.saturated(out.w_hat, outward)
    k = torch.round(steps)
    off = (steps - k).abs()
    reach = torch.round(slack)  # a declared scale precision moves the end codes too (129 of 127)
    bad = keep & ~((off <= slack) & (k >= lo - reach) & (k <= hi + reach))
    ok = not bool(bad.any())
    report.add(
        Row(
            case,
            "grid",
            ok,
            value=worst(off[keep]),
            bound=worst(slack[keep]),
            severity=ref.severity(bad),
            detail=""
            if ok
            else f"w_hat in steps is {worst(off[keep]):.4g} off an "
            f"integer or outside {_span(torch.cat([lo[keep], hi[keep]]))} (codes reach {_span(k[keep])})",
        )
    )


def _span(k: torch.Tensor) -> str:
    return f"[{float(k.min()):.0f}, {float(k.max()):.0f}]" if k.numel() else "[]"


def _check_codes(report: Report, case: str, ref: Reference, out: Output, scheme: QuantScheme) -> None:
    codes = out.codes
    lo, hi = scheme.code_range
    integral = codes == torch.round(codes)
    fits = (codes >= lo) & (codes <= hi)
    if not scheme.mapping.symmetric and not bool(fits.all()):  # stored signed or unsigned
        fits = (codes >= 0) & (codes <= 2**scheme.bits - 1)
    bad = ~(integral & fits)
    ok = not bool(bad.any())
    report.add(
        Row(
            case,
            "codes",
            ok,
            value=worst(codes.abs()),
            bound=float(hi),
            severity=ref.severity(bad),
            detail=""
            if ok
            else f"codes integral {bool(integral.all())}, span {_span(codes)}, allowed [{lo}, {hi}]",
        )
    )
    if out.scale is not None:
        _check_scale(report, case, ref, out, scheme)


def _check_scale(report: Report, case: str, ref: Reference, out: Output, scheme: QuantScheme) -> None:
    """The returned scale and zero point: the codes dequantize to w_hat, the
    scale is the group's own, the zero point an integer."""
    codes = out.codes
    zero = torch.zeros(()) if out.zero is None else out.zero
    dequant = from_codes(codes, out.scale, zero, scheme.mapping)
    keep = ref.judged & ~ref.saturated(out.w_hat, codes)
    gap = (dequant - out.w_hat).abs() - ref.round_trip_bound() + ref.s / 2
    bad = keep & ~(gap <= 0)
    ok = not bool(bad.any())
    report.add(
        Row(
            case,
            "codes match w_hat",
            ok,
            severity=ref.severity(bad),
            detail=""
            if ok
            else f"w_hat is not (codes - zero_point) * scale (off by up to "
            f"{worst(gap[keep]):.4g} beyond the float slack)",
        )
    )
    scale = out.scale.abs() if scheme.mapping is Mapping.SYMMETRIC_SIGNED_SCALE else out.scale
    rel = (scale - ref.s).abs() / ref.s
    # a declared scale_dtype: the scale's own rounding, drift / (R / s + 1) / s
    bad = ref.judged & ~(rel <= 4 * U + ref.drift / (ref.R + ref.s))
    ok = not bool(bad.any())
    report.add(
        Row(
            case,
            "scale",
            ok,
            value=worst(rel[ref.judged]),
            bound=4 * U,
            severity=ref.severity(bad),
            detail=""
            if ok
            else f"a scale differs from its own group's {scheme.mapping.name} scale by "
            f"{worst(rel[ref.judged]):.4g} (relative)",
        )
    )
    if scheme.mapping is Mapping.ASYMMETRIC and out.zero is not None:
        bad = out.zero != torch.round(out.zero)
        frac = worst((out.zero - torch.round(out.zero)).abs())
        report.add(
            Row(
                case,
                "zero point",
                not bool(bad.any()),
                value=frac,
                bound=0.0,
                severity=ref.severity(bad),
                detail=f"the zero point is {frac:.4g} off an integer (not rounded)",
            )
        )


def _check_extremes(report: Report, case: str, ref: Reference, out: Output, scheme: QuantScheme) -> None:
    """At each judged group's smallest and largest w: the nearest code in range."""
    p, n = ref.p, ref.p.scale.numel()
    flat = torch.arange(ref.w.numel())
    picks = []
    for values in (ref.w, -ref.w):
        top = (
            values.reshape(-1)
            .new_full((n,), -float("inf"))
            .scatter_reduce(0, p.index.reshape(-1), values.reshape(-1), "amax")
        )
        at = values.reshape(-1) == top[p.index.reshape(-1)]
        first = torch.full((n,), ref.w.numel()).scatter_reduce(0, p.index.reshape(-1)[at], flat[at], "amin")
        picks.append(first)
    idx = torch.cat(picks).unique()
    idx = idx[ref.judged.reshape(-1)[idx]]
    lo, hi = ref.code_lo.reshape(-1)[idx], ref.code_hi.reshape(-1)[idx]
    want = torch.minimum(torch.maximum(ref.steps(ref.w).reshape(-1)[idx], lo), hi)
    got = torch.round(ref.steps(out.w_hat).reshape(-1)[idx])
    miss = ~((got - want).abs() - 0.5 - ref.grid_slack().reshape(-1)[idx] <= 0)
    bad = torch.zeros(ref.w.numel(), dtype=torch.bool)
    bad[idx[miss]] = True
    ok = not bool(miss.any())
    report.add(
        Row(
            case,
            "extremes",
            ok,
            severity=ref.severity(bad.reshape(ref.w.shape)),
            detail=""
            if ok
            else f"group extremes map to codes {got[miss][:3].tolist()}, "
            f"not the nearest of {want[miss][:3].tolist()}",
        )
    )


def check_zero(report: Report, case: str, w: torch.Tensor, w_hat: torch.Tensor, severity: Severity) -> None:
    """The ``zero`` row of a scheme that keeps zero: 0 stays 0 and no sign
    flips (``w_hat * w >= 0``); ``severity`` classes the elements that break it."""
    zero_bad = (w == 0) & (w_hat != 0)
    sign_bad = ~(torch.sign(w_hat) * torch.sign(w) >= 0)
    ok = not bool((zero_bad | sign_bad).any())
    report.add(
        Row(
            case,
            "zero",
            ok,
            severity=severity(zero_bad | sign_bad),
            detail=""
            if ok
            else ("a zero weight became non-zero; " if zero_bad.any() else "")
            + ("a sign flipped" if sign_bad.any() else ""),
        )
    )


def check_edge(
    report: Report,
    case: str,
    w: torch.Tensor,
    w_hat: torch.Tensor,
    reach: torch.Tensor,
    judged: torch.Tensor,
    severity: Severity,
) -> None:
    """The ``edge`` row of the groups not ``judged`` (all-zero, or a scale
    or absmax that would be subnormal): ``|w - w_hat| <= reach`` per
    element, up to half float32's smallest subnormal (an all-zero group's
    reach is 0: it stays 0)."""
    excess = ((w - w_hat).abs() - reach).clamp_min(0)
    bad = ~judged & ~(excess <= T.QUANT_SUBNORMAL_HALF)
    ok = not bool(bad.any())
    most = worst(excess[~judged])
    report.add(
        Row(
            case,
            "edge",
            ok,
            value=most,
            bound=T.QUANT_SUBNORMAL_HALF,
            severity=severity(bad),
            detail=""
            if ok
            else f"on a subnormal-scale or all-zero group |w - w_hat| exceeds its reach by {most:.4g}",
        )
    )
