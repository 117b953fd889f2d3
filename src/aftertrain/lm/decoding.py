"""Decoding a model: the context policy, next-token probabilities, sampling.

Context policy. Positions are absolute (the GPT's learned ``pos`` table has
128 rows), so a window cannot slide one character at a time and keep its
cache. The model predicts the character after ``text[:n]`` from the window
``text[context_start(n):n]``, where the start jumps by 64 once the text
passes 128 characters (the window then holds 65 to 128 characters). The
next-character distribution is therefore a function of the text so far
alone, whatever way it was produced, and a cache only has to be rebuilt
once every 64 characters. :class:`Decoder` implements the policy for plain
sampling and for speculative decoding alike, for any
:class:`aftertrain.lm.protocol.NextTokenModel`.

Logits enter the library in :meth:`Decoder.feed`; NaN or +inf logits (a
model with NaN weights, say) raise a ValueError there, so nothing downstream
samples from them. -inf is a legal logit (probability 0), as long as each row
keeps one finite value.
"""

from __future__ import annotations

import math

import torch

from aftertrain.core.validation import check_int, check_seed, is_int
from aftertrain.lm.protocol import NextTokenModel, check_model, check_truncate

SLIDE = 64  # characters the window jumps by once the text passes the context
MAX_NEW = 10**6  # tokens one call may generate: hours of work at ~1 ms each; more is a typo


def context_start(n: int, block_size: int = 128, slide: int = SLIDE) -> int:
    """First index of the window that predicts the character after ``text[:n]``.

    0 while ``n <= block_size``; after that it jumps in steps of ``slide`` so
    the window keeps between ``block_size - slide + 1`` and ``block_size``
    characters. Example (128, 64): n = 128 -> 0, 129 -> 64, 192 -> 64,
    193 -> 128.
    """
    if not is_int(n) or n < 0:
        raise ValueError(f"n must be >= 0 (an int), got {n!r}")
    if not is_int(block_size) or block_size < 1:
        raise ValueError(f"block_size must be an int >= 1, got {block_size!r}")
    if not is_int(slide) or not 0 < slide <= block_size:
        raise ValueError(f"slide must be in [1, block_size={block_size}], got {slide!r}")
    if n <= block_size:
        return 0
    return slide * math.ceil((n - block_size) / slide)


def check_logits(logits: object, name: str = "logits") -> torch.Tensor:
    """``logits`` if it is a floating tensor of at least one axis whose rows
    (last axis) hold no NaN, no +inf and at least one finite value; else
    ValueError naming ``name``. -inf is allowed (probability 0)."""
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        raise ValueError(
            f"{name} must be a floating-point tensor, got {getattr(logits, 'dtype', type(logits).__name__)}"
        )
    if logits.dim() < 1 or logits.shape[-1] < 1 or logits.numel() == 0:
        raise ValueError(f"{name} must have at least one value per row, got shape {tuple(logits.shape)}")
    # amax propagates NaN and is +inf where a row has +inf, -inf where it has
    # nothing finite: one reduction checks all three.
    if not bool(torch.isfinite(logits.amax(-1)).all()):
        if bool(torch.isnan(logits).any()):
            what = "NaN"
        elif bool(torch.isposinf(logits).any()):
            what = "+inf"
        else:
            what = "a row with no finite value"
        raise ValueError(f"{name} must be finite or -inf with a finite value in each row; got {what}")
    return logits


def check_temperature(temperature: object) -> float:
    """``temperature`` if it is a finite number >= 0, else ValueError."""
    if (
        not (is_int(temperature) or isinstance(temperature, float))
        or not math.isfinite(temperature)
        or temperature < 0
    ):
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature!r}")
    return temperature


def check_torch_generator(generator: object) -> torch.Generator:
    """``generator`` if it is a ``torch.Generator``, else ValueError."""
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    return generator


