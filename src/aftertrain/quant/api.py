"""Quantization applied to a whole model (torchao ``quant_api`` style).

:func:`quantized_model` fake-quantizes a model's 2-D weights with the
primitives of :mod:`aftertrain.quant.primitives`; :func:`storage_bytes`
counts what the quantized model really stores.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

import torch
from torch import nn

from aftertrain.core.weights import weight_matrices
from aftertrain.quant.primitives import (
    FLOAT32_BYTES,
    Granularity,
    QuantizedTensor,
    check_bits,
    check_granularity,
    fake_quantize,
)


def weight_names(model: nn.Module) -> list[str]:
    """Names of the model's 2-D parameters, in registration order
    (:func:`aftertrain.core.weights.weight_matrices`)."""
    return list(weight_matrices(model))


def quantized_model(
    model: nn.Module,
    bits: int,
    granularity: Granularity = Granularity.PER_CHANNEL,
    names: Iterable[str] | None = None,
) -> nn.Module:
    """A deep copy of ``model`` whose named 2-D weights are fake-quantized.

    ``names`` defaults to every 2-D parameter (embeddings included); 1-D
    parameters (biases, LayerNorms) stay float32 and untouched. The original
    model is not modified.
    """
    check_bits(bits)
    check_granularity(granularity)
    chosen = weight_matrices(model, names)
    copied = copy.deepcopy(model)
    params = dict(copied.named_parameters())
    with torch.no_grad():
        for name in chosen:
            params[name].copy_(fake_quantize(params[name], bits, granularity))
    return copied


def storage_bytes(
    model: nn.Module,
    bits: int = 8,
    granularity: Granularity = Granularity.PER_TENSOR,
    names: Iterable[str] | None = None,
) -> dict[str, int]:
    """Exact storage of ``model`` before and after quantizing ``names``.

    Counted from real :class:`QuantizedTensor` objects, not a formula:

    - ``weights`` / ``parameters``: element counts (2-D weights; all).
    - ``weights_fp32_bytes``: 4 per 2-D weight element.
    - ``weight_code_bytes``: packed codes of the quantized weights
      (``ceil(numel * bits / 8)`` each) plus 4 per weight left in float32.
    - ``scale_bytes``: 4 per float32 scale (1 per tensor per-tensor, 1 per
      row per-channel).
    - ``parameters_fp32_bytes``: 4 per parameter.
    - ``parameters_quantized_bytes``: codes + scales + 4 per element of every
      parameter left in float32 (the 1-D ones always).
    """
    check_bits(bits)
    check_granularity(granularity)
    matrices, chosen = weight_matrices(model), weight_matrices(model, names)
    weights = sum(p.numel() for p in matrices.values())
    parameters = code_bytes = scale_bytes = float_bytes = 0
    for name, p in model.named_parameters():
        parameters += p.numel()
        if name in chosen:
            qt = QuantizedTensor.from_float(p, bits, granularity)
            code_bytes += qt.packed.numel()
            scale_bytes += FLOAT32_BYTES * qt.scales.numel()
        else:
            float_bytes += FLOAT32_BYTES * p.numel()
    float_weight_bytes = FLOAT32_BYTES * sum(p.numel() for n, p in matrices.items() if n not in chosen)
    return {
        "weights": weights,
        "parameters": parameters,
        "weights_fp32_bytes": FLOAT32_BYTES * weights,
        "weight_code_bytes": code_bytes + float_weight_bytes,
        "scale_bytes": scale_bytes,
        "parameters_fp32_bytes": FLOAT32_BYTES * parameters,
        "parameters_quantized_bytes": code_bytes + scale_bytes + float_bytes,
    }
