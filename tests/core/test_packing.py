"""The one packing convention (aftertrain.core.packing), pinned by stored bytes."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from aftertrain import prune as P
from aftertrain import quant as Q
from aftertrain.core import packing
from aftertrain.quant import pack_codes

PINNED = [
    ([1, -2, 3], 4, True, bytes([0x1E, 0x30])),  # 0001 1110 | 0011 0000
    ([0, 1, 2, 3], 2, False, bytes([0x1B])),  # 00 01 10 11
    ([1, 0, 1, 1, 0, 0, 0, 0, 1], 1, False, bytes([0xB0, 0x80])),
    ([-4, 3, -1], 3, True, bytes([0x8F, 0x80])),  # 100 011 111 0000000
    ([127, -128], 8, True, bytes([0x7F, 0x80])),
]


@pytest.mark.parametrize("values, bits, signed, stored", PINNED)
def test_packing_is_msb_first_twos_complement_zero_padded(values, bits, signed, stored):
    packed = packing.pack(torch.tensor(values), bits, signed=signed)
    assert bytes(packed.tolist()) == stored
    assert packing.unpack(packed, bits, len(values), signed=signed).tolist() == values


def test_quant_codes_bitmask_and_2_4_positions_share_the_convention():
    """pack_codes is packing.pack(signed); the bitmask and the 2:4 positions
    of prune's formats are packing.pack(unsigned) of the kept bits and positions."""
    assert bytes(pack_codes(torch.tensor([1, -2, 3], dtype=torch.int8), 4).tolist()) == bytes([0x1E, 0x30])
    dense = torch.tensor([[1.0, 0.0, 2.0, 3.0, 0.0, 0.0, 0.0, 0.0], [4.0, 0, 0, 0, 0, 0, 0, 0]])
    assert bytes(P.to_stored(dense, P.Format.BITMASK).arrays["bits"].tolist()) == bytes([0xB0, 0x80])
    two_four = torch.tensor([[1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 3.0, 4.0]])
    # positions (0, 1) and (2, 3): 00 01 10 11
    assert bytes(P.to_stored(two_four, P.Format.TWO_FOUR).arrays["positions"].tolist()) == bytes([0x1B])


@given(st.integers(1, 8), st.booleans(), st.data())
def test_unpack_inverts_pack(bits, signed, data):
    lo, hi = packing.value_range(bits, signed)
    values = data.draw(st.lists(st.integers(lo, hi), max_size=40))
    packed = packing.pack(torch.tensor(values, dtype=torch.int64), bits, signed=signed)
    assert packed.numel() == -(-len(values) * bits // 8)
    assert packing.unpack(packed, bits, len(values), signed=signed).tolist() == values


# --- the bit order pinned by stored bytes (from the quantizer's side too) ---
CODES = [1, -1, 7, -8, 0, 3, -4, 5, 2]
SMALL_CODES = [1, -1, 0, -2, 1, 0, -1]
#: bits -> (codes, packed bytes as hex), from the documented format: each code
#: its bits-bit two's complement, row-major, most significant bit first, last
#: byte zero-padded. 4 bits by hand: 0001 1111 | 0111 1000 | 0000 0011 |
#: 1100 0101 | 0010 (0000) = 1f 78 03 c5 20.
PACKED = {
    2: (SMALL_CODES, "724c"),
    3: (SMALL_CODES, "3c6238"),
    4: (CODES, "1f7803c520"),
    5: (CODES, "0fcf800f8510"),
    6: (CODES, "07f1f8003f0508"),
    7: (CODES, "03fc3f8000fe0504"),
    8: (CODES, "01ff07f80003fc0502"),
}


def bit_string_reference(codes: list[int], bits: int) -> bytes:
    """The format from its description, by string manipulation."""
    s = "".join(format(c & (2**bits - 1), f"0{bits}b") for c in codes)
    s += "0" * (-len(s) % 8)
    return bytes(int(s[i : i + 8], 2) for i in range(0, len(s), 8))


@pytest.mark.parametrize("bits", sorted(PACKED))
def test_pack_codes_writes_the_stored_bytes(bits):
    codes, stored = PACKED[bits]
    packed = Q.pack_codes(torch.tensor(codes, dtype=torch.int8).view(1, -1), bits)
    assert packed.dtype == torch.uint8
    assert packed.numpy().tobytes().hex() == stored
    assert bit_string_reference(codes, bits).hex() == stored
    back = Q.unpack_codes(packed, bits, (1, len(codes)))
    assert back.tolist() == [codes]


# --- statistics at the boundary -------------------------------------------------------------


@pytest.mark.parametrize(
    "bits, signed, outside",
    [
        (4, True, -9),
        (4, True, 8),
        (2, True, -3),
        (8, True, -129),
        (4, False, -1),
        (4, False, 16),
        (1, False, 2),
        (8, False, 256),
    ],
)
def test_pack_refuses_a_value_outside_its_range_at_either_end(bits, signed, outside):
    """A value below the range would wrap to another code as silently as one
    above it (-9 in 4 signed bits stores as 7): both are refused, naming the range."""
    lo, hi = packing.value_range(bits, signed)
    with pytest.raises(ValueError, match=rf"values must lie in \[{lo}, {hi}\]"):
        packing.pack(torch.tensor([0, outside]), bits, signed=signed)
