"""The toy language models :func:`aftertrain.checks.generator_battery.check_generator`
runs a decoding loop on: tables of next-symbol logits whose exact law is
cheap to enumerate."""

from __future__ import annotations

import torch
from torch import nn

from aftertrain.core.validation import check_int
from aftertrain.lm.protocol import TableConfig, TokenCache, check_idx, texts

#: The fraction of a zero-probability toy's logits at -inf: the probes of
#: p = 0 and q = 0 (:func:`toy_models` with ``zero_fraction=ZERO_FRACTION``).
ZERO_FRACTION = 0.2


class ToyTable(nn.Module):
    """A toy language model over ``vocab_size`` symbols whose exact law is
    cheap to enumerate.

    The next-symbol logits are a random table indexed by the last ``order``
    symbols (1 or 2; the first symbol sees a "start" index before it). A
    fraction ``zero_fraction`` of the logits is -inf (probability 0 at any
    temperature), never a row's largest, so supports differ between models.
    ``forward(idx (B, L)) -> logits (B, L, V)`` scores whole texts; with
    ``cache`` (from ``new_cache()``) it continues the cached text, which is
    aftertrain's Decoder interface (``config.block_size``, ``new_cache()``).
    """

    def __init__(
        self,
        vocab_size: int,
        seed: int,
        order: int = 2,
        scale: float = 1.5,
        zero_fraction: float = ZERO_FRACTION,
    ) -> None:
        super().__init__()
        if order not in (1, 2):
            raise ValueError(f"order must be 1 or 2, got {order!r}")
        check_int("vocab_size", vocab_size, least=2)
        self.config = TableConfig(vocab_size)
        self.order = order
        V = vocab_size
        g = torch.Generator().manual_seed(seed)
        logits = torch.randn(V + 1, V, V, generator=g) * scale
        drop = torch.rand(V + 1, V, V, generator=g) < zero_fraction
        drop &= logits < logits.amax(-1, keepdim=True)  # keep each row's top symbol
        self.register_buffer("table", logits.masked_fill(drop, float("-inf")))

    def forward(self, idx: torch.Tensor, cache: TokenCache | None = None) -> torch.Tensor:
        """Logits (B, T, V) for ``idx`` (int64, (B, T), symbols below ``vocab_size``): row b,
        position t reads the table at the symbol before and the symbol at t (the start index
        before the first symbol; only the symbol at t when ``order`` is 1). With ``cache`` the
        rows continue the cached text, which this call extends. ValueError when ``idx`` is not
        such a tensor or ``cache`` is not a :class:`TokenCache`."""
        V = self.config.vocab_size
        T = check_idx(idx, V).shape[1]
        out = []
        for seen in texts(idx, cache):
            start = len(seen) - T
            prev = [seen[i - 1] if i >= 1 and self.order == 2 else V for i in range(start, len(seen))]
            out.append(self.table[torch.tensor(prev), torch.tensor(seen[start:])])
        return torch.stack(out)

    def new_cache(self) -> TokenCache:
        """An empty :class:`TokenCache`: the text seen so far, which ``forward(idx, cache)``
        continues and extends (aftertrain's Decoder interface)."""
        return TokenCache()


def toy_models(vocab_size: int = 4, zero_fraction: float = 0.0) -> tuple[ToyTable, ToyTable]:
    """The default (target, draft) of ``check_generator``: a table on the
    last two symbols and one on the last symbol, with full support by
    default (every symbol has p > 0 and q > 0, so a loop that divides by q
    shows its law, not a crash); ``zero_fraction=ZERO_FRACTION`` puts 20%
    of the entries at probability 0 (the zero-probability probes)."""
    return (
        ToyTable(vocab_size, seed=11, order=2, zero_fraction=zero_fraction),
        ToyTable(vocab_size, seed=12, order=1, zero_fraction=zero_fraction),
    )
