"""Pruning masks and sparse storage (aftertrain.prune): properties, oracles, teeth.

The mask properties (exact counts, magnitude order, nesting, global versus
per-layer) are :func:`aftertrain.checks.prune.check_pruner`'s, run here on
aftertrain's pruners over hypothesis examples (the kit's teeth are in
``tests/checks/test_prune.py``). Storage formats are checked by
``check_storage`` below, with teeth from ``tests/common/prune_bugs.py``.
"""

from __future__ import annotations

import copy
from fractions import Fraction

import pytest
import torch
import torch.nn.utils.prune as torch_prune
from hypothesis import given
from hypothesis import strategies as st

from aftertrain import prune as P
from aftertrain.checks.prune import Scope, check_pruner
from aftertrain.experiments import prune as EP
from tests.common.prune_bugs import (
    bitmask_without_values,
    coo_with_int64_index,
    from_bitmask_as_ones,
)
from tests.common.strategies import (
    distinct_weight_dicts,
    sparse_matrix,
    sparsities,
    tied_values,
    weight_dicts,
    weight_matrix,
)

# --- checks -------------------------------------------------------------------


def check_two_four(weights, masks) -> None:
    """Exactly 2 kept in every row group of 4, and they are the group's largest |w|."""
    for name, w in weights.items():
        keep = masks[name].reshape(-1, 4)
        assert (keep.sum(1) == 2).all(), name
        a = w.reshape(-1, 4).abs()
        removed = torch.where(keep, torch.zeros(()), a).amax(1)
        kept = torch.where(keep, a, torch.full((), float("inf"))).amin(1)
        assert bool((removed <= kept).all()), name


