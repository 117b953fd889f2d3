"""Part 8's pruning experiments on a model: the tables behind P1-P6 and X5.

:class:`LossCurve` evaluates pruned copies (memoized); the table functions
return frozen rows (:class:`aftertrain.claims.tables.TableRow`; the registry is
:data:`aftertrain.experiments.tables.SPECS`) that the tests assert on and
record and the report renders.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from aftertrain.claims import tables as TB
from aftertrain.claims.tables import Shape, TableRow, table
from aftertrain.core.tolerances import MATCHING_RESOLUTION
from aftertrain.core.validation import check_real, is_real
from aftertrain.lm.evaluation import val_loss
from aftertrain.prune.formats import Format, bytes_per_element
from aftertrain.prune.masks import (
    MagnitudeRanking,
    Method,
    apply_masks,
    check_sparsity,
    global_magnitude_masks,
    prunable_weights,
    pruned_model,
)

#: Seeds averaged for random pruning. The loss of a random mask depends on
#: which large weights it happens to hit; five draws give the mean and show the
#: spread (the standard deviation is reported next to the mean) at five
#: evaluations per sparsity, which the test budget allows.
RANDOM_SEEDS: tuple[int, ...] = (0, 1, 2, 3, 4)

#: The loss of an untrained model (uniform over 100 characters), ln(100) =
#: 4.6052: the "untrained" line of the article's figure.
UNTRAINED_LOSS: float = math.log(100)

#: The article's sparsities for the loss table (P1) and for random pruning (P2).
TABLE_SPARSITIES: tuple[float, ...] = (0.1, 0.3, 0.5, 0.7, 0.9)
RANDOM_SPARSITIES: tuple[float, ...] = (0.01, 0.02, 0.05, 0.1, 0.2)


@table(TB.P1, ("P1", "P3"))
@dataclass(frozen=True)
class LossRow(TableRow):
    """P1: validation loss at ``sparsity`` by global and per-layer magnitude,
    and the mean over seeds of random pruning."""

    sparsity: float
    global_: float = field(metadata={"key": "global"})
    layer: float
    random: float

    def loss(self, method: Method) -> float:
        """The loss of ``method`` (GLOBAL, LAYER or RANDOM)."""
        return {Method.GLOBAL: self.global_, Method.LAYER: self.layer, Method.RANDOM: self.random}[method]


@table(TB.P2, ("P2",))
@dataclass(frozen=True)
class RandomRow(TableRow):
    """P2: random-pruning loss at ``sparsity`` over the seeds: mean, sample std, min, max."""

    sparsity: float
    mean: float
    std: float
    min: float
    max: float


@table(TB.P4, ("P4",))
@dataclass(frozen=True)
class MatchingRow(TableRow):
    """P4: the global-magnitude sparsity whose loss reaches ``bits``-bit
    per-channel quantization's ``loss``."""

    bits: int
    loss: float
    sparsity: float


@table(TB.P5, ("P5",))
@dataclass(frozen=True)
class BytesRow(TableRow):
    """P5: bytes per element of the weights pruned to ``sparsity``, per format."""

    sparsity: float
    dense: float
    coo: float
    bitmask: float
    csr: float


@table(TB.P6, ("P6",))
@dataclass(frozen=True)
class CompressionRow(TableRow):
    """P6: compression (4 bytes / bytes per element) and loss of one storage."""

    name: str
    compression: float
    loss: float


@table(TB.X5, ("P8", "X5"), Shape.ONE)
@dataclass(frozen=True)
class TwoFour(TableRow):
    """X5: losses of 2:4 and unstructured 50% pruning; bytes per element of
    the 2:4 weights in 2:4, bitmask and COO storage."""

    two_four: float
    global_50: float
    layer_50: float
    bytes_two_four: float
    bytes_bitmask: float
    bytes_coo: float


def _check_sparsities(sparsities: Sequence[float], name: str = "sparsities") -> list[float]:
    if isinstance(sparsities, (str, bytes)) or not isinstance(sparsities, Sequence) or not sparsities:
        raise ValueError(f"{name} must be a non-empty sequence of numbers in [0, 1], got {sparsities!r}")
    for s in sparsities:
        try:
            check_sparsity(s)
        except ValueError:
            raise ValueError(f"{name} must hold numbers in [0, 1], got {s!r}") from None
    return list(sparsities)


def _check_seeds(seeds: Sequence[int]) -> list[int]:
    if (
        isinstance(seeds, (str, bytes))
        or not isinstance(seeds, Sequence)
        or not seeds
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds)
    ):
        raise ValueError(f"seeds must be a non-empty sequence of ints >= 0, got {seeds!r}")
    return list(seeds)


