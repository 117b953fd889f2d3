"""Table models: the baselines of claim B1 (a bigram model and a uniform
predictor; a unigram beside them) and the interpolated n-gram, a draft of
claim X2, over any vocabulary (``vocab_size``; default the 100 characters).

Each implements :class:`aftertrain.lm.protocol.NextTokenModel` (a
:class:`~aftertrain.lm.protocol.TableConfig` and a
:class:`~aftertrain.lm.protocol.TokenCache`), so
:func:`aftertrain.lm.evaluation.val_loss` scores them the same way as the GPT
and the bigram can serve as a draft model for speculative decoding (it gives
a next-token distribution for any context: the row of its last token).
Memory is proportional to the training tokens, not to V * V: the bigram of
a large vocabulary keeps only its observed pairs
(:class:`~aftertrain.lm.counts.PairCounts`).
"""

from __future__ import annotations

from collections import Counter, defaultdict

import torch
import torch.nn as nn

from aftertrain.core.validation import check_int, check_real, check_tokens, check_type
from aftertrain.lm import text as _text
from aftertrain.lm.checkpoint import load_reference
from aftertrain.lm.counts import PairCounts, add_alpha_unigram, check_prev
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

#: Most float64 numbers the n-gram keeps as computed context laws (128 MiB):
#: 167,772 contexts of the character vocabulary (more than the bundled
#: splits hold), 110 of a 151,936-token one.
MEMO_MAX_FLOATS = 2**24


#: Largest vocabulary whose bigram is a dense (V, V) table: 1024 symbols
#: keep it at 4 MiB (float32) and its fit under 40 MiB; the character
#: vocabulary's stored figures come from this table's arithmetic. Above it
#: the bigram keeps only the observed pairs (:class:`~aftertrain.lm.counts.PairCounts`).
DENSE_MAX_VOCAB = 1024

#: Add-one smoothing of the unigram baseline, as the n-gram's ``P_0``.
UNIGRAM_ALPHA = 1.0


class Bigram(nn.Module):
    """P(next | previous token) from add-alpha smoothed training counts.

    ``log P(b | a) = log((count(a, b) + alpha) / (count(a, .) + alpha * V))``.
    Built from a (V, V) table of log-probabilities (``log_probs``, float32)
    or from the observed pairs and ``alpha`` (``pairs``): rows are then
    computed when asked, so memory is proportional to the corpus, not V * V
    (``pairs`` and ``alpha`` are None on a table). :meth:`fit` picks the
    table up to :data:`DENSE_MAX_VOCAB` symbols.
    """

    def __init__(
        self,
        log_probs: torch.Tensor | None = None,
        block_size: int = 128,
        *,
        pairs: PairCounts | None = None,
        alpha: float | None = None,
    ) -> None:
        super().__init__()
        if (log_probs is None) == (pairs is None):
            raise ValueError("give either log_probs (a (V, V) table) or pairs and alpha, not both or neither")
        if pairs is not None:
            check_type("pairs", pairs, PairCounts, "an aftertrain.lm.counts.PairCounts")
            self.alpha = check_real("alpha", alpha, low=0.0, low_open=True)
            self.config = TableConfig(pairs.vocab_size, block_size)
            self.pairs = pairs
            return
        if alpha is not None:
            raise ValueError(f"alpha goes with pairs (a log_probs table is smoothed), got alpha={alpha!r}")
        if (
            not isinstance(log_probs, torch.Tensor)
            or log_probs.dim() != 2
            or log_probs.shape[0] != log_probs.shape[1]
            or not log_probs.numel()
            or not log_probs.is_floating_point()
        ):
            got = tuple(log_probs.shape) if isinstance(log_probs, torch.Tensor) else type(log_probs).__name__
            raise ValueError(f"log_probs must be a square float tensor of shape (V, V), got {got}")
        if bool(torch.isnan(log_probs).any()) or bool(torch.isposinf(log_probs).any()):
            raise ValueError("log_probs must not hold NaN or +inf")
        self.config = TableConfig(log_probs.shape[0], block_size)
        self.pairs, self.alpha = None, None
        self.register_buffer("log_probs", log_probs.float())

    @classmethod
    def fit(
        cls,
        tokens: torch.Tensor | None = None,
        alpha: float = BIGRAM_ALPHA,
        vocab_size: int | None = None,
    ) -> Bigram:
        """Count adjacent pairs of ``tokens`` (default: the training split),
        indices in ``[0, vocab_size)`` (default: the character vocabulary).

        Note: a 151,936-token vocabulary and 200,000 tokens store about
        2 * 151,936 + 2 * 200,000 numbers (the pairs), not 2.3e10.
        """
        check_real("alpha", alpha, low=0.0, low_open=True)
        V = _text.VOCAB_SIZE if vocab_size is None else check_int("vocab_size", vocab_size, least=1)
        tokens = check_tokens("tokens", _text.load_corpus().train if tokens is None else tokens, V)
        pairs = PairCounts.of(tokens, V)
        if V <= DENSE_MAX_VOCAB:
            return cls(pairs.dense_log_probs(alpha))
        return cls(pairs=pairs, alpha=alpha)

    def rows(self, prev: torch.Tensor) -> torch.Tensor:
        """``log P(. | a)`` for each token ``a`` of ``prev`` (integer tensor
        of any shape, indices in ``[0, V)``): float32 ``(*prev.shape, V)``."""
        if self.pairs is None:
            check_prev(prev, self.config.vocab_size)
            return self.log_probs[prev]
        return self.pairs.log_rows(prev, self.alpha)

    def forward(self, idx: torch.Tensor, cache: TokenCache | None = None) -> torch.Tensor:
        """Logits (B, T, V): the log-probability row of each token."""
        texts(check_idx(idx, self.config.vocab_size), cache)  # extends the cache
        return self.rows(idx)

    def new_cache(self) -> TokenCache:
        """An empty token cache (the bigram only reads the last token)."""
        return TokenCache()


