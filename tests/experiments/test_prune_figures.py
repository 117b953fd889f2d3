"""The figures of the P1, P2, P4, P5, P6 and X5 tables computed a second way
on a tiny GPT: each loss of a model pruned here by hand (a sort of all |w|
for global magnitude, of each matrix for per-layer, 2 of every 4 along the
rows for 2:4), the random rows' statistics with Python's ``statistics``, the
matching sparsity against the grid's two neighbouring losses, and the bytes
per element from torch's own sparse tensors (``to_sparse_coo``,
``to_sparse_csr``) and the bit count of a bitmask. The claims' tests compare
these tables with stored baselines; these pin each figure to its definition."""

from __future__ import annotations

import copy
import statistics

import pytest
import torch

from aftertrain.experiments import prune as EP
from aftertrain.lm.evaluation import val_loss
from aftertrain.lm.model import GPT
from aftertrain.prune.masks import Method
from tests.common.toys import tiny_gpt


@pytest.fixture(scope="module")
def model() -> GPT:
    return tiny_gpt(5)


@pytest.fixture(scope="module")
def tokens() -> torch.Tensor:
    return torch.randint(0, 100, (160,), generator=torch.Generator().manual_seed(3))


@pytest.fixture(scope="module")
def curve(model, tokens):
    return EP.LossCurve(model, lambda m: val_loss(m, tokens))


def _matrices(model):
    return {n: p for n, p in model.named_parameters() if p.dim() == 2}


def _pruned(model, keep_fn):
    out = copy.deepcopy(model)
    with torch.no_grad():
        for name, p in _matrices(out).items():
            p.mul_(keep_fn(name, p))
    return out


def _global(model, s):
    flat = torch.cat([p.detach().abs().flatten() for p in _matrices(model).values()])
    cut = torch.sort(flat).values[round(s * flat.numel()) - 1]  # no ties in random weights
    return _pruned(model, lambda n, p: p.abs() > cut)


def _layer(model, s):
    def keep(n, p):
        cut = torch.sort(p.detach().abs().flatten()).values[round(s * p.numel()) - 1]
        return p.abs() > cut

    return _pruned(model, keep)


def _two_four(model):
    def keep(n, p):
        groups = p.detach().abs().reshape(p.shape[0], -1, 4)
        top = groups.argsort(dim=-1, descending=True)[..., :2]
        return torch.zeros_like(groups).scatter_(-1, top, 1.0).reshape(p.shape)

    return _pruned(model, keep)


def test_loss_rows_are_the_losses_of_models_pruned_by_hand(model, tokens, curve):
    (row,) = EP.loss_table(curve, (0.3,), seeds=(0, 1, 2))
    assert row.sparsity == 0.3
    assert row.global_ == pytest.approx(val_loss(_global(model, 0.3), tokens), rel=1e-12)
    assert row.layer == pytest.approx(val_loss(_layer(model, 0.3), tokens), rel=1e-12)
    assert row.global_ != pytest.approx(row.layer, rel=1e-9)  # the two rankings differ here
    random = curve.random_losses(0.3, (0, 1, 2))
    assert row.random == pytest.approx(statistics.fmean(random), rel=1e-12)


def test_random_rows_are_the_statistics_of_the_seeds_losses(curve):
    (row,) = EP.random_table(curve, (0.2,), seeds=(0, 1, 2, 3))
    assert row.sparsity == 0.2
    losses = curve.random_losses(0.2, (0, 1, 2, 3))
    assert len(set(losses)) == 4  # each seed prunes differently
    assert (row.mean, row.std, row.min, row.max) == pytest.approx(
        (statistics.fmean(losses), statistics.stdev(losses), min(losses), max(losses)), rel=1e-12
    )


def test_matching_sparsity_is_where_the_hand_pruned_loss_reaches_the_target(model, tokens, curve):
    target = val_loss(_global(model, 0.5), tokens) - 1e-9
    s = EP.matching_sparsity(curve, target, upper=0.9, resolution=0.05)
    assert val_loss(_global(model, s), tokens) >= target > val_loss(_global(model, s - 0.05), tokens)


