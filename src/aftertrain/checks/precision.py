"""The precisions a quantization scheme may declare (its input copy's, its
scale's) and the ``key=value`` words ``--scheme`` reads them from."""

from __future__ import annotations

import torch

from aftertrain.quant.primitives import SCALE_FLOOR

#: The precisions a scheme may declare for its input copy, its scale or its
#: output (``input_dtype``, ``scale_dtype``, ``output_dtype``), by their
#: ``--scheme`` names.
LOW_PRECISION = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def check_low_precision(value: torch.dtype | None, label: str) -> None:
    """ValueError naming ``label`` unless ``value`` is None, float16 or bfloat16."""
    if value is not None and value not in LOW_PRECISION.values():
        raise ValueError(f"{label} must be None, torch.float16 or torch.bfloat16, got {value!r}")


def dtype_name(dtype: torch.dtype) -> str:
    """``"float16"`` for ``torch.float16``: the name ``--scheme`` reads."""
    return str(dtype).removeprefix("torch.")


def scheme_options(scheme) -> str:
    """The ``key=value`` words after a scheme's granularity, as ``--scheme``
    reads them: ``floor=eps``, ``input=float16``, ``scale=bfloat16``,
    ``output=float16``."""
    words = []
    floor = getattr(scheme, "scale_floor", SCALE_FLOOR)
    if floor != SCALE_FLOOR:
        words.append("floor=eps" if floor == torch.finfo(torch.float32).eps else f"floor={floor!r}")
    for key, dtype in (
        ("input", scheme.input_dtype),
        ("scale", scheme.scale_dtype),
        ("output", scheme.output_dtype),
    ):
        if dtype is not None:
            words.append(f"{key}={dtype_name(dtype)}")
    return "".join(f" {w}" for w in words)


def output_slack(dtype: torch.dtype | None, amax: torch.Tensor) -> torch.Tensor:
    """How far ``w_hat`` may move when the library returns it in ``dtype``
    (a group of largest magnitude ``amax``, float64): half an ulp of
    ``amax`` there plus half its smallest subnormal (0 for None, float32).
    Note: float16 gives ``amax * 2**-11 + 2**-25``."""
    if dtype is None:
        return torch.zeros_like(amax)
    info = torch.finfo(dtype)
    return amax * info.eps / 2 + info.smallest_normal * info.eps / 2