def _check_curve(curve: LossCurve) -> None:
    if not isinstance(curve, LossCurve):
        raise ValueError(f"curve must be a LossCurve, got {type(curve).__name__}")


class LossCurve:
    """Validation loss of ``model`` pruned by a method at a sparsity, memoized
    per (method, sparsity, seed) so each configuration is evaluated once."""

    def __init__(self, model: nn.Module, evaluate: Callable[[nn.Module], float] = val_loss) -> None:
        if not isinstance(model, nn.Module):
            raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if not callable(evaluate):
            raise ValueError(f"evaluate must be a callable model -> loss, got {evaluate!r}")
        self.model = model
        self.evaluate = evaluate
        self._cache: dict[tuple[Method, float, int], float] = {}
        self._rankings: dict[Method, MagnitudeRanking] = {}

    def __call__(self, method: Method, sparsity: float, seed: int = 0) -> float:
        if not isinstance(method, Method):
            raise ValueError(f"method must be a Method ({[m.name for m in Method]}), got {method!r}")
        key = (method, check_sparsity(sparsity), seed if method is Method.RANDOM else 0)
        if key not in self._cache:
            if method in (Method.GLOBAL, Method.LAYER):  # rank once, mask many times
                if method not in self._rankings:
                    self._rankings[method] = MagnitudeRanking(
                        prunable_weights(self.model), per_layer=method is Method.LAYER
                    )
                pruned = apply_masks(self.model, self._rankings[method].masks(sparsity))
            else:
                pruned = pruned_model(self.model, method, sparsity, seed=seed)
            loss = self.evaluate(pruned)
            if not is_real(loss) or not math.isfinite(loss):
                raise ValueError(
                    f"evaluate must return a finite loss, got {loss!r} at {method.value} sparsity {sparsity}"
                )
            self._cache[key] = loss
        return self._cache[key]

    def random_losses(self, sparsity: float, seeds: Sequence[int] = RANDOM_SEEDS) -> list[float]:
        """Loss of random pruning at ``sparsity`` for each seed."""
        seeds = _check_seeds(seeds)
        return [self(Method.RANDOM, sparsity, s) for s in seeds]


def loss_table(
    curve: LossCurve, sparsities: Sequence[float] = TABLE_SPARSITIES, seeds: Sequence[int] = RANDOM_SEEDS
) -> list[LossRow]:
    """P1: one row per sparsity: global / per-layer magnitude loss and the mean
    random loss over ``seeds``."""
    _check_curve(curve)
    sparsities, seeds = _check_sparsities(sparsities), _check_seeds(seeds)
    return [
        LossRow(
            s, curve(Method.GLOBAL, s), curve(Method.LAYER, s), float(np.mean(curve.random_losses(s, seeds)))
        )
        for s in sparsities
    ]


def random_table(
    curve: LossCurve, sparsities: Sequence[float] = RANDOM_SPARSITIES, seeds: Sequence[int] = RANDOM_SEEDS
) -> list[RandomRow]:
    """P2: per sparsity, random-pruning loss over ``seeds``: mean, sample std,
    min, max."""
    _check_curve(curve)
    sparsities, seeds = _check_sparsities(sparsities), _check_seeds(seeds)
    rows = []
    for s in sparsities:
        losses = np.array(curve.random_losses(s, seeds))
        rows.append(
            RandomRow(
                s,
                float(losses.mean()),
                float(losses.std(ddof=1)) if len(losses) > 1 else 0.0,
                float(losses.min()),
                float(losses.max()),
            )
        )
    return rows


def first_sparsity_above(
    rows: Sequence[Mapping[str, float] | TableRow], key: str, level: float
) -> float | None:
    """The smallest ``row["sparsity"]`` whose ``row[key]`` exceeds ``level``
    (``None`` if none does); a :class:`TableRow` is read by its record's keys."""
    if not isinstance(level, (int, float)) or isinstance(level, bool) or math.isnan(level):
        raise ValueError(f"level must be a number (not NaN), got {level!r}")
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Sequence):
        raise ValueError(f"rows must be a sequence of dicts, got {type(rows).__name__}")
    if not rows:
        raise ValueError("rows must hold at least one row")
    rows = [r.to_record() if isinstance(r, TableRow) else r for r in rows]
    for r in rows:
        if not isinstance(r, Mapping) or "sparsity" not in r or key not in r:
            raise ValueError(f"rows: every row must be a dict with 'sparsity' and {key!r} (key), got {r!r}")
    above = [r["sparsity"] for r in rows if r[key] > level]
    return min(above) if above else None


