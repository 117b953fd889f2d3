"""One call per kit for a user's own test suite: :func:`assert_rule` (the
speculative checks on a rule; :func:`rule_reports` is what ``aftertrain
check rule`` runs), :func:`assert_quantizer` and :func:`assert_pruner`
(defined beside their checks, re-exported here). Importable without pytest."""

from __future__ import annotations

from collections.abc import Callable

import torch

from aftertrain.checks import speculative as CS
from aftertrain.checks.prune import assert_pruner
from aftertrain.checks.quant import assert_quantizer
from aftertrain.checks.report import Report

__all__ = ["assert_pruner", "assert_quantizer", "assert_rule", "rule_reports"]


def rule_reports(rule: Callable, *, exact: bool = False, sequential: bool = False,
                 dtype: torch.dtype = torch.float64, n: int = CS.DEFAULT_N, seed: int = 0,
                 uniforms: torch.dtype | None = None,
                 progress: Callable[[str], None] | None = None) -> list[Report]:
    """The reports of the checks that apply to ``rule``.

    ``rule`` follows the batched protocol ``rule(p, q, drafts)`` (one round
    per call ``rule(p (k+1, V), q (k, V), drafts (k,))`` with
    ``sequential``): :func:`check_rule` at ``dtype``. With ``exact`` it is
    written as a function of its uniforms, ``rule(p, q, drafts, u, v)``:
    :func:`check_rule_exact` at ``dtype`` (its verdict is the same at every
    seed), then :func:`check_rule` with its uniforms drawn by
    :func:`drawing_uniforms` in ``uniforms``: by default ``dtype``, as the
    rule's own ``torch.rand_like(p)`` draws them (bfloat16 uniforms are 0
    with probability ~2e-3); a sampler that draws float32 uniforms for
    bfloat16 probabilities passes ``uniforms=torch.float32``.
    """
    if not callable(rule):
        raise ValueError(f"rule must be callable, got {type(rule).__name__}")
    if uniforms is not None and not exact:
        raise ValueError("uniforms applies only with exact=True (without it the rule draws "
                         "its own)")
    batched = CS.sequential(rule) if sequential else rule
    if not exact:
        return [CS.check_rule(batched, n=n, seed=seed, dtype=dtype, progress=progress)]
    uniforms = dtype if uniforms is None else uniforms
    return [CS.check_rule_exact(batched, dtype=dtype, progress=progress),
            CS.check_rule(CS.drawing_uniforms(batched, dtype=uniforms), n=n, seed=seed,
                          dtype=dtype, progress=progress)]


def assert_rule(rule: Callable, *, exact: bool = False, sequential: bool = False,
                dtype: torch.dtype = torch.float64, n: int = CS.DEFAULT_N, seed: int = 0,
                uniforms: torch.dtype | None = None) -> None:
    """Raise AssertionError listing every failure line of :func:`rule_reports`
    (one line per failure, each report's verdict first); return None when
    ``rule`` passes them all. False-alarm rate: at most ``2 * alpha`` =
    2e-6 with ``exact`` (the exact probes add none), 1e-6 without."""
    failed = [str(r) for r in rule_reports(rule, exact=exact, sequential=sequential, dtype=dtype,
                                           n=n, seed=seed, uniforms=uniforms) if not r.passed]
    if failed:
        raise AssertionError("\n".join(failed))
