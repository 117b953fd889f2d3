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
    idempotent all but SYMMETRIC_FULL and ASYMMETRIC; zero kept by all but
    ASYMMETRIC_FLOAT_SHIFT; odd only SYMMETRIC."""
    assert {m for m in Mapping if m.idempotent} == {
        Mapping.SYMMETRIC,
        Mapping.SYMMETRIC_NO_CLIPPING_ERR,
        Mapping.ASYMMETRIC_FLOAT_SHIFT,
    }
    assert {m for m in Mapping if not m.keeps_zero} == {Mapping.ASYMMETRIC_FLOAT_SHIFT}
    assert {m for m in Mapping if m.odd} == {Mapping.SYMMETRIC}
