"""The two baselines of claim B1: a bigram model and a uniform predictor.

Both implement :class:`aftertrain.lm.protocol.NextTokenModel` (a
:class:`~aftertrain.lm.protocol.TableConfig` and a
:class:`~aftertrain.lm.protocol.TokenCache`), so
:func:`aftertrain.lm.evaluation.val_loss` scores them the same way as the GPT
and the bigram can serve as a draft model for speculative decoding (it gives
a next-character distribution for any context: the row of its last
character).
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from aftertrain.lm import text as _text
from aftertrain.lm.checkpoint import load_reference
from aftertrain.lm.evaluation import val_loss
from aftertrain.lm.protocol import TableConfig, TokenCache, check_idx, check_model, texts

#: Add-alpha smoothing of the bigram counts. On the bundled splits (train the
#: first 60,000 characters, validate on the next 10,000) alpha 0.1 scored 2.54
#: nats, 0.01 gave 2.55 and 1.0 gave 2.57: 0.1 is the best of the three.
BIGRAM_ALPHA = 0.1


class Bigram(nn.Module):
    """P(next | previous character) from add-alpha smoothed training counts.

    ``log_probs[a, b] = log((count(a, b) + alpha) / (count(a, .) + alpha * V))``.
    """

    def __init__(self, log_probs: torch.Tensor, block_size: int = 128) -> None:
        super().__init__()
        V = _text.VOCAB_SIZE
        if not isinstance(log_probs, torch.Tensor) or log_probs.shape != (V, V) \
                or not log_probs.is_floating_point():
            got = getattr(log_probs, "shape", None) or type(log_probs).__name__
            raise ValueError(f"log_probs must be a float tensor of shape ({V}, {V}), got {got}")
        if bool(torch.isnan(log_probs).any()) or bool(torch.isposinf(log_probs).any()):
            raise ValueError("log_probs must not hold NaN or +inf")
        self.config = TableConfig(V, block_size)
        self.register_buffer("log_probs", log_probs.float())

    @classmethod
    def fit(cls, tokens: torch.Tensor | None = None, alpha: float = BIGRAM_ALPHA) -> Bigram:
        """Count adjacent pairs of ``tokens`` (default: the training split)."""
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) \
                or not (math.isfinite(alpha) and alpha > 0):
            raise ValueError(f"alpha must be a finite number > 0, got {alpha!r}")
        if tokens is None:
            tokens = _text.load_corpus().train
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 1 or tokens.numel() < 2 \
                or tokens.is_floating_point() or tokens.dtype == torch.bool:
            raise ValueError("tokens must be a 1-D integer tensor of at least 2 tokens")
        V = _text.VOCAB_SIZE
        if int(tokens.min()) < 0 or int(tokens.max()) >= V:
            raise ValueError(f"tokens must lie in [0, {V}) (the vocabulary)")
        tokens = tokens.long()
        counts = torch.zeros(V * V, dtype=torch.float64)
        counts.index_add_(0, tokens[:-1] * V + tokens[1:], torch.ones(tokens.numel() - 1,
                                                                      dtype=torch.float64))
        counts = counts.view(V, V) + alpha
        return cls(torch.log(counts / counts.sum(dim=1, keepdim=True)))

    def forward(self, idx: torch.Tensor, cache: TokenCache | None = None) -> torch.Tensor:
        """Logits (B, T, V): the log-probability row of each token."""
        texts(check_idx(idx, self.config.vocab_size), cache)  # extends the cache
        return self.log_probs[idx]

    def new_cache(self) -> TokenCache:
        """An empty token cache (the bigram only reads the last token)."""
        return TokenCache()


class Uniform(nn.Module):
    """Every character equally likely: scores ln(100) = 4.6052 nats."""

    def __init__(self, block_size: int = 128) -> None:
        super().__init__()
        self.config = TableConfig(_text.VOCAB_SIZE, block_size)

    def forward(self, idx: torch.Tensor, cache: TokenCache | None = None) -> torch.Tensor:
        """Logits (B, T, V), all zero."""
        texts(check_idx(idx, self.config.vocab_size), cache)  # extends the cache
        return torch.zeros(*idx.shape, self.config.vocab_size)

    def new_cache(self) -> TokenCache:
        """An empty token cache (the uniform predictor reads nothing)."""
        return TokenCache()


def baseline_losses(reference: nn.Module | None = None) -> dict[str, float]:
    """Validation loss (nats) of the uniform predictor, the bigram and the reference."""
    reference = load_reference() if reference is None else check_model(reference, "reference")
    return {
        "uniform": val_loss(Uniform()),
        "bigram": val_loss(Bigram.fit()),
        "reference": val_loss(reference),
    }
