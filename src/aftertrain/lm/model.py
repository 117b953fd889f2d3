"""The reference character-level GPT and its key/value cache.

Shape and parameter names copy the article's model exactly (637,156
parameters, 631,808 of them in 2-D weights): ``tok``, ``pos``,
``blocks.N.{ln1, qkv, proj, ln2, f1, f2}``, ``ln``, ``head``. The GPT
implements :class:`aftertrain.lm.protocol.NextTokenModel` (next-token logits
with a rollback cache); decoding it lives in :mod:`aftertrain.lm.decoding`,
scoring it in :mod:`aftertrain.lm.evaluation`, its files in
:mod:`aftertrain.lm.checkpoint`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from aftertrain.core.validation import check_int
from aftertrain.lm import text as _text
from aftertrain.lm.protocol import check_idx, check_truncate


@dataclass(frozen=True)
class GPTConfig:
    """The GPT's sizes (the article's by default); every size an int >= 1."""

    vocab_size: int = _text.VOCAB_SIZE
    block_size: int = 128  # context length in characters
    n_layer: int = 3
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0

    def __post_init__(self) -> None:
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            value = getattr(self, name)
            check_int(name, value, least=1)
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head})")
        if not isinstance(self.dropout, (int, float)) or not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


class KVCache:
    """Keys and values of every layer for the first ``length`` positions: the
    GPT's :class:`aftertrain.lm.protocol.RollbackCache`.

    ``truncate(n)`` cuts the cache back to ``n`` positions, so speculative
    decoding can roll back a rejected draft without recomputing.
    """

    def __init__(self, n_layer: int) -> None:
        check_int("n_layer", n_layer, least=1)
        self.keys: list[torch.Tensor | None] = [None] * n_layer
        self.values: list[torch.Tensor | None] = [None] * n_layer
        self.length = 0

    def truncate(self, n: int) -> None:
        """Keep the first ``n`` positions of every layer's keys and values; 0 <= n <= length."""
        check_truncate(n, self.length)
        for i, (k, v) in enumerate(zip(self.keys, self.values, strict=True)):
            if k is not None:
                self.keys[i], self.values[i] = k[:, :, :n], v[:, :, :n]
        self.length = n

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor):
        """Store this layer's new keys/values; return the full ones."""
        if self.keys[layer] is not None:
            k = torch.cat([self.keys[layer], k], dim=2)
            v = torch.cat([self.values[layer], v], dim=2)
        self.keys[layer], self.values[layer] = k, v
        return k, v


class Block(nn.Module):
    """Pre-LayerNorm transformer block; attention is inline so the parameter
    names stay the article's (``qkv``, ``proj``, ``f1``, ``f2``)."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        C = config.n_embd
        self.n_head = config.n_head
        self.ln1 = nn.LayerNorm(C)
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C)
        self.f1 = nn.Linear(C, 4 * C)
        self.f2 = nn.Linear(4 * C, C)
        self.drop = nn.Dropout(config.dropout)

    def attend(self, x: torch.Tensor, layer: int, cache: KVCache | None) -> torch.Tensor:
        """Causal self-attention of ``x`` (B, T, C) over the cached positions and its own."""
        B, T, C = x.shape
        hs = C // self.n_head
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        past = 0
        if cache is not None:
            past = cache.length
            k, v = cache.append(layer, k, v)  # (B, nh, past + T, hs)
        # New query t sees keys 0 .. past + t (causal over the whole cache).
        mask = torch.ones(T, past + T, dtype=torch.bool, device=x.device).tril(past)
        p = self.drop.p if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.drop(self.proj(y))

    def forward(self, x: torch.Tensor, layer: int, cache: KVCache | None) -> torch.Tensor:
        """Pre-norm residual block: ``x + attend(ln1(x))``, then ``+ f2(gelu(f1(ln2(x))))``."""
        x = x + self.attend(self.ln1(x), layer, cache)
        x = x + self.drop(self.f2(F.gelu(self.f1(self.ln2(x)))))
        return x


class GPT(nn.Module):
    """The article's GPT: token and position embeddings, ``n_layer`` blocks,
    a final LayerNorm and the ``head`` to vocabulary logits."""

    def __init__(self, config: GPTConfig = GPTConfig()) -> None:
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise ValueError(f"config must be a GPTConfig, got {type(config).__name__}")
        self.config = config
        self.tok = nn.Embedding(config.vocab_size, config.n_embd)
        self.pos = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln = nn.LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        # GPT-2's initialisation: N(0, 0.02) weights, zero biases.
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """Logits (B, T, vocab) for token indices ``idx`` (B, T).

        With a cache, ``idx`` continues the cached positions and the cache is
        extended; ``cache.length + T`` must not exceed ``block_size``.
        """
        check_idx(idx, self.config.vocab_size)
        if cache is not None and not isinstance(cache, KVCache):
            raise ValueError(f"cache must be a KVCache (from new_cache()), got {type(cache).__name__}")
        B, T = idx.shape
        past = cache.length if cache is not None else 0
        if past + T > self.config.block_size:
            raise ValueError(f"context of {past + T} positions exceeds block_size {self.config.block_size}")
        positions = torch.arange(past, past + T, device=idx.device)
        x = self.drop(self.tok(idx) + self.pos(positions))  # (B, T, C)
        for layer, block in enumerate(self.blocks):
            x = block(x, layer, cache)
        if cache is not None:
            cache.length = past + T
        return self.head(self.ln(x))

    def new_cache(self) -> KVCache:
        """An empty key/value cache for this model."""
        return KVCache(self.config.n_layer)
