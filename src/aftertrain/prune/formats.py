"""Storage formats for a float32 matrix with zeros, with exact byte counts.

:func:`to_stored` stores a dense matrix in a :class:`Format`,
:func:`from_stored` gives it back bit for bit. Bit arrays (the bitmask, the
2:4 positions) follow the one packing convention of :mod:`aftertrain.core.packing`
(MSB first).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from fractions import Fraction

import torch

from aftertrain.core import packing
from aftertrain.core.validation import check_real


class Format(Enum):
    """Ways to store a float32 matrix with zeros."""

    DENSE = "dense float32"  # every element, 4 bytes each
    COO = "COO"  # kept values (float32) + flat index (int32) each: 8 bytes per kept
    BITMASK = "bitmask"  # 1 bit per element + kept values (float32)
    CSR = "CSR"  # torch's CSR: values float32, col_indices and crow_indices int64
    TWO_FOUR = "2:4"  # 2 values (float32) of every 4 + their 2-bit positions


@dataclass(frozen=True)
class Stored:
    """A matrix in a storage format: its shape and the arrays actually kept.

    ``nbytes`` is the sum of the arrays' sizes (``numel * element_size``); the
    shape (a few integers per matrix) is not counted, as in the article.
    """

    format: Format
    shape: tuple[int, ...]
    arrays: dict[str, torch.Tensor]

    @property
    def nbytes(self) -> int:
        """Bytes of every stored array (values, indices, bitmaps), as held in memory."""
        return sum(a.numel() * a.element_size() for a in self.arrays.values())


def _nonzero_bits(dense: torch.Tensor) -> torch.Tensor:
    # "Zero" is the bit pattern of +0.0: -0.0 and NaN are stored as values, so
    # every format round-trips bit for bit.
    return dense.reshape(-1).view(torch.int32) != 0


def to_stored(dense: torch.Tensor, fmt: Format) -> Stored:
    """``dense`` (a float32 matrix) stored in ``fmt``; :func:`from_stored` inverts it bit
    for bit. Byte counts, with ``n`` elements, ``z`` kept (not +0.0), ``r`` rows:

    * DENSE: ``4n``;  COO: ``8z``;  BITMASK: ``ceil(n/8) + 4z``;
    * CSR: ``4z + 8z + 8(r+1)`` (int64 indices, as ``torch.sparse_csr_tensor``);
    * TWO_FOUR: ``4(n/2) + ceil(n/8)`` (2 bits for each of the ``n/2`` kept).

    Note: a 512x128 matrix at 75% sparsity keeps 16,384 values: COO takes
    131,072 B (2.00 per element), a bitmask 8,192 + 65,536 = 73,728 B (1.125).
    Raises ``ValueError`` if ``dense`` is not a 2-D float32 tensor, or for
    TWO_FOUR if a row group of 4 holds more than 2 nonzeros or the last
    dimension is not a multiple of 4.
    """
    if not isinstance(fmt, Format):
        raise ValueError(f"fmt must be a Format, got {fmt!r}")
    if not isinstance(dense, torch.Tensor) or dense.dtype != torch.float32 or dense.dim() != 2:
        raise ValueError(
            f"dense must be a 2-D float32 tensor, got "
            f"{getattr(dense, 'dtype', type(dense))} {tuple(getattr(dense, 'shape', ()))}"
        )
    if dense.numel() == 0:
        raise ValueError(f"dense must have at least one element, got shape {tuple(dense.shape)}")
    if not bool(torch.isfinite(dense).all()):
        raise ValueError("dense must be finite, got NaN or inf")
    dense = dense.detach().contiguous()
    shape = tuple(dense.shape)
    flat = dense.reshape(-1)
    kept = _nonzero_bits(dense)
    if fmt is Format.DENSE:
        return Stored(fmt, shape, {"values": flat.clone()})
    if fmt is Format.COO:
        index = kept.nonzero().squeeze(1)
        return Stored(fmt, shape, {"values": flat[index].clone(), "index": index.to(torch.int32)})
    if fmt is Format.BITMASK:
        bits = packing.pack(kept, 1, signed=False)
        return Stored(fmt, shape, {"bits": bits, "values": flat[kept].clone()})
    if fmt is Format.CSR:
        rows = kept.view(shape)
        crow = torch.zeros(shape[0] + 1, dtype=torch.int64)
        crow[1:] = rows.sum(1).cumsum(0)
        col = rows.nonzero()[:, 1].contiguous()
        return Stored(fmt, shape, {"values": dense[rows].clone(), "col_indices": col, "crow_indices": crow})
    # TWO_FOUR
    if shape[1] % 4:
        raise ValueError(f"dense: 2:4 storage needs a last dimension divisible by 4, got {shape}")
    groups = kept.view(-1, 4)
    if (groups.sum(1) > 2).any():
        raise ValueError("dense: a group of 4 holds more than 2 nonzeros; not 2:4 sparse")
    # The 2 stored positions of a group: its nonzeros first, padded with its
    # first zeros (whose exact bits are stored too), in ascending order.
    order = torch.sort((~groups).to(torch.int8), dim=1, stable=True).indices[:, :2]
    positions = torch.sort(order, dim=1).values
    values = torch.gather(flat.view(-1, 4), 1, positions).reshape(-1).clone()
    return Stored(fmt, shape, {"values": values, "positions": packing.pack(positions, 2, signed=False)})


def from_stored(stored: Stored) -> torch.Tensor:
    """The dense float32 matrix ``stored`` holds (bit-exact inverse of :func:`to_stored`)."""
    if not isinstance(stored, Stored):
        raise ValueError(f"stored must be a Stored, got {type(stored).__name__}")
    try:
        return _from_stored(stored)
    except (KeyError, IndexError, RuntimeError, TypeError, AttributeError) as err:
        raise ValueError(
            f"stored: its arrays do not hold a {stored.format.value} matrix of shape "
            f"{stored.shape} ({type(err).__name__}: {err})"
        ) from None


def _from_stored(stored: Stored) -> torch.Tensor:
    shape, a = stored.shape, stored.arrays
    n = math.prod(shape)
    if stored.format is Format.DENSE:
        return a["values"].clone().view(shape)
    if stored.format is Format.CSR:
        # Scattered by hand: torch's CSR to_dense adds each value onto +0.0,
        # which turns -0.0 into +0.0.
        rows = torch.repeat_interleave(torch.arange(shape[0]), a["crow_indices"].diff())
        out = torch.zeros(shape, dtype=torch.float32)
        out[rows, a["col_indices"]] = a["values"]
        return out
    out = torch.zeros(n, dtype=torch.float32)
    if stored.format is Format.COO:
        out[a["index"].to(torch.int64)] = a["values"]
    elif stored.format is Format.BITMASK:
        kept = packing.unpack(a["bits"], 1, n, signed=False).to(torch.bool)
        out[kept] = a["values"]
    else:  # TWO_FOUR
        positions = packing.unpack(a["positions"], 2, n // 2, signed=False).view(-1, 2)
        out.view(-1, 4).scatter_(1, positions, a["values"].view(-1, 2))
    return out.view(shape)


def bytes_per_element(matrices: Iterable[torch.Tensor], fmt: Format) -> float:
    """Total stored bytes of ``matrices`` in ``fmt`` divided by their element count."""
    if isinstance(matrices, torch.Tensor) or not isinstance(matrices, Iterable):
        raise ValueError(
            f"matrices must be an iterable of 2-D float32 tensors, got {type(matrices).__name__}"
        )
    matrices = list(matrices)
    if not matrices:
        raise ValueError("matrices must hold at least one matrix")
    for i, m in enumerate(matrices):
        if not isinstance(m, torch.Tensor) or m.numel() == 0:
            raise ValueError(
                f"matrices[{i}] must be a non-empty 2-D float32 tensor, got "
                f"{tuple(getattr(m, 'shape', ())) or type(m).__name__}"
            )
    return sum(to_stored(m, fmt).nbytes for m in matrices) / sum(m.numel() for m in matrices)


#: Formats whose bytes per element depend on the sparsity alone (not on the shape).
SHAPE_FREE = (Format.DENSE, Format.COO, Format.BITMASK, Format.TWO_FOUR)


def bytes_per_element_formula(fmt: Format, sparsity: numbers.Real) -> numbers.Real:
    """Bytes per element of a matrix at ``sparsity`` stored in ``fmt``, by
    :func:`to_stored`'s counts with ``n`` a multiple of 8 and ``(1 - s) n``
    kept: DENSE ``4``; COO ``8(1-s)``; BITMASK ``4(1-s) + 1/8``; TWO_FOUR
    ``2 + 1/8`` (half the values plus 2 bits each, whatever ``s <= 1/2``).

    Exact: a :class:`~fractions.Fraction` ``sparsity`` gives a Fraction equal
    to ``Fraction(to_stored(m, fmt).nbytes, n)``. Note: at 75% a bitmask
    takes 1.125 bytes per element, COO 2.0. CSR is not one of them (its row
    pointers add ``8(r+1)/n``); ``ValueError`` for it or for ``sparsity``
    outside ``[0, 1]``.
    """
    if fmt not in SHAPE_FREE:
        raise ValueError(
            f"fmt must be one of {[f.name for f in SHAPE_FREE]} (their bytes per "
            f"element do not depend on the shape), got {fmt!r}"
        )
    check_real("sparsity", sparsity, low=0, high=1)
    eighth = Fraction(1, 8)  # one bit per element (bitmask; 2:4's 2 bits per kept half)
    if fmt is Format.DENSE:
        return 4
    if fmt is Format.TWO_FOUR:
        return 2 + eighth
    kept = 1 - sparsity
    return 8 * kept if fmt is Format.COO else 4 * kept + eighth


def break_even_sparsity(a: Format, b: Format) -> Fraction:
    """The sparsity where ``a`` and ``b`` take the same bytes per element
    (:func:`bytes_per_element_formula` is linear in ``s``, so it is one point).

    Note: COO against BITMASK: ``8(1-s) = 4(1-s) + 1/8`` at ``s = 31/32``
    (96.875%); above it COO is smaller. ``ValueError`` if the two never cost
    the same at a sparsity in ``[0, 1]``.
    """

    def gap(s: Fraction) -> Fraction:
        return Fraction(bytes_per_element_formula(a, s)) - Fraction(bytes_per_element_formula(b, s))

    if gap(Fraction(0)) == gap(Fraction(1)):
        raise ValueError(f"a, b: {a.name} and {b.name} differ by the same bytes at every sparsity")
    s = gap(Fraction(0)) / (gap(Fraction(0)) - gap(Fraction(1)))
    if not 0 <= s <= 1:
        raise ValueError(f"a, b: {a.name} and {b.name} cost the same only at sparsity {s}, outside [0, 1]")
    return s
