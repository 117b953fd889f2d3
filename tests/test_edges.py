"""Edge inputs built on purpose (issue 14, item 3): ties at the pruning
threshold, counts at exactly .5, values on the quantization rounding grid,
long sums where float32 accumulation would show, and the bit-packing
format pinned by stored byte strings.

Each test pins the documented rule on the one input where a plausible
alternative (another tie order, round half up, float32 accumulation,
another bit order) gives a different answer.

Packing: ``aftertrain.quant.pack_codes`` goes through ``aftertrain.core.packing``
(the one convention); the stored bytes pin it from the quantizer's side.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import torch.nn.utils.prune as torch_prune

from aftertrain import prune as P
from aftertrain import quant as Q
from aftertrain.lm.evaluation import val_loss
from aftertrain.lm.ngram import Uniform
from aftertrain.lm.protocol import TokenCache
from aftertrain.stats import ALPHA, GoodnessOfFit, chisquare_gof

# --- pruning: ties at the threshold ------------------------------------------------


def test_global_ties_at_the_threshold_go_in_matrix_then_position_order():
    """Magnitudes 1 (four times, signs mixed) straddle the cut: removing 3 of
    8 takes the 0.5 and then the first two 1s in (matrix order, flat
    position) order, the documented rule; -1 and 1 are equal magnitudes."""
    weights = {"a": torch.tensor([[2.0, -1.0], [1.0, 3.0]]),
               "b": torch.tensor([[1.0, 0.5], [-1.0, 4.0]])}
    masks = P.global_magnitude_masks(weights, 3 / 8)
    assert masks["a"].tolist() == [[True, False], [False, True]]
    assert masks["b"].tolist() == [[True, False], [True, True]]


def test_layer_ties_at_the_threshold_go_in_flat_position_order():
    """Per matrix, equal magnitudes leave in flat (row-major) position order:
    of five 1s in a 2x4 matrix, 40% of 8 removes 3 (3.2 rounds to 3), the
    first three 1s."""
    w = torch.tensor([[5.0, 1.0, -1.0, 2.0], [1.0, -1.0, 1.0, 3.0]])
    keep = P.layer_magnitude_masks({"w": w}, 0.4)["w"]
    assert keep.tolist() == [[True, False, False, True], [False, True, True, True]]


def test_two_four_ties_remove_the_earlier_position_first():
    """2:4 with all four magnitudes equal keeps the last two; with three
    equal smallest, the first two of them go."""
    w = torch.tensor([[1.0, -1.0, 1.0, -1.0, 2.0, 1.0, 1.0, 1.0]])
    keep = P.two_four_masks({"w": w})["w"]
    assert keep.tolist() == [[False, False, True, True, True, False, False, True]]


# --- counts at exactly .5 --------------------------------------------------------------


@pytest.mark.parametrize("sparsity, n, expected", [
    (0.5, 5, 2),    # 2.5 -> 2 (half to even), not 3
    (0.5, 7, 4),    # 3.5 -> 4
    (0.25, 10, 2),  # 2.5 -> 2
    (0.75, 10, 8),  # 7.5 -> 8
    (0.5, 1, 0),    # 0.5 -> 0
    (0.5, 3, 2),    # 1.5 -> 2
    (0.125, 20, 2), # 2.5 -> 2
])
def test_n_removed_rounds_half_to_even_as_torch_prune(sparsity, n, expected):
    """aftertrain's documented rule is round(s * n), half to even, the number
    torch.nn.utils.prune computes (its _compute_nparams_toprune); on products
    that are exactly x.5, round half up would give one more every other time."""
    assert P.n_removed(sparsity, n) == expected
    assert torch_prune._compute_nparams_toprune(sparsity, n) == expected


@pytest.mark.parametrize("sparsity, n", [(0.5, 5), (0.5, 7), (0.25, 10), (0.75, 10)])
def test_masks_remove_the_same_count_and_positions_as_torch_l1_unstructured(sparsity, n):
    """On distinct magnitudes, a per-matrix magnitude mask at a .5 count
    removes exactly the weights torch's l1_unstructured removes."""
    w = torch.randperm(n, generator=torch.Generator().manual_seed(n)).float().add(1.0)
    w = (w * torch.tensor([(-1.0) ** i for i in range(n)])).view(1, n)
    lin = torch.nn.Linear(n, 1, bias=False)
    with torch.no_grad():
        lin.weight.copy_(w)
    torch_prune.l1_unstructured(lin, "weight", amount=sparsity)
    ours = P.layer_magnitude_masks({"w": w}, sparsity)["w"]
    assert torch.equal(ours, lin.weight_mask.bool())
    assert int((~ours).sum()) == P.n_removed(sparsity, n)


# --- quantization: values exactly on the rounding grid ----------------------------------


