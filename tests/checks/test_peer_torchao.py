"""torchao's weight-only quantizers and 2:4 mask, through aftertrain's kit.

``Int8WeightOnlyConfig`` and ``IntxWeightOnlyConfig`` are applied with
``torchao.quantization.quantize_`` to a throwaway ``nn.Linear`` holding the
weight; the adapter returns ``(weight.dequantize(), qdata, scale,
zero_point)``. Each config is judged under the scheme it implements
(docs/checks.md's scheme table): Int8WeightOnlyConfig is SYMMETRIC_FULL per
row with a scale floor of float32's eps; IntxWeightOnlyConfig's
``MappingType.SYMMETRIC`` is SYMMETRIC_FULL, ``SYMMETRIC_NO_CLIPPING_ERR``
and ``ASYMMETRIC`` are the kit's mappings of the same names, floor the
smallest normal float32. ``torchao.sparsity.utils.mask_creator`` is judged
as NM(2, 4).

What they do wrong is a finding, kept as a strict xfail with the figure.
"""

from __future__ import annotations

import functools
import logging
import types
import warnings

import pytest
import torch

from aftertrain.checks.patterns import NM
from aftertrain.checks.prune import check_pruner, nm_battery
from aftertrain.checks.quant import FLOAT32_EPS, check_quantizer, scheme_battery
from aftertrain.checks.schemes import Mapping, PerAxis, PerGroup, QuantScheme
from tests.common.kit import edge_findings


@functools.cache
def ao() -> types.SimpleNamespace:
    """torchao's names this file uses, imported at the first test that runs
    them, not at collection (importing torchao costs ~1.5 CPU s, in every
    xdist worker that collects this file)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torchao.quantization import Int8WeightOnlyConfig, IntxWeightOnlyConfig, granularity, quantize_
        from torchao.quantization.quant_primitives import MappingType
        from torchao.sparsity.utils import mask_creator
    return types.SimpleNamespace(
        Int8WeightOnlyConfig=Int8WeightOnlyConfig,
        IntxWeightOnlyConfig=IntxWeightOnlyConfig,
        quantize_=quantize_,
        granularity=granularity,
        MappingType=MappingType,
        mask_creator=mask_creator,
    )


#: The kit's mapping -> the name of torchao's MappingType.
AO_MAPPING = {
    Mapping.SYMMETRIC_FULL: "SYMMETRIC",
    Mapping.SYMMETRIC_NO_CLIPPING_ERR: "SYMMETRIC_NO_CLIPPING_ERR",
    Mapping.ASYMMETRIC: "ASYMMETRIC",
}
EDGES = ("float32 max", "group size does not divide the row")


def _quantize_linear(w: torch.Tensor, config) -> tuple[torch.Tensor, ...]:
    linear = torch.nn.Linear(w.shape[1], w.shape[0], bias=False)
    linear.weight.data = w.clone()
    ao().quantize_(linear, config)
    q = linear.weight
    return q.dequantize(), q.qdata, q.scale, q.zero_point


def int8_weight_only(w: torch.Tensor, scheme: QuantScheme) -> tuple[torch.Tensor, ...]:
    """``Int8WeightOnlyConfig()`` (per row); the scheme only names the claim."""
    return _quantize_linear(w, ao().Int8WeightOnlyConfig())


def intx_weight_only(w: torch.Tensor, scheme: QuantScheme) -> tuple[torch.Tensor, ...]:
    """``IntxWeightOnlyConfig`` at the scheme's width, mapping and granularity."""
    g = scheme.granularity
    granularity = (
        ao().granularity.PerGroup(g.group_size)
        if isinstance(g, PerGroup)
        else ao().granularity.PerAxis(g.axis)
    )
    config = ao().IntxWeightOnlyConfig(
        weight_dtype=getattr(torch, f"int{scheme.bits}"),
        granularity=granularity,
        mapping_type=getattr(ao().MappingType, AO_MAPPING[scheme.mapping]),
    )
    return _quantize_linear(w, config)