def _bytes(mats):
    n = sum(m.numel() for m in mats)
    z = sum(int((m != 0).sum()) for m in mats)
    coo = sum(
        m.to_sparse_coo().values().numel() * 4 + m.to_sparse_coo().indices()[1].numel() * 4 for m in mats
    )
    csr = sum(
        c.values().numel() * 4 + c.col_indices().numel() * 8 + c.crow_indices().numel() * 8
        for c in (m.to_sparse_csr() for m in mats)
    )
    return n, z, {"dense": 4.0, "coo": coo / n, "bitmask": (4 * z + n / 8) / n, "csr": csr / n}


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_bytes_rows_are_torch_sparse_sizes_of_the_hand_pruned_weights(model):
    """COO: a float32 value and a 4-byte column index per kept weight (the
    article's 8(1-s)); bitmask: values and one bit per element; CSR: torch's
    float32 values and int64 indices."""
    rows = EP.bytes_table(model, (0.5, 0.75))
    assert [r.sparsity for r in rows] == [0.0, 0.5, 0.75]
    for r in rows:
        mats = list(_matrices(_global(model, r.sparsity) if r.sparsity else model).values())
        n, z, expected = _bytes([m.detach() for m in mats])
        assert z == n - round(r.sparsity * n)
        assert (r.dense, r.coo, r.bitmask, r.csr) == pytest.approx(
            (expected["dense"], expected["coo"], expected["bitmask"], expected["csr"]), rel=1e-12
        )


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_compression_rows_are_four_bytes_over_the_bitmask_bytes(model, tokens, curve):
    rows = EP.quantization_vs_pruning(curve, 1.234, (0.75,))
    assert (rows[0].name, rows[0].compression, rows[0].loss) == ("int8", 4.0, 1.234)
    mats = [m.detach() for m in _matrices(_global(model, 0.75)).values()]
    n, z, expected = _bytes(mats)
    assert rows[1].compression == pytest.approx(4 / expected["bitmask"], rel=1e-12)
    assert rows[1].loss == pytest.approx(val_loss(_global(model, 0.75), tokens), rel=1e-12)


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_two_four_row_is_the_loss_and_bytes_of_a_hand_made_2_4_model(model, tokens, curve):
    row = EP.two_four_comparison(curve)
    pruned = _two_four(model)
    assert row.two_four == pytest.approx(val_loss(pruned, tokens), rel=1e-12)
    assert (row.global_50, row.layer_50) == (curve(Method.GLOBAL, 0.5), curve(Method.LAYER, 0.5))
    mats = [m.detach() for m in _matrices(pruned).values()]
    n, z, expected = _bytes(mats)
    assert z == n // 2
    assert row.bytes_two_four == 4 * 0.5 + 0.5 * 2 / 8  # half the values, 2 position bits each
    assert (row.bytes_bitmask, row.bytes_coo) == pytest.approx(
        (expected["bitmask"], expected["coo"]), rel=1e-12
    )


def test_first_sparsity_above_is_the_smallest_sparsity_over_the_level_in_any_order():
    """P2's "first worse at": the smallest sparsity whose figure exceeds the
    level, not the first row listed nor the row of the largest figure; a
    figure equal to the level is not above it; None when none is."""
    rows = [
        EP.RandomRow(0.5, 4.0, 0.0, 4.0, 4.0),
        EP.RandomRow(0.1, 1.0, 0.0, 1.0, 1.0),
        EP.RandomRow(0.3, 2.5, 0.0, 2.5, 2.5),
        EP.RandomRow(0.2, 2.0, 0.0, 2.0, 2.0),
    ]
    assert EP.first_sparsity_above(rows, "mean", 2.0) == 0.3
    assert EP.first_sparsity_above(rows, "mean", 0.5) == 0.1
    assert EP.first_sparsity_above(rows, "mean", 4.0) is None
