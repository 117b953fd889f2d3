"""The default cases of :func:`aftertrain.checks.prune.check_pruner`: dicts
of float32 weights per pattern (:func:`battery` unstructured,
:func:`structured_battery`, :func:`nm_battery`), deterministic in a seed."""

from __future__ import annotations

import torch

from aftertrain.checks.patterns import NM
from aftertrain.core.validation import check_seed

#: Counts where the conventions of :class:`~aftertrain.checks.patterns.Rounding`
#: part at the default sparsities: at 10, 0.05 removes 0 (half to even, floor)
#: or 1 (half up, ceil) and 0.9 removes 9, or 10 under torch-pruning's
#: ``10 - int(10 * (1 - 0.9))`` (``int(0.9999999999999998) = 0`` kept); at
#: 20 (and 30), 0.9 removes 18 (27), or 19 (28) under torch-pruning's,
#: which alone tells it from ``ceil`` once one slice is always kept.
ROUNDING_SIZES = (10, 20, 30)


def battery(seed: int = 0) -> dict[str, dict[str, torch.Tensor]]:
    """The default cases: dicts of float32 weights, deterministic in ``seed``.

    Distinct Gaussian matrices of three sizes; heavy ties (values -2, 0, 2);
    two matrices on scales 1 and 100 (global takes the small one first,
    per-layer half of each); large negative weights (a signed ranking takes
    them first); odd sizes 5, 15, 6 and 10 (exact halves); 10 and 20 weights
    (30 over both), where the roundings part (:data:`ROUNDING_SIZES`); a
    single weight.
    """
    check_seed(seed)
    g = torch.Generator().manual_seed(seed)
    ties = torch.tensor([-2.0, 0.0, 2.0])
    return {
        "gaussian": {
            "a": torch.randn(8, 16, generator=g),
            "b": torch.randn(4, 4, generator=g),
            "c": torch.randn(3, 7, generator=g),
        },
        "heavy ties": {
            "a": ties[torch.randint(0, 3, (4, 8), generator=g)],
            "b": ties[torch.randint(0, 3, (5, 3), generator=g)],
        },
        "two scales": {
            "small": torch.rand(4, 8, generator=g) + 0.5,
            "large": 100 * (torch.rand(4, 8, generator=g) + 0.5),
        },
        "negative extremes": {"a": torch.tensor([[-3.0, 1.0, 2.0, -0.5], [-6.0, 0.25, 5.0, 4.0]])},
        "odd sizes": {
            "five": torch.randn(1, 5, generator=g),
            "fifteen": torch.randn(3, 5, generator=g),
            "six": torch.randn(2, 3, generator=g),
            "ten": torch.randn(2, 5, generator=g),
        },
        "ten and twenty": {"ten": torch.randn(2, 5, generator=g), "twenty": torch.randn(4, 5, generator=g)},
        "single weight": {"w": torch.tensor([[0.5]])},
    }


def structured_battery(seed: int = 0) -> dict[str, dict[str, torch.Tensor]]:
    """The default cases of a :class:`Structured` pruner, 2-D float32.

    Gaussian matrices, square, tall and wide; rows of scales 2**-r in an
    order where row norms and column norms rank differently; tied slice
    norms (rows that are permutations of one another); five rows and five
    columns (exact halves); 10 and 20 rows and columns, where the roundings
    part (:data:`ROUNDING_SIZES`); a single weight.
    """
    check_seed(seed)
    g = torch.Generator().manual_seed(seed)
    scaled = torch.randn(6, 6, generator=g) * 2.0 ** -torch.tensor([[3.0], [0], [5], [1], [4], [2]])
    base = torch.tensor([1.0, -2.0, 3.0, -4.0])
    tied = torch.stack([base[torch.randperm(4, generator=g)] for _ in range(4)])
    return {
        "gaussian": {
            "square": torch.randn(8, 8, generator=g),
            "tall": torch.randn(12, 4, generator=g),
            "wide": torch.randn(3, 10, generator=g),
        },
        "row scales": {"w": scaled, "wt": scaled.T.contiguous()},
        "tied norms": {"w": tied, "wt": tied.T.contiguous()},
        "odd sizes": {"five": torch.randn(5, 5, generator=g)},
        "ten and twenty": {
            "ten": torch.randn(10, 6, generator=g),
            "twenty": torch.randn(20, 3, generator=g),
            "twenty wide": torch.randn(3, 20, generator=g),
        },
        "single weight": {"w": torch.tensor([[0.5]])},
    }


#: The longest block (``NM``'s ``m``) the default battery is built for. Its
#: cases hold about 75 float32 values per element of a block
#: (tests/checks/test_prune.py counts them), so 65,536 is 20 MB; 2:4 and the
#: other patterns of sparse kernels have ``m`` of 4 to 16. A longer block is
#: judged on the user's own ``cases``.
MAX_BATTERY_BLOCK = 2**16
#: Float32 values of the default NM battery per element of a block (at most).
BATTERY_VALUES_PER_BLOCK_ELEMENT = 75


def nm_battery(pattern: NM, seed: int = 0) -> dict[str, dict[str, torch.Tensor]]:
    """The default cases of an :class:`NM` pruner: rows of whole blocks of
    ``m`` (and one case whose rows ``m`` does not divide, to be refused).

    Gaussian matrices; heavy ties (-2, 0, 2); large negative weights (a
    signed ranking keeps the positive ones); blocks of scales 1e-3 and 1e3
    side by side; a single block; rows of ``m + m // 2`` (not whole blocks).
    """
    check_seed(seed)
    m = pattern.m
    if m > MAX_BATTERY_BLOCK:
        need = BATTERY_VALUES_PER_BLOCK_ELEMENT * m
        raise ValueError(
            f"m must be at most {MAX_BATTERY_BLOCK:,} for the default battery, got "
            f"{pattern}: its cases would hold about {need:,} float32 values "
            f"({need * 4 / 1e9:.3g} GB); pass cases= with matrices of your own "
            f"to judge longer blocks"
        )
    g = torch.Generator().manual_seed(seed)
    ties = torch.tensor([-2.0, 0.0, 2.0])
    negative = torch.randn(4, 4 * m, generator=g).abs()
    negative[:, ::2] *= -10.0
    scales = torch.tensor([1e-3, 1e3]).repeat_interleave(m).repeat(2)
    cases = {
        "gaussian": {"a": torch.randn(8, 4 * m, generator=g), "b": torch.randn(3, m, generator=g)},
        "heavy ties": {"a": ties[torch.randint(0, 3, (4, 2 * m), generator=g)]},
        "negative extremes": {"a": negative},
        "block scales": {"a": torch.randn(3, 4 * m, generator=g) * scales},
        "single block": {"w": torch.randn(1, m, generator=g)},
    }
    if m > 1:
        cases["rows not whole blocks"] = {"w": torch.randn(2, m + m // 2, generator=g)}
    return cases
