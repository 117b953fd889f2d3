"""The battery of :func:`aftertrain.checks.speculative.check_rule`: the cases
(fixed target and draft distributions for one verification round) and the
per-case measurements.

Each case is one ``(p (k+1, V), q (k, V))``; the kit runs ``n`` independent
rounds of the rule on it, the drafts of each round drawn from ``q``, and
judges, at every position ``j = 0 .. k`` (``k`` is the bonus), the
characters emitted there over the rounds that reached it.
"""

from __future__ import annotations

import os
import sysconfig
import traceback
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import scipy.stats
import torch

from aftertrain import stats
from aftertrain.checks.report import Report, Row
from aftertrain.core.validation import check_int, check_probability, check_seed

#: Trials of direct draws behind each TV threshold (stats.tv_threshold): the
#: mean of the null is all the bound uses; 200 trials estimate it to ~1e-4,
#: far below the McDiarmid margin (>= 0.02 at n <= 20,000).
TV_NULL_TRIALS = 200


@dataclass(frozen=True)
class Case:
    """One verification setting: ``p`` (k+1, V) and ``q`` (k, V), float64."""

    name: str
    p: torch.Tensor
    q: torch.Tensor

    @property
    def k(self) -> int:
        """The number of drafted tokens: the rows of ``q``."""
        return self.q.shape[0]

    @property
    def vocab(self) -> int:
        """The vocabulary size V: the columns of ``p``."""
        return self.p.shape[1]


def _norm(x: np.ndarray) -> np.ndarray:
    return x / x.sum(axis=-1, keepdims=True)


#: A fixed 4-symbol, k = 3 case where q over-proposes symbol 0, every
#: position's q differs from its p, p has zeros and the bonus p_3 differs
#: from p_2: each kind of broken rule changes some position's law here.
FIXED_P = np.array([[0.1, 0.4, 0.5, 0.0], [0.3, 0.0, 0.2, 0.5], [0.6, 0.2, 0.2, 0.0], [0.0, 0.1, 0.3, 0.6]])
FIXED_Q = np.array([[0.7, 0.1, 0.1, 0.1], [0.5, 0.2, 0.1, 0.2], [0.2, 0.3, 0.1, 0.4]])


def battery(seed: int) -> list[Case]:
    """The default cases; the random ones are drawn from ``seed``.

    Dirichlet at V = 4, 8, 32 and k = 1, 3, 2; zeros in p and in q; the
    fixed case above; one-hot p and q; disjoint supports (every draft is
    rejected); p == q (every draft is accepted); q = p rounded to float32
    (upwards at position 0, so p <= q everywhere there, to nearest at
    position 1); probabilities down to 1e-12.
    """
    rng = np.random.default_rng([seed, 12])
    dirichlet = lambda V, rows, a=1.0: rng.dirichlet(np.full(V, a), size=rows)
    cases = []
    cases.append(("dirichlet V=4 k=1", dirichlet(4, 2), dirichlet(4, 1)))
    cases.append(("dirichlet V=8 k=3", dirichlet(8, 4), dirichlet(8, 3)))
    cases.append(("dirichlet V=32 k=2 peaked", dirichlet(32, 3, 0.3), dirichlet(32, 2, 0.3)))
    p, q = dirichlet(6, 4), dirichlet(6, 3)
    p[rng.random(p.shape) < 0.35] = 0.0
    q[rng.random(q.shape) < 0.35] = 0.0
    p[np.arange(4), rng.integers(0, 6, 4)] += 0.2  # no row left all zero
    q[np.arange(3), rng.integers(0, 6, 3)] += 0.2
    cases.append(("zeros in p and q V=6 k=3", _norm(p), _norm(q)))
    cases.append(("fixed V=4 k=3", FIXED_P.copy(), FIXED_Q.copy()))
    p, q = dirichlet(5, 3), dirichlet(5, 2)
    hot_p, hot_q = rng.integers(0, 5, 2)
    p[1] = np.eye(5)[hot_p]  # one-hot target at position 1
    q[0] = np.eye(5)[hot_q]  # one-hot draft at position 0
    cases.append(("one-hot V=5 k=2", p, q))
    p = np.concatenate([dirichlet(3, 2), np.zeros((2, 3))], axis=1)
    q = np.concatenate([np.zeros((1, 3)), dirichlet(3, 1)], axis=1)
    cases.append(("disjoint supports V=6 k=1", p, q))
    p = dirichlet(6, 3)
    cases.append(("p == q V=6 k=2", p, p[:2].copy()))
    p = dirichlet(8, 3)
    up = torch.from_numpy(p[0]).float()
    up = torch.where(up.double() < torch.from_numpy(p[0]), torch.nextafter(up, torch.tensor(2.0)), up)
    q = np.stack([up.double().numpy(), torch.from_numpy(p[1]).float().double().numpy()])
    cases.append(("p == q up to float32 rounding V=8 k=2", p, q))
    tiny = np.array([1e-12, 1e-9, 1e-6, 1e-3])
    p = np.concatenate([dirichlet(6, 3), np.tile(tiny, (3, 1))], axis=1)
    q = np.concatenate([dirichlet(6, 2), np.tile(tiny[::-1], (2, 1))], axis=1)
    cases.append(("probabilities down to 1e-12 V=10 k=2", _norm(p), _norm(q)))
    return [
        Case(
            name,
            torch.from_numpy(np.ascontiguousarray(p, dtype=np.float64)),
            torch.from_numpy(np.ascontiguousarray(q, dtype=np.float64)),
        )
        for name, p, q in cases
    ]


