"""Symmetric uniform weight quantization, exactly as part 3 writes it (Q1).

The rule, for ``bits`` in 2..8::

    qmax  = 2**(bits-1) - 1
    scale = max|w| / qmax                      # per tensor, or per row
    q     = round(w / scale).clamp(-qmax-1, qmax)
    w_hat = q * scale

``round`` is ``torch.round`` (half to even). "Per-channel" means one scale per
row of the stored 2-D weight: a Linear's output feature, an Embedding's token
or position. Because ``|w| <= max|w|`` the codes of a tensor lie in
``[-qmax, qmax]``; the extra negative code ``-qmax-1`` of the clamp is never
used, so 2 bits is ternary.

Zero guard. A tensor or row whose largest magnitude is 0 would get scale 0 and
``0 / 0 = NaN``. The scale is therefore floored at the smallest normal
float32, ``SCALE_FLOOR = torch.finfo(torch.float32).tiny`` (1.18e-38): an
all-zero row quantizes to codes 0 and ``w_hat`` 0, and a row whose largest
magnitude is below ``qmax * SCALE_FLOOR`` (only subnormal-sized weights) keeps
a normal scale instead of one that underflows to 0. Every other row gets the
article's scale unchanged.

Two forms: :class:`QuantizedTensor` really stores the integers (packed,
``bits`` bits per element, so int8 is one byte and 4 bits two to a byte) plus
float32 scales, with exact byte accounting; :func:`fake_quantize` returns the
dequantized float32 tensor (what the model multiplies with).

PyTorch's ``torch.fake_quantize_per_{tensor,channel}_affine`` compute
``round(w * (1/scale))`` on CPU: a float32 reciprocal, then a product. The
article divides. The two agree except where ``w / scale`` lands exactly on a
half-integer in float32 and the product lands one ulp off it (or the reverse);
there the codes differ by one step. On the reference model's weights they
agree bit for bit at every width (tested); :func:`fake_quantize` follows the
article.
"""

from __future__ import annotations

import copy
import enum
import math
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
import torch
import torch.nn as nn

MIN_BITS = 2
MAX_BITS = 8
#: Smallest scale used (see the zero guard in the module docstring).
SCALE_FLOOR = torch.finfo(torch.float32).tiny
FLOAT32_BYTES = 4
FLOAT32_MAX = torch.finfo(torch.float32).max


class Granularity(enum.Enum):
    """How many scales a 2-D weight gets: one, or one per row."""

    PER_TENSOR = "per-tensor"
    PER_CHANNEL = "per-channel"


# --- validation -----------------------------------------------------------


def _check_bits(bits: int) -> None:
    if isinstance(bits, bool) or not isinstance(bits, int) or not MIN_BITS <= bits <= MAX_BITS:
        raise ValueError(f"bits must be an int in [{MIN_BITS}, {MAX_BITS}], got {bits!r}")


def _check_granularity(granularity: Granularity) -> None:
    if not isinstance(granularity, Granularity):
        raise ValueError(
            f"granularity must be one of {[g.name for g in Granularity]}, got {granularity!r}"
        )


def _check_weight(w: torch.Tensor, granularity: Granularity, name: str = "w") -> None:
    if not isinstance(w, torch.Tensor) or not w.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got "
                         f"{getattr(w, 'dtype', type(w).__name__)}")
    if w.numel() == 0:
        raise ValueError(f"{name} must have at least one element")
    if not bool(torch.isfinite(w).all()):
        raise ValueError(f"{name} must be finite (no NaN or Inf)")
    if granularity is Granularity.PER_CHANNEL and w.dim() != 2:
        raise ValueError(f"{name} must be 2-D for per-channel quantization, got shape "
                         f"{tuple(w.shape)}")


def qmax_for(bits: int) -> int:
    """Largest code, ``2**(bits-1) - 1`` (127 at 8 bits, 1 at 2 bits)."""
    _check_bits(bits)
    return 2 ** (bits - 1) - 1


# --- the rule ---------------------------------------------------------------


