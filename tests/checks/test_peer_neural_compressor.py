"""neural-compressor's RTN weight-only quantization, through aftertrain's kit (marker ``peers``).

The adapter does what a user does: ``convert(prepare(model, RTNConfig(...)))``
on a ``Linear`` holding the weight, then reads the quantized layer
(``INCWeightOnlyLinear``): ``recover()`` is the weight its forward
multiplies by (float16 on the CPU), ``unpack()`` the codes, scales and zero
points. ``RTNConfig``'s words are the scheme's: ``use_sym=True`` (its
default) is SYMMETRIC (scale ``amax / qmax``), ``use_sym=False`` ASYMMETRIC
(unsigned codes, an integer zero point), ``use_full_range=True``
SYMMETRIC_SIGNED_SCALE (scale ``+-amax / 2**(bits-1)``, negative when the
larger extreme is positive); ``group_size=32`` (its default) is
``PerGroup(32)``, ``-1`` ``PerAxis(0)``. The layer keeps its scales in
float16 and ``recover()`` multiplies in float16 (``scale_dtype`` and
``output_dtype`` float16). Symmetric codes are stored
unsigned with a zero point of ``2**(bits-1)`` (the optimum format); the
adapter returns them signed, zero point None.

What it does wrong is a finding, kept as a strict xfail with the figure
and reproduced by hand, without the kit.
"""

from __future__ import annotations

import functools
import logging
import types
import warnings

import pytest
import torch

from aftertrain.checks.quant import check_quantizer, scheme_battery
from aftertrain.checks.schemes import Mapping, PerAxis, PerGroup, QuantScheme

pytest.importorskip("neural_compressor")

pytestmark = pytest.mark.peers


@functools.cache
def inc() -> types.SimpleNamespace:
    """neural-compressor's torch names, imported at the first test that runs
    them (its INFO lines on every ``convert`` quieted)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from neural_compressor.torch.quantization import RTNConfig, convert, prepare
    logging.getLogger("neural_compressor").setLevel(logging.ERROR)
    return types.SimpleNamespace(RTNConfig=RTNConfig, convert=convert, prepare=prepare)


@pytest.fixture(autouse=True, scope="module")
def workspace_outside_the_tree(tmp_path_factory):
    """neural-compressor makes its workspace folder (``./nc_workspace/<time>/``,
    left empty by RTN) in the working directory whenever it reads it: it
    is pointed at a temporary folder, so the checkout stays as it was."""
    inc()
    from neural_compressor.common import set_workspace

    set_workspace(str(tmp_path_factory.mktemp("nc_workspace")))


def rtn_config(scheme: QuantScheme):
    """The scheme in ``RTNConfig``'s words."""
    g = scheme.granularity
    return inc().RTNConfig(
        bits=scheme.bits,
        use_sym=scheme.mapping.symmetric,
        use_full_range=scheme.mapping is Mapping.SYMMETRIC_SIGNED_SCALE,
        group_size=g.group_size if isinstance(g, PerGroup) else -1,
    )


def quantized_linear(w: torch.Tensor, scheme: QuantScheme) -> torch.nn.Module:
    """``w`` in a ``Linear``, quantized by RTN; the ``INCWeightOnlyLinear``."""
    model = torch.nn.Sequential(torch.nn.Linear(w.shape[1], w.shape[0], bias=False))
    model[0].weight.data = w.clone()
    return inc().convert(inc().prepare(model, rtn_config(scheme)))[0]


def rtn_weight(w: torch.Tensor, scheme: QuantScheme) -> tuple[torch.Tensor, ...]:
    """``(recover(), codes, scales, zero points)`` of the quantized layer,
    one scale and zero point per group."""
    layer = quantized_linear(w, scheme)
    unpacked = layer.unpack()
    codes, zero = unpacked["int_weight"].float(), unpacked["zp"].float()
    if scheme.mapping.symmetric:  # stored unsigned, zero point 2**(bits-1) in every group
        codes, zero = codes - 2 ** (scheme.bits - 1), None
    return layer.recover().float(), codes, unpacked["scales"].float(), zero


def rtn(bits: int, mapping: Mapping, granularity: PerGroup | PerAxis) -> QuantScheme:
    """RTN's scheme: float16 scales, and ``w_hat`` (``recover()``) in float16."""
    return QuantScheme(bits, mapping, granularity, scale_dtype=torch.float16, output_dtype=torch.float16)


MAPPINGS = [Mapping.SYMMETRIC, Mapping.ASYMMETRIC, Mapping.SYMMETRIC_SIGNED_SCALE]


def cases(scheme: QuantScheme, *names: str, keep: bool = False) -> dict[str, torch.Tensor]:
    """The scheme's battery without ``names`` (or only them, ``keep=True``)."""
    return {k: v for k, v in scheme_battery(scheme).items() if (k in names) is keep}


