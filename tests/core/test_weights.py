"""aftertrain.core.weights: the one "2-D weights of a model" selector that
quantization, pruning and the experiments share."""

from __future__ import annotations

import pytest
import torch

from aftertrain.core.weights import weight_matrices
from aftertrain.prune import prunable_weights
from aftertrain.quant import storage_bytes, weight_names
from tests.common.toys import toy_gpt


def test_weight_matrices_are_the_2d_parameters_in_model_order():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4), torch.nn.Linear(4, 2))
    assert list(weight_matrices(model)) == ["0.weight", "2.weight"]
    assert list(weight_matrices(model, ["2.weight", "0.weight"])) == ["0.weight", "2.weight"]
    assert weight_matrices(model)["2.weight"] is model[2].weight
    assert weight_matrices(model, []) == {}  # quantizing none is a copy; pruning refuses it


def test_quant_prune_and_storage_select_the_same_weights():
    model = toy_gpt(8, seed=0)
    names = list(weight_matrices(model))
    assert names == weight_names(model) == list(prunable_weights(model))
    assert storage_bytes(model)["weights"] == sum(p.numel() for p in weight_matrices(model).values())


@pytest.mark.parametrize(
    "model, names, words",
    [
        ("gpt", None, ["model", "Module"]),
        (torch.nn.ReLU(), None, ["model", "at least one 2-D weight"]),
        (torch.nn.Linear(2, 2), "weight", ["names", "string"]),
        (torch.nn.Linear(2, 2), 3, ["names", "iterable"]),
        (torch.nn.Linear(2, 2), ["bias"], ["names", "valid names", "'weight'"]),
    ],
)
def test_weight_matrices_rejects_bad_input_naming_the_argument(model, names, words):
    with pytest.raises(ValueError) as err:
        weight_matrices(model, names)
    assert all(w in str(err.value) for w in words), str(err.value)
