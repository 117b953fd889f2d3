"""Table models: the two baselines of claim B1 (a bigram model and a uniform
predictor) and the interpolated n-gram, a draft of claim X2.

Both implement :class:`aftertrain.lm.protocol.NextTokenModel` (a
:class:`~aftertrain.lm.protocol.TableConfig` and a
:class:`~aftertrain.lm.protocol.TokenCache`), so
:func:`aftertrain.lm.evaluation.val_loss` scores them the same way as the GPT
and the bigram can serve as a draft model for speculative decoding (it gives
a next-character distribution for any context: the row of its last
character).
"""

from __future__ import annotations

from collections import Counter, defaultdict

import torch
import torch.nn as nn

from aftertrain.core.validation import check_int, check_real
from aftertrain.lm import text as _text
from aftertrain.lm.checkpoint import load_reference
from aftertrain.lm.evaluation import val_loss
from aftertrain.lm.protocol import TableConfig, TokenCache, check_idx, check_model, texts

#: Add-alpha smoothing of the bigram counts. On the bundled splits (train the
#: first 60,000 characters, validate on the next 10,000) alpha 0.1 scored 2.54
#: nats, 0.01 gave 2.55 and 1.0 gave 2.57: 0.1 is the best of the three.
BIGRAM_ALPHA = 0.1

#: n-gram order (characters, the predicted one included). Validation loss of
#: the Witten-Bell model on the bundled splits: order 3 1.969, 4 1.687,
#: 5 1.653, 6 1.706, 7 1.777 nats (the corpus is repetitive technical prose,
#: so long contexts pay): 5 is the best.
NGRAM_ORDER = 5


class Bigram(nn.Module):
    """P(next | previous character) from add-alpha smoothed training counts.

    ``log_probs[a, b] = log((count(a, b) + alpha) / (count(a, .) + alpha * V))``.
    """

    def __init__(self, log_probs: torch.Tensor, block_size: int = 128) -> None:
        super().__init__()
        V = _text.VOCAB_SIZE
        if (
            not isinstance(log_probs, torch.Tensor)
            or log_probs.shape != (V, V)
            or not log_probs.is_floating_point()
        ):
            got = getattr(log_probs, "shape", None) or type(log_probs).__name__
            raise ValueError(f"log_probs must be a float tensor of shape ({V}, {V}), got {got}")
        if bool(torch.isnan(log_probs).any()) or bool(torch.isposinf(log_probs).any()):
            raise ValueError("log_probs must not hold NaN or +inf")
        self.config = TableConfig(V, block_size)
        self.register_buffer("log_probs", log_probs.float())

    @classmethod
    def fit(cls, tokens: torch.Tensor | None = None, alpha: float = BIGRAM_ALPHA) -> Bigram:
        """Count adjacent pairs of ``tokens`` (default: the training split)."""
        check_real("alpha", alpha, low=0.0, low_open=True)
        if tokens is None:
            tokens = _text.load_corpus().train
        if (
            not isinstance(tokens, torch.Tensor)
            or tokens.dim() != 1
            or tokens.numel() < 2
            or tokens.is_floating_point()
            or tokens.dtype == torch.bool
        ):
            raise ValueError("tokens must be a 1-D integer tensor of at least 2 tokens")
        V = _text.VOCAB_SIZE
        if int(tokens.min()) < 0 or int(tokens.max()) >= V:
            raise ValueError(f"tokens must lie in [0, {V}) (the vocabulary)")
        tokens = tokens.long()
        counts = torch.zeros(V * V, dtype=torch.float64)
        counts.index_add_(
            0, tokens[:-1] * V + tokens[1:], torch.ones(tokens.numel() - 1, dtype=torch.float64)
        )
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


# --- n-gram -----------------------------------------------------------------


