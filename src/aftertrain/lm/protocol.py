"""The one model interface: next-token logits with a rollback cache.

What :class:`aftertrain.lm.decoding.Decoder` (and through it plain sampling,
speculative decoding and the context policy) asks of a model, and nothing
more:

- ``model.config.block_size`` (positions one window holds) and
  ``model.config.vocab_size`` (width of the logits);
- ``model.new_cache()``: an empty :class:`RollbackCache`;
- ``model(idx, cache)``: logits (B, T, vocab_size) for token indices ``idx``
  (B, T); with a cache, ``idx`` continues the ``cache.length`` positions the
  cache holds, and the cache is extended by T;
- ``cache.truncate(n)``: forget every position from ``n`` on, so a rejected
  draft costs nothing to roll back (0 <= n <= length).

The reference GPT implements it with its key/value cache
(:class:`aftertrain.lm.model.KVCache`); the table models (the bigram and
uniform baselines, the n-gram draft, the tests' toys) with
:class:`TableConfig` and :class:`TokenCache`, the one cache of a model whose
prediction is a function of the tokens themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch

from aftertrain.core.validation import check_int
from aftertrain.lm import text as _text


@runtime_checkable
class ModelShape(Protocol):
    """The two sizes the Decoder reads from ``model.config``."""

    @property
    def vocab_size(self) -> int:
        """Symbols the model scores (the logits' last dimension)."""
        ...

    @property
    def block_size(self) -> int:
        """Longest context the model reads, in symbols."""
        ...


@runtime_checkable
class RollbackCache(Protocol):
    """A model's state over the first ``length`` positions of the text."""

    @property
    def length(self) -> int:
        """Positions held."""
        ...

    def truncate(self, n: int) -> None:
        """Keep the first ``n`` positions; 0 <= n <= length, else ValueError."""
        ...


@runtime_checkable
class NextTokenModel(Protocol):
    """Next-token logits with a rollback cache (module docstring)."""

    config: ModelShape

    def new_cache(self) -> RollbackCache:
        """An empty cache for a fresh sequence."""
        ...

    def __call__(self, idx: torch.Tensor, cache: RollbackCache | None = None) -> torch.Tensor: ...


def check_model(model: object, name: str = "model") -> NextTokenModel:
    """``model`` if it implements :class:`NextTokenModel`, else ValueError naming ``name``."""
    if not isinstance(model, NextTokenModel) or not isinstance(model.config, ModelShape):
        raise ValueError(
            f"{name} must implement aftertrain.lm.protocol.NextTokenModel "
            f"(config.block_size, config.vocab_size, new_cache(), "
            f"__call__(idx, cache)), got {type(model).__name__}"
        )
    return model


def check_truncate(n: int, length: int) -> None:
    """The rollback's precondition, shared by every cache: 0 <= n <= length."""
    check_int("n", n, least=0, most=length)


def check_idx(idx: object, vocab_size: int) -> torch.Tensor:
    """``idx`` if it is a 2-D integer tensor (B, T) of indices in
    ``[0, vocab_size)``, else ValueError: what every model's forward accepts."""
    check_int("vocab_size", vocab_size, least=1)
    if (
        not isinstance(idx, torch.Tensor)
        or idx.dim() != 2
        or idx.is_floating_point()
        or idx.is_complex()
        or idx.dtype == torch.bool
    ):
        raise ValueError("idx must be a 2-D integer tensor (B, T) of token indices")
    if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= vocab_size):
        raise ValueError(f"idx must lie in [0, {vocab_size}) (the vocabulary)")
    return idx


@dataclass(frozen=True)
class TableConfig:
    """The config of a table model: its vocabulary and the window it is
    decoded in (the GPT's, so a table model drafts for it unchanged)."""

    vocab_size: int = _text.VOCAB_SIZE
    block_size: int = 128

    def __post_init__(self) -> None:
        for name in ("vocab_size", "block_size"):
            value = getattr(self, name)
            check_int(name, value, least=1)


class TokenCache:
    """The tokens a table model has seen: the whole state of a model whose
    prediction is a function of the last few tokens."""

    def __init__(self) -> None:
        self.tokens: list[int] = []

    @property
    def length(self) -> int:
        """Positions held (the tokens seen)."""
        return len(self.tokens)

    def truncate(self, n: int) -> None:
        """Keep the first ``n`` tokens; 0 <= n <= length, else ValueError."""
        check_truncate(n, self.length)
        del self.tokens[n:]

    def extend(self, idx: torch.Tensor) -> list[int]:
        """Append the single row of ``idx`` (1, T) and return the whole text
        so far: the context of the row's T predictions is its prefix."""
        if not isinstance(idx, torch.Tensor) or idx.dim() != 2 or idx.shape[0] != 1:
            raise ValueError(
                f"idx must have one row (1, T) when a cache is given, got {tuple(getattr(idx, 'shape', ()))}"
            )
        self.tokens.extend(idx[0].tolist())
        return self.tokens


def texts(idx: torch.Tensor, cache: TokenCache | None) -> list[list[int]]:
    """For a table model's forward: each row of ``idx`` as the text it ends
    (after the cached tokens when ``cache`` is given, which it extends); the
    row's predictions are for that text's last T positions."""
    if cache is None:
        return idx.tolist()
    if not isinstance(cache, TokenCache):
        raise ValueError(f"cache must be a TokenCache (from new_cache()), got {type(cache).__name__}")
    return [cache.extend(idx)]
