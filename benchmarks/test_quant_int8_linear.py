"""Claim X3: where integer arithmetic starts to pay.

PyTorch's dynamic int8 Linear (``torch.ao.quantization.quantize_dynamic``:
weights int8 once, activations quantized per call, integer matmul) against
the float32 Linear it replaces, the model's first feed-forward input
(:func:`aftertrain.lm.anatomy.anatomy`'s ``first_ffn_input``: ``blocks.0.f1``
of the reference model, 128 -> 512; a float32 copy where the model computes
in another dtype), at 1, 16, 128 and 1024 rows multiplied at once: 1 row as in
decoding, 1024 as in a batch. One thread, paired ratios int8 / float32,
one decision over the four (aftertrain.timing.sequential_decisions).

What is decided is only what holds on any machine: int8 gets relatively
cheaper as rows grow (the 1-row ratio's interval lies wholly above the
1024-row one's; broken when wholly below), because its per-call overhead
(quantizing the activations, packing) is fixed while the integer matmul is
faster per multiply. Checked before timing: the result is correct (relative
error below 5%; 8-bit weights and activations each contribute ~2**-8 per
element, measured ~2%). Where it crosses 1 (the fewest rows whose interval
lies wholly below 1) is a property of the machine and is recorded.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch.ao.quantization import quantize_dynamic

from aftertrain.claims.verdicts import BROKEN, HOLDS, INCONCLUSIVE
from aftertrain.experiments.tables import Int8Linear, Ratio
from aftertrain.ledger.record import shown
from aftertrain.lm.anatomy import anatomy
from aftertrain.timing import Judgement, PairedTiming
from aftertrain.timing.compare import store_ratios

ROWS = (1, 16, 128, 1024)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def linears(aftertrain_model):
    f1 = aftertrain_model.get_submodule(anatomy(aftertrain_model).first_ffn_input)
    assert isinstance(f1, torch.nn.Linear), type(f1).__name__  # lm.hf turns Conv1D into Linear
    if f1.weight.dtype != torch.float32:
        f1 = copy.deepcopy(f1).float()
    return f1, quantize_dynamic(torch.nn.Sequential(f1), {torch.nn.Linear}, dtype=torch.qint8)


def call(layer, x):
    def run() -> torch.Tensor:
        with torch.no_grad():
            return layer(x)

    return run


def inputs(rows: int, width: int) -> torch.Tensor:
    return torch.randn(rows, width, generator=torch.Generator().manual_seed(rows))


def calls_for(rows: int) -> int:
    return 1 if rows >= 128 else 20  # a 1-row call is ~20 us: 20 calls per timing


def cheaper_with_rows(t: dict[str, PairedTiming]) -> str | None:
    """holds: the 1-row interval lies wholly above the 1024-row one; broken:
    wholly below; None otherwise."""
    one, many = t["1"], t["1024"]
    if one.ci_low > many.ci_high:
        return HOLDS
    if one.ci_high < many.ci_low:
        return BROKEN
    return None


CHEAPER = Judgement("int8/float32 at 1 row above int8/float32 at 1024 rows", cheaper_with_rows)


def crossover(t: dict[str, PairedTiming]) -> int | None:
    """Fewest rows whose interval lies wholly below 1, or None."""
    return next((r for r in ROWS if t[str(r)].ci_high < 1.0), None)


@pytest.mark.claim("X3")
@pytest.mark.parametrize("rows", ROWS)
def test_dynamic_int8_linear_is_correct(benchmark, linears, rows):
    """Relative error of the int8 layer < 0.05, then its absolute time."""
    f1, q = linears
    x = inputs(rows, f1.in_features)
    y, yq = call(f1, x)(), call(q, x)()
    err = float((y - yq).norm() / y.norm())
    assert err < 0.05, err
    benchmark.group = f"quant-int8-linear-{rows}"
    benchmark.pedantic(call(q, x), rounds=20, warmup_rounds=2)


@pytest.mark.claim("X3")
def test_int8_gets_relatively_cheaper_as_rows_grow(benchmark, claim_record, linears):
    """The decision; recorded: every ratio and the crossover."""
    f1, q = linears
    sides = {str(r): (call(f1, inputs(r, f1.in_features)), call(q, inputs(r, f1.in_features))) for r in ROWS}
    decision = claim_record.decide(sides, {"X3": CHEAPER}, calls={str(r): calls_for(r) for r in ROWS})["X3"]
    store_ratios(benchmark, decision)
    t = decision.timings
    cross = crossover(t)
    table = Int8Linear(
        {r: Ratio(t[str(r)].median, (t[str(r)].ci_low, t[str(r)].ci_high)) for r in ROWS}, cross
    )
    claim_record.measured(
        "{ratios}{crossover}",
        table,
        ratios=shown("{key} rows {Ratio.median:.2f} [{Ratio.ci[0]:.2f}, {Ratio.ci[1]:.2f}]", table.ratios),
        crossover=shown("; int8 pays from {Int8Linear.crossover_rows} rows", table)
        if cross
        else shown("; no interval up to {largest} rows wholly below 1", largest=ROWS[-1]),
    )
    claim_record.table(table)
    benchmark.group = "quant-int8-linear-rows"
    benchmark.pedantic(call(q, inputs(1, f1.in_features)), rounds=20, warmup_rounds=2)
    claim_record.conclude(decision)


@pytest.mark.claim("X3")
@pytest.mark.teeth
def test_rows_rule_catches_a_candidate_dearer_with_rows(claim_record, linears):
    """Teeth: float32 against itself at 1 row (ratio 1) and against twice
    itself at 1024 rows (ratio 2): relatively dearer as rows grow, so the
    decision is broken (or inconclusive on a machine too busy; never holds)."""
    f1, _ = linears
    x1, x1024 = inputs(1, f1.in_features), inputs(1024, f1.in_features)

    def twice() -> None:
        call(f1, x1024)()
        call(f1, x1024)()

    sides = {"1": (call(f1, x1), call(f1, x1)), "1024": (call(f1, x1024), twice)}
    decision = claim_record.decide(sides, {"X3": CHEAPER}, calls={"1": 20, "1024": 1})["X3"]
    if decision.verdict == INCONCLUSIVE:
        claim_record.conclude(decision)
    assert decision.verdict == BROKEN, decision.reason
