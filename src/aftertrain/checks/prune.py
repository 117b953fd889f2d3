"""Check an unstructured pruner against part 8's rules.

The protocol. ``prune(weights, sparsity) -> masks`` takes ``weights``, a dict
``{name: float32 tensor}`` (any shapes, finite), and ``sparsity`` in
``[0, 1]``; it returns ``{name: bool tensor of the weight's shape}``, ``True``
where the weight is kept, one entry per weight. It must not modify
``weights``. The pruner claims a :class:`Scope`:

* ``Scope.GLOBAL``: removes ``round(sparsity * N)`` weights over all ``N``
  together, the smallest ``|w|`` first (one threshold for every matrix);
* ``Scope.PER_LAYER``: removes ``round(sparsity * n_i)`` from every matrix
  ``i``, the smallest ``|w|`` of that matrix first.

``round`` is Python's (half to even, on the float64 product): at ``n = 5``,
sparsity 0.5 removes 2 and 0.3 removes 2; this is how ``torch.nn.utils.prune``
counts too. With ``magnitude=False`` (a random pruner) only the counts,
shapes and (if claimed) nesting are checked.

The guarantees checked, per case of the battery and sparsity:

* ``output``: no exception, one bool mask per weight, of its shape; the
  input left unmodified;
* ``count``: exactly the rounded count removed (globally or per matrix);
* ``magnitude``: no removed ``|w|`` exceeds a kept ``|w|`` (over all weights
  for global, within each matrix per layer);
* ``nested`` (``nested=True``): the weights removed at a smaller sparsity are
  among those removed at a larger one (ties included).
"""

from __future__ import annotations

import enum
import numbers
from collections.abc import Callable, Iterable, Mapping

import torch

from aftertrain.checks.report import Report, Row

Masks = dict[str, torch.Tensor]
Pruner = Callable[[dict[str, torch.Tensor], float], Masks]

#: Sparsities of the default run: the article's and ones where ``s * n`` is
#: an exact half for the battery's sizes (0.1, 0.3, 0.5 and 0.7 of 5 and 15
#: weights; 0.25 of 10 and 6).
DEFAULT_SPARSITIES = (0.0, 0.05, 0.1, 0.25, 0.3, 0.5, 0.7, 0.9, 1.0)


class Scope(enum.Enum):
    """Over what the pruner's count and threshold run."""

    GLOBAL = "global"
    PER_LAYER = "per-layer"


