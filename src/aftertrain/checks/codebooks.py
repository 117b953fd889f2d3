"""Codebook schemes: a lookup table of code values scaled by each block's
absmax (bitsandbytes' 4-bit ``quant_type="nf4"`` and ``"fp4"``, whose
``blocksize`` is the kit's ``PerBlock(blocksize)``: blocks of the flattened
weight, the same as ``PerGroup(blocksize)`` where it divides the row), and their guarantees
(:func:`check_codebook_case`, run by
:func:`aftertrain.checks.quant.check_quantizer` for a
:class:`CodebookScheme`).

With a block's ``amax = max|w|`` and the table ``t`` (normalised to
``max|t| = 1``), a codebook quantizer stores the index ``k`` of the entry
nearest ``w / amax`` and dequantizes ``w_hat = t[k] * amax``. The guarantees,
with ``u = 2**-24``:

* ``table``: every ``w_hat`` is a table value times its block's ``amax``, up
  to ``2 u amax`` (the product's rounding), a declared ``scale_dtype``'s
  rounding of ``amax`` and half an ulp of ``amax`` in a declared
  ``output_dtype``;
* ``nearest``: that entry is a nearest one to ``w / amax`` (either at a
  tie), up to ``4 u`` (``w * fl(1 / amax)`` rounds twice) and the same
  ``scale_dtype`` rounding: the round trip is at most half the gap between
  the two entries around ``w / amax``, times ``amax``;
* ``zero``: where the table holds 0, 0 stays 0 and no sign flips;
* ``codes match w_hat`` and ``scale`` (returned as ``(w_hat, codes, scale,
  None)``: ``codes`` index the table in its given order, bitsandbytes'
  for NF4 and FP4): ``t[codes] * scale == w_hat``, ``scale`` the block's
  ``amax``;
* ``edge``: an all-zero block stays 0; a block whose ``amax`` is subnormal
  (float32's edge) keeps ``|w - w_hat| <= amax``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from aftertrain.checks.precision import check_low_precision, output_slack, scheme_options
from aftertrain.checks.quant_output import check_edge, check_zero, worst
from aftertrain.checks.quant_reference import U, as_output, call_quantizer
from aftertrain.checks.refusals import is_refusal, refused_row
from aftertrain.checks.report import EDGE, FAILURE, MISMATCH, Report, Row
from aftertrain.checks.rule_battery import describe_exception
from aftertrain.checks.schemes import PerAxis, PerBlock, PerGroup, PerTensor, SchemeGranularity, group_index
from aftertrain.core import tolerances as T
from aftertrain.core.validation import check_weight
from aftertrain.quant.primitives import SCALE_FLOOR


@dataclass(frozen=True)
class Codebook:
    """A table of 2 to 256 distinct finite code values whose largest
    magnitude is 1, named as ``--scheme`` reads it (``NF4``, ``FP4``)."""

    name: str
    values: tuple[float, ...]

    def __post_init__(self) -> None:
        v = self.values
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"name must be an identifier, got {self.name!r}")
        if (
            not isinstance(v, tuple)
            or not 2 <= len(v) <= 256
            or not all(isinstance(x, int | float) and abs(x) <= 1 for x in v)
            or max(abs(x) for x in v) != 1
            or len(set(v)) < 2
        ):
            raise ValueError(
                f"values must be a tuple of 2 to 256 floats in [-1, 1], at least 2 distinct, with "
                f"max |value| == 1, got {v!r}"
            )

    def table(self) -> torch.Tensor:
        """The values in their given order, float64."""
        return torch.tensor(self.values, dtype=torch.float64)


#: bitsandbytes' NF4 (``get_4bit_type("nf4")``, QLoRA's NormalFloat: quantiles of N(0, 1)).
NF4 = Codebook(
    "NF4",
    tuple(
        float(x)
        for x in (
            "-1.0 -0.6961928009986877 -0.5250730514526367 -0.39491748809814453 -0.28444138169288635 "
            "-0.18477343022823334 -0.09105003625154495 0.0 0.07958029955625534 0.16093020141124725 "
            "0.24611230194568634 0.33791524171829224 0.44070982933044434 0.5626170039176941 "
            "0.7229568362236023 1.0"
        ).split()
    ),
)
#: bitsandbytes' FP4 (``get_4bit_type("fp4")``: 1 sign, 2 exponent, 1 mantissa bit, bias 2,
#: in bit-pattern order, divided by its largest value 12; 0 and -0 are one value).
FP4 = Codebook(
    "FP4", tuple(x / 12 for x in (0, 0.0625, 8, 12, 4, 6, 2, 3, -0.0, -0.0625, -8, -12, -4, -6, -2, -3))
)
#: The built-in tables by their ``--scheme`` names.
CODEBOOKS = {"NF4": NF4, "FP4": FP4}


@dataclass(frozen=True)
class CodebookScheme:
    """What a codebook quantizer claims: the table, the blocks sharing an
    absmax (``PerGroup(64)``: bitsandbytes' default ``blocksize``), and the
    precisions of :class:`~aftertrain.checks.schemes.QuantScheme` (the copy
    quantized, ``input_dtype``; the stored absmax, ``scale_dtype``; the
    ``w_hat`` returned, ``output_dtype``: bitsandbytes dequantizes to the
    module's float16)."""

    codebook: Codebook
    granularity: SchemeGranularity | PerBlock = PerGroup(64)
    input_dtype: torch.dtype | None = None
    scale_dtype: torch.dtype | None = None
    output_dtype: torch.dtype | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.codebook, Codebook):
            raise ValueError(f"codebook must be a Codebook (NF4, FP4 or your own), got {self.codebook!r}")
        if not isinstance(
            self.granularity, PerTensor | PerAxis | PerGroup | PerBlock
        ) or self.granularity == PerGroup(None):
            raise ValueError(
                "granularity must be PerTensor(), PerAxis(axis), PerGroup(blocksize) or PerBlock(blocksize), "
                f"got {self.granularity!r}"
            )
        check_low_precision(self.input_dtype, "input_dtype")
        check_low_precision(self.scale_dtype, "scale_dtype")
        check_low_precision(self.output_dtype, "output_dtype")

    def __str__(self) -> str:
        """The form ``--scheme`` reads back: ``NF4 PerGroup(64) input=float16``."""
        return f"{self.codebook.name} {self.granularity}{scheme_options(self)}"

    @property
    def bits(self) -> int:
        """The bits an index takes: 4 for a table of 16."""
        return max(1, (len(self.codebook.values) - 1).bit_length())


def quantize_codebook(w: torch.Tensor, scheme: CodebookScheme) -> tuple[torch.Tensor, ...]:
    """A correct codebook quantizer in float32: ``(w_hat, codes, absmax,
    None)``, ``codes`` the index of the entry nearest ``w / absmax`` (the
    first at a tie), ``absmax`` one per block (numbered as
    :func:`~aftertrain.checks.schemes.group_index`); an all-zero block is 0."""
    if not isinstance(scheme, CodebookScheme):
        raise ValueError(f"scheme must be a CodebookScheme, got {scheme!r}")
    w = check_weight("w", w)
    if scheme.input_dtype is not None:
        w = w.to(scheme.input_dtype).float()
    index, n = group_index(tuple(w.shape), scheme.granularity)
    amax = w.abs().new_zeros(n).scatter_reduce(0, index.reshape(-1), w.abs().reshape(-1), "amax")
    if scheme.scale_dtype is not None:
        amax = amax.to(scheme.scale_dtype).float()
    t = scheme.codebook.table().float()
    x = w / amax.clamp_min(SCALE_FLOOR)[index]
    codes = (x.unsqueeze(-1) - t).abs().argmin(-1)
    w_hat = t[codes] * amax[index]
    if scheme.output_dtype is not None:
        w_hat = w_hat.to(scheme.output_dtype).float()
    return w_hat, codes.float(), amax, None


@dataclass(frozen=True)
class _View:
    """The scheme's view of ``w`` per element, float64: the copy quantized,
    the block's ``amax``, how far its stored ``amax`` may be off (``drift``),
    ``judged`` (a normal ``amax``) and ``edge`` (a subnormal one)."""

    w: torch.Tensor
    amax: torch.Tensor
    drift: torch.Tensor
    judged: torch.Tensor
    edge: torch.Tensor

    @classmethod
    def of(cls, w: torch.Tensor, scheme: CodebookScheme) -> _View:
        over = torch.zeros(w.shape, dtype=torch.bool)
        if scheme.input_dtype is not None:
            low = w.to(scheme.input_dtype).float()
            over = ~torch.isfinite(low)
            w = torch.where(over, w, low)
        index, n = group_index(tuple(w.shape), scheme.granularity)
        i = index.reshape(-1)
        wd = w.double()
        amax = wd.new_zeros(n).scatter_reduce(0, i, wd.abs().reshape(-1), "amax")
        drift = torch.zeros_like(amax)
        if scheme.scale_dtype is not None:
            drift = (amax.float().to(scheme.scale_dtype).double() - amax).abs().nan_to_num(0.0, 0.0, 0.0)
        edge = ((amax > 0) & (amax < SCALE_FLOOR)) | torch.zeros(n, dtype=torch.bool).scatter_reduce(
            0, i, over.reshape(-1), "amax"
        )
        if scheme.output_dtype is not None:
            drift = drift + output_slack(scheme.output_dtype, amax)
            edge |= amax > torch.finfo(scheme.output_dtype).max
        return cls(wd, amax[index], drift[index], (amax >= SCALE_FLOOR)[index] & ~edge[index], edge[index])

    def severity(self, bad: torch.Tensor) -> str:
        return FAILURE if bool((bad & ~self.edge).any()) else EDGE


def check_codebook_case(report: Report, quantize, case: str, w: torch.Tensor, scheme: CodebookScheme) -> None:
    """Every row of one case under a codebook scheme (module docstring)."""
    raw = call_quantizer(quantize, w, scheme)
    view = _View.of(w, scheme)
    g = scheme.granularity
    ragged = isinstance(g, PerGroup) and w.shape[1] % g.group_size != 0
    if isinstance(raw, Exception):
        if ragged and is_refusal(raw):
            report.add(refused_row(case, raw))
            return
        at_edge = bool(view.edge.any())
        detail = f"raised {describe_exception(raw)}" + (
            " (on a case reaching the format's edge)" if at_edge else ""
        )
        report.add(Row(case, "output", False, detail=detail, severity=EDGE if at_edge else FAILURE))
        return
    if isinstance(raw, str):
        report.add(Row(case, "output", False, detail=raw))
        return
    w_hat = raw[0].detach().double()
    bad = ~torch.isfinite(w_hat)
    rows = Report(case)
    rows.add(
        Row(
            case,
            "output",
            not bool(bad.any()),
            value=float(bad.sum()),
            bound=0.0,
            detail=f"{int(bad.sum())} values not finite" if bad.any() else "",
            severity=view.severity(bad),
        )
    )
    judge_codebook(rows, case, view, w_hat, raw, scheme)
    fits = None
    if any(r.outcome == FAILURE for r in rows.rows):
        fits = next((other for other in _others(scheme) if codebook_fits(w, raw, other)), None)
    for row in rows.rows:
        if fits is not None and row.outcome == FAILURE:
            row = replace(
                row,
                severity=MISMATCH,
                fits=str(fits),
                detail=f"{row.detail}; looks like {fits} (declare {fits})",
            )
        report.add(row)


def _others(scheme: CodebookScheme) -> list[CodebookScheme]:
    """The conventions a codebook output may follow instead of ``scheme``'s:
    the other built-in table, blocks of the flattened weight, a float16 or
    bfloat16 copy, absmax or output."""
    others = [replace(scheme, codebook=c) for c in CODEBOOKS.values() if c != scheme.codebook]
    if isinstance(scheme.granularity, PerGroup):  # bitsandbytes blocks the flattened weight
        others.append(replace(scheme, granularity=PerBlock(scheme.granularity.group_size)))
    for dtype in (torch.float16, torch.bfloat16):
        if scheme.input_dtype is None:
            others.append(replace(scheme, input_dtype=dtype))
        if scheme.scale_dtype is None:
            others.append(replace(scheme, scale_dtype=dtype))
        if scheme.output_dtype is None:
            others.append(replace(scheme, output_dtype=dtype))
    return others


def codebook_fits(w: torch.Tensor, raw: tuple, scheme: CodebookScheme) -> bool:
    """Whether the output ``raw[0]`` (finite) passes every row judging it alone
    under ``scheme`` but at the format's edge."""
    w_hat = raw[0].detach().double()
    view = _View.of(w, scheme)
    if not bool(view.judged.any()) or not bool(torch.isfinite(w_hat[~view.edge]).all()):
        return False
    scratch = Report("scratch")
    judge_codebook(scratch, "", view, w_hat, (raw[0],), scheme)
    return all(r.outcome != FAILURE for r in scratch.rows)


def judge_codebook(report: Report, case: str, view: _View, w_hat: torch.Tensor, raw: tuple, scheme) -> None:
    """The rows judging one output alone: table, nearest, zero, codes and scale, edge."""
    t = scheme.codebook.table()
    amax = view.amax.clamp_min(SCALE_FLOOR)
    x, y = view.w / amax, w_hat / amax
    slack = 2 * U + (view.drift + T.QUANT_SUBNORMAL_HALF) / amax
    k = (y.unsqueeze(-1) - t).abs().argmin(-1)
    off = (y - t[k]).abs()
    bad = view.judged & ~(off <= slack)
    report.add(
        Row(
            case,
            "table",
            not bool(bad.any()),
            value=worst(off[view.judged]),
            severity=view.severity(bad),
            detail=f"w_hat / amax is {worst(off[view.judged]):.4g} off every {scheme.codebook.name} value"
            if bad.any()
            else "",
        )
    )
    dist = (x.unsqueeze(-1) - t).abs()
    excess = dist.gather(-1, k.unsqueeze(-1)).squeeze(-1) - dist.min(-1).values
    bad = view.judged & ~(excess <= 2 * slack)
    report.add(
        Row(
            case,
            "nearest",
            not bool(bad.any()),
            value=worst(excess[view.judged]),
            severity=view.severity(bad),
            detail=f"an entry {worst(excess[view.judged]):.4g} (in amax) farther than the nearest "
            f"{scheme.codebook.name} value to w / amax"
            if bad.any()
            else "",
        )
    )
    if bool((t == 0).any()):
        check_zero(report, case, view.w, w_hat, view.severity)
    if len(raw) == 4:
        _check_codes(report, case, view, w_hat, raw, scheme, slack)
    if (~view.judged).any():  # an all-zero or subnormal block: |w - w_hat| <= amax
        check_edge(report, case, view.w, w_hat, view.amax, view.judged, view.severity)


def _check_codes(report, case, view, w_hat, raw, scheme, slack) -> None:
    """``t[codes] * scale == w_hat`` and ``scale`` the block's amax."""
    out = as_output(raw, view.w.float(), scheme)
    codes, n = raw[1].detach(), len(scheme.codebook.values)
    valid = (codes == torch.round(codes)) & (codes >= 0) & (codes < n)
    report.add(
        Row(
            case,
            "codes",
            bool(valid.all()),
            severity=view.severity(~valid),
            detail="" if valid.all() else f"codes are not indices in [0, {n - 1}]",
        )
    )
    if isinstance(out, str) or out.scale is None or not bool(valid.all()):
        return
    t = scheme.codebook.table()
    amax = view.amax.clamp_min(SCALE_FLOOR)
    gap = (t[codes.long()] * out.scale - w_hat).abs() / amax
    bad = view.judged & ~(gap <= slack)
    report.add(
        Row(
            case,
            "codes match w_hat",
            not bool(bad.any()),
            value=worst(gap[view.judged]),
            severity=view.severity(bad),
            detail="w_hat is not table[codes] * scale" if bad.any() else "",
        )
    )
    rel = (out.scale.abs() - view.amax).abs() / amax
    bad = view.judged & ~(rel <= 4 * U + view.drift / amax)
    report.add(
        Row(
            case,
            "scale",
            not bool(bad.any()),
            value=worst(rel[view.judged]),
            bound=4 * U,
            severity=view.severity(bad),
            detail=f"a scale is {worst(rel[view.judged]):.4g} (relative) off its block's absmax"
            if bad.any()
            else "",
        )
    )
