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

``p`` (N, k+1, V): the target's distributions at the k drafted positions
and at the bonus position; ``q`` (N, k, V): the draft's distributions, both
in the check's ``dtype`` (float64 by default: :data:`DTYPES`); ``drafts``
int64 (N, k), ``drafts[:, i]`` drawn from ``q[:, i]``. Returns int64
``accepted`` (N,), the number of leading drafts
accepted (0..k), and int64 ``token`` (N,), the token drawn after the first
rejection, or the bonus token when all k were accepted. The rule draws its
randomness from torch's global generator; the kit seeds it inside
``torch.random.fork_rng``, so the caller's global state is left as it was.
:func:`sequential` wraps a rule that handles one round at a time;
``aftertrain.checks.adapters`` wraps transformers' rule and assisted
generation; :func:`assert_rule` and :func:`assert_generator` are the
one-line forms for a test suite (:func:`rule_reports` what ``aftertrain
check rule`` runs).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch

from aftertrain.checks import rule_battery
from aftertrain.checks.generator_battery import check_generator
from aftertrain.checks.generator_toys import ToyTable, toy_models
from aftertrain.checks.report import Report, Row
from aftertrain.checks.rule_battery import DTYPES, FIXED_P, FIXED_Q, Case  # noqa: F401 (re-exported)
from aftertrain.checks.rule_exact import check_rule_exact
from aftertrain.core.validation import check_int
from aftertrain.stats import ALPHA

__all__ = [
    "DEFAULT_N",
    "assert_generator",
    "assert_rule",
    "rule_reports",
    "DTYPES",
    "MAX_N",
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
#: ``n`` at most: each case hands the rule p and q of every round at once, up
#: to 160 float64 values a round (the battery's largest case: p 3 x 32, q
#: 2 x 32), so 200,000 rounds are about 260 MB per case and ten times the
#: default's time. A TV bias of about 0.008 is then detectable.
MAX_N = 200_000

Rule = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], tuple]
Progress = Callable[[str], None]


def _name(fn) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


def _run_case(
    rule: Rule,
    case: Case,
    n: int,
    dtype: torch.dtype,
    g: torch.Generator,
    rule_seed: int,
    alpha: float,
    tv_seed: int,
    report: Report,
) -> None:
    """``n`` rounds of ``case`` handed to ``rule`` in ``dtype`` (drafts from
    ``g``, the rule's global generator seeded with ``rule_seed``), judged
    against the rounded law, each statistical test at ``alpha``."""
    handed, law = rule_battery.at_dtype(case, dtype)
    drafts = rule_battery.draw_drafts(law.q, n, g)
    P = handed.p.expand(n, -1, -1).contiguous()
    Q = handed.q.expand(n, -1, -1).contiguous()
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(rule_seed)
            out = rule(P, Q, drafts.clone())
    except Exception as exc:  # the rule's failure is a finding, not the kit's
        report.add(
            Row(
                case.name,
                "no exception",
                False,
                n=n,
                detail=f"the rule raised {rule_battery.describe_exception(exc)}",
            )
        )
        return
    out = rule_battery.check_outputs(case, n, out, report)
    if out is not None:
        rule_battery.judge_case(law, drafts, out[0], out[1], alpha, tv_seed, report)


def _check_arguments(
    rule: Rule, n: int, alpha: float, seed: int, dtype: torch.dtype, progress: Progress | None
) -> Progress:
    """Raise ValueError unless :func:`check_rule`'s arguments are what it
    allows; return the progress callback to call (a no-op for None)."""
    if not callable(rule):
        raise ValueError(f"rule must be callable, got {type(rule).__name__}")
    rule_battery.check_common(n, alpha, seed, n_min=100)
    check_int("n", n, most=MAX_N, why=" (p and q of every round are held at once)")
    rule_battery.check_dtype(dtype)
    return rule_battery.check_progress(progress)