class Decoder:
    """Incremental next-character logits of ``model`` under the context policy.

    ``feed(tokens)`` appends tokens to the text and returns, for each one, the
    logits of the character that follows it; ``truncate(n)`` rolls the text
    (and the cache) back to its first ``n`` characters. ``model`` is any
    :class:`aftertrain.lm.protocol.NextTokenModel`; ``name`` is how errors call it
    ("target", "draft").
    """

    def __init__(self, model: NextTokenModel, slide: int | None = None, name: str = "model") -> None:
        self.model = check_model(model, name)
        self.name = name
        self.block_size = model.config.block_size
        self.vocab_size = model.config.vocab_size
        if slide is None:  # SLIDE, or the whole block for a model whose block is shorter
            slide = min(SLIDE, self.block_size) if is_int(self.block_size) else SLIDE
        context_start(0, self.block_size, slide)  # validates slide against the block
        self.slide = slide
        self.tokens: list[int] = []
        self.cache = model.new_cache()
        self.start = 0  # text index of the cache's first position

    def __len__(self) -> int:
        return len(self.tokens)

    @torch.no_grad()
    def feed(self, tokens: torch.Tensor | list[int]) -> torch.Tensor:
        """Logits (len(tokens), vocab): row i predicts the token after tokens[i].

        Raises ValueError if a token is outside ``[0, vocab_size)`` or the
        model returns NaN or +inf logits (:func:`check_logits`).
        """
        new = self._token_list(tokens)
        out = []
        i = 0
        while i < len(new):
            n0 = len(self.tokens)
            start = context_start(n0 + 1, self.block_size, self.slide)
            # The run of new tokens whose predictions share this window start
            # (all of them while the text fits the block: the start is then 0).
            j = i + 1
            if n0 + len(new) - i <= self.block_size:
                j = len(new)
            while j < len(new) and context_start(n0 + 1 + j - i, self.block_size, self.slide) == start:
                j += 1
            self.tokens.extend(new[i:j])
            if start != self.start or self.cache.length != n0 - start:
                self.cache = self.model.new_cache()
                self.start = start
                window = self.tokens[start:]
            else:
                window = new[i:j]
            logits = self.model(torch.tensor([window]), cache=self.cache)[0]
            out.append(logits[-(j - i) :])
            i = j
        logits = out[0] if len(out) == 1 else torch.cat(out)
        if tuple(logits.shape) != (len(new), self.vocab_size):
            raise ValueError(
                f"{self.name} must return logits of shape (B, T, "
                f"{self.vocab_size}), got rows of {tuple(logits.shape[1:])}"
            )
        return check_logits(logits, f"{self.name}'s logits")

    def _token_list(self, tokens: torch.Tensor | list[int]) -> list[int]:
        if isinstance(tokens, torch.Tensor):
            if tokens.dim() != 1 or tokens.is_floating_point() or tokens.dtype == torch.bool:
                raise ValueError("tokens must be a 1-D integer tensor or a list of ints")
            new = tokens.tolist()
        elif isinstance(tokens, (list, tuple)) and all(is_int(t) for t in tokens):
            new = list(tokens)
        else:
            raise ValueError("tokens must be a 1-D integer tensor or a list of ints")
        if not new:
            raise ValueError("tokens must hold at least one token")
        if min(new) < 0 or max(new) >= self.vocab_size:
            raise ValueError(f"tokens must lie in [0, {self.vocab_size}) ({self.name}'s vocabulary)")
        return new

    def truncate(self, n: int) -> None:
        """Keep only the first ``n`` tokens of the text (0 <= n <= len)."""
        check_truncate(n, len(self.tokens))
        del self.tokens[n:]
        self.cache.truncate(max(0, min(self.cache.length, n - self.start)))


