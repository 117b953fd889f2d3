"""Speculative decoding's generator: a draft proposes, the target verifies.

Each round the draft proposes up to ``k`` characters, the target scores the
last emitted character plus the drafts in one cached pass, and the rule
(:mod:`aftertrain.speculative.rule`) keeps a prefix plus one character.

Context policy. Both models predict through :class:`aftertrain.lm.decoding.Decoder`,
whose window start is a function of the text length alone
(:func:`aftertrain.lm.decoding.context_start`), so ``p_i`` is the distribution
plain decoding (:func:`aftertrain.lm.decoding.generate`) would use for the same
text: plain and speculative decoding sample the same law.

The loop is built for speed without changing a draw. A draft that reads only
its last few characters (the bigram, the n-gram) drafts from precomputed
rows (:class:`~aftertrain.speculative.drafters.TableDrafter`,
:mod:`aftertrain.speculative.table_drafts`): per character a look-up, one
uniform and a bisection, no model call. Any other draft is run, one cached
forward per character (:class:`~aftertrain.speculative.drafters.ModelDrafter`).
:func:`~aftertrain.speculative.rounds.verify_round` scores the drafts in one cached target pass and runs
the rule on plain floats for the one round. Each round takes its ``2k + 1``
uniforms in the order the rule documents (the k drafts', then the rule's
k acceptance uniforms and its one for the next character), taken from a
run's :class:`~aftertrain.speculative.drafters.Uniforms` (drawn a thousand
at a time, no torch call per round): torch's CPU generator gives ``rand(n)`` as n successive
``rand(1)``, and the caller's generator ends where one draw per uniform
would leave it, so with the same generator the output is the earlier
loop's (a model call per drafted character, the batched tensor rule) bit
for bit (tests/speculative/test_generator_fast_loop.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from aftertrain.core.validation import check_int
from aftertrain.lm import text as _text
from aftertrain.lm.decoding import (
    MAX_NEW,
    Decoder,
    check_temperature,
    check_torch_generator,
)
from aftertrain.lm.protocol import NextTokenModel, check_model
from aftertrain.speculative.drafters import ModelDrafter, Uniforms, drafter
from aftertrain.speculative.rounds import Round, roll_back, round_rule, verify_round
from aftertrain.speculative.table_drafts import TableDraft

__all__ = [
    "Round",
    "SpeculativeDecoder",
    "SpeculativeResult",
    "round_rule",
    "speculative_generate",
    "verify_round",
]


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
        """The new characters' indices (``tokens`` after the prompt)."""
        return self.tokens[self.prompt_length :]

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


def _checked(
    target: NextTokenModel,
    draft: NextTokenModel | TableDraft,
    prompt: str | torch.Tensor,
    n_new: int,
    k: int,
    temperature: float,
    generator: torch.Generator | None,
) -> tuple[int, list[int], torch.Generator]:
    """Raise ValueError unless :func:`speculative_generate`'s arguments are
    what it allows; return the vocabulary size, the prompt's indices and the
    generator (seed 0 for None)."""
    V = check_model(target, "target").config.vocab_size
    draft_net = draft.model if isinstance(draft, TableDraft) else draft
    if check_model(draft_net, "draft").config.vocab_size != V:
        raise ValueError(
            f"target and draft must share a vocabulary: target has {V} "
            f"characters, draft {draft_net.config.vocab_size}"
        )
    prompt_ids = prompt_tokens(prompt, V)
    check_int("n_new", n_new, least=0, most=MAX_NEW)
    check_int("k", k, least=1)
    check_temperature(temperature)
    if generator is None:
        generator = torch.Generator().manual_seed(0)
    check_torch_generator(generator)
    return V, prompt_ids, generator