def test_codes_of_exact_half_steps_round_half_to_even():
    """4 bits, max |w| = 7 so scale = 1 exactly and w / scale is exact: the
    half steps -3.5, 2.5, 0.5, -0.5, 1.5, -2.5, 3.5 give -4, 2, 0, 0, 2, -2, 4
    (torch.round, half to even; half away from zero would give -4, 3, 1, -1,
    2, -3, 4). torch's own fake quantization agrees on this grid."""
    w = torch.tensor([[7.0, -3.5, 2.5, 0.5, -0.5, 1.5, -2.5, 3.5, -7.0]])
    codes, scale = Q.quantize_codes(w, 4, Q.Granularity.PER_TENSOR)
    assert float(scale) == 1.0
    assert codes.tolist() == [[7, -4, 2, 0, 0, 2, -2, 4, -7]]
    torch_fq = torch.fake_quantize_per_tensor_affine(w, 1.0, 0, -8, 7)
    assert torch.equal(Q.fake_quantize(w, 4, Q.Granularity.PER_TENSOR), torch_fq)


def test_per_channel_half_steps_use_each_rows_scale():
    """8 bits, rows with max |w| 127 and 254: scales 1 and 2 exactly; 0.5 and
    1.0 (= 0.5 step of row 2) both land on a half step and round to even
    (0); 1.5 and 3.0 round to 2; 2.5 and 5.0 to 2."""
    w = torch.tensor([[127.0, 0.5, 1.5, 2.5], [254.0, 1.0, 3.0, 5.0]])
    codes, scale = Q.quantize_codes(w, 8, Q.Granularity.PER_CHANNEL)
    assert scale.flatten().tolist() == [1.0, 2.0]
    assert codes.tolist() == [[127, 0, 2, 2], [127, 0, 2, 2]]


# --- long sums: float64 accumulation of the loss --------------------------------------------


def test_val_loss_over_100k_targets_is_exact_with_float64_accumulation():
    """The uniform predictor's per-target loss is float32(ln 100) =
    4.605170249938965 at every one of 100,000 targets. Summed in float64
    (the documented accumulation) the mean is that value exactly; a float32
    sum is off by ~4e-7 on this very input."""
    tokens = torch.randint(0, 100, (100_001,), generator=torch.Generator().manual_seed(0))
    per_target = float(np.float32(math.log(100)))
    assert val_loss(Uniform(), tokens) == per_target
    float32_mean = float(F.cross_entropy(torch.zeros(100_000, 100), tokens[1:],
                                         reduction="none").sum() / 100_000)
    assert abs(float32_mean - per_target) > 1e-8  # the input shows the difference


class _FixedRow(torch.nn.Module):
    """Every position predicts the same logits row: the loss of a target b is
    one float32 value l_b, so the exact mean is sum_b count_b l_b / n."""

    def __init__(self, row: torch.Tensor) -> None:
        super().__init__()
        self.config = Uniform().config
        self.register_buffer("row", row)

    def new_cache(self) -> TokenCache:
        return TokenCache()

    def forward(self, idx, cache=None):
        return self.row.expand(*idx.shape, self.row.numel())


def test_val_loss_of_varied_losses_is_the_float64_mean_of_float32_terms():
    """100,000 targets whose float32 losses take 100 different values: the
    mean equals sum_b count_b * l_b / n in float64 to 1e-13 (relative); a
    float32 accumulator is off by ~1e-7."""
    row = torch.linspace(-3.0, 3.0, 100)
    tokens = torch.randint(0, 100, (100_001,), generator=torch.Generator().manual_seed(1))
    losses = F.cross_entropy(row.expand(100, 100), torch.arange(100), reduction="none")
    counts = np.bincount(tokens[1:].numpy(), minlength=100)
    exact = float((counts * losses.double().numpy()).sum() / 100_000)
    assert val_loss(_FixedRow(row), tokens) == pytest.approx(exact, rel=1e-13)


# --- the packing format, pinned by stored byte strings ------------------------------------

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
    s = "".join(format(c & (2 ** bits - 1), f"0{bits}b") for c in codes)
    s += "0" * (-len(s) % 8)
    return bytes(int(s[i:i + 8], 2) for i in range(0, len(s), 8))


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


def test_rejects_is_strict_at_alpha_and_cells_at_exactly_min_expected_stay_alone():
    """A p-value equal to alpha is not a rejection (p < alpha); a cell whose
    expected count is exactly min_expected is not pooled (Cochran: >= 5)."""
    assert not GoodnessOfFit(1.0, 1, ALPHA, 0).rejects()
    assert GoodnessOfFit(1.0, 1, np.nextafter(ALPHA, 0), 0).rejects()
    g = chisquare_gof([95, 5], [0.95, 0.05], counts=True)
    assert (g.dof, g.pooled_cells) == (1, 0)