def n_tests(cases: list[Case]) -> int:
    """Statistical tests the battery runs: chi-square and TV at each of the
    k+1 positions, a binomial acceptance test at each of the k drafted ones."""
    return sum(2 * (c.k + 1) + c.k for c in cases)


def draw_drafts(q: torch.Tensor, n: int, generator: torch.Generator) -> torch.Tensor:
    """(n, k) int64 drafts, column i drawn from q[i] (inverse CDF)."""
    k = q.shape[0]
    u = torch.rand(n, k, dtype=torch.float64, generator=generator)
    cdf = q.cumsum(-1)  # (k, V)
    x = torch.minimum(u * cdf[:, -1], torch.nextafter(cdf[:, -1], torch.zeros(())))
    d = torch.searchsorted(cdf.expand(n, -1, -1).contiguous(), x.unsqueeze(-1), right=True)
    return d.squeeze(-1).long()


def check_outputs(case: Case, n: int, out, report: Report) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The rule's return value as two int64 (n,) tensors, or None after
    recording why it is not one (shape, dtype, NaN, range)."""
    name, k, V = case.name, case.k, case.vocab
    if not isinstance(out, tuple) or len(out) != 2:
        report.add(
            Row(
                name,
                "outputs",
                False,
                detail=f"the rule must return (accepted, token), got {type(out).__name__}",
            )
        )
        return None
    problems = []
    for label, x, hi in (("accepted", out[0], k), ("token", out[1], V - 1)):
        if not isinstance(x, torch.Tensor):
            problems.append(f"{label} is a {type(x).__name__}, not a tensor")
        elif x.dtype != torch.int64:
            nan = " holding NaN" if x.is_floating_point() and bool(x.isnan().any()) else ""
            problems.append(f"{label} has dtype {x.dtype}{nan}, not torch.int64")
        elif tuple(x.shape) != (n,):
            problems.append(f"{label} has shape {tuple(x.shape)}, not ({n},)")
        elif n and (int(x.min()) < 0 or int(x.max()) > hi):
            problems.append(f"{label} holds values in [{int(x.min())}, {int(x.max())}], outside [0, {hi}]")
    report.add(Row(name, "outputs", not problems, n=n, detail="; ".join(problems)))
    return None if problems else (out[0], out[1])


def judge_case(
    case: Case,
    drafts: torch.Tensor,
    accepted: torch.Tensor,
    token: torch.Tensor,
    alpha: float,
    seed: int,
    report: Report,
) -> None:
    """Support, law (chi-square and TV) at every position and the acceptance
    rate at every drafted position, each statistical test at ``alpha``."""
    k, p = case.k, case.p
    for j in range(k + 1):
        reached = accepted >= j
        chars = token if j == k else torch.where(accepted > j, drafts[:, j], token)
        chars = chars[reached].numpy()
        if chars.size:
            _judge_law(report, case.name, j, chars, p[j].numpy(), alpha, seed)
    _judge_acceptance(report, case, accepted, alpha)


def _judge_law(
    report: Report, name: str, j: int, chars: np.ndarray, pj: np.ndarray, alpha: float, seed: int
) -> None:
    """The rows of position ``j``: every emitted character ``chars`` in p's
    support, then their law against ``pj`` (chi-square and TV at ``alpha``)."""
    m = chars.size
    bad = int((pj[chars] == 0).sum())
    report.add(
        Row(
            name,
            "support",
            bad == 0,
            position=j,
            n=m,
            value=float(bad),
            bound=0.0,
            detail=f"{bad} of {m} emitted characters have p = 0" if bad else "",
        )
    )
    if bad:
        return
    fit = stats.chisquare_gof(chars, pj)
    report.add(
        Row(
            name,
            "chi-square",
            fit.pvalue >= alpha,
            position=j,
            statistic=fit.statistic,
            dof=fit.dof,
            p_value=fit.pvalue,
            n=m,
            bound=alpha,
            detail=f"law differs from p: chi2 {fit.statistic:.1f} on "
            f"{fit.dof} dof, p-value {fit.pvalue:.3g} < {alpha:.3g}",
        )
    )
    tv = stats.empirical_tv(chars, pj)
    null = stats.tv_null_distribution(pj, m, TV_NULL_TRIALS, seed + j)
    limit = stats.tv_threshold(null, m, alpha)
    report.add(
        Row(
            name,
            "tv",
            tv <= limit,
            position=j,
            n=m,
            tv=tv,
            tv_threshold=limit,
            detail=f"TV {tv:.4f} above the same-sample bound {limit:.4f}",
        )
    )


def _judge_acceptance(report: Report, case: Case, accepted: torch.Tensor, alpha: float) -> None:
    """The acceptance rate at every drafted position against the exact
    ``sum(min(p, q))``: exact where the rate is 0 or 1, else a binomial test
    at ``alpha``."""
    k, p, q = case.k, case.p, case.q
    for j in range(k):
        reached = int((accepted >= j).sum())
        if reached == 0:
            continue
        rate = float(torch.minimum(p[j], q[j]).sum())
        hits = int((accepted > j).sum())
        if rate >= 1.0 - 1e-12 or rate <= 1e-12:
            want = round(rate) * reached
            report.add(
                Row(
                    case.name,
                    "acceptance",
                    hits == want,
                    position=j,
                    n=reached,
                    value=hits / reached,
                    bound=float(round(rate)),
                    detail=f"{hits}/{reached} accepted, must be exactly {want}",
                )
            )
            continue
        pv = scipy.stats.binomtest(hits, reached, min(rate, 1.0)).pvalue
        report.add(
            Row(
                case.name,
                "acceptance",
                pv >= alpha,
                position=j,
                n=reached,
                p_value=pv,
                value=hits / reached,
                bound=rate,
                detail=f"{hits}/{reached} accepted against the exact rate {rate:.6g} "
                f"(binomial p-value {pv:.3g} < {alpha:.3g})",
            )
        )


def bonferroni(alpha: float, tests: int) -> float:
    """The per-test level that keeps the battery's false-alarm rate <= alpha."""
    return alpha / max(1, tests)


