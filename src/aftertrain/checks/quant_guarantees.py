"""The guarantees of :func:`aftertrain.checks.quant.check_quantizer` on one
case: a quantizer's output (:class:`Output`) judged against the scheme's
view of the weight (:class:`Reference`), both of
:mod:`aftertrain.checks.quant_reference`. Here: the output's form, the
group size a library chose, the rows that call the quantizer again (odd,
idempotent) and the classing of a failure (an edge finding, or a mismatch
when the output is another scheme's); the rows that judge the output alone
are :mod:`aftertrain.checks.quant_output`'s (:func:`judge`). Formulas and
tolerances in :mod:`aftertrain.checks.quant`'s docstring."""

from __future__ import annotations

from dataclasses import replace

import torch

from aftertrain.checks.codebooks import CODEBOOKS, CodebookScheme, check_codebook_case, codebook_fits
from aftertrain.checks.quant_output import judge
from aftertrain.checks.quant_reference import (
    FLOAT32_EPS,
    Output,
    Quantizer,
    Reference,
    as_output,
    call_quantizer,
    per_element,
)
from aftertrain.checks.refusals import is_refusal, refused_row
from aftertrain.checks.report import EDGE, FAILURE, MISMATCH, Report, Row
from aftertrain.checks.rule_battery import describe_exception
from aftertrain.checks.schemes import Mapping, PerAxis, PerGroup, PerTensor, QuantScheme, qparams


