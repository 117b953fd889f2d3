"""Symmetric uniform weight quantization (part 3).

:mod:`aftertrain.quant.primitives` holds the pure tensor functions (the rule,
the integer form); :mod:`aftertrain.quant.api` applies them to a whole model.
The article's experiments are in :mod:`aftertrain.experiments.quant`. The
public names of both modules are importable from here.
"""

from aftertrain.quant.api import quantized_model, storage_bytes, weight_names
from aftertrain.quant.primitives import (
    FLOAT32_MAX,
    MAX_BITS,
    MIN_BITS,
    SCALE_FLOOR,
    Granularity,
    QuantizedTensor,
    dequantize,
    fake_quantize,
    pack_codes,
    qmax_for,
    quantize_codes,
    scales,
    unpack_codes,
)

__all__ = [
    "FLOAT32_MAX",
    "MAX_BITS",
    "MIN_BITS",
    "SCALE_FLOOR",
    "Granularity",
    "QuantizedTensor",
    "dequantize",
    "fake_quantize",
    "pack_codes",
    "qmax_for",
    "quantize_codes",
    "quantized_model",
    "scales",
    "storage_bytes",
    "unpack_codes",
    "weight_names",
]
