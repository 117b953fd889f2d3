"""Part 3's quantization experiments on a model: the tables behind Q4-Q10
(Q10's outlier figures in :mod:`aftertrain.experiments.quant_outliers`).

Each applies :mod:`aftertrain.quant` to a model and returns its table as
frozen rows (:class:`aftertrain.claims.tables.TableRow`; the tables' registry is
:data:`aftertrain.experiments.tables.SPECS`); the tests assert on them and
record them, the report renders them. The loss-based ones take
``quantize=`` (default :func:`aftertrain.quant.api.quantized_model`) so a
test can pass a deliberately broken quantizer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from torch import nn

from aftertrain.claims import tables as TB
from aftertrain.claims.tables import Shape, TableRow, table
from aftertrain.core.validation import check_int, check_seed, is_real
from aftertrain.core.weights import weight_matrices

# Q10's figures, importable from here as before (``experiments.quant.Outliers``).
from aftertrain.experiments.quant_outliers import (  # noqa: F401 (re-exported)
    ActivationPeak,
    Outliers,
    WeightRanges,
    activation_channel_ratios,
    activation_sites,
    weight_range_ratios,
)
from aftertrain.quant.api import quantized_model
from aftertrain.quant.primitives import (
    Granularity,
    check_bits,
    check_granularity,
    check_weight,
    dequantize,
    quantize_codes,
)

#: Builds a quantized copy: ``(model, bits, granularity, names) -> model``.
#: The experiments take one so a test can pass a deliberately broken variant.
ModelQuantizer = Callable[[nn.Module, int, Granularity, "Iterable[str] | None"], nn.Module]

#: Widths of the article's bits table (Q4).
ARTICLE_BITS = (8, 6, 4, 3, 2)


@dataclass(frozen=True)
class BitsRow(TableRow):
    """Q4: validation loss (nats) with every 2-D weight quantized to ``bits``."""

    bits: int
    per_tensor: float
    per_channel: float

    def loss(self, granularity: Granularity) -> float:
        """The loss at ``granularity``."""
        return self.per_tensor if granularity is Granularity.PER_TENSOR else self.per_channel


@table(TB.Q4, ("Q2", "Q4", "Q5", "Q6"), Shape.ONE)
@dataclass(frozen=True)
class BitsTable(TableRow):
    """Q4's record: the float32 loss and the rows of :func:`bits_table`."""

    float32: float
    rows: tuple[BitsRow, ...]


@table(TB.Q3, ("Q3",), Shape.BY_KEY)
@dataclass(frozen=True)
class StorageRow(TableRow):
    """Q3: the byte counts of :func:`aftertrain.quant.storage_bytes`."""

    weights: int
    parameters: int
    weights_fp32_bytes: int
    weight_code_bytes: int
    scale_bytes: int
    parameters_fp32_bytes: int
    parameters_quantized_bytes: int


def storage_key(granularity: Granularity, bits: int) -> str:
    """The key of one :class:`StorageRow` in Q3's table: ``per-tensor_8``."""
    if not isinstance(granularity, Granularity):
        raise ValueError(f"granularity must be a Granularity, got {granularity!r}")
    return f"{granularity.value}_{bits}"


@table(TB.Q6, ("Q6",), Shape.BY_KEY)
@dataclass(frozen=True)
class Reconstruction(TableRow):
    """Q6: fraction of elements quantized to 0, and ``mean|w - w_hat|``."""

    zero_fraction: float
    mean_abs_error: float


@table(TB.Q7, ("Q7",))
@dataclass(frozen=True)
class SensitivityRow(TableRow):
    """Q7: one matrix quantized alone; ``penalty = loss - float32 loss``."""

    name: str
    loss: float
    penalty: float


@table(TB.Q8, ("Q8",), Shape.ONE)
@dataclass(frozen=True)
class Compounding(TableRow):
    """Q8: ``excess = all_at_once - sum_of_penalties`` (> 0: the errors compound)."""

    sum_of_penalties: float
    all_at_once: float
    excess: float


@table(TB.Q9, ("Q9",), Shape.ONE)
@dataclass(frozen=True)
class Divergence(TableRow):
    """Q9: the 1-based position where the texts part (None: they never do)."""

    position: int | None
    float32: str
    quantized: str


#: Scores a model: ``model -> loss`` (e.g. :class:`aftertrain.lm.evaluation.LossMemo`).
Evaluate = Callable[[nn.Module], float]


def _val_loss(model: nn.Module, tokens: torch.Tensor | None) -> float:
    from aftertrain.lm.evaluation import val_loss

    return val_loss(model, tokens)


def _scorer(tokens: torch.Tensor | None, evaluate: Evaluate | None) -> Evaluate:
    """``evaluate`` checked, or val_loss on ``tokens``; the two are exclusive."""
    if evaluate is None:
        return lambda m: _val_loss(m, tokens)
    if not callable(evaluate):
        raise ValueError(f"evaluate must be a callable model -> loss or None, got {evaluate!r}")
    if tokens is not None:
        raise ValueError("evaluate and tokens: give one of them (evaluate scores on its own tokens)")

    def checked(m: nn.Module) -> float:
        loss = evaluate(m)
        if not is_real(loss) or not math.isfinite(loss):
            raise ValueError(f"evaluate must return a finite loss, got {loss!r}")
        return float(loss)

    return checked


def _check_quantize(quantize: ModelQuantizer) -> None:
    if not callable(quantize):
        raise ValueError(
            f"quantize must be a callable (model, bits, granularity, names) -> model, got {quantize!r}"
        )


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
        check_bits(b)
    return bits


