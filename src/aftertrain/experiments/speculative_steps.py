"""The timed steps (S5, X8) and decodings (S6, S7, X2, X8) of speculative
decoding, which :mod:`aftertrain.experiments.speedup` times as paired
ratios, and the prompt and seed every speculative run starts from.

Each builder reads the validation prompt once, untimed, and returns a
zero-argument callable that runs the step or the decoding exactly as the
generator (or plain decoding) runs it, then rolls back, so it can be called
again and again.
"""

from __future__ import annotations

import math

import torch

from aftertrain.core.validation import check_int
from aftertrain.lm import hf as _hf
from aftertrain.lm import text as _text
from aftertrain.lm.decoding import Decoder, check_temperature, decode, probabilities, sample_token
from aftertrain.lm.protocol import NextTokenModel, check_model
from aftertrain.speculative.drafters import Uniforms, drafter
from aftertrain.speculative.generator import SpeculativeDecoder, verify_round

#: The seed of every speculative run and timed step.
SEED = 0
#: The prompt of the 200-character runs (S4-S8) and of the timed steps: the
#: first 32 characters of the validation split.
PROMPT_SLICE = slice(0, 32)


def prompt_text() -> str:
    """The prompt of the acceptance and speed runs: the first 32 characters
    of the validation split."""
    return _text.load_corpus().val_text[PROMPT_SLICE]


def prompt_for(model: NextTokenModel) -> str | torch.Tensor:
    """The prompt of the runs as ``model``'s decoding takes it: the first 32
    characters of its validation text (:func:`aftertrain.lm.hf.model_text`),
    the string for our GPT, its tokenizer's ids for a transformers model."""
    return _hf.prompt_of(model, _hf.model_text(model).val_text[PROMPT_SLICE])


def prompt_ids(model: NextTokenModel) -> list[int]:
    """:func:`prompt_for` as token ids."""
    prompt = prompt_for(model)
    return (_text.encode(prompt) if isinstance(prompt, str) else prompt).tolist()


#: Prefix the cost measurements decode after (the validation prompt's length).
_COST_CONTEXT = 32


def plain_step(target: NextTokenModel, temperature: float):
    """One step of plain cached decoding exactly as decoding.generate runs it
    (sample a token from the last logits, feed it), rolled back after."""
    check_model(target, "target")
    check_temperature(temperature)
    ids = prompt_ids(target)[:_COST_CONTEXT]
    dec = Decoder(target)
    logits = dec.feed(ids)[-1]
    g = torch.Generator().manual_seed(SEED)

    def step() -> None:
        token = sample_token(logits, temperature, g)
        dec.feed([token])
        dec.truncate(len(ids))

    return step


def draft_step(draft: NextTokenModel, temperature: float, target: NextTokenModel | None = None):
    """One drafted character exactly as the generator drafts it (its
    drafter: a table look-up for the bigram and the n-gram, a cached forward
    for a run draft; its uniform taken from a
    :class:`aftertrain.speculative.drafters.Uniforms`, as the loop takes
    it), rolled back after; after the prompt of ``target`` (default: the
    draft's own, our characters' for a table)."""
    check_model(draft, "draft")
    check_temperature(temperature)
    ids = prompt_ids(draft if target is None else check_model(target, "target"))[:_COST_CONTEXT]
    d = drafter(draft, temperature)
    d.prefill(ids[:-1])
    uniforms = Uniforms(torch.Generator().manual_seed(SEED))

    def step() -> None:
        d.draft(ids, 1, uniforms.take(1))
        d.rollback(ids)

    return step


def verify_step(target: NextTokenModel, k: int, temperature: float):
    """One verification pass over k+1 positions as the generator runs it
    (:func:`aftertrain.speculative.generator.verify_round`: one cached
    forward, the distributions, the rule; its k+1 uniforms taken as the
    loop takes them), rolled
    back after. The rule takes its longest path: the first k-1 drafts are
    accepted, the last is rejected and the next character is drawn from the
    residual."""
    check_model(target, "target")
    check_temperature(temperature)
    ids = prompt_ids(target)[:_COST_CONTEXT]
    check_int("k", k, least=1, most=len(ids) - 1)
    drafts = ids[-k - 1 : -1]  # any k characters: the pass's cost does not depend on them
    dec = Decoder(target)
    dec.feed(ids[:-1])
    p = probabilities(dec.feed(ids[-1:] + drafts), temperature)
    dec.truncate(len(ids) - 1)
    # q: the target's own rows (accepted at u = 0), the last one a point mass on its
    # draft, rejected at u just below 1 unless p gives that draft all its mass
    q = [p[i].tolist() for i in range(k - 1)] + [
        torch.nn.functional.one_hot(torch.tensor(drafts[-1]), p.shape[-1]).double().tolist()
    ]
    qx = [row[x] for row, x in zip(q, drafts, strict=True)]
    u = [0.0] * (k - 1) + [math.nextafter(1.0, 0.0)]
    uniforms = Uniforms(torch.Generator().manual_seed(SEED))

    def step() -> None:
        v = uniforms.take(k + 1)[-1]
        verify_round(dec, ids, drafts, q, qx, u, v, temperature)
        dec.truncate(len(ids) - 1)

    return step


def plain_decoding(target: NextTokenModel, n_new: int, temperature: float):
    """Plain decoding of ``n_new`` characters after the validation prompt as
    :func:`aftertrain.lm.decoding.generate` runs it after its prefill
    (:func:`aftertrain.lm.decoding.decode`: ``n_new`` cached passes of one
    position), seed :data:`SEED`. The prompt but its last character is read
    once, here, untimed; each call decodes, rolls back to it and returns the
    characters (those of ``generate`` with the same seed)."""
    check_model(target, "target")
    check_int("n_new", n_new, least=1)
    check_temperature(temperature)
    ids = prompt_ids(target)
    dec = Decoder(target)
    dec.feed(ids[:-1])

    def run() -> list[int]:
        return decode(dec, ids[-1], n_new, temperature, torch.Generator().manual_seed(SEED))

    return run


def speculative_decoding(
    target: NextTokenModel, draft: NextTokenModel, k: int, n_new: int, temperature: float
):
    """Speculative decoding of ``n_new`` characters after the validation
    prompt at ``k`` as :func:`aftertrain.speculative.speculative_generate`
    runs it after its prefill (:meth:`SpeculativeDecoder.decode`), seed
    :data:`SEED`. The target and a run draft read the prompt but its last
    character once, here, untimed; each call decodes, rolls both back and
    returns the characters (those of ``speculative_generate`` with the same
    seed)."""
    check_int("k", k, least=1)
    check_int("n_new", n_new, least=1)
    decoder = SpeculativeDecoder(target, draft, prompt_for(target), temperature)

    def run() -> list[int]:
        return decoder.decode(n_new, k, torch.Generator().manual_seed(SEED))

    return run
