"""One call that runs the speculative checks on a rule, for a user's own
test suite (:func:`assert_rule`) and for ``aftertrain check rule``
(:func:`rule_reports`). Importable without pytest."""

from __future__ import annotations

from collections.abc import Callable

import torch

from aftertrain.checks import speculative as CS
from aftertrain.checks.report import Report

__all__ = ["assert_rule", "rule_reports"]


def rule_reports(rule: Callable, *, exact: bool = False, sequential: bool = False,
                 dtype: torch.dtype = torch.float64, n: int = CS.DEFAULT_N, seed: int = 0,
                 progress: Callable[[str], None] | None = None) -> list[Report]:
    """The reports of the checks that apply to ``rule``.

    ``rule`` follows the batched protocol ``rule(p, q, drafts)`` (one round
    per call ``rule(p (k+1, V), q (k, V), drafts (k,))`` with
    ``sequential``): :func:`check_rule` at ``dtype``. With ``exact`` it is
    written as a function of its uniforms, ``rule(p, q, drafts, u, v)``:
    :func:`check_rule_exact` at ``dtype``, then :func:`check_rule` with its
    uniforms drawn (float64, float32 for a lower ``dtype``) by
    :func:`drawing_uniforms`.
    """
    if not callable(rule):
        raise ValueError(f"rule must be callable, got {type(rule).__name__}")
    batched = CS.sequential(rule) if sequential else rule
    if not exact:
        return [CS.check_rule(batched, n=n, seed=seed, dtype=dtype, progress=progress)]
    uniforms = torch.promote_types(dtype, torch.float32)
    return [CS.check_rule_exact(batched, seed=seed, dtype=dtype, progress=progress),
            CS.check_rule(CS.drawing_uniforms(batched, dtype=uniforms), n=n, seed=seed,
                          dtype=dtype, progress=progress)]


def assert_rule(rule: Callable, *, exact: bool = False, sequential: bool = False,
                dtype: torch.dtype = torch.float64, n: int = CS.DEFAULT_N, seed: int = 0) -> None:
    """Raise AssertionError listing every failure line of :func:`rule_reports`
    (one line per failure, each report's verdict first); return None when
    ``rule`` passes them all. False-alarm rate: at most ``2 * alpha`` =
    2e-6 with ``exact`` (the exact probes add none), 1e-6 without."""
    failed = [str(r) for r in rule_reports(rule, exact=exact, sequential=sequential, dtype=dtype,
                                           n=n, seed=seed) if not r.passed]
    if failed:
        raise AssertionError("\n".join(failed))
