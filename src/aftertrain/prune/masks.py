"""Pruning masks: which weights of the 2-D matrices to zero, and pruned copies.

Masks are ``True`` where a weight is kept: magnitude with one global
threshold, magnitude per layer (each matrix loses the same fraction), random
(seeded), and 2-of-4 structured magnitude. A sparsity ``s`` over ``n``
weights removes exactly ``round(s * n)`` of them (Python's round, half to
even, as ``torch.nn.utils.prune``). Ranking is by ``(|w|, position)``: among
equal magnitudes the earlier position goes first, so the count is exact
whatever the ties and magnitude masks are nested (the zeros at 30% are among
the zeros at 50%). Storage formats are in :mod:`aftertrain.prune.formats`,
the article's experiments in :mod:`aftertrain.experiments.prune`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping
from enum import Enum

import torch
from torch import nn

from aftertrain.core.validation import check_int, check_real, check_seed
from aftertrain.core.weights import weight_matrices


class Method(Enum):
    """How the weights to remove are chosen."""

    GLOBAL = "global magnitude"  # smallest |w| over all matrices together
    LAYER = "per-layer magnitude"  # smallest |w| of each matrix, same fraction each
    RANDOM = "random"  # uniformly random positions (seeded)
    TWO_FOUR = "2:4 magnitude"  # the 2 smallest |w| of every 4 along a row


def prunable_weights(model: nn.Module, names: Iterable[str] | None = None) -> dict[str, torch.Tensor]:
    """The model's 2-D weight matrices by parameter name, in model order.

    Args:
        model: any module; its 2-D parameters are the prunable ones.
        names: a subset of those names (default: all of them).

    The selection is :func:`aftertrain.core.weights.weight_matrices`' (the
    one quantization uses). Raises ``ValueError`` for a name that is not a
    2-D parameter of ``model`` and for a weight holding NaN (it cannot be
    ranked by magnitude).
    Note: for the reference GPT these are 15 matrices, 631,808 weights.
    """
    weights = {n: p.detach() for n, p in weight_matrices(model, names).items()}
    if not weights:
        raise ValueError("names: no 2-D weight selected")
    _check_finite_ranking(weights)
    return weights


def _check_model(model: nn.Module) -> None:
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")


def check_sparsity(sparsity: float) -> float:
    """``sparsity`` as a float in [0, 1], else ValueError naming it."""
    check_real("sparsity", sparsity, low=0, high=1)
    return float(sparsity)


def _check_finite_ranking(weights: Mapping[str, torch.Tensor]) -> None:
    if not isinstance(weights, Mapping):
        raise ValueError(f"weights must be a dict of name -> tensor, got {type(weights).__name__}")
    if not weights:
        raise ValueError("weights: at least one matrix is needed")
    for name, w in weights.items():
        if not isinstance(w, torch.Tensor):
            raise ValueError(f"weights: {name} must be a tensor, got {type(w).__name__}")
        if w.numel() == 0:
            raise ValueError(f"weights: {name} must have at least one element, got shape {tuple(w.shape)}")
        if not torch.is_floating_point(w):
            raise ValueError(f"weights: {name} must be floating point, got {w.dtype}")
        if not bool(torch.isfinite(w).all()):
            raise ValueError(f"weights: {name} holds NaN or inf; it cannot be ranked by magnitude")


def n_removed(sparsity: float, n: int) -> int:
    """The number of weights a sparsity removes from ``n``: ``round(sparsity * n)``
    (round half to even, as ``torch.nn.utils.prune`` computes it).

    Note: ``n_removed(0.5, 5) == 2`` and ``n_removed(0.3, 5) == 2`` (2.5 and
    1.5 both round to the even neighbour)."""
    check_int("n", n, least=0)
    return round(check_sparsity(sparsity) * n)


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
    return {
        n: part.view(shape) for (n, shape), part in zip(shapes.items(), torch.split(keep, sizes), strict=True)
    }


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
        if not isinstance(per_layer, bool):
            raise ValueError(f"per_layer must be a bool, got {per_layer!r}")
        _check_finite_ranking(weights)
        self.per_layer = per_layer
        self.shapes = _shapes(weights)
        if per_layer:
            self.orders = {n: _magnitude_order(w.reshape(-1)) for n, w in weights.items()}
        else:
            self.orders = {"*": _magnitude_order(_flat(weights))}

    def masks(self, sparsity: float) -> dict[str, torch.Tensor]:
        """Keep masks (``True`` = kept) at ``sparsity``."""
        check_sparsity(sparsity)
        if self.per_layer:
            return {
                n: _drop_first(order, n_removed(sparsity, order.numel()), order.numel()).view(self.shapes[n])
                for n, order in self.orders.items()
            }
        order = self.orders["*"]
        return _split(_drop_first(order, n_removed(sparsity, order.numel()), order.numel()), self.shapes)


def _flat(weights: Mapping[str, torch.Tensor]) -> torch.Tensor:
    return torch.cat([w.reshape(-1) for w in weights.values()])


def global_magnitude_masks(weights: Mapping[str, torch.Tensor], sparsity: float) -> dict[str, torch.Tensor]:
    """Keep masks removing the ``round(s * N)`` smallest ``|w|`` over all
    matrices together (``N`` = all their weights); ties go in order of
    (matrix order, flat position). Per-matrix sparsity is free to vary."""
    check_sparsity(sparsity)
    return MagnitudeRanking(weights, per_layer=False).masks(sparsity)


def layer_magnitude_masks(weights: Mapping[str, torch.Tensor], sparsity: float) -> dict[str, torch.Tensor]:
    """Keep masks removing the ``round(s * n_i)`` smallest ``|w|`` of each
    matrix ``i`` separately (ties in flat position order)."""
    check_sparsity(sparsity)
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
            raise ValueError(
                f"weights: 2:4 groups need a 2-D matrix whose last dimension is a "
                f"multiple of 4; {name} has shape {tuple(w.shape)}"
            )
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
        raise ValueError(f"method must be a Method ({[m.name for m in Method]}), got {method!r}")
    check_sparsity(sparsity)
    check_seed(seed)
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
    _check_model(model)
    if not isinstance(masks, Mapping):
        raise ValueError(f"masks must be a dict of name -> bool tensor, got {type(masks).__name__}")
    params = dict(model.named_parameters())
    for name, keep in masks.items():
        if name not in params:
            raise ValueError(f"masks: {name!r} is not a parameter of the model")
        if not isinstance(keep, torch.Tensor) or keep.dtype != torch.bool or keep.shape != params[name].shape:
            raise ValueError(
                f"masks: {name!r} must be a bool tensor of shape "
                f"{tuple(params[name].shape)}, got "
                f"{getattr(keep, 'dtype', type(keep).__name__)} "
                f"{tuple(getattr(keep, 'shape', ()))}"
            )
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
    if not isinstance(masks, Mapping) or not masks:
        raise ValueError(f"masks must be a non-empty dict of name -> bool tensor, got {masks!r}")
    for name, m in masks.items():
        if not isinstance(m, torch.Tensor) or m.dtype != torch.bool:
            raise ValueError(
                f"masks: {name!r} must be a bool tensor, got {getattr(m, 'dtype', type(m).__name__)}"
            )
    total = sum(m.numel() for m in masks.values())
    if total == 0:
        raise ValueError("masks must hold at least one position, got only empty masks")
    return sum(int((~m).sum()) for m in masks.values()) / total