def battery(seed: int = 0) -> dict[str, dict[str, torch.Tensor]]:
    """The default cases: dicts of float32 weights, deterministic in ``seed``.

    Distinct Gaussian matrices of three sizes; heavy ties (values -2, 0, 2);
    two matrices on scales 1 and 100 (global takes the small one first,
    per-layer half of each); large negative weights (a signed ranking takes
    them first); odd sizes 5, 15, 6 and 10 (exact halves); a single weight.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an int in [0, 2**64), got {seed!r}")
    g = torch.Generator().manual_seed(seed)
    ties = torch.tensor([-2.0, 0.0, 2.0])
    return {
        "gaussian": {"a": torch.randn(8, 16, generator=g), "b": torch.randn(4, 4, generator=g),
                     "c": torch.randn(3, 7, generator=g)},
        "heavy ties": {"a": ties[torch.randint(0, 3, (4, 8), generator=g)],
                       "b": ties[torch.randint(0, 3, (5, 3), generator=g)]},
        "two scales": {"small": torch.rand(4, 8, generator=g) + 0.5,
                       "large": 100 * (torch.rand(4, 8, generator=g) + 0.5)},
        "negative extremes": {"a": torch.tensor([[-3.0, 1.0, 2.0, -0.5], [-6.0, 0.25, 5.0, 4.0]])},
        "odd sizes": {"five": torch.randn(1, 5, generator=g),
                      "fifteen": torch.randn(3, 5, generator=g),
                      "six": torch.randn(2, 3, generator=g), "ten": torch.randn(2, 5, generator=g)},
        "single weight": {"w": torch.tensor([[0.5]])},
    }


def _call(prune: Pruner, weights: Mapping[str, torch.Tensor], s: float):
    copies = {n: w.clone() for n, w in weights.items()}
    try:
        masks = prune(copies, s)
    except Exception as e:  # any exception is a finding
        return None, f"raised {type(e).__name__}: {e}"
    if any(not torch.equal(copies[n].view(-1), weights[n].view(-1)) for n in weights):
        return None, "modified the weights it was given"
    if not isinstance(masks, Mapping) or set(masks) != set(weights):
        got = sorted(masks) if isinstance(masks, Mapping) else masks
        return None, f"returned masks for {got}, not for {sorted(weights)}"
    for n, w in weights.items():
        m = masks[n]
        if not isinstance(m, torch.Tensor) or m.dtype != torch.bool or m.shape != w.shape:
            return None, (f"mask {n!r} must be a bool tensor of shape {tuple(w.shape)}, got "
                          f"{getattr(m, 'dtype', type(m).__name__)} "
                          f"{tuple(getattr(m, 'shape', ()))}")
    return {n: masks[n] for n in weights}, None


def check_pruner(
    prune: Pruner,
    *,
    scope: Scope,
    magnitude: bool = True,
    nested: bool = True,
    sparsities: Iterable[float] = DEFAULT_SPARSITIES,
    cases: Mapping[str, Mapping[str, torch.Tensor]] | None = None,
    seed: int = 0,
    name: str | None = None,
) -> Report:
    """Run the battery (or ``cases``) through ``prune`` at every sparsity and
    check every guarantee of the module docstring; a :class:`Report`.

    Args:
        prune: the pruner, protocol in the module docstring.
        scope: what the pruner claims to be, :class:`Scope`.
        magnitude: whether it claims to remove the smallest ``|w|`` first.
        nested: whether it claims nested masks across sparsities.
        sparsities: the sparsities to run, each in ``[0, 1]``.
        cases: ``{case: {name: tensor}}`` replacing the default :func:`battery`.
        seed: seed of the default battery.
        name: the subject named in the report.
    """
    if not callable(prune):
        raise ValueError(f"prune must be a callable (weights, sparsity) -> masks, got {prune!r}")
    if not isinstance(scope, Scope):
        raise ValueError(f"scope must be a Scope ({[s.name for s in Scope]}), got {scope!r}")
    for flag, value in (("magnitude", magnitude), ("nested", nested)):
        if not isinstance(value, bool):
            raise ValueError(f"{flag} must be a bool, got {value!r}")
    try:
        sparsities = sorted(sparsities)
    except TypeError:
        raise ValueError(f"sparsities must be a non-empty list of numbers in [0, 1], "
                         f"got {sparsities!r}") from None
    if not isinstance(sparsities, list) or not sparsities or not all(
            isinstance(s, numbers.Real) and not isinstance(s, bool) and 0 <= s <= 1
            for s in sparsities):
        raise ValueError(f"sparsities must be a non-empty list of numbers in [0, 1], "
                         f"got {sparsities!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an int in [0, 2**64), got {seed!r}")
    if cases is not None:
        if not isinstance(cases, Mapping) or not cases:
            raise ValueError("cases must be a non-empty dict of case -> {name: tensor}")
        for case, weights in cases.items():
            if (not isinstance(weights, Mapping) or not weights or not all(
                    isinstance(w, torch.Tensor) and w.is_floating_point() and w.numel() > 0
                    and not bool(torch.isnan(w).any()) for w in weights.values())):
                raise ValueError(f"cases: {case!r} must be a non-empty dict of non-empty "
                                 f"floating-point tensors without NaN")
    report = Report(name or getattr(prune, "__name__", repr(prune)))
    for case, weights in (battery(seed) if cases is None else cases).items():
        previous = None
        for s in sparsities:
            where = f"{case}, sparsity {s}"
            masks, error = _call(prune, weights, s)
            report.add(Row(where, "output", error is None, detail=error or ""))
            if masks is None:
                previous = None
                continue
            _check_count(report, where, weights, masks, s, scope)
            if magnitude:
                _check_magnitude(report, where, weights, masks, scope)
            if nested and previous is not None:
                s0, m0 = previous
                bad = sum(int((~m0[n] & masks[n]).sum()) for n in weights)
                report.add(Row(where, "nested", bad == 0, value=float(bad), bound=0.0,
                               detail="" if bad == 0 else f"{bad} weights removed at sparsity "
                                                          f"{s0} are kept at {s}"))
            previous = (s, masks)
    return report


def _check_count(report: Report, where: str, weights, masks, s: float, scope: Scope) -> None:
    if scope is Scope.GLOBAL:
        n = sum(w.numel() for w in weights.values())
        got = sum(int((~m).sum()) for m in masks.values())
        want = round(s * n)
        report.add(Row(where, "count", got == want, value=float(got), bound=float(want), n=n,
                       detail="" if got == want else f"removed {got} of {n}, "
                                                     f"round({s} * {n}) = {want}"))
        return
    for name, w in weights.items():
        got, want = int((~masks[name]).sum()), round(s * w.numel())
        report.add(Row(f"{where}, {name}", "count", got == want, value=float(got),
                       bound=float(want), n=w.numel(),
                       detail="" if got == want else f"removed {got} of {w.numel()}, "
                                                     f"round({s} * {w.numel()}) = {want}"))


def _check_magnitude(report: Report, where: str, weights, masks, scope: Scope) -> None:
    if scope is Scope.GLOBAL:
        groups = {"all weights": (torch.cat([w.reshape(-1) for w in weights.values()]),
                                  torch.cat([m.reshape(-1) for m in masks.values()]))}
    else:
        groups = {n: (w.reshape(-1), masks[n].reshape(-1)) for n, w in weights.items()}
    for group, (w, keep) in groups.items():
        a = w.abs()
        if keep.all() or not keep.any():
            report.add(Row(f"{where}, {group}", "magnitude", True))
            continue
        removed, kept = float(a[~keep].max()), float(a[keep].min())
        ok = removed <= kept
        report.add(Row(f"{where}, {group}", "magnitude", ok, value=removed, bound=kept,
                       detail="" if ok else f"removed |w| {removed:.4g} > kept |w| {kept:.4g}"))
