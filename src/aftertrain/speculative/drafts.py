"""Draft models for speculative decoding, behind one small interface.

Every draft is an ``nn.Module`` implementing
:class:`aftertrain.lm.protocol.NextTokenModel`, as the reference does, so
:class:`aftertrain.lm.decoding.Decoder` drives drafts and target alike and rolls
back each one's cache. :func:`draft_model` builds
each kind by name:

- ``BIGRAM``: the previous character only (S3).
- ``INT8``, ``INT4``: the reference with every 2-D weight fake-quantized
  per channel to 8 and 4 bits (S3, part 3's rule).
- ``NGRAM``: an interpolated Witten-Bell character n-gram fitted on the
  training split (X2: cheap and better than the bigram).
- ``GPT``: a 1-layer GPT trained by ``aftertrain train --draft`` and
  committed as ``data/draft.pt`` (X2).
"""

from __future__ import annotations

import enum
from collections import Counter, defaultdict
from importlib import resources
from pathlib import Path

import torch
import torch.nn as nn

from aftertrain.lm import text as _text
from aftertrain.lm.checkpoint import load_checkpoint
from aftertrain.lm.model import GPT
from aftertrain.lm.ngram import Bigram
from aftertrain.lm.protocol import TableConfig, TokenCache, check_idx, texts

DRAFT_FILE = "draft.pt"
DRAFT_REBUILD_HINT = "aftertrain train --draft --out src/aftertrain/data/draft.pt"

#: n-gram order (characters, the predicted one included). Validation loss of
#: the Witten-Bell model on the bundled splits: order 3 1.969, 4 1.687,
#: 5 1.653, 6 1.706, 7 1.777 nats (the corpus is repetitive technical prose,
#: so long contexts pay): 5 is the best.
NGRAM_ORDER = 5


class DraftKind(enum.Enum):
    BIGRAM = "bigram"
    INT8 = "8-bit"
    INT4 = "4-bit"
    NGRAM = "n-gram"
    GPT = "draft GPT"


def draft_model(kind: DraftKind, reference: GPT) -> nn.Module:
    """The draft of ``kind`` for target ``reference`` (eval mode, not shared with it)."""
    if not isinstance(kind, DraftKind):
        raise ValueError(f"kind must be a DraftKind ({[k.name for k in DraftKind]}), got {kind!r}")
    if not isinstance(reference, GPT):
        raise ValueError(f"reference must be an aftertrain.lm.model.GPT, "
                         f"got {type(reference).__name__}")
    if kind is DraftKind.BIGRAM:
        return Bigram.fit().eval()
    if kind in (DraftKind.INT8, DraftKind.INT4):
        from aftertrain import quant

        bits = 8 if kind is DraftKind.INT8 else 4
        return quant.quantized_model(reference, bits, quant.Granularity.PER_CHANNEL).eval()
    if kind is DraftKind.NGRAM:
        return NGram.fit().eval()
    return load_draft_gpt()


def draft_path() -> Path:
    """Where the bundled draft GPT checkpoint lives (``data/draft.pt``)."""
    return Path(str(resources.files("aftertrain") / "data" / DRAFT_FILE))


def load_draft_gpt() -> GPT:
    """The committed trained draft GPT (``data/draft.pt``), in eval mode."""
    return load_checkpoint(draft_path(), rebuild=DRAFT_REBUILD_HINT)


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

    def __init__(self, tables: list[dict[tuple[int, ...], Counter]], unigram: torch.Tensor,
                 block_size: int = 128) -> None:
        super().__init__()
        V = _text.VOCAB_SIZE
        if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
            raise ValueError(f"tables must be a list of dicts, got {type(tables).__name__}")
        if not isinstance(unigram, torch.Tensor) or unigram.shape != (V,) \
                or not unigram.is_floating_point():
            got = getattr(unigram, "shape", None) or type(unigram).__name__
            raise ValueError(f"unigram must be a float tensor of shape ({V},), got {got}")
        if not bool(torch.isfinite(unigram).all()) or bool((unigram < 0).any()) \
                or not float(unigram.sum()) > 0:
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
        if isinstance(order, bool) or not isinstance(order, int) or order < 1:
            raise ValueError(f"order must be an int >= 1, got {order!r}")
        if tokens is None:
            tokens = _text.load_corpus().train
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 1 or tokens.numel() < 2 \
                or tokens.is_floating_point() or tokens.dtype == torch.bool:
            raise ValueError("tokens must be a 1-D integer tensor of at least 2 tokens")
        ids = tokens.tolist()
        V = _text.VOCAB_SIZE
        if min(ids) < 0 or max(ids) >= V:
            raise ValueError(f"tokens must lie in [0, {V})")
        tables: list[dict[tuple[int, ...], Counter]] = []
        for j in range(1, order):
            table: dict[tuple[int, ...], Counter] = defaultdict(Counter)
            for i in range(j, len(ids)):
                table[tuple(ids[i - j:i])][ids[i]] += 1
            tables.append(dict(table))
        counts = torch.bincount(tokens.long(), minlength=V).double()
        return cls(tables, (counts + 1) / (counts.sum() + V))

    def distribution(self, context: tuple[int, ...]) -> torch.Tensor:
        """P(next | context) (float64, V): the model uses the last order-1 characters."""
        if not isinstance(context, tuple) or not all(
                isinstance(t, int) and not isinstance(t, bool)
                and 0 <= t < self.config.vocab_size for t in context):
            raise ValueError(f"context must be a tuple of token indices in "
                             f"[0, {self.config.vocab_size}), got {context!r}")
        return self._distribution(context)

    def _distribution(self, context: tuple[int, ...]) -> torch.Tensor:
        h = context[max(0, len(context) - self.order + 1):]
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
            rows.append(torch.stack([
                self._distribution(tuple(seen[max(0, i - self.order + 2):i + 1]))
                for i in range(len(seen) - T, len(seen))]))
        return torch.log(torch.stack(rows)).float()

    def new_cache(self) -> TokenCache:
        """An empty token cache (the n-gram's only state)."""
        return TokenCache()
