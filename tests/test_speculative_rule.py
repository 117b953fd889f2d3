"""Claim S1 (the verification rule) and the single-step half of S2: the
character the rule emits at each position follows the target's p exactly.

The statistical checks live in plain functions (``position_law_failures``)
so that tests/test_speculative_teeth.py runs the very same checks against
broken rules and shows each one fails them (X7).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
import torch
from hypothesis import given

from aftertrain import speculative as S
from aftertrain.decoding import probabilities, sample_token
from aftertrain.stats import ALPHA, chisquare_gof
from strategies import verification_case

TRIALS = 20_000  # rounds per single-step case: enough for chi-square to see a TV of ~0.03


def draw_drafts(q: torch.Tensor, n: int, generator: torch.Generator) -> torch.Tensor:
    """(n, k) drafts, position i drawn from q[i] (the fixed-table setting: a
    draft's law does not depend on the drafts before it)."""
    return torch.stack([torch.multinomial(row, n, replacement=True, generator=generator)
                        for row in q], dim=1) if q.shape[0] else torch.zeros(n, 0, dtype=torch.long)


def emitted_by_position(drafts: torch.Tensor, accepted: torch.Tensor,
                        token: torch.Tensor) -> list[np.ndarray]:
    """For position j = 0 .. k: the characters emitted there, over the rounds
    that reached it (accepted >= j): the draft if it was accepted, else the
    rule's token."""
    k = drafts.shape[1]
    out = []
    for j in range(k + 1):
        reached = accepted >= j
        char = token.clone()
        if j < k:
            char = torch.where(accepted > j, drafts[:, j], token)
        out.append(char[reached].numpy())
    return out


def position_law_failures(p: torch.Tensor, q: torch.Tensor, trials: int, seed: int) -> list[str]:
    """Run ``trials`` independent rounds of the shipped rule (``verify_batch``)
    on fixed (p, q) and list every check that fails:

    - support: a character emitted at position j has p_j > 0 (exact);
    - law: at every position j, the characters emitted there (over the rounds
      that reached it) follow p_j: Pearson chi-square, cells pooled to
      expected >= 5, alpha = 1e-6 (stats.ALPHA);
    - acceptance: a round that reached position j < k accepts its draft with
      probability sum_x min(p_j(x), q_j(x)) = 1 - TV(p_j, q_j): exact
      binomial test, alpha = 1e-6.
    """
    g = torch.Generator().manual_seed(seed)
    drafts = draw_drafts(q, trials, g)
    k = q.shape[0]
    accepted, token = S.verify_batch(p.expand(trials, -1, -1), q.expand(trials, -1, -1), drafts, g)
    failures = []
    for j, chars in enumerate(emitted_by_position(drafts, accepted, token)):
        if chars.size == 0:
            continue
        if (p[j][torch.from_numpy(chars)] == 0).any():
            failures.append(f"position {j}: emitted a character with p = 0")
            continue
        fit = chisquare_gof(chars, p[j].numpy())
        if fit.rejects(ALPHA):
            failures.append(f"position {j}: law differs from p (chi2 {fit.statistic:.1f}, "
                            f"p-value {fit.pvalue:.2g})")
    for j in range(k):
        reached = int((accepted >= j).sum())
        if reached == 0:
            continue
        rate = float(torch.minimum(p[j], q[j]).sum())
        hits = int((accepted > j).sum())
        if rate >= 1.0 - 1e-12 or rate <= 1e-12:
            if hits != round(rate) * reached:
                failures.append(f"position {j}: acceptance {hits}/{reached}, must be {rate:.0f}")
            continue
        pv = scipy.stats.binomtest(hits, reached, min(rate, 1.0)).pvalue
        if pv < ALPHA:
            failures.append(f"position {j}: acceptance {hits}/{reached} against {rate:.4f} "
                            f"(p-value {pv:.2g})")
    return failures


# --- the law, position by position -------------------------------------------------


@pytest.mark.claim("S1")
@given(case=verification_case())
def test_each_emitted_character_follows_p_at_its_position(case):
    """S1/S2 single step. Drafts drawn from q; 20,000 vectorised rounds of the
    shipped rule per hypothesis case (p, q with zeros, one-hot rows, disjoint
    supports, p == q, nearly equal). At every position the emitted character
    follows p (chi-square, alpha 1e-6), never lies outside p's support, and
    the acceptance rate is 1 - TV(p, q) (binomial, alpha 1e-6); no NaN
    anywhere (a NaN would fail the support or shape checks)."""
    p, q = case
    assert position_law_failures(p, q, TRIALS, seed=0) == []


@pytest.mark.claim("S1")
def test_each_emitted_character_follows_p_on_a_fixed_case(record_property):
    """A fixed 4-symbol, k = 3 case with every position's q different from p
    (the case the teeth tests break), 20,000 rounds: every check passes."""
    p, q = FIXED_P, FIXED_Q
    assert position_law_failures(p, q, TRIALS, seed=1) == []
    record_property("measured", "fixed case k=3 V=4: all position laws and acceptance rates pass")


#: A fixed case where every kind of broken rule changes some position's law:
#: q over-proposes symbol 0, p_3 (bonus) differs from p_2, p has zeros.
FIXED_P = torch.tensor([[0.1, 0.4, 0.5, 0.0],
                        [0.3, 0.0, 0.2, 0.5],
                        [0.6, 0.2, 0.2, 0.0],
                        [0.0, 0.1, 0.3, 0.6]], dtype=torch.float64)
FIXED_Q = torch.tensor([[0.7, 0.1, 0.1, 0.1],
                        [0.5, 0.2, 0.1, 0.2],
                        [0.2, 0.3, 0.1, 0.4]], dtype=torch.float64)


# --- the rule on exact inputs ---------------------------------------------------


def rule(p, q, drafts, u, v):
    return S.verify_with_uniforms(torch.tensor(p, dtype=torch.float64)[None],
                                  torch.tensor(q, dtype=torch.float64)[None],
                                  torch.tensor(drafts)[None],
                                  torch.tensor(u, dtype=torch.float64)[None],
                                  torch.tensor([v], dtype=torch.float64))


@pytest.mark.claim("S1")
def test_zero_probability_draft_is_never_accepted_even_at_u_zero():
    """u < p/q is strict: with p(x) = 0 the draft is rejected at u = 0 (a rule
    accepting on u <= p/q would take an impossible character)."""
    a, t = rule([[0.0, 1.0], [0.5, 0.5]], [[0.5, 0.5]], [0], [0.0], 0.3)
    assert int(a[0]) == 0 and int(t[0]) == 1


@pytest.mark.claim("S1")
def test_acceptance_threshold_is_p_over_q():
    """Accept iff u < p(x)/q(x): p(0) / q(0) = 0.25 / 0.5 = 0.5, so u = 0.49
    accepts and u = 0.5 rejects; on rejection the residual
    normalize(max(0, p - q)) = [0, 1] gives symbol 1 whatever v is; after
    acceptance the bonus draw from p_2 = [0.9, 0.1] at v = 0.5 is symbol 0."""
    p, q = [[0.25, 0.75], [0.9, 0.1]], [[0.5, 0.5]]
    assert rule(p, q, [0], [0.49], 0.5) == (torch.tensor([1]), torch.tensor([0]))
    assert rule(p, q, [0], [0.5], 0.0) == (torch.tensor([0]), torch.tensor([1]))


@pytest.mark.claim("S1")
def test_bonus_comes_from_the_distribution_after_the_last_draft():
    """All k = 2 drafts accepted (p = q): the token is the inverse-CDF draw from
    p_3 = [0, 0, 1], never from p_2 = [1, 0, 0]."""
    p = [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    q = [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]]
    a, t = rule(p, q, [1, 0], [0.9, 0.9], 0.5)
    assert (int(a[0]), int(t[0])) == (2, 2)


@pytest.mark.claim("S1")
def test_residual_is_renormalised_before_the_draw():
    """Residual max(0, p - q) = [0, 0.1, 0.1] after rejecting symbol 0: the
    draw must split its mass evenly (v = 0.49 -> 1, v = 0.51 -> 2); without
    renormalisation v = 0.51 falls past the residual's 0.2 mass."""
    p, q = [[0.8, 0.1, 0.1], [1.0, 0.0, 0.0]], [[1.0, 0.0, 0.0]]
    assert int(rule(p, q, [0], [0.9], 0.49)[1][0]) == 1
    assert int(rule(p, q, [0], [0.9], 0.51)[1][0]) == 2


@pytest.mark.claim("S1")
def test_rejection_with_zero_residual_draws_from_p_without_nan():
    """p <= q everywhere (q sums to 1 + 1e-7, within tolerance) and u close to
    1 forces a rejection whose residual max(0, p - q) is all zero: the rule
    falls back to p (no 0/0) and returns a character in p's support."""
    p = [[0.3, 0.7, 0.0], [0.2, 0.3, 0.5]]
    q = [[0.3 + 1e-7, 0.7, 0.0]]
    a, t = rule(p, q, [0], [1 - 1e-12], 0.999)
    assert int(a[0]) == 0 and int(t[0]) == 1


@pytest.mark.claim("S1")
@given(case=verification_case())
def test_batched_rule_equals_the_rule_row_by_row(case):
    """The batch form is the shipped form: 64 rounds with explicit uniforms
    give, row for row, exactly the result of the rule called on each round
    alone (catches a row mixed up with another by broadcasting)."""
    p, q = case
    k, n = q.shape[0], 64
    g = torch.Generator().manual_seed(3)
    drafts = draw_drafts(q, n, g)
    u = torch.rand(n, k, dtype=torch.float64, generator=g)
    v = torch.rand(n, dtype=torch.float64, generator=g)
    a, t = S.verify_with_uniforms(p.expand(n, -1, -1), q.expand(n, -1, -1), drafts, u, v)
    for i in range(n):
        ai, ti = S.verify_with_uniforms(p[None], q[None], drafts[i:i + 1], u[i:i + 1], v[i:i + 1])
        assert (int(a[i]), int(t[i])) == (int(ai[0]), int(ti[0]))


@pytest.mark.claim("S1")
def test_verify_draws_u_then_v_from_the_generator():
    """verify(generator) is verify_with_uniforms with u = rand(1, k) then v =
    rand(1) from that generator, float64, so a seeded run can be replayed."""
    p, q, drafts = FIXED_P, FIXED_Q, torch.tensor([0, 0, 1])
    for seed in range(20):
        got = S.verify(p, q, drafts, torch.Generator().manual_seed(seed))
        g = torch.Generator().manual_seed(seed)
        u = torch.rand(1, 3, dtype=torch.float64, generator=g)
        v = torch.rand(1, dtype=torch.float64, generator=g)
        a, t = S.verify_with_uniforms(p[None], q[None], drafts[None], u, v)
        assert got == (int(a[0]), int(t[0]))


@pytest.mark.claim("S1")
def test_greedy_distributions_accept_exactly_the_argmax():
    """Temperature 0 gives one-hot p and q: a draft is accepted iff it is the
    target's argmax, and on rejection the token is that argmax."""
    logits = torch.tensor([[0.0, 2.0, 1.0], [3.0, 0.0, 0.0]])
    p = probabilities(logits, 0.0)
    assert torch.equal(p, torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]], dtype=torch.float64))
    for x in range(3):
        q = torch.nn.functional.one_hot(torch.tensor([x]), 3).double()
        a, t = S.verify(p, q, torch.tensor([x]), torch.Generator().manual_seed(x))
        assert (a, t) == ((1, 0) if x == 1 else (0, 1))