@pytest.mark.parametrize("mapping", MAPPINGS, ids=lambda m: m.name)
def test_rtn_passes_the_kit_under_its_declared_scheme(mapping):
    """int4 and int8 (int8 ASYMMETRIC aside: the finding below), per group
    of 32 and per row, declared with float16 scales and output: every
    guarantee on the whole battery, groups whose float16 scale is subnormal
    included (max|w| about 1e-4 at 8 bits: a scale of 7.8e-7 kept to 4%);
    float32's max, past float16's range, is an edge finding."""
    for bits in (4, 8):
        if (bits, mapping) == (8, Mapping.ASYMMETRIC):
            continue
        for granularity in (PerGroup(32), PerAxis(0)):
            scheme = rtn(bits, mapping, granularity)
            check_quantizer(rtn_weight, schemes=[scheme]).raise_for_failures()


@pytest.mark.parametrize("mapping", MAPPINGS, ids=lambda m: m.name)
@pytest.mark.parametrize("bits", [4, 8])
def test_rtn_w_hat_is_the_float16_product_of_its_codes_and_scales(mapping, bits):
    """The precisions declared above (``scale_dtype`` and ``output_dtype``
    float16), by hand: on a (16, 64) Gaussian weight, ``recover()`` is bit for bit ``(q - zp)`` times the
    float16 scale rounded to float16 (int8 ASYMMETRIC's wrapped codes
    aside: the distance ``q - zp`` taken as recover() takes it, through
    int8), so it lies within half a float16 ulp (``2**-11 |w_hat|``) of the
    float32 product."""
    w = torch.randn(16, 64, generator=torch.Generator().manual_seed(0))
    layer = quantized_linear(w, rtn(bits, mapping, PerGroup(32)))
    unpacked = layer.unpack()
    distance = unpacked["int_weight"].long() - unpacked["zp"].long().repeat_interleave(32, 1)
    scale = unpacked["scales"].repeat_interleave(32, 1)
    assert scale.dtype == torch.float16
    w_hat = layer.recover()
    assert w_hat.dtype == torch.float16
    assert torch.equal(w_hat, distance.to(torch.int8).half() * scale)
    exact = distance.to(torch.int8).float() * scale.float()
    assert bool(((w_hat.float() - exact).abs() <= 2.0**-11 * exact.abs()).all())


@pytest.mark.parametrize("granularity", [PerGroup(32), PerAxis(0)], ids=str)
@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason=(
        "RTN at 8 bits asymmetric: recover() computes (q - zp).to(torch.int8) * scale, and q - zp "
        "spans [-255, 255] (unsigned codes, a zero point up to 255), so every element of code "
        "distance above 127 from its zero point wraps: on the Gaussian case |w - w_hat| reaches "
        "451 x the round-trip bound per group of 32 (428 x per row), codes -165 and 128 read back"
    ),
)
def test_rtn_int8_asymmetric_keeps_its_weights(granularity):
    scheme = rtn(8, Mapping.ASYMMETRIC, granularity)
    check_quantizer(
        rtn_weight, schemes=[scheme], cases=cases(scheme, "gaussian", keep=True)
    ).raise_for_failures()


@pytest.mark.parametrize(
    "group_size, wrapped, off", [(32, 43, 0.81), (-1, 17, 0.58)], ids=["group 32", "per row"]
)
def test_rtn_int8_asymmetric_wraps_through_int8_and_a_linear_is_far_off(group_size, wrapped, off):
    """The figure of the xfail above, by hand: a (16, 64) Gaussian weight
    quantized by ``RTNConfig(bits=8, use_sym=False)``: of its codes, 43
    (per group of 32) and 17 (per row) lie more than 127 from their zero
    point; the quantized Linear's output is 81% and 58% off the float one
    (relative L2 error, 8 Gaussian inputs), where the same codes, zero
    points and scales without the int8 cast give 0.5%."""
    g = torch.Generator().manual_seed(0)
    w, x = torch.randn(16, 64, generator=g), torch.randn(8, 64, generator=g)
    granularity = PerGroup(32) if group_size > 0 else PerAxis(0)
    layer = quantized_linear(w, rtn(8, Mapping.ASYMMETRIC, granularity))
    unpacked = layer.unpack()
    per = 32 if group_size > 0 else 64
    distance = unpacked["int_weight"].long() - unpacked["zp"].long().repeat_interleave(per, 1)
    assert int(((distance < -128) | (distance > 127)).sum()) == wrapped
    y = x @ w.T

    def relative(out: torch.Tensor) -> float:
        return float((out.float() - y).norm() / y.norm())

    assert relative(layer(x)) == pytest.approx(off, abs=0.01)
    w_right = distance.float() * unpacked["scales"].float().repeat_interleave(per, 1)
    assert relative(x @ w_right.T) < 0.01
