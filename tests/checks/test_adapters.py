"""The adapters' promises at their boundaries (aftertrain.checks.adapters):
:func:`inverse_cdf` at the edges of the cumulative sum (a v that lands
exactly on a cell's cumulative mass, v = 0, v just below 1, zero-mass cells
at either end, an unnormalised row, a low-precision row), and
:func:`forced_uniforms` (what ``torch.rand_like`` and ``torch.multinomial``
return while it is active, that the real multinomial still validates, and
that both are restored after). Every expected index is worked by hand from
the docstring's rule: the first ``i`` with ``cumsum_i > v * sum``."""

from __future__ import annotations

import pytest
import torch

from aftertrain.checks.adapters import exponential_race, forced_uniforms, inverse_cdf


def _draw(row: list[float], v: float, dtype=torch.float64) -> int:
    return int(inverse_cdf(torch.tensor([row], dtype=dtype), torch.tensor([v], dtype=torch.float64)))


@pytest.mark.parametrize(
    "v, index",
    [
        (0.0, 0),
        (0.25 - 2**-30, 0),
        (0.25, 1),  # cumsum_0 = 0.25 is not > 0.25: strictly greater
        (0.5, 2),
        (0.5 - 2**-30, 1),
        (1 - 2**-53, 2),
    ],
)
def test_inverse_cdf_takes_the_first_cell_whose_cumulative_mass_exceeds_v(v, index):
    """[0.25, 0.25, 0.5]: cumsum 0.25, 0.5, 1; at v equal to a cumsum the next cell."""
    assert _draw([0.25, 0.25, 0.5], v) == index


@pytest.mark.parametrize("v, index", [(0.0, 1), (0.5, 2), (1 - 2**-53, 2)])
def test_inverse_cdf_never_draws_a_cell_of_zero_mass(v, index):
    """Leading zeros are passed over at v = 0 (cumsum 0 is not > 0); trailing
    zeros are never reached, even at the largest float64 v below 1 (the
    target is held below the total): the draw is always 1 or 2 of [0, 0.5,
    0.5, 0]. v = 1 is outside the promise ([0, 1)) and refused
    (tests/checks/test_bad_inputs.py)."""
    assert _draw([0.0, 0.5, 0.5, 0.0], v) == index


def test_inverse_cdf_scales_v_by_the_rows_sum():
    """An unnormalised row [1, 1, 2] (sum 4) draws as [0.25, 0.25, 0.5]."""
    for v, index in ((0.2, 0), (0.25, 1), (0.4, 1), (0.5, 2), (0.99, 2)):
        assert _draw([1.0, 1.0, 2.0], v) == index


def test_inverse_cdf_accumulates_in_float64_whatever_the_rows_dtype():
    """bfloat16 [0.25, 0.25, 0.5] is exact; accumulated in float64 the edges
    are where they are for float64; one row per v, int64 out."""
    probs = torch.tensor([[0.25, 0.25, 0.5]] * 4, dtype=torch.bfloat16)
    v = torch.tensor([0.0, 0.25, 0.5, 1 - 2**-53], dtype=torch.float64)
    out = inverse_cdf(probs, v)
    assert out.dtype == torch.int64 and out.tolist() == [0, 1, 2, 2]


def test_inverse_cdf_does_not_accumulate_in_the_rows_dtype():
    """512 cells of bfloat16 1.0: summed in bfloat16 the running sum stalls at
    256 (8 bits of precision); in float64 it reaches 512, and v = 0.75 draws
    cell 384 (the first with cumsum 385 > 384)."""
    probs = torch.ones(1, 512, dtype=torch.bfloat16)
    assert int(inverse_cdf(probs, torch.tensor([0.75], dtype=torch.float64))) == 384


def test_inverse_cdf_handles_each_row_by_its_own_v():
    """Row i is drawn at v_i: 0.75 in [0.5, 0.5] is 1, 0 in [0, 1] is 1, 0.9 in [1, 0] is 0."""
    probs = torch.tensor([[0.5, 0.5], [0.0, 1.0], [1.0, 0.0]], dtype=torch.float32)
    assert inverse_cdf(probs, torch.tensor([0.75, 0.0, 0.9])).tolist() == [1, 1, 0]


def test_forced_uniforms_replace_rand_like_and_multinomial_while_active():
    """``rand_like`` returns u in the argument's dtype and shape; multinomial
    draws by the inverse CDF at v, one index per row, shape (..., 1)."""
    real_rand_like, real_multinomial = torch.rand_like, torch.multinomial
    u = torch.tensor([0.125, 0.75], dtype=torch.float64)
    v = torch.tensor([0.25, 0.9], dtype=torch.float64)
    probs = torch.tensor([[0.25, 0.25, 0.5], [0.5, 0.5, 0.0]])
    with forced_uniforms(u, v):
        r = torch.rand_like(torch.zeros(1, 2, dtype=torch.float32))
        assert r.dtype == torch.float32 and r.shape == (1, 2) and r.tolist() == [[0.125, 0.75]]
        assert torch.multinomial(probs, 1).tolist() == [[1], [1]]
        with pytest.raises(RuntimeError):  # the real multinomial validates first
            torch.multinomial(torch.tensor([[0.5, -0.5], [0.5, 0.5]]), 1)
    assert torch.rand_like is real_rand_like and torch.multinomial is real_multinomial


def test_forced_uniforms_are_restored_when_the_block_raises():
    """torch is left as it was even when the rule raises inside the block."""
    real = torch.rand_like
    with pytest.raises(KeyError), forced_uniforms(torch.zeros(1), torch.zeros(1)):
        raise KeyError("inside")
    assert torch.rand_like is real


def test_the_exponential_race_is_seeded_by_its_generator_and_never_draws_zero_mass():
    """The same generator seed gives the same draws; cells of zero mass never win."""
    probs = torch.tensor([[0.0, 0.3, 0.7, 0.0]] * 2000)
    a = exponential_race(probs, torch.Generator().manual_seed(5))
    b = exponential_race(probs, torch.Generator().manual_seed(5))
    assert torch.equal(a, b) and set(a.tolist()) == {1, 2}


def test_inverse_cdf_never_indexes_past_the_last_cell_on_a_subnormal_total():
    """``v * sum`` is kept below the sum: on a row whose only mass is the
    smallest subnormal (4.9e-324), 0.75 * it rounds up to the sum itself,
    and the first cumsum above it would be past the row. The draw is cell 1,
    the only cell with mass ("never a cell of zero mass", an index < V)."""
    probs = torch.tensor([[0.0, 5e-324]], dtype=torch.float64)
    assert inverse_cdf(probs, torch.tensor([0.75], dtype=torch.float64)).tolist() == [1]


def test_exponential_race_over_three_cells_follows_probs():
    """``argmax probs / E`` wins cell i with probability probs_i / sum: on
    [0.5, 0.3, 0.2] (three cells: with two, ``probs * E`` would win with the
    same law), 20,000 draws pass a chi-square goodness of fit at 1e-6.
    ``argmax probs * E`` gives [0.534, 0.297, 0.169], which fails it."""
    from scipy.stats import chisquare

    probs = torch.tensor([[0.5, 0.3, 0.2]], dtype=torch.float64).expand(20_000, 3)
    draws = exponential_race(probs, torch.Generator().manual_seed(11))
    counts = torch.bincount(draws, minlength=3).double()
    assert chisquare(counts.numpy(), (20_000 * probs[0]).numpy()).pvalue > 1e-6