def scales(w: torch.Tensor, bits: int, granularity: Granularity) -> torch.Tensor:
    """float32 scales ``max|w| / qmax``, floored at ``SCALE_FLOOR``.

    Shape ``()`` per-tensor, ``(rows, 1)`` per-channel, so ``w / scales``
    broadcasts. Per-channel's largest scale equals the per-tensor scale (the
    same float32 operation on the same maximum).
    """
    _check_bits(bits)
    _check_granularity(granularity)
    _check_weight(w, granularity)
    qmax = qmax_for(bits)
    a = w.detach().to(torch.float32).abs()
    if granularity is Granularity.PER_TENSOR:
        m = a.amax()
    else:
        m = a.amax(dim=1, keepdim=True)
    return (m / qmax).clamp_min(SCALE_FLOOR)


def quantize_codes(
    w: torch.Tensor,
    bits: int,
    granularity: Granularity,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Integer codes (int8, in ``[-qmax, qmax]``) and float32 scales of ``w``.

    ``q = round(w / scale).clamp(-qmax-1, qmax)`` with ``torch.round``
    (half to even), exactly the article's line.
    """
    s = scales(w, bits, granularity)
    qmax = qmax_for(bits)
    q = torch.round(w.detach().to(torch.float32) / s).clamp(-qmax - 1, qmax)
    return q.to(torch.int8), s


def fake_quantize(w: torch.Tensor, bits: int, granularity: Granularity) -> torch.Tensor:
    """Quantize then dequantize: ``round(w / scale).clamp(-qmax-1, qmax) * scale``.

    float32 out, same shape. Every element's error is at most ``scale / 2``
    (its row's scale per-channel), up to float32 rounding of the product.

    Note: at 4 bits (qmax 7) ``w = [[0.7, -0.35, 0.1]]`` has scale 0.1 and
    codes ``[7, -4, 1]`` (-3.5 rounds half to even), so ``w_hat`` is
    ``[0.7, -0.4, 0.1]``.
    """
    q, s = quantize_codes(w, bits, granularity)
    return dequantize(q, s)


def dequantize(codes: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """``codes * scales`` in float32, saturated at +-float32 max.

    The saturation only acts within an ulp of float32's largest value: there
    ``fl(max|w| / qmax) * qmax`` can round past the largest float and would
    give Inf (PyTorch's fake quantization does give Inf there).
    """
    return (codes.to(torch.float32) * scales).clamp(-FLOAT32_MAX, FLOAT32_MAX)


# --- the integer form -------------------------------------------------------


def pack_codes(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Codes in ``[-2**(bits-1), 2**(bits-1) - 1]`` packed ``bits`` bits each.

    Each code is stored as its ``bits``-bit two's complement, elements in
    row-major order, most significant bit first, the last byte zero-padded:
    ``ceil(numel * bits / 8)`` bytes (uint8). 4-bit codes go two to a byte.
    """
    _check_bits(bits)
    if (not isinstance(codes, torch.Tensor) or codes.dtype.is_floating_point
            or codes.dtype.is_complex):
        raise ValueError(f"codes must be an integer tensor, got {getattr(codes, 'dtype', codes)}")
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    if codes.numel() and (int(codes.min()) < lo or int(codes.max()) > hi):
        raise ValueError(f"codes must lie in [{lo}, {hi}] for {bits} bits")
    u = (codes.reshape(-1).to(torch.int64) & (2**bits - 1)).numpy().astype(np.uint8)
    bitplanes = np.unpackbits(u[:, None], axis=1)[:, 8 - bits:]  # (n, bits), MSB first
    return torch.from_numpy(np.packbits(bitplanes.reshape(-1)))


def unpack_codes(packed: torch.Tensor, bits: int, shape: tuple[int, ...]) -> torch.Tensor:
    """Inverse of :func:`pack_codes`: int8 codes of the given shape."""
    _check_bits(bits)
    n = math.prod(shape)
    if not isinstance(packed, torch.Tensor) or packed.dtype != torch.uint8:
        raise ValueError("packed must be a uint8 tensor")
    if packed.numel() != math.ceil(n * bits / 8):
        raise ValueError(f"packed must hold ceil({n} * {bits} / 8) bytes, got {packed.numel()}")
    planes = np.unpackbits(packed.numpy())[: n * bits].reshape(n, bits)
    u = np.packbits(np.concatenate([np.zeros((n, 8 - bits), np.uint8), planes], axis=1), axis=1)
    u = torch.from_numpy(u.reshape(-1).astype(np.int64))
    signed = torch.where(u >= 2 ** (bits - 1), u - 2**bits, u)
    return signed.to(torch.int8).reshape(shape)


@dataclass(frozen=True)
class QuantizedTensor:
    """Integers packed ``bits`` bits each plus float32 scales.

    ``nbytes = ceil(numel * bits / 8) + 4 * number_of_scales`` exactly.
    """

    packed: torch.Tensor  # uint8, ceil(numel * bits / 8)
    scales: torch.Tensor  # float32, shape () or (rows, 1)
    bits: int
    shape: tuple[int, ...]
    granularity: Granularity

    @classmethod
    def from_float(cls, w: torch.Tensor, bits: int, granularity: Granularity) -> "QuantizedTensor":
        """Quantize ``w`` with the article's rule and pack the codes."""
        q, s = quantize_codes(w, bits, granularity)
        return cls(pack_codes(q, bits), s, bits, tuple(w.shape), granularity)

    def codes(self) -> torch.Tensor:
        """The int8 codes, unpacked."""
        return unpack_codes(self.packed, self.bits, self.shape)

    def dequantize(self) -> torch.Tensor:
        """``codes * scales`` in float32: equal bit for bit to :func:`fake_quantize`."""
        return dequantize(self.codes(), self.scales)

    @property
    def nbytes(self) -> int:
        """Bytes actually stored: packed codes plus 4 per scale."""
        return self.packed.numel() + FLOAT32_BYTES * self.scales.numel()


# --- whole models -----------------------------------------------------------


def weight_names(model: nn.Module) -> list[str]:
    """Names of the model's 2-D parameters, in registration order."""
    return [n for n, p in model.named_parameters() if p.dim() == 2]


def _check_names(model: nn.Module, names: Iterable[str] | None) -> list[str]:
    all2d = weight_names(model)
    if names is None:
        return all2d
    if isinstance(names, str):
        raise ValueError(f"names must be an iterable of parameter names, not the string {names!r}")
    names = list(names)
    unknown = [n for n in names if n not in all2d]
    if unknown:
        raise ValueError(f"names holds {unknown}, not 2-D parameters of the model; "
                         f"valid names: {all2d}")
    return names


def quantized_model(
    model: nn.Module,
    bits: int,
    granularity: Granularity = Granularity.PER_CHANNEL,
    names: Iterable[str] | None = None,
) -> nn.Module:
    """A deep copy of ``model`` whose named 2-D weights are fake-quantized.

    ``names`` defaults to every 2-D parameter (embeddings included); 1-D
    parameters (biases, LayerNorms) stay float32 and untouched. The original
    model is not modified.
    """
    _check_bits(bits)
    _check_granularity(granularity)
    chosen = _check_names(model, names)
    copied = copy.deepcopy(model)
    params = dict(copied.named_parameters())
    with torch.no_grad():
        for name in chosen:
            params[name].copy_(fake_quantize(params[name], bits, granularity))
    return copied


def storage_bytes(
    model: nn.Module,
    bits: int = 8,
    granularity: Granularity = Granularity.PER_TENSOR,
    names: Iterable[str] | None = None,
) -> dict[str, int]:
    """Exact storage of ``model`` before and after quantizing ``names``.

    Counted from real :class:`QuantizedTensor` objects, not a formula:

    - ``weights`` / ``parameters``: element counts (2-D weights; all).
    - ``weights_fp32_bytes``: 4 per 2-D weight element.
    - ``weight_code_bytes``: packed codes of the quantized weights
      (``ceil(numel * bits / 8)`` each) plus 4 per weight left in float32.
    - ``scale_bytes``: 4 per float32 scale (1 per tensor per-tensor, 1 per
      row per-channel).
    - ``parameters_fp32_bytes``: 4 per parameter.
    - ``parameters_quantized_bytes``: codes + scales + 4 per element of every
      parameter left in float32 (the 1-D ones always).
    """
    _check_bits(bits)
    _check_granularity(granularity)
    chosen = set(_check_names(model, names))
    weights = parameters = code_bytes = scale_bytes = float_bytes = 0
    for name, p in model.named_parameters():
        parameters += p.numel()
        if p.dim() == 2:
            weights += p.numel()
        if name in chosen:
            qt = QuantizedTensor.from_float(p, bits, granularity)
            code_bytes += qt.packed.numel()
            scale_bytes += FLOAT32_BYTES * qt.scales.numel()
        else:
            float_bytes += FLOAT32_BYTES * p.numel()
    float_weight_bytes = FLOAT32_BYTES * sum(
        p.numel() for n, p in model.named_parameters() if p.dim() == 2 and n not in chosen
    )
    return {
        "weights": weights,
        "parameters": parameters,
        "weights_fp32_bytes": FLOAT32_BYTES * weights,
        "weight_code_bytes": code_bytes + float_weight_bytes,
        "scale_bytes": scale_bytes,
        "parameters_fp32_bytes": FLOAT32_BYTES * parameters,
        "parameters_quantized_bytes": code_bytes + scale_bytes + float_bytes,
    }


# --- experiments on a model (the article's tables) -----------------------------

#: Builds a quantized copy: ``(model, bits, granularity, names) -> model``.
#: The experiments take one so a test can pass a deliberately broken variant.
ModelQuantizer = Callable[[nn.Module, int, Granularity, "Iterable[str] | None"], nn.Module]

#: Widths of the article's bits table (Q4).
ARTICLE_BITS = (8, 6, 4, 3, 2)


def _val_loss(model: nn.Module, tokens: torch.Tensor | None) -> float:
    from aftertrain.evaluation import val_loss

    return val_loss(model, tokens)


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
    rows = []
    for b in bits:
        _check_bits(b)
        rows.append({
            "bits": b,
            "per_tensor": _val_loss(quantize(model, b, Granularity.PER_TENSOR, None), tokens),
            "per_channel": _val_loss(quantize(model, b, Granularity.PER_CHANNEL, None), tokens),
        })
    return rows


def reconstruction_figures(
    w: torch.Tensor,
    bits: int = 2,
) -> dict[str, dict[str, float]]:
    """Per granularity: the fraction of elements quantized to 0 and the mean
    absolute error ``mean|w - w_hat|`` (Q6, on ``blocks.0.f1.weight``)."""
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
    chosen = _check_names(model, names)
    base = _val_loss(model, tokens)
    rows = []
    for name in chosen:
        loss = _val_loss(quantize(model, bits, granularity, [name]), tokens)
        rows.append({"name": name, "loss": loss, "penalty": loss - base})
    rows.sort(key=lambda r: (-r["penalty"], r["name"]))
    return rows


def compounding(sensitivity: list[dict], joint_penalty: float) -> dict[str, float]:
    """Q8: the one-at-a-time penalties summed against all-at-once.

    ``{"sum_of_penalties", "all_at_once", "excess"}`` with
    ``excess = all_at_once - sum_of_penalties`` (> 0: the errors compound).
    """
    total = float(sum(r["penalty"] for r in sensitivity))
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

    Both use :func:`aftertrain.model.generate` with a fresh
    ``torch.Generator().manual_seed(seed)``. ``position`` is the 1-based index
    of the first sampled character where they differ (``None`` if the
    ``length`` characters are identical).
    """
    from aftertrain.decoding import generate
    from aftertrain.text import decode, encode

    if not isinstance(length, int) or length < 1:
        raise ValueError(f"length must be an int >= 1, got {length!r}")
    p = encode(prompt)
    texts = []
    for m in (model, quantize(model, bits, granularity, None)):
        out = generate(m, p, length, temperature, torch.Generator().manual_seed(seed))
        texts.append(decode(out[len(p):]))
    position = next((i + 1 for i, (a, b) in enumerate(zip(*texts)) if a != b), None)
    return {"position": position, "float32": texts[0], "quantized": texts[1]}


def _median(x: torch.Tensor) -> float:
    # The midpoint of the two middle values for an even count (numpy's median).
    return float(torch.quantile(x.double(), 0.5))


def weight_range_ratios(model: nn.Module) -> dict:
    """Q10: per 2-D weight, max / median of its rows' ranges ``max|w|``.

    ``{"matrices": {name: ratio}, "worst": max ratio, "median": median ratio}``.
    """
    ratios = {}
    for name, p in model.named_parameters():
        if p.dim() == 2:
            r = p.detach().abs().amax(dim=1)
            ratios[name] = float(r.max()) / _median(r)
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
    windows of the context length as :func:`aftertrain.model.val_loss` does.
    Returns ``{site: {"ratio", "max"}}``.
    """
    from aftertrain.text import load_corpus

    if tokens is None:
        tokens = load_corpus().val
    modules = dict(model.named_modules())
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
    return {site: {"ratio": float(v.max()) / _median(v), "max": float(v.max())}
            for site, v in peaks.items()}
