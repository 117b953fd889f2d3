"""The adapters' promises at their boundaries (aftertrain.checks.adapters):
:func:`inverse_cdf` at the edges of the cumulative sum (a v that lands
exactly on a cell's cumulative mass, v = 0, v just below 1, zero-mass cells
at either end, an unnormalised row, a low-precision row), and
:func:`forced_uniforms` (what ``torch.rand_like`` and ``torch.multinomial``
return while it is active, that the real multinomial still validates, and
that both are restored after). Every expected index is worked by hand from
the docstring's rule: the first ``i`` with ``cumsum_i > v * sum``.

The adapters for code written against ``model(ids).logits`` and torch's
global generator (:func:`from_logits_loop`, :func:`from_logits_step`), for
a rule drawing its own uniforms (:func:`forced_uniforms`) and for a pruner
of a whole model (:func:`from_model_pruner`): docs/checks.md's examples run
as written and fail when broken as the docs say, and the adapters' own
promises (the seeding, the return forms, the masks they read)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from aftertrain.checks import adapters
from aftertrain.checks.adapters import exponential_race, forced_uniforms, inverse_cdf
from aftertrain.checks.speculative import assert_generator, toy_models
from tests.common.docs_examples import run_docs_example


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


# --- code over model(ids).logits and torch's global generator ---------------------------


def test_a_rule_embedded_in_a_decoding_step_passes_through_from_logits_step():
    """docs/checks.md's step, its rule inline, as written: assert_generator
    (200 runs, k = 1 and 2, T = 0.3 and 1, greedy) returns None."""
    run_docs_example("rule in a decoding step")


@pytest.mark.teeth
def test_from_logits_step_catches_a_residual_taken_from_p_alone():
    """The same step drawing a rejected token from p instead of (p - q)+:
    the emitted law is wrong wherever a draft is rejected; every joint law's
    chi-square fails at 200 runs (chi2 47-83 on 4-12 dof, p-values below
    1e-7 against a threshold of 2.5e-7, seed 0)."""
    with pytest.raises(AssertionError, match=r"FAILED .*\n  - joint law .* chi-square failed"):
        run_docs_example("rule in a decoding step", ("(p[i] - qs[i]).clamp_min(0)", "p[i]"))


def _sampling_loop(model_name: str):
    """A plain sampling loop over ``model(ids).logits`` and torch's global
    generator, sampling from ``model_name`` ("target" or "draft"), returning
    the prompt and the new tokens (1, L + n_new)."""

    def loop(target, draft, ids, n_new, k, temperature):
        model = target if model_name == "target" else draft
        for _ in range(n_new):
            logits = model(input_ids=ids).logits[0, -1].double()
            if temperature == 0:
                nxt = logits.argmax().reshape(1, 1)
            else:
                nxt = torch.multinomial(torch.softmax(logits / temperature, -1), 1)[None]
            ids = torch.cat([ids, nxt], 1)
        return ids

    loop.__name__ = f"sample the {model_name}"
    return loop


def test_from_logits_loop_passes_a_plain_sampler_of_the_target():
    """A loop that samples the target itself follows the target's law: it
    passes (100 runs at k = 1, T = 1; greedy)."""
    assert_generator(
        adapters.from_logits_loop(_sampling_loop("target")), runs=100, ks=(1,), temperatures=(1.0,)
    )


@pytest.mark.teeth
def test_from_logits_loop_catches_a_loop_sampling_the_draft():
    """The same loop sampling the draft: the toys' draft sees one symbol,
    the target two, so the joint law (support and chi-square) and greedy
    decoding all fail."""
    with pytest.raises(AssertionError, match=r"FAILED (.|\n)*chi-square failed(.|\n)*greedy failed"):
        assert_generator(
            adapters.from_logits_loop(_sampling_loop("draft")), runs=100, ks=(1,), temperatures=(1.0,)
        )


def test_from_logits_loop_seeds_the_global_generator_from_the_checks_and_leaves_it_as_it_was():
    """Two calls with generators of one seed give the same tokens; torch's
    global state after them is what it was before."""
    generate = adapters.from_logits_loop(_sampling_loop("target"))
    target, draft = toy_models()
    prompt = torch.tensor([0, 1])
    before = torch.random.get_rng_state()
    a, b = (generate(target, draft, prompt, 20, 1, 1.0, torch.Generator().manual_seed(5)) for _ in range(2))
    assert torch.equal(a, b) and a.dtype == torch.int64 and a.shape == (20,)
    assert torch.equal(torch.random.get_rng_state(), before)


def test_the_models_a_loop_is_handed_answer_logits_and_keep_their_attributes():
    """``model(ids).logits`` and ``model(input_ids=ids).logits`` are the
    model's logits; ``model.config`` is the model's own."""
    seen = []

    def loop(target, draft, ids, n_new, k, temperature):
        seen.append((target.config.vocab_size, draft(input_ids=ids).logits.shape, target(ids).logits.shape))
        return ids[0, :n_new] % target.config.vocab_size

    target, draft = toy_models()
    adapters.from_logits_loop(loop)(target, draft, torch.tensor([0, 1, 2]), 2, 1, 1.0, torch.Generator())
    assert seen == [(4, (1, 3, 4), (1, 3, 4))]


@pytest.mark.parametrize(
    "shape_of",
    [lambda ids, n: ids, lambda ids, n: ids[0], lambda ids, n: ids[0, -n:]],
    ids=["(1, L + n_new)", "(L + n_new,)", "(n_new,)"],
)
def test_from_logits_loop_takes_the_prompt_and_new_tokens_or_the_new_tokens_alone(shape_of):
    loop = _sampling_loop("target")
    generate = adapters.from_logits_loop(lambda t, d, ids, n, k, T: shape_of(loop(t, d, ids, n, k, T), n))
    target, draft = toy_models()
    out = generate(target, draft, torch.tensor([0, 1, 2]), 4, 1, 0.0, torch.Generator())
    assert (
        out.tolist()
        == adapters.from_logits_loop(loop)(
            target, draft, torch.tensor([0, 1, 2]), 4, 1, 0.0, torch.Generator()
        ).tolist()
    )


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: adapters.from_logits_loop(lambda t, d, ids, n, k, T: ids), "must return the prompt and 4"),
        (lambda: adapters.from_logits_loop(lambda t, d, ids, n, k, T: [1, 2]), "must return a tensor"),
        (
            lambda: adapters.from_logits_loop(lambda t, d, ids, n, k, T: torch.zeros(1, 6).long()),
            "changed the prompt",
        ),
        (lambda: adapters.from_logits_step(lambda t, d, ids, k, T: ids), r"must return ids \(1, L \+ m\)"),
        (
            lambda: adapters.from_logits_step(lambda t, d, ids, k, T: torch.cat([ids * 0 + 3, ids], 1)),
            "changed the text it was handed",
        ),
    ],
    ids=["prompt alone", "a list", "another prompt", "a step adding nothing", "a step rewriting the text"],
)
def test_what_a_loop_or_step_returns_wrongly_is_a_failure_line_naming_it(make, match):
    """The adapters raise ValueError, which check_generator reports as the
    failure line of the first run, not as a crash of the kit."""
    target, draft = toy_models()
    with pytest.raises(ValueError, match=match):
        make()(target, draft, torch.tensor([1, 2]), 4, 1, 1.0, torch.Generator())


# --- a rule that draws its own uniforms ---------------------------------------------------


def test_a_rule_drawing_rand_like_and_multinomial_passes_under_forced_uniforms():
    """docs/checks.md's batched rule drawing torch.rand_like and
    torch.multinomial, forced: assert_rule(exact=True, n=2000) passes."""
    run_docs_example("forced uniforms")


@pytest.mark.teeth
def test_forced_uniforms_exact_probes_catches_accepting_at_u_le_p_over_q():
    """Accepting at ``rand_like * q <= p`` accepts a draft with p = 0 at
    u = 0, probability 0 in any sample: the forced u = 0 probes fail."""
    with pytest.raises(
        AssertionError, match=r"check_rule_exact.*FAILED(.|\n)*forced uniforms failed: got accepted 1"
    ):
        run_docs_example("forced uniforms", (" < px)", " <= px)"))


# --- a pruner of a whole model ---------------------------------------------------------------


def test_a_model_pruner_from_torch_ln_structured_passes_through_from_model_pruner():
    """docs/checks.md's pruner of every nn.Linear of a model (torch's
    ln_structured, rows by L2): assert_pruner(Structured(0, 2)) passes."""
    run_docs_example("model pruner")


@pytest.mark.teeth
def test_from_model_pruner_catches_a_model_pruner_removing_columns_claimed_as_rows():
    with pytest.raises(
        AssertionError, match=r"FAILED(.|\n)*structure failed: .* slices along dim 0 are partly kept"
    ):
        run_docs_example("model pruner", ("dim=0)\n", "dim=1)\n"))


def test_from_model_pruner_hosts_each_weight_at_its_name_and_reads_zeroed_weights_without_a_mask():
    """A pruner that zeros rows in place (no weight_mask): the host holds a
    bias-free nn.Linear at each dotted name (``.weight`` dropped), the masks
    are ``weight != 0``, and the weights handed in are left as they were."""
    seen = []

    def zero_first_row(model, sparsity):
        seen.extend(name for name, m in model.named_modules() if isinstance(m, nn.Linear))
        for m in model.modules():
            if isinstance(m, nn.Linear):
                assert m.bias is None
                with torch.no_grad():
                    m.weight[0] = 0

    w = {"blocks.0.qkv.weight": torch.ones(2, 3), "head": torch.full((3, 2), 2.0)}
    masks = adapters.from_model_pruner(zero_first_row)(w, 0.5)
    assert sorted(seen) == ["blocks.0.qkv", "head"]
    assert masks["blocks.0.qkv.weight"].tolist() == [[False] * 3, [True] * 3]
    assert masks["head"].tolist() == [[False, False], [True, True], [True, True]]
    assert torch.equal(w["head"], torch.full((3, 2), 2.0))


@pytest.mark.parametrize(
    "weights, match",
    [
        ({"a": torch.ones(3)}, "prunes 2-D weights"),
        ({"a": torch.ones(2, 2), "a.b": torch.ones(2, 2)}, "must not nest"),
    ],
    ids=["1-D", "nested names"],
)
def test_from_model_pruner_refuses_weights_no_linear_layer_holds(weights, match):
    with pytest.raises(ValueError, match=match):
        adapters.from_model_pruner(lambda model, s: None)(weights, 0.5)
