"""Q10's weight-range summary (:func:`aftertrain.experiments.quant.weight_range_ratios`)
on a hand-built model where the median, the lower middle value, the mean and
the maximum all differ.

Each matrix has four rows (an even count, so the median is the midpoint of
the two middle row ranges) with skewed ranges; the model has four matrices,
so the median matrix is again a midpoint. Every expected figure is worked
by hand below.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from aftertrain.experiments.quant import weight_range_ratios

#: Row ranges max|w| of each matrix (a row is [-range, 0.5, 0.25]: the range
#: is negative, so max w without the absolute value would be 0.5 in every row):
#:   a: 1, 2, 3, 10  -> median (2 + 3) / 2 = 2.5, ratio 10 / 2.5 = 4
#:   b: 1, 1, 4, 4   -> median 2.5, ratio 1.6
#:   c: 2, 2, 2, 9   -> median 2, ratio 4.5
#:   d: 1, 3, 5, 6   -> median 4, ratio 1.5
#: Ratios 4, 1.6, 4.5, 1.5: worst 4.5, median (1.6 + 4) / 2 = 2.8 (the lower
#: middle 1.6, the mean 2.9, the maximum 4.5).
RANGES = {"a": [1, 2, 3, 10], "b": [1, 1, 4, 4], "c": [2, 2, 2, 9], "d": [1, 3, 5, 6]}
RATIOS = {"a": 4.0, "b": 1.6, "c": 4.5, "d": 1.5}


def _model() -> nn.Module:
    net = nn.Module()
    for name, ranges in RANGES.items():
        w = torch.tensor([[-r, 0.5, 0.25] for r in ranges], dtype=torch.float32)
        net.register_parameter(name, nn.Parameter(w))
    net.register_parameter("bias", nn.Parameter(torch.full((3,), 100.0)))  # 1-D: not a matrix
    return net


def test_weight_range_ratios_are_max_over_midpoint_median_per_matrix():
    """Per matrix max / median of the row ranges (median: the midpoint of the
    two middle rows of four), then the worst and the median matrix (the
    midpoint of the middle two of four): 4.5 and 2.8. The lower middle value
    (torch's ``median``) gives the ratios 5, 4, 4.5 and 2; the upper one 3.33,
    1, 4.5 and 1.2; the mean of the ratios is 2.9, their lower middle 1.6."""
    out = weight_range_ratios(_model())
    assert out.matrices == pytest.approx(RATIOS, rel=1e-6)
    assert out.worst == pytest.approx(4.5, rel=1e-6)
    assert out.median == pytest.approx(2.8, rel=1e-6)
