"""Check a symmetric weight quantizer against part 3's rule (Q1).

The protocol. ``quantize(w, bits, granularity)`` takes

* ``w``: a float32 tensor of shape ``(rows, cols)``, finite;
* ``bits``: an int in 2..8, ``qmax = 2**(bits-1) - 1``;
* ``granularity``: :class:`aftertrain.quant.Granularity`, ``PER_TENSOR`` (one
  scale) or ``PER_CHANNEL`` (one scale per row, axis 0: a Linear's output
  feature);

and returns the dequantized tensor ``w_hat`` (floating point, shape of ``w``),
or a tuple ``(w_hat, codes, scales)`` with integer-valued ``codes`` of ``w``'s
shape and ``scales`` of shape ``()``/``(1,)`` or ``(rows,)``/``(rows, 1)``.
The quantizer claims the article's symmetric absmax rule: ``scale = max|w| /
qmax`` over the tensor or the row, ``w_hat = round(w / scale) * scale`` (any
rounding of halves). A row (or tensor) whose largest magnitude is below
``qmax`` times the smallest normal float32 has a subnormal scale: there the
quantizer may floor the scale, and only the edge guarantees apply.

The guarantees checked, per case of the battery, width and granularity:

* ``output``: no exception, shape kept, every value finite;
* ``round-trip``: ``|w - w_hat| <= scale/2 (1 + 8 qmax u) + 2**-149``, ``u =
  2**-24`` (derivation in :mod:`aftertrain.tolerances`), ``scale`` the
  article's, computed here in float64 (normal rows);
* ``grid``: ``w_hat / scale`` is an integer in ``[-qmax, qmax]`` up to ``4 qmax
  u`` (normal rows); with codes, the codes are integers in ``[-qmax, qmax]``
  and ``w_hat`` equals ``codes * scales`` up to the same slack;
* ``extremes``: the largest magnitude of each normal row (tensor) maps to
  ``+-qmax``;
* ``idempotent``: quantizing ``w_hat`` again gives the same codes;
* ``odd``: ``quantize(-w) == -quantize(w)`` exactly;
* ``zero``: ``w == 0`` gives ``w_hat == 0`` and no sign flips anywhere;
* ``edge``: on subnormal-scale rows ``|w - w_hat| <= max|w|`` of the row (0 is
  allowed, garbage is not).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import torch

from aftertrain import tolerances as T
from aftertrain.checks.report import Report, Row
from aftertrain.quant.primitives import (
    Granularity,
    _check_bits,
    fake_quantize,
    quantize_codes,
)

QuantizerOutput = torch.Tensor | tuple[torch.Tensor, torch.Tensor, torch.Tensor]
Quantizer = Callable[[torch.Tensor, int, Granularity], QuantizerOutput]

DEFAULT_BITS = (2, 3, 4, 5, 6, 7, 8)
TINY = torch.finfo(torch.float32).tiny
FLOAT32_MAX = torch.finfo(torch.float32).max


def reference_quantizer(w: torch.Tensor, bits: int, granularity: Granularity) -> QuantizerOutput:
    """aftertrain's own quantizer in the kit's protocol: ``(w_hat, codes, scales)``."""
    codes, s = quantize_codes(w, bits, granularity)
    return fake_quantize(w, bits, granularity), codes, s


def battery(bits: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """The default cases at ``bits``: float32 matrices, deterministic in ``seed``.

    Gaussian; heavy-tailed with a negative extreme; exact ties (every ``w /
    scale`` but the largest a half-integer, per row); rows of mixed scales;
    all-zero rows; an all-zero tensor; subnormal rows beside a normal one;
    an all-subnormal tensor; float32's largest values; a single element.
    """
    if isinstance(bits, bool) or not isinstance(bits, int) or not 2 <= bits <= 8:
        raise ValueError(f"bits must be an int in [2, 8], got {bits!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an int in [0, 2**64), got {seed!r}")
    g = torch.Generator().manual_seed(seed)
    qmax = 2 ** (bits - 1) - 1
    gauss = torch.randn(8, 16, generator=g)
    heavy = torch.randn(6, 12, generator=g) ** 3
    heavy[2, 5] = -40.0
    # Ties: row r has scale 2**-r and values (k + 1/2) * scale, |k + 1/2| < qmax.
    k = torch.randint(-qmax, qmax, (5, 9), generator=g).float() + 0.5
    row_scale = 2.0 ** -torch.arange(5.0).unsqueeze(1)
    ties = torch.cat([k, torch.full((5, 1), float(qmax))], dim=1) * row_scale
    mixed = torch.randn(4, 10, generator=g) * torch.tensor([[1e-3], [1.0], [1e3], [1e-30]])
    zero_rows = torch.randn(5, 8, generator=g)
    zero_rows[[1, 3]] = 0.0
    subnormal = torch.randn(4, 8, generator=g)
    subnormal[1:] = torch.tensor([1e-40, -3e-41, 1e-45, 0.0, 7e-39, -1e-39, 2e-44, 0.0])
    return {
        "gaussian": gauss,
        "heavy-tailed": heavy,
        "exact ties": ties,
        "mixed row scales": mixed,
        "all-zero rows": zero_rows,
        "all zero": torch.zeros(3, 4),
        "subnormal rows": subnormal,
        "all subnormal": torch.tensor([[1e-40, -2e-41, 0.0, 3e-45], [5e-39, 0.0, -1e-44, 1e-42]]),
        "float32 max": torch.tensor([[FLOAT32_MAX, -FLOAT32_MAX / 3, 1.0, 0.0],
                                     [-FLOAT32_MAX, 2e38, -1e-3, 5.0]]),
        "single element": torch.tensor([[-0.75]]),
    }


def _call(quantize: Quantizer, w: torch.Tensor, bits: int, g: Granularity):
    """(w_hat float64, codes float64 or None, error line or None)."""
    try:
        out = quantize(w.clone(), bits, g)
    except Exception as e:  # the kit reports any exception as a failure
        return None, None, f"raised {type(e).__name__}: {e}"
    codes = None
    if isinstance(out, tuple):
        if len(out) != 3:
            return None, None, f"returned a tuple of {len(out)}, not (w_hat, codes, scales)"
        out, codes, _scales = out
    if not isinstance(out, torch.Tensor) or not out.is_floating_point():
        return None, None, f"returned {type(out).__name__}, not a floating-point tensor"
    if out.shape != w.shape:
        return None, None, f"returned shape {tuple(out.shape)} for {tuple(w.shape)}"
    if codes is not None:
        if not isinstance(codes, torch.Tensor) or codes.shape != w.shape:
            return None, None, "codes must be a tensor of w's shape"
        codes = codes.detach().double()
    return out.detach().double(), codes, None


def _reference_scale(w: torch.Tensor, bits: int, g: Granularity) -> torch.Tensor:
    """The article's scale in float64, as a column ``(rows, 1)``."""
    a = w.double().abs()
    m = a.amax().expand(w.shape[0], 1) if g is Granularity.PER_TENSOR else a.amax(1, keepdim=True)
    return m / (2 ** (bits - 1) - 1)


