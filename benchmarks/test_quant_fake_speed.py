"""Claim Q11: fake quantization saves memory, not time.

A fake-quantized model holds float32 weights that happen to lie on a grid;
its forward pass does the same float32 arithmetic as the original's, so the
paired time ratio (quantized / float32) should hold 1.0. What is timed is one
cached decoding step (the 128th character from the cache of the 127 before):
the per-character cost that S5's c compares, and short (~0.3 ms) against a
scheduler time slice, so on a loaded machine a preemption spoils a few pairs
rather than every timing (see aftertrain.timing.paired_timing's note).

A decision (aftertrain.timing.decide_ratio): holds when the median ratio's
interval lies inside SAME_SPEED_BAND [0.9, 1.1], broken when wholly outside
(aftertrain.core.tolerances gives the reason for 10%). Recorded, not decided:
whether 1.0 itself lies in the interval. A sub-percent systematic
difference (where the copied weights sit in memory) would exclude 1.0
without contradicting "runs at float32 speed"; equivalence is the claim's
test.
"""

from __future__ import annotations

import pytest
import torch

from aftertrain import quant as Q
from aftertrain.claims.verdicts import BROKEN, INCONCLUSIVE
from aftertrain.core.tolerances import SAME_SPEED_BAND
from aftertrain.experiments.tables import FakeQuantSpeed
from aftertrain.lm.text import load_corpus
from aftertrain.timing import RatioRule
from aftertrain.timing.compare import store_ratios

T = 128
SAME_SPEED = RatioRule.inside(SAME_SPEED_BAND)


@pytest.fixture(scope="module")
def models(aftertrain_model):
    return aftertrain_model, Q.quantized_model(aftertrain_model, 8, Q.Granularity.PER_CHANNEL)


@pytest.fixture(scope="module")
def window() -> torch.Tensor:
    return load_corpus().val[:T].view(1, T)  # (1, T)


def step_of(model, window):
    """One cached decoding step at the last position, repeatable."""
    cache = model.new_cache()
    with torch.no_grad():
        model(window[:, :-1], cache=cache)

    def step() -> torch.Tensor:
        cache.truncate(T - 1)
        with torch.no_grad():
            return model(window[:, -1:], cache=cache)[0, -1]

    return step


@pytest.mark.claim("Q11")
def test_fake_quantized_forward_runs_at_float32_speed(benchmark, claim_record, models, window):
    """Correct first: every 2-D weight of the candidate is the original's
    fake-quantized weight, bit for bit, the 1-D ones are unchanged, and its
    logits are finite and not the float32 ones. Then the decision."""
    float32, quantized = models
    original = dict(float32.named_parameters())
    for name, p in quantized.named_parameters():
        want = (
            Q.fake_quantize(original[name], 8, Q.Granularity.PER_CHANNEL) if p.dim() == 2 else original[name]
        )
        assert torch.equal(p, want), name
    base, cand = step_of(float32, window), step_of(quantized, window)
    logits = cand()
    assert bool(torch.isfinite(logits).all()) and not torch.equal(logits, base())
    benchmark.group = "quant-fake-forward"
    decision = claim_record.ratio(base, cand, SAME_SPEED)
    store_ratios(benchmark, decision)
    t = decision.timing
    holds_1 = t.ci_low <= 1.0 <= t.ci_high
    row = FakeQuantSpeed(t.median, (t.ci_low, t.ci_high), holds_1)
    claim_record.measured(
        "decoding step, int8 fake-quantized / float32: median {FakeQuantSpeed.median:.3f}, "
        "interval [{FakeQuantSpeed.ci[0]:.3f}, {FakeQuantSpeed.ci[1]:.3f}] ({pairs} pairs, "
        "alpha {alpha:g}), the interval {contains!s} 1.0",
        row,
        pairs=len(t.ratios),
        alpha=decision.alpha,
        contains="contains" if holds_1 else "excludes",
    )
    claim_record.table(row)
    benchmark.pedantic(cand, rounds=100, warmup_rounds=3)
    claim_record.conclude(decision)


@pytest.mark.claim("Q11")
@pytest.mark.teeth
def test_same_speed_rule_catches_twice_the_work(benchmark, claim_record, models, window):
    """Teeth: two decoding steps per call (twice the work) against one: the
    decision is broken (or, on a machine too busy to decide, inconclusive;
    never holds)."""
    float32, _ = models
    base = step_of(float32, window)

    def twice() -> torch.Tensor:
        base()
        return base()

    benchmark.group = "quant-fake-forward"
    decision = claim_record.ratio(base, twice, SAME_SPEED)
    if decision.verdict == INCONCLUSIVE:
        claim_record.conclude(decision)
    assert decision.verdict == BROKEN and decision.timing.ci_low > 1.0, decision.reason
    benchmark.pedantic(twice, rounds=10, warmup_rounds=1)
