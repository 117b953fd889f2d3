"""The default cases of :func:`aftertrain.checks.quant.check_quantizer`:
float32 matrices per scheme, deterministic in a seed."""

from __future__ import annotations

import torch

from aftertrain.checks.codebooks import CodebookScheme
from aftertrain.checks.schemes import PerBlock, PerGroup, QuantScheme
from aftertrain.core.validation import check_seed
from aftertrain.quant.primitives import FLOAT32_MAX, qmax_for

#: The largest group size the default battery is built for. Its cases hold
#: about 44 float32 values per element of a group (tests/checks/test_quant.py
#: counts them), so 65,536 is 11 MB; torchao's and quanto's group sizes are 32
#: to 256, and a group of a whole row of a large model is about 16,384. A
#: larger group is judged on the user's own ``cases``.
MAX_BATTERY_GROUP = 2**16
#: The group size the default battery of ``PerGroup(None)`` (the library
#: picks) is built for: optimum-quanto's default, so rows hold 256 and 192
#: values (quanto picks 128 and 96) and one case is a single row of 128.
CHOSEN_GROUP_BATTERY = 128
#: Float32 values of the default battery per element of a group (at most).
BATTERY_VALUES_PER_GROUP_ELEMENT = 44


def battery(bits: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """The default cases of per-tensor and per-axis schemes at ``bits``:
    float32 matrices, deterministic in ``seed``.

    Gaussian; heavy-tailed with a negative extreme; exact ties (every ``w /
    scale`` but the largest a half-integer, per row, for SYMMETRIC); rows of
    mixed scales; all-zero rows; an all-zero tensor; small-but-normal
    values (every row and the tensor of range under 1e-4, values 1e-5 to
    1e-4: hqq collapses such groups to one value); subnormal rows beside a
    normal one; an all-subnormal tensor; float32's largest values; a single
    element.
    """
    qmax = qmax_for(bits)
    check_seed(seed)
    g = torch.Generator().manual_seed(seed)
    gauss = torch.randn(8, 16, generator=g)
    heavy = torch.randn(6, 12, generator=g) ** 3
    heavy[2, 5] = -40.0
    mixed = torch.randn(4, 10, generator=g) * torch.tensor([[1e-3], [1.0], [1e3], [1e-30]])
    zero_rows = torch.randn(5, 8, generator=g)
    zero_rows[[1, 3]] = 0.0
    subnormal = torch.randn(4, 8, generator=g)
    subnormal[1:] = torch.tensor([1e-40, -3e-41, 1e-45, 0.0, 7e-39, -1e-39, 2e-44, 0.0])
    return {
        "gaussian": gauss,
        "heavy-tailed": heavy,
        "exact ties": _ties(5, 9, qmax, g),
        "mixed row scales": mixed,
        "all-zero rows": zero_rows,
        "all zero": torch.zeros(3, 4),
        "small normal values": _small_normal(4, 8, g),
        "subnormal rows": subnormal,
        "all subnormal": torch.tensor([[1e-40, -2e-41, 0.0, 3e-45], [5e-39, 0.0, -1e-44, 1e-42]]),
        "float32 max": torch.tensor(
            [[FLOAT32_MAX, -FLOAT32_MAX / 3, 1.0, 0.0], [-FLOAT32_MAX, 2e38, -1e-3, 5.0]]
        ),
        "single element": torch.tensor([[-0.75]]),
    }


def _small_normal(rows: int, cols: int, g: torch.Generator) -> torch.Tensor:
    """Normal float32 values in [1e-5, 1e-4]: every group's range is under 1e-4, far above
    float32's subnormals (1.18e-38), so each group has an ordinary scale (``amax / qmax``
    about 1e-5 at 4 bits): not an edge."""
    return 1e-5 + 9e-5 * torch.rand(rows, cols, generator=g)


def _ties(rows: int, cols: int, qmax: int, g: torch.Generator) -> torch.Tensor:
    """Row r: scale 2**-r, values (k + 1/2) * scale with |k + 1/2| < qmax, then qmax * scale."""
    k = torch.randint(-qmax, qmax, (rows, cols), generator=g).float() + 0.5
    row_scale = 2.0 ** -torch.arange(float(rows)).unsqueeze(1)
    return torch.cat([k, torch.full((rows, 1), float(qmax))], dim=1) * row_scale


def group_battery(bits: int, group_size: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """The default cases of a ``PerGroup(group_size)`` scheme: rows of two
    groups unless said otherwise, deterministic in ``seed``.

    Gaussian; heavy-tailed with a negative extreme; exact ties per group;
    groups of scales 1e-3 and 1e3 side by side in every row (a scale taken
    from another group is off by 1e6); an all-zero group and an all-zero
    row; small-but-normal groups (values 1e-5 to 1e-4 in every group and
    row); a subnormal group beside a normal one; float32's largest values;
    one group; rows of 1.5 groups (the group size does not divide the row).
    """
    group_size = PerGroup(group_size).group_size  # validates it
    if group_size is None:
        raise ValueError(
            "group_size must be an int >= 1 for the battery (PerGroup(None): "
            "scheme_battery builds it for the library's choice)"
        )
    qmax = qmax_for(bits)
    check_seed(seed)
    g = torch.Generator().manual_seed(seed)
    n = PerGroup(group_size).group_size  # validates it
    if n > MAX_BATTERY_GROUP:
        need = BATTERY_VALUES_PER_GROUP_ELEMENT * n
        raise ValueError(
            f"group_size must be at most {MAX_BATTERY_GROUP:,} for the default "
            f"battery, got {n:,}: its cases would hold about {need:,} float32 "
            f"values ({need * 4 / 1e9:.3g} GB); pass cases= with matrices of your "
            f"own to judge larger groups"
        )
    heavy = torch.randn(3, 2 * n, generator=g) ** 3
    heavy[1, -1] = -40.0
    scales = torch.tensor([1e-3, 1e3]).repeat_interleave(n)
    zero = torch.randn(3, 2 * n, generator=g)
    zero[0, n:] = 0.0
    zero[2] = 0.0
    subnormal = torch.randn(2, 2 * n, generator=g)
    subnormal[1, :n] = 1e-40 * torch.randn(n, generator=g)
    huge = torch.randn(2, 2 * n, generator=g)
    two = min(2, n)  # max - min overflows float32 where a group holds both
    huge[0, :two] = torch.tensor([FLOAT32_MAX, -FLOAT32_MAX / 3])[:two]
    huge[1, n : n + two] = torch.tensor([-FLOAT32_MAX, 2e38])[:two]
    cases = {
        "gaussian": torch.randn(4, 2 * n, generator=g),
        "heavy-tailed": heavy,
        "exact ties": _ties(4, n - 1, qmax, g).reshape(2, 2 * n) if n > 1 else _ties(2, 0, qmax, g),
        "group scales 1e-3 and 1e3": torch.randn(3, 2 * n, generator=g) * scales,
        "all-zero group and row": zero,
        "small normal groups": _small_normal(1, 2 * n, g),
        "subnormal group": subnormal,
        "float32 max": huge,
        "one group": torch.randn(1, n, generator=g),
    }
    if n > 1:
        cases["group size does not divide the row"] = torch.randn(2, n + n // 2, generator=g)
    return cases


def scheme_battery(scheme: QuantScheme | CodebookScheme, seed: int = 0) -> dict[str, torch.Tensor]:
    """The default cases of ``scheme`` (a codebook's at 4 bits): :func:`group_battery`
    per group, :func:`battery` otherwise."""
    if isinstance(scheme.granularity, PerBlock):  # rows of 1.5 blocks: a block straddles two rows
        return group_battery(scheme.bits, scheme.granularity.block_size, seed)
    if isinstance(scheme.granularity, PerGroup):
        size = scheme.granularity.group_size
        return group_battery(scheme.bits, CHOSEN_GROUP_BATTERY if size is None else size, seed)
    return battery(scheme.bits, seed)
