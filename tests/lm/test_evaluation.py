"""The validation loss (aftertrain.lm.evaluation): exact on long sums, where
float32 accumulation would show."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from aftertrain.lm.evaluation import val_loss
from aftertrain.lm.ngram import Uniform
from aftertrain.lm.protocol import TokenCache


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