def bits_table(
    model: nn.Module,
    bits: Iterable[int] = ARTICLE_BITS,
    tokens: torch.Tensor | None = None,
    quantize: ModelQuantizer = quantized_model,
    evaluate: Evaluate | None = None,
) -> list[BitsRow]:
    """Validation loss with every 2-D weight quantized, per width and granularity.

    One :class:`BitsRow` per width (mean cross-entropy in nats on ``tokens``, default the validation split).
    ``quantize`` builds each quantized copy (default :func:`quantized_model`);
    ``evaluate`` scores it instead of ``val_loss`` on ``tokens`` (a
    :class:`aftertrain.lm.evaluation.LossMemo` shares the scores of equal copies).
    """
    weight_matrices(model)
    _check_quantize(quantize)
    score = _scorer(tokens, evaluate)
    rows = []
    for b in _check_bits_list(bits):
        rows.append(
            BitsRow(
                b,
                *(
                    score(_apply(quantize, model, b, g, None))
                    for g in (Granularity.PER_TENSOR, Granularity.PER_CHANNEL)
                ),
            )
        )
    return rows


def reconstruction_figures(
    w: torch.Tensor,
    bits: int = 2,
) -> dict[str, Reconstruction]:
    """Per granularity (by its value): the fraction of elements quantized to 0 and the mean
    absolute error ``mean|w - w_hat|`` (Q6, on the first block's feed-forward
    input: ``blocks.0.f1.weight`` in our GPT)."""
    check_bits(bits)
    check_weight(w, Granularity.PER_CHANNEL)
    out = {}
    for g in Granularity:
        q, s = quantize_codes(w, bits, g)
        w_hat = dequantize(q, s)
        out[g.value] = Reconstruction(
            zero_fraction=float((q == 0).double().mean()),
            mean_abs_error=float((w.detach().double() - w_hat.double()).abs().mean()),
        )
    return out


def sensitivity_table(
    model: nn.Module,
    bits: int = 4,
    granularity: Granularity = Granularity.PER_CHANNEL,
    tokens: torch.Tensor | None = None,
    quantize: ModelQuantizer = quantized_model,
    names: Iterable[str] | None = None,
    evaluate: Evaluate | None = None,
) -> list[SensitivityRow]:
    """One 2-D weight at a time quantized (the rest float32), most harmful first.

    Rows :class:`SensitivityRow` with ``penalty = loss - float32 loss``,
    sorted by penalty descending (ties by name). ``quantize`` builds each
    copy (default :func:`quantized_model`); ``names`` chooses the weights
    tried (default every 2-D weight); ``evaluate`` scores the models instead
    of ``val_loss`` on ``tokens``, as in :func:`bits_table`.
    """
    check_bits(bits)
    check_granularity(granularity)
    _check_quantize(quantize)
    chosen = weight_matrices(model, names)
    score = _scorer(tokens, evaluate)
    base = score(model)
    rows = []
    for name in chosen:
        loss = score(_apply(quantize, model, bits, granularity, [name]))
        rows.append(SensitivityRow(name, loss, loss - base))
    rows.sort(key=lambda r: (-r.penalty, r.name))
    return rows


def compounding(sensitivity: list[SensitivityRow], joint_penalty: float) -> Compounding:
    """Q8: the one-at-a-time penalties summed against all-at-once, with
    ``excess = all_at_once - sum_of_penalties`` (> 0: the errors compound).
    """
    if isinstance(sensitivity, (str, dict)) or not isinstance(sensitivity, Iterable):
        raise ValueError(
            f"sensitivity must be a list of SensitivityRow (with a penalty), got {type(sensitivity).__name__}"
        )
    penalties = []
    for r in sensitivity:
        if not isinstance(r, SensitivityRow):
            raise ValueError(f"sensitivity: every row must be a SensitivityRow (with a penalty), got {r!r}")
        penalties.append(r.penalty)
    for name, v in [*(("sensitivity", p) for p in penalties), ("joint_penalty", joint_penalty)]:
        if not is_real(v) or not math.isfinite(v):
            raise ValueError(f"{name}: a penalty must be a finite number, got {v!r}")
    if not penalties:
        raise ValueError("sensitivity must hold at least one row")
    total = float(sum(penalties))
    return Compounding(total, float(joint_penalty), float(joint_penalty) - total)


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
) -> Divergence:
    """Q9: texts sampled from the float32 and the quantized model, same seed.

    Both use :func:`aftertrain.lm.decoding.generate` with a fresh
    ``torch.Generator().manual_seed(seed)``. ``position`` is the 1-based index
    of the first sampled character where they differ (``None`` if the
    ``length`` characters are identical).
    """
    from aftertrain.lm import hf
    from aftertrain.lm.decoding import generate

    weight_matrices(model)
    check_bits(bits)
    check_granularity(granularity)
    _check_quantize(quantize)
    check_int("length", length, least=1)
    check_seed(seed)
    p = hf.encode_text(model, prompt, "prompt")
    outs = []
    for m in (model, _apply(quantize, model, bits, granularity, None)):
        outs.append(
            generate(m, p, length, temperature, torch.Generator().manual_seed(seed))[len(p) :].tolist()
        )
    position = next((i + 1 for i, (a, b) in enumerate(zip(*outs, strict=False)) if a != b), None)
    return Divergence(position, hf.decode_ids(model, outs[0]), hf.decode_ids(model, outs[1]))
