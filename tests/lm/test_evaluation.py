"""The validation loss (aftertrain.lm.evaluation): exact on long sums, where
float32 accumulation would show."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from aftertrain.lm.evaluation import LossMemo, val_loss
from aftertrain.lm.model import GPT, GPTConfig
from aftertrain.lm.ngram import Bigram, Uniform
from aftertrain.lm.protocol import TokenCache


def test_val_loss_over_100k_targets_is_exact_with_float64_accumulation():
    """The uniform predictor's per-target loss is float32(ln 100) =
    4.605170249938965 at every one of 100,000 targets. Summed in float64
    (the documented accumulation) the mean is that value exactly; a float32
    sum is off by ~4e-7 on this very input."""
    tokens = torch.randint(0, 100, (100_001,), generator=torch.Generator().manual_seed(0))
    per_target = float(np.float32(math.log(100)))
    assert val_loss(Uniform(), tokens) == per_target
    float32_mean = float(
        F.cross_entropy(torch.zeros(100_000, 100), tokens[1:], reduction="none").sum() / 100_000
    )
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


# --- the memo: each distinct GPT scored once ---------------------------------------------


def _tiny(seed: int) -> GPT:
    torch.manual_seed(seed)  # a test-local model; the library never seeds
    return GPT(GPTConfig(block_size=16, n_layer=1, n_head=2, n_embd=16)).eval()


def test_loss_memo_scores_equal_copies_once_and_any_change_again():
    """A copy with the same state gets the float val_loss gives, without a
    second forward; one weight moved by one ulp, a bias moved by 1, another
    GPT or a model of another class is scored again (the key is class,
    config and every byte of the state)."""
    import copy

    tokens = torch.arange(50) % 100
    memo = LossMemo(tokens)
    net = _tiny(0)
    first = memo(net)
    assert first == val_loss(net, tokens) and memo.misses == 1
    assert memo(copy.deepcopy(net)) == first and memo.misses == 1
    nudged = copy.deepcopy(net)
    with torch.no_grad():
        w = nudged.head.weight
        w[0, 0] = torch.nextafter(w[0, 0], torch.tensor(1.0))
    assert memo(nudged) == val_loss(nudged, tokens) and memo.misses == 2
    with torch.no_grad():
        nudged.head.bias[3] += 1.0
    assert memo(nudged) == val_loss(nudged, tokens) != first and memo.misses == 3
    assert memo(_tiny(1)) == val_loss(_tiny(1), tokens) and memo.misses == 4
    # not a GPT: its forward may read more than its state, so it is scored every time
    bigram = Bigram.fit()
    assert memo(bigram) == memo(bigram) == val_loss(bigram, tokens) and memo.misses == 6


def test_loss_memo_scores_on_its_own_tokens_and_rejects_others():
    net = _tiny(0)
    assert LossMemo()(net) == val_loss(net)
    short = torch.arange(40) % 100
    assert LossMemo(short)(net) == val_loss(net, short) != val_loss(net)
    with pytest.raises(ValueError, match="tokens must be a 1-D integer tensor"):
        LossMemo([1, 2, 3])


# --- the packing format, pinned by stored byte strings ------------------------------------
