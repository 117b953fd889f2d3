"""A zoo of real-world speculative-sampling bugs, for calibrating checks.

Each variant is a correct implementation with one named bug: seven broken
verification rules (written as functions of their uniforms, the protocol of
:func:`aftertrain.checks.speculative.check_rule_exact`; wrap one with
:func:`aftertrain.checks.speculative.drawing_uniforms` for ``check_rule``)
and three broken decoding loops (the protocol of ``check_generator``).
:data:`ZOO` says which check of the kit catches each; docs/checks.md gives
each one's measured detection rate (tools/zoo_rates.py).

``make_rule()`` and ``make_generator()`` without a bug are the correct
rule and loop; the rule equals :func:`aftertrain.speculative.verify_with_uniforms`
bit for bit (tests/claims/test_teeth.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

__all__ = [
    "GENERATOR_BUGS",
    "RULE_BUGS",
    "ZOO",
    "Variant",
    "detect",
    "make_generator",
    "make_rule",
]

RULE_BUGS = (
    "always accept",
    "resample from p",  # the token after a rejection drawn from p, not the residual
    "residual q - p",
    "bonus from k-th",  # the bonus drawn from p_k instead of p_{k+1}
    "skip renormalisation",  # inverse CDF of the raw residual: v compared with unnormalised mass
    "accept u <= p/q",  # accepts a draft with p(x) = 0 when u = 0
    "q in bfloat16",  # the rule computes with q rounded to bfloat16, p in float32
)
GENERATOR_BUGS = (
    # drafts sampled from the top-1 (top-k with k = 1) of q, the rule given all of q
    "top-k draft reported unfiltered",
    "temperature on the draft only",  # q at the temperature, p at temperature 1
    "q scored at temperature 1",  # drafts sampled at the temperature, q reported at temperature 1
)


def make_rule(bug: str | None = None) -> Callable:
    """The verification rule ``rule(p, q, drafts, u, v)`` with ``bug`` (one
    of :data:`RULE_BUGS`) or, with None, without: accept ``x_i`` iff ``u_i *
    q_i(x_i) < p_i(x_i)``; at the first rejection ``a`` draw from
    ``max(0, p_a - q_a)`` by inverse CDF at ``v`` (p_a itself when that is
    all zero), after k acceptances from ``p_{k+1}``."""
    if bug is not None and bug not in RULE_BUGS:
        raise ValueError(f"bug must be None or one of {RULE_BUGS}, got {bug!r}")

    def rule(p, q, drafts, u, v):
        if bug == "q in bfloat16":
            p, q = p.float().double(), q.to(torch.bfloat16).double()
        N, k = drafts.shape
        px = p[:, :k].gather(2, drafts.unsqueeze(2)).squeeze(2)
        qx = q.gather(2, drafts.unsqueeze(2)).squeeze(2)
        if bug == "always accept":
            ok = torch.ones_like(px, dtype=torch.bool)
        elif bug == "accept u <= p/q":
            ok = u * qx <= px
        else:
            ok = u * qx < px
        accepted = ok.long().cumprod(1).sum(1)
        rows = torch.arange(N)
        at = accepted
        if bug == "bonus from k-th":
            at = torch.where(accepted == k, (accepted - 1).clamp_min(0), accepted)
        p_n = p[rows, at]
        q_n = torch.cat([q, q.new_zeros(N, 1, q.shape[-1])], 1)[rows, accepted]
        if bug == "resample from p":
            residual = p_n
        elif bug == "residual q - p":
            residual = (q_n - p_n).clamp_min(0)
        else:
            residual = (p_n - q_n).clamp_min(0)
        empty = (residual.sum(-1) <= 0).unsqueeze(-1)
        residual = torch.where(empty, p_n, residual)
        cdf = residual.cumsum(-1)
        total = cdf[:, -1:]
        if bug == "skip renormalisation":  # v compared with the raw residual mass
            total = torch.ones_like(total)
        x = torch.minimum(v.unsqueeze(-1) * total, torch.nextafter(total, torch.zeros_like(total)))
        idx = torch.searchsorted(cdf, x, right=True).squeeze(-1)
        return accepted, idx.clamp_max(residual.shape[-1] - 1)

    rule.__name__ = f"zoo rule ({bug or 'correct'})"
    return rule


def _dist(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    if temperature == 0:
        return torch.nn.functional.one_hot(torch.argmax(logits, -1), logits.shape[-1]).double()
    return torch.softmax(logits.double() / temperature, dim=-1)


def _draw(dist: torch.Tensor, generator: torch.Generator) -> int:
    cdf = dist.cumsum(-1)
    x = torch.rand(1, dtype=torch.float64, generator=generator) * cdf[-1]
    return int(torch.searchsorted(cdf, torch.minimum(x, torch.nextafter(cdf[-1:], torch.zeros(1))),
                                  right=True)[0])


def make_generator(bug: str | None = None, top_k: int = 1, rule: Callable | None = None) -> Callable:
    """A plain speculative decoding loop (whole-text forward passes, no cache)
    with ``bug`` (one of :data:`GENERATOR_BUGS`) or none, following
    ``check_generator``'s protocol. Each round drafts ``min(k, remaining -
    1)`` tokens, scores them with the target and applies ``rule`` (a rule of
    the form ``rule(p, q, drafts, u, v)``; default the correct one), so a
    broken rule can be run through a whole loop too."""
    if bug is not None and bug not in GENERATOR_BUGS:
        raise ValueError(f"bug must be None or one of {GENERATOR_BUGS}, got {bug!r}")
    if rule is None:
        rule = make_rule()
    elif not callable(rule):
        raise ValueError(f"rule must be callable, got {type(rule).__name__}")

    @torch.no_grad()
    def generate(target, draft, prompt, n_new, k, temperature, generator):
        text = prompt.tolist()
        end = len(text) + n_new
        while len(text) < end:
            kk = min(k, end - len(text) - 1)
            drafts, qs = [], []
            for _ in range(kk):
                q = _dist(draft(torch.tensor([text + drafts]))[0, -1], temperature)
                sample_from = q
                if bug == "top-k draft reported unfiltered":
                    keep = torch.zeros_like(q, dtype=torch.bool)
                    keep[torch.topk(q, min(top_k, q.numel())).indices] = True
                    sample_from = torch.where(keep, q, torch.zeros_like(q))
                drafts.append(_draw(sample_from, generator))
                if bug == "q scored at temperature 1" and temperature > 0:
                    q = _dist(draft(torch.tensor([text + drafts[:-1]]))[0, -1], 1.0)
                qs.append(q)
            logits = target(torch.tensor([text + drafts]))[0, -(kk + 1):]
            p = _dist(logits, 1.0 if bug == "temperature on the draft only" else temperature)
            V = p.shape[-1]
            q = torch.stack(qs) if qs else torch.zeros(0, V, dtype=torch.float64)
            u = torch.rand(1, kk, dtype=torch.float64, generator=generator)
            v = torch.rand(1, dtype=torch.float64, generator=generator)
            a, t = rule(p[None], q[None], torch.tensor([drafts], dtype=torch.long).reshape(1, kk),
                        u, v)
            text += drafts[:int(a[0])] + [int(t[0])]
        return torch.tensor(text[len(prompt):], dtype=torch.long)

    generate.__name__ = f"zoo generator ({bug or getattr(rule, '__name__', 'correct')})"
    return generate


@dataclass(frozen=True)
class Variant:
    """A zoo entry: ``kind`` "rule" (``impl(p, q, drafts, u, v)``) or
    "generator"; ``caught_by`` the kit check that must reject it."""

    name: str
    kind: str
    caught_by: str
    note: str = ""

    def impl(self) -> Callable:
        return make_rule(self.name) if self.kind == "rule" else make_generator(self.name)


ZOO: dict[str, Variant] = {
    **{b: Variant(b, "rule", "check_rule") for b in RULE_BUGS if b != "accept u <= p/q"},
    "accept u <= p/q": Variant("accept u <= p/q", "rule", "check_rule_exact",
                               "accepting at u = 0 has probability 0 (2**-53 per draft), so no "
                               "sample size shows it; only the forced-uniform probe does"),
    **{b: Variant(b, "generator", "check_generator") for b in GENERATOR_BUGS},
}


def detect(variant: str | None, seed: int = 0):
    """Run the check of :data:`ZOO` that must catch ``variant`` (None: the
    correct rule through ``check_rule``) at the default settings with
    ``seed``; return its Report."""
    from aftertrain.checks import speculative as CS

    if variant is None:
        return CS.check_rule(CS.drawing_uniforms(make_rule()), seed=seed)
    if variant not in ZOO:
        raise ValueError(f"variant must be None or one of {list(ZOO)}, got {variant!r}")
    v = ZOO[variant]
    if v.caught_by == "check_rule":
        return CS.check_rule(CS.drawing_uniforms(v.impl()), seed=seed)
    if v.caught_by == "check_rule_exact":
        return CS.check_rule_exact(v.impl())
    return CS.check_generator(v.impl(), seed=seed)
