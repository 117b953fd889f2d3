"""Forced-uniform probes of a verification rule (:func:`check_rule_exact`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from aftertrain.checks import _battery
from aftertrain.checks.report import Report, Row

_D = torch.float64


def _t(x, dtype=_D):
    return torch.tensor(x, dtype=dtype)


def _float32_up_case() -> tuple[list, list, int]:
    """p (3, 8) Dirichlet and q (2, 8) with q_0 = p_0 rounded to float32
    upwards (p_0 <= q_0 everywhere, sum(q_0) - 1 <= 1e-6) and q_1 = p_1; the
    draft is the cell where q_0 exceeds p_0 the most (relatively)."""
    rng = np.random.default_rng(2024)
    p = rng.dirichlet(np.ones(8), size=3)
    up = torch.from_numpy(p[0]).float()
    up = torch.where(up.double() < torch.from_numpy(p[0]), torch.nextafter(up, torch.tensor(2.0)), up)
    q0 = up.double().numpy()
    x = int(np.argmax(q0 / p[0]))
    return p.tolist(), [q0.tolist(), p[1].tolist()], x


def _probes() -> list[tuple[str, list, list, list, list, float, Callable[[int, int], bool], str]]:
    """(name, p, q, drafts, u, v, ok(accepted, token), what ok requires)."""
    r = 0.3 / 0.7  # p(0) / q(0) of the second threshold probe
    f32_p, f32_q, f32_x = _float32_up_case()
    f32_support = [i for i, x in enumerate(f32_p[0]) if x > 0]
    probes = [
        ("u = 0 with p(x) = 0 rejects", [[0.0, 1.0], [0.5, 0.5]], [[0.5, 0.5]], [0], [0.0], 0.3,
         lambda a, t: (a, t) == (0, 1), "accepted 0, token 1 (u = 0 is not < p/q = 0)"),
        ("u just below p/q = 0.5 accepts", [[0.25, 0.75], [0.9, 0.1]], [[0.5, 0.5]], [0],
         [0.5 * (1 - 1e-12)], 0.5, lambda a, t: (a, t) == (1, 0),
         "accepted 1, bonus 0 (inverse CDF of [0.9, 0.1] at v = 0.5)"),
        ("u just above p/q = 0.5 rejects", [[0.25, 0.75], [0.9, 0.1]], [[0.5, 0.5]], [0],
         [0.5 * (1 + 1e-12)], 0.0, lambda a, t: (a, t) == (0, 1),
         "accepted 0, token 1 (residual [0, 1])"),
        ("u just below p/q = 3/7 accepts", [[0.3, 0.7], [0.2, 0.8]], [[0.7, 0.3]], [0],
         [r * (1 - 1e-12)], 0.1, lambda a, t: (a, t) == (1, 0),
         "accepted 1, bonus 0 (inverse CDF of [0.2, 0.8] at v = 0.1)"),
        ("u just above p/q = 3/7 rejects", [[0.3, 0.7], [0.2, 0.8]], [[0.7, 0.3]], [0],
         [r * (1 + 1e-12)], 0.1, lambda a, t: (a, t) == (0, 1),
         "accepted 0, token 1 (residual [0, 0.4])"),
        ("bonus drawn from p_{k+1}", [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]],
         [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]], [1, 0], [0.9, 0.9], 0.5,
         lambda a, t: (a, t) == (2, 2), "accepted 2, bonus 2 (p_3 = [0, 0, 1])"),
        ("residual renormalised (v = 0.49)", [[0.8, 0.1, 0.1], [1.0, 0.0, 0.0]], [[1.0, 0.0, 0.0]],
         [0], [0.9], 0.49, lambda a, t: (a, t) == (0, 1),
         "accepted 0, token 1 (residual [0, 0.1, 0.1] renormalised, v = 0.49)"),
        ("residual renormalised (v = 0.51)", [[0.8, 0.1, 0.1], [1.0, 0.0, 0.0]], [[1.0, 0.0, 0.0]],
         [0], [0.9], 0.51, lambda a, t: (a, t) == (0, 2),
         "accepted 0, token 2 (residual [0, 0.1, 0.1] renormalised, v = 0.51)"),
    ]
    for v in (0.0, 0.5, 1 - 1e-12):
        probes.append((f"forced rejection, p <= q everywhere (v = {v:.12g})",
                       [[0.3, 0.7, 0.0], [0.2, 0.3, 0.5]], [[0.3 + 1e-7, 0.7, 0.0]], [0],
                       [1 - 1e-12], v, lambda a, t: a == 0 and t in (0, 1),
                       "accepted 0, a token in p's support {0, 1}, no exception"))
        probes.append((f"draft outside p, zero residual (v = {v:.12g})",
                       [[0.3, 0.7, 0.0], [0.2, 0.3, 0.5]], [[0.3, 0.7, 1e-7]], [2], [0.0], v,
                       lambda a, t: a == 0 and t in (0, 1),
                       "accepted 0, a token in p's support {0, 1}, no exception"))
        probes.append((f"q = p rounded up to float32, forced rejection (v = {v:.12g})",
                       f32_p, f32_q, [f32_x, 0], [1 - 1e-12, 0.5], v,
                       lambda a, t, s=f32_support: a == 0 and t in s,
                       "accepted 0, a token in p's support, no exception"))
    return probes


def _call(rule, case: _battery.Case, n: int, drafts, u, v, report: Report):
    try:
        out = rule(case.p.expand(n, -1, -1).contiguous(), case.q.expand(n, -1, -1).contiguous(),
                   drafts, u, v)
    except Exception as exc:
        report.add(Row(case.name, "no exception", False, n=n,
                       detail=f"the rule raised {_battery.describe_exception(exc)}"))
        return None
    return _battery.check_outputs(case, n, out, report)


def check_rule_exact(rule_with_uniforms: Callable, *, cases: list[_battery.Case] | None = None,
                     seed: int = 3, name: str | None = None) -> Report:
    """Probe a rule written as a function of its uniforms with forced values.

    Protocol: ``rule(p, q, drafts, u, v) -> (accepted, token)``, shapes and
    dtypes as :func:`check_rule`'s plus ``u`` float64 (N, k) and ``v``
    float64 (N,), both in [0, 1):

    - ``u[:, i]`` decides position i: the draft ``x_i`` is accepted iff
      ``u_i < p_i(x_i) / q_i(x_i)`` (strict: a draft with p = 0 is never
      accepted, even at u = 0); ``accepted`` counts the leading acceptances.
    - ``v`` draws the token at position ``a = accepted`` by inverse CDF from
      ``r = max(0, p_a - q_a)`` when ``a < k`` (the residual) or ``r = p_k``
      (the bonus): the first index ``i`` with ``cumsum(r)_i > v * sum(r)``.
      Any rule equal in law may differ at a single u or v of measure zero;
      the probes keep away from those (u 1e-12 relative from p/q), except u
      = 0 with p(x) = 0, where accepting breaks the law's support.

    Probes (each one call, N = 1, plus one batch): u = 0 with p(x) = 0 must
    reject; u just below p/q must accept and just above must reject (two
    ratios); the bonus comes from p_{k+1}; the residual is renormalised
    before the draw; a forced rejection where max(0, p - q) is all zero
    (p <= q everywhere: q = p plus 1e-7 on one cell, q with 1e-7 on a
    token outside p's support, q = p rounded up to float32) must neither
    raise nor emit a token outside p's support; and a batch of 64 rounds
    must equal the 64 rounds run one by one (on the fixed case of the
    battery, or on each of ``cases``: ``(name, p, q)`` as for
    :func:`check_rule`; ``seed`` draws those rounds). These are exact: a
    correct rule never fails them (false-alarm rate 0).
    """
    if not callable(rule_with_uniforms):
        raise ValueError(f"rule_with_uniforms must be callable, "
                         f"got {type(rule_with_uniforms).__name__}")
    from aftertrain.checks.speculative import _as_cases

    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an int in [0, 2**64), got {seed!r}")
    cases = None if cases is None else _as_cases(cases)
    rule = rule_with_uniforms
    report = Report(name or f"check_rule_exact({getattr(rule, '__name__', type(rule).__name__)})")
    for label, p, q, drafts, u, v, ok, want in _probes():
        case = _battery.Case(label, _t(p), _t(q))
        out = _call(rule, case, 1, _t([drafts], torch.int64), _t([u]), _t([v]), report)
        if out is None:
            continue
        a, t = int(out[0][0]), int(out[1][0])
        report.add(Row(label, "forced uniforms", ok(a, t), n=1,
                       detail=f"got accepted {a}, token {t}; must be {want}"))
    # Batches against the same rounds one by one (rows mixed up by broadcasting).
    batch_cases = cases or [_battery.Case("fixed V=4 k=3", torch.from_numpy(_battery.FIXED_P),
                                          torch.from_numpy(_battery.FIXED_Q))]
    g = torch.Generator().manual_seed(seed)
    n = 64
    for case in batch_cases:
        case = _battery.Case(f"batch of {n} equals row by row ({case.name})", case.p, case.q)
        drafts = _battery.draw_drafts(case.q, n, g)
        u = torch.rand(n, case.k, dtype=_D, generator=g)
        v = torch.rand(n, dtype=_D, generator=g)
        out = _call(rule, case, n, drafts, u, v, report)
        if out is None:
            continue
        bad = []
        for i in range(n):
            one = _call(rule, case, 1, drafts[i:i + 1], u[i:i + 1], v[i:i + 1], Report("scratch"))
            if one is None or (int(one[0][0]), int(one[1][0])) != (int(out[0][i]), int(out[1][i])):
                bad.append(i)
        report.add(Row(case.name, "batch consistency", not bad, n=n, value=float(len(bad)),
                       detail=f"rows {bad[:5]} differ from the same rounds run alone"))
    return report