def matching_sparsity(
    curve: LossCurve, target: float, *, upper: float = 0.9, resolution: float = MATCHING_RESOLUTION
) -> float:
    """P4: the global-magnitude sparsity whose loss reaches ``target``.

    Bisection on the grid of multiples of ``resolution`` in ``[0, upper]``
    (the monotone part of the curve) for the smallest grid point ``s`` with
    ``loss(s) >= target`` given ``loss(s - resolution) < target``; at most
    ``ceil(log2(upper / resolution))`` evaluations (10 for the defaults).
    Returns 0.0 when the unpruned model already reaches ``target``. Raises
    ``ValueError`` when ``target`` is not finite or is above ``loss(upper)``.
    """
    check_real("target", target, what="a finite loss")
    check_real("upper", upper, low=0, high=1, what="a sparsity")
    if not is_real(resolution) or not 0.0 < resolution <= upper:
        raise ValueError(f"resolution must be in (0, upper], got {resolution!r}")
    lo, hi = 0, round(upper / resolution)  # grid indices: loss(lo) < target <= loss(hi)
    if curve(Method.GLOBAL, 0.0) >= target:
        return 0.0
    if curve(Method.GLOBAL, hi * resolution) < target:
        raise ValueError(
            f"target {target} is above the loss at sparsity {upper} ({curve(Method.GLOBAL, hi * resolution)})"
        )
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if curve(Method.GLOBAL, round(mid * resolution, 12)) >= target:
            hi = mid
        else:
            lo = mid
    return round(hi * resolution, 12)


def bytes_table(model: nn.Module, sparsities: Sequence[float] = (0.5, 0.75, 0.9)) -> list[BytesRow]:
    """P5: bytes per element of the model's 2-D weights, pruned by global
    magnitude to each sparsity, stored dense / COO / bitmask / CSR; the 0.0 row
    is the dense original. int8 dense is 1 byte per element (its scales,
    one float32 per output channel, add ``4 * rows / n``, reported apart)."""
    sparsities = _check_sparsities(sparsities)
    rows = []
    for s in (0.0, *sparsities):
        weights = prunable_weights(pruned_model(model, Method.GLOBAL, s))
        mats = [w.contiguous() for w in weights.values()]
        rows.append(
            BytesRow(
                s,
                *(bytes_per_element(mats, f) for f in (Format.DENSE, Format.COO, Format.BITMASK, Format.CSR)),
            )
        )
    return rows


def int8_bytes_per_element(model: nn.Module) -> dict[str, float]:
    """Bytes per element of int8 storage of the 2-D weights: 1 per value, plus
    per-channel float32 scales (4 per output row) when they are counted."""
    weights = prunable_weights(model)
    n = sum(w.numel() for w in weights.values())
    rows = sum(w.shape[0] for w in weights.values())
    return {"values": 1.0, "with_scales": 1.0 + 4 * rows / n}


def quantization_vs_pruning(
    curve: LossCurve, int8_loss: float, sparsities: Sequence[float] = (0.75, 0.5)
) -> list[CompressionRow]:
    """P6: compression (4 bytes / bytes per element) and loss of int8 (1 byte
    per element, loss given) against global-magnitude pruning stored as a
    bitmask at each sparsity (``4(1-s) + 1/8`` bytes per element)."""
    _check_curve(curve)
    check_real("int8_loss", int8_loss, what="a finite loss")
    sparsities = _check_sparsities(sparsities)
    weights = prunable_weights(curve.model)
    rows = [CompressionRow("int8", 4.0, int8_loss)]
    for s in sparsities:
        masks = global_magnitude_masks(weights, s)
        mats = [
            torch.where(m, w, torch.zeros(())).contiguous()
            for m, w in zip(masks.values(), weights.values(), strict=True)
        ]
        rows.append(
            CompressionRow(
                f"{s:.0%} sparse (bitmask)",
                4.0 / bytes_per_element(mats, Format.BITMASK),
                curve(Method.GLOBAL, s),
            )
        )
    return rows


def two_four_comparison(curve: LossCurve) -> TwoFour:
    """X5: loss of 2:4 magnitude pruning against unstructured 50% (global and
    per-layer), and bytes per element of the 2:4 weights in 2:4 storage,
    bitmask and COO."""
    _check_curve(curve)
    mats = [
        w.contiguous() for w in prunable_weights(pruned_model(curve.model, Method.TWO_FOUR, 0.5)).values()
    ]
    return TwoFour(
        curve(Method.TWO_FOUR, 0.5),
        curve(Method.GLOBAL, 0.5),
        curve(Method.LAYER, 0.5),
        *(bytes_per_element(mats, f) for f in (Format.TWO_FOUR, Format.BITMASK, Format.COO)),
    )
