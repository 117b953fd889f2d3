"""Pruning: masks over the 2-D weights, pruned copies, sparse storage formats.

Part 8 of the series zeroes a fraction of the 631,808 weights held in the
model's fifteen 2-D matrices (the same set quantization rounds) and measures
the validation loss, the bytes a sparse matrix really needs, and the time a
matmul takes. This module holds every piece of that, as pure functions:

* masks (``True`` = kept): magnitude with one global threshold, magnitude per
  layer (each matrix loses the same fraction), random (seeded), and 2-of-4
  structured magnitude. A sparsity ``s`` over ``n`` weights removes exactly
  ``round(s * n)`` of them (Python's round, as ``torch.nn.utils.prune``).
  Ranking is by ``(|w|, position)``: among equal magnitudes the earlier
  position goes first, so the count is exact whatever the ties and magnitude
  masks are nested (the zeros at 30% are among the zeros at 50%);
* storage formats with exact byte counts and a bit-exact round trip;
* the experiments of the article as functions returning their tables.
"""

from __future__ import annotations

import copy
import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np
import torch
from torch import nn

from aftertrain.evaluation import val_loss

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


class Method(Enum):
    """How the weights to remove are chosen."""

    GLOBAL = "global magnitude"  # smallest |w| over all matrices together
    LAYER = "per-layer magnitude"  # smallest |w| of each matrix, same fraction each
    RANDOM = "random"  # uniformly random positions (seeded)
    TWO_FOUR = "2:4 magnitude"  # the 2 smallest |w| of every 4 along a row


# --- masks ----------------------------------------------------------------


def prunable_weights(model: nn.Module, names: Iterable[str] | None = None) -> dict[str, torch.Tensor]:
    """The model's 2-D weight matrices by parameter name, in model order.

    Args:
        model: any module; its 2-D parameters are the prunable ones.
        names: a subset of those names (default: all of them).

    Raises ``ValueError`` for a name that is not a 2-D parameter of ``model``
    and for a weight holding NaN (it cannot be ranked by magnitude).
    Note: for the reference GPT these are 15 matrices, 631,808 weights.
    """
    weights = {n: p.detach() for n, p in model.named_parameters() if p.dim() == 2}
    if names is not None:
        names = list(names)
        unknown = [n for n in names if n not in weights]
        if unknown:
            raise ValueError(f"names: {unknown} are not 2-D parameters of the model "
                             f"(valid: {list(weights)})")
        weights = {n: weights[n] for n in weights if n in set(names)}
    if not weights:
        raise ValueError("names: no 2-D weight selected")
    _check_finite_ranking(weights)
    return weights


def _check_sparsity(sparsity: float) -> float:
    if (isinstance(sparsity, bool) or not isinstance(sparsity, numbers.Real)
            or not 0.0 <= sparsity <= 1.0):
        raise ValueError(f"sparsity must be a number in [0, 1], got {sparsity!r}")
    return float(sparsity)


def _check_finite_ranking(weights: Mapping[str, torch.Tensor]) -> None:
    if not weights:
        raise ValueError("weights: at least one matrix is needed")
    for name, w in weights.items():
        if not torch.is_floating_point(w):
            raise ValueError(f"weights: {name} must be floating point, got {w.dtype}")
        if torch.isnan(w).any():
            raise ValueError(f"weights: {name} holds NaN; it cannot be ranked by magnitude")


def n_removed(sparsity: float, n: int) -> int:
    """The number of weights a sparsity removes from ``n``: ``round(sparsity * n)``
    (round half to even, as ``torch.nn.utils.prune`` computes it)."""
    return round(_check_sparsity(sparsity) * n)


def _drop_first(order: torch.Tensor, k: int, n: int) -> torch.Tensor:
    """Keep mask of ``n`` flat positions with ``order[:k]`` removed."""
    keep = torch.ones(n, dtype=torch.bool)
    keep[order[:k]] = False
    return keep


def _magnitude_order(flat: torch.Tensor) -> torch.Tensor:
    # Stable sort of |w|: ties leave in position order, so exactly k go and
    # the order (hence nesting) does not depend on the sparsity asked for.
    return torch.sort(flat.abs(), stable=True).indices


