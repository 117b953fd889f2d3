"""Scoring a model: mean next-character cross-entropy on a split."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from aftertrain.lm import text as _text
from aftertrain.lm.protocol import NextTokenModel, check_model


@torch.no_grad()
def val_loss(model: NextTokenModel, tokens: torch.Tensor | None = None) -> float:
    """Mean cross-entropy (nats) over every next-character target of the split.

    The split (default: the validation split) is cut into consecutive,
    non-overlapping windows of the model's context; each window predicts its
    own next characters, so a character's context is the window so far. The
    computation is fixed in order and shape, so the value is the same bit for
    bit on every call. ``tokens``: 1-D integer tensor of at least 2 indices in
    ``[0, model.config.vocab_size)``. A non-finite loss raises
    FloatingPointError.
    """
    check_model(model)
    V = model.config.vocab_size
    if tokens is None:
        tokens = _text.load_corpus().val
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 1 or tokens.numel() < 2 \
            or tokens.is_floating_point() or tokens.dtype == torch.bool:
        raise ValueError("tokens must be a 1-D integer tensor of at least 2 tokens")
    if int(tokens.min()) < 0 or int(tokens.max()) >= V:
        raise ValueError(f"tokens must lie in [0, {V}) (the model's vocabulary)")
    tokens = tokens.long()
    was_training = model.training
    model.eval()
    try:
        T = model.config.block_size
        n_targets = tokens.numel() - 1
        full = n_targets // T
        total = torch.zeros((), dtype=torch.float64)
        if full:
            x = tokens[: full * T].view(full, T)
            y = tokens[1 : full * T + 1].view(full, T)
            total += _nll_sum(model(x), y)
        rest = n_targets - full * T
        if rest:
            x = tokens[full * T : full * T + rest].view(1, rest)
            y = tokens[full * T + 1 :].view(1, rest)
            total += _nll_sum(model(x), y)
        return float(total / n_targets)
    finally:
        model.train(was_training)


class NonFiniteLossError(FloatingPointError, ValueError):
    """The model's logits gave a NaN or inf loss: a FloatingPointError (as
    documented) that is also the ValueError every bad input raises."""


def _nll_sum(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    # Per-target losses in float32, summed in float64 so the mean carries no
    # accumulation error (a uniform predictor then scores ln(100) to 1e-7).
    nll = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1),
                          reduction="none")
    if not torch.isfinite(nll).all():
        raise NonFiniteLossError("model: it produced a non-finite loss (NaN or inf logits) "
                                 "on the validation split")
    return nll.double().sum()