def probabilities(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """float64 next-token distributions from logits (last axis).

    ``softmax(logits / temperature)`` for ``temperature > 0``; at temperature
    0 the one-hot vector of the argmax (first index on ties, as
    :func:`sample_token`), so greedy decoding is sampling from point masses
    and speculative decoding's rule needs no special case for it. Plain
    sampling, the speculative rule's p and q, and the exact-law tests all
    take their distributions from here.

    Note: logits (0, ln 3) give (1/4, 3/4) at temperature 1, (1/10, 9/10)
    at 0.5 and (0, 1) at 0.
    """
    check_temperature(temperature)
    check_logits(logits)
    return probabilities_unchecked(logits, temperature)


def probabilities_unchecked(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """:func:`probabilities` without its checks, for callers that have
    checked both (the speculative loop: :meth:`Decoder.feed` checks the
    logits). At temperature 1 the division is left out: ``x / 1.0`` is ``x``
    exactly, so the result is the same bit for bit, one tensor op fewer."""
    if temperature == 0:
        top = torch.argmax(logits, dim=-1)
        return torch.nn.functional.one_hot(top, logits.shape[-1]).double()
    scaled = logits.double()
    if temperature != 1:
        scaled = scaled / temperature
    return torch.softmax(scaled, dim=-1)


def sample_token(logits: torch.Tensor, temperature: float, generator: torch.Generator) -> int:
    """One token from 1-D logits: argmax at temperature 0, else a draw from
    :func:`probabilities` with ``generator``."""
    check_torch_generator(generator)
    if not isinstance(logits, torch.Tensor) or logits.dim() != 1:
        raise ValueError("logits must be a 1-D tensor (vocab,)")
    if check_temperature(temperature) == 0:
        return int(torch.argmax(check_logits(logits)))
    return int(torch.multinomial(probabilities(logits, temperature), 1, generator=generator))


@torch.no_grad()
def generate(
    model: NextTokenModel,
    prompt: torch.Tensor,
    n_new: int,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Prompt plus ``n_new`` sampled tokens (1-D), one cached pass per token.

    The prompt but its last token is read first (a prefill); then
    :func:`decode` feeds the last prompt token and each sampled token but
    the last (whose logits nothing would read): ``n_new`` passes of one
    position, as speculative decoding counts them
    (:func:`aftertrain.speculative.speculative_generate` prefills the same
    way). Same generator state, same tokens. Temperature 0 is greedy decoding.
    """
    decoder = Decoder(model)
    V = decoder.vocab_size
    if (
        not isinstance(prompt, torch.Tensor)
        or prompt.dim() != 1
        or prompt.numel() < 1
        or prompt.is_floating_point()
        or prompt.dtype == torch.bool
    ):
        raise ValueError("prompt must be a non-empty 1-D integer tensor of token indices")
    if prompt.min() < 0 or prompt.max() >= V:
        raise ValueError(f"prompt tokens must lie in [0, {V}) (the model's vocabulary)")
    check_int("n_new", n_new, least=0, most=MAX_NEW)
    check_temperature(temperature)
    if generator is None:
        generator = torch.Generator().manual_seed(0)
    check_torch_generator(generator)
    ids = prompt.tolist()
    if len(ids) > 1:
        decoder.feed(ids[:-1])
    new = decode(decoder, ids[-1], n_new, temperature, generator)
    return torch.tensor(ids + new, dtype=torch.long)


@torch.no_grad()
def decode(
    decoder: Decoder, pending: int, n_new: int, temperature: float, generator: torch.Generator
) -> list[int]:
    """``n_new`` tokens sampled after the text ``decoder`` holds plus
    ``pending`` (a token not fed yet): :func:`generate`'s loop after its
    prefill. One cached pass per token: ``pending``, then each sampled token
    but the last. Returns the new tokens and rolls ``decoder`` back to the
    text it held, so the same call may run again on the same prefill (the
    speedup experiment times it so: :mod:`aftertrain.experiments.speedup`).
    A run past the window's move (:func:`context_start`) leaves the cache
    rebuilt: the next call reads the window afresh, the same law, logits
    equal up to rounding rather than bit for bit. ``n_new = 0`` runs no pass
    (nothing would read its logits).
    """
    if not isinstance(decoder, Decoder):
        raise ValueError(f"decoder must be a Decoder, got {type(decoder).__name__}")
    check_int("pending", pending, least=0, most=decoder.vocab_size - 1)
    check_int("n_new", n_new, least=0, most=MAX_NEW)
    check_temperature(temperature)
    check_torch_generator(generator)
    if n_new == 0:
        return []
    start = len(decoder)
    logits = decoder.feed([pending])[-1]
    new: list[int] = []
    for i in range(n_new):
        token = sample_token(logits, temperature, generator)
        new.append(token)
        if i < n_new - 1:
            logits = decoder.feed([token])[-1]
    decoder.truncate(start)
    return new


def sample_text(
    model: NextTokenModel, prompt: str, length: int, temperature: float = 1.0, seed: int = 0
) -> str:
    """``length`` tokens sampled after ``prompt`` (prompt not included),
    with a generator seeded by ``seed``, as text: our characters for our
    GPT, the model's tokenizer's for a transformers model
    (:func:`aftertrain.lm.hf.encode_text`, :func:`aftertrain.lm.hf.decode_ids`)."""
    from aftertrain.lm import hf

    if not isinstance(prompt, str) or not prompt:
        raise ValueError(f"prompt must be a non-empty str, got {prompt!r}")
    if not is_int(length) or length < 0:
        raise ValueError(f"length must be an int >= 0, got {length!r}")
    check_seed(seed)
    ids = hf.encode_text(model, prompt, "prompt")
    tokens = generate(model, ids, length, temperature, torch.Generator().manual_seed(seed))
    return hf.decode_ids(model, tokens[len(ids) :])