class SpeculativeDecoder:
    """A target and a draft prefilled with a prompt, ready to decode from it
    again and again: :func:`speculative_generate` is one such decoder's
    :meth:`generate`; the speedup experiment
    (:mod:`aftertrain.experiments.speedup`) prefills once and times
    :meth:`decode`, so a timed call is the decoding after the prompt alone.

    The prefill reads all but the last prompt character into the target's
    decoder and, for a run draft, the draft's (not counted as a pass); the
    first round feeds the last one with the drafts. After every call both
    are rolled back to that prefill (prefilled afresh when a run past the
    window's move rebuilt a cache), so each call starts from the same state
    and, with the same generator, gives the same characters and logits.
    """

    def __init__(
        self,
        target: NextTokenModel,
        draft: NextTokenModel | TableDraft,
        prompt: str | torch.Tensor,
        temperature: float = 1.0,
    ) -> None:
        V = check_model(target, "target").config.vocab_size
        draft_net = draft.model if isinstance(draft, TableDraft) else draft
        if check_model(draft_net, "draft").config.vocab_size != V:
            raise ValueError(
                f"target and draft must share a vocabulary: target has {V} "
                f"characters, draft {draft_net.config.vocab_size}"
            )
        self.prompt = prompt_tokens(prompt, V)
        self.temperature = check_temperature(temperature)
        self.vocab_size = V
        self.models = target, draft
        self._prefill()

    def _prefill(self) -> None:
        """Fresh decoders fed all but the last prompt character, and what
        their caches then hold (:meth:`at_prefill` compares with it)."""
        target, draft = self.models
        self.target = Decoder(target, name="target")
        self.drafter = drafter(draft, self.temperature)
        if len(self.prompt) > 1:
            self.target.feed(self.prompt[:-1])
            self.drafter.prefill(self.prompt[:-1])
        self.held = self._caches()

    def _caches(self) -> tuple:
        """Where each cache starts and how much it holds."""
        decoders = [self.target] + ([self.drafter.decoder] if isinstance(self.drafter, ModelDrafter) else [])
        return tuple((d.start, d.cache.length) for d in decoders)

    def at_prefill(self) -> bool:
        """Whether each cache starts where the prefill left it and holds as
        much: false after a run past the window's move rebuilt one."""
        return self._caches() == self.held

    def generate(self, n_new: int, k: int, generator: torch.Generator | None = None) -> SpeculativeResult:
        """``n_new`` characters after the prompt, with the statistics and the
        target logits the rule used (:func:`speculative_generate`)."""
        rounds: list[Round] = []
        text, drafted, accepted, passes, draft_passes = self._run(n_new, k, generator, rounds)
        used = [r.logits[: r.accepted + 1] for r in rounds]
        target_logits = torch.cat(used) if used else torch.zeros(0, self.vocab_size)
        return SpeculativeResult(
            torch.tensor(text, dtype=torch.long),
            len(self.prompt),
            drafted,
            accepted,
            passes,
            draft_passes,
            target_logits,
        )

    def decode(self, n_new: int, k: int, generator: torch.Generator | None = None) -> list[int]:
        """The ``n_new`` characters :meth:`generate` gives (same generator,
        same characters, same generator state after), without the result's
        statistics and logits: the work the speedup experiment times."""
        return self._run(n_new, k, generator, None)[0][len(self.prompt) :]

    def rounds(
        self, n_new: int, k: int, generator: torch.Generator | None = None
    ) -> tuple[list[int], list[Round]]:
        """The text (prompt included) :meth:`decode` makes, and its rounds as they ran."""
        rounds: list[Round] = []
        return self._run(n_new, k, generator, rounds)[0], rounds

    @torch.no_grad()
    def _run(
        self, n_new: int, k: int, generator: torch.Generator | None, rounds: list[Round] | None
    ) -> tuple[list[int], int, int, int, int]:
        """The loop: the text (prompt included), drafted, accepted, target
        and draft passes; each :class:`Round` appended to ``rounds`` unless
        None. Rolls both models back to the prefill after."""
        check_int("n_new", n_new, least=0, most=MAX_NEW)
        check_int("k", k, least=1)
        if generator is None:
            generator = torch.Generator().manual_seed(0)
        check_torch_generator(generator)
        tdec, ddec, temperature = self.target, self.drafter, self.temperature
        text = list(self.prompt)
        end = len(text) + n_new
        drafted = accepted = passes = draft_passes = 0
        with Uniforms(generator) as source:
            while len(text) < end:
                kk = min(k, end - len(text) - 1)
                # the round's uniforms in the documented order: the kk drafts', the
                # rule's kk acceptance uniforms, its one for the next character
                uniforms = source.take(2 * kk + 1)
                if kk:
                    drafts, q, qx = ddec.draft(text, kk, uniforms[:kk])
                    draft_passes += kk
                else:
                    drafts, q, qx = [], [], []
                n, token, logits = verify_round(
                    tdec, text, drafts, q, qx, uniforms[kk : 2 * kk], uniforms[2 * kk], temperature
                )
                passes += 1
                drafted += kk
                accepted += n
                if rounds is not None:
                    rounds.append(Round(len(text), uniforms, drafts, q, qx, logits, n, token))
                text += drafts[:n] + [token]
                roll_back(tdec, text)
                ddec.rollback(text)
        roll_back(tdec, self.prompt)
        ddec.rollback(self.prompt)
        if not self.at_prefill():  # a run past the window's move rebuilt a cache: the
            self._prefill()  # next run must start from the prefill's own values, bit for bit
        return text, drafted, accepted, passes, draft_passes


def speculative_generate(
    target: NextTokenModel,
    draft: NextTokenModel | TableDraft,
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
    The checks, then a :class:`SpeculativeDecoder`'s prefill and its
    :meth:`SpeculativeDecoder.generate`.
    """
    _, _, generator = _checked(target, draft, prompt, n_new, k, temperature, generator)
    return SpeculativeDecoder(target, draft, prompt, temperature).generate(n_new, k, generator)


def prompt_tokens(prompt: str | torch.Tensor, V: int, name: str = "prompt") -> list[int]:
    """``prompt`` as a list of indices below ``V``: a string in the project's
    vocabulary (then ``V`` must be its size) or a 1-D integer tensor.
    ``ValueError`` naming ``name`` for a character outside the vocabulary,
    an index out of range or anything else."""
    if isinstance(prompt, str):
        bad = sorted({c for c in prompt if c not in _text.VOCAB})
        if bad:
            raise ValueError(f"{name} holds characters outside the vocabulary: {bad!r}")
        if V != _text.VOCAB_SIZE:
            raise ValueError(
                f"a string prompt needs the project vocabulary of "
                f"{_text.VOCAB_SIZE} characters; the models have {V}: pass indices"
            )
        ids = _text.encode(prompt).tolist()
    elif (
        isinstance(prompt, torch.Tensor)
        and prompt.dim() == 1
        and not prompt.is_floating_point()
        and prompt.dtype != torch.bool
    ):
        ids = prompt.tolist()
        if ids and (min(ids) < 0 or max(ids) >= V):
            raise ValueError(f"{name} indices must lie in [0, {V})")
    else:
        raise ValueError(f"{name} must be a string or a 1-D integer tensor")
    if not ids:
        raise ValueError(f"{name} must hold at least one character")
    return ids
