"""The model's forward pass: a full 128-character window without a cache.

Paired figure: the full pass against one cached decoding step at the last
position (the same prediction, computed from the cache of the 127 before):
how many decoding steps one recomputation of the window costs.

The model is the bundled reference checkpoint.
"""

from __future__ import annotations

import pytest
import torch

from aftertrain.lm.text import load_corpus
from aftertrain.timing import paired_timing
from aftertrain.timing.compare import store_ratios

T = 128


@pytest.fixture(scope="module")
def window() -> torch.Tensor:
    return load_corpus().val[:T].view(1, T)  # (1, T)


def test_forward_full_window(benchmark, aftertrain_model, window):
    """Correct first: the cached step's logits equal the full pass's last row
    within 1e-4 (claim K1: float error only; the article measured 9.06e-06,
    and float32 sums taken in another order differ by ~1e-6 relative)."""
    cache = aftertrain_model.new_cache()
    with torch.no_grad():
        full = aftertrain_model(window)[0, -1]
        aftertrain_model(window[:, :-1], cache=cache)

    def step() -> torch.Tensor:
        cache.truncate(T - 1)
        with torch.no_grad():
            return aftertrain_model(window[:, -1:], cache=cache)[0, -1]

    def forward() -> torch.Tensor:
        with torch.no_grad():
            return aftertrain_model(window)[0, -1]

    torch.testing.assert_close(step(), full, rtol=0, atol=1e-4)
    torch.testing.assert_close(forward(), full, rtol=0, atol=0)

    benchmark.group = "forward"
    # Recorded, not asserted (no claim): on a 2-core machine with six times
    # more runnable processes than cores the interval's low end fell to 0.58
    # in one of 8 runs (median 6.5-8.7).
    if benchmark.enabled:
        store_ratios(benchmark, {"forward/step": paired_timing(step, forward, pairs=41)})
    # 100 rounds instead of pytest-benchmark's calibration: ~1 s, not ~5 s.
    benchmark.pedantic(forward, rounds=100, warmup_rounds=3)
