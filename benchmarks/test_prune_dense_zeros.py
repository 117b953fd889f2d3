"""P7: zeros do not speed up a dense matmul.

The article's shape, the first feed-forward layer: (128 x 128) @ (128 x 512),
the weight with 50, 90 and 99% of its entries zeroed by magnitude, timed
against the unpruned weight in alternating pairs (the article's round-robin
rounds, ratio to the dense original within each round).

A decision per sparsity (aftertrain.timing): holds when the interval of
the median pair ratio lies inside SAME_SPEED_BAND (0.9, 1.1), broken when
it lies wholly outside, inconclusive otherwise when the budget is spent.
Why 10%: aftertrain.core.tolerances.SAME_SPEED_BAND; a kernel that skipped zeros
would show 2x at 50% and far more at 99%, which the teeth test stands in for.
"""

from __future__ import annotations

import pytest
import torch

from aftertrain import prune as P
from aftertrain.claims.verdicts import HOLDS, INCONCLUSIVE
from aftertrain.core.tolerances import SAME_SPEED_BAND
from aftertrain.experiments.article import ARTICLE as PUBLISHED
from aftertrain.experiments.tables import DenseZeros
from aftertrain.timing import RatioRule
from aftertrain.timing.compare import store_ratios

ARTICLE = {r.sparsity: r.median for r in PUBLISHED.p7}  # median ratios
SAME_SPEED = RatioRule.inside(SAME_SPEED_BAND)


@pytest.fixture(scope="module")
def operands():
    g = torch.Generator().manual_seed(8)
    return torch.randn(128, 128, generator=g), torch.randn(128, 512, generator=g)  # x (T, C), w (C, 4C)


@pytest.mark.claim("P7")
@pytest.mark.parametrize("sparsity", [0.5, 0.9, 0.99])
def test_zeroed_weights_do_not_speed_up_a_dense_matmul(benchmark, claim_record, operands, sparsity):
    x, w = operands
    keep = P.global_magnitude_masks({"w": w}, sparsity)["w"]
    pruned = torch.where(keep, w, torch.zeros(()))
    # Correct first: exactly the asked zeros, and the product of the pruned weight.
    assert int((pruned == 0).sum()) == round(sparsity * w.numel())
    torch.testing.assert_close(x @ pruned, (x.double() @ pruned.double()).float(), rtol=0, atol=1e-3)

    benchmark.group = "P7 dense matmul with zeros"
    decision = claim_record.ratio(lambda: x @ w, lambda: x @ pruned, SAME_SPEED)
    store_ratios(benchmark, decision)
    t = decision.timing
    row = DenseZeros(sparsity, t.median, (t.ci_low, t.ci_high), t.q1, t.q3)
    claim_record.measured(
        "{DenseZeros.sparsity:.0%} zeros: ratio {DenseZeros.median:.3f} (interval "
        "{DenseZeros.ci[0]:.3f}-{DenseZeros.ci[1]:.3f}, {pairs} pairs, quartiles "
        "{DenseZeros.q1:.3f}-{DenseZeros.q3:.3f}); article {article:.3f}",
        row,
        pairs=len(t.ratios),
        article=ARTICLE[sparsity],
    )
    claim_record.table(row)
    benchmark.pedantic(lambda: x @ pruned, rounds=50, iterations=1)
    claim_record.conclude(decision)


@pytest.mark.parametrize("work", ["half", "twice"])
@pytest.mark.teeth
def test_same_speed_rule_catches_half_or_twice_the_work(claim_record, operands, work):
    """Teeth: a product over half the output columns (what skipping 50% of
    the work would look like) and one computed twice are never called
    "no difference"; decided, they are broken."""
    x, w = operands
    half = w[:, :256].contiguous()
    candidate = (lambda: x @ half) if work == "half" else (lambda: (x @ w, x @ w))
    decision = claim_record.ratio(lambda: x @ w, candidate, SAME_SPEED)
    assert decision.verdict != HOLDS, decision.reason
    if decision.verdict == INCONCLUSIVE:
        claim_record.conclude(decision)
