"""Part 3's outlier figures on a model (Q10): how far the largest row range
of each 2-D weight (:func:`weight_range_ratios`) and the largest channel of
the activations at :func:`activation_sites` (:func:`activation_channel_ratios`)
stand above their medians, and Q10's record (:class:`Outliers`). The other
quantization experiments are in :mod:`aftertrain.experiments.quant`."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from aftertrain.claims import tables as TB
from aftertrain.claims.tables import Shape, TableRow, table
from aftertrain.core.weights import weight_matrices
from aftertrain.lm.anatomy import anatomy


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


def activation_sites(model: nn.Module) -> dict[str, str]:
    """Q10's activation sites of ``model``: the module whose *input* is
    recorded, by site: the first and the last block's feed-forward input and
    the final norm (:func:`aftertrain.lm.anatomy.anatomy`'s roles), keyed
    ``block0_ffn_input``, ``block{L-1}_ffn_input`` (L blocks; one key for a
    one-block model) and ``final_residual``.

    Note: for our three-block GPT ``{"block0_ffn_input": "blocks.0.f1",
    "block2_ffn_input": "blocks.2.f1", "final_residual": "ln"}``; for a
    Llama the first is ``hf.model.layers.0.mlp.gate_proj``.
    """
    roles = anatomy(model)
    first, last = roles.first_ffn_input.split("."), roles.last_ffn_input.split(".")
    # The block index is the first component where the two names part (none: one block).
    index = next((b for a, b in zip(first, last, strict=False) if a != b), "0")
    return {
        "block0_ffn_input": roles.first_ffn_input,
        f"block{index}_ffn_input": roles.last_ffn_input,
        "final_residual": roles.final_norm,
    }


@torch.no_grad()
def _checked_sites(model: nn.Module, tokens) -> dict[str, nn.Module]:
    """The modules of :func:`activation_sites` by site; ValueError unless
    ``tokens`` is a non-empty 1-D int64 tensor of ids in the model's
    vocabulary and the model has the roles the sites name."""
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
        raise ValueError(
            "model must be an aftertrain GPT or HFModel (a .config with block_size and vocab_size)"
        )
    if int(tokens.min()) < 0 or int(tokens.max()) >= config.vocab_size:
        raise ValueError(
            f"tokens must be ids in [0, {config.vocab_size - 1}], got "
            f"[{int(tokens.min())}, {int(tokens.max())}]"
        )
    return {site: model.get_submodule(name) for site, name in activation_sites(model).items()}


def activation_channel_ratios(
    model: nn.Module, tokens: torch.Tensor | None = None
) -> dict[str, ActivationPeak]:
    """Q10: per site, max over channels / median over channels of ``max|x|``.

    ``x`` is the input of the site's module (:func:`activation_sites`: the
    first and the last block's FFN input after their norm, the residual
    stream entering the final norm), over every position of ``tokens``
    (default the model's validation split: the character corpus's for our
    GPT, its tokenizer's for an :class:`aftertrain.lm.hf.HFModel`) cut into
    windows of the context length as :func:`aftertrain.lm.evaluation.val_loss`
    does. Returns ``{site: ActivationPeak}``.
    """
    from aftertrain.lm.hf import model_text

    weight_matrices(model)
    if tokens is None:
        tokens = model_text(model).val
    modules = _checked_sites(model, tokens)
    peaks: dict[str, torch.Tensor] = {}
    handles = []
    for site, mod in modules.items():

        def hook(_m, args, site=site):
            x = args[0].detach().abs().reshape(-1, args[0].shape[-1]).amax(dim=0)
            peaks[site] = x if site not in peaks else torch.maximum(peaks[site], x)

        handles.append(mod.register_forward_pre_hook(hook))
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
