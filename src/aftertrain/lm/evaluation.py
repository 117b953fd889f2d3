"""Scoring a model: mean next-character cross-entropy on a split."""

from __future__ import annotations

import hashlib

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
    if (
        not isinstance(tokens, torch.Tensor)
        or tokens.dim() != 1
        or tokens.numel() < 2
        or tokens.is_floating_point()
        or tokens.dtype == torch.bool
    ):
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
    nll = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), reduction="none")
    if not torch.isfinite(nll).all():
        raise NonFiniteLossError(
            "model: it produced a non-finite loss (NaN or inf logits) on the validation split"
        )
    return nll.double().sum()


class LossMemo:
    """:func:`val_loss` on ``tokens``, computed once per distinct GPT.

    A GPT's loss is a function of its class, its config and its state (every
    parameter and buffer: names, dtypes, shapes and bytes), the tokens and the
    thread count; the memo keys it by a digest of those, so two copies with
    the same weights (an "unchanged" quantizer's copy, the unpruned curve
    point, a draft that is the 8-bit model) are scored once and get the same
    float. Any other model (whose forward may read more than its state, such
    as an n-gram's tables) is scored on every call. ``tokens``: as
    :func:`val_loss` (default the validation split). ``misses``: how many
    models it scored.
    """

    def __init__(self, tokens: torch.Tensor | None = None) -> None:
        if tokens is not None and not isinstance(tokens, torch.Tensor):
            raise ValueError(f"tokens must be a 1-D integer tensor or None, got {type(tokens).__name__}")
        self.tokens = None if tokens is None else tokens.clone()
        self.misses = 0
        self._losses: dict[tuple, float] = {}

    def __call__(self, model: NextTokenModel) -> float:
        from aftertrain.lm.model import GPT

        if type(model) is not GPT:
            self.misses += 1
            return val_loss(model, self.tokens)
        key = (model.config, torch.get_num_threads(), _state_digest(model))
        if key not in self._losses:
            self.misses += 1
            self._losses[key] = val_loss(model, self.tokens)
        return self._losses[key]


def _state_digest(model: torch.nn.Module) -> str:
    h = hashlib.blake2b(digest_size=16)
    for name, t in model.state_dict().items():
        t = t.detach().cpu().contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)};".encode())
        h.update(t.view(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()
