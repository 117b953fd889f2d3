"""Part 3's quantization experiments on a model: the tables behind Q4-Q10.

Each applies :mod:`aftertrain.quant` to a model and returns a table (plain
dicts and lists); the tests assert on them and the report renders them. The
loss-based ones take ``quantize=`` (default :func:`aftertrain.quant.api.quantized_model`)
so a test can pass a deliberately broken quantizer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import torch
from torch import nn

from aftertrain.quant.api import _check_model, _check_names, quantized_model
from aftertrain.quant.primitives import (
    Granularity,
    _check_bits,
    _check_granularity,
    _check_weight,
    dequantize,
    quantize_codes,
)

#: Builds a quantized copy: ``(model, bits, granularity, names) -> model``.
#: The experiments take one so a test can pass a deliberately broken variant.
ModelQuantizer = Callable[[nn.Module, int, Granularity, "Iterable[str] | None"], nn.Module]

#: Widths of the article's bits table (Q4).
ARTICLE_BITS = (8, 6, 4, 3, 2)


def _val_loss(model: nn.Module, tokens: torch.Tensor | None) -> float:
    from aftertrain.evaluation import val_loss

    return val_loss(model, tokens)


def _check_quantize(quantize: ModelQuantizer) -> None:
    if not callable(quantize):
        raise ValueError(f"quantize must be a callable (model, bits, granularity, names) -> "
                         f"model, got {quantize!r}")


def _apply(quantize: ModelQuantizer, model: nn.Module, *args) -> nn.Module:
    out = quantize(model, *args)
    if not isinstance(out, nn.Module):
        raise ValueError(f"quantize must return a torch.nn.Module, got {type(out).__name__}")
    return out


def _check_bits_list(bits: Iterable[int]) -> list[int]:
    if isinstance(bits, (int, str)) or not isinstance(bits, Iterable):
        raise ValueError(f"bits must be an iterable of ints in [2, 8], got {bits!r}")
    bits = list(bits)
    if not bits:
        raise ValueError("bits must hold at least one width in [2, 8], got none")
    for b in bits:
        _check_bits(b)
    return bits


def bits_table(
    model: nn.Module,
    bits: Iterable[int] = ARTICLE_BITS,
    tokens: torch.Tensor | None = None,
    quantize: ModelQuantizer = quantized_model,
) -> list[dict]:
    """Validation loss with every 2-D weight quantized, per width and granularity.

    One row per width: ``{"bits", "per_tensor", "per_channel"}`` (mean
    cross-entropy in nats on ``tokens``, default the validation split).
    ``quantize`` builds each quantized copy (default :func:`quantized_model`).
    """
    _check_model(model)
    _check_quantize(quantize)
    rows = []
    for b in _check_bits_list(bits):
        rows.append({
            "bits": b,
            "per_tensor": _val_loss(_apply(quantize, model, b, Granularity.PER_TENSOR, None), tokens),
            "per_channel": _val_loss(_apply(quantize, model, b, Granularity.PER_CHANNEL, None), tokens),
        })
    return rows


def reconstruction_figures(
    w: torch.Tensor,
    bits: int = 2,
) -> dict[str, dict[str, float]]:
    """Per granularity: the fraction of elements quantized to 0 and the mean
    absolute error ``mean|w - w_hat|`` (Q6, on ``blocks.0.f1.weight``)."""
    _check_bits(bits)
    _check_weight(w, Granularity.PER_CHANNEL)
    out = {}
    for g in Granularity:
        q, s = quantize_codes(w, bits, g)
        w_hat = dequantize(q, s)
        out[g.value] = {
            "zero_fraction": float((q == 0).double().mean()),
            "mean_abs_error": float((w.detach().double() - w_hat.double()).abs().mean()),
        }
    return out


def sensitivity_table(
    model: nn.Module,
    bits: int = 4,
    granularity: Granularity = Granularity.PER_CHANNEL,
    tokens: torch.Tensor | None = None,
    quantize: ModelQuantizer = quantized_model,
    names: Iterable[str] | None = None,
) -> list[dict]:
    """One 2-D weight at a time quantized (the rest float32), most harmful first.

    Rows ``{"name", "loss", "penalty"}`` with ``penalty = loss - float32 loss``,
    sorted by penalty descending (ties by name). ``quantize`` builds each
    copy (default :func:`quantized_model`); ``names`` chooses the weights
    tried (default every 2-D weight).
    """
    _check_bits(bits)
    _check_granularity(granularity)
    _check_quantize(quantize)
    chosen = _check_names(model, names)
    base = _val_loss(model, tokens)
    rows = []
    for name in chosen:
        loss = _val_loss(_apply(quantize, model, bits, granularity, [name]), tokens)
        rows.append({"name": name, "loss": loss, "penalty": loss - base})
    rows.sort(key=lambda r: (-r["penalty"], r["name"]))
    return rows


def compounding(sensitivity: list[dict], joint_penalty: float) -> dict[str, float]:
    """Q8: the one-at-a-time penalties summed against all-at-once.

    ``{"sum_of_penalties", "all_at_once", "excess"}`` with
    ``excess = all_at_once - sum_of_penalties`` (> 0: the errors compound).
    """
    if isinstance(sensitivity, (str, dict)) or not isinstance(sensitivity, Iterable):
        raise ValueError(f"sensitivity must be a list of rows with a 'penalty', got "
                         f"{type(sensitivity).__name__}")
    penalties = []
    for r in sensitivity:
        if not isinstance(r, dict) or "penalty" not in r:
            raise ValueError(f"sensitivity: every row must be a dict with a 'penalty', got {r!r}")
        penalties.append(r["penalty"])
    for name, v in [*(("sensitivity", p) for p in penalties), ("joint_penalty", joint_penalty)]:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"{name}: a penalty must be a finite number, got {v!r}")
    if not penalties:
        raise ValueError("sensitivity must hold at least one row")
    total = float(sum(penalties))
    return {"sum_of_penalties": total, "all_at_once": float(joint_penalty),
            "excess": float(joint_penalty) - total}


#: Q9's sampling setup: prompt, characters sampled, temperature, seed.
DIVERGENCE_PROMPT = "\n"
DIVERGENCE_LENGTH = 200
DIVERGENCE_TEMPERATURE = 1.0
DIVERGENCE_SEED = 0


def divergence(
    model: nn.Module,
    bits: int = 8,
    granularity: Granularity = Granularity.PER_TENSOR,
    prompt: str = DIVERGENCE_PROMPT,
    length: int = DIVERGENCE_LENGTH,
    temperature: float = DIVERGENCE_TEMPERATURE,
    seed: int = DIVERGENCE_SEED,
    quantize: ModelQuantizer = quantized_model,
) -> dict:
    """Q9: texts sampled from the float32 and the quantized model, same seed.

    Both use :func:`aftertrain.decoding.generate` with a fresh
    ``torch.Generator().manual_seed(seed)``. ``position`` is the 1-based index
    of the first sampled character where they differ (``None`` if the
    ``length`` characters are identical).
    """
    from aftertrain.decoding import generate
    from aftertrain.text import decode, encode

    _check_model(model)
    _check_bits(bits)
    _check_granularity(granularity)
    _check_quantize(quantize)
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise ValueError(f"length must be an int >= 1, got {length!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an int in [0, 2**64), got {seed!r}")
    p = encode(prompt, "prompt")
    texts = []
    for m in (model, _apply(quantize, model, bits, granularity, None)):
        out = generate(m, p, length, temperature, torch.Generator().manual_seed(seed))
        texts.append(decode(out[len(p):]))
    position = next((i + 1 for i, (a, b) in enumerate(zip(*texts, strict=False)) if a != b), None)
    return {"position": position, "float32": texts[0], "quantized": texts[1]}


def _median(x: torch.Tensor) -> float:
    # The midpoint of the two middle values for an even count (numpy's median).
    return float(torch.quantile(x.double(), 0.5))


def _max_over_median(x: torch.Tensor, argument: str, what: str) -> float:
    median = _median(x)
    if not median > 0:
        raise ValueError(f"{argument}: {what} has median 0 (at least half its channels are all "
                         f"zero, e.g. after heavy pruning), so max / median is undefined")
    return float(x.max()) / median


def weight_range_ratios(model: nn.Module) -> dict:
    """Q10: per 2-D weight, max / median of its rows' ranges ``max|w|``.

    ``{"matrices": {name: ratio}, "worst": max ratio, "median": median ratio}``.
    """
    _check_model(model)
    ratios = {}
    for name, p in model.named_parameters():
        if p.dim() == 2:
            if not bool(torch.isfinite(p).all()):
                raise ValueError(f"model: {name} must be finite (no NaN or Inf)")
            r = p.detach().abs().amax(dim=1)
            ratios[name] = _max_over_median(r, "model", f"{name}'s row ranges max|w|")
    if not ratios:
        raise ValueError("model must have at least one 2-D weight")
    values = torch.tensor(list(ratios.values()))
    return {"matrices": ratios, "worst": float(values.max()), "median": _median(values)}


#: Q10's activation sites: module whose *input* is recorded.
ACTIVATION_SITES = {
    "block0_ffn_input": "blocks.0.f1",
    "block2_ffn_input": "blocks.2.f1",
    "final_residual": "ln",
}


@torch.no_grad()
def activation_channel_ratios(model: nn.Module, tokens: torch.Tensor | None = None) -> dict:
    """Q10: per site, max over channels / median over channels of ``max|x|``.

    ``x`` is the input of the site's module (``ACTIVATION_SITES``: block 0's
    and block 2's FFN input after LayerNorm, the residual stream entering the
    final LayerNorm), over every position of the validation split cut into
    windows of the context length as :func:`aftertrain.evaluation.val_loss` does.
    Returns ``{site: {"ratio", "max"}}``.
    """
    from aftertrain.text import load_corpus

    _check_model(model)
    if tokens is None:
        tokens = load_corpus().val
    if (not isinstance(tokens, torch.Tensor) or tokens.dtype != torch.int64 or tokens.dim() != 1
            or tokens.numel() == 0):
        raise ValueError(f"tokens must be a non-empty 1-D int64 tensor, got "
                         f"{getattr(tokens, 'dtype', type(tokens).__name__)} "
                         f"{tuple(getattr(tokens, 'shape', ()))}")
    config = getattr(model, "config", None)
    if config is None or not hasattr(config, "block_size") or not hasattr(config, "vocab_size"):
        raise ValueError("model must be an aftertrain GPT (a .config with block_size and "
                         "vocab_size)")
    if int(tokens.min()) < 0 or int(tokens.max()) >= config.vocab_size:
        raise ValueError(f"tokens must be ids in [0, {config.vocab_size - 1}], got "
                         f"[{int(tokens.min())}, {int(tokens.max())}]")
    modules = dict(model.named_modules())
    missing = [m for m in ACTIVATION_SITES.values() if m not in modules]
    if missing:
        raise ValueError(f"model has no module {missing} (the activation sites "
                         f"{ACTIVATION_SITES})")
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
    return {site: {"ratio": _max_over_median(v, "model", f"the input of {site}'s channels"),
                   "max": float(v.max())}
            for site, v in peaks.items()}
