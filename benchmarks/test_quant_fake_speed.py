"""Claim Q11: fake quantization saves memory, not time.

A fake-quantized model holds float32 weights that happen to lie on a grid;
its forward pass does the same float32 arithmetic as the original's, so the
paired time ratio (quantized / float32) should hold 1.0. What is timed is one
cached decoding step (the 128th character from the cache of the 127 before):
the per-character cost that S5's c compares, and short (~0.3 ms) against a
scheduler time slice, so on a loaded machine a preemption spoils a few pairs
rather than every timing (see aftertrain.timing.paired_timing's note).

Asserted: the median ratio's interval at confidence 1 - 1e-6 lies inside
the equivalence band [0.9, 1.1] (801 pairs: the 331st to 471st sorted
ratio, so up to 40% of the pairs may be spoiled by preemption). Why 10%: a
real difference in arithmetic (integer kernels: x2 at one row in X3; an
extra pass: x2) is tens of percent or more, and the teeth test shows a
candidate doing twice the work falls outside; with 201 pairs the interval
was once [0.934, 1.112] on the shared box (load average ~3.5), hence 801.

Recorded, not asserted: whether 1.0 itself lies in the interval. With 801
pairs the interval is about +-0.6% wide (measured [0.994, 1.008] to
[0.999, 1.010], medians 1.001-1.005), so a sub-percent systematic difference
(where the copied weights sit in memory) would exclude 1.0 without
contradicting "runs at float32 speed"; a point null that precise would fail
for reasons that are not the claim's. Equivalence is the claim's test.
"""

from __future__ import annotations

import pytest
import torch

from aftertrain import quant as Q
from aftertrain.text import load_corpus

T = 128
BAND = (0.9, 1.1)  # see the module docstring
CONFIDENCE = 1 - 1e-6
PAIRS = 801


def check_same_speed(timing) -> None:
    assert timing.holds_no_difference(BAND), timing.as_dict()


@pytest.fixture(scope="module")
def models(reference):
    return reference, Q.quantized_model(reference, 8, Q.Granularity.PER_CHANNEL)


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
def test_fake_quantized_forward_runs_at_float32_speed(benchmark, record_paired, models, window,
                                                      record_property):
    """Correct first: every 2-D weight of the candidate is the original's
    fake-quantized weight, bit for bit, the 1-D ones are unchanged, and its
    logits are finite and not the float32 ones. Then the paired ratio's
    interval must lie inside [0.9, 1.1]; whether it holds 1.0 is recorded."""
    reference, quantized = models
    original = dict(reference.named_parameters())
    for name, p in quantized.named_parameters():
        want = Q.fake_quantize(original[name], 8, Q.Granularity.PER_CHANNEL) if p.dim() == 2 \
            else original[name]
        assert torch.equal(p, want), name
    base, cand = step_of(reference, window), step_of(quantized, window)
    logits = cand()
    assert bool(torch.isfinite(logits).all()) and not torch.equal(logits, base())
    benchmark.group = "quant-fake-forward"
    timing = record_paired(base, cand, pairs=PAIRS, confidence=CONFIDENCE)
    if timing is not None:
        record_property("measured", f"decoding step, int8 fake-quantized / float32: median "
                                    f"{timing.median:.3f}, interval [{timing.ci_low:.3f}, "
                                    f"{timing.ci_high:.3f}] (confidence 1 - 1e-6), holds 1.0: "
                                    f"{timing.ci_low <= 1.0 <= timing.ci_high}")
        record_property("table:q11", {"median": timing.median,
                                      "ci": [timing.ci_low, timing.ci_high],
                                      "holds_1": timing.ci_low <= 1.0 <= timing.ci_high})
        check_same_speed(timing)
    benchmark.pedantic(cand, rounds=100, warmup_rounds=3)


@pytest.mark.claim("Q11")
def test_equivalence_band_rejects_a_candidate_doing_more_work(benchmark, record_paired, models,
                                                              window):
    """Teeth: two decoding steps per call (twice the work); the interval
    must leave the band (and exclude 1.0)."""
    reference, _ = models
    base = step_of(reference, window)

    def twice() -> torch.Tensor:
        base()
        return base()

    benchmark.group = "quant-fake-forward"
    timing = record_paired(base, twice, pairs=PAIRS, confidence=CONFIDENCE)
    if timing is not None:
        assert timing.ci_low > 1.0 and not timing.holds_no_difference(BAND), timing.as_dict()
        with pytest.raises(AssertionError):
            check_same_speed(timing)
    benchmark.pedantic(twice, rounds=10, warmup_rounds=1)
