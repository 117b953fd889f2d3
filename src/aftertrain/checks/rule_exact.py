"""Forced-uniform probes of a verification rule (:func:`check_rule_exact`).

Every probe is placed where its verdict does not depend on rounding in the
precision the rule computes in (``dtype``): the thresholds sit at ratios
every dtype holds exactly (p/q = 1/2 and 3/4), the forced u lies
:func:`margin` (at least 4 ulps of ``dtype``) from p/q, the all-zero
residuals come from q above p by that margin, and v keeps away from the
cumulative sums (an all-zero residual accepts any token of p's support).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from aftertrain.checks import rule_battery
from aftertrain.checks.report import Report, Row

_D = torch.float64


def margin(dtype: torch.dtype) -> float:
    """The relative distance of a forced u from p/q (and of q above p in the
    zero-residual probes): ``max(4 eps, 1e-12)``, 4 ulps of ``dtype`` (3.1e-2
    in bfloat16, 4.8e-7 in float32) and 1e-12 in float64, where a rule that
    renormalises p and q (a softmax of their logs) moves p/q by a few ulps."""
    return max(4 * torch.finfo(dtype).eps, 1e-12)


def below_one(dtype: torch.dtype) -> float:
    """The largest value below 1 in ``dtype``: a uniform that rejects every
    draft with p/q < 1 - margin."""
    return 1.0 - torch.finfo(dtype).eps / 2


@dataclass(frozen=True)
class Probe:
    """One forced round: p (k+1, V), q (k, V), drafts (k,), u (k,), v, and
    what a correct rule returns there (accepted, a token of ``tokens``)."""

    name: str
    p: list
    q: list
    drafts: list
    u: list
    v: float
    accepted: int
    tokens: tuple[int, ...]
    want: str


def _support(row) -> tuple[int, ...]:
    return tuple(i for i, x in enumerate(row) if x > 0)


def _threshold_probes(dtype: torch.dtype) -> list[Probe]:
    m = margin(dtype)
    out = [
        Probe(
            "u = 0 with p(x) = 0 rejects",
            [[0.0, 1.0], [0.5, 0.5]],
            [[0.5, 0.5]],
            [0],
            [0.0],
            0.25,
            0,
            (1,),
            "accepted 0, token 1 (u = 0 is not < p/q = 0)",
        )
    ]
    # (p/q, p at the draft's position, bonus row, v, bonus token, residual token)
    for r, p0, bonus, v, b in (
        (0.5, [0.25, 0.75], [0.875, 0.125], 0.5, 0),
        (0.75, [0.375, 0.625], [0.25, 0.75], 0.125, 0),
    ):
        q0 = [0.5, 0.5]
        out.append(
            Probe(
                f"u {m:.2g} below p/q = {r} accepts",
                [p0, bonus],
                [q0],
                [0],
                [r * (1 - m)],
                v,
                1,
                (b,),
                f"accepted 1, bonus {b} (inverse CDF of {bonus} at v = {v})",
            )
        )
        out.append(
            Probe(
                f"u {m:.2g} above p/q = {r} rejects",
                [p0, bonus],
                [q0],
                [0],
                [r * (1 + m)],
                0.5,
                0,
                (1,),
                f"accepted 0, token 1 (residual [0, {p0[1] - 0.5}], v = 0.5)",
            )
        )
    out.append(
        Probe(
            "bonus drawn from p_{k+1}",
            [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]],
            [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]],
            [1, 0],
            [0.875, 0.875],
            0.5,
            2,
            (2,),
            "accepted 2, bonus 2 (p_3 = [0, 0, 1])",
        )
    )
    for v, t in ((0.375, 1), (0.625, 2)):
        out.append(
            Probe(
                f"residual renormalised (v = {v})",
                [[0.75, 0.125, 0.125], [1.0, 0, 0]],
                [[1.0, 0.0, 0.0]],
                [0],
                [0.875],
                v,
                0,
                (t,),
                f"accepted 0, token {t} (residual [0, 0.125, 0.125] renormalised, v = {v})",
            )
        )
    return out


def _zero_residual_probes(dtype: torch.dtype) -> list[Probe]:
    """Forced rejections whose residual max(0, p - q) is all zero (p <= q
    everywhere, equal up to rounding): any token of p's support is right;
    p(0) = 0 with mass on the last token catches a NaN residual read by
    argmax (token 0), p(last) = 0 a fallback that clamps to the last index.
    The deficit sits on a cell of q = 1/4, so p/q stays 3/4 of the margin
    below 1 for a rule that renormalises p first."""
    d = 0.25 * margin(dtype)
    top = below_one(dtype)
    want = "accepted 0, a token of p's support {}, no exception"
    shapes = [  # (name, p, q, draft, forced u values)
        ("forced rejection, p <= q everywhere", [0.75, 0.25 - d, 0.0], [0.75, 0.25, 0.0], 1, (top,)),
        (
            "forced rejection, p <= q everywhere, p(0) = 0",
            [0.0, 0.75, 0.25 - d],
            [0.0, 0.75, 0.25],
            2,
            (top,),
        ),
        ("draft outside p, zero residual", [0.25, 0.75, 0.0], [0.25, 0.75, d], 2, (0.0, top)),
        ("draft outside p, zero residual, p(0) = 0", [0.0, 0.25, 0.75], [d, 0.25, 0.75], 0, (0.0, top)),
    ]
    out = []
    for name, p0, q0, x, us in shapes:
        for u in us:
            for v in (0.125, 0.5, 0.875):
                label = f"{name} (u = {'1 - eps' if u else 0}, v = {v})"
                out.append(
                    Probe(
                        label,
                        [p0, [0.5, 0.25, 0.25]],
                        [q0],
                        [x],
                        [u],
                        v,
                        0,
                        _support(p0),
                        want.format(set(_support(p0))),
                    )
                )
    return out


#: How far :func:`_rounded_up_probes` raises the draft's cell in its search
#: for an all-zero residual: by the :func:`margin` first, then by 1 to 64
#: ulps of ``dtype`` (eps relative), on each of the 4 cells of least p.
_SEARCH_ULPS, _SEARCH_CELLS = range(1, 65), 4


def _zero_residual_pair(
    p: torch.Tensor,
    dtype: torch.dtype,
    renormalise: Callable[[torch.Tensor], torch.Tensor],
) -> tuple[int, torch.Tensor] | None:
    """The draft cell x and q (``p`` with cell x raised by the margin or k ulps)
    such that the rule's own probabilities ``P = renormalise(p)``, ``Q =
    renormalise(q)`` have ``P <= Q`` in every cell and ``P_x / Q_x`` below
    the largest uniform below 1: a forced rejection there leaves an all-zero
    residual *as the rule computes it*. A rule that takes logits and
    renormalises (a softmax of ``log q``) changes every cell by its kernel's
    rounding, which differs between CPUs (SIMD widths); so the perturbation
    is searched with the rule's own arithmetic, in this process, rather than
    fixed. None when no step works."""
    P = renormalise(p)
    eps = torch.finfo(dtype).eps
    for x in torch.argsort(p.double())[:_SEARCH_CELLS].tolist():
        for raise_by in (margin(dtype), *(k * eps for k in _SEARCH_ULPS)):
            up = (p[x].double() * (1 + raise_by)).to(dtype)
            q = p.clone()
            q[x] = up if up > p[x] else torch.nextafter(p[x], torch.ones((), dtype=dtype))
            Q = renormalise(q)
            if bool((P <= Q).all()) and float(P[x] / Q[x]) < below_one(dtype):
                return x, q
    return None


def _rounded_up_probes(
    dtype: torch.dtype, renormalise: Callable[[torch.Tensor], torch.Tensor] | None = None
) -> list[Probe]:
    """p (Dirichlet, V = 8, in ``dtype``) and q = p with one cell scaled up
    by the margin or more at position 0, chosen so that the residual is all
    zero after the rule's ``renormalise`` (:func:`_zero_residual_pair`;
    identity: the cell of least p at the margin), a forced rejection of that
    cell; position 1 is an ordinary row. ValueError when the search finds
    no such cell (a ``renormalise`` that is no rounding of the identity;
    a softmax of the logs finds one within a few ulps in float32 and
    bfloat16)."""
    rng = np.random.default_rng(2024)
    p = torch.from_numpy(rng.dirichlet(np.ones(8), size=3)).to(dtype)
    found = _zero_residual_pair(p[0], dtype, renormalise or (lambda r: r))
    if found is None:
        raise ValueError(
            f"renormalise leaves no all-zero residual: raising any of the "
            f"{_SEARCH_CELLS} cells of least p by the margin or by 1 to "
            f"{_SEARCH_ULPS.stop - 1} ulps of {dtype} never gives renormalise(p) <= "
            f"renormalise(q) in every cell; allowed: the rule's own map from the "
            f"probabilities it is handed to those it compares"
        )
    x, q0 = found
    raised = float(q0[x].double() / p[0, x].double() - 1)
    p, q = p.double().tolist(), [q0.double().tolist(), p[1].double().tolist()]
    return [
        Probe(
            f"q = p with the draft's cell scaled up to an all-zero residual, forced rejection (v = {v})",
            p,
            q,
            [x, 0],
            [below_one(dtype), 0.5],
            v,
            0,
            _support(p[0]),
            f"accepted 0, a token in p's support, no exception (cell {x} "
            f"raised by {raised / torch.finfo(dtype).eps:.3g} ulps)",
        )
        for v in (0.125, 0.5, 0.875)
    ]


def probes(
    dtype: torch.dtype = _D, renormalise: Callable[[torch.Tensor], torch.Tensor] | None = None
) -> list[Probe]:
    """Every single-round probe of :func:`check_rule_exact` at ``dtype``;
    ``renormalise`` as there."""
    return _threshold_probes(dtype) + _zero_residual_probes(dtype) + _rounded_up_probes(dtype, renormalise)


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
#: whatever seed a caller passes (issue 33: vLLM's defect read 7 failures at
#: seed 3 and 6 at seed 0 when row 5's v and the rounds came from the seed).
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

    Probes (each one call, N = 1; placement in the module docstring): u = 0
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