def check_case(report: Report, quantize: Quantizer, case: str, w: torch.Tensor, scheme: QuantScheme) -> None:
    """Every row of one case under one scheme, each failed row classed
    (module :mod:`aftertrain.checks.report`): a row that fails only on
    groups at the format's edge is an edge finding; when the output is
    another scheme's correct output, the failed rows are a mismatch naming it."""
    if isinstance(scheme, CodebookScheme):
        check_codebook_case(report, quantize, case, w, scheme)
        return
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
        judge(rows, case, ref, out, scheme)
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
            judge(scratch, case, Reference.of(w, chosen), out, chosen)
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
    judged. A group size that does not divide the row is undefined: there an
    exception that :func:`aftertrain.checks.refusals.is_refusal` reads as a
    refusal (raised by a ``raise`` or ``assert`` of the judged code, with a
    message) is one; any other exception, a crash in a tensor operation
    included, is a failure, or an edge finding on a case holding groups at
    the format's edge. Non-finite values only in such groups are an edge
    finding too (the other groups are then judged)."""
    g = scheme.granularity
    ragged = isinstance(g, PerGroup) and g.group_size is not None and w.shape[1] % g.group_size != 0
    if isinstance(out, Exception) and ragged and is_refusal(out):
        report.add(refused_row(case, out))
        return False
    if isinstance(out, Exception):
        at_edge = ref is not None and bool(ref.edge.any())
        report.add(
            Row(
                case,
                "output",
                False,
                detail=f"raised {describe_exception(out)}"
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
        # A w_hat that is not finite (an edge group's overflow) may be refused
        # on the way back: classed by where it is not finite.
        off = ~torch.isfinite(out.w_hat)
        report.add(
            Row(
                case,
                "idempotent",
                False,
                detail=f"on w_hat: {_describe(again)}",
                severity=ref.severity(off if bool(off.any()) else torch.ones_like(ref.edge)),
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
    return f"raised {describe_exception(out)}" if isinstance(out, Exception) else str(out)


def _fits_other(
    w: torch.Tensor, raw: tuple, scheme: QuantScheme, edge: torch.Tensor
) -> tuple[str, QuantScheme] | None:
    """``(what, scheme)`` for the first other scheme whose every judging row
    (round trip, grid, codes, scale, extremes, zero) the quantizer's answer
    ``raw`` passes but at the format's edge, else None: another mapping or
    granularity, a scale floor (float32's eps, or the one the output shows),
    a float16 or bfloat16 input copy, scale or output. ``edge``: the declared
    scheme's edge elements; another scheme that would excuse more (a whole
    tensor holding float32's max as one group), or a precision whose rounding
    moves ``w_hat`` by more than a quarter step (bfloat16 at 8 bits: half a
    step, where floor rounding would pass), is no fit."""
    shapes = [(m.name, {"mapping": m}) for m in Mapping if m is not scheme.mapping]
    shapes += [
        (str(g), {"granularity": g}) for g in (PerTensor(), PerAxis(0), PerAxis(1)) if g != scheme.granularity
    ]
    floors = []
    for floor in (FLOAT32_EPS, _shown_floor(w, raw, scheme)):
        if floor is not None and floor > scheme.scale_floor:
            floors.append((f"a scale floor of {floor:.3g}", {"scale_floor": floor}))
    # the tightest first: one change, then a mapping with a precision (hqq: a free
    # zero, w_hat in float16); float16 before bfloat16; a copy before a scale before w_hat
    changes = shapes + floors
    for dtype in (torch.float16, torch.bfloat16):
        name = str(dtype).removeprefix("torch.")
        precisions = [
            (what, {f"{key}_dtype": dtype})
            for key, what in (
                ("input", f"a {name} copy quantized"),
                ("scale", f"{name} scales"),
                ("output", f"w_hat in {name}"),
            )
            if getattr(scheme, f"{key}_dtype") is None
        ]
        changes += precisions
        changes += [
            (f"{a} with {b}", {**ca, **cb}) for a, ca in shapes[: len(Mapping) - 1] for b, cb in precisions
        ]
    others = [(what, replace(scheme, **change)) for what, change in changes]
    if scheme.granularity_known and bool(torch.isfinite(raw[0]).all()):
        for book in CODEBOOKS.values():
            other = CodebookScheme(
                book, scheme.granularity, scheme.input_dtype, scheme.scale_dtype, scheme.output_dtype
            )
            if codebook_fits(w, raw, other):
                return f"the {book.name} codebook", other
    for what, other in others:
        ref = Reference.of(w, other)
        if not bool(ref.judged.any()) or bool((ref.edge & ~edge).any()):
            continue
        if bool((ref.drift > ref.s / 4)[ref.judged].any()):  # a precision this loose excuses a bug
            continue
        out = as_output(raw, w, other)
        scratch = Report("scratch")
        if isinstance(out, str) or not _check_output(scratch, "", out, w, other, ref):
            continue
        judge(scratch, "", ref, out, other)
        if all(r.passed or r.severity != FAILURE for r in scratch.rows):
            return what, other
    return None


def _shown_floor(w: torch.Tensor, raw: tuple, scheme: QuantScheme) -> float | None:
    """The scale floor the output shows, to 3 significant digits: the
    smallest returned scale above its group's raw scale, else the smallest
    step between two values of ``w_hat`` in a group whose raw scale is below
    it (hqq's step floor 5e-5); None where no group shows one."""
    if not scheme.granularity_known:
        return None
    p = qparams(w, scheme)
    index, n = p.index.reshape(-1), p.scale.numel()
    if len(raw) == 4 and isinstance(raw[2], torch.Tensor):
        scale = per_element(raw[2], w, scheme, "scale")
        if isinstance(scale, str):
            return None
        step = scale.abs().reshape(-1).new_full((n,), float("inf"))
        step = step.scatter_reduce(0, index, scale.abs().reshape(-1), "amin")
    else:
        w_hat = raw[0].detach().double().reshape(-1)
        order = torch.sort(index[torch.sort(w_hat).indices], stable=True)
        sorted_index, by = order.values, torch.sort(w_hat).indices[order.indices]
        gap = w_hat[by].diff()
        keep = (sorted_index.diff() == 0) & (gap > 0)
        step = gap.new_full((n,), float("inf")).scatter_reduce(0, sorted_index[1:][keep], gap[keep], "amin")
    shown = step[torch.isfinite(step) & (step > p.raw * (1 + 1e-3)) & (p.amax > 0)]
    return float(f"{float(shown.min()):.3g}") if shown.numel() and float(shown.min()) < 1 else None