class Unigram(nn.Module):
    """P(next) from add-alpha smoothed training counts, whatever came before:
    ``P(w) = (c(w) + alpha) / (N + alpha * V)``."""

    def __init__(self, probs: torch.Tensor, block_size: int = 128) -> None:
        super().__init__()
        if not isinstance(probs, torch.Tensor) or probs.dim() != 1 or not probs.numel():
            got = tuple(probs.shape) if isinstance(probs, torch.Tensor) else type(probs).__name__
            raise ValueError(f"probs must be a non-empty 1-D float tensor (V,), got {got}")
        if not probs.is_floating_point() or not bool(((probs > 0) & torch.isfinite(probs)).all()):
            raise ValueError("probs must hold finite probabilities > 0")
        self.config = TableConfig(probs.numel(), block_size)
        self.register_buffer("log_probs", torch.log(probs.double()).float())

    @classmethod
    def fit(
        cls,
        tokens: torch.Tensor | None = None,
        alpha: float = UNIGRAM_ALPHA,
        vocab_size: int | None = None,
    ) -> Unigram:
        """Count the tokens of ``tokens`` (default: the training split),
        indices in ``[0, vocab_size)`` (default: the character vocabulary)."""
        V = _text.VOCAB_SIZE if vocab_size is None else check_int("vocab_size", vocab_size, least=1)
        tokens = _text.load_corpus().train if tokens is None else tokens
        return cls(add_alpha_unigram(tokens, V, alpha))

    def forward(self, idx: torch.Tensor, cache: TokenCache | None = None) -> torch.Tensor:
        """Logits (B, T, V): the same log-probability row at every position."""
        texts(check_idx(idx, self.config.vocab_size), cache)  # extends the cache
        return self.log_probs.expand(*idx.shape, self.config.vocab_size)

    def new_cache(self) -> TokenCache:
        """An empty token cache (the unigram reads nothing)."""
        return TokenCache()


class Uniform(nn.Module):
    """Every token equally likely: scores ln(V) nats (ln(100) = 4.6052 on
    the character vocabulary, the default)."""

    def __init__(self, block_size: int = 128, vocab_size: int | None = None) -> None:
        super().__init__()
        V = _text.VOCAB_SIZE if vocab_size is None else vocab_size
        self.config = TableConfig(V, block_size)

    def forward(self, idx: torch.Tensor, cache: TokenCache | None = None) -> torch.Tensor:
        """Logits (B, T, V), all zero."""
        texts(check_idx(idx, self.config.vocab_size), cache)  # extends the cache
        return torch.zeros(*idx.shape, self.config.vocab_size)

    def new_cache(self) -> TokenCache:
        """An empty token cache (the uniform predictor reads nothing)."""
        return TokenCache()


def baseline_losses(
    reference: nn.Module | None = None,
    train: torch.Tensor | None = None,
    val: torch.Tensor | None = None,
) -> dict[str, float]:
    """Validation loss (nats) of the uniform predictor, the bigram and the
    reference, on the reference's vocabulary and window.

    The bigram is fit on ``train`` and every model scored on ``val``
    (defaults: the character corpus's splits, which only a reference of the
    character vocabulary may use; any other passes its own tokenization of
    a corpus, indices in ``[0, reference.config.vocab_size)``).
    """
    reference = load_reference() if reference is None else check_model(reference, "reference")
    V, T = reference.config.vocab_size, reference.config.block_size
    if V != _text.VOCAB_SIZE and (train is None or val is None):
        raise ValueError(
            f"train and val must be given for a reference of {V} symbols (its own tokens); "
            f"the default splits are the {_text.VOCAB_SIZE}-character corpus"
        )
    corpus = _text.load_corpus() if train is None or val is None else None
    train = check_tokens("train", corpus.train if train is None else train, V)
    val = check_tokens("val", corpus.val if val is None else val, V)
    return {
        "uniform": val_loss(Uniform(T, V), val),
        "bigram": val_loss(Bigram.fit(train, vocab_size=V), val),
        "reference": val_loss(reference, val),
    }


