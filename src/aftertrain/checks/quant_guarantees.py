"""The guarantees of :func:`aftertrain.checks.quant.check_quantizer`, one
function per report row: a quantizer's output (:class:`Output`) judged
against the scheme's view of the weight (:class:`Reference`), both of
:mod:`aftertrain.checks.quant_reference`. Formulas and tolerances in
:mod:`aftertrain.checks.quant`'s docstring."""

from __future__ import annotations

from dataclasses import replace

import torch

from aftertrain.checks.quant_reference import (
    FLOAT32_EPS,
    Output,
    Quantizer,
    Reference,
    U,
    as_output,
    call_quantizer,
)
from aftertrain.checks.report import EDGE, FAILURE, MISMATCH, Report, Row
from aftertrain.checks.schemes import Mapping, PerAxis, PerGroup, PerTensor, QuantScheme, from_codes
from aftertrain.core import tolerances as T


def check_case(report: Report, quantize: Quantizer, case: str, w: torch.Tensor, scheme: QuantScheme) -> None:
    """Every row of one case under one scheme, each failed row classed
    (module :mod:`aftertrain.checks.report`): a row that fails only on
    groups at the format's edge is an edge finding; when the output is
    another scheme's correct output, the failed rows are a mismatch naming it."""
    raw = call_quantizer(quantize, w, scheme)
    rows = Report(case)
    if (
        isinstance(scheme.granularity, PerGroup)
        and scheme.granularity.group_size is None
        and not isinstance(raw, Exception | str)
    ):
        scheme = _chosen_group(rows, case, raw, w, scheme)
        if scheme is None:
            _merge(report, rows, None)
            return
    out = raw if isinstance(raw, Exception | str) else as_output(raw, w, scheme)
    ref = Reference.of(w, scheme) if scheme.granularity_known else None
    if _check_output(rows, case, out, w, scheme, ref):
        _judge(rows, case, ref, out, scheme)
        if scheme.mapping.odd:
            _check_odd(rows, case, quantize, w, scheme, out, ref)
        if scheme.mapping.idempotent:
            _check_idempotent(rows, case, quantize, scheme, ref, out)
    fits = None
    # a mismatch: the output is not the declared scheme's (a row judging the
    # output alone failed) but another's; a failed odd or idempotent row
    # alone is the declared scheme's property broken, a failure
    if isinstance(out, Output) and any(
        not r.passed and r.severity == FAILURE and r.check not in ("odd", "idempotent") for r in rows.rows
    ):
        fits = _fits_other(w, raw, scheme, ref.edge)
    _merge(report, rows, fits)


def _merge(report: Report, rows: Report, fits: tuple[str, QuantScheme] | None) -> None:
    """Add ``rows`` to ``report``; with ``fits``, a failed row is a mismatch."""
    for row in rows.rows:
        if fits is not None and not row.passed and row.severity == FAILURE:
            what, other = fits
            row = replace(
                row,
                severity=MISMATCH,
                fits=str(other),
                detail=f"{row.detail}; looks like {what} (declare {other})",
            )
        report.add(row)


def _judge(report: Report, case: str, ref: Reference, out: Output, scheme: QuantScheme) -> None:
    """The rows that judge ``out`` alone (no further call of the quantizer)."""
    _check_round_trip(report, case, ref, out)
    _check_grid(report, case, ref, out, scheme)
    if out.codes is not None:
        _check_codes(report, case, ref, out, scheme)
    _check_extremes(report, case, ref, out, scheme)
    if scheme.mapping.keeps_zero:
        _check_zero(report, case, ref, out)
    if (~ref.judged).any():
        _check_edge(report, case, ref, out, scheme)


