"""Deliberately broken pruners and storage formats (never in src/) that the
checks must reject. Pruners follow :mod:`aftertrain.checks.prune`'s protocol
``(weights, sparsity) -> keep masks``."""

from __future__ import annotations

import math

import torch

from aftertrain import prune as P
from aftertrain.core import packing


def _split(keep, weights):
    sizes = [w.numel() for w in weights.values()]
    parts = torch.split(keep, sizes)
    return {n: part.view(w.shape) for (n, w), part in zip(weights.items(), parts, strict=True)}


def _flat(weights):
    return torch.cat([w.reshape(-1) for w in weights.values()])


def signed_global_masks(weights, s):
    """Broken (X7): ranks by signed value, so large negative weights go first."""
    flat = _flat(weights)
    keep = torch.ones(flat.numel(), dtype=torch.bool)
    keep[torch.sort(flat, stable=True).indices[: round(s * flat.numel())]] = False
    return _split(keep, weights)


def threshold_global_masks(weights, s):
    """Broken: keeps |w| above the k-th smallest magnitude, removing every tie."""
    flat = _flat(weights).abs()
    k = round(s * flat.numel())
    if k == 0:
        return {n: torch.ones_like(w, dtype=torch.bool) for n, w in weights.items()}
    threshold = torch.sort(flat).values[k - 1]
    return {n: w.abs() > threshold for n, w in weights.items()}


def floor_count_global_masks(weights, s):
    """Broken: off-by-one count, floor(s * N) instead of round(s * N)."""
    flat = _flat(weights).abs()
    keep = torch.ones(flat.numel(), dtype=torch.bool)
    keep[torch.sort(flat, stable=True).indices[: math.floor(s * flat.numel())]] = False
    return _split(keep, weights)


def half_up_count_global_masks(weights, s):
    """Broken: counts rounded half up (int(s * N + 0.5)), not half to even."""
    flat = _flat(weights).abs()
    keep = torch.ones(flat.numel(), dtype=torch.bool)
    keep[torch.sort(flat, stable=True).indices[: int(s * flat.numel() + 0.5)]] = False
    return _split(keep, weights)


def unnested_global_masks(weights, s):
    """Broken: ties broken at random anew for every call, so masks at two
    sparsities need not nest."""
    flat = _flat(weights).abs()
    g = torch.Generator().manual_seed(int(1000 * s))
    jitter = torch.randperm(flat.numel(), generator=g)
    order = sorted(range(flat.numel()), key=lambda i: (float(flat[i]), int(jitter[i])))
    keep = torch.ones(flat.numel(), dtype=torch.bool)
    keep[order[: round(s * flat.numel())]] = False
    return _split(keep, weights)


def coo_with_int64_index(dense, fmt):
    """Broken: claims COO but keeps 8-byte indices (12 bytes per kept value)."""
    stored = P.to_stored(dense, fmt)
    if fmt is P.Format.COO:
        stored.arrays["index"] = stored.arrays["index"].to(torch.int64)
    return stored


def bitmask_without_values(dense, fmt):
    """Broken: a bitmask that stores the bits and forgets the kept values."""
    stored = P.to_stored(dense, fmt)
    if fmt is P.Format.BITMASK:
        stored = P.Stored(fmt, stored.shape, {"bits": stored.arrays["bits"]})
    return stored


def from_bitmask_as_ones(stored):
    """The only decoding possible without values: ones where the bit is set."""
    if "values" in stored.arrays or stored.format is not P.Format.BITMASK:
        return P.from_stored(stored)
    n = stored.shape[0] * stored.shape[1]
    return packing.unpack(stored.arrays["bits"], 1, n, signed=False).float().view(stored.shape)


# --- structured and N:M pruners ------------------------------------------------


def _slice_masks(weights, s, reduce_dim):
    """Remove the round(s * n) slices of smallest L2 norm, the norm reduced
    over ``reduce_dim`` (1: one norm per row, rows removed; 0: per column)."""
    masks = {}
    for name, w in weights.items():
        norms = torch.linalg.vector_norm(w, dim=reduce_dim)
        drop = torch.sort(norms, stable=True).indices[: round(s * norms.numel())]
        keep = torch.ones(norms.numel(), dtype=torch.bool)
        keep[drop] = False
        masks[name] = (keep.unsqueeze(1) if reduce_dim == 1 else keep.unsqueeze(0)).expand_as(w)
    return {n: m.clone() for n, m in masks.items()}


def l2_row_masks(weights, s):
    """Correct: whole rows (a Linear's output features) by their L2 norm."""
    return _slice_masks(weights, s, reduce_dim=1)


def rows_ranked_by_wrong_dim(weights, s):
    """Broken: the norm reduced over dim 0 instead of 1, so a "row pruner"
    ranks and removes columns."""
    return _slice_masks(weights, s, reduce_dim=0)


def signed_two_four_masks(weights, s):
    """Broken: keeps the 2 largest of every 4 by signed value, not by |w|."""
    masks = {}
    for name, w in weights.items():
        blocks = w.reshape(-1, 4)
        keep = torch.zeros_like(blocks, dtype=torch.bool)
        keep.scatter_(1, torch.topk(blocks, 2, dim=1).indices, True)
        masks[name] = keep.view(w.shape)
    return masks


# --- counting conventions: torch-pruning's, and pruners counting otherwise -------


def rows_counted(removed, importance=None):
    """A row pruner removing ``removed(s, n)`` rows of every matrix, the
    smallest ``importance(w)`` first (default: L2 norm per row); ``removed``
    is a counting convention, e.g. ``Rounding.FLOOR.removed``."""

    def prune(weights, s):
        masks = {}
        for name, w in weights.items():
            imp = torch.linalg.vector_norm(w, dim=1) if importance is None else importance(w)
            keep = torch.ones(w.shape[0], dtype=torch.bool)
            keep[torch.sort(imp, stable=True).indices[: removed(s, w.shape[0])]] = False
            masks[name] = keep.unsqueeze(1).expand_as(w).clone()
        return masks

    return prune


def torch_pruning_rows(p: float = 2):
    """torch-pruning 1.6.1's local width pruning of a Linear's rows, minimal
    (read from its source, not imported): importance ``|w|^p`` summed over
    the row (``MagnitudeImportance(p)``, ``w.abs().pow(self.p).sum(1)``:
    at ``p = inf`` every row with a weight above 1 ties at inf, below 1 at 0);
    ``n - int(n * (1 - s))`` rows removed (``BasePruner``'s ``n_pruned``),
    and none at all where that count reaches every row
    (``DependencyGraph.check_pruning_group``: "avoid over-pruning")."""

    def removed(s, n):
        count = n - int(n * (1 - s))
        return 0 if count >= n else count

    return rows_counted(removed, importance=lambda w: w.abs().pow(p).sum(1))


def global_counted(removed):
    """A global magnitude pruner removing ``removed(s, N)`` of all N weights."""

    def prune(weights, s):
        flat = _flat(weights)
        keep = torch.ones(flat.numel(), dtype=torch.bool)
        keep[torch.sort(flat.abs(), stable=True).indices[: removed(s, flat.numel())]] = False
        return _split(keep, weights)

    return prune