def _worst(x: torch.Tensor) -> float:
    return float(x.max()) if x.numel() else 0.0


def check_quantizer(
    quantize: Quantizer,
    *,
    bits: Iterable[int] = DEFAULT_BITS,
    granularities: Iterable[Granularity] = tuple(Granularity),
    cases: Mapping[str, torch.Tensor] | None = None,
    seed: int = 0,
    name: str | None = None,
) -> Report:
    """Run the battery (or ``cases``) through ``quantize`` and check every
    guarantee of the module docstring; a :class:`Report` of every row.

    Args:
        quantize: the quantizer, protocol in the module docstring.
        bits: widths to check, each in 2..8.
        granularities: which of :class:`Granularity` the quantizer claims.
        cases: ``{name: float32 (rows, cols) tensor}`` replacing the default
            :func:`battery` (e.g. matrices drawn by hypothesis).
        seed: seed of the default battery.
        name: the subject named in the report (default ``quantize``'s name).
    """
    if not callable(quantize):
        raise ValueError(f"quantize must be a callable (w, bits, granularity) -> w_hat, "
                         f"got {quantize!r}")
    bits = list(bits)
    if not bits:
        raise ValueError("bits must hold at least one width in [2, 8]")
    for b in bits:
        _check_bits(b)
    granularities = list(granularities)
    if not granularities or not all(isinstance(g, Granularity) for g in granularities):
        raise ValueError(f"granularities must be a non-empty list of Granularity, "
                         f"got {granularities!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an int in [0, 2**64), got {seed!r}")
    if cases is not None:
        if not isinstance(cases, Mapping) or not cases:
            raise ValueError("cases must be a non-empty dict of name -> tensor")
        for case, w in cases.items():
            if (not isinstance(w, torch.Tensor) or w.dtype != torch.float32 or w.dim() != 2
                    or w.numel() == 0 or not bool(torch.isfinite(w).all())):
                raise ValueError(f"cases: {case!r} must be a finite, non-empty 2-D float32 "
                                 f"tensor")
    report = Report(name or getattr(quantize, "__name__", repr(quantize)))
    for b in bits:
        for case, w in (battery(b, seed) if cases is None else cases).items():
            for g in granularities:
                _check_case(report, quantize, f"{case}, {b} bits, {g.value}", w, b, g)
    return report