def _chosen_group(
    report: Report, case: str, raw: tuple, w: torch.Tensor, scheme: QuantScheme
) -> QuantScheme | None:
    """``scheme`` at the group size the library chose (``PerGroup(None)``):
    the one its returned scale shows (one entry per group), else the
    smallest group size dividing the row whose output fits the scheme; a
    ``group size`` row says which, or that none fits (None)."""
    rows, cols = w.shape
    scale = raw[2] if len(raw) == 4 else None
    if (
        isinstance(scale, torch.Tensor)
        and scale.numel() % rows == 0
        and cols % max(1, scale.numel() // rows) == 0
    ):
        candidates = [cols // max(1, scale.numel() // rows)]
        how = "its scale has one entry per group"
    else:
        candidates = [g for g in range(1, cols + 1) if cols % g == 0]
        how = "the smallest dividing the row that fits"
    if candidates == [1] and cols > 1:
        report.add(
            Row(
                case,
                "group size",
                False,
                value=1.0,
                detail=f"the library chose 1 for rows of {cols} ({how}): every element "
                f"its own group, nothing is quantized",
            )
        )
        return None
    for g in candidates:
        chosen = replace(scheme, granularity=PerGroup(g))
        out = as_output(raw, w, chosen)
        if isinstance(out, str):
            continue
        scratch = Report("scratch")
        if _check_output(scratch, case, out, w, chosen, Reference.of(w, chosen)):
            _judge(scratch, case, Reference.of(w, chosen), out, chosen)
        if how.startswith("its") or all(r.passed or r.severity != FAILURE for r in scratch.rows):
            report.add(Row(case, "group size", True, value=float(g), detail=f"the library chose {g} ({how})"))
            return chosen
    report.add(
        Row(case, "group size", False, detail=f"no group size dividing the row of {cols} fits {scheme}")
    )
    return None


def _check_output(
    report: Report, case: str, out, w: torch.Tensor, scheme: QuantScheme, ref: Reference | None
) -> bool:
    """Record the ``output`` (or ``refused``) row; True when ``out`` can be
    judged. A group size that does not divide the row is undefined: any
    exception with a message there is a refusal. An exception on a case
    holding groups at the format's edge is an edge finding; non-finite
    values only in such groups are too (the other groups are then judged)."""
    g = scheme.granularity
    ragged = isinstance(g, PerGroup) and g.group_size is not None and w.shape[1] % g.group_size != 0
    if isinstance(out, Exception) and ragged and str(out):
        report.add(Row(case, "refused", True, detail=f"refused ({type(out).__name__}: {out})"))
        return False
    if isinstance(out, Exception):
        at_edge = ref is not None and bool(ref.edge.any())
        report.add(
            Row(
                case,
                "output",
                False,
                detail=f"raised {type(out).__name__}: {out}"
                + (" (on a case reaching the format's edge)" if at_edge else ""),
                severity=EDGE if at_edge else FAILURE,
            )
        )
        return False
    if isinstance(out, str):
        report.add(Row(case, "output", False, detail=out))
        return False
    bad = ~torch.isfinite(out.w_hat)
    n_bad = int(bad.sum())
    severity = ref.severity(bad)
    report.add(
        Row(
            case,
            "output",
            n_bad == 0,
            value=float(n_bad),
            bound=0.0,
            detail=f"{n_bad} values not finite" if n_bad else "",
            severity=severity,
        )
    )
    return n_bad == 0 or severity == EDGE


def _worst(x: torch.Tensor) -> float:
    return float(x.nan_to_num(float("inf")).max()) if x.numel() else 0.0


def _check_round_trip(report: Report, case: str, ref: Reference, out: Output) -> None:
    err = (ref.w - out.w_hat).abs()
    excess = err / ref.round_trip_bound()
    bad = ref.judged & ~(excess <= 1)
    ok = not bool(bad.any())
    worst = _worst(excess[ref.judged])
    report.add(
        Row(
            case,
            "round-trip",
            ok,
            value=worst,
            bound=1.0,
            severity=ref.severity(bad),
            detail="" if ok else f"|w - w_hat| reaches {worst:.4g} x the bound scale/2 + 4 u R",
        )
    )
    if ref.floored.any():
        cost = _worst((err / (ref.p.raw[ref.p.index] / 2))[ref.floored])
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
    lo, hi = scheme.code_range
    steps = ref.steps(out.w_hat)
    outward = torch.where(steps > 0, torch.ceil(steps), torch.floor(steps)).clamp(lo, hi)
    keep = ref.judged & ~ref.saturated(out.w_hat, outward)
    k = torch.round(steps)
    off = (steps - k).abs()
    slack = ref.grid_slack()
    bad = keep & ~((off <= slack) & (k >= lo) & (k <= hi))
    ok = not bool(bad.any())
    report.add(
        Row(
            case,
            "grid",
            ok,
            value=_worst(off[keep]),
            bound=_worst(slack[keep]),
            severity=ref.severity(bad),
            detail=""
            if ok
            else f"w_hat in steps is {_worst(off[keep]):.4g} off an "
            f"integer or outside [{lo}, {hi}] (codes reach {_span(k[keep])})",
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
            value=_worst(codes.abs()),
            bound=float(hi),
            severity=ref.severity(bad),
            detail=""
            if ok
            else f"codes integral {bool(integral.all())}, span {_span(codes)}, allowed [{lo}, {hi}]",
        )
    )
    if out.scale is None:
        return
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
            f"{_worst(gap[keep]):.4g} beyond the float slack)",
        )
    )
    rel = (out.scale - ref.s).abs() / ref.s
    bad = ref.judged & ~(rel <= 4 * U)
    ok = not bool(bad.any())
    report.add(
        Row(
            case,
            "scale",
            ok,
            value=_worst(rel[ref.judged]),
            bound=4 * U,
            severity=ref.severity(bad),
            detail=""
            if ok
            else f"a scale differs from its own group's {scheme.mapping.name} scale by "
            f"{_worst(rel[ref.judged]):.4g} (relative)",
        )
    )
    if scheme.mapping is Mapping.ASYMMETRIC and out.zero is not None:
        bad = out.zero != torch.round(out.zero)
        frac = _worst((out.zero - torch.round(out.zero)).abs())
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
    lo, hi = scheme.code_range
    want = ref.steps(ref.w).reshape(-1)[idx].clamp(lo, hi)
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


