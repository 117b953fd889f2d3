"""The single-round probes of :func:`aftertrain.checks.rule_exact.check_rule_exact`:
each a forced round (p, q, drafts, u, v) and what a correct rule returns there.

Every probe is placed where its verdict does not depend on rounding in the
precision the rule computes in (``dtype``): the thresholds sit at ratios
every dtype holds exactly (p/q = 1/2 and 3/4), the forced u lies
:func:`margin` (at least 4 ulps of ``dtype``) from p/q, the all-zero
residuals come from q above p by that margin, and v keeps away from the
cumulative sums (an all-zero residual accepts any token of p's support).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch


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
    """The acceptance test at its threshold: u = 0 with p(x) = 0 rejects; u
    a :func:`margin` below p/q accepts and above rejects (p/q = 1/2, 3/4)."""
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
    return out


def _draw_probes() -> list[Probe]:
    """The token drawn by v: the bonus from p_{k+1} after every draft is
    accepted, and the residual renormalised after a rejection (every
    probability a dyadic fraction, exact in every dtype)."""
    out = [
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
    ]
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
    dtype: torch.dtype = torch.float64, renormalise: Callable[[torch.Tensor], torch.Tensor] | None = None
) -> list[Probe]:
    """Every single-round probe of :func:`check_rule_exact` at ``dtype``;
    ``renormalise`` as there."""
    return (
        _threshold_probes(dtype)
        + _draw_probes()
        + _zero_residual_probes(dtype)
        + _rounded_up_probes(dtype, renormalise)
    )