def _check_case(report: Report, quantize: Quantizer, case: str, w: torch.Tensor, bits: int,
                g: Granularity) -> None:
    qmax = 2 ** (bits - 1) - 1
    u = T.FLOAT32_UNIT_ROUNDOFF
    w_hat, codes, error = _call(quantize, w, bits, g)
    if error is not None:
        report.add(Row(case, "output", False, detail=error))
        return
    finite = bool(torch.isfinite(w_hat).all())
    report.add(Row(case, "output", finite, value=float((~torch.isfinite(w_hat)).sum()), bound=0.0,
                   detail="" if finite else f"{int((~torch.isfinite(w_hat)).sum())} values "
                                            f"not finite"))
    if not finite:
        return
    wd = w.double()
    scale = _reference_scale(w, bits, g)  # (rows, 1)
    normal = (scale >= TINY).squeeze(1)  # rows whose scale is a normal float32
    err = (wd - w_hat).abs()

    # round-trip, on normal rows
    bound = scale / 2 * (1 + T.QUANT_ROUND_TRIP_SLACK_ULPS * qmax * u) + T.QUANT_SUBNORMAL_HALF
    excess = (err / bound)[normal]
    ok = bool((excess <= 1).all())
    report.add(Row(case, "round-trip", ok, value=_worst(excess), bound=1.0,
                   detail="" if ok else f"|w - w_hat| reaches {_worst(excess):.4g} x the bound "
                                        f"scale/2 (1 + 8 qmax u)"))

    # grid and codes in range, on normal rows
    steps = (w_hat / scale)[normal]
    k = torch.round(steps)
    off = (steps - k).abs()
    grid_slack = T.QUANT_GRID_SLACK_ULPS * qmax * u + T.QUANT_SUBNORMAL_HALF / scale[normal]
    ok = bool((off <= grid_slack).all()) and bool((k.abs() <= qmax).all())
    report.add(Row(case, "grid", ok, value=_worst(off), bound=float(grid_slack.max())
                   if grid_slack.numel() else 0.0,
                   detail="" if ok else f"w_hat / scale is {_worst(off):.4g} off an integer or "
                                        f"past qmax {qmax} (largest |k| {_worst(k.abs()):.0f})"))
    if codes is not None:
        integral = bool((codes == torch.round(codes)).all())
        in_range = bool((codes.abs() <= qmax).all())
        ok = integral and in_range
        report.add(Row(case, "codes", ok, value=_worst(codes.abs()), bound=float(qmax),
                       detail="" if ok else f"codes integral {integral}, largest "
                                            f"|code| {_worst(codes.abs()):.0f} (qmax {qmax})"))
        if normal.any():
            agree = bool((codes[normal] == k).all())
            report.add(Row(case, "codes match w_hat", agree,
                           detail="" if agree else "w_hat is not codes * scale"))

    # extremes: the largest magnitude of each normal row (or the tensor) maps to +-qmax
    if normal.any():
        if g is Granularity.PER_TENSOR:
            i = int(wd.abs().argmax())
            got = torch.round(w_hat.reshape(-1)[i] / scale[0, 0]).reshape(1)
            want = (qmax * torch.sign(wd.reshape(-1)[i])).reshape(1)
        else:
            idx = wd.abs().argmax(dim=1, keepdim=True)
            got = torch.round(w_hat.gather(1, idx) / scale).squeeze(1)[normal]
            want = (qmax * torch.sign(wd.gather(1, idx))).squeeze(1)[normal]
        ok = bool((got == want).all())
        report.add(Row(case, "extremes", ok, detail="" if ok else
                       f"largest magnitude maps to {got[got != want][:3].tolist()} steps, "
                       f"not {want[got != want][:3].tolist()}"))

    # zero to zero, signs kept
    zero_ok = bool((w_hat[wd == 0] == 0).all())
    sign_ok = bool((torch.sign(w_hat) * torch.sign(wd) >= 0).all())
    report.add(Row(case, "zero", zero_ok and sign_ok, detail="" if zero_ok and sign_ok else
                   ("a zero weight became non-zero; " if not zero_ok else "")
                   + ("a sign flipped" if not sign_ok else "")))

    # edge rows (subnormal scale): error at most the row's largest magnitude
    if (~normal).any():
        row_max = wd.abs().amax(1, keepdim=True).expand_as(wd)
        ratio = (err - row_max).clamp_min(0)[~normal]
        ok = bool((ratio <= T.QUANT_SUBNORMAL_HALF).all())
        report.add(Row(case, "edge", ok, value=_worst(ratio), bound=T.QUANT_SUBNORMAL_HALF,
                       detail="" if ok else f"on a subnormal-scale row |w - w_hat| exceeds "
                                            f"max|w| by {_worst(ratio):.4g}"))

    # odd symmetry, exactly
    neg, _, error = _call(quantize, -w, bits, g)
    if error is not None:
        report.add(Row(case, "odd", False, detail=f"on -w: {error}"))
    else:
        ok = torch.equal(neg, -w_hat)
        report.add(Row(case, "odd", ok, detail="" if ok else
                       f"quantize(-w) != -quantize(w) at {int((neg != -w_hat).sum())} elements"))

    # idempotence: the codes of w_hat (on the original's grid) do not move
    again, _, error = _call(quantize, w_hat.float(), bits, g)
    if error is not None:
        report.add(Row(case, "idempotent", False, detail=f"on w_hat: {error}"))
    elif normal.any():
        k2 = torch.round((again / scale)[normal])
        ok = torch.equal(k2, k)
        report.add(Row(case, "idempotent", ok, detail="" if ok else
                       f"re-quantizing w_hat moves {int((k2 != k).sum())} codes"))

