"""Toy models for the tests: small, seeded implementations of
:class:`aftertrain.lm.protocol.NextTokenModel` whose laws can be enumerated.

An importable helper module (not a test module): tests import the toys from
here, and nothing is built at import time.
The table toy is the conformance kit's own (aftertrain.checks.speculative):
one implementation, used by the kit and by these tests.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn

from aftertrain.checks.generator_toys import ZERO_FRACTION
from aftertrain.checks.speculative import ToyTable, toy_models
from aftertrain.lm.model import GPT, GPTConfig
from aftertrain.lm.protocol import TableConfig, TokenCache, check_idx, texts


def tiny_gpt(seed: int, *, n_layer: int = 1, n_head: int = 2, n_embd: int = 16, block_size: int = 32) -> GPT:
    """A tiny randomly initialised GPT over the article's characters (eval
    mode, no dropout), for tests that need some model of the real
    architecture and are fast on it. Seeded without touching the global
    generator's state for the caller."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = GPT(
            GPTConfig(n_layer=n_layer, n_head=n_head, n_embd=n_embd, block_size=block_size, dropout=0.0)
        )
    return net.eval()


def toy_gpt(vocab_size: int, seed: int, n_embd: int = 16) -> GPT:
    """A tiny randomly initialised GPT over ``vocab_size`` symbols (1 layer,
    the real key/value cache and window policy), weights scaled up so its
    distributions are far from uniform. Seeded without touching the global
    generator's state for the caller."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = GPT(GPTConfig(vocab_size=vocab_size, n_layer=1, n_head=2, n_embd=n_embd))
    with torch.no_grad():
        net.head.weight.mul_(40.0)
    return net.eval()


class CountingModel(nn.Module):
    """Wraps a NextTokenModel and records the positions of each forward call
    (``positions``; ``calls`` is their number)."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner, self.config, self.positions = inner, inner.config, []

    @property
    def calls(self) -> int:
        return len(self.positions)

    def new_cache(self):
        return self.inner.new_cache()

    def forward(self, idx, cache=None):
        self.positions.append(idx.shape[1])
        return self.inner(idx, cache=cache)


class Markov(nn.Module):
    """Next-symbol logits ``table[last symbol]`` over ``vocab_size`` symbols,
    of which only the first ``support`` have finite logits: a Markov chain
    with the Decoder interface. ``support < vocab_size`` lets it stand as a
    target over the project's 100 characters for the count-based drafts."""

    def __init__(self, support: int, seed: int, vocab_size: int | None = None, scale: float = 1.2) -> None:
        super().__init__()
        V = vocab_size or support
        self.config = TableConfig(V)
        g = torch.Generator().manual_seed(seed)
        table = torch.full((V, V), float("-inf"))
        table[:, :support] = torch.randn(V, support, generator=g) * scale
        self.register_buffer("table", table)

    def forward(self, idx: torch.Tensor, cache: TokenCache | None = None) -> torch.Tensor:
        check_idx(idx, self.config.vocab_size)
        if cache is not None:
            texts(idx, cache)  # the cache records the text; the law needs only the last symbol
        return self.table[idx]

    def new_cache(self) -> TokenCache:
        return TokenCache()

    def law(self, previous: int, temperature: float) -> np.ndarray:
        """The next-symbol law after ``previous`` at ``temperature`` (float64)."""
        z = self.table[previous].double() / temperature
        return torch.softmax(z, dim=-1).numpy()


# The X6 joint-law setting shared by the exactness tests and their teeth.
TOY_V = 4
# One symbol: no prefill; where a wrong-temperature q moves the law most (TV 0.26).
TOY_PROMPT = torch.tensor([0])
TOY_TEMPERATURE = 0.3  # far from 1, so a q taken at temperature 1 shows (TV up to 0.26 per step)


def toy_target() -> ToyTable:
    """The kit's toy target with zero-probability entries (its zero probes'):
    a table on the last two symbols, 20% of entries at p = 0."""
    return toy_models(TOY_V, zero_fraction=ZERO_FRACTION)[0]


def toy_draft() -> ToyTable:
    """The kit's toy draft with zero-probability entries (its zero probes'):
    a table on the last symbol, 20% of entries at q = 0."""
    return toy_models(TOY_V, zero_fraction=ZERO_FRACTION)[1]


__all__ = [
    "TOY_PROMPT",
    "TOY_TEMPERATURE",
    "TOY_V",
    "CountingModel",
    "Markov",
    "ToyTable",
    "toy_draft",
    "toy_gpt",
    "toy_target",
]
