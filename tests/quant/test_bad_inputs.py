"""Bad inputs to the quantization API: one case per (function, bad value),
each a ValueError whose message names the argument and what is allowed."""

from __future__ import annotations

import pytest
import torch

from aftertrain.checks.quant import battery, check_quantizer, reference_quantizer
from aftertrain.core import packing
from aftertrain.experiments import quant as EQ
from aftertrain.quant import (
    Granularity,
    QuantizedTensor,
    dequantize,
    fake_quantize,
    pack_codes,
    qmax_for,
    quantize_codes,
    quantized_model,
    scales,
    storage_bytes,
    unpack_codes,
    weight_names,
)
from tests.common.bad_inputs import Lazy, case_id, check_raises_naming

G = Granularity
MODEL = Lazy(lambda model: model)  # the small_gpt fixture (built when the case runs)
W = torch.ones(2, 4)
NAN = torch.tensor([[1.0, float("nan")]])
INF = torch.tensor([[1.0, float("inf")]])
BIG64 = torch.tensor([[1e39, 1.0]], dtype=torch.float64)

CASES = [
    (fake_quantize, dict(w=W, bits=1, granularity=G.PER_TENSOR), ["bits", "[2, 8]"]),
    (fake_quantize, dict(w=W, bits=9, granularity=G.PER_TENSOR), ["bits", "[2, 8]"]),
    (fake_quantize, dict(w=W, bits=4.0, granularity=G.PER_TENSOR), ["bits", "int"]),
    (fake_quantize, dict(w=W, bits=True, granularity=G.PER_TENSOR), ["bits"]),
    (fake_quantize, dict(w=W, bits="8", granularity=G.PER_TENSOR), ["bits"]),
    (fake_quantize, dict(w=W, bits=8, granularity="per-channel"), ["granularity", "PER_CHANNEL"]),
    (fake_quantize, dict(w=W, bits=8, granularity=None), ["granularity"]),
    (
        fake_quantize,
        dict(w=torch.ones(2, 2, dtype=torch.int64), bits=8, granularity=G.PER_TENSOR),
        ["w must", "floating"],
    ),
    (fake_quantize, dict(w=NAN, bits=8, granularity=G.PER_TENSOR), ["w must", "finite"]),
    (fake_quantize, dict(w=INF, bits=8, granularity=G.PER_CHANNEL), ["w must", "finite"]),
    (fake_quantize, dict(w=-INF, bits=8, granularity=G.PER_CHANNEL), ["w must", "finite"]),
    (fake_quantize, dict(w=torch.empty(0, 3), bits=8, granularity=G.PER_TENSOR), ["w must"]),
    (fake_quantize, dict(w=torch.ones(4), bits=8, granularity=G.PER_CHANNEL), ["w must", "2-D"]),
    (fake_quantize, dict(w=BIG64, bits=8, granularity=G.PER_TENSOR), ["w must", "float32"]),
    (fake_quantize, dict(w=[[1.0]], bits=8, granularity=G.PER_TENSOR), ["w must"]),
    (quantize_codes, dict(w=NAN, bits=4, granularity=G.PER_CHANNEL), ["w must", "finite"]),
    (quantize_codes, dict(w=BIG64, bits=4, granularity=G.PER_CHANNEL), ["w must", "float32"]),
    (scales, dict(w=W, bits=0, granularity=G.PER_TENSOR), ["bits"]),
    (qmax_for, dict(bits=10), ["bits", "[2, 8]"]),
    (dequantize, dict(codes=W, scales=torch.ones(())), ["codes", "integer"]),
    (dequantize, dict(codes=torch.ones(2, 2, dtype=torch.int8), scales=torch.zeros(())), ["scales", "> 0"]),
    (
        dequantize,
        dict(codes=torch.ones(2, 2, dtype=torch.int8), scales=torch.tensor(float("nan"))),
        ["scales", "finite"],
    ),
    (
        dequantize,
        dict(codes=torch.ones(2, 2, dtype=torch.int8), scales=torch.ones(3, 1)),
        ["scales", "broadcast"],
    ),
    (dequantize, dict(codes=torch.ones(2, 2, dtype=torch.int8), scales=1.0), ["scales"]),
    (pack_codes, dict(codes=torch.tensor([8]), bits=4), ["codes", "[-8, 7]"]),
    (pack_codes, dict(codes=torch.tensor([1.0]), bits=4), ["codes", "integer"]),
    (pack_codes, dict(codes=torch.tensor([1]), bits=9), ["bits"]),
    (unpack_codes, dict(packed=torch.zeros(3, dtype=torch.uint8), bits=4, shape=(2, 2)), ["packed", "bytes"]),
    (unpack_codes, dict(packed=torch.zeros(2, dtype=torch.int8), bits=4, shape=(2, 2)), ["packed", "uint8"]),
    (unpack_codes, dict(packed=torch.zeros(2, dtype=torch.uint8), bits=4, shape=(0, 2)), ["shape"]),
    (QuantizedTensor.from_float, dict(w=NAN, bits=8, granularity=G.PER_TENSOR), ["w must"]),
    (packing.pack, dict(values=torch.tensor([4]), bits=2, signed=False), ["values", "[0, 3]"]),
    (packing.pack, dict(values=torch.tensor([1]), bits=0, signed=False), ["bits", "[1, 8]"]),
    (packing.pack, dict(values=torch.tensor([1]), bits=2, signed=1), ["signed", "bool"]),
    (
        packing.unpack,
        dict(packed=torch.zeros(1, dtype=torch.uint8), bits=2, n=-1, signed=False),
        ["n", ">= 0"],
    ),
    (weight_names, dict(model="gpt"), ["model", "Module"]),
    (
        quantized_model,
        dict(model=MODEL, bits=8, granularity=G.PER_CHANNEL, names=["blocks.9.f1.weight"]),
        ["names", "valid names"],
    ),
    (quantized_model, dict(model=MODEL, bits=8, granularity=G.PER_CHANNEL, names=["ln.weight"]), ["names"]),
    (
        quantized_model,
        dict(model=MODEL, bits=8, granularity=G.PER_CHANNEL, names="tok.weight"),
        ["names", "string"],
    ),
    (quantized_model, dict(model=MODEL, bits=12), ["bits"]),
    (storage_bytes, dict(model=MODEL, bits=8, granularity="per-tensor"), ["granularity"]),
    (EQ.bits_table, dict(model=MODEL, bits=[8, 1]), ["bits", "[2, 8]"]),
    (EQ.bits_table, dict(model=MODEL, bits=8), ["bits", "iterable"]),
    (EQ.bits_table, dict(model=MODEL, bits=[]), ["bits"]),
    (EQ.bits_table, dict(model=MODEL, quantize=None), ["quantize", "callable"]),
    (EQ.bits_table, dict(model=None), ["model", "Module"]),
    (EQ.bits_table, dict(model=MODEL, evaluate=3), ["evaluate", "callable"]),
    (
        EQ.bits_table,
        dict(model=MODEL, evaluate=lambda m: 1.0, tokens=torch.arange(9)),
        ["evaluate", "tokens"],
    ),
    (
        EQ.bits_table,
        dict(model=MODEL, bits=[8], evaluate=lambda m: float("nan")),
        ["evaluate", "finite loss"],
    ),
    (EQ.reconstruction_figures, dict(w=torch.ones(4), bits=2), ["w must", "2-D"]),
    (EQ.reconstruction_figures, dict(w=W, bits=1), ["bits"]),
    (EQ.sensitivity_table, dict(model=MODEL, granularity=3), ["granularity"]),
    (EQ.sensitivity_table, dict(model=MODEL, names=["nope"]), ["names"]),
    (EQ.sensitivity_table, dict(model=MODEL, evaluate="val_loss"), ["evaluate", "callable"]),
    (EQ.sensitivity_table, dict(model=MODEL, evaluate=lambda m: "1.5"), ["evaluate", "finite loss"]),
    (
        EQ.compounding,
        dict(sensitivity=[EQ.SensitivityRow("tok.weight", 1.0, float("nan"))], joint_penalty=0.1),
        ["penalty", "finite"],
    ),
    (EQ.compounding, dict(sensitivity=[{"loss": 1.0}], joint_penalty=0.1), ["sensitivity", "SensitivityRow"]),
    (EQ.compounding, dict(sensitivity=[], joint_penalty=float("inf")), ["joint_penalty", "finite"]),
    (EQ.divergence, dict(model=MODEL, length=0), ["length", ">= 1"]),
    (EQ.divergence, dict(model=MODEL, bits=1), ["bits"]),
    (
        EQ.weight_range_ratios,
        dict(model=torch.nn.Linear(2, 2, bias=False).requires_grad_(False).apply(lambda m: m.weight.zero_())),
        ["model", "median 0"],
    ),
    (EQ.weight_range_ratios, dict(model=torch.nn.LayerNorm(4)), ["model", "2-D"]),
    (EQ.activation_channel_ratios, dict(model=MODEL, tokens=torch.tensor([1.0, 2.0])), ["tokens", "int64"]),
    (EQ.activation_channel_ratios, dict(model=MODEL, tokens=torch.tensor([0, 150])), ["tokens", "[0, 99]"]),
    (EQ.activation_channel_ratios, dict(model=torch.nn.Linear(2, 2)), ["model", "config"]),
    (check_quantizer, dict(quantize=None), ["quantize", "callable"]),
    (check_quantizer, dict(quantize=reference_quantizer, bits=[9]), ["bits"]),
    (check_quantizer, dict(quantize=reference_quantizer, granularities=["per-tensor"]), ["granularities"]),
    (check_quantizer, dict(quantize=reference_quantizer, cases={"x": NAN}), ["cases", "finite"]),
    (check_quantizer, dict(quantize=reference_quantizer, seed=-1), ["seed", "[0, 2**64)"]),
    # --- inputs that once failed silently or obscurely
    (
        QuantizedTensor,
        dict(
            packed=torch.zeros(1, dtype=torch.uint8),
            scales=torch.ones(1),
            bits=99,
            shape=(2,),
            granularity=G.PER_TENSOR,
        ),
        ["bits"],
    ),
    (
        QuantizedTensor,
        dict(
            packed=torch.zeros(1, dtype=torch.uint8),
            scales=torch.ones(1),
            bits=4,
            shape=(100,),
            granularity=G.PER_TENSOR,
        ),
        ["packed", "50 bytes"],
    ),
    (storage_bytes, dict(model=torch.nn.ReLU(), bits=8), ["model", "at least one 2-D weight"]),
    (packing.value_range, dict(bits=8, signed="no"), ["signed", "bool"]),
    (EQ.compounding, dict(sensitivity=[], joint_penalty=0.1), ["sensitivity", "at least one row"]),
    (
        EQ.bits_table,
        dict(model=MODEL, bits=[8], tokens=torch.arange(40) % 100, quantize=lambda m, b, g, n: "garbage"),
        ["quantize must return"],
    ),
    (EQ.divergence, dict(model=MODEL, seed=-1), ["seed", "[0, 2**64)"]),
    (battery, dict(bits=1), ["bits", "[2, 8]"]),
    (battery, dict(bits=8, seed=-3), ["seed", "[0, 2**64)"]),
    (battery, dict(bits=8, seed=2**64), ["seed", "[0, 2**64)"]),
    (
        fake_quantize,
        dict(w=torch.empty(3, 3, device="meta"), bits=8, granularity=G.PER_TENSOR),
        ["w must hold data", "meta tensor"],
    ),
]


@pytest.mark.parametrize("fn, kwargs, words", CASES, ids=[case_id(c) for c in CASES])
def test_bad_input_raises_value_error_naming_it(fn, kwargs, words, small_gpt):
    check_raises_naming(fn, kwargs, words, small_gpt)


def test_float64_beyond_float32_no_longer_quantizes_to_nan():
    """Regression: float64 1e39 became inf in float32 and 0/0 = NaN
    came out silently; now refused. Within float32's range float64 is fine."""
    out = fake_quantize(torch.tensor([[3e38, -1.0]], dtype=torch.float64), 8, G.PER_TENSOR)
    assert bool(torch.isfinite(out).all())
