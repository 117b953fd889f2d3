"""Check a weight quantizer against the scheme it claims (Q1 and the ecosystem's schemes).

The protocol. ``quantize(w, scheme)`` takes ``w``, a finite float32 tensor of
shape ``(rows, cols)``, and a :class:`~aftertrain.checks.schemes.QuantScheme`
(bits, mapping, granularity, scale floor: formulas in
:mod:`aftertrain.checks.schemes`), and returns the dequantized ``w_hat``
(floating point, ``w``'s shape) or ``(w_hat, codes, scale, zero_point)``:
integer-valued ``codes`` of ``w``'s shape, and ``scale`` and ``zero_point``
(None for 0; ASYMMETRIC_FLOAT_SHIFT: the shift, ``w_hat = codes * scale -
shift``, quanto's form) either with one entry per group (numbered row-major, as
:func:`~aftertrain.checks.schemes.group_index`) or broadcastable to ``w``.

The article's protocol still works: without ``schemes``,
``check_quantizer(quantize)`` calls ``quantize(w, bits, granularity)`` with
an :class:`aftertrain.quant.Granularity` (``PER_TENSOR`` or ``PER_CHANNEL``,
one scale per row) returning ``w_hat`` or ``(w_hat, codes, scales)``, and
judges it as SYMMETRIC ``PerTensor()`` / ``PerAxis(0)``.

The guarantees, per case of the battery and scheme, with the reference scale
``s`` and zero point ``z`` of each group in float64, ``u = 2**-24`` and ``R``
the group's ``max|w|`` (symmetric) or ``4 max|w|`` (asymmetric: the range
``hi - lo`` and the shift each reach ``2 max|w|``):

* ``output``: no exception, shape kept, every value finite (a group size
  that does not divide the row may be refused with a ValueError instead:
  ``refused``);
* ``round-trip``: ``|w - w_hat| <= s/2 + 4 u R + 2**-149`` (for SYMMETRIC
  exactly the article's ``s/2 (1 + 8 qmax u) + 2**-149``, derivation in
  :mod:`aftertrain.tolerances`); a group whose scale is the declared floor is
  judged at the floor and its cost (the error over the unfloored half step)
  is the row's value (``floor``);
* ``grid``: ``w_hat / s + z`` is an integer in the mapping's code range up
  to ``4 u R / s + 2**-149 / s``;
* ``codes``: returned codes are integers in the code range (asymmetric: the
  signed ``[qmin, qmax]`` or the unsigned ``[0, 2**bits - 1]``) and
  ``w_hat == (codes - z) * scale`` (``codes * scale - shift``); ``scale``: a returned scale equals its
  own group's reference scale within ``4 u``; ``zero point``: ASYMMETRIC's
  is an integer;
* ``extremes``: the smallest and largest ``w`` of each group map to the
  nearest code in range of ``w / s + z`` (either neighbour at a tie);
* ``zero``: where the mapping keeps zero, 0 stays 0 and no sign flips;
* ``odd``: SYMMETRIC only, ``quantize(-w) == -quantize(w)`` exactly;
* ``idempotent``: where the mapping says so, quantizing ``w_hat`` keeps its codes;
* ``edge``: in a group whose scale would be subnormal (and no floor above
  that is declared), ``|w - w_hat| <= max|w|`` of the group (symmetric: 0
  is allowed, garbage is not) or ``2 max|w|`` (asymmetric: any value of the
  group's range).

An element held at +-float32 max because its code's value lies past it
(SYMMETRIC_FULL's ``qmin * s`` at ``w = -3.4e38``) is exempt from the grid.

A failed ``round-trip``, ``grid`` or ``extremes`` line says which other
scheme the output fits, if one does ("looks like SYMMETRIC_FULL").
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from collections.abc import Mapping as MappingABC
from dataclasses import dataclass, replace

import torch

from aftertrain import tolerances as T
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
from aftertrain.quant.primitives import (
    FLOAT32_MAX,
    SCALE_FLOOR,
    Granularity,
    _check_bits,
    fake_quantize,
    quantize_codes,
)

QuantizerOutput = torch.Tensor | tuple[torch.Tensor, ...]
Quantizer = Callable[[torch.Tensor, QuantScheme], QuantizerOutput]
ArticleQuantizer = Callable[[torch.Tensor, int, Granularity], QuantizerOutput]

DEFAULT_BITS = (2, 3, 4, 5, 6, 7, 8)
U = T.FLOAT32_UNIT_ROUNDOFF
#: torchao's scale floor for int8 weights (float32's machine epsilon, 1.19e-7).
FLOAT32_EPS = torch.finfo(torch.float32).eps
#: The article's granularities as schemes' granularities.
ARTICLE_GRANULARITY = {Granularity.PER_TENSOR: PerTensor(), Granularity.PER_CHANNEL: PerAxis(0)}


def reference_quantizer(w: torch.Tensor, bits: int, granularity: Granularity) -> QuantizerOutput:
    """aftertrain's own quantizer in the article's protocol: ``(w_hat, codes, scales)``."""
    codes, s = quantize_codes(w, bits, granularity)
    return fake_quantize(w, bits, granularity), codes, s


def battery(bits: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """The default cases of per-tensor and per-axis schemes at ``bits``:
    float32 matrices, deterministic in ``seed``.

    Gaussian; heavy-tailed with a negative extreme; exact ties (every ``w /
    scale`` but the largest a half-integer, per row, for SYMMETRIC); rows of
    mixed scales; all-zero rows; an all-zero tensor; subnormal rows beside a
    normal one; an all-subnormal tensor; float32's largest values; a single
    element.
    """
    _check_bits(bits)
    _check_seed(seed)
    g = torch.Generator().manual_seed(seed)
    qmax = 2 ** (bits - 1) - 1
    gauss = torch.randn(8, 16, generator=g)
    heavy = torch.randn(6, 12, generator=g) ** 3
    heavy[2, 5] = -40.0
    mixed = torch.randn(4, 10, generator=g) * torch.tensor([[1e-3], [1.0], [1e3], [1e-30]])
    zero_rows = torch.randn(5, 8, generator=g)
    zero_rows[[1, 3]] = 0.0
    subnormal = torch.randn(4, 8, generator=g)
    subnormal[1:] = torch.tensor([1e-40, -3e-41, 1e-45, 0.0, 7e-39, -1e-39, 2e-44, 0.0])
    return {
        "gaussian": gauss,
        "heavy-tailed": heavy,
        "exact ties": _ties(5, 9, qmax, g),
        "mixed row scales": mixed,
        "all-zero rows": zero_rows,
        "all zero": torch.zeros(3, 4),
        "subnormal rows": subnormal,
        "all subnormal": torch.tensor([[1e-40, -2e-41, 0.0, 3e-45], [5e-39, 0.0, -1e-44, 1e-42]]),
        "float32 max": torch.tensor([[FLOAT32_MAX, -FLOAT32_MAX / 3, 1.0, 0.0],
                                     [-FLOAT32_MAX, 2e38, -1e-3, 5.0]]),
        "single element": torch.tensor([[-0.75]]),
    }


def _ties(rows: int, cols: int, qmax: int, g: torch.Generator) -> torch.Tensor:
    """Row r: scale 2**-r, values (k + 1/2) * scale with |k + 1/2| < qmax, then qmax * scale."""
    k = torch.randint(-qmax, qmax, (rows, cols), generator=g).float() + 0.5
    row_scale = 2.0 ** -torch.arange(float(rows)).unsqueeze(1)
    return torch.cat([k, torch.full((rows, 1), float(qmax))], dim=1) * row_scale


def group_battery(bits: int, group_size: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """The default cases of a ``PerGroup(group_size)`` scheme: rows of two
    groups unless said otherwise, deterministic in ``seed``.

    Gaussian; heavy-tailed with a negative extreme; exact ties per group;
    groups of scales 1e-3 and 1e3 side by side in every row (a scale taken
    from another group is off by 1e6); an all-zero group and an all-zero
    row; a subnormal group beside a normal one; float32's largest values;
    one group; rows of 1.5 groups (the group size does not divide the row).
    """
    _check_bits(bits)
    _check_seed(seed)
    g = torch.Generator().manual_seed(seed)
    n, qmax = group_size, 2 ** (bits - 1) - 1
    heavy = torch.randn(3, 2 * n, generator=g) ** 3
    heavy[1, -1] = -40.0
    scales = torch.tensor([1e-3, 1e3]).repeat_interleave(n)
    zero = torch.randn(3, 2 * n, generator=g)
    zero[0, n:] = 0.0
    zero[2] = 0.0
    subnormal = torch.randn(2, 2 * n, generator=g)
    subnormal[1, :n] = 1e-40 * torch.randn(n, generator=g)
    huge = torch.randn(2, 2 * n, generator=g)
    two = min(2, n)  # max - min overflows float32 where a group holds both
    huge[0, :two] = torch.tensor([FLOAT32_MAX, -FLOAT32_MAX / 3])[:two]
    huge[1, n:n + two] = torch.tensor([-FLOAT32_MAX, 2e38])[:two]
    cases = {
        "gaussian": torch.randn(4, 2 * n, generator=g),
        "heavy-tailed": heavy,
        "exact ties": _ties(4, n - 1, qmax, g).reshape(2, 2 * n) if n > 1 else _ties(2, 0, qmax, g),
        "group scales 1e-3 and 1e3": torch.randn(3, 2 * n, generator=g) * scales,
        "all-zero group and row": zero,
        "subnormal group": subnormal,
        "float32 max": huge,
        "one group": torch.randn(1, n, generator=g),
    }
    if n > 1:
        cases["group size does not divide the row"] = torch.randn(2, n + n // 2, generator=g)
    return cases


def _check_seed(seed: int) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")


def scheme_battery(scheme: QuantScheme, seed: int = 0) -> dict[str, torch.Tensor]:
    """The default cases of ``scheme``: :func:`group_battery` per group,
    :func:`battery` otherwise."""
    if isinstance(scheme.granularity, PerGroup):
        return group_battery(scheme.bits, scheme.granularity.group_size, seed)
    return battery(scheme.bits, seed)


def check_quantizer(
    quantize: Quantizer | ArticleQuantizer,
    *,
    schemes: Iterable[QuantScheme] | None = None,
    bits: Iterable[int] | None = None,
    granularities: Iterable[Granularity] | None = None,
    cases: MappingABC[str, torch.Tensor] | None = None,
    seed: int = 0,
    name: str | None = None,
) -> Report:
    """Run the battery (or ``cases``) through ``quantize`` under every scheme
    and check every guarantee of the module docstring; a :class:`Report`.

    Args:
        quantize: ``quantize(w, scheme)`` with ``schemes``; without, the
            article's ``quantize(w, bits, granularity)``.
        schemes: the :class:`QuantScheme` values the quantizer claims.
        bits: article protocol only: widths in 2..8 (default all).
        granularities: article protocol only: :class:`Granularity` values
            (default both).
        cases: ``{name: finite 2-D float32 tensor}`` replacing the default
            battery (e.g. matrices drawn by hypothesis).
        seed: seed of the default battery.
        name: the subject named in the report (default ``quantize``'s name).
    """
    if not callable(quantize):
        raise ValueError(f"quantize must be a callable (w, scheme) -> w_hat, got {quantize!r}")
    if schemes is None:
        schemes, quantize = _article_schemes(quantize, bits, granularities)
    elif bits is not None or granularities is not None:
        raise ValueError("pass either schemes or the article's bits and granularities, not both")
    schemes = list(schemes)
    if not schemes or not all(isinstance(s, QuantScheme) for s in schemes):
        raise ValueError(f"schemes must be a non-empty list of QuantScheme, got {schemes!r}")
    _check_seed(seed)
    if cases is not None:
        _check_cases(cases)
    report = Report(name or getattr(quantize, "__name__", repr(quantize)))
    for scheme in schemes:
        for case, w in (scheme_battery(scheme, seed) if cases is None else cases).items():
            _check_case(report, quantize, f"{case}, {scheme}", w, scheme)
    return report


def _article_schemes(quantize: ArticleQuantizer, bits, granularities):
    """The article's protocol as SYMMETRIC schemes and a scheme-protocol adapter."""
    bits = list(DEFAULT_BITS if bits is None else bits)
    if not bits:
        raise ValueError("bits must hold at least one width in [2, 8]")
    for b in bits:
        _check_bits(b)
    granularities = list(Granularity if granularities is None else granularities)
    if not granularities or not all(isinstance(g, Granularity) for g in granularities):
        raise ValueError(f"granularities must be a non-empty list of Granularity, "
                         f"got {granularities!r}")
    article = {ARTICLE_GRANULARITY[g]: g for g in granularities}

    @functools.wraps(quantize)
    def adapter(w: torch.Tensor, scheme: QuantScheme) -> QuantizerOutput:
        return quantize(w, scheme.bits, article[scheme.granularity])

    return [QuantScheme(b, Mapping.SYMMETRIC, ARTICLE_GRANULARITY[g])
            for b in bits for g in granularities], adapter


def _check_cases(cases) -> None:
    if not isinstance(cases, MappingABC) or not cases:
        raise ValueError("cases must be a non-empty dict of name -> tensor")
    for case, w in cases.items():
        if (not isinstance(w, torch.Tensor) or w.dtype != torch.float32 or w.dim() != 2
                or w.numel() == 0 or not bool(torch.isfinite(w).all())):
            raise ValueError(f"cases: {case!r} must be a finite, non-empty 2-D float32 tensor")


# --- one case ---------------------------------------------------------------


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


def _check_case(report: Report, quantize: Quantizer, case: str, w: torch.Tensor,
                scheme: QuantScheme) -> None:
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
