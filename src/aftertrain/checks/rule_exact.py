"""Forced-uniform probes of a verification rule (:func:`check_rule_exact`):
the single-round probes of :mod:`aftertrain.checks.rule_probes` (where each
is placed, and why its verdict does not depend on rounding), run one call
each, then the batch probes, drawn from a fixed seed (:data:`BATCH_SEED`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from aftertrain.checks import rule_battery
from aftertrain.checks.report import Report, Row
from aftertrain.checks.rule_probes import (  # noqa: F401 (re-exported)
    Probe,
    below_one,
    margin,
    probes,
)

_D = torch.float64


def _call(rule, case: rule_battery.Case, tensors, n: int, report: Report):
    """The rule's outputs on ``tensors`` = (p, q, drafts, u, v), or None
    after recording why there are none (an exception, a bad output)."""
    try:
        out = rule(*tensors)
    except Exception as exc:
        report.add(
            Row(
                case.name,
                "no exception",
                False,
                n=n,
                detail=f"the rule raised {rule_battery.describe_exception(exc)}",
            )
        )
        return None
    return rule_battery.check_outputs(case, n, out, report)


def _run_probe(rule, probe: Probe, dtype: torch.dtype, report: Report) -> None:
    p, q = torch.tensor(probe.p, dtype=_D).to(dtype), torch.tensor(probe.q, dtype=_D).to(dtype)
    u, v = torch.tensor([probe.u], dtype=_D).to(dtype), torch.tensor([probe.v], dtype=_D).to(dtype)
    case = rule_battery.Case(probe.name, p, q)
    out = _call(rule, case, (p[None], q[None], torch.tensor([probe.drafts]), u, v), 1, report)
    if out is not None:
        a, t = int(out[0][0]), int(out[1][0])
        report.add(
            Row(
                probe.name,
                "forced uniforms",
                a == probe.accepted and t in probe.tokens,
                n=1,
                detail=f"got accepted {a}, token {t}; a correct rule gives {probe.want}",
            )
        )


def _rows_alone(rule, case: rule_battery.Case, tensors) -> list[int]:
    """Rows of the batch ``tensors`` whose outputs differ from the same
    round run alone (the batch's outputs are tensors[-1])."""
    *inputs, out = tensors
    bad = []
    for i in range(inputs[2].shape[0]):
        one = _call(rule, case, [x[i : i + 1] for x in inputs], 1, Report("scratch"))
        if one is None or (int(one[0][0]), int(one[1][0])) != (int(out[0][i]), int(out[1][i])):
            bad.append(i)
    return bad


def _random_rounds(case: rule_battery.Case, n: int, dtype: torch.dtype, g: torch.Generator):
    handed, law = rule_battery.at_dtype(case, dtype)
    drafts = rule_battery.draw_drafts(law.q, n, g)
    u = torch.rand(n, case.k, dtype=_D, generator=g).to(dtype)
    v = torch.rand(n, dtype=_D, generator=g).to(dtype)
    return [handed.p.expand(n, -1, -1).clone(), handed.q.expand(n, -1, -1).clone(), drafts, u, v]


def _batch_consistency(rule, case: rule_battery.Case, dtype, g, report: Report, n: int = 64) -> None:
    """A batch of ``n`` random rounds of ``case`` equals them run one by one."""
    case = rule_battery.Case(f"batch of {n} equals row by row ({case.name})", case.p, case.q)
    inputs = _random_rounds(case, n, dtype, g)
    out = _call(rule, case, inputs, n, report)
    if out is not None:
        bad = _rows_alone(rule, case, [*inputs, out])
        report.add(
            Row(
                case.name,
                "batch consistency",
                not bad,
                n=n,
                value=float(len(bad)),
                detail=f"rows {bad[:5]} differ from the same rounds run alone",
            )
        )


#: The v forced at the all-zero-residual row of the batch probe: the inverse
#: CDF of any law over the whole vocabulary of 4 picks token 0 (p(0) = 0) there.
ROW_V = 0.125
#: The seed of the batch probes' ordinary rounds: fixed, so that every input
#: of an exact probe is forced and the same rule gives the same failures
#: whatever seed a caller passes (with row 5's v and the rounds drawn from
#: the seed, vLLM's defect read 7 failures at seed 3 and 6 at seed 0).
BATCH_SEED = 3


def _batch_with_one_zero_residual(rule, dtype, g, report: Report, n: int = 16, row: int = 5) -> None:
    """Ordinary rounds of the fixed case with row ``row`` replaced by a
    forced rejection whose residual is all zero (p(0) = 0): the batch must
    not raise, that row must emit a token of p's support, the others must
    equal their rounds run alone."""
    fixed = rule_battery.Case(
        "fixed", torch.from_numpy(rule_battery.FIXED_P), torch.from_numpy(rule_battery.FIXED_Q)
    )
    name = f"batch of {n}, row {row} an all-zero residual"
    inputs = _random_rounds(fixed, n, dtype, g)
    d = 0.25 * margin(dtype)
    inputs[0][row, 0] = torch.tensor([0.0, 0.5, 0.25 - d, 0.25], dtype=_D).to(dtype)
    inputs[1][row, 0] = torch.tensor([0.0, 0.5, 0.25, 0.25], dtype=_D).to(dtype)
    inputs[2][row, 0] = 2
    inputs[3][row, 0] = below_one(dtype)
    inputs[4][row] = ROW_V  # forced too: a fallback that draws from the whole vocabulary
    # (or reads a NaN residual by argmax) emits token 0, p(0) = 0, at this v
    case = rule_battery.Case(name, fixed.p, fixed.q)
    out = _call(rule, case, inputs, n, report)
    if out is None:
        return
    a, t = int(out[0][row]), int(out[1][row])
    report.add(
        Row(
            name,
            "forced uniforms",
            a == 0 and t in (1, 2, 3),
            n=1,
            detail=f"row {row}: got accepted {a}, token {t}; a correct rule gives "
            f"accepted 0, a token of p's support {{1, 2, 3}}",
        )
    )
    bad = [i for i in _rows_alone(rule, case, [*inputs, out]) if i != row]
    report.add(
        Row(
            name,
            "batch consistency",
            not bad,
            n=n,
            value=float(len(bad)),
            detail=f"ordinary rows {bad[:5]} differ from the same rounds run alone",
        )
    )


def _renormaliser(
    rule, renormalise: Callable[[torch.Tensor], torch.Tensor] | None
) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """The rule's map from the rows it is handed to those it compares:
    ``renormalise``, else the rule's ``renormalise`` attribute, else None;
    ValueError unless it is callable or None."""
    renormalise = renormalise if renormalise is not None else getattr(rule, "renormalise", None)
    if renormalise is not None and not callable(renormalise):
        raise ValueError(f"renormalise must be callable or None, got {type(renormalise).__name__}")
    return renormalise


def _subject(rule, dtype: torch.dtype) -> str:
    """The subject line of :func:`check_rule_exact`'s report when none is given."""
    at = "" if dtype == _D else f", dtype={str(dtype).removeprefix('torch.')}"
    return f"check_rule_exact({getattr(rule, '__name__', type(rule).__name__)}{at})"


def _batches(rule, cases: list[rule_battery.Case] | None, dtype: torch.dtype, report: Report) -> None:
    """The batch probes, drawn from :data:`BATCH_SEED`: 16 ordinary rounds
    with one all-zero-residual round, then 64 random rounds against the same
    rounds one by one on each of ``cases`` (the battery's fixed case when
    None)."""
    g = torch.Generator().manual_seed(BATCH_SEED)
    _batch_with_one_zero_residual(rule, dtype, g, report)
    batch_cases = cases or [
        rule_battery.Case(
            "fixed V=4 k=3", torch.from_numpy(rule_battery.FIXED_P), torch.from_numpy(rule_battery.FIXED_Q)
        )
    ]
    for case in batch_cases:
        _batch_consistency(rule, case, dtype, g, report)


def check_rule_exact(
    rule_with_uniforms: Callable,
    *,
    cases=None,
    seed: int = 3,
    dtype: torch.dtype = _D,
    name: str | None = None,
    progress: Callable[[str], None] | None = None,
    renormalise: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> Report:
    """Probe a rule written as a function of its uniforms with forced values.

    Protocol: ``rule(p, q, drafts, u, v) -> (accepted, token)``, shapes as
    :func:`check_rule`'s plus ``u`` (N, k) and ``v`` (N,), both in [0, 1);
    p, q, u and v are handed in ``dtype`` (float64 by default):

    - ``u[:, i]`` decides position i: the draft ``x_i`` is accepted iff
      ``u_i < p_i(x_i) / q_i(x_i)`` (strict: a draft with p = 0 is never
      accepted, even at u = 0); ``accepted`` counts the leading acceptances.
    - ``v`` draws the token at position ``a = accepted`` by inverse CDF from
      ``r = max(0, p_a - q_a)`` when ``a < k`` (the residual) or ``r = p_k``
      (the bonus): the first index ``i`` with ``cumsum(r)_i > v * sum(r)``.
      Where ``r`` is all zero any token of p's support is right.

    Probes (each one call, N = 1; placement in
    :mod:`aftertrain.checks.rule_probes`' docstring): u = 0
    with p(x) = 0 must reject; u a margin below p/q must accept and above
    must reject (p/q = 1/2 and 3/4); the bonus comes from p_{k+1}; the
    residual is renormalised; forced rejections with an all-zero residual
    (p <= q everywhere; a draft outside p's support at u = 0 and at u near
    1; each with p(0) > 0 and with p(0) = 0) must neither raise nor emit a
    token outside p's support. Batches: 16 ordinary rounds with one
    all-zero-residual round must not raise nor change the ordinary rounds,
    and 64 random rounds must equal the rounds run one by one (on the fixed
    case of the battery, or on each of ``cases``: ``(name, p, q)`` as for
    :func:`check_rule`). Every input of every probe is forced: the batches'
    rounds are drawn from the fixed :data:`BATCH_SEED` and the zero-residual
    row's v is :data:`ROW_V`, so the verdict is the same at every ``seed``
    (kept, validated, so that existing calls work; it no longer changes
    anything). These are exact: a correct rule never fails them (false-alarm
    rate 0). Each failure line says what a correct rule returns there.

    ``renormalise``: the rule's own map from a row of probabilities it is
    handed (in ``dtype``) to those it compares, where it recomputes them
    (transformers' rule takes logits: ``lambda r: r.log().softmax(-1)``);
    default the rule's ``renormalise`` attribute, else none. The probe "q =
    p with one cell scaled up" is then searched so that its residual is all
    zero as the rule computes it, on whatever kernels this CPU runs.

    Long: this docstring is the protocol a rule is judged by and the list
    of what is probed (the kit's reference for this check); the body is a
    dozen lines.
    """
    if not callable(rule_with_uniforms):
        raise ValueError(f"rule_with_uniforms must be callable, got {type(rule_with_uniforms).__name__}")
    rule_battery.check_common(1, 0.5, seed)
    rule_battery.check_dtype(dtype)
    say = rule_battery.check_progress(progress)
    cases = None if cases is None else rule_battery.as_cases(cases)
    rule = rule_with_uniforms
    renormalise = _renormaliser(rule, renormalise)
    report = Report(name or _subject(rule, dtype))
    start = time.perf_counter()
    for probe in probes(dtype, renormalise):
        _run_probe(rule, probe, dtype, report)
    say(f"check_rule_exact: single-round probes, {time.perf_counter() - start:.1f} s")
    _batches(rule, cases, dtype, report)
    say(f"check_rule_exact: batches, {time.perf_counter() - start:.1f} s")
    return report