# --- bad input ---------------------------------------------------------------------


def _valid():
    return FIXED_P.clone(), FIXED_Q.clone(), torch.tensor([0, 0, 1]), torch.Generator()


@pytest.mark.parametrize("change, match", [
    (lambda a: (a[0][:2], *a[1:]), "p must have shape"),
    (lambda a: (a[0], a[1][:, :3], *a[2:]), "q must have shape"),
    (lambda a: (a[0].clone().fill_(math.nan), *a[1:]), "p must be finite"),
    (lambda a: (a[0], a[1] * 1.01, *a[2:]), "must sum to 1"),
    (lambda a: (a[0] - 0.1, *a[1:]), ">= 0"),
    (lambda a: (*a[:2], torch.tensor([0, 0, 4]), a[3]), r"drafts must lie in \[0, 4\)"),
    (lambda a: (*a[:2], torch.tensor([0.0, 0.0, 1.0]), a[3]), "integer"),
    (lambda a: (a[0], torch.tensor([[0.0, 1.0, 0.0, 0.0]] * 3, dtype=torch.float64), *a[2:]),
     "q > 0"),
    (lambda a: (*a[:3], 7), "generator"),
])
def test_verify_rejects_bad_input(change, match):
    """Shapes, NaN, rows not summing to 1, negative mass, out-of-range or
    non-integer drafts, a draft q could not have produced, no generator:
    ValueError naming the problem."""
    with pytest.raises(ValueError, match=match):
        S.verify(*change(_valid()))


