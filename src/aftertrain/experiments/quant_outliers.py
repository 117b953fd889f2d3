"""Part 3's outlier figures on a model (Q10): how far the largest row range
of each 2-D weight (:func:`weight_range_ratios`) and the largest channel of
the activations at :data:`ACTIVATION_SITES` (:func:`activation_channel_ratios`)
stand above their medians, and Q10's record (:class:`Outliers`). The other
quantization experiments are in :mod:`aftertrain.experiments.quant`."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from aftertrain.claims import tables as TB
from aftertrain.claims.tables import Shape, TableRow, table
from aftertrain.core.weights import weight_matrices


@dataclass(frozen=True)
class WeightRanges(TableRow):
    """Q10: per matrix, max / median of its rows' ranges; the worst and median matrix."""

    matrices: dict[str, float]
    worst: float
    median: float


@dataclass(frozen=True)
class ActivationPeak(TableRow):
    """Q10: at one site, max / median over channels of ``max|x|``, and the max."""

    ratio: float
    max: float


@table(TB.Q10, ("Q10",), Shape.ONE)
@dataclass(frozen=True)
class Outliers(TableRow):
    """Q10's record: weight ranges, activation peaks by site, and the int8 loss
    per-tensor minus per-channel."""

    weights: WeightRanges
    activations: dict[str, ActivationPeak]
    int8_granularity_gap: float


def _median(x: torch.Tensor) -> float:
    # The midpoint of the two middle values for an even count (numpy's median).
    return float(torch.quantile(x.double(), 0.5))


def _max_over_median(x: torch.Tensor, argument: str, what: str) -> float:
    median = _median(x)
    if not median > 0:
        raise ValueError(
            f"{argument}: {what} has median 0 (at least half its channels are all "
            f"zero, e.g. after heavy pruning), so max / median is undefined"
        )
    return float(x.max()) / median


def weight_range_ratios(model: nn.Module) -> WeightRanges:
    """Q10: per 2-D weight, max / median of its rows' ranges ``max|w|``; the
    worst (max) and the median of those ratios."""
    ratios = {}
    for name, p in weight_matrices(model).items():
        if not bool(torch.isfinite(p).all()):
            raise ValueError(f"model: {name} must be finite (no NaN or Inf)")
        r = p.detach().abs().amax(dim=1)
        ratios[name] = _max_over_median(r, "model", f"{name}'s row ranges max|w|")
    values = torch.tensor(list(ratios.values()), dtype=torch.float64)  # the ratios are float64
    return WeightRanges(ratios, float(values.max()), _median(values))


#: Q10's activation sites: module whose *input* is recorded.
ACTIVATION_SITES = {
    "block0_ffn_input": "blocks.0.f1",
    "block2_ffn_input": "blocks.2.f1",
    "final_residual": "ln",
}


@torch.no_grad()
def _checked_sites(model: nn.Module, tokens) -> dict[str, nn.Module]:
    """The model's modules by name; ValueError unless ``tokens`` is a
    non-empty 1-D int64 tensor of ids in the model's vocabulary and the
    model has every module of :data:`ACTIVATION_SITES`."""
    if (
        not isinstance(tokens, torch.Tensor)
        or tokens.dtype != torch.int64
        or tokens.dim() != 1
        or tokens.numel() == 0
    ):
        raise ValueError(
            f"tokens must be a non-empty 1-D int64 tensor, got "
            f"{getattr(tokens, 'dtype', type(tokens).__name__)} "
            f"{tuple(getattr(tokens, 'shape', ()))}"
        )
    config = getattr(model, "config", None)
    if config is None or not hasattr(config, "block_size") or not hasattr(config, "vocab_size"):
        raise ValueError("model must be an aftertrain GPT (a .config with block_size and vocab_size)")
    if int(tokens.min()) < 0 or int(tokens.max()) >= config.vocab_size:
        raise ValueError(
            f"tokens must be ids in [0, {config.vocab_size - 1}], got "
            f"[{int(tokens.min())}, {int(tokens.max())}]"
        )
    modules = dict(model.named_modules())
    missing = [m for m in ACTIVATION_SITES.values() if m not in modules]
    if missing:
        raise ValueError(f"model has no module {missing} (the activation sites {ACTIVATION_SITES})")
    return modules


def activation_channel_ratios(
    model: nn.Module, tokens: torch.Tensor | None = None
) -> dict[str, ActivationPeak]:
    """Q10: per site, max over channels / median over channels of ``max|x|``.

    ``x`` is the input of the site's module (``ACTIVATION_SITES``: block 0's
    and block 2's FFN input after LayerNorm, the residual stream entering the
    final LayerNorm), over every position of the validation split cut into
    windows of the context length as :func:`aftertrain.lm.evaluation.val_loss` does.
    Returns ``{site: ActivationPeak}``.
    """
    from aftertrain.lm.text import load_corpus

    weight_matrices(model)
    if tokens is None:
        tokens = load_corpus().val
    modules = _checked_sites(model, tokens)
    peaks: dict[str, torch.Tensor] = {}
    handles = []
    for site, mod in ACTIVATION_SITES.items():

        def hook(_m, args, site=site):
            x = args[0].detach().abs().reshape(-1, args[0].shape[-1]).amax(dim=0)
            peaks[site] = x if site not in peaks else torch.maximum(peaks[site], x)

        handles.append(modules[mod].register_forward_pre_hook(hook))
    was_training = model.training
    model.eval()
    try:
        T = model.config.block_size
        n = tokens.numel() // T * T
        model(tokens[:n].view(-1, T))
        if tokens.numel() > n:
            model(tokens[n:].view(1, -1))
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    return {
        site: ActivationPeak(_max_over_median(v, "model", f"the input of {site}'s channels"), float(v.max()))
        for site, v in peaks.items()
    }