# --- n-gram -----------------------------------------------------------------


class NGram(nn.Module):
    """Interpolated Witten-Bell n-gram (Witten & Bell 1991; Chen &
    Goodman 1998, section 2.5).

    With ``h`` the last ``j`` tokens, ``c(h, w)`` the training count of
    ``h`` followed by ``w``, ``c(h) = sum_w c(h, w)`` and ``T(h)`` the number
    of distinct ``w`` seen after ``h``:
    ``P_j(w | h) = (c(h, w) + T(h) P_{j-1}(w | h')) / (c(h) + T(h))``, where
    ``h'`` drops the oldest token; an unseen ``h`` gives ``P_{j-1}``.
    ``P_0(w) = (c(w) + 1) / (N + V)`` (add-one unigram), so every token
    keeps a positive probability and each ``P_j`` sums to 1. Computed laws
    are kept up to :data:`MEMO_MAX_FLOATS` numbers (a value recomputed is
    the same bit for bit).
    """

    def __init__(
        self, tables: list[dict[tuple[int, ...], Counter]], unigram: torch.Tensor, block_size: int = 128
    ) -> None:
        super().__init__()
        if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
            raise ValueError(f"tables must be a list of dicts, got {type(tables).__name__}")
        if (
            not isinstance(unigram, torch.Tensor)
            or unigram.dim() != 1
            or not unigram.numel()
            or not unigram.is_floating_point()
        ):
            got = tuple(unigram.shape) if isinstance(unigram, torch.Tensor) else type(unigram).__name__
            raise ValueError(f"unigram must be a non-empty 1-D float tensor (V,), got {got}")
        if (
            not bool(torch.isfinite(unigram).all())
            or bool((unigram < 0).any())
            or not float(unigram.sum()) > 0
        ):
            raise ValueError("unigram must hold finite weights >= 0 with a positive sum")
        self.config = TableConfig(unigram.numel(), block_size)
        self.order = len(tables) + 1
        self._tables = tables  # tables[j-1][h] = Counter of next tokens after h (len j)
        self.register_buffer("unigram", unigram.double())
        # context -> its law (float64, V); cleared when it would pass MEMO_MAX_FLOATS
        self._memo: dict[tuple[int, ...], torch.Tensor] = {}

    @classmethod
    def fit(
        cls,
        tokens: torch.Tensor | None = None,
        order: int = NGRAM_ORDER,
        vocab_size: int | None = None,
    ) -> NGram:
        """Count every context of 1 .. order-1 tokens in ``tokens`` (default:
        the training split), indices in ``[0, vocab_size)`` (default: the
        character vocabulary). Memory: at most (order - 1) * n table
        entries for n tokens, and the unigram's V weights."""
        check_int("order", order, least=1)
        V = _text.VOCAB_SIZE if vocab_size is None else check_int("vocab_size", vocab_size, least=1)
        tokens = check_tokens("tokens", _text.load_corpus().train if tokens is None else tokens, V)
        ids = tokens.tolist()
        tables: list[dict[tuple[int, ...], Counter]] = []
        for j in range(1, order):
            table: dict[tuple[int, ...], Counter] = defaultdict(Counter)
            for i in range(j, len(ids)):
                table[tuple(ids[i - j : i])][ids[i]] += 1
            tables.append(dict(table))
        return cls(tables, add_alpha_unigram(tokens, V, 1.0))

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
            mixed = types * dist  # (count + T * P) / (c + T): the count added where seen
            mixed[list(seen.keys())] += torch.tensor(list(seen.values()), dtype=torch.float64)
            dist = mixed.div_(total + types)
        if (len(self._memo) + 1) * self.config.vocab_size > MEMO_MAX_FLOATS:
            self._memo.clear()
        self._memo[h] = dist
        return dist

    def forward(self, idx: torch.Tensor, cache: TokenCache | None = None) -> torch.Tensor:
        """Logits (B, T, V): ``log P(next | tokens so far)`` at every position;
        with a cache, the context continues the cached tokens."""
        T = check_idx(idx, self.config.vocab_size).shape[1]
        out = torch.empty(*idx.shape, self.config.vocab_size)
        for b, seen in enumerate(texts(idx, cache)):
            for t, i in enumerate(range(len(seen) - T, len(seen))):
                out[b, t] = torch.log(self._distribution(tuple(seen[max(0, i - self.order + 2) : i + 1])))
        return out

    def new_cache(self) -> TokenCache:
        """An empty token cache (the n-gram's only state)."""
        return TokenCache()
