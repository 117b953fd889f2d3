"""The fast loop is the previous loop, faster: same generator, same text.

:func:`aftertrain.speculative.speculative_generate` drafts from tables for
the bigram and the n-gram (:mod:`aftertrain.speculative.table_drafts`), runs the
rule on plain floats for one round and draws a round's uniforms in one call.
The previous loop (tests/common/previous_loop.py: a draft forward per
character, the batched tensor rule, a ``torch.rand`` call per uniform) is
kept as the oracle: with the same generator both must give the same text,
statistics and target logits, bit for bit. So every law test the previous
loop passed (S1's battery is the rule's, S2's first-character simulation,
X6's joint law, K1's cache) carries over; the kit's ``check_generator`` is
also run on the table path directly, with a toy table draft. The runs on
the model under test start from its own prompt
(:func:`aftertrain.experiments.speculative.prompt_for`).
"""

from __future__ import annotations

import pytest
import torch

from aftertrain import speculative as S
from aftertrain.checks import speculative as CS
from aftertrain.experiments import speculative as XS
from aftertrain.lm import hf
from aftertrain.speculative import drafts as D
from aftertrain.speculative.drafters import Uniforms
from aftertrain.speculative.table_drafts import TableDraft
from aftertrain.stats import ALPHA
from tests.common.drafts import draft_of
from tests.common.previous_loop import previous_generate
from tests.common.toys import TOY_PROMPT, TOY_TEMPERATURE, toy_draft, toy_target
from tests.common.windows import new_tokens_past

TABLES = (D.DraftKind.BIGRAM, D.DraftKind.NGRAM)


def assert_same_run(a: S.SpeculativeResult, b: S.SpeculativeResult, label: str) -> None:
    assert torch.equal(a.tokens, b.tokens), label
    assert a.stats() == b.stats() and a.draft_passes == b.draft_passes, label
    assert torch.equal(a.target_logits, b.target_logits), label


@pytest.mark.claim("S8")
@pytest.mark.parametrize("kind", TABLES, ids=lambda k: k.value)
def test_fast_loop_equals_the_previous_loop_for_table_drafts(aftertrain_model, speculative_drafts, kind):
    """Bigram and n-gram drafts at four settings of k, temperature (0 too:
    point masses) and seed: 130 tokens after the validation prompt, or
    more where the model's block is longer (the run crosses the window's
    move at block + 1: 129 characters on our GPT) identical to the previous
    loop's."""
    draft, prompt = speculative_drafts[kind], XS.prompt_for(aftertrain_model)
    n_new = new_tokens_past(aftertrain_model, len(XS.prompt_ids(aftertrain_model)), 1, 130)
    for k, temperature, seed in ((1, 1.0, 0), (3, 0.7, 5), (4, 0.0, 0), (8, 1.0, 1)):
        label = f"{kind.value} k={k} T={temperature} seed={seed}"
        g_fast, g_old = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
        fast = S.speculative_generate(aftertrain_model, draft, prompt, n_new, k, temperature, g_fast)
        old = previous_generate(aftertrain_model, draft, prompt, n_new, k, temperature, g_old)
        assert_same_run(fast, old, label)
        assert torch.equal(g_fast.get_state(), g_old.get_state()), f"{label}: generator state"


@pytest.mark.claim("S8")
@pytest.mark.parametrize("kind", (D.DraftKind.INT4, D.DraftKind.GPT), ids=lambda k: k.value)
def test_fast_loop_equals_the_previous_loop_for_run_drafts(aftertrain_model, speculative_drafts, kind):
    """The drafts that are run (4-bit aftertrain_model, draft GPT; the 8-bit takes
    the same path): 40 tokens at k = 3, temperature 0.7."""
    draft, prompt = draft_of(speculative_drafts, kind), XS.prompt_for(aftertrain_model)
    for temperature in (0.7,):
        fast = S.speculative_generate(
            aftertrain_model, draft, prompt, 40, 3, temperature, torch.Generator().manual_seed(2)
        )
        old = previous_generate(
            aftertrain_model, draft, prompt, 40, 3, temperature, torch.Generator().manual_seed(2)
        )
        assert_same_run(fast, old, f"{kind.value} T={temperature}")


@pytest.mark.claim("S8")
def test_fast_loop_equals_the_previous_loop_after_a_prompt_shorter_than_the_table_context(
    aftertrain_model, speculative_drafts
):
    """The n-gram reads 4 tokens; after a prompt of 1 to 3 the table's
    key is the whole text until it grows to 4 (a key cut at len - 4 < 0
    once took the last token alone, at a text of 3: another row than
    the model's). The prompts are the first 1 to 3 tokens of a sentence
    in the model's tokens ("T", "Th", "The" on our GPT)."""
    draft = speculative_drafts[D.DraftKind.NGRAM]
    sentence = hf.encode_text(aftertrain_model, "The cat sat on the mat.")
    assert len(sentence) >= 3, "the sentence must give three prompts"
    for prompt in (sentence[:1], sentence[:2], sentence[:3]):
        fast = S.speculative_generate(
            aftertrain_model, draft, prompt, 12, 4, 1.0, torch.Generator().manual_seed(0)
        )
        old = previous_generate(aftertrain_model, draft, prompt, 12, 4, 1.0, torch.Generator().manual_seed(0))
        assert_same_run(fast, old, f"prompt {prompt.tolist()}")