def _subject(rule: Rule, n: int, alpha: float, seed: int, dtype: torch.dtype) -> str:
    """The subject line of :func:`check_rule`'s report when none is given."""
    at = "" if dtype == torch.float64 else f", dtype={str(dtype).removeprefix('torch.')}"
    return f"check_rule({_name(rule)}, n={n}, alpha={alpha:g}, seed={seed}{at})"


def _streams(seed: int) -> tuple[torch.Generator, int]:
    """The generator of the kit's drafts and the seed of the rule's global
    draws: independent streams (the same seed for both would hand the rule
    the drafts' own uniforms)."""
    draft_seed, rule_seed = (int(s) for s in np.random.SeedSequence([seed, 0x5BEC]).generate_state(2))
    return torch.Generator().manual_seed(draft_seed), rule_seed


def check_rule(
    rule: Rule,
    *,
    n: int = DEFAULT_N,
    alpha: float = ALPHA,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    cases=None,
    name: str | None = None,
    progress: Progress | None = None,
) -> Report:
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
    fails. An exception raised by the rule is a failure line of the case
    (type, message and the innermost frame of the user's code), not a crash
    of the kit.

    Precision: the rule is handed p and q in ``dtype`` (each case's rows
    rounded to it) and judged against the law those rounded numbers define:
    ``p_j`` and ``q_j`` above are the rounded rows renormalised in float64.
    A rule that computes in ``dtype`` moves each probability by a few ulps of
    it (7.8e-3 relative in bfloat16), far below what ``n`` rounds resolve
    (a TV of ~0.025 at n = 20,000), so a correct rule passes.

    Error rate: the battery's false-alarm probability for a correct rule is
    at most ``alpha``: every statistical test runs at ``alpha / m``, ``m``
    the number of tests (Bonferroni; ``m`` = 83 for the default battery, so
    each test runs at 1.2e-8 with the default alpha = 1e-6). The support,
    output and exact-acceptance checks cannot fail for a correct rule.

    Args:
        rule: ``rule(p, q, drafts) -> (accepted, token)``.
        n: rounds per case, from 100 to :data:`MAX_N`.
        alpha: the battery's false-alarm rate, in (0, 1).
        seed: seeds the random cases, the drafts and torch's global
            generator for the rule (restored afterwards), >= 0.
        dtype: the precision p and q are handed in (:data:`DTYPES`).
        cases: optional sequence of ``(name, p (k+1, V), q (k, V))`` to run
            instead of the default battery (:func:`rule_battery.battery`).
        name: the subject line of the report.
        progress: called with one line after each case (its time), e.g. ``print``.

    Long: this docstring is the protocol a rule is judged by, what each row
    checks and its error rate (the kit's reference for this check); the
    body is one loop over the cases.
    """
    say = _check_arguments(rule, n, alpha, seed, dtype, progress)
    battery = rule_battery.battery(seed) if cases is None else rule_battery.as_cases(cases)
    per_test = rule_battery.bonferroni(alpha, rule_battery.n_tests(battery))
    report = Report(name or _subject(rule, n, alpha, seed, dtype))
    g, rule_seed = _streams(seed)
    for i, case in enumerate(battery):
        start = time.perf_counter()
        _run_case(rule, case, n, dtype, g, rule_seed + i, per_test, seed * 1000 + 17 * i, report)
        say(
            f"check_rule: case {i + 1}/{len(battery)} ({case.name}): {n} rounds, "
            f"{time.perf_counter() - start:.1f} s"
        )
    return report


def sequential(rule_one: Callable) -> Callable:
    """The batched protocol from a rule that handles one round at a time.

    ``rule_one(p (k+1, V), q (k, V), drafts (k,), *extra) -> (accepted, token)``
    (Python ints or 0-d tensors) is called on each row; ``*extra`` are any
    further per-row arguments (``u`` (k,) and ``v`` () for
    :func:`check_rule_exact`). Returns ``rule(p, q, drafts, *extra)`` giving
    int64 (N,) tensors.

    The loop runs with one torch thread (restored afterwards): a round is a
    few dozen tiny tensor operations, which several threads on a busy
    machine slow down many times over. The default battery is 200,000 calls
    (HuggingFace's rule: 34.9 CPU s on a loaded 2-core machine, docs/checks.md).
    """
    if not callable(rule_one):
        raise ValueError(f"rule_one must be callable, got {type(rule_one).__name__}")

    def batched(p, q, drafts, *extra):
        N = drafts.shape[0]
        accepted = torch.empty(N, dtype=torch.int64)
        token = torch.empty(N, dtype=torch.int64)
        with rule_battery.one_torch_thread():
            for i in range(N):
                a, t = rule_one(p[i], q[i], drafts[i], *(x[i] for x in extra))
                accepted[i], token[i] = int(a), int(t)
        return accepted, token

    batched.__name__ = f"sequential({getattr(rule_one, '__name__', 'rule')})"
    return batched


def drawing_uniforms(rule_with_uniforms: Callable, *, dtype: torch.dtype = torch.float64) -> Callable:
    """The batched protocol from a rule written as a function of its uniforms,
    ``rule(p, q, drafts, u, v)`` (:func:`check_rule_exact`): ``u`` is drawn
    as ``torch.rand(N, k, dtype=dtype)``, then ``v`` as ``torch.rand(N,
    dtype=dtype)``, from torch's global generator (``dtype`` one of
    :data:`DTYPES`: a sampler deployed in bfloat16 draws bfloat16 uniforms,
    which are 0 with probability ~2e-3)."""
    if not callable(rule_with_uniforms):
        raise ValueError(f"rule_with_uniforms must be callable, got {type(rule_with_uniforms).__name__}")
    rule_battery.check_dtype(dtype)

    def rule(p, q, drafts):
        N, k = drafts.shape
        u = torch.rand(N, k, dtype=dtype)
        v = torch.rand(N, dtype=dtype)
        return rule_with_uniforms(p, q, drafts, u, v)

    rule.__name__ = getattr(rule_with_uniforms, "__name__", "rule")
    return rule


_sequential = sequential


def rule_reports(
    rule: Callable,
    *,
    exact: bool = False,
    sequential: bool = False,
    dtype: torch.dtype = torch.float64,
    n: int = DEFAULT_N,
    seed: int = 0,
    uniforms: torch.dtype | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[Report]:
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
        raise ValueError("uniforms applies only with exact=True (without it the rule draws its own)")
    batched = _sequential(rule) if sequential else rule
    if not exact:
        return [check_rule(batched, n=n, seed=seed, dtype=dtype, progress=progress)]
    uniforms = dtype if uniforms is None else uniforms
    return [
        check_rule_exact(batched, dtype=dtype, progress=progress),
        check_rule(drawing_uniforms(batched, dtype=uniforms), n=n, seed=seed, dtype=dtype, progress=progress),
    ]


def assert_rule(
    rule: Callable,
    *,
    exact: bool = False,
    sequential: bool = False,
    dtype: torch.dtype = torch.float64,
    n: int = DEFAULT_N,
    seed: int = 0,
    uniforms: torch.dtype | None = None,
) -> None:
    """Raise AssertionError listing every failure line of :func:`rule_reports`
    (one line per failure, each report's verdict first); return None when
    ``rule`` passes them all. False-alarm rate: at most ``2 * alpha`` =
    2e-6 with ``exact`` (the exact probes add none), 1e-6 without."""
    failed = [
        str(r)
        for r in rule_reports(
            rule, exact=exact, sequential=sequential, dtype=dtype, n=n, seed=seed, uniforms=uniforms
        )
        if not r.passed
    ]
    if failed:
        raise AssertionError("\n".join(failed))


def assert_generator(generate: Callable, target=None, draft=None, **kwargs) -> None:
    """:func:`check_generator` with the same arguments (``runs=``, ``ks=``,
    ``seed=``, ...), raising AssertionError with the report (its verdict
    first, one line per failure) when it fails; None when ``generate``
    passes. False-alarm rate: at most ``alpha`` (1e-6 by default: the
    chi-square tests share it, Bonferroni; the greedy and output checks are
    exact)."""
    check_generator(generate, target, draft, **kwargs).raise_for_failures()
