"""Claim S1 (the verification rule) and the single-step half of S2: the
character the rule emits at each position follows the target's p exactly.

The checks are the public kit's (aftertrain.checks.speculative): the shipped
rule is passed to it as a parameter, and tests/claims_on_model/test_teeth.py
passes broken rules (the bug zoo, aftertrain.checks.zoo) to the very same
checks to show each fails them (X7).
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given

from aftertrain import speculative as S
from aftertrain.checks import speculative as CS
from aftertrain.checks.rule_battery import FIXED_P as _FIXED_P
from aftertrain.checks.rule_battery import FIXED_Q as _FIXED_Q
from aftertrain.core.tolerances import RULE_TRIALS
from aftertrain.lm import decoding as DEC
from aftertrain.lm.decoding import probabilities
from aftertrain.stats import ALPHA
from tests.common.strategies import verification_case

#: The fixed 4-symbol, k = 3 case of the kit's battery: q over-proposes
#: symbol 0, p_3 (bonus) differs from p_2, p has zeros.
FIXED_P = torch.from_numpy(_FIXED_P)
FIXED_Q = torch.from_numpy(_FIXED_Q)


def shipped_rule(p, q, drafts):
    """The shipped batched entry point in the kit's protocol: verify_batch
    with torch's global generator (which the kit seeds)."""
    return S.verify_batch(p, q, drafts, torch.default_generator)


# --- the law, position by position -------------------------------------------------


@pytest.mark.claim("S1")
@given(case=verification_case())
def test_each_emitted_character_follows_p_at_its_position(case):
    """S1/S2 single step. Drafts drawn from q; 20,000 vectorised rounds of the
    shipped rule per hypothesis case (p, q with zeros, one-hot rows, disjoint
    supports, p == q, nearly equal), judged by the kit's check_rule. At every
    position the emitted character follows p (chi-square and TV), never lies
    outside p's support, and the acceptance rate is 1 - TV(p, q) (binomial);
    the outputs are int64 in range (no NaN). Family-wise alpha 1e-6
    (Bonferroni over the case's tests)."""
    p, q = case
    report = CS.check_rule(
        shipped_rule, n=RULE_TRIALS, cases=[("hypothesis case", p, q)], alpha=ALPHA, seed=0
    )
    assert report.passed, str(report)


@pytest.mark.claim("S1")
def test_each_emitted_character_follows_p_on_the_kits_battery(claim_record):
    """The kit's default battery (Dirichlet at V = 4, 8, 32; zeros; the fixed
    4-symbol k = 3 case; one-hot; disjoint supports; p == q; float32
    rounding; probabilities down to 1e-12), 20,000 rounds per case: every
    position law, TV and acceptance rate passes (83 tests, alpha 1e-6 in
    all)."""
    report = CS.check_rule(shipped_rule, alpha=ALPHA, seed=1)
    claim_record.measured(
        "{checks} checks of the default battery, {failures} failures",
        checks=len(report.rows),
        failures=len(report.failures),
    )
    assert report.passed, str(report)


@pytest.mark.claim("S1")
def test_rule_passes_the_forced_uniform_probes():
    """The kit's check_rule_exact on verify_with_uniforms: u = 0 with p(x) = 0
    rejects (u < p/q is strict); u just below p/q accepts and just above
    rejects; the bonus comes from p_{k+1} ([0, 0, 1] -> 2, never p_k's 0);
    the residual [0, 0.1, 0.1] is renormalised (v = 0.49 -> 1, v = 0.51 ->
    2); a forced rejection with an all-zero residual (q = p + 1e-7 on one
    cell, q with 1e-7 on a character outside p, q = p rounded up to
    float32) neither raises nor emits a character outside p, at v = 0, 0.5
    and 1 - 1e-12; a batch of 64 equals the rounds run one by one."""
    report = CS.check_rule_exact(S.verify_with_uniforms)
    assert report.passed, str(report)


# --- the rule on exact inputs ---------------------------------------------------
# aftertrain's own conventions, beyond what the kit requires of any rule:
# strict at u = p/q exactly (the kit only requires it at p = 0), and an
# all-zero residual falls back to p itself (the kit only requires p's support).


def rule(p, q, drafts, u, v):
    return S.verify_with_uniforms(
        torch.tensor(p, dtype=torch.float64)[None],
        torch.tensor(q, dtype=torch.float64)[None],
        torch.tensor(drafts)[None],
        torch.tensor(u, dtype=torch.float64)[None],
        torch.tensor([v], dtype=torch.float64),
    )


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
    alone (catches a row mixed up with another by broadcasting); the kit's
    check_rule_exact runs this on the hypothesis case (with its probes)."""
    p, q = case
    report = CS.check_rule_exact(S.verify_with_uniforms, cases=[("hypothesis case", p, q)])
    assert report.passed, str(report)


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


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda a: (a[0][:2], *a[1:]), "p must have shape"),
        (lambda a: (a[0], a[1][:, :3], *a[2:]), "q must have shape"),
        (lambda a: (a[0].clone().fill_(math.nan), *a[1:]), "p must be finite"),
        (lambda a: (a[0], a[1] * 1.01, *a[2:]), "must sum to 1"),
        (lambda a: (a[0] - 0.1, *a[1:]), ">= 0"),
        (lambda a: (*a[:2], torch.tensor([0, 0, 4]), a[3]), r"drafts must lie in \[0, 4\)"),
        (lambda a: (*a[:2], torch.tensor([0.0, 0.0, 1.0]), a[3]), "integer"),
        (lambda a: (a[0], torch.tensor([[0.0, 1.0, 0.0, 0.0]] * 3, dtype=torch.float64), *a[2:]), "q > 0"),
        (lambda a: (*a[:3], 7), "generator"),
    ],
)
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
def test_greedy_distribution_breaks_ties_at_the_first_index_as_plain_decoding():
    """At temperature 0 the draft and target distributions are the one-hot
    argmax, first index on ties, exactly as sample_token picks: for logits
    (1, 3, 3, 0) both choose index 1 (a last-index tie-break would make
    greedy speculative text differ from greedy plain text at every tie)."""
    logits = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
    d = probabilities(logits, 0)
    assert d.tolist() == [[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]
    for row in range(2):
        assert int(d[row].argmax()) == DEC.sample_token(logits[row], 0, torch.Generator())


@pytest.mark.parametrize("v", [0.0, 0.25, 0.75, 0.999])
def test_an_empty_residual_draws_from_p_inside_its_support(v):
    """A rejection whose residual is zero in every cell (p <= q everywhere:
    q puts 1e-300 where p puts nothing and equals p elsewhere, both summing
    to 1 in float64) draws the next token from p, so never the cell p gives
    no mass, whatever v. A draw from q there would give that cell at v = 0.
    The batch rule and the fast loop's round rule alike."""
    from aftertrain.speculative.rounds import round_rule

    p = torch.tensor([[[0.0, 0.5, 0.5], [0.0, 0.5, 0.5]]], dtype=torch.float64)
    q = torch.tensor([[[1e-300, 0.5, 0.5]]], dtype=torch.float64)
    accepted, token = S.verify_with_uniforms(
        p, q, torch.tensor([[0]]), torch.tensor([[0.0]]), torch.tensor([v])
    )
    assert (int(accepted), int(token)) == (0, 1 if v < 0.5 else 2)
    logits = torch.tensor([[-math.inf, 0.0, 0.0]] * 2)
    assert round_rule(logits, [0], [q[0, 0].tolist()], [1e-300], [0.0], v, 1.0) == (0, 1 if v < 0.5 else 2)
