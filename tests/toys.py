"""Toy models for the tests: small, seeded implementations of
:class:`aftertrain.protocol.NextTokenModel` whose laws can be enumerated.

An importable helper module (not a test module): tests import the toys from
here, and nothing is built at import time.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from aftertrain.model import GPT, GPTConfig
from aftertrain.protocol import TableConfig, TokenCache, check_idx, texts


class ToyTable(nn.Module):
    """A toy language model over ``vocab_size`` symbols for exact laws (X6).

    The next-symbol logits are a random table indexed by the last ``order``
    symbols (1 or 2; the first symbol of a text sees a "start" index as its
    predecessor): context-dependent, cheap, and a NextTokenModel with a
    :class:`~aftertrain.protocol.TokenCache`. A fraction ``zero_fraction`` of
    the logits is -inf (probability 0 at any temperature), never a row's
    largest, so supports differ between models.
    """

    def __init__(self, vocab_size: int, seed: int, order: int = 2, scale: float = 1.5,
                 zero_fraction: float = 0.2) -> None:
        super().__init__()
        assert order in (1, 2), "order must be 1 or 2"
        self.config = TableConfig(vocab_size)
        self.order = order
        V = vocab_size
        g = torch.Generator().manual_seed(seed)
        logits = torch.randn(V + 1, V, V, generator=g) * scale
        drop = torch.rand(V + 1, V, V, generator=g) < zero_fraction
        drop &= logits < logits.amax(-1, keepdim=True)  # keep each row's top symbol
        self.register_buffer("table", logits.masked_fill(drop, float("-inf")))

    def forward(self, idx: torch.Tensor, cache: TokenCache | None = None) -> torch.Tensor:
        V = self.config.vocab_size
        T = check_idx(idx, V).shape[1]
        out = []
        for seen in texts(idx, cache):
            start = len(seen) - T
            prev = [seen[i - 1] if i >= 1 and self.order == 2 else V
                    for i in range(start, len(seen))]
            out.append(self.table[torch.tensor(prev), torch.tensor(seen[start:])])
        return torch.stack(out)

    def new_cache(self) -> TokenCache:
        return TokenCache()


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