#: Where code that is not the user's lives: the kit itself, torch and the
#: standard library. The innermost frame outside them is the user's.
_NOT_USER = tuple(
    os.path.realpath(d) + os.sep
    for d in (os.path.dirname(__file__), os.path.dirname(torch.__file__), sysconfig.get_paths()["stdlib"])
)


def describe_exception(exc: BaseException) -> str:
    """``"TypeName: first line of the message (at file:line)"``: the frame is
    the innermost one of the user's code (outside the kit, torch and the
    standard library), so the line points at the user's rule, or at the
    library it calls, not at torch's internals."""
    msg = str(exc).strip().splitlines()
    where = ""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if not os.path.realpath(frame.filename).startswith(_NOT_USER):
            where = f" (at {frame.filename}:{frame.lineno})"
            break
    return f"{type(exc).__name__}: {(msg[0] if msg else '')[:200]}{where}"


@contextmanager
def one_torch_thread():
    """torch at one thread inside, its thread count restored afterwards: a
    round of a rule, or a call of a decoding loop on the toy models, is a
    few dozen tiny tensor operations, which several threads on a busy
    machine slow many times over."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


#: The precisions a rule may be handed p and q in.
DTYPES = (torch.float64, torch.float32, torch.bfloat16, torch.float16)


def check_dtype(dtype) -> torch.dtype:
    """``dtype`` if it is one of :data:`DTYPES`, else ValueError naming it."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {[str(d) for d in DTYPES]}, got {dtype!r}")
    return dtype


def at_dtype(case: Case, dtype: torch.dtype) -> tuple[Case, Case]:
    """``(handed, law)``: the case as the rule is handed it (p and q rounded
    to ``dtype``) and the law that rounding defines (the rounded rows,
    renormalised in float64), which the rule is judged against."""
    p, q = case.p.to(dtype), case.q.to(dtype)
    norm = lambda x: x.double() / x.double().sum(-1, keepdim=True)  # noqa: E731
    return Case(case.name, p, q), Case(case.name, norm(p), norm(q))


def check_common(n, alpha, seed, *, n_min: int = 1) -> None:
    """ValueError naming ``n`` (an int >= n_min), ``alpha`` (in (0, 1)) or
    ``seed`` (an int >= 0) when one is not what it must be."""
    check_int("n", n, least=n_min)
    check_probability("alpha", alpha)
    check_seed(seed)


def check_progress(progress) -> Callable[[str], None]:
    """``progress`` (None or a callable taking one line) as a callable."""
    if progress is None:
        return lambda line: None
    if not callable(progress):
        raise ValueError(
            f"progress must be None or a callable taking one line, got {type(progress).__name__}"
        )
    return progress


def as_cases(cases) -> list[Case]:
    """User cases ``(name, p (k+1, V), q (k, V))`` (or :class:`Case`) as
    float64 :class:`Case` objects, after checking shapes and that every row
    is a distribution (finite, >= 0, sums to 1 within 1e-6)."""
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
            raise ValueError(
                f"cases[{i}] must have p of shape (k+1, V) and q of shape (k, V), "
                f"k >= 1; got p {tuple(p.shape)}, q {tuple(q.shape)}"
            )
        for label, x in (("p", p), ("q", q)):
            if (
                not bool(torch.isfinite(x).all())
                or bool((x < 0).any())
                or float((x.sum(-1) - 1).abs().max()) > 1e-6
            ):
                raise ValueError(
                    f"cases[{i}] {label}: every row must be finite, >= 0 and sum to 1 within 1e-6"
                )
        out.append(Case(str(name), p, q))
    return out
