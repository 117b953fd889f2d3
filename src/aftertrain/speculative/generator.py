"""Speculative decoding's generator: a draft proposes, the target verifies.

Each round the draft proposes up to ``k`` characters, the target scores the
last emitted character plus the drafts in one cached pass, and the rule
(:mod:`aftertrain.speculative.rule`) keeps a prefix plus one character.

Context policy. Both models predict through :class:`aftertrain.lm.decoding.Decoder`,
whose window start is a function of the text length alone
(:func:`aftertrain.lm.decoding.context_start`), so ``p_i`` is the distribution
plain decoding (:func:`aftertrain.lm.decoding.generate`) would use for the same
text: plain and speculative decoding sample the same law.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from aftertrain.core.validation import check_int
from aftertrain.lm import text as _text
from aftertrain.lm.decoding import MAX_NEW, Decoder, check_generator, check_temperature, probabilities
from aftertrain.lm.protocol import NextTokenModel, check_model
from aftertrain.speculative.rule import inverse_cdf_sample, verify_unchecked

__all__ = ["SpeculativeResult", "speculative_generate"]


@dataclass(frozen=True)
class SpeculativeResult:
    """Text and statistics of one speculative run.

    Invariants: ``len(generated) = target_passes + accepted`` (each pass
    emits its accepted drafts plus one character); ``accepted <= drafted``.
    """

    tokens: torch.Tensor  # prompt + generated, 1-D long
    prompt_length: int
    drafted: int  # drafted characters sent to verification
    accepted: int  # of those, accepted
    target_passes: int  # verification passes (one per round), prompt prefill not counted
    draft_passes: int  # draft forward calls
    target_logits: torch.Tensor  # (n_new, V): the target logits the rule used for each character

    @property
    def generated(self) -> torch.Tensor:
        return self.tokens[self.prompt_length:]

    @property
    def text(self) -> str:
        """The generated characters (project vocabulary only)."""
        return _text.decode(self.generated)

    @property
    def acceptance_rate(self) -> float | None:
        """accepted / drafted, as the article defines it; None if nothing was drafted."""
        return self.accepted / self.drafted if self.drafted else None

    @property
    def chars_per_pass(self) -> float | None:
        """Generated characters per target pass; None if there was no pass."""
        n = self.tokens.numel() - self.prompt_length
        return n / self.target_passes if self.target_passes else None

    def stats(self) -> dict:
        """The figures as plain numbers (for tables and baselines)."""
        return {
            "drafted": self.drafted,
            "accepted": self.accepted,
            "target_passes": self.target_passes,
            "acceptance_rate": self.acceptance_rate,
            "chars_per_pass": self.chars_per_pass,
        }


def draft_tokens(
    decoder: Decoder,
    pending: list[int],
    k: int,
    temperature: float,
    generator: torch.Generator,
) -> tuple[list[int], torch.Tensor]:
    """Feed ``pending`` to the draft and sample ``k >= 1`` characters from it.

    Returns the drafts and the distributions ``q`` (k, V) they were drawn
    from: the very tensors the rule is then given (a draft scored with a
    distribution other than the one it was sampled from breaks the law).
    The draft is fed ``pending`` and the first k - 1 drafts: k draft passes.
    """
    logits = decoder.feed(pending)[-1]
    drafts, qs = [], []
    for i in range(k):
        q = probabilities(logits, temperature)
        x = int(inverse_cdf_sample(q[None], torch.rand(1, dtype=torch.float64, generator=generator))[0])
        drafts.append(x)
        qs.append(q)
        if i < k - 1:
            logits = decoder.feed([x])[-1]
    return drafts, torch.stack(qs)


@torch.no_grad()
def speculative_generate(
    target: NextTokenModel,
    draft: NextTokenModel,
    prompt: str | torch.Tensor,
    n_new: int,
    k: int,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> SpeculativeResult:
    """``n_new`` characters after ``prompt`` by speculative decoding.

    Each round the draft proposes ``min(k, remaining - 1)`` characters (so the
    run ends at exactly ``n_new``); the target scores the last emitted
    character and the drafts in one cached pass (k+1 positions) and
    :func:`verify` keeps a prefix plus one character; both decoders are then
    rolled back to the kept text. Temperature scales p and q alike; 0 is
    greedy (a draft is accepted iff it equals the target's argmax).

    Args:
        target, draft: :class:`aftertrain.lm.protocol.NextTokenModel` models with the
            same vocabulary.
        prompt: a string over the project vocabulary, or a 1-D tensor of indices.
        n_new: characters to generate, >= 0.
        k: characters drafted per round, >= 1.
        temperature: >= 0.
        generator: source of every random draw (default: seed 0).

    Every emitted character follows the target's next-character law for the
    text before it, exactly as :func:`aftertrain.lm.decoding.generate` samples it.
    NaN or +inf logits from either model raise ValueError naming it.
    """
    V = check_model(target, "target").config.vocab_size
    if check_model(draft, "draft").config.vocab_size != V:
        raise ValueError(f"target and draft must share a vocabulary: target has {V} "
                         f"characters, draft {draft.config.vocab_size}")
    prompt_ids = prompt_tokens(prompt, V)
    check_int("n_new", n_new, least=0, most=MAX_NEW)
    check_int("k", k, least=1)
    check_temperature(temperature)
    if generator is None:
        generator = torch.Generator().manual_seed(0)
    check_generator(generator)

    tdec, ddec = Decoder(target, name="target"), Decoder(draft, name="draft")
    text = list(prompt_ids)
    if len(text) > 1:  # prefill all but the last prompt character, not counted as a pass
        tdec.feed(text[:-1])
        ddec.feed(text[:-1])
    end = len(text) + n_new
    drafted = accepted = passes = draft_passes = 0
    used: list[torch.Tensor] = []
    while len(text) < end:
        kk = min(k, end - len(text) - 1)
        if kk:
            drafts, q = draft_tokens(ddec, text[len(ddec):], kk, temperature, generator)
            draft_passes += kk
        else:
            drafts, q = [], torch.zeros(0, V, dtype=torch.float64)
        logits = tdec.feed(text[len(tdec):] + drafts)[-(kk + 1):]  # (kk+1, V)
        p = probabilities(logits, temperature)
        n, token = verify_unchecked(p[None], q[None], torch.tensor([drafts], dtype=torch.long), generator)
        n, token = int(n[0]), int(token[0])
        passes += 1
        drafted += kk
        accepted += n
        used.append(logits[: n + 1])
        text += drafts[:n] + [token]
        # Each decoder keeps what it has fed of the new text, minus the last
        # character (fed next round with the next drafts).
        for dec in (tdec, ddec):
            dec.truncate(min(len(dec), len(text) - 1))
            assert dec.tokens == text[: len(dec)], "a decoder holds text that was not emitted"
    target_logits = torch.cat(used) if used else torch.zeros(0, V)
    return SpeculativeResult(torch.tensor(text, dtype=torch.long), len(prompt_ids), drafted,
                             accepted, passes, draft_passes, target_logits)


def prompt_tokens(prompt: str | torch.Tensor, V: int, name: str = "prompt") -> list[int]:
    if isinstance(prompt, str):
        bad = sorted({c for c in prompt if c not in _text.VOCAB})
        if bad:
            raise ValueError(f"{name} holds characters outside the vocabulary: {bad!r}")
        if V != _text.VOCAB_SIZE:
            raise ValueError(f"a string prompt needs the project vocabulary of "
                             f"{_text.VOCAB_SIZE} characters; the models have {V}: pass indices")
        ids = _text.encode(prompt).tolist()
    elif isinstance(prompt, torch.Tensor) and prompt.dim() == 1 and not prompt.is_floating_point() \
            and prompt.dtype != torch.bool:
        ids = prompt.tolist()
        if ids and (min(ids) < 0 or max(ids) >= V):
            raise ValueError(f"{name} indices must lie in [0, {V})")
    else:
        raise ValueError(f"{name} must be a string or a 1-D integer tensor")
    if not ids:
        raise ValueError(f"{name} must hold at least one character")
    return ids
