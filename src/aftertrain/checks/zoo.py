"""A zoo of real-world speculative-sampling bugs, for calibrating checks.

Each variant is a correct implementation with one named bug: broken
verification rules (:class:`RuleBug`, written as functions of their
uniforms, the protocol of
:func:`aftertrain.checks.speculative.check_rule_exact`; wrap one with
:func:`aftertrain.checks.speculative.drawing_uniforms` for ``check_rule``)
and broken decoding loops (:class:`GeneratorBug`, the protocol of
``check_generator``). :data:`ZOO` says which check of the kit catches each,
and at which precision; docs/checks.md gives each one's measured detection
rate (tools/zoo_rates.py).

``make_rule()`` and ``make_generator()`` without a bug are the correct
rule and loop; the rule equals :func:`aftertrain.speculative.verify_with_uniforms`
bit for bit (tests/claims_on_model/test_teeth.py). The rule computes in the
dtype its inputs promote to (the inverse CDF's running sum in float32 at
least), so handed bfloat16 p and q and float32 uniforms it is the correct
rule of a bfloat16 sampler.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

import torch

__all__ = [
    "Check",
    "GeneratorBug",
    "RuleBug",
    "Variant",
    "ZOO",
    "detect",
    "make_generator",
    "make_rule",
]


class RuleBug(enum.Enum):
    """A broken verification rule; the value is its one-line description."""

    ALWAYS_ACCEPT = "always accept"
    #: the token after a rejection drawn from p, not the residual
    RESAMPLE_FROM_P = "resample from p"
    RESIDUAL_Q_MINUS_P = "residual q - p"
    #: the bonus drawn from p_k instead of p_{k+1}
    BONUS_FROM_KTH = "bonus from k-th"
    #: inverse CDF of the raw residual: v compared with unnormalised mass
    SKIP_RENORMALISATION = "skip renormalisation"
    #: accepts a draft with p(x) = 0 when u = 0; the residual is correct
    ACCEPT_U_LE = "accept u <= p/q"
    #: the rule computes with q rounded to bfloat16, p in float32
    Q_IN_BFLOAT16 = "q in bfloat16"
    #: an all-zero residual normalised to NaN, then argmax: token 0 whatever p(0) is
    NAN_RESIDUAL_ARGMAX = "argmax of a NaN residual"
    #: u <= p/q and an all-zero residual normalised to NaN (argmax): the
    #: residual bug shows only where u forces a rejection (u near 1)
    ACCEPT_U_LE_NAN_RESIDUAL = "accept u <= p/q, argmax of a NaN residual"
    #: u <= p/q in a bfloat16 sampler: bfloat16 ``rand`` is 0 with probability ~2e-3
    BFLOAT16_RAND_ACCEPT_U_LE = "bfloat16 uniforms, accept u <= p/q"
    #: the all-zero-residual fallback tested on the batch's total mass
    #: (``residual.sum() == 0``): right for one round, while in a batch the
    #: empty row is divided by zero and the batch raises
    BATCH_WIDE_FALLBACK = "zero-residual fallback tested on the whole batch"


class GeneratorBug(enum.Enum):
    """A broken decoding loop; the value is its one-line description."""

    #: drafts sampled from the top-1 (top-k with k = 1) of q, the rule given all of q
    TOP_K_DRAFT_UNFILTERED = "top-k draft reported unfiltered"
    #: q at the temperature, p at temperature 1
    TEMPERATURE_ON_DRAFT_ONLY = "temperature on the draft only"
    #: drafts sampled at the temperature, q reported at temperature 1
    Q_SCORED_AT_T1 = "q scored at temperature 1"


class Check(enum.Enum):
    """The kit check that must reject a zoo variant."""

    RULE = "check_rule"
    RULE_EXACT = "check_rule_exact"
    GENERATOR = "check_generator"


def _as_bug(bug, kind: type[enum.Enum]):
    """``bug`` as a member of ``kind``: a member, its value (the description) or None."""
    if bug is None or isinstance(bug, kind):
        return bug
    try:
        return kind(bug)
    except ValueError:
        raise ValueError(f"bug must be None or one of {[b.value for b in kind]}, got {bug!r}") from None


_ACCEPT_LE = (RuleBug.ACCEPT_U_LE, RuleBug.ACCEPT_U_LE_NAN_RESIDUAL, RuleBug.BFLOAT16_RAND_ACCEPT_U_LE)


def _residual(bug: RuleBug | None, p_n: torch.Tensor, q_n: torch.Tensor) -> torch.Tensor:
    """The law the token after a rejection is drawn from (unnormalised
    unless the bug normalises it)."""
    if bug is RuleBug.RESAMPLE_FROM_P:
        return p_n
    if bug is RuleBug.RESIDUAL_Q_MINUS_P:
        return (q_n - p_n).clamp_min(0)
    residual = (p_n - q_n).clamp_min(0)
    if bug in (RuleBug.NAN_RESIDUAL_ARGMAX, RuleBug.ACCEPT_U_LE_NAN_RESIDUAL):
        return residual / residual.sum(-1, keepdim=True)  # NaN where all zero
    if bug is RuleBug.BATCH_WIDE_FALLBACK:
        if float(residual.sum()) <= 0:  # the batch's total: right for N = 1 only
            return p_n
        residual = residual / residual.sum(-1, keepdim=True)
        if not bool(torch.isfinite(residual).all()):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        return residual
    empty = (residual.sum(-1) <= 0).unsqueeze(-1)
    return torch.where(empty, p_n, residual)


def make_rule(bug: RuleBug | str | None = None) -> Callable:
    """The verification rule ``rule(p, q, drafts, u, v)`` with ``bug`` (a
    :class:`RuleBug` or its description) or, with None, without: accept
    ``x_i`` iff ``u_i * q_i(x_i) < p_i(x_i)``; at the first rejection ``a``
    draw from ``max(0, p_a - q_a)`` by inverse CDF at ``v`` (p_a itself when
    that is all zero), after k acceptances from ``p_{k+1}``."""
    bug = _as_bug(bug, RuleBug)

    def rule(p, q, drafts, u, v):
        if bug is RuleBug.Q_IN_BFLOAT16:
            p, q = p.float().double(), q.to(torch.bfloat16).double()
        N, k = drafts.shape
        px = p[:, :k].gather(2, drafts.unsqueeze(2)).squeeze(2)
        qx = q.gather(2, drafts.unsqueeze(2)).squeeze(2)
        if bug is RuleBug.ALWAYS_ACCEPT:
            ok = torch.ones_like(px, dtype=torch.bool)
        elif bug in _ACCEPT_LE:
            ok = u * qx <= px
        else:
            ok = u * qx < px
        accepted = ok.long().cumprod(1).sum(1)
        rows = torch.arange(N)
        at = accepted
        if bug is RuleBug.BONUS_FROM_KTH:
            at = torch.where(accepted == k, (accepted - 1).clamp_min(0), accepted)
        p_n = p[rows, at]
        q_n = torch.cat([q, q.new_zeros(N, 1, q.shape[-1])], 1)[rows, accepted]
        residual = _residual(bug, p_n, q_n)
        if bug in (RuleBug.NAN_RESIDUAL_ARGMAX, RuleBug.ACCEPT_U_LE_NAN_RESIDUAL):
            # Where the residual is NaN the draw is argmax (first NaN: index 0).
            nan = residual.isnan().any(-1)
            residual = torch.where(nan.unsqueeze(-1), p_n, residual)
        else:
            nan = torch.zeros(N, dtype=torch.bool)
        # A low-precision sampler still accumulates the CDF in float32 at least
        # (a bfloat16 running sum moves a cell's mass by 2**-9 of the sum).
        cdf = residual.cumsum(-1, dtype=torch.promote_types(residual.dtype, torch.float32))
        total = cdf[:, -1:]
        if bug is RuleBug.SKIP_RENORMALISATION:  # v compared with the raw residual mass
            total = torch.ones_like(total)
        x = torch.minimum(
            v.unsqueeze(-1).to(cdf.dtype) * total, torch.nextafter(total, torch.zeros_like(total))
        )
        idx = torch.searchsorted(cdf, x, right=True).squeeze(-1)
        token = idx.clamp_max(residual.shape[-1] - 1)
        return accepted, torch.where(nan, torch.zeros_like(token), token)

    rule.__name__ = f"zoo rule ({bug.value if bug else 'correct'})"
    return rule


def _dist(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    if temperature == 0:
        return torch.nn.functional.one_hot(torch.argmax(logits, -1), logits.shape[-1]).double()
    return torch.softmax(logits.double() / temperature, dim=-1)


def _draw(dist: torch.Tensor, generator: torch.Generator) -> int:
    cdf = dist.cumsum(-1)
    x = torch.rand(1, dtype=torch.float64, generator=generator) * cdf[-1]
    return int(
        torch.searchsorted(cdf, torch.minimum(x, torch.nextafter(cdf[-1:], torch.zeros(1))), right=True)[0]
    )


def make_generator(
    bug: GeneratorBug | str | None = None, top_k: int = 1, rule: Callable | None = None
) -> Callable:
    """A plain speculative decoding loop (whole-text forward passes, no cache)
    with ``bug`` (a :class:`GeneratorBug` or its description) or none,
    following ``check_generator``'s protocol. Each round drafts ``min(k,
    remaining - 1)`` tokens, scores them with the target and applies
    ``rule`` (a rule of the form ``rule(p, q, drafts, u, v)``; default the
    correct one), so a broken rule can be run through a whole loop too."""
    bug = _as_bug(bug, GeneratorBug)
    if rule is None:
        rule = make_rule()
    elif not callable(rule):
        raise ValueError(f"rule must be callable, got {type(rule).__name__}")

    def draft_round(draft, text, kk, temperature, generator):
        drafts, qs = [], []
        for _ in range(kk):
            q = _dist(draft(torch.tensor([text + drafts]))[0, -1], temperature)
            sample_from = q
            if bug is GeneratorBug.TOP_K_DRAFT_UNFILTERED:
                keep = torch.zeros_like(q, dtype=torch.bool)
                keep[torch.topk(q, min(top_k, q.numel())).indices] = True
                sample_from = torch.where(keep, q, torch.zeros_like(q))
            drafts.append(_draw(sample_from, generator))
            if bug is GeneratorBug.Q_SCORED_AT_T1 and temperature > 0:
                q = _dist(draft(torch.tensor([text + drafts[:-1]]))[0, -1], 1.0)
            qs.append(q)
        return drafts, qs

    @torch.no_grad()
    def generate(target, draft, prompt, n_new, k, temperature, generator):
        text = prompt.tolist()
        end = len(text) + n_new
        while len(text) < end:
            kk = min(k, end - len(text) - 1)
            drafts, qs = draft_round(draft, text, kk, temperature, generator)
            logits = target(torch.tensor([text + drafts]))[0, -(kk + 1) :]
            p = _dist(logits, 1.0 if bug is GeneratorBug.TEMPERATURE_ON_DRAFT_ONLY else temperature)
            V = p.shape[-1]
            q = torch.stack(qs) if qs else torch.zeros(0, V, dtype=torch.float64)
            u = torch.rand(1, kk, dtype=torch.float64, generator=generator)
            v = torch.rand(1, dtype=torch.float64, generator=generator)
            a, t = rule(p[None], q[None], torch.tensor([drafts], dtype=torch.long).reshape(1, kk), u, v)
            text += drafts[: int(a[0])] + [int(t[0])]
        return torch.tensor(text[len(prompt) :], dtype=torch.long)

    generate.__name__ = f"zoo generator ({bug.value if bug else getattr(rule, '__name__', 'correct')})"
    return generate


@dataclass(frozen=True)
class Variant:
    """A zoo entry: ``bug`` (a :class:`RuleBug`, whose ``impl`` is
    ``impl(p, q, drafts, u, v)``, or a :class:`GeneratorBug`), ``caught_by``
    the kit check that must reject it, at ``dtype`` (the precision the
    sampler is deployed in: the kit hands it p and q in that dtype) with
    uniforms drawn in ``uniforms`` (``check_rule``; a correct low-precision
    sampler draws float32 uniforms: bfloat16 ones hold 0 with probability
    ~2e-3 and are 2**-8 apart below 1, which moves the law)."""

    bug: RuleBug | GeneratorBug
    caught_by: Check
    dtype: torch.dtype = torch.float64
    uniforms: torch.dtype = torch.float64
    note: str = ""

    @property
    def name(self) -> str:
        """The bug's description (its enum value), the entry's name in the zoo."""
        return self.bug.value

    def impl(self) -> Callable:
        """A fresh implementation with this bug: a verification rule ``rule(p, q, drafts, u, v)``
        (:func:`make_rule`) for a :class:`RuleBug`, a decoding loop (:func:`make_generator`)
        for a :class:`GeneratorBug`."""
        return make_rule(self.bug) if isinstance(self.bug, RuleBug) else make_generator(self.bug)


_U_ZERO_NOTE = (
    "accepting at u = 0 has probability 0 (2**-53 per draft), so no sample size "
    "shows it; only the forced-uniform probe does"
)
_EXACT = {
    RuleBug.ACCEPT_U_LE: _U_ZERO_NOTE,
    RuleBug.NAN_RESIDUAL_ARGMAX: "the residual is all zero only where p == q up to "
    "rounding: probability ~1e-7 per round",
    RuleBug.ACCEPT_U_LE_NAN_RESIDUAL: _U_ZERO_NOTE,
    RuleBug.BATCH_WIDE_FALLBACK: "needs an all-zero residual in a batch of ordinary rounds",
}

ZOO: dict[RuleBug | GeneratorBug, Variant] = {
    **{
        b: Variant(b, Check.RULE_EXACT, note=_EXACT[b]) if b in _EXACT else Variant(b, Check.RULE)
        for b in RuleBug
        if b is not RuleBug.BFLOAT16_RAND_ACCEPT_U_LE
    },
    RuleBug.BFLOAT16_RAND_ACCEPT_U_LE: Variant(
        RuleBug.BFLOAT16_RAND_ACCEPT_U_LE,
        Check.RULE,
        torch.bfloat16,
        torch.bfloat16,
        "gpt-fast in bfloat16: the drafts of the disjoint-supports case (p = 0) are accepted "
        "whenever the bfloat16 uniform is 0",
    ),
    **{b: Variant(b, Check.GENERATOR) for b in GeneratorBug},
}


def detect(
    variant: RuleBug | GeneratorBug | str | None,
    seed: int = 0,
    *,
    progress: Callable[[str], None] | None = None,
):
    """Run the check of :data:`ZOO` that must catch ``variant`` (a bug or its
    description; None: the correct rule through ``check_rule``) at the
    default settings and the variant's dtype with ``seed``; return its Report."""
    from aftertrain.checks import speculative as CS

    if variant is None:
        return CS.check_rule(CS.drawing_uniforms(make_rule()), seed=seed, progress=progress)
    if isinstance(variant, str):
        by_name = {v.name: v for v in ZOO.values()}
        if variant not in by_name:
            raise ValueError(f"variant must be None or one of {list(by_name)}, got {variant!r}")
        v = by_name[variant]
    elif variant in ZOO:
        v = ZOO[variant]
    else:
        raise ValueError(f"variant must be None or one of {list(ZOO)}, got {variant!r}")
    if v.caught_by is Check.RULE:
        return CS.check_rule(
            CS.drawing_uniforms(v.impl(), dtype=v.uniforms), seed=seed, dtype=v.dtype, progress=progress
        )
    if v.caught_by is Check.RULE_EXACT:
        return CS.check_rule_exact(v.impl(), seed=seed, dtype=v.dtype, progress=progress)
    return CS.check_generator(v.impl(), seed=seed, progress=progress)
