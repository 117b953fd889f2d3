"""Check a pruner against the sparsity pattern it claims (part 8's rules, 2:4, rows).

The protocol. ``prune(weights, sparsity) -> masks`` takes ``weights``, a dict
``{name: float32 tensor}`` (finite; 2-D for the structured patterns), and
``sparsity`` in ``[0, 1]`` (for :class:`NM` always ``1 - n/m``); it returns
``{name: bool tensor of the weight's shape}``, ``True`` where the weight is
kept, one entry per weight. It must not modify ``weights``. The pruner
claims a pattern of :mod:`aftertrain.checks.patterns`: ``Unstructured(scope)``,
``Structured(dim, norm)`` or ``NM(n, m)``.

The count is the pattern's (:class:`~aftertrain.checks.patterns.Counting`):
by default Python's ``round`` (half to even, on the float64 product: at
``n = 5``, sparsity 0.5 removes 2 and 0.3 removes 2; this is how
``torch.nn.utils.prune`` counts too), or the declared ``rounding`` and
``keep_at_least`` (torch-pruning's: ``Structured(0, 2,
rounding=Rounding.KEPT_TRUNCATED, keep_at_least=1)``). Undeclared, the count
rows another convention explains are mismatches naming it
(:mod:`aftertrain.checks.prune_counts`). With ``magnitude=False`` (a random
pruner) only what the pattern fixes is checked: counts, shapes, the
structure; nesting only if asked.

The guarantees checked, per case of the battery and sparsity:

* ``output``: no exception (its line names its type, message and the
  innermost frame of the user's code), one bool mask per weight, of its
  shape; the input left unmodified (an N:M pruner may refuse rows that are not whole
  blocks of ``m``, undefined for the pattern, with an exception it raises to
  refuse, :mod:`aftertrain.checks.refusals`: a passed ``refused`` row,
  "refused (ValueError: ...)"; a crash in its computation, or any exception
  on an input the pattern defines, fails);
* ``structure``: Structured: every slice along ``dim`` kept or removed whole;
* ``count``: exactly the pattern's count removed (globally, per matrix, in
  slices per matrix); NM: exactly ``n`` kept in every block of ``m``;
* ``magnitude``: no removed ``|w|`` exceeds a kept ``|w|`` (over all weights
  for global, within each matrix per layer, within each block for NM); no
  removed slice's norm exceeds a kept one's (Structured, up to the float32
  rounding of a norm, ``cols * 2**-24`` relative);
* ``nested`` (default: as ``magnitude``; not NM, whose sparsity is fixed):
  the weights removed at a smaller sparsity are among those removed at a
  larger one (ties included).

This module calls the pruner and checks its output's form; the guarantees
on the masks are :mod:`aftertrain.checks.prune_guarantees`.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Mapping

import torch

from aftertrain.checks.patterns import NM, Pattern, Rounding, Scope, Structured, Unstructured
from aftertrain.checks.prune_battery import battery, nm_battery, structured_battery
from aftertrain.checks.prune_counts import Counted, name_fitting_count
from aftertrain.checks.prune_guarantees import check_masks, check_nested
from aftertrain.checks.refusals import is_refusal, refused_row
from aftertrain.checks.report import Report, Row
from aftertrain.checks.rule_battery import describe_exception
from aftertrain.core.validation import check_seed

#: The kit's one import place: ``from aftertrain.checks.prune import NM,
#: Rounding, Scope, Structured, Unstructured, check_pruner, assert_pruner``
#: (the batteries, from :mod:`aftertrain.checks.prune_battery`, re-exported).
__all__ = [
    "NM",
    "Pattern",
    "Report",
    "Rounding",
    "Row",
    "Scope",
    "Structured",
    "Unstructured",
    "assert_pruner",
    "battery",
    "check_pruner",
    "nm_battery",
    "structured_battery",
]

Masks = dict[str, torch.Tensor]
Pruner = Callable[[dict[str, torch.Tensor], float], Masks]

#: Sparsities of the default run: the article's and ones where ``s * n`` is
#: an exact half for the battery's sizes (0.1, 0.3, 0.5 and 0.7 of 5 and 15
#: weights; 0.25 of 10 and 6).
DEFAULT_SPARSITIES = (0.0, 0.05, 0.1, 0.25, 0.3, 0.5, 0.7, 0.9, 1.0)


def _call(prune: Pruner, weights: Mapping[str, torch.Tensor], s: float):
    """(masks, None), (None, error line) or (None, the exception raised)."""
    copies = {n: w.clone() for n, w in weights.items()}
    try:
        masks = prune(copies, s)
    except Exception as e:  # a refusal where the pattern allows one, else a finding
        return None, e
    if any(not torch.equal(copies[n].view(-1), weights[n].view(-1)) for n in weights):
        return None, "modified the weights it was given"
    if not isinstance(masks, Mapping) or set(masks) != set(weights):
        got = sorted(masks) if isinstance(masks, Mapping) else masks
        return None, f"returned masks for {got}, not for {sorted(weights)}"
    for n, w in weights.items():
        m = masks[n]
        if not isinstance(m, torch.Tensor) or m.dtype != torch.bool or m.shape != w.shape:
            return None, (
                f"mask {n!r} must be a bool tensor of shape {tuple(w.shape)}, got "
                f"{getattr(m, 'dtype', type(m).__name__)} "
                f"{tuple(getattr(m, 'shape', ()))}"
            )
    return {n: masks[n] for n in weights}, None


def check_pruner(
    prune: Pruner,
    *,
    pattern: Pattern | None = None,
    scope: Scope | None = None,
    magnitude: bool = True,
    nested: bool | None = None,
    sparsities: Iterable[float] | None = None,
    cases: Mapping[str, Mapping[str, torch.Tensor]] | None = None,
    seed: int = 0,
    name: str | None = None,
) -> Report:
    """Run the battery (or ``cases``) through ``prune`` at every sparsity and
    check every guarantee of the module docstring; a :class:`Report`.

    Args:
        prune: the pruner, protocol in the module docstring.
        pattern: what the pruner claims: :class:`Unstructured`,
            :class:`Structured` or :class:`NM`.
        scope: shorthand for ``pattern=Unstructured(scope)``.
        magnitude: whether it claims to remove the smallest first.
        nested: whether it claims nested masks across sparsities (default:
            ``magnitude``; never for NM).
        sparsities: the sparsities to run, each in ``[0, 1]`` (default
            :data:`DEFAULT_SPARSITIES`; NM runs its own ``1 - n/m`` only).
        cases: ``{case: {name: tensor}}`` replacing the default battery.
        seed: seed of the default battery.
        name: the subject named in the report.
    """
    if not callable(prune):
        raise ValueError(f"prune must be a callable (weights, sparsity) -> masks, got {prune!r}")
    pattern = _pattern(pattern, scope)
    nested = magnitude if nested is None else nested
    for flag, value in (("magnitude", magnitude), ("nested", nested)):
        if not isinstance(value, bool):
            raise ValueError(f"{flag} must be a bool, got {value!r}")
    sparsities = _sparsities(pattern, sparsities)
    check_seed(seed)
    if cases is not None:
        _check_cases(cases, pattern)
    else:
        cases = (
            nm_battery(pattern, seed)
            if isinstance(pattern, NM)
            else structured_battery(seed)
            if isinstance(pattern, Structured)
            else battery(seed)
        )
    report = Report(name or getattr(prune, "__name__", repr(prune)))
    counted: list[Counted] = []
    for case, weights in cases.items():
        _check_case(report, prune, case, weights, sparsities, pattern, magnitude, nested, counted)
    return report if isinstance(pattern, NM) else name_fitting_count(report, pattern, counted)


def _check_case(
    report: Report,
    prune: Pruner,
    case: str,
    weights,
    sparsities: list[float],
    pattern: Pattern,
    magnitude: bool,
    nested: bool,
    counted: list[Counted],
) -> None:
    """Every row of one case, sparsity by sparsity (nesting against the
    previous one); its count rows appended to ``counted``."""
    previous = None
    for s in sparsities:
        where = f"{case}, sparsity {s}"
        masks, error = _call(prune, weights, s)
        if isinstance(error, Exception) and _refusable(pattern, weights) and is_refusal(error):
            report.add(refused_row(where, error))
            return
        if isinstance(error, Exception):  # its type, message and the line of the user's code
            error = f"raised {describe_exception(error)}"
        report.add(Row(where, "output", error is None, detail=error or ""))
        if masks is None:
            previous = None
            continue
        check_masks(report, where, weights, masks, s, pattern, magnitude, counted)
        if nested and previous is not None and not isinstance(pattern, NM):
            check_nested(report, where, weights, masks, s, previous)
        previous = (s, masks)


def _pattern(pattern, scope) -> Pattern:
    if (pattern is None) == (scope is None):
        raise ValueError(f"pass exactly one of pattern and scope, got pattern={pattern!r}, scope={scope!r}")
    if pattern is None:
        return Unstructured(scope)
    if not isinstance(pattern, Unstructured | Structured | NM):
        raise ValueError(
            f"pattern must be Unstructured(scope), Structured(dim, norm) or NM(n, m), got {pattern!r}"
        )
    return pattern


def _sparsities(pattern: Pattern, sparsities) -> list[float]:
    if isinstance(pattern, NM):
        if sparsities is not None:
            raise ValueError(
                f"sparsities must be left out for {pattern}: its sparsity is 1 - n/m = {pattern.sparsity}"
            )
        return [pattern.sparsity]
    try:
        sparsities = sorted(DEFAULT_SPARSITIES if sparsities is None else sparsities)
    except TypeError:
        raise ValueError(
            f"sparsities must be a non-empty list of numbers in [0, 1], got {sparsities!r}"
        ) from None
    if not sparsities or not all(
        isinstance(s, numbers.Real) and not isinstance(s, bool) and 0 <= s <= 1 for s in sparsities
    ):
        raise ValueError(f"sparsities must be a non-empty list of numbers in [0, 1], got {sparsities!r}")
    return sparsities


def _check_cases(cases, pattern: Pattern) -> None:
    if not isinstance(cases, Mapping) or not cases:
        raise ValueError("cases must be a non-empty dict of case -> {name: tensor}")
    two_d = not isinstance(pattern, Unstructured)
    for case, weights in cases.items():
        if (
            not isinstance(weights, Mapping)
            or not weights
            or not all(
                isinstance(w, torch.Tensor)
                and w.is_floating_point()
                and w.numel() > 0
                and not bool(torch.isnan(w).any())
                and (w.dim() == 2 or not two_d)
                for w in weights.values()
            )
        ):
            raise ValueError(
                f"cases: {case!r} must be a non-empty dict of non-empty "
                f"floating-point tensors without NaN" + (f" (2-D for {pattern})" if two_d else "")
            )


def _refusable(pattern: Pattern, weights) -> bool:
    """A 2:4 pruner may refuse rows that are not whole blocks."""
    return isinstance(pattern, NM) and any(w.shape[-1] % pattern.m for w in weights.values())


def assert_pruner(prune: Pruner, **kwargs) -> None:
    """:func:`check_pruner` with the same arguments (``pattern=...``),
    raising AssertionError with the report (its verdict first, one line per
    failure) when it fails; None when it passes."""
    check_pruner(prune, **kwargs).raise_for_failures()
