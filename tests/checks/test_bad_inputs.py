"""Bad inputs to the checks kit (aftertrain.checks): each raises ValueError
whose message names the argument, the value and what is allowed, before any
work, and a size the machine could not hold is refused with the size it
would need (not allocated).

One row per (callable, keyword arguments, words the message must hold).
"""

from __future__ import annotations

import math

import pytest
import torch

from aftertrain.checks import adapters as AD
from aftertrain.checks import schemes as SC
from aftertrain.checks import strategies as ST
from aftertrain.checks.patterns import NM
from aftertrain.checks.prune import check_pruner, nm_battery
from aftertrain.checks.quant import check_quantizer
from aftertrain.checks.quant_battery import (
    BATTERY_VALUES_PER_GROUP_ELEMENT,
    MAX_BATTERY_GROUP,
    group_battery,
)
from aftertrain.checks.speculative import MAX_N, check_rule
from tests.common.bad_inputs import case_id, check_raises_naming

NAN = math.nan
V_HALF = torch.tensor([0.5])


def _refuse(*args, **kwargs):
    raise AssertionError("the implementation was called before the bad input was refused")


def _scheme(granularity) -> SC.QuantScheme:
    return SC.QuantScheme(4, SC.Mapping.SYMMETRIC, granularity)


CASES = [
    # the exponential-race adapters: a row that is not a weighting of the vocabulary
    (AD.inverse_cdf, dict(probs=torch.zeros(1, 4), v=V_HALF), ["probs", "positive sum", "row 0"]),
    (AD.inverse_cdf, dict(probs=torch.tensor([[0.5, -0.1, 0.6]]), v=V_HALF), ["probs", ">= 0"]),
    (AD.inverse_cdf, dict(probs=torch.tensor([[0.5, NAN, 0.5]]), v=V_HALF), ["probs", "finite"]),
    (AD.inverse_cdf, dict(probs=torch.tensor([[1.0, 1.0]]), v=torch.tensor([1.0])), ["v must be", "[0, 1)"]),
    (
        AD.inverse_cdf,
        dict(probs=torch.tensor([[1.0, 1.0]]), v=torch.tensor([0.1, 0.2])),
        ["v must be", "shape (1,)"],
    ),
    (AD.inverse_cdf, dict(probs=[[0.5, 0.5]], v=V_HALF), ["probs must be a 2-D", "list"]),
    (AD.exponential_race, dict(probs=torch.zeros(2, 3)), ["probs", "positive sum", "row 0"]),
    (AD.exponential_race, dict(probs=torch.tensor([[0.2, 0.8], [0.5, NAN]])), ["probs", "row 1"]),
    (AD.exponential_race, dict(probs=torch.tensor([[-1.0, 2.0]])), ["probs", ">= 0"]),
    (AD.exponential_race, dict(probs=torch.ones(3)), ["probs must be a 2-D", "(3,)"]),
    # the adapters of code written against a model: the callable they wrap
    (AD.from_logits_loop, dict(loop=3), ["loop must be callable", "int"]),
    (AD.from_logits_step, dict(step=None), ["step must be callable", "NoneType"]),
    (AD.from_model_pruner, dict(prune_model="prune"), ["prune_model must be callable", "str"]),
    # the quantizer battery: sized from the scheme, refused with the size it would need
    (
        check_quantizer,
        dict(quantize=_refuse, schemes=[_scheme(SC.PerGroup(10**9))]),
        [
            "group_size must be at most 65,536",
            "1,000,000,000",
            "44,000,000,000 float32 values",
            "176 GB",
            "cases=",
        ],
    ),
    (
        check_quantizer,
        dict(quantize=_refuse, schemes=[_scheme(SC.PerAxis(0)), _scheme(SC.PerGroup(2**16 + 1))]),
        ["group_size must be at most 65,536", "65,537"],
    ),
    (group_battery, dict(bits=4, group_size=2**20), ["group_size", "GB"]),
    (
        check_quantizer,
        dict(quantize=_refuse, schemes=3),
        ["schemes must be a QuantScheme or a non-empty list of them", "got 3"],
    ),
    (check_quantizer, dict(quantize=_refuse, schemes=[]), ["schemes", "got []"]),
    (
        check_quantizer,
        dict(quantize=_refuse, schemes=[_scheme(SC.PerTensor()), "int4"]),
        ["schemes", "'int4'"],
    ),
    # the pruner battery's blocks
    (
        check_pruner,
        dict(prune=_refuse, pattern=NM(1, 10**6)),
        ["m must be at most 65,536", "NM(1:1000000)", "75,000,000 float32 values", "0.3 GB"],
    ),
    (nm_battery, dict(pattern=NM(2, 2**16 + 1)), ["m must be at most 65,536"]),
    # the rule battery's rounds: p and q of every round are held at once
    (check_rule, dict(rule=_refuse, n=MAX_N + 1), ["n must be an int <= 200,000", "held at once", "200001"]),
    (check_rule, dict(rule=_refuse, n=10**12), ["n must be", "1000000000000"]),
    # the public strategies, checked when called (not at their first draw)
    (
        ST.tie_matrices,
        dict(bits=1),
        "bits must be an int in [2, 8] (the widths the kit's schemes accept), got 1",
    ),
    (ST.tie_matrices, dict(bits=None), "bits must be an int in [2, 8]"),
    (ST.tie_matrices, dict(bits=4, max_cols=1), "max_cols must be an int >= 2, got 1"),
    (ST.weights, dict(bits=9), "bits must be an int in [2, 8]"),
    (ST.weights, dict(max_rows=0), "max_rows must be an int >= 1, got 0"),
    (ST.weight_matrices, dict(max_cols=True), "max_cols must be an int >= 1, got True"),
    (ST.heavy_tailed, dict(max_rows=-1), "max_rows must be an int >= 1, got -1"),
    (ST.mixed_row_scales, dict(max_cols=2.5), "max_cols must be an int >= 1, got 2.5"),
    (ST.subnormal_rows, dict(max_rows=1), "max_rows must be an int >= 2, got 1"),
    (
        ST.weight_matrix,
        dict(col_multiple=0),
        "col_multiple must be an int in [1, 12] (at most max_cols), got 0",
    ),
    (ST.weight_matrix, dict(values=[1.0]), "values must be a hypothesis strategy of floats"),
    (ST.weight_dicts, dict(max_matrices=0), "max_matrices must be an int >= 1, got 0"),
    (ST.distinct_weight_dicts, dict(max_matrices=0), "max_matrices must be an int >= 1, got 0"),
    (ST.sparse_matrix, dict(max_cols=4, col_multiple=8), "col_multiple must be an int in [1, 4]"),
    (ST.nm_shapes, dict(max_m=1), "max_m must be an int >= 2, got 1"),
    (ST.probability_vector, dict(size=0), "size must be an int >= 1, got 0"),
    (ST.verification_case, dict(max_vocab=1), "max_vocab must be an int >= 2, got 1"),
    (ST.distributions, dict(max_k=0), "max_k must be an int >= 1, got 0"),
]