INT8 = QuantScheme(8, Mapping.SYMMETRIC_FULL, PerAxis(0), scale_floor=FLOAT32_EPS)


def cases(scheme: QuantScheme, *names: str, keep: bool = False) -> dict[str, torch.Tensor]:
    """The scheme's battery without ``names`` (or only them, ``keep=True``)."""
    return {k: v for k, v in scheme_battery(scheme).items() if (k in names) is keep}


def test_int8_weight_only_passes_as_symmetric_full_per_row_with_its_eps_floor():
    """Round trip, grid, codes (in [-128, 127]), scale, zero point, extremes
    and zero hold on the whole battery but float32's max; the rows of max|w|
    1e-30 and the subnormal ones are judged at the floor 1.19e-7."""
    report = check_quantizer(int8_weight_only, schemes=[INT8], cases=cases(INT8, *EDGES))
    report.raise_for_failures()
    assert any(r.check == "floor" for r in report.rows)


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason=(
        "Int8WeightOnlyConfig floors the per-row scale at float32's eps (1.19e-7), not at the "
        "smallest normal: measured on rows of max|w| 1e-6, 6e-8 and 1e-30: the first keeps 6 "
        "distinct values, the second 3, the third becomes all zeros; the error reaches 255 x the "
        "round-trip bound (all codes 0 where the row's half step is max|w| / 255); the kit's "
        "failure lines say 'looks like a scale floor of 1.19e-07'"
    ),
)
def test_int8_weight_only_keeps_tiny_rows_within_half_a_step():
    scheme = QuantScheme(8, Mapping.SYMMETRIC_FULL, PerAxis(0))
    w = torch.tensor(
        [
            [1e-6, -0.3e-6, 0.55e-6, 0.1e-6, -0.8e-6, 0.2e-6],
            [6e-8, -3e-8, 1e-8, 5.9e-8, 0.0, -6e-8],
            [1e-30, 0.5e-30, -1e-30, 0.0, 0.0, 0.0],
        ]
    )
    check_quantizer(int8_weight_only, schemes=[scheme], cases={"tiny rows": w}).raise_for_failures()


def test_int8_weight_only_is_not_the_articles_symmetric_and_the_kit_says_which_it_is():
    """Claimed as the article's SYMMETRIC (scale max|w| / 127), torchao's
    int8 (scale max|w| / 127.5, codes down to -128) fails grid and extremes,
    and the failure lines name SYMMETRIC_FULL."""
    scheme = QuantScheme(8, Mapping.SYMMETRIC, PerAxis(0), scale_floor=FLOAT32_EPS)
    report = check_quantizer(
        int8_weight_only, schemes=[scheme], cases=cases(scheme, "gaussian", "heavy-tailed", keep=True)
    )
    assert {"grid", "extremes"} <= {r.check for r in report.rows if not r.passed}, str(report)
    assert any("looks like SYMMETRIC_FULL" in line for line in report.failures), str(report)


SCHEMES = [
    QuantScheme(b, m, g)
    for m in AO_MAPPING
    for b in (2, 4, 8)
    for g in (PerAxis(0), PerGroup(32), PerGroup(128))
]


@pytest.mark.parametrize("mapping", list(AO_MAPPING), ids=lambda m: m.name)
def test_intx_weight_only_passes_the_kit_under_its_declared_scheme(mapping):
    """int2, int4 and int8 per row and per group of 32 and 128: every
    guarantee on every case but float32's max and a row the group size does
    not divide (both findings below)."""
    for scheme in (s for s in SCHEMES if s.mapping is mapping):
        check_quantizer(intx_weight_only, schemes=[scheme], cases=cases(scheme, *EDGES)).raise_for_failures()


