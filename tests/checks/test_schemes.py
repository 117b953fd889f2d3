"""aftertrain.checks.schemes: the scheme values' own promises, each against
the module docstring's table worked by hand (the kit's reference quantizer
and its checks read the same functions, so a slip here moves both and a
round trip through them cannot see it)."""

from __future__ import annotations

import pytest
import torch

from aftertrain.checks.schemes import Mapping, PerTensor, QuantScheme, qparams, quantize_scheme


def test_no_clipping_err_scale_is_the_larger_of_hi_over_qmax_and_lo_over_qmin():
    """SYMMETRIC_NO_CLIPPING_ERR: ``scale = max(hi+ / qmax, lo- / qmin)``. int8
    of the row [-1, 0.5]: lo- / qmin = -1 / -128 = 1/128 (not 1/127), and -1
    is then the code -128 exactly; of [1, -0.5]: hi+ / qmax = 1/127."""
    scheme = QuantScheme(8, Mapping.SYMMETRIC_NO_CLIPPING_ERR, PerTensor())
    negative = torch.tensor([[-1.0, 0.5]])
    assert float(qparams(negative, scheme).scale[0]) == 1 / 128
    w_hat, codes, _, _ = quantize_scheme(negative, scheme)
    assert codes.tolist() == [[-128.0, 64.0]] and w_hat.tolist() == [[-1.0, 0.5]]
    assert float(qparams(torch.tensor([[1.0, -0.5]]), scheme).scale[0]) == 1 / 127


@pytest.mark.parametrize("bits", [2, 4, 8])
def test_each_mappings_code_range_is_the_docstrings(bits):
    """Codes: SYMMETRIC [-qmax, qmax], ASYMMETRIC_FLOAT_SHIFT [0, 2**bits - 1],
    the others [qmin, qmax] (qmax = 2**(bits-1) - 1, qmin = -qmax - 1)."""
    qmax = 2 ** (bits - 1) - 1
    want = {
        Mapping.SYMMETRIC: (-qmax, qmax),
        Mapping.SYMMETRIC_FULL: (-qmax - 1, qmax),
        Mapping.SYMMETRIC_NO_CLIPPING_ERR: (-qmax - 1, qmax),
        Mapping.ASYMMETRIC: (-qmax - 1, qmax),
        Mapping.ASYMMETRIC_FLOAT_SHIFT: (0, 2**bits - 1),
    }
    for mapping, codes in want.items():
        assert QuantScheme(bits, mapping, PerTensor()).code_range == codes, mapping


@pytest.mark.parametrize("floor", [1.0, 2.0, 0.0])
def test_a_scale_floor_outside_smallest_normal_to_below_1_is_refused(floor):
    """``scale_floor`` in [1.18e-38, 1): 1 itself is refused, as is 0."""
    with pytest.raises(ValueError, match="scale_floor"):
        QuantScheme(8, Mapping.SYMMETRIC, PerTensor(), scale_floor=floor)


def test_a_scale_floor_just_below_1_is_accepted():
    below = float(
        torch.nextafter(torch.tensor(1.0, dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64))
    )
    assert QuantScheme(8, Mapping.SYMMETRIC, PerTensor(), scale_floor=below).scale_floor == below


def test_which_mappings_are_idempotent_keep_zero_and_are_odd():
    """The properties the checks branch on, as the docstrings say:
    idempotent all but SYMMETRIC_FULL, ASYMMETRIC and ASYMMETRIC_FREE_ZERO;
    zero kept by all but the float zero points (ASYMMETRIC_FLOAT_SHIFT,
    ASYMMETRIC_FREE_ZERO); odd only SYMMETRIC."""
    assert {m for m in Mapping if m.idempotent} == {
        Mapping.SYMMETRIC,
        Mapping.SYMMETRIC_NO_CLIPPING_ERR,
        Mapping.SYMMETRIC_SIGNED_SCALE,
        Mapping.ASYMMETRIC_FLOAT_SHIFT,
    }
    assert {m for m in Mapping if not m.keeps_zero} == {
        Mapping.ASYMMETRIC_FLOAT_SHIFT,
        Mapping.ASYMMETRIC_FREE_ZERO,
    }
    assert {m for m in Mapping if m.odd} == {Mapping.SYMMETRIC}


def test_signed_scale_puts_the_larger_extreme_on_qmin():
    """SYMMETRIC_SIGNED_SCALE (neural-compressor's ``use_full_range``): int4
    of [1.0, -0.5]: scale -1/8 (the larger extreme is positive), 1.0 is the
    code -8 exactly, -0.5 the code 4; of [-1.0, 0.5]: scale +1/8, -1.0 is -8."""
    scheme = QuantScheme(4, Mapping.SYMMETRIC_SIGNED_SCALE, PerTensor())
    w_hat, codes, scale, _ = quantize_scheme(torch.tensor([[1.0, -0.5]]), scheme)
    assert codes.tolist() == [[-8.0, 4.0]] and w_hat.tolist() == [[1.0, -0.5]] and scale.tolist() == [-0.125]
    w_hat, codes, scale, _ = quantize_scheme(torch.tensor([[-1.0, 0.5]]), scheme)
    assert codes.tolist() == [[-8.0, 4.0]] and w_hat.tolist() == [[-1.0, 0.5]] and scale.tolist() == [0.125]


def test_free_zero_scale_is_min_max_and_its_zero_in_code_units():
    """ASYMMETRIC_FREE_ZERO (hqq's ``w_hat = (q - z) * scale``): int4 of
    [-1, 2] has scale 3 / 15 = 0.2 and min/max's zero 1 / 0.2 = 5 (codes)."""
    p = qparams(torch.tensor([[-1.0, 2.0]]), QuantScheme(4, Mapping.ASYMMETRIC_FREE_ZERO, PerTensor()))
    assert float(p.scale[0]) == pytest.approx(0.2) and float(p.zero[0]) == pytest.approx(5.0)


def test_a_scheme_prints_the_words_scheme_reads_back():
    """str(scheme): the --scheme form, options as key=value (floor=eps for
    float32's eps, the shortest repr of another floor)."""
    scheme = QuantScheme(
        4,
        Mapping.ASYMMETRIC_FREE_ZERO,
        PerTensor(),
        scale_floor=5e-5,
        input_dtype=torch.float16,
        scale_dtype=torch.bfloat16,
    )
    assert str(scheme) == "int4 ASYMMETRIC_FREE_ZERO PerTensor() floor=5e-05 input=float16 scale=bfloat16"
    eps = QuantScheme(8, Mapping.SYMMETRIC_FULL, PerTensor(), scale_floor=torch.finfo(torch.float32).eps)
    assert str(eps) == "int8 SYMMETRIC_FULL PerTensor() floor=eps"


@pytest.mark.parametrize("key", ["input_dtype", "scale_dtype", "output_dtype"])
def test_a_precision_other_than_float16_or_bfloat16_is_refused(key):
    with pytest.raises(ValueError, match=f"{key} must be None, torch.float16 or torch.bfloat16"):
        QuantScheme(4, Mapping.SYMMETRIC, PerTensor(), **{key: torch.float32})
