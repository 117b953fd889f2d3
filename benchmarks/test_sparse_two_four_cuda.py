"""P8 / X5: 2:4 structured zeros can be skipped by dedicated kernels (CUDA).

Only NVIDIA's sparse tensor cores (Ampere and later, via
``torch.sparse.to_sparse_semi_structured``) run a 2:4 matrix faster; there is
no CPU kernel. Without CUDA the test is skipped with that reason, as the
claims' timed part: P8 and X5 then read "not decided here" (their defining
part, aftertrain.claims.catalogue).

Shape: (4096 x 4096) half precision, large enough for the kernel to fill the
GPU (the article's 128-wide layers are launch-bound on any GPU). Claim: the
2:4 matmul is faster than the dense one of the same pruned weight: a
decision (aftertrain.timing.decide_ratio), holds when the interval of the
median pair ratio lies below 1, broken when wholly above.
"""

from __future__ import annotations

import pytest
import torch

from aftertrain import prune as P
from aftertrain.timing import RatioRule

NO_CUDA = "2:4 speed needs CUDA sparse kernels; no CUDA device here"


@pytest.mark.claim("P8")
@pytest.mark.claim("X5")
def test_two_four_matmul_beats_dense_on_cuda(claim_record):
    claim_record.require_timing()
    if not torch.cuda.is_available():
        pytest.skip(NO_CUDA)
    from torch.sparse import to_sparse_semi_structured

    g = torch.Generator().manual_seed(24)
    w = torch.randn(4096, 4096, generator=g)
    keep = P.two_four_masks({"w": w})["w"]
    w = torch.where(keep, w, torch.zeros(())).half().cuda()
    x = torch.randn(4096, 4096, generator=g).half().cuda()
    sparse = to_sparse_semi_structured(w)
    torch.testing.assert_close(torch.mm(sparse, x), torch.mm(w, x), rtol=1e-2, atol=1e-1)

    def run(f):
        def timed():
            f()
            torch.cuda.synchronize()

        return timed

    decision = claim_record.ratio(
        run(lambda: torch.mm(w, x)), run(lambda: torch.mm(sparse, x)), RatioRule.at_most(1.0), calls=10
    )
    t = decision.timing
    claim_record.measured(
        "2:4 / dense {median:.3f} ({ci_low:.3f}-{ci_high:.3f}, {pairs} pairs)",
        median=t.median,
        ci_low=t.ci_low,
        ci_high=t.ci_high,
        pairs=len(t.ratios),
    )
    claim_record.conclude(decision)