@pytest.mark.parametrize("mapping", [Mapping.SYMMETRIC_FULL, Mapping.ASYMMETRIC], ids=lambda m: m.name)
@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason=(
        "torchao at float32's max, with strict=True (edge findings fail): SYMMETRIC gives -inf "
        "for w = -3.4028e38 (the code -8 times the scale max / 7.5 overflows; int8: -128 x max / "
        "127.5), ASYMMETRIC gives NaN for the whole group (max - min overflows to inf)"
    ),
)
def test_intx_weight_only_stays_finite_at_float32_max(mapping):
    scheme = QuantScheme(4, mapping, PerGroup(32))
    check_quantizer(
        intx_weight_only, schemes=[scheme], strict=True, cases=cases(scheme, "float32 max", keep=True)
    ).raise_for_failures()


@pytest.mark.parametrize(
    "mapping, not_finite",
    [(Mapping.SYMMETRIC_FULL, 1), (Mapping.ASYMMETRIC, 64)],
    ids=["SYMMETRIC_FULL", "ASYMMETRIC"],
)
def test_intx_weight_only_at_float32_max_is_an_edge_finding(mapping, not_finite):
    """The figure of the xfail above (one -inf; the 64 values of the two
    groups holding max and -max/3 NaN), classed as edge findings: without
    ``strict`` the report passes."""
    scheme = QuantScheme(4, mapping, PerGroup(32))
    report = check_quantizer(
        intx_weight_only, schemes=[scheme], cases=cases(scheme, "float32 max", keep=True)
    )
    failed = edge_findings(report)
    [output] = [r for r in failed if r.check == "output"]
    assert output.value == not_finite, str(report)


@pytest.mark.parametrize("bits, granularity, not_finite", [(4, PerGroup(32), 0), (8, PerAxis(0), 1)], ids=str)
def test_intx_weight_only_no_clipping_err_at_float32_max(bits, granularity, not_finite):
    """SYMMETRIC_NO_CLIPPING_ERR stays finite at float32's max per group of
    32 at 4 bits, and not per row at 8 bits: the element at +max becomes
    +inf (127 x fl(max / 127) rounds past the largest float), one value
    (an earlier docs/checks.md said it stayed finite); an edge finding, so
    the report passes without ``strict`` and fails with it."""
    scheme = QuantScheme(bits, Mapping.SYMMETRIC_NO_CLIPPING_ERR, granularity)
    edge_cases = cases(scheme, "float32 max", keep=True)
    report = check_quantizer(intx_weight_only, schemes=[scheme], cases=edge_cases)
    [output] = [r for r in report.rows if r.check == "output"]
    assert output.value == not_finite and report.passed, str(report)
    strict = check_quantizer(intx_weight_only, schemes=[scheme], cases=edge_cases, strict=True)
    assert strict.passed is (not_finite == 0), str(strict)
    if not_finite:
        assert output.severity == "edge" and report.edges, str(report)


def test_intx_weight_only_refuses_a_group_size_not_dividing_the_row():
    """A row of 48 at group size 32 is undefined for the scheme: torchao
    refuses it with an AssertionError and a message, which the kit records
    as a refusal (a passed ``refused`` row), not a failure."""
    scheme = QuantScheme(4, Mapping.SYMMETRIC_FULL, PerGroup(32))
    report = check_quantizer(intx_weight_only, schemes=[scheme], cases=cases(scheme, EDGES[1], keep=True))
    [row] = report.rows
    assert report.passed and row.check == "refused", str(report)
    assert row.detail == (
        "refused (AssertionError: Expecting input size at 1 dimension: 48 "
        "to be divisible by block_size at 1 dimension: 32)"
    ), row.detail


