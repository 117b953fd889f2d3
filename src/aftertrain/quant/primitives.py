"""Quantization primitives: symmetric uniform quantization, as part 3 writes it (Q1).

Pure tensor functions (torchao ``quant_primitives`` style): nothing here
knows a model; :mod:`aftertrain.quant.api` applies them to one and
:mod:`aftertrain.experiments.quant` tabulates the article's experiments.

The rule, for ``bits`` in 2..8::

    qmax  = 2**(bits-1) - 1
    scale = max|w| / qmax                      # per tensor, or per row
    q     = round(w / scale).clamp(-qmax-1, qmax)
    w_hat = q * scale

``round`` is ``torch.round`` (half to even). "Per-channel" means one scale per
row of the stored 2-D weight: a Linear's output feature, an Embedding's token
or position. Because ``|w| <= max|w|`` the codes of a tensor lie in
``[-qmax, qmax]``; the extra negative code ``-qmax-1`` of the clamp is never
used, so 2 bits is ternary.

Zero guard. A tensor or row whose largest magnitude is 0 would get scale 0 and
``0 / 0 = NaN``. The scale is therefore floored at the smallest normal
float32, ``SCALE_FLOOR = torch.finfo(torch.float32).tiny`` (1.18e-38): an
all-zero row quantizes to codes 0 and ``w_hat`` 0, and a row whose largest
magnitude is below ``qmax * SCALE_FLOOR`` (only subnormal-sized weights) keeps
a normal scale instead of one that underflows to 0. Every other row gets the
article's scale unchanged.

Two forms: :class:`QuantizedTensor` really stores the integers (packed,
``bits`` bits per element, so int8 is one byte and 4 bits two to a byte) plus
float32 scales, with exact byte accounting; :func:`fake_quantize` returns the
dequantized float32 tensor (what the model multiplies with).

PyTorch's ``torch.fake_quantize_per_{tensor,channel}_affine`` compute
``round(w * (1/scale))`` on CPU: a float32 reciprocal, then a product. The
article divides. The two agree except where ``w / scale`` lands exactly on a
half-integer in float32 and the product lands one ulp off it (or the reverse);
there the codes differ by one step. On the reference model's weights they
agree bit for bit at every width (tested); :func:`fake_quantize` follows the
article.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import torch

from aftertrain.core import packing
from aftertrain.core.validation import check_int

MIN_BITS = 2
MAX_BITS = 8
#: Smallest scale used (see the zero guard in the module docstring).
SCALE_FLOOR = torch.finfo(torch.float32).tiny
FLOAT32_BYTES = 4
FLOAT32_MAX = torch.finfo(torch.float32).max


class Granularity(enum.Enum):
    """How many scales a 2-D weight gets: one, or one per row."""

    PER_TENSOR = "per-tensor"
    PER_CHANNEL = "per-channel"


# --- validation -----------------------------------------------------------


def check_bits(bits: int) -> None:
    """Refuse ``bits`` outside MIN_BITS..MAX_BITS (ValueError naming it)."""
    check_int("bits", bits, least=MIN_BITS, most=MAX_BITS)


def check_granularity(granularity: Granularity) -> None:
    """Refuse anything but a :class:`Granularity` (ValueError naming the allowed)."""
    if not isinstance(granularity, Granularity):
        raise ValueError(f"granularity must be one of {[g.name for g in Granularity]}, got {granularity!r}")


def check_weight(w: torch.Tensor, granularity: Granularity, name: str = "w") -> None:
    """Refuse a weight that cannot be quantized with ``granularity`` (ValueError
    naming ``name``): not floating point, empty, meta, non-finite, beyond
    float32's range, or not 2-D for per-channel scales."""
    if not isinstance(w, torch.Tensor) or not w.is_floating_point():
        raise ValueError(
            f"{name} must be a floating-point tensor, got {getattr(w, 'dtype', type(w).__name__)}"
        )
    if w.numel() == 0:
        raise ValueError(f"{name} must have at least one element")
    if w.is_meta:
        raise ValueError(f"{name} must hold data (a meta tensor has none to quantize)")
    if not bool(torch.isfinite(w).all()):
        raise ValueError(f"{name} must be finite (no NaN or Inf)")
    if w.dtype == torch.float64 and bool((w.abs() > FLOAT32_MAX).any()):
        raise ValueError(
            f"{name} must lie within float32's range, |{name}| <= {FLOAT32_MAX:.6g} "
            f"(it is quantized in float32), got max |{name}| "
            f"{float(w.abs().max()):.6g}"
        )
    if granularity is Granularity.PER_CHANNEL and w.dim() != 2:
        raise ValueError(f"{name} must be 2-D for per-channel quantization, got shape {tuple(w.shape)}")