def expected_nbytes(dense: torch.Tensor, fmt: P.Format) -> int:
    """Closed forms: n elements, z kept (bits not +0.0), r rows."""
    n, r = dense.numel(), dense.shape[0]
    z = int((dense.reshape(-1).view(torch.int32) != 0).sum())
    return {
        P.Format.DENSE: 4 * n,
        P.Format.COO: 8 * z,  # 4-byte value + 4-byte flat index
        P.Format.BITMASK: -(-n // 8) + 4 * z,  # 1 bit per element + kept values
        P.Format.CSR: 4 * z + 8 * z + 8 * (r + 1),  # torch: int64 col and crow indices
        P.Format.TWO_FOUR: 2 * n + -(-n // 8),  # n/2 values + 2 bits for each
    }[fmt]


def check_storage(
    dense: torch.Tensor, fmt: P.Format, to_stored=P.to_stored, from_stored=P.from_stored
) -> None:
    """Bit-exact round trip and the closed-form byte count."""
    stored = to_stored(dense, fmt)
    back = from_stored(stored)
    assert back.dtype == torch.float32 and back.shape == dense.shape
    assert torch.equal(back.view(torch.int32), dense.view(torch.int32)), fmt
    assert stored.nbytes == expected_nbytes(dense, fmt), (fmt, stored.nbytes)


def two_four_pruned(dense: torch.Tensor) -> torch.Tensor:
    keep = P.two_four_masks({"w": dense})["w"]
    return torch.where(keep, dense, torch.zeros(()))


# --- masks: exact counts, ranking, nesting ---------------------------------------


@given(weight_dicts(tied_values), sparsities)
def test_global_magnitude_removes_exactly_round_s_n_even_with_heavy_ties(weights, s):
    """Values from {-2, 0, 2}: a threshold would remove a whole tie class; the
    stable ranking removes exactly round(s * N), the smallest |w| first."""
    check_pruner(
        P.global_magnitude_masks, scope=Scope.GLOBAL, cases={"drawn": weights}, sparsities=[s]
    ).raise_for_failures()


@given(weight_dicts(tied_values), sparsities)
def test_layer_magnitude_removes_exactly_round_s_n_from_each_matrix(weights, s):
    check_pruner(
        P.layer_magnitude_masks, scope=Scope.PER_LAYER, cases={"drawn": weights}, sparsities=[s]
    ).raise_for_failures()


@given(weight_dicts(), sparsities, st.integers(0, 2**31 - 1))
def test_random_removes_exactly_round_s_n_and_replays_from_the_seed(weights, s, seed):
    def seeded(w, sparsity):
        return P.random_masks(w, sparsity, torch.Generator().manual_seed(seed))

    check_pruner(
        seeded, scope=Scope.GLOBAL, magnitude=False, cases={"drawn": weights}, sparsities=[s]
    ).raise_for_failures()
    masks = seeded(weights, s)
    again = P.random_masks(weights, s, torch.Generator().manual_seed(seed))
    assert all(torch.equal(masks[n], again[n]) for n in masks)


@given(weight_dicts(st.one_of(tied_values, st.floats(-3, 3, width=32))), sparsities, sparsities)
def test_magnitude_masks_are_nested_across_sparsities(weights, s1, s2):
    """The zeros at the smaller sparsity are among those at the larger, for
    global and per-layer magnitude (random with one seed too)."""

    def seeded(w, sparsity):
        return P.random_masks(w, sparsity, torch.Generator().manual_seed(7))

    for prune, scope, magnitude in [
        (P.global_magnitude_masks, Scope.GLOBAL, True),
        (P.layer_magnitude_masks, Scope.PER_LAYER, True),
        (seeded, Scope.GLOBAL, False),
    ]:
        check_pruner(
            prune, scope=scope, magnitude=magnitude, cases={"drawn": weights}, sparsities=[s1, s2]
        ).raise_for_failures()


def test_global_pruning_keeps_total_sparsity_while_per_layer_sparsity_varies():
    """Two matrices on scales 1 and 100: at 50% global pruning takes the whole
    small-scale matrix (per-matrix 100% / 0%), total exactly 50%; per-layer
    takes 50% of each."""
    g = torch.Generator().manual_seed(0)
    weights = {
        "small": torch.rand(4, 8, generator=g) + 0.5,
        "large": 100 * (torch.rand(4, 8, generator=g) + 0.5),
    }
    glob = P.global_magnitude_masks(weights, 0.5)
    assert P.sparsity_of(glob) == 0.5
    assert P.sparsity_of({"s": glob["small"]}) == 1.0 and P.sparsity_of({"l": glob["large"]}) == 0.0
    layer = P.layer_magnitude_masks(weights, 0.5)
    assert P.sparsity_of({"s": layer["small"]}) == 0.5 and P.sparsity_of({"l": layer["large"]}) == 0.5


@given(distinct_weight_dicts(), sparsities)
def test_magnitude_masks_agree_with_torch_nn_utils_prune_without_ties(weights, s):
    """Oracle: torch.nn.utils.prune.global_unstructured(L1Unstructured) and
    l1_unstructured give the same masks when no two magnitudes are equal."""
    modules = []
    for w in weights.values():
        m = torch.nn.Module()
        m.weight = torch.nn.Parameter(w.clone())
        modules.append(m)
    torch_prune.global_unstructured(
        [(m, "weight") for m in modules], pruning_method=torch_prune.L1Unstructured, amount=s
    )
    ours = P.global_magnitude_masks(weights, s)
    for m, name in zip(modules, weights, strict=True):
        assert torch.equal(m.weight_mask.bool(), ours[name]), name
    ours = P.layer_magnitude_masks(weights, s)
    for name, w in weights.items():
        m = torch.nn.Module()
        m.weight = torch.nn.Parameter(w.clone())
        torch_prune.l1_unstructured(m, "weight", amount=s)
        assert torch.equal(m.weight_mask.bool(), ours[name]), name


@pytest.mark.claim("X5")
@given(
    st.dictionaries(
        st.sampled_from(["a", "b"]),
        weight_matrix(st.one_of(tied_values, st.floats(-3, 3, width=32)), col_multiple=4),
        min_size=1,
    )
)
def test_two_four_keeps_exactly_the_two_largest_of_every_group(weights):
    masks = P.two_four_masks(weights)
    check_two_four(weights, masks)
    assert P.sparsity_of(masks) == 0.5


def test_two_four_magnitude_removes_no_less_than_per_layer_50pct():
    """Both remove half of each matrix; per-layer picks the smallest half of
    the matrix, 2:4 only within groups, so its removed |w| mass is never
    smaller (and global's, unconstrained, is the smallest of the three)."""
    g = torch.Generator().manual_seed(1)
    weights = {"a": torch.randn(16, 32, generator=g), "b": 3 * torch.randn(8, 16, generator=g)}

    def removed_mass(masks):
        return sum(float(w[~masks[n]].abs().sum()) for n, w in weights.items())

    two_four = removed_mass(P.two_four_masks(weights))
    layer = removed_mass(P.layer_magnitude_masks(weights, 0.5))
    glob = removed_mass(P.global_magnitude_masks(weights, 0.5))
    assert glob <= layer <= two_four


# --- pruned copies ------------------------------------------------------------------


@pytest.mark.parametrize("method", list(P.Method))
def test_pruned_model_is_a_copy_zeroed_exactly_where_masked(small_gpt, method):
    before = copy.deepcopy(small_gpt.state_dict())
    masks = P.masks_for(small_gpt, method, 0.5, seed=3)
    assert P.sparsity_of(masks) == 0.5 and len(masks) == 15
    assert sum(m.numel() for m in masks.values()) == 631_808
    pruned = P.apply_masks(small_gpt, masks)
    for name, value in small_gpt.state_dict().items():
        assert torch.equal(value, before[name]), f"original {name} modified"
    for name, p in pruned.named_parameters():
        original = dict(small_gpt.named_parameters())[name]
        if name in masks:
            assert torch.equal(p[masks[name]], original[masks[name]])
            assert (p[~masks[name]].view(torch.int32) == 0).all()
        else:
            assert torch.equal(p, original)


# --- storage ---------------------------------------------------------------------------


@pytest.mark.claim("P5")
@pytest.mark.parametrize("fmt", [f for f in P.Format if f is not P.Format.TWO_FOUR])
@given(dense=sparse_matrix())
def test_storage_round_trips_bit_exactly_with_closed_form_bytes(fmt, dense):
    """Includes -0.0 (stored as a value, so it comes back as -0.0)."""
    check_storage(dense, fmt)


@pytest.mark.claim("X5")
@given(dense=sparse_matrix(col_multiple=4))
def test_two_four_storage_round_trips_bit_exactly_with_closed_form_bytes(dense):
    check_storage(two_four_pruned(dense), P.Format.TWO_FOUR)


@pytest.mark.parametrize("fmt", list(P.Format))
@pytest.mark.parametrize("shape", [(1, 4), (3, 8), (5, 12)])
def test_storage_round_trips_all_zero_and_fully_dense(fmt, shape):
    """Fully dense for 2:4 means exactly 2 nonzeros in every group (more is not
    2:4 and is refused, below)."""
    g = torch.Generator().manual_seed(2)
    full = torch.randn(shape, generator=g) + 10.0
    check_storage(torch.zeros(shape), fmt)
    check_storage(two_four_pruned(full) if fmt is P.Format.TWO_FOUR else full, fmt)


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
@given(dense=sparse_matrix())
def test_coo_and_csr_hold_what_torch_sparse_holds(dense):
    """Oracle: torch's own COO/CSR of the same matrix (-0.0 made +0.0, since
    torch drops it) carry the same values and positions."""
    dense = dense + 0.0  # -0.0 + 0.0 == +0.0
    coo = P.to_stored(dense, P.Format.COO).arrays
    ref = dense.to_sparse().coalesce()
    assert torch.equal(coo["index"].long(), ref.indices()[0] * dense.shape[1] + ref.indices()[1])
    assert torch.equal(coo["values"], ref.values())
    csr = P.to_stored(dense, P.Format.CSR).arrays
    ref = dense.to_sparse_csr()
    assert torch.equal(csr["crow_indices"], ref.crow_indices())
    assert torch.equal(csr["col_indices"], ref.col_indices())
    assert torch.equal(csr["values"], ref.values())


@pytest.mark.claim("P5")
@given(rows=st.integers(1, 8), cols8=st.integers(1, 8), data=st.data())
def test_bytes_per_element_closed_forms_and_bitmask_beats_coo_exactly_below_96p875pct(rows, cols8, data):
    """n a multiple of 8: COO 8(1-s), bitmask 4(1-s) + 1/8 bytes per element,
    in exact fractions; bitmask < COO iff s < 31/32 = 96.875% (equal at it)."""
    n = rows * 8 * cols8
    z = data.draw(st.integers(0, n))
    keep = torch.zeros(n, dtype=torch.bool)
    keep[:z] = True
    keep = keep[torch.randperm(n, generator=torch.Generator().manual_seed(z))]
    dense = torch.where(keep, torch.full((n,), 1.5), torch.zeros(())).view(rows, 8 * cols8)
    s = 1 - Fraction(z, n)
    coo = Fraction(P.to_stored(dense, P.Format.COO).nbytes, n)
    bitmask = Fraction(P.to_stored(dense, P.Format.BITMASK).nbytes, n)
    assert coo == 8 * (1 - s) == P.bytes_per_element_formula(P.Format.COO, s)
    assert bitmask == 4 * (1 - s) + Fraction(1, 8) == P.bytes_per_element_formula(P.Format.BITMASK, s)
    assert (bitmask < coo) == (s < Fraction(31, 32))
    assert (bitmask == coo) == (s == Fraction(31, 32))
    assert P.break_even_sparsity(P.Format.COO, P.Format.BITMASK) == Fraction(31, 32)


@pytest.mark.claim("P5")
def test_bytes_per_element_formula_is_to_stored_count_for_dense_and_two_four():
    """The report draws its storage curves from the formula: it must be the
    byte count of real stored matrices (512x128, half of every 4 zeroed)."""
    dense = torch.arange(1.0, 1 + 512 * 128).view(512, 128)
    two_four = dense * torch.tensor([0.0, 1.0, 0.0, 1.0]).repeat(32)
    n = dense.numel()
    assert Fraction(P.to_stored(dense, P.Format.DENSE).nbytes, n) == P.bytes_per_element_formula(
        P.Format.DENSE, 0.0
    )
    assert Fraction(P.to_stored(two_four, P.Format.TWO_FOUR).nbytes, n) == P.bytes_per_element_formula(
        P.Format.TWO_FOUR, Fraction(1, 2)
    )
    with pytest.raises(ValueError, match="fmt"):
        P.bytes_per_element_formula(P.Format.CSR, 0.5)
    with pytest.raises(ValueError, match="sparsity"):
        P.bytes_per_element_formula(P.Format.COO, 1.5)
    with pytest.raises(ValueError, match="a, b"):
        P.break_even_sparsity(P.Format.DENSE, P.Format.TWO_FOUR)


# --- teeth of the storage check ---------------------------------------------------


@pytest.mark.teeth
def test_storage_check_catches_coo_with_8_byte_indices():
    dense = torch.tensor([[0.0, 1.0, 0.0, 2.0]])
    check_storage(dense, P.Format.COO)
    with pytest.raises(AssertionError):
        check_storage(dense, P.Format.COO, to_stored=coo_with_int64_index)


@pytest.mark.teeth
def test_storage_check_catches_a_bitmask_forgetting_the_values():
    dense = torch.tensor([[0.0, 1.5, 0.0, -2.0]])
    check_storage(dense, P.Format.BITMASK)
    with pytest.raises(AssertionError):
        check_storage(
            dense, P.Format.BITMASK, to_stored=bitmask_without_values, from_stored=from_bitmask_as_ones
        )


def test_matching_sparsity_is_the_first_grid_point_reaching_the_target():
    """On a curve whose loss is its sparsity, the smallest multiple of 0.001
    with loss >= 0.25 is 0.25 itself (reached, not exceeded); 0.2505 gives
    0.251; a target the unpruned curve already reaches gives 0."""
    curve = lambda method, s: s
    assert EP.matching_sparsity(curve, 0.25) == 0.25
    assert EP.matching_sparsity(curve, 0.2505) == 0.251
    assert EP.matching_sparsity(curve, 0.0) == 0.0


def test_first_sparsity_above_needs_the_level_exceeded():
    """'Above' is strict: a row equal to the level does not count."""
    rows = [{"sparsity": 0.1, "loss": 2.0}, {"sparsity": 0.3, "loss": 2.5}, {"sparsity": 0.5, "loss": 3.0}]
    assert EP.first_sparsity_above(rows, "loss", 2.0) == 0.3
    assert EP.first_sparsity_above(rows, "loss", 1.9) == 0.1
    assert EP.first_sparsity_above(rows, "loss", 3.0) is None


def test_two_four_removes_the_earlier_of_equal_magnitudes():
    """The documented tie rule by hand: in (2, 1, -1, 1) three magnitudes tie
    at 1 and two must go: the earlier ones (positions 1 and 2); in an all-equal
    group (1, 1, 1, 1) positions 0 and 1 go."""
    w = torch.tensor([[2.0, 1.0, -1.0, 1.0, 1.0, 1.0, 1.0, 1.0]])
    keep = P.two_four_masks({"w": w})["w"]
    assert keep.tolist() == [[True, False, False, True, False, False, True, True]]


def test_two_four_refuses_rows_not_a_multiple_of_4_even_when_the_total_is():
    """A 2 x 6 matrix has 12 weights (a multiple of 4) but its groups of 4
    would straddle rows, which no 2:4 kernel accepts: refused, naming it."""
    with pytest.raises(ValueError, match=r"w has shape \(2, 6\)"):
        P.two_four_masks({"w": torch.ones(2, 6)})


# --- edge inputs: ties at the threshold and counts at exactly .5 (each pins the
# documented rule on the one input where another tie order or rounding differs) ---
# --- pruning: ties at the threshold ------------------------------------------------


def test_global_ties_at_the_threshold_go_in_matrix_then_position_order():
    """Magnitudes 1 (four times, signs mixed) straddle the cut: removing 3 of
    8 takes the 0.5 and then the first two 1s in (matrix order, flat
    position) order, the documented rule; -1 and 1 are equal magnitudes."""
    weights = {"a": torch.tensor([[2.0, -1.0], [1.0, 3.0]]), "b": torch.tensor([[1.0, 0.5], [-1.0, 4.0]])}
    masks = P.global_magnitude_masks(weights, 3 / 8)
    assert masks["a"].tolist() == [[True, False], [False, True]]
    assert masks["b"].tolist() == [[True, False], [True, True]]


def test_layer_ties_at_the_threshold_go_in_flat_position_order():
    """Per matrix, equal magnitudes leave in flat (row-major) position order:
    of five 1s in a 2x4 matrix, 40% of 8 removes 3 (3.2 rounds to 3), the
    first three 1s."""
    w = torch.tensor([[5.0, 1.0, -1.0, 2.0], [1.0, -1.0, 1.0, 3.0]])
    keep = P.layer_magnitude_masks({"w": w}, 0.4)["w"]
    assert keep.tolist() == [[True, False, False, True], [False, True, True, True]]


def test_two_four_ties_remove_the_earlier_position_first():
    """2:4 with all four magnitudes equal keeps the last two; with three
    equal smallest, the first two of them go."""
    w = torch.tensor([[1.0, -1.0, 1.0, -1.0, 2.0, 1.0, 1.0, 1.0]])
    keep = P.two_four_masks({"w": w})["w"]
    assert keep.tolist() == [[False, False, True, True, True, False, False, True]]


# --- counts at exactly .5 --------------------------------------------------------------


@pytest.mark.parametrize(
    "sparsity, n, expected",
    [
        (0.5, 5, 2),  # 2.5 -> 2 (half to even), not 3
        (0.5, 7, 4),  # 3.5 -> 4
        (0.25, 10, 2),  # 2.5 -> 2
        (0.75, 10, 8),  # 7.5 -> 8
        (0.5, 1, 0),  # 0.5 -> 0
        (0.5, 3, 2),  # 1.5 -> 2
        (0.125, 20, 2),  # 2.5 -> 2
    ],
)
def test_n_removed_rounds_half_to_even_as_torch_prune(sparsity, n, expected):
    """aftertrain's documented rule is round(s * n), half to even, the number
    torch.nn.utils.prune computes (its _compute_nparams_toprune); on products
    that are exactly x.5, round half up would give one more every other time."""
    assert P.n_removed(sparsity, n) == expected
    assert torch_prune._compute_nparams_toprune(sparsity, n) == expected


@pytest.mark.parametrize("sparsity, n", [(0.5, 5), (0.5, 7), (0.25, 10), (0.75, 10)])
def test_masks_remove_the_same_count_and_positions_as_torch_l1_unstructured(sparsity, n):
    """On distinct magnitudes, a per-matrix magnitude mask at a .5 count
    removes exactly the weights torch's l1_unstructured removes."""
    w = torch.randperm(n, generator=torch.Generator().manual_seed(n)).float().add(1.0)
    w = (w * torch.tensor([(-1.0) ** i for i in range(n)])).view(1, n)
    lin = torch.nn.Linear(n, 1, bias=False)
    with torch.no_grad():
        lin.weight.copy_(w)
    torch_prune.l1_unstructured(lin, "weight", amount=sparsity)
    ours = P.layer_magnitude_masks({"w": w}, sparsity)["w"]
    assert torch.equal(ours, lin.weight_mask.bool())
    assert int((~ours).sum()) == P.n_removed(sparsity, n)


# --- quantization: values exactly on the rounding grid ----------------------------------
