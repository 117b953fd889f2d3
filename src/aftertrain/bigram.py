"""The two baselines of claim B1: a bigram model and a uniform predictor.

Both have the GPT's interface (``config.block_size``, ``forward(idx, cache)``
returning logits, ``new_cache()``), so :func:`aftertrain.model.val_loss`
scores them the same way and the bigram can serve as a draft model for
speculative decoding (it gives a next-character distribution for any
context: the row of its last character).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn

from aftertrain import model as _model
from aftertrain import text as _text

#: Add-alpha smoothing of the bigram counts. On the bundled splits (train the
#: first 60,000 characters, validate on the next 10,000) alpha 0.1 scored 2.54
#: nats, 0.01 gave 2.55 and 1.0 gave 2.57: 0.1 is the best of the three.
BIGRAM_ALPHA = 0.1


@dataclass(frozen=True)
class _Context:
    block_size: int = 128
    vocab_size: int = _text.VOCAB_SIZE


class _NoCache:
    """A cache that only counts positions: these models look back one token."""

    def __init__(self) -> None:
        self.length = 0

    def truncate(self, n: int) -> None:
        if not 0 <= n <= self.length:
            raise ValueError(f"n must be in [0, {self.length}], got {n}")
        self.length = n


class Bigram(nn.Module):
    """P(next | previous character) from add-alpha smoothed training counts.

    ``log_probs[a, b] = log((count(a, b) + alpha) / (count(a, .) + alpha * V))``.
    """

    def __init__(self, log_probs: torch.Tensor, block_size: int = 128) -> None:
        super().__init__()
        V = _text.VOCAB_SIZE
        if log_probs.shape != (V, V):
            raise ValueError(f"log_probs must have shape ({V}, {V}), got {tuple(log_probs.shape)}")
        self.config = _Context(block_size)
        self.register_buffer("log_probs", log_probs.float())

    @classmethod
    def fit(cls, tokens: torch.Tensor | None = None, alpha: float = BIGRAM_ALPHA) -> "Bigram":
        """Count adjacent pairs of ``tokens`` (default: the training split)."""
        if not (math.isfinite(alpha) and alpha > 0):
            raise ValueError(f"alpha must be a finite number > 0, got {alpha}")
        if tokens is None:
            tokens = _text.load_corpus().train
        if tokens.dim() != 1 or tokens.numel() < 2:
            raise ValueError("tokens must be a 1-D tensor of at least 2 tokens")
        V = _text.VOCAB_SIZE
        counts = torch.zeros(V * V, dtype=torch.float64)
        counts.index_add_(0, tokens[:-1] * V + tokens[1:], torch.ones(tokens.numel() - 1,
                                                                      dtype=torch.float64))
        counts = counts.view(V, V) + alpha
        return cls(torch.log(counts / counts.sum(dim=1, keepdim=True)))

    def forward(self, idx: torch.Tensor, cache: _NoCache | None = None) -> torch.Tensor:
        """Logits (B, T, V): the log-probability row of each token."""
        if cache is not None:
            cache.length += idx.shape[1]
        return self.log_probs[idx]

    def new_cache(self) -> _NoCache:
        return _NoCache()


class Uniform(nn.Module):
    """Every character equally likely: scores ln(100) = 4.6052 nats."""

    def __init__(self, block_size: int = 128) -> None:
        super().__init__()
        self.config = _Context(block_size)

    def forward(self, idx: torch.Tensor, cache: _NoCache | None = None) -> torch.Tensor:
        if cache is not None:
            cache.length += idx.shape[1]
        return torch.zeros(*idx.shape, _text.VOCAB_SIZE)

    def new_cache(self) -> _NoCache:
        return _NoCache()


def baseline_losses(reference: nn.Module | None = None) -> dict[str, float]:
    """Validation loss (nats) of the uniform predictor, the bigram and the reference."""
    reference = _model.load_reference() if reference is None else reference
    return {
        "uniform": _model.val_loss(Uniform()),
        "bigram": _model.val_loss(Bigram.fit()),
        "reference": _model.val_loss(reference),
    }