def qmax_for(bits: int) -> int:
    """Largest code, ``2**(bits-1) - 1`` (127 at 8 bits, 1 at 2 bits)."""
    check_bits(bits)
    return 2 ** (bits - 1) - 1


# --- the rule ---------------------------------------------------------------


def scales(w: torch.Tensor, bits: int, granularity: Granularity) -> torch.Tensor:
    """float32 scales ``max|w| / qmax``, floored at ``SCALE_FLOOR``.

    Shape ``()`` per-tensor, ``(rows, 1)`` per-channel, so ``w / scales``
    broadcasts. Per-channel's largest scale equals the per-tensor scale (the
    same float32 operation on the same maximum).
    """
    check_bits(bits)
    check_granularity(granularity)
    check_weight(w, granularity)
    qmax = qmax_for(bits)
    a = w.detach().to(torch.float32).abs()
    if granularity is Granularity.PER_TENSOR:
        m = a.amax()
    else:
        m = a.amax(dim=1, keepdim=True)
    return (m / qmax).clamp_min(SCALE_FLOOR)


def quantize_codes(
    w: torch.Tensor,
    bits: int,
    granularity: Granularity,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Integer codes (int8, in ``[-qmax, qmax]``) and float32 scales of ``w``.

    ``q = round(w / scale).clamp(-qmax-1, qmax)`` with ``torch.round``
    (half to even), exactly the article's line.
    """
    s = scales(w, bits, granularity)
    qmax = qmax_for(bits)
    q = torch.round(w.detach().to(torch.float32) / s).clamp(-qmax - 1, qmax)
    return q.to(torch.int8), s


def fake_quantize(w: torch.Tensor, bits: int, granularity: Granularity) -> torch.Tensor:
    """Quantize then dequantize: ``round(w / scale).clamp(-qmax-1, qmax) * scale``.

    float32 out, same shape. Every element's error is at most ``scale / 2``
    (its row's scale per-channel), up to float32 rounding of the product.

    Note: at 4 bits (qmax 7) ``w = [[0.7, -0.35, 0.1]]`` has scale 0.1 and
    codes ``[7, -4, 1]`` (-3.5 rounds half to even), so ``w_hat`` is
    ``[0.7, -0.4, 0.1]``.
    """
    q, s = quantize_codes(w, bits, granularity)
    return dequantize(q, s)


def dequantize(codes: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """``codes * scales`` in float32, saturated at +-float32 max.

    The saturation only acts within an ulp of float32's largest value: there
    ``fl(max|w| / qmax) * qmax`` can round past the largest float and would
    give Inf (PyTorch's fake quantization does give Inf there). ``scales``
    must broadcast against ``codes`` (shape ``()`` or ``(rows, 1)``).
    """
    if (
        not isinstance(codes, torch.Tensor)
        or codes.dtype.is_floating_point
        or codes.dtype.is_complex
        or codes.dtype == torch.bool
    ):
        raise ValueError(
            f"codes must be an integer tensor, got {getattr(codes, 'dtype', type(codes).__name__)}"
        )
    if not isinstance(scales, torch.Tensor) or not scales.is_floating_point():
        raise ValueError(
            f"scales must be a floating-point tensor, got {getattr(scales, 'dtype', type(scales).__name__)}"
        )
    if not bool(torch.isfinite(scales).all()) or not bool((scales > 0).all()):
        raise ValueError("scales must be finite and > 0")
    try:
        torch.broadcast_shapes(codes.shape, scales.shape)
    except RuntimeError:
        raise ValueError(
            f"scales of shape {tuple(scales.shape)} must broadcast against codes "
            f"of shape {tuple(codes.shape)}"
        ) from None
    return (codes.to(torch.float32) * scales).clamp(-FLOAT32_MAX, FLOAT32_MAX)


# --- the integer form -------------------------------------------------------


def pack_codes(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Codes in ``[-2**(bits-1), 2**(bits-1) - 1]`` packed ``bits`` bits each.

    Two's complement, row-major, most significant bit first, the last byte
    zero-padded (:mod:`aftertrain.core.packing`, the one convention):
    ``ceil(numel * bits / 8)`` uint8 bytes. 4-bit codes go two to a byte.
    """
    check_bits(bits)
    if (
        not isinstance(codes, torch.Tensor)
        or codes.dtype.is_floating_point
        or codes.dtype.is_complex
        or codes.dtype == torch.bool
    ):
        raise ValueError(f"codes must be an integer tensor, got {getattr(codes, 'dtype', codes)}")
    lo, hi = packing.value_range(bits, signed=True)
    if codes.numel() and (int(codes.min()) < lo or int(codes.max()) > hi):
        raise ValueError(
            f"codes must lie in [{lo}, {hi}] for {bits} bits, got [{int(codes.min())}, {int(codes.max())}]"
        )
    return packing.pack(codes, bits, signed=True)


def unpack_codes(packed: torch.Tensor, bits: int, shape: tuple[int, ...]) -> torch.Tensor:
    """Inverse of :func:`pack_codes`: int8 codes of the given shape."""
    check_bits(bits)
    if (
        not isinstance(shape, tuple)
        or not shape
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in shape)
    ):
        raise ValueError(f"shape must be a non-empty tuple of ints >= 1, got {shape!r}")
    n = math.prod(shape)
    return packing.unpack(packed, bits, n, signed=True).to(torch.int8).reshape(shape)


@dataclass(frozen=True)
class QuantizedTensor:
    """Integers packed ``bits`` bits each plus float32 scales.

    ``nbytes = ceil(numel * bits / 8) + 4 * number_of_scales`` exactly.
    """

    packed: torch.Tensor  # uint8, ceil(numel * bits / 8)
    scales: torch.Tensor  # float32, shape () or (rows, 1)
    bits: int
    shape: tuple[int, ...]
    granularity: Granularity

    def __post_init__(self) -> None:
        qmax_for(self.bits)  # validates bits
        if not isinstance(self.shape, tuple) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in self.shape
        ):
            raise ValueError(f"shape must be a tuple of ints >= 0, got {self.shape!r}")
        need = math.ceil(math.prod(self.shape) * self.bits / 8)
        if (
            not isinstance(self.packed, torch.Tensor)
            or self.packed.dtype != torch.uint8
            or self.packed.numel() != need
        ):
            raise ValueError(
                f"packed must be a uint8 tensor of {need} bytes for shape "
                f"{self.shape} at {self.bits} bits, got "
                f"{getattr(self.packed, 'numel', lambda: type(self.packed).__name__)()}"
            )

    @classmethod
    def from_float(cls, w: torch.Tensor, bits: int, granularity: Granularity) -> QuantizedTensor:
        """Quantize ``w`` with the article's rule and pack the codes."""
        q, s = quantize_codes(w, bits, granularity)
        return cls(pack_codes(q, bits), s, bits, tuple(w.shape), granularity)

    def codes(self) -> torch.Tensor:
        """The int8 codes, unpacked."""
        return unpack_codes(self.packed, self.bits, self.shape)

    def dequantize(self) -> torch.Tensor:
        """``codes * scales`` in float32: equal bit for bit to :func:`fake_quantize`."""
        return dequantize(self.codes(), self.scales)

    @property
    def nbytes(self) -> int:
        """Bytes actually stored: packed codes plus 4 per scale."""
        return self.packed.numel() + FLOAT32_BYTES * self.scales.numel()