@pytest.mark.slow
def test_intx_weight_only_still_refuses_under_python_O(tmp_path):
    """Under ``python -O`` the assertion is gone, and torchao still refuses
    the row of 48 at group size 32: with a RuntimeError from a reshape (an
    earlier docs/checks.md said the refusal disappeared). A subprocess: the
    interpreter's -O cannot be switched on in this one."""
    import subprocess
    import sys

    code = (
        "import torch\nfrom torchao.quantization import IntxWeightOnlyConfig, quantize_\n"
        "from torchao.quantization.granularity import PerGroup\n"
        "assert not __debug__\n"
        "lin = torch.nn.Linear(48, 2, bias=False)\n"
        "try:\n"
        "    quantize_(lin, IntxWeightOnlyConfig(weight_dtype=torch.int4, "
        "granularity=PerGroup(32)))\n"
        "except Exception as e:\n"
        "    print(type(e).__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-O", "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "RuntimeError", (out.stdout, out.stderr)


# --- 2:4 --------------------------------------------------------------------


def mask_creator_2_4(weights: dict[str, torch.Tensor], sparsity: float) -> dict[str, torch.Tensor]:
    return {n: ao().mask_creator(w, 2, 4).bool() for n, w in weights.items()}


def test_mask_creator_passes_the_kit_as_2_of_4():
    """Exactly 2 kept of every 4 along the row, the 2 largest |w| (negative
    extremes, heavy ties and blocks of scales 1e-3 and 1e3 included)."""
    pattern = NM(2, 4)
    whole = {k: v for k, v in nm_battery(pattern).items() if k != "rows not whole blocks"}
    check_pruner(mask_creator_2_4, pattern=pattern, cases=whole).raise_for_failures()


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason=(
        "mask_creator blocks the flattened tensor, not the rows: a (2, 6) weight (12 elements, "
        "divisible by 4) is masked in blocks that straddle the rows, where it should be refused "
        "(rows of 6 are not whole blocks of 4); a (3, 6) one is refused with a ValueError"
    ),
)
def test_mask_creator_refuses_rows_that_are_not_whole_blocks():
    pattern = NM(2, 4)
    ragged = {"rows of 6": {"w": nm_battery(pattern)["rows not whole blocks"]["w"]}}
    check_pruner(mask_creator_2_4, pattern=pattern, cases=ragged).raise_for_failures()


def test_mask_creator_masks_a_2_by_6_weight_across_rows_and_refuses_3_by_6():
    """The figure of the xfail above: (2, 6) is masked (12 elements in
    blocks of 4 straddling the rows: the kit's count row fails), (3, 6)
    raised a ValueError (18 elements)."""
    two = torch.arange(1.0, 13.0).reshape(2, 6)
    mask = ao().mask_creator(two, 2, 4).bool()
    assert mask.shape == (2, 6) and int(mask.sum()) == 6
    assert mask.reshape(-1, 4).sum(1).tolist() == [2, 2, 2]  # blocks of the flattened tensor
    with pytest.raises(ValueError):
        ao().mask_creator(torch.arange(1.0, 19.0).reshape(3, 6), 2, 4)


def test_torchaos_import_noise_on_a_cpu_is_dropped_and_nothing_else():
    """The root conftest drops the two warnings importing torchao logs on a
    CPU (an extension built for another Python or for CUDA that cannot load
    here; torch's deprecation note on the Enum torchao registers), which a
    reader takes for a failure; any other warning of those loggers passes."""

    def kept(name: str, message: str) -> bool:
        record = logging.LogRecord(name, logging.WARNING, __file__, 0, message, None, None)
        return bool(logging.getLogger(name).filter(record))

    so = "/site-packages/torchao/_C_mxfp8.cpython-310-x86_64-linux-gnu.so"
    assert not kept("torchao", f"Failed to load {so}: Could not load this library: {so}")
    assert not kept(
        "torch.utils._pytree",
        "<enum 'KernelPreference'> is an Enum subclass and is now natively supported by torch.compile",
    )
    assert kept("torchao", "Skipping import of cpp extensions due to incompatible torch version")
    assert kept("torch.utils._pytree", "some other warning")
