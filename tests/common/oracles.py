"""Independent computations that the statistical checks' figures are held
to: each shares no code with :mod:`aftertrain.stats` or the kit, so a check
that drifts from the arithmetic shows."""

from __future__ import annotations

import numpy as np
import scipy.stats


def exact_mean_tv(p: np.ndarray, n: int) -> float:
    """E[TV] of n direct draws from p, exactly: each cell's count is
    Binomial(n, p_i), and by linearity E[TV] = sum_i E|X_i - n p_i| / (2 n),
    each term a finite sum over the binomial pmf (no simulation)."""
    k = np.arange(n + 1)
    return float(sum((scipy.stats.binom.pmf(k, n, pi) * np.abs(k - n * pi)).sum() for pi in p) / (2 * n))
