"""Pruning masks and sparse storage (aftertrain.prune): properties, oracles, teeth.

Every property is written once as a ``check_*`` function that raises
``AssertionError``; the hypothesis tests run it on the real code, and the
teeth tests at the end run it on a deliberately broken variant (kept here,
never in src/) and require it to fail.
"""

from __future__ import annotations

import copy
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.nn.utils import prune as torch_prune

from aftertrain import prune as P
from aftertrain.model import GPT
from strategies import (distinct_weight_dicts, sparse_matrix, sparsities, tied_values,
                        weight_dicts, weight_matrix)

# --- checks -------------------------------------------------------------------


def removed_count(masks) -> int:
    return sum(int((~m).sum()) for m in masks.values())


def check_global_count(weights, masks, sparsity) -> None:
    """Exactly round(s * N) removed over all matrices together."""
    n = sum(w.numel() for w in weights.values())
    assert removed_count(masks) == round(sparsity * n), (removed_count(masks), sparsity, n)


def check_layer_count(weights, masks, sparsity) -> None:
    """Exactly round(s * n_i) removed from every matrix i."""
    for name, w in weights.items():
        assert int((~masks[name]).sum()) == round(sparsity * w.numel()), name


def check_magnitude_order(groups) -> None:
    """Within each (weights, keep) group no removed |w| exceeds a kept |w|."""
    for w, keep in groups:
        a = w.abs().reshape(-1)
        keep = keep.reshape(-1)
        if keep.any() and (~keep).any():
            assert a[~keep].max() <= a[keep].min(), (a[~keep].max(), a[keep].min())


def check_global_magnitude(weights, masks) -> None:
    check_magnitude_order([(torch.cat([w.reshape(-1) for w in weights.values()]),
                            torch.cat([m.reshape(-1) for m in masks.values()]))])


def check_layer_magnitude(weights, masks) -> None:
    check_magnitude_order([(w, masks[n]) for n, w in weights.items()])


def check_nested(small, large) -> None:
    """Every position removed by the smaller sparsity is removed by the larger."""
    for name in small:
        assert not (~small[name] & large[name]).any(), name


def check_two_four(weights, masks) -> None:
    """Exactly 2 kept in every row group of 4, and they are the group's largest |w|."""
    for name, w in weights.items():
        keep = masks[name].reshape(-1, 4)
        assert (keep.sum(1) == 2).all(), name
        check_magnitude_order(zip(w.reshape(-1, 4), keep))


