"""X4: where zeros start to pay: a CSR kernel against the dense matmul.

The P7 product (128 x 128) @ (128 x 512) with the weight zeroed at random
positions to 50, 90, 99 and 99.9%, stored as torch CSR (torch.sparse.mm,
the weight transposed so the sparse operand comes first). Checked here,
torch's CSR kernel beat scipy's on this product at every sparsity.

One decision over the four ratios CSR / dense (aftertrain.timing), two
judgements: at 99.9% (0.1% of the multiplications) CSR is at least
CSR_MIN_SPEEDUP = 2x faster (the interval at most 1/2; broken when wholly
above), a bound far below the 1000x reduction of work that leaves room for
the kernel's fixed costs; and being faster is monotone in sparsity (broken
when a sparsity is decidedly faster than dense and a higher one decidedly
slower; holds when no such pair is possible). Recorded: the crossover, the
smallest sparsity whose interval lies wholly below 1.
"""

from __future__ import annotations

import pytest
import torch

from aftertrain import prune as P
from aftertrain.claims.verdicts import BROKEN, HOLDS, INCONCLUSIVE
from aftertrain.core.tolerances import CSR_MIN_SPEEDUP
from aftertrain.experiments.tables import CsrRatio, CsrTable
from aftertrain.ledger.record import shown
from aftertrain.timing import Judgement, PairedTiming, RatioRule
from aftertrain.timing.compare import store_ratios

SPARSITIES = (0.5, 0.9, 0.99, 0.999)
AT_LEAST_2X_FASTER = RatioRule.at_most(1.0 / CSR_MIN_SPEEDUP)


def two_x_at_999(t: dict[str, PairedTiming]) -> str | None:
    return AT_LEAST_2X_FASTER.decide(t["0.999"].ci_low, t["0.999"].ci_high)


def monotone(t: dict[str, PairedTiming]) -> str | None:
    """broken: some sparsity decidedly faster (interval below 1) and a higher
    one decidedly slower (above 1); holds: no lower sparsity can be faster
    while a higher one is slower; None otherwise."""
    keys = [str(s) for s in SPARSITIES]
    pairs = [(t[a], t[b]) for i, a in enumerate(keys) for b in keys[i + 1 :]]
    if any(lo.ci_high < 1.0 < hi.ci_low for lo, hi in pairs):
        return BROKEN
    if all(lo.ci_low >= 1.0 or hi.ci_high <= 1.0 for lo, hi in pairs):
        return HOLDS
    return None


JUDGEMENTS = {
    "2x": Judgement(f"CSR/dense at 99.9% zeros {AT_LEAST_2X_FASTER}", two_x_at_999),
    "monotone": Judgement("faster than dense stays faster at higher sparsity", monotone),
}


def operands():
    g = torch.Generator().manual_seed(4)
    return torch.randn(128, 128, generator=g), torch.randn(128, 512, generator=g)


@pytest.mark.claim("X4")
@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_csr_matmul_crossover_against_dense(benchmark, claim_record):
    x, w = operands()
    xt = x.t().contiguous()
    sides = {}
    for s in SPARSITIES:
        keep = P.random_masks({"w": w}, s, torch.Generator().manual_seed(5))["w"]
        pruned = torch.where(keep, w, torch.zeros(()))
        csr = pruned.t().contiguous().to_sparse_csr()  # (512, 128)
        torch.testing.assert_close(torch.sparse.mm(csr, xt).t(), x @ pruned, rtol=0, atol=1e-4)
        sides[str(s)] = ((lambda p=pruned: x @ p), (lambda c=csr: torch.sparse.mm(c, xt)))
    decisions = claim_record.decide(sides, JUDGEMENTS)
    t = decisions["monotone"].timings
    faster = [s for s in SPARSITIES if t[str(s)].ci_high < 1.0]
    cross = min(faster) if faster else None
    benchmark.group = "X4 CSR vs dense"
    for d in decisions.values():
        store_ratios(benchmark, d)
    benchmark.extra_info["crossover"] = cross
    table = CsrTable(
        tuple(CsrRatio(s, t[str(s)].median, (t[str(s)].ci_low, t[str(s)].ci_high)) for s in SPARSITIES), cross
    )
    claim_record.measured(
        "{rows}; crossover {CsrTable.crossover}",
        table,
        rows=shown(
            "{CsrRatio.sparsity:.1%}: CSR/dense {CsrRatio.median:.3f} "
            "({CsrRatio.ci[0]:.3f}-{CsrRatio.ci[1]:.3f})",
            table.rows,
        ),
    )
    claim_record.table(table)
    benchmark.pedantic(sides["0.999"][1], rounds=50, iterations=1)
    for d in decisions.values():  # a broken one first, then an inconclusive one
        if d.verdict == BROKEN:
            claim_record.conclude(d)
    for d in decisions.values():
        claim_record.conclude(d)


@pytest.mark.teeth
def test_2x_rule_catches_a_densified_csr(claim_record):
    """Teeth: a 'sparse' path that converts back to dense before multiplying
    is not 2x faster at 99.9%: the decision is broken (or inconclusive;
    never holds)."""
    x, w = operands()
    keep = P.random_masks({"w": w}, 0.999, torch.Generator().manual_seed(5))["w"]
    csr = torch.where(keep, w, torch.zeros(())).to_sparse_csr()
    decision = claim_record.ratio(lambda: x @ w, lambda: x @ csr.to_dense(), AT_LEAST_2X_FASTER)
    if decision.verdict == INCONCLUSIVE:
        claim_record.conclude(decision)
    assert decision.verdict == BROKEN, decision.reason