@pytest.mark.parametrize("fn, kwargs, words", CASES, ids=[case_id(c) for c in CASES])
def test_bad_input_raises_value_error_naming_the_argument(fn, kwargs, words):
    check_raises_naming(fn, kwargs, words)


def test_one_scheme_is_a_list_of_one():
    """``schemes=QuantScheme(...)`` runs that scheme, the same rows as
    ``schemes=[QuantScheme(...)]``."""
    one = _scheme(SC.PerGroup(4))
    alone = check_quantizer(SC.quantize_scheme, schemes=one)
    listed = check_quantizer(SC.quantize_scheme, schemes=[one])
    assert alone.passed and alone.rows == listed.rows and alone.rows


def test_the_group_battery_holds_at_most_44_values_per_group_element():
    """The figure the refusal states (and MAX_BATTERY_GROUP's 11 MB):
    counted on the battery itself at group sizes of every parity."""
    for n in (1, 2, 3, 8, 63, 64):
        values = sum(w.numel() for w in group_battery(4, n).values())
        assert values <= BATTERY_VALUES_PER_GROUP_ELEMENT * n, (n, values)
    assert sum(w.numel() for w in group_battery(4, 64).values()) == 44 * 64
    assert BATTERY_VALUES_PER_GROUP_ELEMENT * MAX_BATTERY_GROUP * 4 < 12e6


def test_the_nm_battery_holds_at_most_75_values_per_block_element():
    from aftertrain.checks.prune_battery import BATTERY_VALUES_PER_BLOCK_ELEMENT, MAX_BATTERY_BLOCK

    for m in (2, 3, 4, 16, 17):
        values = sum(w.numel() for case in nm_battery(NM(1, m)).values() for w in case.values())
        assert values <= BATTERY_VALUES_PER_BLOCK_ELEMENT * m, (m, values)
    assert sum(w.numel() for c in nm_battery(NM(2, 4)).values() for w in c.values()) == 75 * 4
    assert BATTERY_VALUES_PER_BLOCK_ELEMENT * MAX_BATTERY_BLOCK * 4 < 21e6


def test_the_largest_battery_group_and_block_are_still_built():
    """The bounds refuse only what lies beyond them: the largest group the
    battery is built for builds (11 MB)."""
    cases = group_battery(4, MAX_BATTERY_GROUP)
    assert cases["one group"].shape == (1, MAX_BATTERY_GROUP)


def test_valid_probabilities_still_draw_in_their_support():
    """The adapters' checks refuse only bad rows: zeros inside a row are
    fine and are never drawn."""
    probs = torch.tensor([[0.0, 1.0, 0.0], [0.25, 0.0, 0.75]])
    assert AD.inverse_cdf(probs, torch.tensor([0.0, 0.3])).tolist() == [1, 2]
    g = torch.Generator().manual_seed(0)
    draws = AD.exponential_race(probs.repeat(100, 1), g)
    assert set(draws[::2].tolist()) == {1} and set(draws[1::2].tolist()) <= {0, 2}
