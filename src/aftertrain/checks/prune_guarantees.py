"""The guarantees of :func:`aftertrain.checks.prune.check_pruner` on one
sparsity's masks, one function per kind of report row: the count, the
structure, the magnitude order (per pattern of
:mod:`aftertrain.checks.patterns`) and the nesting across sparsities.
What each guarantee means, and its slack, is in
:mod:`aftertrain.checks.prune`'s docstring."""

from __future__ import annotations

import torch

from aftertrain.checks.patterns import NM, Pattern, Scope, Structured, Unstructured
from aftertrain.checks.prune_counts import Counted, count_row
from aftertrain.checks.report import Report, Row


def check_masks(
    report: Report,
    where: str,
    weights,
    masks,
    s: float,
    pattern: Pattern,
    magnitude: bool,
    counted: list[Counted],
) -> None:
    """Add to ``report`` the rows of the masks ``masks`` of ``weights`` at
    sparsity ``s`` under ``pattern``: the count and (``magnitude``) the
    order, over all weights or per matrix as the scope says; per matrix,
    the whole slices (Structured) or the blocks' counts (NM). Each count
    row of a counting pattern is appended to ``counted`` with ``s``."""
    if isinstance(pattern, Unstructured):
        _check_count(report, where, weights, masks, s, pattern, counted)
        if magnitude:
            _check_magnitude(report, where, weights, masks, pattern.scope)
        return
    for name, w in weights.items():
        at = f"{where}, {name}"
        if isinstance(pattern, Structured):
            _check_slices(report, at, w, masks[name], s, pattern, magnitude, counted)
        else:
            _check_blocks(report, at, w, masks[name], pattern, magnitude)


def check_nested(report: Report, where: str, weights, masks, s: float, previous) -> None:
    """Add the ``nested`` row: every weight removed at the previous sparsity
    (``previous = (s0, masks0)``, ``s0 < s``) is removed at ``s`` too."""
    s0, m0 = previous
    bad = sum(int((~m0[n] & masks[n]).sum()) for n in weights)
    report.add(
        Row(
            where,
            "nested",
            bad == 0,
            value=float(bad),
            bound=0.0,
            detail="" if bad == 0 else f"{bad} weights removed at sparsity {s0} are kept at {s}",
        )
    )


def _check_slices(
    report: Report,
    at: str,
    w: torch.Tensor,
    mask: torch.Tensor,
    s: float,
    pattern: Structured,
    magnitude: bool,
    counted: list[Counted],
) -> None:
    """Whole slices along ``dim``, the pattern's count of them, the smallest norms."""
    per_slice = mask if pattern.dim == 0 else mask.T  # (slices, length)
    whole = per_slice.all(1) | ~per_slice.any(1)
    ok = bool(whole.all())
    report.add(
        Row(
            at,
            "structure",
            ok,
            value=float((~whole).sum()),
            bound=0.0,
            detail=""
            if ok
            else f"{int((~whole).sum())} of {whole.numel()} slices along dim {pattern.dim} are partly kept",
        )
    )
    if not ok:
        return
    kept = per_slice.all(1)
    row = count_row(
        at, int((~kept).sum()), kept.numel(), s, pattern.counting, f" slices along dim {pattern.dim}"
    )
    counted.append((report.add(row), s))
    if magnitude and kept.any() and not kept.all():
        _check_slice_norms(report, at, w, kept, per_slice.shape[1], pattern)


def _check_slice_norms(
    report: Report, at: str, w: torch.Tensor, kept: torch.Tensor, length: int, pattern: Structured
) -> None:
    """No removed slice's norm above a kept one's, up to the float32
    rounding of a norm of ``length`` terms (``kept``: one bool a slice)."""
    norms = pattern.slice_norms(w)
    removed, smallest_kept = float(norms[~kept].max()), float(norms[kept].min())
    # a float32 norm of `length` terms is within length * u of the exact one
    slack = length * 2.0**-24
    ok = removed <= smallest_kept * (1 + slack)
    report.add(
        Row(
            at,
            "magnitude",
            ok,
            value=removed,
            bound=smallest_kept,
            detail=""
            if ok
            else f"a removed slice has norm {removed:.4g} > a kept slice's {smallest_kept:.4g}",
        )
    )


def _check_blocks(
    report: Report, at: str, w: torch.Tensor, mask: torch.Tensor, pattern: NM, magnitude: bool
) -> None:
    """Exactly ``n`` kept in every block of ``m``, the largest ``|w|`` of the block."""
    if w.shape[-1] % pattern.m:
        report.add(
            Row(
                at,
                "count",
                False,
                detail=f"rows of {w.shape[-1]} are not whole blocks of {pattern.m}: refuse them (ValueError)",
            )
        )
        return
    keep, a = pattern.blocks(mask), pattern.blocks(w.abs())
    kept = keep.sum(1)
    bad = int((kept != pattern.n).sum())
    report.add(
        Row(
            at,
            "count",
            bad == 0,
            value=float(bad),
            bound=0.0,
            n=keep.shape[0],
            detail=""
            if bad == 0
            else f"{bad} of {keep.shape[0]} blocks keep "
            f"{sorted(set(kept[kept != pattern.n].tolist()))}"
            f" weights, not {pattern.n}",
        )
    )
    if not magnitude or bad:
        return
    removed = a.masked_fill(keep, -1.0).amax(1)
    smallest_kept = a.masked_fill(~keep, float("inf")).amin(1)
    wrong = int((removed > smallest_kept).sum())
    report.add(
        Row(
            at,
            "magnitude",
            wrong == 0,
            value=float(wrong),
            bound=0.0,
            detail="" if wrong == 0 else f"{wrong} blocks remove a larger |w| than they keep",
        )
    )


def _check_count(
    report: Report, where: str, weights, masks, s: float, pattern: Unstructured, counted: list[Counted]
) -> None:
    """The pattern's count of weights removed, over all weights (global) or per matrix."""
    if pattern.scope is Scope.GLOBAL:
        n = sum(w.numel() for w in weights.values())
        got = sum(int((~m).sum()) for m in masks.values())
        counted.append((report.add(count_row(where, got, n, s, pattern.counting)), s))
        return
    for name, w in weights.items():
        row = count_row(f"{where}, {name}", int((~masks[name]).sum()), w.numel(), s, pattern.counting)
        counted.append((report.add(row), s))


def _check_magnitude(report: Report, where: str, weights, masks, scope: Scope) -> None:
    if scope is Scope.GLOBAL:
        groups = {
            "all weights": (
                torch.cat([w.reshape(-1) for w in weights.values()]),
                torch.cat([m.reshape(-1) for m in masks.values()]),
            )
        }
    else:
        groups = {n: (w.reshape(-1), masks[n].reshape(-1)) for n, w in weights.items()}
    for group, (w, keep) in groups.items():
        a = w.abs()
        if keep.all() or not keep.any():
            report.add(Row(f"{where}, {group}", "magnitude", True))
            continue
        removed, kept = float(a[~keep].max()), float(a[keep].min())
        ok = removed <= kept
        report.add(
            Row(
                f"{where}, {group}",
                "magnitude",
                ok,
                value=removed,
                bound=kept,
                detail="" if ok else f"removed |w| {removed:.4g} > kept |w| {kept:.4g}",
            )
        )