def test_verify_with_uniforms_rejects_uniforms_outside_unit_interval():
    p, q, d, _ = _valid()
    with pytest.raises(ValueError, match=r"u must lie in \[0, 1\)"):
        S.verify_with_uniforms(p[None], q[None], d[None], torch.ones(1, 3), torch.zeros(1))
    with pytest.raises(ValueError, match="v must be a tensor of shape"):
        S.verify_with_uniforms(p[None], q[None], d[None], torch.zeros(1, 3), torch.zeros(2))


@pytest.mark.claim("S1")
def test_zero_residual_fallback_never_emits_a_character_outside_p():
    """The fallback of an all-zero residual is p, not q: here q (sum 1 + 1e-7,
    within tolerance) puts 1e-7 on character 2, where p is 0, and the draft is
    that character, so it is rejected whatever u is and max(0, p - q) is all
    zero. With v close to 1 a draw from q would land on character 2 (an
    impossible character under the target); the rule must emit one of p's."""
    p = [[0.3, 0.7, 0.0], [0.2, 0.3, 0.5]]
    q = [[0.3, 0.7, 1e-7]]
    for v in (0.0, 0.5, 1 - 1e-12):
        a, t = rule(p, q, [2], [0.0], v)
        assert int(a[0]) == 0
        assert p[0][int(t[0])] > 0


@pytest.mark.claim("S1")
def test_greedy_distribution_breaks_ties_at_the_first_index_as_plain_decoding():
    """At temperature 0 the draft and target distributions are the one-hot
    argmax, first index on ties, exactly as sample_token picks: for logits
    (1, 3, 3, 0) both choose index 1 (a last-index tie-break would make
    greedy speculative text differ from greedy plain text at every tie)."""
    logits = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
    d = probabilities(logits, 0)
    assert d.tolist() == [[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]
    for row in range(2):
        assert int(d[row].argmax()) == sample_token(logits[row], 0, torch.Generator())