@pytest.mark.parametrize("k", [1, 4])
def test_fast_loop_equals_the_previous_loop_on_the_toys(k):
    """The kit's toy target and draft (4 symbols, probability-0 entries, so
    the residual's edge cases occur), the draft run and as a table draft on
    its last symbol: 100 runs of 6 symbols each, identical to the previous
    loop's."""
    target, draft = toy_target(), toy_draft()
    table = TableDraft(draft, context=1)
    for seed in range(100):
        old = previous_generate(
            target, draft, TOY_PROMPT, 6, k, TOY_TEMPERATURE, torch.Generator().manual_seed(seed)
        )
        for d in (draft, table):
            fast = S.speculative_generate(
                target, d, TOY_PROMPT, 6, k, TOY_TEMPERATURE, torch.Generator().manual_seed(seed)
            )
            assert_same_run(fast, old, f"seed {seed} {type(d).__name__}")


def test_uniforms_in_chunks_are_the_previous_loops_and_leave_the_generator_where_it_left_it(monkeypatch):
    """The loop takes its uniforms from chunks drawn ahead (Uniforms); with
    chunks of 3 (a chunk boundary inside most rounds) the toys' runs and the
    generator's state after them are the previous loop's."""
    monkeypatch.setattr(Uniforms, "CHUNK", 3)
    target, draft = toy_target(), toy_draft()
    for seed in range(30):
        g_fast, g_old = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
        fast = S.speculative_generate(target, draft, TOY_PROMPT, 6, 4, TOY_TEMPERATURE, g_fast)
        old = previous_generate(target, draft, TOY_PROMPT, 6, 4, TOY_TEMPERATURE, g_old)
        assert_same_run(fast, old, f"seed {seed}")
        assert torch.equal(g_fast.get_state(), g_old.get_state()), f"seed {seed}"


@pytest.mark.claim("X6")
def test_kit_check_generator_passes_on_the_table_path():
    """X6 on the table path itself: the kit's check_generator (joint law of
    the first 3 symbols, alpha 1e-6; greedy equals plain greedy) on the fast
    loop with the toy draft wrapped as a table on its last symbol."""
    table = TableDraft(toy_draft(), context=1)

    def generate(target, draft, prompt, n_new, k, temperature, generator):
        assert draft is not None
        return S.speculative_generate(target, table, prompt, n_new, k, temperature, generator).generated

    report = CS.check_generator(
        generate,
        toy_target(),
        toy_draft(),
        runs=1500,
        ks=(2,),
        length=3,
        temperatures=(TOY_TEMPERATURE,),
        prompt=TOY_PROMPT.tolist(),
        alpha=ALPHA,
        seed=0,
    )
    assert report.passed, str(report)


def test_a_rounds_uniforms_in_one_call_are_the_uniforms_drawn_one_by_one():
    """What the equality with the previous loop rests on: torch's CPU
    generator gives ``rand(n)`` as n successive ``rand(1)`` (float64)."""
    for n in (1, 3, 17, 65, 1024, 2500):
        g1, g2 = torch.Generator().manual_seed(n), torch.Generator().manual_seed(n)
        batch = torch.rand(n, dtype=torch.float64, generator=g1).tolist()
        assert batch == [float(torch.rand(1, dtype=torch.float64, generator=g2)) for _ in range(n)]
        assert torch.equal(g1.get_state(), g2.get_state())
        assert torch.equal(torch.rand(2, generator=g1), torch.rand(2, generator=g2))


@pytest.mark.claim("S8")
@pytest.mark.parametrize("kind", (D.DraftKind.NGRAM, D.DraftKind.INT8), ids=lambda k: k.value)
def test_a_prefilled_decoder_decodes_again_as_speculative_generate(
    aftertrain_model, speculative_drafts, kind
):
    """One SpeculativeDecoder, prefilled once, run again and again (the
    speedup experiment times it so): each generate is speculative_generate's
    run (text, statistics, logits, generator state after), decode its text,
    also after a run that crossed the window's move (its text passes
    block + 1 tokens: 132 characters on our GPT, 32 of prompt and 100 new)."""
    draft, prompt = speculative_drafts[kind], XS.prompt_for(aftertrain_model)
    decoder = S.SpeculativeDecoder(aftertrain_model, draft, prompt, 0.7)
    long = new_tokens_past(aftertrain_model, len(XS.prompt_ids(aftertrain_model)), 1, 100)
    for n_new, k, seed in ((long, 4, 0), (30, 2, 1), (long, 4, 0), (12, 8, 2)):
        label = f"{kind.value} n_new={n_new} k={k} seed={seed}"
        g_one, g_again = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
        one = S.speculative_generate(aftertrain_model, draft, prompt, n_new, k, 0.7, g_one)
        assert_same_run(decoder.generate(n_new, k, g_again), one, label)
        assert torch.equal(g_one.get_state(), g_again.get_state()), label
        g_decode = torch.Generator().manual_seed(seed)
        assert decoder.decode(n_new, k, g_decode) == one.generated.tolist(), label
        assert torch.equal(g_decode.get_state(), g_one.get_state()), label


def test_a_prefilled_decoder_names_a_bad_argument(aftertrain_model, speculative_drafts):
    prompt = hf.prompt_of(aftertrain_model, "The ")
    decoder = S.SpeculativeDecoder(aftertrain_model, speculative_drafts[D.DraftKind.NGRAM], prompt)
    for args, match in (((-1, 2), "n_new"), ((5, 0), "k"), ((5, 2, "seed"), "generator")):
        with pytest.raises(ValueError, match=match):
            decoder.decode(*args)
    with pytest.raises(ValueError, match="temperature"):
        S.SpeculativeDecoder(aftertrain_model, speculative_drafts[D.DraftKind.NGRAM], prompt, -1.0)
