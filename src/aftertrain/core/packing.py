"""The one bit-packing convention of aftertrain.

Quantization codes (2..8 bits, signed), the pruning bitmask (1 bit,
unsigned) and the 2:4 positions (2 bits, unsigned) are all packed by these
two functions, one way:

* each value takes exactly ``bits`` bits; a signed value is stored as its
  ``bits``-bit two's complement, an unsigned one as itself;
* values follow each other in row-major (flat) order, **most significant bit
  first**: the first value fills the high bits of the first byte;
* the last byte is padded with zero bits; ``n`` values take
  ``ceil(n * bits / 8)`` bytes (uint8).

MSB-first is numpy's ``packbits`` default (the bitmask's order before this
module existed) and the order in which the bytes read left to right in a hex
dump. Note: the 4-bit signed codes ``[1, -2, 3]`` pack to ``bytes([0x1E,
0x30])`` (``0001 1110 | 0011 0000``); the 2-bit positions ``[0, 1, 2, 3]`` to
``bytes([0x1B])``; the bits ``[1, 0, 1, 1, 0, 0, 0, 0, 1]`` to ``bytes([0xB0,
0x80])``. ``tests/core/test_packing.py`` pins these bytes.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from aftertrain.core.validation import check_int

MIN_BITS = 1
MAX_BITS = 8


def value_range(bits: int, signed: bool) -> tuple[int, int]:
    """Smallest and largest value that fits: ``[-2**(bits-1), 2**(bits-1) - 1]``
    signed, ``[0, 2**bits - 1]`` unsigned."""
    _check_bits(bits)
    _check_signed(signed)
    if signed:
        return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return 0, 2**bits - 1


def _check_bits(bits: int) -> None:
    """Refuse ``bits`` outside MIN_BITS..MAX_BITS (ValueError naming it)."""
    check_int("bits", bits, least=MIN_BITS, most=MAX_BITS)


def _check_signed(signed: bool) -> None:
    if not isinstance(signed, bool):
        raise ValueError(f"signed must be a bool, got {signed!r}")


def pack(values: torch.Tensor, bits: int, *, signed: bool) -> torch.Tensor:
    """``values`` (an integer or bool tensor, any shape) packed ``bits`` bits
    each, MSB first, into ``ceil(numel * bits / 8)`` uint8 bytes.

    Raises ``ValueError`` naming ``values`` when one does not fit in ``bits``
    bits (see :func:`value_range`).
    """
    _check_bits(bits)
    _check_signed(signed)
    if not isinstance(values, torch.Tensor) or values.dtype.is_floating_point or values.dtype.is_complex:
        raise ValueError(
            f"values must be an integer or bool tensor, got {getattr(values, 'dtype', type(values).__name__)}"
        )
    flat = values.reshape(-1).to(torch.int64)
    lo, hi = value_range(bits, signed)
    if flat.numel() and (int(flat.min()) < lo or int(flat.max()) > hi):
        raise ValueError(
            f"values must lie in [{lo}, {hi}] for {bits} "
            f"{'signed' if signed else 'unsigned'} bits, got "
            f"[{int(flat.min())}, {int(flat.max())}]"
        )
    u = (flat & (2**bits - 1)).numpy().astype(np.uint8)
    planes = np.unpackbits(u[:, None], axis=1)[:, 8 - bits :]  # (n, bits), MSB first
    return torch.from_numpy(np.packbits(planes.reshape(-1)))


def unpack(packed: torch.Tensor, bits: int, n: int, *, signed: bool) -> torch.Tensor:
    """Inverse of :func:`pack`: the first ``n`` values as a flat int64 tensor."""
    _check_bits(bits)
    _check_signed(signed)
    check_int("n", n, least=0)
    if not isinstance(packed, torch.Tensor) or packed.dtype != torch.uint8 or packed.dim() != 1:
        raise ValueError(
            f"packed must be a 1-D uint8 tensor, got {getattr(packed, 'dtype', type(packed).__name__)}"
        )
    if packed.numel() != math.ceil(n * bits / 8):
        raise ValueError(
            f"packed must hold ceil({n} * {bits} / 8) = {math.ceil(n * bits / 8)} bytes, got {packed.numel()}"
        )
    planes = np.unpackbits(packed.numpy())[: n * bits].reshape(n, bits)
    u = np.packbits(np.concatenate([np.zeros((n, 8 - bits), np.uint8), planes], axis=1), axis=1)
    out = torch.from_numpy(u.reshape(-1).astype(np.int64))
    if signed:
        out = torch.where(out >= 2 ** (bits - 1), out - 2**bits, out)
    return out