def _split(keep: torch.Tensor, shapes: Mapping[str, torch.Size]) -> dict[str, torch.Tensor]:
    sizes = [math.prod(shape) for shape in shapes.values()]
    return {n: part.view(shape)
            for (n, shape), part in zip(shapes.items(), torch.split(keep, sizes))}


def _shapes(weights: Mapping[str, torch.Tensor]) -> dict[str, torch.Size]:
    return {n: w.shape for n, w in weights.items()}


class MagnitudeRanking:
    """Weights ranked once by ``(|w|, position)``, over all matrices together
    (``per_layer=False``) or within each matrix; the masks at any sparsity
    are a prefix of that ranking, so they are nested and cost no new sort.

    ``masks(s)`` removes the ``round(s * N)`` first-ranked weights globally,
    or the ``round(s * n_i)`` first-ranked of every matrix ``i`` per layer.
    """

    def __init__(self, weights: Mapping[str, torch.Tensor], *, per_layer: bool) -> None:
        _check_finite_ranking(weights)
        self.per_layer = per_layer
        self.shapes = _shapes(weights)
        if per_layer:
            self.orders = {n: _magnitude_order(w.reshape(-1)) for n, w in weights.items()}
        else:
            self.orders = {"*": _magnitude_order(_flat(weights))}

    def masks(self, sparsity: float) -> dict[str, torch.Tensor]:
        """Keep masks (``True`` = kept) at ``sparsity``."""
        _check_sparsity(sparsity)
        if self.per_layer:
            return {n: _drop_first(order, n_removed(sparsity, order.numel()),
                                   order.numel()).view(self.shapes[n])
                    for n, order in self.orders.items()}
        order = self.orders["*"]
        return _split(_drop_first(order, n_removed(sparsity, order.numel()), order.numel()),
                      self.shapes)


def _flat(weights: Mapping[str, torch.Tensor]) -> torch.Tensor:
    return torch.cat([w.reshape(-1) for w in weights.values()])


def global_magnitude_masks(weights: Mapping[str, torch.Tensor], sparsity: float) -> dict[str, torch.Tensor]:
    """Keep masks removing the ``round(s * N)`` smallest ``|w|`` over all
    matrices together (``N`` = all their weights); ties go in order of
    (matrix order, flat position). Per-matrix sparsity is free to vary."""
    _check_sparsity(sparsity)
    return MagnitudeRanking(weights, per_layer=False).masks(sparsity)


def layer_magnitude_masks(weights: Mapping[str, torch.Tensor], sparsity: float) -> dict[str, torch.Tensor]:
    """Keep masks removing the ``round(s * n_i)`` smallest ``|w|`` of each
    matrix ``i`` separately (ties in flat position order)."""
    _check_sparsity(sparsity)
    return MagnitudeRanking(weights, per_layer=True).masks(sparsity)


def random_masks(
    weights: Mapping[str, torch.Tensor],
    sparsity: float,
    generator: torch.Generator,
) -> dict[str, torch.Tensor]:
    """Keep masks removing ``round(s * N)`` positions drawn uniformly without
    replacement over all matrices (one ``randperm`` from ``generator``, so one
    seed gives nested masks across sparsities)."""
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    _check_finite_ranking(weights)
    n = sum(w.numel() for w in weights.values())
    k = n_removed(sparsity, n)
    return _split(_drop_first(torch.randperm(n, generator=generator), k, n), _shapes(weights))


