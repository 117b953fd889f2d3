"""compressed-tensors' integer weight quantization, through aftertrain's kit (marker ``peers``).

compressed-tensors (the format vLLM loads and llm-compressor writes)
quantizes a weight with ``calculate_qparams(min_vals, max_vals, args)``
from the observed group minima and maxima, then ``fake_quantize(w, scale,
zero_point, args)``; ``quantize`` gives the codes. The adapter observes the
minima and maxima as a memoryless min-max observer does: per row
(``strategy="channel"``) or per group of ``group_size`` along the row
(``strategy="group"``, ``ceil(cols / group_size)`` groups, as
``initialize_qparams`` sizes them). Its ``QuantizationArgs(type="int",
symmetric=True)`` is SYMMETRIC_FULL (scale ``amax / ((qmax - qmin) / 2)``,
codes ``[qmin, qmax]``), ``symmetric=False`` ASYMMETRIC (an integer zero
point, ``zp_dtype`` int8). A scale of exactly 0 (an all-zero group) is
replaced by float32's eps; no other scale is floored, so the scheme keeps
the default floor.

What it does wrong is a finding, kept as a strict xfail with the figure.
"""

from __future__ import annotations

import functools
import types
import warnings

import pytest
import torch

from aftertrain.checks.quant import check_quantizer, scheme_battery
from aftertrain.checks.schemes import Mapping, PerAxis, PerGroup, QuantScheme
from tests.common.kit import edge_findings

pytest.importorskip("compressed_tensors")

pytestmark = pytest.mark.peers


@functools.cache
def ct() -> types.SimpleNamespace:
    """compressed-tensors' names, imported at the first test that runs them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from compressed_tensors.quantization import QuantizationArgs
        from compressed_tensors.quantization.lifecycle.forward import fake_quantize, quantize
        from compressed_tensors.quantization.utils import calculate_qparams
    return types.SimpleNamespace(
        QuantizationArgs=QuantizationArgs,
        fake_quantize=fake_quantize,
        quantize=quantize,
        calculate_qparams=calculate_qparams,
    )


def quantization_args(scheme: QuantScheme):
    """The scheme in compressed-tensors' words."""
    g = scheme.granularity
    strategy = (
        {"strategy": "group", "group_size": g.group_size}
        if isinstance(g, PerGroup)
        else {"strategy": "channel"}
    )
    return ct().QuantizationArgs(
        num_bits=scheme.bits, type="int", symmetric=scheme.mapping.symmetric, **strategy
    )


def ct_weight(w: torch.Tensor, scheme: QuantScheme) -> tuple[torch.Tensor, ...]:
    """``(fake_quantize(w), quantize(w), scale, zero_point)`` with the
    scale and zero point of the observed minima and maxima."""
    args = quantization_args(scheme)
    if isinstance(scheme.granularity, PerGroup):
        groups = torch.split(w, scheme.granularity.group_size, dim=1)
        lo = torch.stack([g.amin(1) for g in groups], 1)
        hi = torch.stack([g.amax(1) for g in groups], 1)
    else:
        lo, hi = w.amin(1, keepdim=True), w.amax(1, keepdim=True)
    scale, zero_point = ct().calculate_qparams(lo, hi, args)
    w_hat = ct().fake_quantize(w, scale, zero_point, args)
    codes = ct().quantize(w, scale, zero_point, args)
    return w_hat, codes, scale, zero_point


SCHEMES = [
    QuantScheme(bits, mapping, granularity)
    for mapping in (Mapping.SYMMETRIC_FULL, Mapping.ASYMMETRIC)
    for bits in (4, 8)
    for granularity in (PerAxis(0), PerGroup(32), PerGroup(128))
]


def cases(scheme: QuantScheme, *names: str, keep: bool = False) -> dict[str, torch.Tensor]:
    """The scheme's battery without ``names`` (or only them, ``keep=True``)."""
    return {k: v for k, v in scheme_battery(scheme).items() if (k in names) is keep}


@pytest.mark.parametrize("mapping", [Mapping.SYMMETRIC_FULL, Mapping.ASYMMETRIC], ids=lambda m: m.name)
def test_int_weights_pass_the_kit_under_their_declared_scheme(mapping):
    """int4 and int8, symmetric and asymmetric, per row and per group of 32
    and 128: every guarantee on the whole battery (float32's max is an edge
    finding, below); a row the group size does not divide is refused with
    compressed-tensors' ValueError."""
    for scheme in (s for s in SCHEMES if s.mapping is mapping):
        report = check_quantizer(ct_weight, schemes=[scheme], cases=cases(scheme, "float32 max"))
        report.raise_for_failures()
        assert not report.edges, str(report)
        if isinstance(scheme.granularity, PerGroup):
            assert any(r.check == "refused" for r in report.rows), str(report)


def test_a_row_the_group_size_does_not_divide_is_refused_with_its_message():
    """A row of 48 at group size 32: ``fake_quantize`` raises the ValueError
    that says so, a refusal (a passed ``refused`` row)."""
    scheme = QuantScheme(4, Mapping.SYMMETRIC_FULL, PerGroup(32))
    report = check_quantizer(
        ct_weight, schemes=[scheme], cases=cases(scheme, "group size does not divide the row", keep=True)
    )
    [row] = report.rows
    assert report.passed and row.check == "refused", str(report)
    assert "must be divisble by the given group_size 32 but got 48" in row.detail, row.detail


@pytest.mark.parametrize(
    "mapping, not_finite",
    [(Mapping.SYMMETRIC_FULL, 1), (Mapping.ASYMMETRIC, 64)],
    ids=["SYMMETRIC_FULL", "ASYMMETRIC"],
)
def test_at_float32_max_it_gives_inf_or_nan_an_edge_finding(mapping, not_finite):
    """At float32's max (groups of 32 at 4 bits) the symmetric scale's code
    -8 times ``max / 7.5`` overflows to -inf (1 value), the asymmetric
    range ``max - min`` to inf (NaN for the 64 values of the two groups
    holding it): edge findings, so the report passes (as torchao's)."""
    scheme = QuantScheme(4, mapping, PerGroup(32))
    report = check_quantizer(ct_weight, schemes=[scheme], cases=cases(scheme, "float32 max", keep=True))
    [output] = [r for r in edge_findings(report) if r.check == "output"]
    assert output.value == not_finite, str(report)
