"""The speedup's timed calls decode what the public functions decode.

:func:`aftertrain.experiments.speedup.speedup_decisions` times
:func:`aftertrain.experiments.speculative.plain_decoding` against
:func:`~aftertrain.experiments.speculative.speculative_decoding`: each side
prefilled once with the prompt (untimed), each call decoding
SPEEDUP_CHARS characters and rolling back. The timed characters must be
those of :func:`aftertrain.lm.decoding.generate` and
:func:`aftertrain.speculative.speculative_generate` with the same seed, on
every draft kind and k, call after call (a call that did not roll back, or
a prefill that differs from the public functions', shows as other text).
Every run starts from the model's own prompt
(:func:`aftertrain.experiments.speculative.prompt_for`).
"""

from __future__ import annotations

import pytest
import torch

from aftertrain.experiments import speculative as XS
from aftertrain.experiments import speedup as XU
from aftertrain.experiments.speedup import SPEEDUP_CHARS, SPEEDUP_KS
from aftertrain.lm import hf
from aftertrain.lm.decoding import Decoder, decode, generate
from aftertrain.speculative import drafts as D
from tests.common.drafts import draft_of, timed_run


def _generated(aftertrain_model, n_new=SPEEDUP_CHARS):
    prompt = torch.tensor(XS.prompt_ids(aftertrain_model))
    out = generate(aftertrain_model, prompt, n_new, 1.0, torch.Generator().manual_seed(XS.SEED))
    return out[len(prompt) :].tolist()


def test_timed_plain_decoding_is_generate_call_after_call(aftertrain_model):
    """Three calls of the timed plain side, each generate's SPEEDUP_CHARS
    characters for seed SEED."""
    run = XS.plain_decoding(aftertrain_model, SPEEDUP_CHARS, 1.0)
    want = _generated(aftertrain_model)
    assert len(want) == SPEEDUP_CHARS
    for call in range(3):
        assert run() == want, f"call {call}"


@pytest.mark.claim("S8")
@pytest.mark.parametrize("kind", list(D.DraftKind), ids=lambda k: k.value)
def test_timed_speculative_decoding_is_speculative_generate_call_after_call(
    aftertrain_model, speculative_drafts, kind
):
    """Every draft kind at every k of the experiment: two calls of the timed
    speculative side, each speculative_generate's characters for seed SEED
    (which are plain generate's law; greedy, they are its text)."""
    draft = draft_of(speculative_drafts, kind)
    for k in SPEEDUP_KS:
        run = XS.speculative_decoding(aftertrain_model, draft, k, SPEEDUP_CHARS, 1.0)
        want = timed_run(aftertrain_model, draft, k).generated.tolist()
        assert len(want) == SPEEDUP_CHARS
        for call in range(2):
            assert run() == want, f"{kind.value} k={k} call {call}"


def test_plain_decoding_makes_one_pass_per_character_and_none_wasted(aftertrain_model):
    """generate reads the prompt but its last token (one pass), then
    n_new passes of one position: the last prompt token and each
    sampled one but the last, whose logits nothing reads (it used to feed
    that one too); the same count speculative decoding charges a plain
    step. ("The cat " is 8 characters on our GPT: passes of 7, then 1s.)"""
    prompt = hf.encode_text(aftertrain_model, "The cat ")
    calls = []
    hook = aftertrain_model.register_forward_hook(lambda m, args, out: calls.append(args[0].shape[1]))
    try:
        generate(aftertrain_model, prompt, 5, 1.0, torch.Generator().manual_seed(0))
    finally:
        hook.remove()
    assert calls == [len(prompt) - 1, 1, 1, 1, 1, 1]


def test_decode_rolls_the_decoder_back_and_leaves_the_generator_as_generate(aftertrain_model):
    """decode after a prefill: the decoder holds the prefill again after it,
    and the generator ends where generate leaves it."""
    ids = XS.prompt_ids(aftertrain_model)
    dec = Decoder(aftertrain_model)
    dec.feed(ids[:-1])
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    new = decode(dec, ids[-1], 20, 0.7, g1)
    assert dec.tokens == ids[:-1] and dec.cache.length == len(ids) - 1
    assert ids + new == generate(aftertrain_model, torch.tensor(ids), 20, 0.7, g2).tolist()
    assert torch.equal(g1.get_state(), g2.get_state())


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(decoder="not a decoder"), "decoder must be a Decoder"),
        (dict(n_new=-1), "n_new"),
        (dict(temperature=-1.0), "temperature"),
        (dict(generator=3), "generator"),
    ],
)
def test_decode_names_a_bad_argument(aftertrain_model, bad, match):
    dec = Decoder(aftertrain_model)
    dec.feed([1, 2])
    args = (
        dict(decoder=dec, pending=3, n_new=2, temperature=1.0, generator=torch.Generator().manual_seed(0))
        | bad
    )
    with pytest.raises(ValueError, match=match):
        decode(**args)


def test_decode_names_a_pending_token_outside_the_models_vocabulary(aftertrain_model):
    """The first id past the vocabulary is refused with the range of ids."""
    V = aftertrain_model.config.vocab_size
    dec = Decoder(aftertrain_model)
    dec.feed([1, 2])
    with pytest.raises(ValueError, match=rf"pending must be an int in \[0, {V - 1}\], got {V}"):
        decode(dec, V, 2, 1.0, torch.Generator().manual_seed(0))


@pytest.mark.parametrize(
    "kind, k", [(D.DraftKind.NGRAM, 4), (D.DraftKind.GPT, 2)], ids=["n-gram k=4", "draft GPT k=2"]
)
def test_charged_decoding_is_the_runs_passes_as_drafts_and_verifications(
    monkeypatch, aftertrain_model, speculative_drafts, kind, k
):
    """What cpp / (v_k + k c) charges for a timed run: as many rounds as the
    seeded run makes target passes, each k drafted characters then one
    verification over k+1 positions (the steps S5's c and X8's v_k time,
    built for this draft and k, after the target's prompt), every call alike."""
    draft, log = draft_of(speculative_drafts, kind), []

    def step(name):
        def build(model, *args):
            log.append(("built", name, model, args))
            return lambda: log.append(name)

        return build

    monkeypatch.setattr(XS, "draft_step", step("draft"))
    monkeypatch.setattr(XS, "verify_step", step("verify"))
    run = XU.charged_decoding(aftertrain_model, draft, k, SPEEDUP_CHARS, 1.0)
    assert log == [
        ("built", "verify", aftertrain_model, (k, 1.0)),
        ("built", "draft", draft, (1.0, aftertrain_model)),  # after the target's prompt
    ]
    passes = timed_run(aftertrain_model, draft, k).target_passes
    assert 1 < passes < SPEEDUP_CHARS
    for call in range(2):
        log.clear()
        assert run() == passes, f"call {call}"
        assert log == (["draft"] * k + ["verify"]) * passes, f"call {call}"


@pytest.mark.parametrize(
    "bad, match", [(dict(k=0), "k must"), (dict(n_new=0), "n_new must"), (dict(target="a model"), "target")]
)
def test_charged_decoding_names_a_bad_argument(aftertrain_model, speculative_drafts, bad, match):
    args = (
        dict(
            target=aftertrain_model,
            draft=speculative_drafts[D.DraftKind.NGRAM],
            k=2,
            n_new=5,
            temperature=1.0,
        )
        | bad
    )
    with pytest.raises(ValueError, match=match):
        XU.charged_decoding(**args)
