"""Bad inputs to the pruning API: one case per (function, bad value), each a
ValueError whose message names the argument and what is allowed."""

from __future__ import annotations

import pytest
import torch

from aftertrain import prune as P
from aftertrain.checks.prune import Scope, check_pruner
from aftertrain.checks.prune import battery as prune_battery
from aftertrain.experiments import prune as EP
from tests.common.bad_inputs import Lazy, case_id, check_raises_naming

MODEL = Lazy(lambda model: model)  # the small_gpt fixture (built when the case runs)
W = {"w": torch.ones(2, 4)}
NAN = torch.ones(2, 4)
NAN[1, 1] = float("nan")
GEN = torch.Generator()


def _curve(method, s):
    return s


CASES = [
    *[
        (P.global_magnitude_masks, dict(weights=W, sparsity=bad), ["sparsity", "[0, 1]"])
        for bad in (-0.01, 1.01, float("nan"), float("inf"), "0.5", None, True)
    ],
    (P.layer_magnitude_masks, dict(weights=W, sparsity=2), ["sparsity", "[0, 1]"]),
    (P.random_masks, dict(weights=W, sparsity=-1, generator=GEN), ["sparsity"]),
    (P.random_masks, dict(weights=W, sparsity=0.5, generator=0), ["generator"]),
    (P.global_magnitude_masks, dict(weights={"w": NAN}, sparsity=0.5), ["weights: w holds NaN"]),
    (P.global_magnitude_masks, dict(weights={}, sparsity=0.5), ["weights", "at least one"]),
    (P.global_magnitude_masks, dict(weights=[torch.ones(2)], sparsity=0.5), ["weights", "dict"]),
    (
        P.global_magnitude_masks,
        dict(weights={"w": torch.empty(0, 4)}, sparsity=0.5),
        ["weights: w", "at least one element"],
    ),
    (
        P.global_magnitude_masks,
        dict(weights={"w": torch.ones(2, 2, dtype=torch.int64)}, sparsity=0.5),
        ["weights: w", "floating"],
    ),
    (P.layer_magnitude_masks, dict(weights={"w": [1.0, 2.0]}, sparsity=0.5), ["weights: w", "tensor"]),
    (P.two_four_masks, dict(weights={"w": torch.ones(3, 6)}), ["weights: 2:4", r"(3, 6)"]),
    (P.two_four_masks, dict(weights={"w": torch.ones(8)}), ["weights: 2:4", "2-D"]),
    (P.n_removed, dict(sparsity=0.5, n=-3), ["n", ">= 0"]),
    (P.n_removed, dict(sparsity=1.5, n=3), ["sparsity"]),
    (P.MagnitudeRanking, dict(weights=W, per_layer="yes"), ["per_layer", "bool"]),
    (P.prunable_weights, dict(model="gpt"), ["model", "Module"]),
    (P.prunable_weights, dict(model=MODEL, names=["blocks.9.f1.weight"]), ["names", "valid"]),
    (P.prunable_weights, dict(model=MODEL, names="tok.weight"), ["names"]),
    (P.prunable_weights, dict(model=MODEL, names=[]), ["names", "no 2-D weight"]),
    (P.masks_for, dict(model=MODEL, method="global", sparsity=0.5), ["method", "GLOBAL"]),
    (P.masks_for, dict(model=MODEL, method=P.Method.TWO_FOUR, sparsity=0.3), ["sparsity: 2:4"]),
    (P.masks_for, dict(model=MODEL, method=P.Method.RANDOM, sparsity=0.3, seed=-1), ["seed", "[0, 2**64)"]),
    (P.pruned_model, dict(model=MODEL, method=P.Method.GLOBAL, sparsity=float("nan")), ["sparsity"]),
    (P.apply_masks, dict(model=MODEL, masks={"nope": torch.ones(2, dtype=torch.bool)}), ["masks", "'nope'"]),
    (
        P.apply_masks,
        dict(model=MODEL, masks={"head.weight": torch.ones(100, 128)}),
        ["masks", "bool tensor of shape (100, 128)"],
    ),
    (P.apply_masks, dict(model=MODEL, masks=[1]), ["masks", "dict"]),
    (P.apply_masks, dict(model=None, masks={}), ["model", "Module"]),
    (P.sparsity_of, dict(masks={}), ["masks", "non-empty"]),
    (P.sparsity_of, dict(masks={"w": torch.ones(2)}), ["masks: 'w'", "bool"]),
    (P.sparsity_of, dict(masks={"w": torch.ones(0, dtype=torch.bool)}), ["masks", "at least one position"]),
    (P.to_stored, dict(dense=torch.zeros(2, 6), fmt=P.Format.TWO_FOUR), ["dense: 2:4 storage"]),
    (P.to_stored, dict(dense=torch.ones(2, 4), fmt=P.Format.TWO_FOUR), ["dense", "more than 2 nonzeros"]),
    (
        P.to_stored,
        dict(dense=torch.ones(2, 4, dtype=torch.float64), fmt=P.Format.DENSE),
        ["dense must be a 2-D float32"],
    ),
    (P.to_stored, dict(dense=torch.ones(4), fmt=P.Format.COO), ["dense must be a 2-D float32"]),
    (P.to_stored, dict(dense=torch.ones(0, 4), fmt=P.Format.COO), ["dense", "at least one"]),
    (P.to_stored, dict(dense=torch.ones(2, 4), fmt="COO"), ["fmt", "Format"]),
    (P.from_stored, dict(stored={"values": torch.ones(2)}), ["stored", "Stored"]),
    (P.bytes_per_element, dict(matrices=[], fmt=P.Format.COO), ["matrices", "at least one"]),
    (P.bytes_per_element, dict(matrices=torch.ones(2, 4), fmt=P.Format.COO), ["matrices", "iterable"]),
    (EP.LossCurve, dict(model="gpt"), ["model", "Module"]),
    (EP.LossCurve, dict(model=MODEL, evaluate=3), ["evaluate", "callable"]),
    (EP.matching_sparsity, dict(curve=_curve, target=float("nan")), ["target", "finite"]),
    (EP.matching_sparsity, dict(curve=_curve, target=0.5, upper=1.5), ["sparsity"]),
    (EP.matching_sparsity, dict(curve=_curve, target=0.5, resolution=0.0), ["resolution"]),
    (EP.matching_sparsity, dict(curve=_curve, target=0.95), ["target", "above the loss"]),
    (EP.first_sparsity_above, dict(rows=[{"sparsity": 0.1}], key="loss", level=1.0), ["rows", "'loss'"]),
    (EP.first_sparsity_above, dict(rows=[], key="loss", level=float("nan")), ["level"]),
    (EP.bytes_table, dict(model=MODEL, sparsities=[0.5, 2.0]), ["sparsities", "[0, 1]"]),
    (EP.bytes_table, dict(model=MODEL, sparsities=[]), ["sparsities", "non-empty"]),
    (EP.quantization_vs_pruning, dict(curve=None, int8_loss=1.0), ["curve", "LossCurve"]),
    (EP.two_four_comparison, dict(curve="curve"), ["curve", "LossCurve"]),
    (EP.loss_table, dict(curve=_curve), ["curve", "LossCurve"]),
    (EP.random_table, dict(curve=None), ["curve", "LossCurve"]),
    (check_pruner, dict(prune=None, scope=Scope.GLOBAL), ["prune", "callable"]),
    (check_pruner, dict(prune=P.global_magnitude_masks, scope="global"), ["scope", "GLOBAL"]),
    (
        check_pruner,
        dict(prune=P.global_magnitude_masks, scope=Scope.GLOBAL, sparsities=[1.5]),
        ["sparsities", "[0, 1]"],
    ),
    (
        check_pruner,
        dict(prune=P.global_magnitude_masks, scope=Scope.GLOBAL, magnitude="yes"),
        ["magnitude", "bool"],
    ),
    (
        check_pruner,
        dict(prune=P.global_magnitude_masks, scope=Scope.GLOBAL, cases={"x": {"w": NAN}}),
        ["cases", "NaN"],
    ),
    # --- inputs that once failed silently or obscurely
    (
        P.layer_magnitude_masks,
        dict(weights={"w": torch.tensor([[float("inf"), 1.0]])}, sparsity=0.5),
        ["weights: w holds NaN or inf"],
    ),
    (
        P.to_stored,
        dict(dense=torch.tensor([[float("nan"), 0.0]]), fmt=P.Format.COO),
        ["dense must be finite"],
    ),
    (P.from_stored, dict(stored=P.Stored(P.Format.COO, (2, 2), {})), ["stored", "COO"]),
    (
        P.from_stored,
        dict(stored=P.Stored(P.Format.DENSE, (3, 3), {"values": torch.zeros(4)})),
        ["stored", "(3, 3)"],
    ),
    (P.bytes_per_element, dict(matrices=[torch.zeros(0, 4)], fmt=P.Format.COO), ["matrices[0]", "non-empty"]),
    (EP.first_sparsity_above, dict(rows=[], key="loss", level=1.0), ["rows", "at least one"]),
    (
        EP.matching_sparsity,
        dict(curve=Lazy(lambda m: EP.LossCurve(m, evaluate=lambda x: 1.0)), target=1.0, upper=1.5),
        ["upper", "[0, 1]"],
    ),
    (
        Lazy(lambda m: EP.LossCurve(m, evaluate=lambda x: float("nan"))),
        dict(method=P.Method.GLOBAL, sparsity=0.5),
        ["evaluate must return a finite loss"],
    ),
    (prune_battery, dict(seed=-1), ["seed", "[0, 2**64)"]),
]


@pytest.mark.parametrize("fn, kwargs, words", CASES, ids=[case_id(c) for c in CASES])
def test_bad_input_raises_value_error_naming_it(fn, kwargs, words, small_gpt):
    check_raises_naming(fn, kwargs, words, small_gpt)


def test_weight_range_ratios_of_a_heavily_pruned_model_is_a_clear_error(small_gpt):
    """Regression: a ZeroDivisionError deep inside; now a ValueError
    naming the matrix whose median row range is 0."""
    from aftertrain.experiments.quant import weight_range_ratios

    pruned = P.pruned_model(small_gpt, P.Method.LAYER, 0.999)
    with pytest.raises(ValueError, match="model: .* median 0"):
        weight_range_ratios(pruned)
