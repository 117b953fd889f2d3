"""The one packing convention (aftertrain.core.packing), pinned by stored bytes."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from aftertrain import prune as P
from aftertrain.core import packing
from aftertrain.quant import pack_codes

PINNED = [
    ([1, -2, 3], 4, True, bytes([0x1E, 0x30])),       # 0001 1110 | 0011 0000
    ([0, 1, 2, 3], 2, False, bytes([0x1B])),           # 00 01 10 11
    ([1, 0, 1, 1, 0, 0, 0, 0, 1], 1, False, bytes([0xB0, 0x80])),
    ([-4, 3, -1], 3, True, bytes([0x8F, 0x80])),       # 100 011 111 0000000
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
    assert bytes(pack_codes(torch.tensor([1, -2, 3], dtype=torch.int8), 4).tolist()) == bytes(
        [0x1E, 0x30])
    dense = torch.tensor([[1.0, 0.0, 2.0, 3.0, 0.0, 0.0, 0.0, 0.0], [4.0, 0, 0, 0, 0, 0, 0, 0]])
    assert bytes(P.to_stored(dense, P.Format.BITMASK).arrays["bits"].tolist()) == bytes(
        [0xB0, 0x80])
    two_four = torch.tensor([[1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 3.0, 4.0]])
    # positions (0, 1) and (2, 3): 00 01 10 11
    assert bytes(P.to_stored(two_four, P.Format.TWO_FOUR).arrays["positions"].tolist()) == bytes(
        [0x1B])


@given(st.integers(1, 8), st.booleans(), st.data())
def test_unpack_inverts_pack(bits, signed, data):
    lo, hi = packing.value_range(bits, signed)
    values = data.draw(st.lists(st.integers(lo, hi), max_size=40))
    packed = packing.pack(torch.tensor(values, dtype=torch.int64), bits, signed=signed)
    assert packed.numel() == -(-len(values) * bits // 8)
    assert packing.unpack(packed, bits, len(values), signed=signed).tolist() == values
