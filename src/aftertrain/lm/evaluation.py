"""Scoring a model: mean next-token cross-entropy on a split, in a bounded
number of logits at a time whatever the vocabulary."""

from __future__ import annotations

import hashlib

import torch
import torch.nn.functional as F

from aftertrain.core.validation import check_tokens
from aftertrain.lm import hf as _hf
from aftertrain.lm.protocol import NextTokenModel, check_model

#: Most logits one forward of :func:`val_loss` may return (B * T * V): 2**25
#: float32 numbers are 128 MiB. The character GPT's 10,000-target split is
#: 1,000,000 of them, one forward; a 151,936-token vocabulary gets 220
#: positions a forward.
LOGITS_BUDGET = 2**25


@torch.no_grad()
def val_loss(model: NextTokenModel, tokens: torch.Tensor | None = None) -> float:
    """Mean cross-entropy (nats) over every next-token target of the split.

    The split (default: the model's validation split,
    :func:`aftertrain.lm.hf.model_text`) is cut into consecutive,
    non-overlapping windows of the model's context; each window predicts its
    own next tokens, so a token's context is the window so far. The windows
    are scored in batches of at most :data:`LOGITS_BUDGET` logits; a window
    longer than that (T * V > the budget) is fed in pieces through the
    model's cache, which continues it (equal to the whole window's forward
    for a table model, up to float rounding for a GPT). The computation is
    fixed in order and shape, so the value is the same bit for bit on every
    call. ``tokens``: 1-D integer tensor of at least 2 indices in
    ``[0, model.config.vocab_size)``. A non-finite loss raises
    FloatingPointError.
    """
    check_model(model)
    V = model.config.vocab_size
    tokens = check_tokens("tokens", _hf.model_text(model).val if tokens is None else tokens, V)
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
            total += _windows_nll_sum(model, x, y)
        rest = n_targets - full * T
        if rest:
            x = tokens[full * T : full * T + rest].view(1, rest)
            y = tokens[full * T + 1 :].view(1, rest)
            total += _windows_nll_sum(model, x, y)
        return float(total / n_targets)
    finally:
        model.train(was_training)


def _windows_nll_sum(model: NextTokenModel, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    # windows x (n, t) with targets y, at most LOGITS_BUDGET logits a forward;
    # within budget and in one batch, exactly the single forward of before
    n, t = x.shape
    V = model.config.vocab_size
    if t * V <= LOGITS_BUDGET:
        per_call = LOGITS_BUDGET // (t * V)
        sums = [_nll_sum(model(x[i : i + per_call]), y[i : i + per_call]) for i in range(0, n, per_call)]
    else:
        step = max(1, LOGITS_BUDGET // V)
        sums = []
        for i in range(n):
            cache = model.new_cache()
            for j in range(0, t, step):
                sums.append(_nll_sum(model(x[i : i + 1, j : j + step], cache), y[i : i + 1, j : j + step]))
    return sum(sums[1:], sums[0])  # left to right


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
        self.tokens = None if tokens is None else check_tokens("tokens", tokens).clone()
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
