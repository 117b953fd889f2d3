"""Claim X7: every exactness check rejects known-broken samplers.

Each broken sampler is the shipped rule with one change, written here (not
in src/) and swapped in for ``aftertrain.speculative.rule._rule`` (or, for the
temperature bug, ``_draft_tokens``) with monkeypatch, so the checks run
through the shipped entry points (verify_batch, verify_with_uniforms,
speculative_generate) exactly as in the real tests. ``make_rule()`` with
no change is checked to equal the shipped rule bit for bit first, so each
variant differs from it only in the named bug.
"""

from __future__ import annotations

import pytest
import torch

from aftertrain import drafts as D
from aftertrain import speculative as S
from aftertrain.decoding import probabilities
from aftertrain.experiments import speculative as XS
from aftertrain.speculative import generator as SG
from aftertrain.speculative import rule as SR
from aftertrain.stats import ALPHA
from test_speculative_exact import joint_law_fit
from test_speculative_rule import FIXED_P, FIXED_Q, TRIALS, position_law_failures, rule
from strategies import verification_case
from hypothesis import given

BUGS = ("always accept", "resample from p", "residual q - p", "accept u <= p/q",
        "bonus from k-th", "skip renormalisation")


def make_rule(bug: str | None = None):
    """The verification rule with ``bug`` (one of BUGS) or none."""

    def broken(p, q, drafts, u, v):
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

    return broken


@given(case=verification_case())
def test_reference_copy_of_the_rule_equals_the_shipped_rule(case):
    """make_rule() without a bug returns exactly what the shipped rule returns
    on 256 rounds with random uniforms, so each broken variant is the shipped
    rule plus one bug."""
    p, q = case
    k, n = q.shape[0], 256
    g = torch.Generator().manual_seed(5)
    drafts = torch.stack([torch.multinomial(r, n, True, generator=g) for r in q], 1)
    u = torch.rand(n, k, dtype=torch.float64, generator=g)
    v = torch.rand(n, dtype=torch.float64, generator=g)
    P, Q = p.expand(n, -1, -1), q.expand(n, -1, -1)
    ours = make_rule()(P, Q, drafts, u, v)
    shipped = S.verify_with_uniforms(P, Q, drafts, u, v)
    assert torch.equal(ours[0], shipped[0]) and torch.equal(ours[1], shipped[1])


def zero_probability_draft_accepted() -> bool:
    """True if the rule accepts a draft with p(x) = 0 at u = 0 (the exact check
    of test_zero_probability_draft_is_never_accepted_even_at_u_zero)."""
    a, t = rule([[0.0, 1.0], [0.5, 0.5]], [[0.5, 0.5]], [0], [0.0], 0.3)
    return int(a[0]) != 0 or int(t[0]) != 1


#: Which exactness check catches which bug ("position law": the single-step
#: law/acceptance check of test_speculative_rule; "u = 0": the exact edge
#: check; "joint law": X6 on toy models through speculative_generate).
CAUGHT_BY = {
    "always accept": ("position law", "joint law"),
    "resample from p": ("position law", "joint law"),
    "residual q - p": ("position law", "joint law"),
    "accept u <= p/q": ("u = 0",),
    "bonus from k-th": ("position law", "joint law"),
    "skip renormalisation": ("position law",),
}


def check_fails(check: str) -> bool:
    if check == "position law":
        return position_law_failures(FIXED_P, FIXED_Q, TRIALS, seed=1) != []
    if check == "u = 0":
        return zero_probability_draft_accepted()
    if check == "joint law":
        return joint_law_fit(k=1, runs=600).rejects(ALPHA)
    raise AssertionError(check)


@pytest.mark.claim("X7")
@pytest.mark.parametrize("bug, check", [(b, c) for b in BUGS for c in CAUGHT_BY[b]])
def test_broken_sampler_fails_the_exactness_check(bug, check, monkeypatch, record_property):
    """X7. The shipped rule passes each check (tests/test_speculative_rule.py,
    tests/test_speculative_exact.py); with ``bug`` swapped in, the named check
    fails. The joint-law check uses 600 runs at k = 1 here (the real test
    runs 1,500 at k = 1, 2, 4): the bugs move the law far more than that
    sample's noise."""
    monkeypatch.setattr(SR, "_rule", make_rule(bug))
    assert check_fails(check), f"{check} check did not catch '{bug}'"
    record_property("measured", f"'{bug}' caught by {check}")


@pytest.mark.claim("X7")
def test_draft_scored_at_another_temperature_fails_the_joint_law_check(monkeypatch,
                                                                      record_property):
    """X7. Drafts sampled at temperature 0.3 but scored with q at temperature
    1: the joint law of the first three symbols (X6 check, 600 runs, k = 1)
    rejects; the shipped proposal passes it in test_speculative_exact."""
    shipped = SG._draft_tokens

    def broken(decoder, pending, k, temperature, generator):
        logits_seen = []
        real_feed = decoder.feed

        def feed(tokens):
            out = real_feed(tokens)
            logits_seen.append(out[-1])
            return out

        decoder.feed = feed
        try:
            drafts, _ = shipped(decoder, pending, k, temperature, generator)
        finally:
            del decoder.feed
        return drafts, torch.stack([probabilities(l, 1.0) for l in logits_seen])

    monkeypatch.setattr(SG, "_draft_tokens", broken)
    assert joint_law_fit(k=1, runs=600).rejects(ALPHA)
    record_property("measured", "q at temperature 1 for drafts sampled at 0.3: caught by joint law")


@pytest.mark.claim("X7")
def test_always_accept_fails_the_first_character_check_on_the_reference(reference, monkeypatch,
                                                                       speculative_drafts,
                                                                       record_property):
    """X7 for S2: with 'always accept' the 20,000 first characters follow the
    bigram draft's law, and the S2 check (chi-square at alpha 1e-6 and the TV
    bound) rejects them."""
    monkeypatch.setattr(SR, "_rule", make_rule("always accept"))
    row = XS.first_token_table(reference, {"bigram": speculative_drafts[D.DraftKind.BIGRAM]},
                              null_trials=200)[0]
    record_property("measured", f"always accept: TV {row['tv']:.4f} (bound {row['tv_threshold']:.4f})")
    assert row["chi2_pvalue"] < ALPHA and row["tv"] > row["tv_threshold"], row