def two_four_masks(weights: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Keep masks with exactly 2 of every 4 consecutive weights of a row kept:
    the 2 largest ``|w|`` (of equal ones, the earlier position is removed first).

    Groups run along the last dimension (the input features of a Linear
    weight, the dimension a matmul reduces over, as NVIDIA's 2:4 kernels
    want). Raises ``ValueError`` when a matrix's last dimension is not a
    multiple of 4. Sparsity is exactly 50%.
    """
    _check_finite_ranking(weights)
    masks = {}
    for name, w in weights.items():
        if w.dim() != 2 or w.shape[-1] % 4:
            raise ValueError(f"weights: 2:4 groups need a 2-D matrix whose last dimension is a "
                             f"multiple of 4; {name} has shape {tuple(w.shape)}")
        groups = w.reshape(-1, 4).abs()
        order = torch.sort(groups, dim=1, stable=True).indices
        keep = torch.ones_like(groups, dtype=torch.bool)
        keep.scatter_(1, order[:, :2], False)
        masks[name] = keep.view(w.shape)
    return masks


def masks_for(
    model: nn.Module,
    method: Method,
    sparsity: float,
    *,
    seed: int = 0,
    names: Iterable[str] | None = None,
) -> dict[str, torch.Tensor]:
    """Keep masks for ``model``'s 2-D weights (or ``names``) by ``method``.

    ``seed`` is used by ``Method.RANDOM`` only (a fresh ``torch.Generator``);
    ``Method.TWO_FOUR`` accepts only ``sparsity == 0.5``.
    """
    if not isinstance(method, Method):
        raise ValueError(f"method must be a Method, got {method!r}")
    _check_sparsity(sparsity)
    weights = prunable_weights(model, names)
    if method is Method.GLOBAL:
        return global_magnitude_masks(weights, sparsity)
    if method is Method.LAYER:
        return layer_magnitude_masks(weights, sparsity)
    if method is Method.RANDOM:
        return random_masks(weights, sparsity, torch.Generator().manual_seed(seed))
    if sparsity != 0.5:
        raise ValueError(f"sparsity: 2:4 pruning is exactly 0.5, got {sparsity!r}")
    return two_four_masks(weights)


def apply_masks(model: nn.Module, masks: Mapping[str, torch.Tensor]) -> nn.Module:
    """A deep copy of ``model`` whose named weights are zero where the mask is
    ``False`` and bit-identical elsewhere; ``model`` itself is untouched."""
    params = dict(model.named_parameters())
    for name, keep in masks.items():
        if name not in params:
            raise ValueError(f"masks: {name!r} is not a parameter of the model")
        if keep.dtype != torch.bool or keep.shape != params[name].shape:
            raise ValueError(f"masks: {name!r} must be a bool tensor of shape "
                             f"{tuple(params[name].shape)}, got {keep.dtype} {tuple(keep.shape)}")
    pruned = copy.deepcopy(model)
    with torch.no_grad():
        for name, p in pruned.named_parameters():
            if name in masks:
                p.masked_fill_(~masks[name], 0.0)
    return pruned


def pruned_model(
    model: nn.Module,
    method: Method,
    sparsity: float,
    *,
    seed: int = 0,
    names: Iterable[str] | None = None,
) -> nn.Module:
    """A pruned deep copy: ``apply_masks(model, masks_for(model, method, sparsity, ...))``."""
    return apply_masks(model, masks_for(model, method, sparsity, seed=seed, names=names))


def sparsity_of(masks: Mapping[str, torch.Tensor]) -> float:
    """Fraction of positions removed (``False``) over all masks together."""
    total = sum(m.numel() for m in masks.values())
    return sum(int((~m).sum()) for m in masks.values()) / total


# --- storage formats --------------------------------------------------------


class Format(Enum):
    """Ways to store a float32 matrix with zeros."""

    DENSE = "dense float32"  # every element, 4 bytes each
    COO = "COO"  # kept values (float32) + flat index (int32) each: 8 bytes per kept
    BITMASK = "bitmask"  # 1 bit per element + kept values (float32)
    CSR = "CSR"  # torch's CSR: values float32, col_indices and crow_indices int64
    TWO_FOUR = "2:4"  # 2 values (float32) of every 4 + their 2-bit positions


@dataclass(frozen=True)
class Stored:
    """A matrix in a storage format: its shape and the arrays actually kept.

    ``nbytes`` is the sum of the arrays' sizes (``numel * element_size``); the
    shape (a few integers per matrix) is not counted, as in the article.
    """

    format: Format
    shape: tuple[int, ...]
    arrays: dict[str, torch.Tensor]

    @property
    def nbytes(self) -> int:
        return sum(a.numel() * a.element_size() for a in self.arrays.values())


def _nonzero_bits(dense: torch.Tensor) -> torch.Tensor:
    # "Zero" is the bit pattern of +0.0: -0.0 and NaN are stored as values, so
    # every format round-trips bit for bit.
    return dense.reshape(-1).view(torch.int32) != 0


def encode(dense: torch.Tensor, fmt: Format) -> Stored:
    """``dense`` (a float32 matrix) stored in ``fmt``; ``decode`` inverts it bit
    for bit. Byte counts, with ``n`` elements, ``z`` kept (not +0.0), ``r`` rows:

    * DENSE: ``4n``;  COO: ``8z``;  BITMASK: ``ceil(n/8) + 4z``;
    * CSR: ``4z + 8z + 8(r+1)`` (int64 indices, as ``torch.sparse_csr_tensor``);
    * TWO_FOUR: ``4(n/2) + ceil(n/8)`` (2 bits for each of the ``n/2`` kept).

    Note: a 512x128 matrix at 75% sparsity keeps 16,384 values: COO takes
    131,072 B (2.00 per element), a bitmask 8,192 + 65,536 = 73,728 B (1.125).
    Raises ``ValueError`` if ``dense`` is not a 2-D float32 tensor, or for
    TWO_FOUR if a row group of 4 holds more than 2 nonzeros or the last
    dimension is not a multiple of 4.
    """
    if not isinstance(fmt, Format):
        raise ValueError(f"fmt must be a Format, got {fmt!r}")
    if not isinstance(dense, torch.Tensor) or dense.dtype != torch.float32 or dense.dim() != 2:
        raise ValueError(f"dense must be a 2-D float32 tensor, got "
                         f"{getattr(dense, 'dtype', type(dense))} {tuple(getattr(dense, 'shape', ()))}")
    dense = dense.detach().contiguous()
    shape = tuple(dense.shape)
    flat = dense.reshape(-1)
    kept = _nonzero_bits(dense)
    if fmt is Format.DENSE:
        return Stored(fmt, shape, {"values": flat.clone()})
    if fmt is Format.COO:
        index = kept.nonzero().squeeze(1)
        return Stored(fmt, shape, {"values": flat[index].clone(), "index": index.to(torch.int32)})
    if fmt is Format.BITMASK:
        bits = torch.from_numpy(np.packbits(kept.numpy()))
        return Stored(fmt, shape, {"bits": bits, "values": flat[kept].clone()})
    if fmt is Format.CSR:
        rows = kept.view(shape)
        crow = torch.zeros(shape[0] + 1, dtype=torch.int64)
        crow[1:] = rows.sum(1).cumsum(0)
        col = rows.nonzero()[:, 1].contiguous()
        return Stored(fmt, shape, {"values": dense[rows].clone(), "col_indices": col,
                                   "crow_indices": crow})
    # TWO_FOUR
    if shape[1] % 4:
        raise ValueError(f"dense: 2:4 storage needs a last dimension divisible by 4, got {shape}")
    groups = kept.view(-1, 4)
    if (groups.sum(1) > 2).any():
        raise ValueError("dense: a group of 4 holds more than 2 nonzeros; not 2:4 sparse")
    # The 2 stored positions of a group: its nonzeros first, padded with its
    # first zeros (whose exact bits are stored too), in ascending order.
    order = torch.sort((~groups).to(torch.int8), dim=1, stable=True).indices[:, :2]
    positions = torch.sort(order, dim=1).values
    values = torch.gather(flat.view(-1, 4), 1, positions).reshape(-1).clone()
    return Stored(fmt, shape, {"values": values, "positions": _pack_2bit(positions.reshape(-1))})


def _pack_2bit(codes: torch.Tensor) -> torch.Tensor:
    """Codes in 0..3, four to a byte (first code in the low bits)."""
    padded = torch.zeros(4 * math.ceil(codes.numel() / 4), dtype=torch.uint8)
    padded[: codes.numel()] = codes.to(torch.uint8)
    quads = padded.view(-1, 4)
    return quads[:, 0] | (quads[:, 1] << 2) | (quads[:, 2] << 4) | (quads[:, 3] << 6)


def _unpack_2bit(packed: torch.Tensor, n: int) -> torch.Tensor:
    shifts = torch.tensor([0, 2, 4, 6], dtype=torch.uint8)
    return ((packed.unsqueeze(1) >> shifts) & 3).reshape(-1)[:n].to(torch.int64)


def decode(stored: Stored) -> torch.Tensor:
    """The dense float32 matrix ``stored`` holds (bit-exact inverse of ``encode``)."""
    shape, a = stored.shape, stored.arrays
    n = math.prod(shape)
    if stored.format is Format.DENSE:
        return a["values"].clone().view(shape)
    if stored.format is Format.CSR:
        # Scattered by hand: torch's CSR to_dense adds each value onto +0.0,
        # which turns -0.0 into +0.0.
        rows = torch.repeat_interleave(torch.arange(shape[0]), a["crow_indices"].diff())
        out = torch.zeros(shape, dtype=torch.float32)
        out[rows, a["col_indices"]] = a["values"]
        return out
    out = torch.zeros(n, dtype=torch.float32)
    if stored.format is Format.COO:
        out[a["index"].to(torch.int64)] = a["values"]
    elif stored.format is Format.BITMASK:
        kept = torch.from_numpy(np.unpackbits(a["bits"].numpy(), count=n).astype(bool))
        out[kept] = a["values"]
    else:  # TWO_FOUR
        positions = _unpack_2bit(a["positions"], n // 2).view(-1, 2)
        out.view(-1, 4).scatter_(1, positions, a["values"].view(-1, 2))
    return out.view(shape)


def bytes_per_element(matrices: Iterable[torch.Tensor], fmt: Format) -> float:
    """Total stored bytes of ``matrices`` in ``fmt`` divided by their element count."""
    matrices = list(matrices)
    return (sum(encode(m, fmt).nbytes for m in matrices)
            / sum(m.numel() for m in matrices))


# --- experiments ------------------------------------------------------------


class LossCurve:
    """Validation loss of ``model`` pruned by a method at a sparsity, memoized
    per (method, sparsity, seed) so each configuration is evaluated once."""

    def __init__(self, model: nn.Module, evaluate: Callable[[nn.Module], float] = val_loss) -> None:
        self.model = model
        self.evaluate = evaluate
        self._cache: dict[tuple[Method, float, int], float] = {}
        self._rankings: dict[Method, MagnitudeRanking] = {}

    def __call__(self, method: Method, sparsity: float, seed: int = 0) -> float:
        key = (method, _check_sparsity(sparsity), seed if method is Method.RANDOM else 0)
        if key not in self._cache:
            if method in (Method.GLOBAL, Method.LAYER):  # rank once, mask many times
                if method not in self._rankings:
                    self._rankings[method] = MagnitudeRanking(
                        prunable_weights(self.model), per_layer=method is Method.LAYER)
                pruned = apply_masks(self.model, self._rankings[method].masks(sparsity))
            else:
                pruned = pruned_model(self.model, method, sparsity, seed=seed)
            self._cache[key] = self.evaluate(pruned)
        return self._cache[key]

    def random_losses(self, sparsity: float, seeds: Sequence[int] = RANDOM_SEEDS) -> list[float]:
        """Loss of random pruning at ``sparsity`` for each seed."""
        return [self(Method.RANDOM, sparsity, s) for s in seeds]


def loss_table(curve: LossCurve, sparsities: Sequence[float] = TABLE_SPARSITIES,
               seeds: Sequence[int] = RANDOM_SEEDS) -> list[dict[str, float]]:
    """P1: one row per sparsity: global / per-layer magnitude loss and the mean
    random loss over ``seeds``."""
    return [{"sparsity": s,
             "global": curve(Method.GLOBAL, s),
             "layer": curve(Method.LAYER, s),
             "random": float(np.mean(curve.random_losses(s, seeds)))}
            for s in sparsities]


def random_table(curve: LossCurve, sparsities: Sequence[float] = RANDOM_SPARSITIES,
                 seeds: Sequence[int] = RANDOM_SEEDS) -> list[dict[str, float]]:
    """P2: per sparsity, random-pruning loss over ``seeds``: mean, sample std,
    min, max."""
    rows = []
    for s in sparsities:
        losses = np.array(curve.random_losses(s, seeds))
        rows.append({"sparsity": s, "mean": float(losses.mean()),
                     "std": float(losses.std(ddof=1)) if len(losses) > 1 else 0.0,
                     "min": float(losses.min()), "max": float(losses.max())})
    return rows


def first_sparsity_above(rows: Sequence[Mapping[str, float]], key: str, level: float) -> float | None:
    """The smallest ``row["sparsity"]`` whose ``row[key]`` exceeds ``level``
    (``None`` if none does)."""
    above = [r["sparsity"] for r in rows if r[key] > level]
    return min(above) if above else None


def matching_sparsity(curve: LossCurve, target: float, *, upper: float = 0.9,
                      resolution: float = 0.001) -> float:
    """P4: the global-magnitude sparsity whose loss reaches ``target``.

    Bisection on the grid of multiples of ``resolution`` in ``[0, upper]``
    (the monotone part of the curve) for the smallest grid point ``s`` with
    ``loss(s) >= target`` given ``loss(s - resolution) < target``; at most
    ``ceil(log2(upper / resolution))`` evaluations (10 for the defaults).
    Returns 0.0 when the unpruned model already reaches ``target``. Raises
    ``ValueError`` when ``target`` is not finite or is above ``loss(upper)``.
    """
    if not math.isfinite(target):
        raise ValueError(f"target must be a finite loss, got {target!r}")
    _check_sparsity(upper)
    if not 0.0 < resolution <= upper:
        raise ValueError(f"resolution must be in (0, upper], got {resolution!r}")
    lo, hi = 0, round(upper / resolution)  # grid indices: loss(lo) < target <= loss(hi)
    if curve(Method.GLOBAL, 0.0) >= target:
        return 0.0
    if curve(Method.GLOBAL, hi * resolution) < target:
        raise ValueError(f"target {target} is above the loss at sparsity {upper} "
                         f"({curve(Method.GLOBAL, hi * resolution)})")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if curve(Method.GLOBAL, round(mid * resolution, 12)) >= target:
            hi = mid
        else:
            lo = mid
    return round(hi * resolution, 12)


def bytes_table(model: nn.Module, sparsities: Sequence[float] = (0.5, 0.75, 0.9)) -> list[dict[str, float]]:
    """P5: bytes per element of the model's 2-D weights, pruned by global
    magnitude to each sparsity, stored dense / COO / bitmask / CSR; the 0.0 row
    is the dense original. int8 dense is 1 byte per element (its scales,
    one float32 per output channel, add ``4 * rows / n``, reported apart)."""
    rows = []
    for s in (0.0, *sparsities):
        weights = prunable_weights(pruned_model(model, Method.GLOBAL, s))
        mats = [w.contiguous() for w in weights.values()]
        rows.append({"sparsity": s, **{f.name.lower(): bytes_per_element(mats, f)
                                       for f in (Format.DENSE, Format.COO, Format.BITMASK, Format.CSR)}})
    return rows


def int8_bytes_per_element(model: nn.Module) -> dict[str, float]:
    """Bytes per element of int8 storage of the 2-D weights: 1 per value, plus
    per-channel float32 scales (4 per output row) when they are counted."""
    weights = prunable_weights(model)
    n = sum(w.numel() for w in weights.values())
    rows = sum(w.shape[0] for w in weights.values())
    return {"values": 1.0, "with_scales": 1.0 + 4 * rows / n}


def quantization_vs_pruning(curve: LossCurve, int8_loss: float,
                            sparsities: Sequence[float] = (0.75, 0.5)) -> list[dict[str, float | str]]:
    """P6: compression (4 bytes / bytes per element) and loss of int8 (1 byte
    per element, loss given) against global-magnitude pruning stored as a
    bitmask at each sparsity (``4(1-s) + 1/8`` bytes per element)."""
    weights = prunable_weights(curve.model)
    rows: list[dict[str, float | str]] = [{"name": "int8", "compression": 4.0, "loss": int8_loss}]
    for s in sparsities:
        masks = global_magnitude_masks(weights, s)
        mats = [torch.where(m, w, torch.zeros(())).contiguous()
                for m, w in zip(masks.values(), weights.values())]
        rows.append({"name": f"{s:.0%} sparse (bitmask)",
                     "compression": 4.0 / bytes_per_element(mats, Format.BITMASK),
                     "loss": curve(Method.GLOBAL, s)})
    return rows


def two_four_comparison(curve: LossCurve) -> dict[str, float]:
    """X5: loss of 2:4 magnitude pruning against unstructured 50% (global and
    per-layer), and bytes per element of the 2:4 weights in 2:4 storage,
    bitmask and COO."""
    mats = [w.contiguous() for w in prunable_weights(
        pruned_model(curve.model, Method.TWO_FOUR, 0.5)).values()]
    return {"two_four": curve(Method.TWO_FOUR, 0.5),
            "global_50": curve(Method.GLOBAL, 0.5),
            "layer_50": curve(Method.LAYER, 0.5),
            "bytes_two_four": bytes_per_element(mats, Format.TWO_FOUR),
            "bytes_bitmask": bytes_per_element(mats, Format.BITMASK),
            "bytes_coo": bytes_per_element(mats, Format.COO)}
