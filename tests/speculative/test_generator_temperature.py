"""Guards on speculative decoding (each pins a rule one plausible slip would break; docs/mutation.md).

Temperature scales the draft's q as well as the target's p: the law of the
output is exact whatever q is, so only the acceptance rate shows a draft
sampled at the wrong temperature. With context-free models (every row of a
bigram table equal) and k = 1, each round's draft is accepted independently
with probability ``sum_x min(p_T(x), q_T(x))``, computed here in closed form
with numpy; the measured count must agree (binomial test at 1e-6)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
import torch

from aftertrain.lm.ngram import Bigram
from aftertrain.lm.text import VOCAB_SIZE
from aftertrain.speculative import speculative_generate

ALPHA = 1e-6


def _context_free(probs: list[float]) -> Bigram:
    """A bigram whose every row is ``probs`` (then zeros): a fixed law."""
    row = torch.full((VOCAB_SIZE,), -math.inf, dtype=torch.float64)
    row[: len(probs)] = torch.log(torch.tensor(probs, dtype=torch.float64))
    return Bigram(row.expand(VOCAB_SIZE, -1).clone()).eval()


def _at_temperature(probs: list[float], t: float) -> np.ndarray:
    w = np.asarray(probs, dtype=np.float64) ** (1.0 / t)  # softmax(log p / t)
    return w / w.sum()


P, Q = [0.8, 0.2], [0.2, 0.8]


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0])
def test_acceptance_rate_is_sum_of_min_at_the_asked_temperature(temperature):
    """At T = 0.5 the rate is 0.118 (0.4 at T = 1; a draft sampled at T = 1
    against p at 0.5 would be accepted at 0.259); at T = 2, 0.667."""
    target, draft = _context_free(P), _context_free(Q)
    out = speculative_generate(
        target, draft, "a", 1200, k=1, temperature=temperature, generator=torch.Generator().manual_seed(1)
    )
    rate = float(np.minimum(_at_temperature(P, temperature), _at_temperature(Q, temperature)).sum())
    assert out.drafted > 600
    pv = scipy.stats.binomtest(out.accepted, out.drafted, rate).pvalue
    assert pv >= ALPHA, (out.accepted, out.drafted, rate)


def test_the_acceptance_check_has_teeth_for_a_draft_at_temperature_one():
    """The counts a draft sampled at T = 1 would give against p at T = 0.5
    (rate 0.259) fail the test above's check against 0.118: the difference
    is far beyond the binomial test's reach at 1e-6 for 600 drafts (the fewest the test above allows)."""
    wrong = float(np.minimum(_at_temperature(P, 0.5), _at_temperature(Q, 1.0)).sum())
    right = float(np.minimum(_at_temperature(P, 0.5), _at_temperature(Q, 0.5)).sum())
    assert wrong == pytest.approx(0.259, abs=1e-3) and right == pytest.approx(0.118, abs=1e-3)
    drafted = 600
    assert scipy.stats.binomtest(round(wrong * drafted), drafted, right).pvalue < ALPHA