def expected_nbytes(dense: torch.Tensor, fmt: P.Format) -> int:
    """Closed forms: n elements, z kept (bits not +0.0), r rows."""
    n, r = dense.numel(), dense.shape[0]
    z = int((dense.reshape(-1).view(torch.int32) != 0).sum())
    return {P.Format.DENSE: 4 * n,
            P.Format.COO: 8 * z,                       # 4-byte value + 4-byte flat index
            P.Format.BITMASK: -(-n // 8) + 4 * z,     # 1 bit per element + kept values
            P.Format.CSR: 4 * z + 8 * z + 8 * (r + 1),  # torch: int64 col and crow indices
            P.Format.TWO_FOUR: 2 * n + -(-n // 8),    # n/2 values + 2 bits for each
            }[fmt]


def check_storage(dense: torch.Tensor, fmt: P.Format, encode=P.encode, decode=P.decode) -> None:
    """Bit-exact round trip and the closed-form byte count."""
    stored = encode(dense, fmt)
    back = decode(stored)
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
    masks = P.global_magnitude_masks(weights, s)
    check_global_count(weights, masks, s)
    check_global_magnitude(weights, masks)


@given(weight_dicts(tied_values), sparsities)
def test_layer_magnitude_removes_exactly_round_s_n_from_each_matrix(weights, s):
    masks = P.layer_magnitude_masks(weights, s)
    check_layer_count(weights, masks, s)
    check_layer_magnitude(weights, masks)


@given(weight_dicts(), sparsities, st.integers(0, 2**31 - 1))
def test_random_removes_exactly_round_s_n_and_replays_from_the_seed(weights, s, seed):
    masks = P.random_masks(weights, s, torch.Generator().manual_seed(seed))
    check_global_count(weights, masks, s)
    again = P.random_masks(weights, s, torch.Generator().manual_seed(seed))
    assert all(torch.equal(masks[n], again[n]) for n in masks)


@given(weight_dicts(st.one_of(tied_values, st.floats(-3, 3, width=32))), sparsities, sparsities)
def test_magnitude_masks_are_nested_across_sparsities(weights, s1, s2):
    """The zeros at the smaller sparsity are among those at the larger, for
    global and per-layer magnitude (random with one seed too)."""
    lo, hi = sorted((s1, s2))
    check_nested(P.global_magnitude_masks(weights, lo), P.global_magnitude_masks(weights, hi))
    check_nested(P.layer_magnitude_masks(weights, lo), P.layer_magnitude_masks(weights, hi))
    check_nested(P.random_masks(weights, lo, torch.Generator().manual_seed(7)),
                 P.random_masks(weights, hi, torch.Generator().manual_seed(7)))


def test_global_pruning_keeps_total_sparsity_while_per_layer_sparsity_varies():
    """Two matrices on scales 1 and 100: at 50% global pruning takes the whole
    small-scale matrix (per-matrix 100% / 0%), total exactly 50%; per-layer
    takes 50% of each."""
    g = torch.Generator().manual_seed(0)
    weights = {"small": torch.rand(4, 8, generator=g) + 0.5,
               "large": 100 * (torch.rand(4, 8, generator=g) + 0.5)}
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
    torch_prune.global_unstructured([(m, "weight") for m in modules],
                                    pruning_method=torch_prune.L1Unstructured, amount=s)
    ours = P.global_magnitude_masks(weights, s)
    for m, name in zip(modules, weights):
        assert torch.equal(m.weight_mask.bool(), ours[name]), name
    ours = P.layer_magnitude_masks(weights, s)
    for name, w in weights.items():
        m = torch.nn.Module()
        m.weight = torch.nn.Parameter(w.clone())
        torch_prune.l1_unstructured(m, "weight", amount=s)
        assert torch.equal(m.weight_mask.bool(), ours[name]), name


@pytest.mark.claim("X5")
@given(st.dictionaries(st.sampled_from(["a", "b"]),
                       weight_matrix(st.one_of(tied_values, st.floats(-3, 3, width=32)),
                                     col_multiple=4), min_size=1))
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


@pytest.fixture(scope="module")
def small_gpt():
    torch.manual_seed(0)  # a test-local model; the library never seeds
    return GPT().eval()


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


@given(dense=sparse_matrix())
def test_coo_and_csr_hold_what_torch_sparse_holds(dense):
    """Oracle: torch's own COO/CSR of the same matrix (-0.0 made +0.0, since
    torch drops it) carry the same values and positions."""
    dense = dense + 0.0  # -0.0 + 0.0 == +0.0
    coo = P.encode(dense, P.Format.COO).arrays
    ref = dense.to_sparse().coalesce()
    assert torch.equal(coo["index"].long(), ref.indices()[0] * dense.shape[1] + ref.indices()[1])
    assert torch.equal(coo["values"], ref.values())
    csr = P.encode(dense, P.Format.CSR).arrays
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
    coo = Fraction(P.encode(dense, P.Format.COO).nbytes, n)
    bitmask = Fraction(P.encode(dense, P.Format.BITMASK).nbytes, n)
    assert coo == 8 * (1 - s)
    assert bitmask == 4 * (1 - s) + Fraction(1, 8)
    assert (bitmask < coo) == (s < Fraction(31, 32))
    assert (bitmask == coo) == (s == Fraction(31, 32))


# --- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [-0.01, 1.01, float("nan"), float("inf"), "0.5", None, True])
def test_sparsity_outside_0_1_is_refused(small_gpt, bad):
    weights = {"w": torch.ones(2, 4)}
    with pytest.raises(ValueError, match="sparsity"):
        P.global_magnitude_masks(weights, bad)
    with pytest.raises(ValueError, match="sparsity"):
        P.layer_magnitude_masks(weights, bad)
    with pytest.raises(ValueError, match="sparsity"):
        P.random_masks(weights, bad, torch.Generator())
    with pytest.raises(ValueError, match="sparsity"):
        P.pruned_model(small_gpt, P.Method.GLOBAL, bad)


def test_nan_weights_unknown_names_and_bad_two_four_shapes_are_refused(small_gpt):
    nan = torch.ones(2, 4)
    nan[1, 1] = float("nan")
    with pytest.raises(ValueError, match="weights: w holds NaN"):
        P.global_magnitude_masks({"w": nan}, 0.5)
    broken = copy.deepcopy(small_gpt)
    with torch.no_grad():
        broken.head.weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match="head.weight holds NaN"):
        P.pruned_model(broken, P.Method.LAYER, 0.5)
    with pytest.raises(ValueError, match="names"):
        P.pruned_model(small_gpt, P.Method.GLOBAL, 0.5, names=["blocks.9.f1.weight"])
    with pytest.raises(ValueError, match="weights: 2:4.*w has shape \\(3, 6\\)"):
        P.two_four_masks({"w": torch.ones(3, 6)})
    with pytest.raises(ValueError, match="sparsity: 2:4"):
        P.masks_for(small_gpt, P.Method.TWO_FOUR, 0.3)
    with pytest.raises(ValueError, match="generator"):
        P.random_masks({"w": torch.ones(2, 4)}, 0.5, 0)
    with pytest.raises(ValueError, match="dense: 2:4 storage"):
        P.encode(torch.zeros(2, 6), P.Format.TWO_FOUR)
    with pytest.raises(ValueError, match="more than 2 nonzeros"):
        P.encode(torch.ones(2, 4), P.Format.TWO_FOUR)
    with pytest.raises(ValueError, match="dense must be a 2-D float32"):
        P.encode(torch.ones(2, 4, dtype=torch.float64), P.Format.DENSE)
    with pytest.raises(ValueError, match="masks"):
        P.apply_masks(small_gpt, {"nope": torch.ones(2, dtype=torch.bool)})


# --- teeth: broken variants the checks above reject ---------------------------------


def signed_global_masks(weights, s):
    """Broken: ranks by signed value, so large negative weights go first."""
    flat = torch.cat([w.reshape(-1) for w in weights.values()])
    keep = torch.ones(flat.numel(), dtype=torch.bool)
    keep[torch.sort(flat, stable=True).indices[:round(s * flat.numel())]] = False
    return P._split(keep, {n: w.shape for n, w in weights.items()})


def threshold_global_masks(weights, s):
    """Broken: keeps |w| above the k-th smallest magnitude, removing every tie."""
    flat = torch.cat([w.reshape(-1) for w in weights.values()]).abs()
    k = round(s * flat.numel())
    if k == 0:
        return {n: torch.ones_like(w, dtype=torch.bool) for n, w in weights.items()}
    threshold = torch.sort(flat).values[k - 1]
    return {n: w.abs() > threshold for n, w in weights.items()}


def coo_with_int64_index(dense, fmt):
    """Broken: claims COO but keeps 8-byte indices (12 bytes per kept value)."""
    stored = P.encode(dense, fmt)
    if fmt is P.Format.COO:
        stored.arrays["index"] = stored.arrays["index"].to(torch.int64)
    return stored


def bitmask_without_values(dense, fmt):
    """Broken: a bitmask that stores the bits and forgets the kept values."""
    stored = P.encode(dense, fmt)
    if fmt is P.Format.BITMASK:
        stored = P.Stored(fmt, stored.shape, {"bits": stored.arrays["bits"]})
    return stored


def decode_bitmask_as_ones(stored):
    # The only decoding possible without values: ones where the bit is set.
    if "values" in stored.arrays or stored.format is not P.Format.BITMASK:
        return P.decode(stored)
    n = stored.shape[0] * stored.shape[1]
    bits = np.unpackbits(stored.arrays["bits"].numpy(), count=n).astype(np.float32)
    return torch.from_numpy(bits).view(stored.shape)


MIXED = {"a": torch.tensor([[-3.0, 1.0, 2.0, -0.5]]), "b": torch.tensor([[4.0, -6.0, 0.25, 5.0]])}
TIED = {"a": torch.tensor([[-2.0, 0.0, 2.0, 0.0]]), "b": torch.tensor([[2.0, 0.0, -2.0, 2.0]])}
SCALES = {"small": torch.tensor([[0.1, -0.2, 0.3, 0.4]]), "large": torch.tensor([[10.0, 20.0, -30.0, 40.0]])}


@pytest.mark.claim("X7")
def test_teeth_magnitude_by_signed_value_is_rejected():
    """X7 'magnitude threshold on signed values': the signed ranking removes
    -3 and -6 first, which the magnitude-order check refuses."""
    check_global_magnitude(MIXED, P.global_magnitude_masks(MIXED, 0.25))
    with pytest.raises(AssertionError):
        check_global_magnitude(MIXED, signed_global_masks(MIXED, 0.25))


def test_teeth_per_layer_and_global_swapped_are_rejected():
    """Global via per-layer cuts the large-scale matrix too (order check);
    per-layer via global takes all of the small matrix (per-matrix count)."""
    check_global_magnitude(SCALES, P.global_magnitude_masks(SCALES, 0.5))
    check_layer_count(SCALES, P.layer_magnitude_masks(SCALES, 0.5), 0.5)
    with pytest.raises(AssertionError):
        check_global_magnitude(SCALES, P.layer_magnitude_masks(SCALES, 0.5))
    with pytest.raises(AssertionError):
        check_layer_count(SCALES, P.global_magnitude_masks(SCALES, 0.5), 0.5)


def test_teeth_threshold_mask_removing_extra_ties_is_rejected():
    """Three zeros among eight weights: at 25% (k = 2) a threshold at the
    k-th smallest magnitude removes all three zeros, not two."""
    check_global_count(TIED, P.global_magnitude_masks(TIED, 0.25), 0.25)
    with pytest.raises(AssertionError):
        check_global_count(TIED, threshold_global_masks(TIED, 0.25), 0.25)


def test_teeth_coo_with_8_byte_indices_is_rejected():
    dense = torch.tensor([[0.0, 1.0, 0.0, 2.0]])
    check_storage(dense, P.Format.COO)
    with pytest.raises(AssertionError):
        check_storage(dense, P.Format.COO, encode=coo_with_int64_index)


def test_teeth_bitmask_forgetting_the_values_is_rejected():
    dense = torch.tensor([[0.0, 1.5, 0.0, -2.0]])
    check_storage(dense, P.Format.BITMASK)
    with pytest.raises(AssertionError):
        check_storage(dense, P.Format.BITMASK, encode=bitmask_without_values,
                      decode=decode_bitmask_as_ones)


def test_matching_sparsity_is_the_first_grid_point_reaching_the_target():
    """On a curve whose loss is its sparsity, the smallest multiple of 0.001
    with loss >= 0.25 is 0.25 itself (reached, not exceeded); 0.2505 gives
    0.251; a target the unpruned curve already reaches gives 0."""
    curve = lambda method, s: s  # noqa: E731
    assert P.matching_sparsity(curve, 0.25) == 0.25
    assert P.matching_sparsity(curve, 0.2505) == 0.251
    assert P.matching_sparsity(curve, 0.0) == 0.0


def test_first_sparsity_above_needs_the_level_exceeded():
    """'Above' is strict: a row equal to the level does not count."""
    rows = [{"sparsity": 0.1, "loss": 2.0}, {"sparsity": 0.3, "loss": 2.5},
            {"sparsity": 0.5, "loss": 3.0}]
    assert P.first_sparsity_above(rows, "loss", 2.0) == 0.3
    assert P.first_sparsity_above(rows, "loss", 1.9) == 0.1
    assert P.first_sparsity_above(rows, "loss", 3.0) is None


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