def _check_zero(report: Report, case: str, ref: Reference, out: Output) -> None:
    zero_bad = (ref.w == 0) & (out.w_hat != 0)
    sign_bad = ~(torch.sign(out.w_hat) * torch.sign(ref.w) >= 0)
    ok = not bool((zero_bad | sign_bad).any())
    report.add(
        Row(
            case,
            "zero",
            ok,
            severity=ref.severity(zero_bad | sign_bad),
            detail=""
            if ok
            else ("a zero weight became non-zero; " if zero_bad.any() else "")
            + ("a sign flipped" if sign_bad.any() else ""),
        )
    )


def _check_edge(report: Report, case: str, ref: Reference, out: Output, scheme: QuantScheme) -> None:
    """Groups whose scale would be subnormal (an edge finding at worst) or
    zero (an all-zero group must stay 0: a failure)."""
    # symmetric: w_hat anywhere between 0 and 2w; asymmetric: within the group's range
    reach = ref.p.amax[ref.p.index] * (1.0 if scheme.mapping.symmetric else 2.0)
    excess = ((ref.w - out.w_hat).abs() - reach).clamp_min(0)
    bad = ~ref.judged & ~(excess <= T.QUANT_SUBNORMAL_HALF)
    ok = not bool(bad.any())
    worst = _worst(excess[~ref.judged])
    report.add(
        Row(
            case,
            "edge",
            ok,
            value=worst,
            bound=T.QUANT_SUBNORMAL_HALF,
            severity=ref.severity(bad),
            detail=""
            if ok
            else f"on a subnormal-scale or all-zero group |w - w_hat| exceeds its reach by {worst:.4g}",
        )
    )


def _check_odd(
    report: Report,
    case: str,
    quantize: Quantizer,
    w: torch.Tensor,
    scheme: QuantScheme,
    out: Output,
    ref: Reference,
) -> None:
    neg = call_quantizer(quantize, -w, scheme)
    neg = neg if isinstance(neg, Exception | str) else as_output(neg, w, scheme)
    if not isinstance(neg, Output):
        report.add(Row(case, "odd", False, detail=f"on -w: {_describe(neg)}"))
        return
    bad = neg.w_hat != -out.w_hat
    ok = not bool(bad.any())
    report.add(
        Row(
            case,
            "odd",
            ok,
            severity=ref.severity(bad),
            detail="" if ok else f"quantize(-w) != -quantize(w) at {int(bad.sum())} elements",
        )
    )


def _check_idempotent(
    report: Report, case: str, quantize: Quantizer, scheme: QuantScheme, ref: Reference, out: Output
) -> None:
    again = call_quantizer(quantize, out.w_hat.float(), scheme)
    again = again if isinstance(again, Exception | str) else as_output(again, ref.w, scheme)
    if not isinstance(again, Output):
        report.add(
            Row(
                case,
                "idempotent",
                False,
                detail=f"on w_hat: {_describe(again)}",
                severity=ref.severity(torch.ones_like(ref.edge)),
            )
        )
        return
    if not ref.judged.any():
        return
    k = torch.round(ref.steps(out.w_hat))
    k2 = torch.round(ref.steps(again.w_hat))
    bad = ref.judged & (k2 != k)
    ok = not bool(bad.any())
    report.add(
        Row(
            case,
            "idempotent",
            ok,
            severity=ref.severity(bad),
            detail="" if ok else f"re-quantizing w_hat moves {int(bad.sum())} codes",
        )
    )


def _describe(out) -> str:
    return f"raised {type(out).__name__}: {out}" if isinstance(out, Exception) else str(out)


def _fits_other(
    w: torch.Tensor, raw: tuple, scheme: QuantScheme, edge: torch.Tensor
) -> tuple[str, QuantScheme] | None:
    """``(what, scheme)`` for the first other scheme whose every judging row
    (round trip, grid, codes, scale, extremes, zero) the quantizer's answer
    ``raw`` passes but at the format's edge, else None. ``edge``: the
    declared scheme's edge elements; another scheme that would excuse more
    (a whole tensor holding float32's max as one group) is no fit."""
    others = [replace(scheme, mapping=m) for m in Mapping if m is not scheme.mapping]
    others += [
        replace(scheme, granularity=g)
        for g in (PerTensor(), PerAxis(0), PerAxis(1))
        if g != scheme.granularity
    ]
    if scheme.scale_floor != FLOAT32_EPS:
        others.append(replace(scheme, scale_floor=FLOAT32_EPS))
    for other in others:
        ref = Reference.of(w, other)
        if not bool(ref.judged.any()) or bool((ref.edge & ~edge).any()):
            continue
        out = as_output(raw, w, other)
        scratch = Report("scratch")
        if isinstance(out, str) or not _check_output(scratch, "", out, w, other, ref):
            continue
        _judge(scratch, "", ref, out, other)
        if all(r.passed or r.severity != FAILURE for r in scratch.rows):
            what = (
                other.mapping.name
                if other.mapping is not scheme.mapping
                else str(other.granularity)
                if other.granularity != scheme.granularity
                else f"a scale floor of {other.scale_floor:.3g}"
            )
            return what, other
    return None
