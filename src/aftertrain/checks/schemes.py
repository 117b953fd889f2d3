"""Quantization schemes as typed values, in torchao's and optimum-quanto's vocabulary.

A :class:`QuantScheme` says what a weight quantizer claims: ``bits``, a
:class:`Mapping` (how the scale, the zero point and the code range follow
from a group's values) and a granularity (:class:`PerTensor`,
:class:`PerAxis`, :class:`PerGroup`: which elements share a scale), plus the
scale floor the library applies. :func:`qparams` computes the reference
scale and zero point of every group in float64, :func:`quantize_scheme` is a
correct float32 quantizer of every scheme (the kit's reference).

The mappings, with ``qmin = -2**(bits-1)``, ``qmax = 2**(bits-1) - 1`` and a
group's ``lo = min(w)``, ``hi = max(w)``, ``amax = max|w|``; the integer
mappings dequantize ``w_hat = (q - z) * scale``, ASYMMETRIC_FLOAT_SHIFT
``w_hat = q * scale - shift`` (quanto's form: a zero point ``-lo / scale``
overflows float32 for a constant group, whose scale is the floor):

=========================  ====================================  ==============  ===============
mapping                    scale                                 zero point z    codes q
=========================  ====================================  ==============  ===============
SYMMETRIC                  ``amax / qmax`` (the article's)       0               ``[-qmax, qmax]``
SYMMETRIC_FULL             ``amax / ((qmax - qmin) / 2)``        0               ``[qmin, qmax]``
SYMMETRIC_NO_CLIPPING_ERR  ``max(hi+ / qmax, lo- / qmin)``       0               ``[qmin, qmax]``
SYMMETRIC_SIGNED_SCALE     ``+-amax / 2**(bits-1)``              0               ``[qmin, qmax]``
ASYMMETRIC                 ``(hi+ - lo-) / (qmax - qmin)``       integer         ``[qmin, qmax]``
ASYMMETRIC_FLOAT_SHIFT     ``(hi - lo) / (2**bits - 1)``         shift ``-lo``   ``[0, 2**bits-1]``
ASYMMETRIC_FREE_ZERO       ``(hi - lo) / (2**bits - 1)``         any float       ``[0, 2**bits-1]``
=========================  ====================================  ==============  ===============

``hi+ = max(hi, 0)`` and ``lo- = min(lo, 0)``. ASYMMETRIC is torchao's
(``z = qmin - round(lo- / scale)``, so 0 is exactly representable);
ASYMMETRIC_FLOAT_SHIFT is optimum-quanto's default below 8 bits (a float
shift ``-lo``, the grid ``lo + k * scale``, ``k = 0 .. 2**bits - 1``: the
extremes are exact, zero is not). A quantizer that stores ASYMMETRIC codes
unsigned (``[0, 2**bits - 1]`` with ``z`` shifted by ``-qmin``, as quanto's
``zeropoint=True``) describes the same ``w_hat``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import torch

from aftertrain.checks.precision import check_low_precision, scheme_options
from aftertrain.core.validation import check_weight
from aftertrain.quant.primitives import FLOAT32_MAX, MAX_BITS, MIN_BITS, SCALE_FLOOR, qmax_for


class Mapping(enum.Enum):
    """How a group's scale, zero point and code range follow from its values
    (torchao's ``MappingType`` names where torchao has one)."""

    SYMMETRIC = "symmetric"
    SYMMETRIC_FULL = "symmetric-full"
    SYMMETRIC_NO_CLIPPING_ERR = "symmetric-no-clipping-err"
    ASYMMETRIC = "asymmetric"
    ASYMMETRIC_FLOAT_SHIFT = "asymmetric-float-shift"
    #: neural-compressor's ``use_full_range``: ``scale = +-amax / 2**(bits-1)``,
    #: negative when the larger extreme is the positive one, so that extreme
    #: lands exactly on the most negative code ``qmin``.
    SYMMETRIC_SIGNED_SCALE = "symmetric-signed-scale"
    #: hqq's default (``optimize=True``): ASYMMETRIC_FLOAT_SHIFT's scale, a float
    #: zero point in code units (``w_hat = (q - z) * scale``) that an optimiser
    #: moves off the min/max grid; judged by the round trip and the grid alone.
    ASYMMETRIC_FREE_ZERO = "asymmetric-free-zero"

    @property
    def keeps_zero(self) -> bool:
        """0 is on the grid: ``w == 0`` gives ``w_hat == 0``, no sign flips."""
        return self not in (Mapping.ASYMMETRIC_FLOAT_SHIFT, Mapping.ASYMMETRIC_FREE_ZERO)

    @property
    def odd(self) -> bool:
        """``quantize(-w) == -quantize(w)``: only the article's mapping (the
        full range clips ``+(qmax + 1/2)`` to ``qmax`` but rounds
        ``-(qmax + 1/2)`` to ``qmin``)."""
        return self is Mapping.SYMMETRIC

    @property
    def idempotent(self) -> bool:
        """Quantizing ``w_hat`` again keeps its codes: the extremes that set
        the scale land exactly on the grid's ends. Not so for SYMMETRIC_FULL
        (``amax`` maps to ``qmax + 1/2``, clipped) and ASYMMETRIC (the
        extremes are rounded to the grid, which moves the next scale)."""
        return self not in (Mapping.SYMMETRIC_FULL, Mapping.ASYMMETRIC, Mapping.ASYMMETRIC_FREE_ZERO)

    @property
    def symmetric(self) -> bool:
        """Whether the mapping is one of the symmetric ones (SYMMETRIC, SYMMETRIC_FULL,
        SYMMETRIC_NO_CLIPPING_ERR: zero point 0); False for the asymmetric ones."""
        return self in (
            Mapping.SYMMETRIC,
            Mapping.SYMMETRIC_FULL,
            Mapping.SYMMETRIC_NO_CLIPPING_ERR,
            Mapping.SYMMETRIC_SIGNED_SCALE,
        )

    @property
    def float_zero(self) -> bool:
        """The zero point is a float (the shift, or hqq's free zero), not an integer."""
        return self in (Mapping.ASYMMETRIC_FLOAT_SHIFT, Mapping.ASYMMETRIC_FREE_ZERO)


@dataclass(frozen=True)
class PerTensor:
    """One scale for the whole tensor."""

    def __str__(self) -> str:
        return "PerTensor()"


@dataclass(frozen=True)
class PerAxis:
    """One scale per index of ``axis`` (``PerAxis(0)``: per row, a Linear's
    output feature, as torchao's ``PerAxis(0)`` / ``PerRow()``)."""

    axis: int

    def __post_init__(self) -> None:
        if isinstance(self.axis, bool) or self.axis not in (0, 1, -1):
            raise ValueError(f"axis must be 0, 1 or -1 (a 2-D weight), got {self.axis!r}")

    def __str__(self) -> str:
        return f"PerAxis({self.axis})"


@dataclass(frozen=True)
class PerGroup:
    """One scale per ``group_size`` consecutive elements of a row (groups
    along the last axis, as torchao's and quanto's). A row whose length
    ``group_size`` does not divide ends in a shorter group.

    ``PerGroup(None)``: the library picks the group size per weight
    (optimum-quanto's module path: 128, else 96, 64 or 32 dividing the row,
    else the whole row); the kit reads it from the output (the returned
    scale's entries per row, else the smallest group size dividing the row
    that the output fits), says which in a ``group size`` row, and judges
    the case at it."""

    group_size: int | None

    def __post_init__(self) -> None:
        if self.group_size is None:
            return
        if isinstance(self.group_size, bool) or not isinstance(self.group_size, int) or self.group_size < 1:
            raise ValueError(
                f"group_size must be an int >= 1, or None (the library picks it), got {self.group_size!r}"
            )

    def __str__(self) -> str:
        return f"PerGroup({self.group_size})"


@dataclass(frozen=True)
class PerBlock:
    """One scale per ``block_size`` consecutive elements of the flattened
    weight (bitsandbytes' blockwise 4-bit, ``blocksize``): where the block
    size does not divide a row, a block straddles two rows. A codebook
    scheme's granularity (:class:`~aftertrain.checks.codebooks.CodebookScheme`)."""

    block_size: int

    def __post_init__(self) -> None:
        if isinstance(self.block_size, bool) or not isinstance(self.block_size, int) or self.block_size < 1:
            raise ValueError(f"block_size must be an int >= 1, got {self.block_size!r}")

    def __str__(self) -> str:
        return f"PerBlock({self.block_size})"


#: A scheme's granularity in torchao's vocabulary (its ``Granularity`` classes);
#: :class:`aftertrain.quant.Granularity` is the article's two choices.
SchemeGranularity = PerTensor | PerAxis | PerGroup


@dataclass(frozen=True)
class QuantScheme:
    """What a quantizer claims: ``bits`` in 2..8, a :class:`Mapping`, a
    granularity and ``scale_floor``, the smallest scale it uses (torchao:
    float32's eps 1.19e-7; hqq: its step floor 5e-5; aftertrain and the
    default: the smallest normal float32, 1.18e-38). A group whose scale
    would fall below the floor gets the floor: its round trip is judged at
    ``floor / 2``.

    Two precisions, None for float32 (torchao's ``scale_dtype`` name):
    ``input_dtype``, the copy of the weight the library quantizes
    (bitsandbytes' module path quantizes a float16 copy: the guarantees hold
    for ``w.to(input_dtype)``), and ``scale_dtype``, the precision of the
    scale and a float zero point it dequantizes with (neural-compressor's
    ``recover()``: float16 scales; each ``w_hat`` may then move by its code
    times the scale's rounding); ``output_dtype``, the precision of the
    ``w_hat`` returned (torchao's ``dequantize_affine(output_dtype=...)``,
    hqq's ``compute_dtype``, float16 by default; bitsandbytes dequantizes to
    the module's float16): each ``w_hat`` may move by half an ulp there."""

    bits: int
    mapping: Mapping
    granularity: SchemeGranularity
    scale_floor: float = SCALE_FLOOR
    input_dtype: torch.dtype | None = None
    scale_dtype: torch.dtype | None = None
    output_dtype: torch.dtype | None = None

    def __post_init__(self) -> None:
        if (
            isinstance(self.bits, bool)
            or not isinstance(self.bits, int)
            or not MIN_BITS <= self.bits <= MAX_BITS
        ):
            raise ValueError(f"bits must be an int in [{MIN_BITS}, {MAX_BITS}], got {self.bits!r}")
        if not isinstance(self.mapping, Mapping):
            raise ValueError(f"mapping must be one of {[m.name for m in Mapping]}, got {self.mapping!r}")
        if not isinstance(self.granularity, PerTensor | PerAxis | PerGroup):
            raise ValueError(
                f"granularity must be PerTensor(), PerAxis(axis) or "
                f"PerGroup(group_size), got {self.granularity!r}"
            )
        if (
            isinstance(self.scale_floor, bool)
            or not isinstance(self.scale_floor, int | float)
            or not SCALE_FLOOR <= self.scale_floor < 1
        ):
            raise ValueError(
                f"scale_floor must be a float in [{SCALE_FLOOR:.3g}, 1), got {self.scale_floor!r}"
            )
        check_low_precision(self.input_dtype, "input_dtype")
        check_low_precision(self.scale_dtype, "scale_dtype")
        check_low_precision(self.output_dtype, "output_dtype")

    def __str__(self) -> str:
        """The form ``--scheme`` reads back: ``int4 SYMMETRIC_FULL PerGroup(32) floor=eps``."""
        return f"int{self.bits} {self.mapping.name} {self.granularity}{scheme_options(self)}"

    @property
    def granularity_known(self) -> bool:
        """False for ``PerGroup(None)``, whose group size the output shows."""
        return not (isinstance(self.granularity, PerGroup) and self.granularity.group_size is None)

    @property
    def qmax(self) -> int:
        """The largest code of the symmetric grid at ``bits``: ``2**(bits-1) - 1`` (127 at 8
        bits)."""
        return qmax_for(self.bits)

    @property
    def code_range(self) -> tuple[int, int]:
        """The codes the mapping uses: ``[-qmax, qmax]``, ``[0, 2**bits - 1]``
        or ``[qmin, qmax]`` (SYMMETRIC_SIGNED_SCALE: the codes stored; on the
        positive scale's grid a group whose larger extreme is positive spans
        ``[-qmax, qmax + 1]``, :attr:`QParams.codes`)."""
        if self.mapping is Mapping.SYMMETRIC:
            return -self.qmax, self.qmax
        if self.mapping.float_zero:
            return 0, 2**self.bits - 1
        return -self.qmax - 1, self.qmax


def group_index(
    shape: tuple[int, ...], granularity: SchemeGranularity | PerBlock
) -> tuple[torch.Tensor, int]:
    """``(index, n_groups)``: the group of every element of a 2-D weight,
    int64 of ``shape``, numbered row-major (row, then group along the row)."""
    rows, cols = shape
    if isinstance(granularity, PerGroup) and granularity.group_size is None:
        raise ValueError(
            "PerGroup(None) has no group index until the library's group size "
            "is known (check_quantizer reads it from the output)"
        )
    r = torch.arange(rows).unsqueeze(1).expand(rows, cols)
    c = torch.arange(cols).unsqueeze(0).expand(rows, cols)
    if isinstance(granularity, PerTensor):
        return torch.zeros(shape, dtype=torch.int64), 1
    if isinstance(granularity, PerAxis):
        return (r, rows) if granularity.axis == 0 else (c, cols)
    if isinstance(granularity, PerBlock):
        return (r * cols + c) // granularity.block_size, -(-rows * cols // granularity.block_size)
    per_row = -(-cols // granularity.group_size)
    return r * per_row + c // granularity.group_size, rows * per_row


def _reduce(x: torch.Tensor, index: torch.Tensor, n: int, how: str) -> torch.Tensor:
    return x.new_zeros(n).scatter_reduce(0, index.reshape(-1), x.reshape(-1), how, include_self=False)


@dataclass(frozen=True)
class QParams:
    """Reference parameters of every group, float64 ``(n_groups,)``:
    ``raw`` the scale before the floor, ``scale`` after it (positive),
    ``zero`` the zero point (ASYMMETRIC_FLOAT_SHIFT: the shift ``-lo``;
    ASYMMETRIC_FREE_ZERO: min/max's ``-lo / scale``, which the library may
    move), ``amax`` the group's largest magnitude, ``index`` the group of
    every element, ``code_lo`` and ``code_hi`` the codes the group's grid
    reaches on the positive scale (SYMMETRIC_SIGNED_SCALE: ``[-qmax, qmax +
    1]`` where the larger extreme is positive, its scale negative)."""

    raw: torch.Tensor
    scale: torch.Tensor
    zero: torch.Tensor
    amax: torch.Tensor
    index: torch.Tensor
    code_lo: torch.Tensor
    code_hi: torch.Tensor


def qparams(w: torch.Tensor, scheme: QuantScheme) -> QParams:
    """The scheme's scale and zero point of every group of ``w``, in float64
    (formulas in the module docstring)."""
    index, n = group_index(tuple(w.shape), scheme.granularity)
    wd = w.double()
    lo, hi = _reduce(wd, index, n, "amin"), _reduce(wd, index, n, "amax")
    amax = torch.maximum(hi.abs(), lo.abs())
    qmax, qmin, m = scheme.qmax, -scheme.qmax - 1, scheme.mapping
    zero = torch.zeros_like(amax)
    code_lo, code_hi = (torch.full_like(amax, float(c)) for c in scheme.code_range)
    if m is Mapping.SYMMETRIC:
        raw = amax / qmax
    elif m is Mapping.SYMMETRIC_FULL:
        raw = amax / ((qmax - qmin) / 2)
    elif m is Mapping.SYMMETRIC_NO_CLIPPING_ERR:
        raw = torch.maximum(hi.clamp_min(0) / qmax, lo.clamp_max(0) / qmin)
    elif m is Mapping.SYMMETRIC_SIGNED_SCALE:
        raw = amax / -qmin
        flip = hi.abs() > lo.abs()  # the scale is negative: code qmin is +amax
        code_lo, code_hi = torch.where(flip, -qmax, code_lo), torch.where(flip, -qmin, code_hi)
    elif m is Mapping.ASYMMETRIC:
        raw = (hi.clamp_min(0) - lo.clamp_max(0)) / (qmax - qmin)
    else:
        raw = (hi - lo) / (2**scheme.bits - 1)
    scale = raw.clamp_min(scheme.scale_floor)
    if m is Mapping.ASYMMETRIC:
        zero = (qmin - torch.round(lo.clamp_max(0) / scale)).clamp(qmin, qmax)
    elif m is Mapping.ASYMMETRIC_FLOAT_SHIFT:
        zero = -lo
    elif m is Mapping.ASYMMETRIC_FREE_ZERO:
        zero = -lo / scale
    return QParams(raw, scale, zero, amax, index, code_lo, code_hi)


def to_codes(x: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor, mapping: Mapping) -> torch.Tensor:
    """``x`` in code units, unrounded: ``x / scale + z``, or ``(x + shift) /
    scale`` for ASYMMETRIC_FLOAT_SHIFT."""
    if mapping is Mapping.ASYMMETRIC_FLOAT_SHIFT:
        return (x + zero) / scale
    return x / scale + zero


def from_codes(q: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor, mapping: Mapping) -> torch.Tensor:
    """``(q - z) * scale``, or ``q * scale - shift`` for ASYMMETRIC_FLOAT_SHIFT."""
    if mapping is Mapping.ASYMMETRIC_FLOAT_SHIFT:
        return q * scale - zero
    return (q - zero) * scale


def quantize_scheme(
    w: torch.Tensor,
    scheme: QuantScheme,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """A correct quantizer of every scheme, in float32: ``(w_hat, codes,
    scale, zero_point)`` with ``q = clamp(round(w / scale + z), *code_range)``
    and ``w_hat = (q - z) * scale`` (ASYMMETRIC_FLOAT_SHIFT: ``zero_point``
    is the shift, :func:`to_codes`; SYMMETRIC_SIGNED_SCALE: the scale is
    negative where the larger extreme is positive); ``scale`` and
    ``zero_point`` have one entry per group (numbered as :func:`group_index`).
    It quantizes ``w.to(input_dtype)`` and dequantizes with the scale and
    zero point rounded to ``scale_dtype``, where the scheme declares them.

    Note: int4 SYMMETRIC_FULL of the row ``[1.5, -0.75]`` has scale
    ``1.5 / 7.5 = 0.2``; ``1.5 / 0.2 = 7.5`` rounds to 8 and is clipped to
    7 (``w_hat`` 1.4), ``-0.75 / 0.2 = -3.75`` rounds to -4 (``w_hat`` -0.8).
    """
    if not isinstance(scheme, QuantScheme):
        raise ValueError(f"scheme must be a QuantScheme, got {scheme!r}")
    w = check_weight("w", w)
    if scheme.input_dtype is not None:
        w = w.to(scheme.input_dtype).float()
    p = qparams(w, scheme)
    m, i = scheme.mapping, p.index
    scale, zero = p.scale.float(), p.zero.float()
    s, z = scale[i], zero[i]
    if m.float_zero:  # w + shift may overflow float32
        w, s, z = w.double(), s.double(), z.double()
    q = torch.round(to_codes(w, s, z, m)).clamp(p.code_lo[i].to(w.dtype), p.code_hi[i].to(w.dtype))
    if m is Mapping.SYMMETRIC_SIGNED_SCALE:  # neural-compressor's form: codes in [qmin, qmax]
        flip = p.code_hi > scheme.qmax
        scale, q = torch.where(flip, -scale, scale), torch.where(flip[i], -q, q)
    if scheme.scale_dtype is not None:
        scale = scale.to(scheme.scale_dtype).float()
        zero = zero.to(scheme.scale_dtype).float() if m.float_zero else zero
    s, z = scale[i].to(w.dtype), zero[i].to(w.dtype)
    w_hat = from_codes(q, s, z, m).float().clamp(-FLOAT32_MAX, FLOAT32_MAX)
    if scheme.output_dtype is not None:
        w_hat = w_hat.to(scheme.output_dtype).float()
    return w_hat, q.float(), scale, zero
