"""Conformance checks for speculative sampling (docs/checks.md).

Three entry points, each returning a :class:`aftertrain.checks.report.Report`:

- :func:`check_rule`: a batched verification rule, run many times on a
  battery of fixed cases; judges the law of every emitted character
  (chi-square, TV), the acceptance rate, support and outputs.
- :func:`check_rule_exact`: the same rule written as a function of its
  uniforms, driven with forced uniforms at the edges no sample reaches.
- :func:`check_generator`: a whole decoding loop on toy models, judged on
  the joint law of its first tokens and on greedy decoding.

The rule protocol (batched, N independent rounds, k drafts, vocabulary V)::

    rule(p, q, drafts) -> (accepted, token)

``p`` float64 (N, k+1, V): the target's distributions at the k drafted
positions and at the bonus position; ``q`` float64 (N, k, V): the draft's
distributions; ``drafts`` int64 (N, k), ``drafts[:, i]`` drawn from
``q[:, i]``. Returns int64 ``accepted`` (N,), the number of leading drafts
accepted (0..k), and int64 ``token`` (N,), the token drawn after the first
rejection, or the bonus token when all k were accepted. The rule draws its
randomness from torch's global generator; the kit seeds it inside
``torch.random.fork_rng``, so the caller's global state is left as it was.
:func:`sequential` wraps a rule that handles one round at a time.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence

import numpy as np
import torch

from aftertrain.checks import _battery
from aftertrain.checks._battery import FIXED_P, FIXED_Q, Case  # noqa: F401 (re-exported)
from aftertrain.checks._exact import check_rule_exact
from aftertrain.checks._generator import ToyTable, check_generator, toy_models
from aftertrain.checks.report import Report, Row
from aftertrain.stats import ALPHA

__all__ = [
    "DEFAULT_N",
    "ToyTable",
    "check_generator",
    "check_rule",
    "check_rule_exact",
    "drawing_uniforms",
    "sequential",
    "toy_models",
]

#: Rounds per case of the default battery: chi-square sees a TV bias of
#: ~0.03 at this size (aftertrain.stats, measured power) and the battery
#: runs in about a second on one core.
DEFAULT_N = 20_000

Rule = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], tuple]


def _check_common(n, alpha, seed, *, n_min: int = 1) -> None:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < n_min:
        raise ValueError(f"n must be an int >= {n_min}, got {n!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an int in [0, 2**64), got {seed!r}")


def _as_cases(cases) -> list[Case]:
    out = []
    if isinstance(cases, (str, bytes)) or not isinstance(cases, Sequence) or not cases:
        raise ValueError("cases must be a non-empty sequence of (name, p, q)")
    for i, item in enumerate(cases):
        if isinstance(item, Case):
            item = (item.name, item.p, item.q)
        if not isinstance(item, tuple) or len(item) != 3:
            raise ValueError(f"cases[{i}] must be a tuple (name, p, q)")
        name, p, q = item
        p = torch.as_tensor(np.asarray(p, dtype=np.float64))
        q = torch.as_tensor(np.asarray(q, dtype=np.float64))
        if p.dim() != 2 or q.dim() != 2 or q.shape[0] < 1 or p.shape != (q.shape[0] + 1, q.shape[1]):
            raise ValueError(f"cases[{i}] must have p of shape (k+1, V) and q of shape (k, V), "
                             f"k >= 1; got p {tuple(p.shape)}, q {tuple(q.shape)}")
        for label, x in (("p", p), ("q", q)):
            if not bool(torch.isfinite(x).all()) or bool((x < 0).any()) \
                    or float((x.sum(-1) - 1).abs().max()) > 1e-6:
                raise ValueError(f"cases[{i}] {label}: every row must be finite, >= 0 and "
                                 f"sum to 1 within 1e-6")
        out.append(Case(str(name), p, q))
    return out


def check_rule(rule: Rule, *, n: int = DEFAULT_N, alpha: float = ALPHA, seed: int = 0,
               cases=None, name: str | None = None) -> Report:
    """Run ``rule`` (the batched protocol, module docstring) ``n`` times on
    every case of the battery and judge it.

    Per case and per position ``j`` (the k drafted positions and the bonus),
    over the rounds that reached ``j``, the emitted token (the draft if
    accepted, else the rule's token) must:

    - lie in the support of ``p_j`` (exact: a token with p = 0 fails);
    - follow ``p_j``: Pearson chi-square, cells expecting fewer than 5
      pooled (:func:`aftertrain.stats.chisquare_gof`);
    - have an empirical TV from ``p_j`` under the bound of as many direct
      draws from ``p_j`` (:func:`aftertrain.stats.tv_threshold`);

    and at each drafted position the acceptance rate must be the exact
    ``sum_x min(p_j(x), q_j(x))`` (binomial test; exact count when that rate
    is 0 or 1). The outputs must be int64 tensors of shape (n,) in range
    (accepted in [0, k], token in [0, V)); a float output (and so any NaN)
    fails. An exception raised by the rule is a failure line of the case,
    not a crash of the kit.

    Error rate: the battery's false-alarm probability for a correct rule is
    at most ``alpha``: every statistical test runs at ``alpha / m``, ``m``
    the number of tests (Bonferroni; ``m`` = 83 for the default battery, so
    each test runs at 1.2e-8 with the default alpha = 1e-6). The support,
    output and exact-acceptance checks cannot fail for a correct rule.

    Args:
        rule: ``rule(p, q, drafts) -> (accepted, token)``.
        n: rounds per case, >= 100.
        alpha: the battery's false-alarm rate, in (0, 1).
        seed: seeds the random cases, the drafts and torch's global
            generator for the rule (restored afterwards), >= 0.
        cases: optional sequence of ``(name, p (k+1, V), q (k, V))`` to run
            instead of the default battery (:func:`_battery.battery`).
        name: the subject line of the report.
    """
    if not callable(rule):
        raise ValueError(f"rule must be callable, got {type(rule).__name__}")
    _check_common(n, alpha, seed, n_min=100)
    battery = _battery.battery(seed) if cases is None else _as_cases(cases)
    per_test = _battery.bonferroni(alpha, _battery.n_tests(battery))
    report = Report(name or f"check_rule({getattr(rule, '__name__', type(rule).__name__)}, n={n}, "
                            f"alpha={alpha:g}, seed={seed})")
    # Independent streams for the kit's drafts and the rule's global draws
    # (the same seed for both would hand the rule the drafts' own uniforms).
    draft_seed, rule_seed = (int(s) for s in np.random.SeedSequence([seed, 0x5bec]).generate_state(2))
    g = torch.Generator().manual_seed(draft_seed)
    for i, case in enumerate(battery):
        drafts = _battery.draw_drafts(case.q, n, g)
        P = case.p.expand(n, -1, -1).contiguous()
        Q = case.q.expand(n, -1, -1).contiguous()
        try:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(rule_seed + i)
                out = rule(P, Q, drafts.clone())
        except Exception as exc:  # the rule's failure is a finding, not the kit's
            report.add(Row(case.name, "no exception", False, n=n,
                           detail=f"the rule raised {_battery.describe_exception(exc)}"))
            continue
        out = _battery.check_outputs(case, n, out, report)
        if out is not None:
            _battery.judge_case(case, drafts, out[0], out[1], per_test, seed * 1000 + 17 * i,
                                report)
    return report


def sequential(rule_one: Callable) -> Callable:
    """The batched protocol from a rule that handles one round at a time.

    ``rule_one(p (k+1, V), q (k, V), drafts (k,), *extra) -> (accepted, token)``
    (Python ints or 0-d tensors) is called on each row; ``*extra`` are any
    further per-row arguments (``u`` (k,) and ``v`` () for
    :func:`check_rule_exact`). Returns ``rule(p, q, drafts, *extra)`` giving
    int64 (N,) tensors.
    """
    if not callable(rule_one):
        raise ValueError(f"rule_one must be callable, got {type(rule_one).__name__}")

    def batched(p, q, drafts, *extra):
        N = drafts.shape[0]
        accepted = torch.empty(N, dtype=torch.int64)
        token = torch.empty(N, dtype=torch.int64)
        for i in range(N):
            a, t = rule_one(p[i], q[i], drafts[i], *(x[i] for x in extra))
            accepted[i], token[i] = int(a), int(t)
        return accepted, token

    batched.__name__ = f"sequential({getattr(rule_one, '__name__', 'rule')})"
    return batched


def drawing_uniforms(rule_with_uniforms: Callable) -> Callable:
    """The batched protocol from a rule written as a function of its uniforms,
    ``rule(p, q, drafts, u, v)`` (:func:`check_rule_exact`): ``u`` is drawn
    as ``torch.rand(N, k, dtype=float64)``, then ``v`` as ``torch.rand(N,
    dtype=float64)``, from torch's global generator."""
    if not callable(rule_with_uniforms):
        raise ValueError(f"rule_with_uniforms must be callable, "
                         f"got {type(rule_with_uniforms).__name__}")

    def rule(p, q, drafts):
        N, k = drafts.shape
        u = torch.rand(N, k, dtype=torch.float64)
        v = torch.rand(N, dtype=torch.float64)
        return rule_with_uniforms(p, q, drafts, u, v)

    rule.__name__ = getattr(rule_with_uniforms, "__name__", "rule")
    return rule