class NGram(nn.Module):
    """Interpolated Witten-Bell character n-gram (Witten & Bell 1991; Chen &
    Goodman 1998, section 2.5).

    With ``h`` the last ``j`` characters, ``c(h, w)`` the training count of
    ``h`` followed by ``w``, ``c(h) = sum_w c(h, w)`` and ``T(h)`` the number
    of distinct ``w`` seen after ``h``:
    ``P_j(w | h) = (c(h, w) + T(h) P_{j-1}(w | h')) / (c(h) + T(h))``, where
    ``h'`` drops the oldest character; an unseen ``h`` gives ``P_{j-1}``.
    ``P_0(w) = (c(w) + 1) / (N + V)`` (add-one unigram), so every character
    keeps a positive probability and each ``P_j`` sums to 1.
    """

    def __init__(
        self, tables: list[dict[tuple[int, ...], Counter]], unigram: torch.Tensor, block_size: int = 128
    ) -> None:
        super().__init__()
        V = _text.VOCAB_SIZE
        if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
            raise ValueError(f"tables must be a list of dicts, got {type(tables).__name__}")
        if not isinstance(unigram, torch.Tensor) or unigram.shape != (V,) or not unigram.is_floating_point():
            got = getattr(unigram, "shape", None) or type(unigram).__name__
            raise ValueError(f"unigram must be a float tensor of shape ({V},), got {got}")
        if (
            not bool(torch.isfinite(unigram).all())
            or bool((unigram < 0).any())
            or not float(unigram.sum()) > 0
        ):
            raise ValueError("unigram must hold finite weights >= 0 with a positive sum")
        self.config = TableConfig(V, block_size)
        self.order = len(tables) + 1
        self._tables = tables  # tables[j-1][h] = Counter of next characters after h (len j)
        self.register_buffer("unigram", unigram.double())
        self._memo: dict[tuple[int, ...], torch.Tensor] = {}

    @classmethod
    def fit(cls, tokens: torch.Tensor | None = None, order: int = NGRAM_ORDER) -> NGram:
        """Count every context of 1 .. order-1 characters in ``tokens``
        (default: the training split)."""
        check_int("order", order, least=1)
        if tokens is None:
            tokens = _text.load_corpus().train
        if (
            not isinstance(tokens, torch.Tensor)
            or tokens.dim() != 1
            or tokens.numel() < 2
            or tokens.is_floating_point()
            or tokens.dtype == torch.bool
        ):
            raise ValueError("tokens must be a 1-D integer tensor of at least 2 tokens")
        ids = tokens.tolist()
        V = _text.VOCAB_SIZE
        if min(ids) < 0 or max(ids) >= V:
            raise ValueError(f"tokens must lie in [0, {V})")
        tables: list[dict[tuple[int, ...], Counter]] = []
        for j in range(1, order):
            table: dict[tuple[int, ...], Counter] = defaultdict(Counter)
            for i in range(j, len(ids)):
                table[tuple(ids[i - j : i])][ids[i]] += 1
            tables.append(dict(table))
        counts = torch.bincount(tokens.long(), minlength=V).double()
        return cls(tables, (counts + 1) / (counts.sum() + V))

    def distribution(self, context: tuple[int, ...]) -> torch.Tensor:
        """P(next | context) (float64, V): the model uses the last order-1 characters."""
        if not isinstance(context, tuple) or not all(
            isinstance(t, int) and not isinstance(t, bool) and 0 <= t < self.config.vocab_size
            for t in context
        ):
            raise ValueError(
                f"context must be a tuple of token indices in [0, {self.config.vocab_size}), got {context!r}"
            )
        return self._distribution(context)

    def _distribution(self, context: tuple[int, ...]) -> torch.Tensor:
        h = context[max(0, len(context) - self.order + 1) :]
        hit = self._memo.get(h)
        if hit is not None:
            return hit
        dist = self._distribution(h[1:]) if h else self.unigram
        seen = self._tables[len(h) - 1].get(h) if h else None
        if seen:
            total, types = sum(seen.values()), len(seen)
            counts = torch.zeros_like(dist)
            counts[list(seen.keys())] = torch.tensor(list(seen.values()), dtype=torch.float64)
            dist = (counts + types * dist) / (total + types)
        self._memo[h] = dist
        return dist

    def forward(self, idx: torch.Tensor, cache: TokenCache | None = None) -> torch.Tensor:
        """Logits (B, T, V): ``log P(next | tokens so far)`` at every position;
        with a cache, the context continues the cached tokens."""
        T = check_idx(idx, self.config.vocab_size).shape[1]
        rows = []
        for seen in texts(idx, cache):
            rows.append(
                torch.stack(
                    [
                        self._distribution(tuple(seen[max(0, i - self.order + 2) : i + 1]))
                        for i in range(len(seen) - T, len(seen))
                    ]
                )
            )
        return torch.log(torch.stack(rows)).float()

    def new_cache(self) -> TokenCache:
        """An empty token cache (the n-gram's only state)."""
        return TokenCache()
