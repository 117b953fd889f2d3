"""Claim X7: every exactness check rejects known-broken samplers.

Each broken sampler comes from the bug zoo (aftertrain.checks.zoo): the
correct rule with one change, or a decoding loop with one change. It is
passed as a parameter to the very checks aftertrain's own rule and
generator pass (the kit, aftertrain.checks.speculative), with the settings
of tests/speculative/test_rule.py and tests/speculative/test_generator.py.
``zoo.make_rule()`` with no change is checked to equal the shipped rule bit
for bit first, so each variant differs from it only in the named bug.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given

from aftertrain import speculative as S
from aftertrain.checks import speculative as CS
from aftertrain.checks import zoo
from aftertrain.checks.rule_battery import FIXED_P as _FIXED_P
from aftertrain.checks.rule_battery import FIXED_Q as _FIXED_Q
from aftertrain.core.tolerances import RULE_TRIALS
from aftertrain.experiments import speculative as XS
from aftertrain.lm import decoding as DEC
from aftertrain.lm import hf
from aftertrain.lm.decoding import probabilities
from aftertrain.speculative import drafts as D
from aftertrain.stats import ALPHA
from tests.common.kit import joint_law_report
from tests.common.strategies import verification_case

FIXED_P, FIXED_Q = torch.from_numpy(_FIXED_P), torch.from_numpy(_FIXED_Q)

BUGS = (
    "always accept",
    "resample from p",
    "residual q - p",
    "accept u <= p/q",
    "bonus from k-th",
    "skip renormalisation",
)


@given(case=verification_case())
def test_reference_copy_of_the_rule_equals_the_shipped_rule(case):
    """zoo.make_rule() without a bug returns exactly what the shipped rule
    returns on 256 rounds with random uniforms, so each broken variant is the
    shipped rule plus one bug."""
    p, q = case
    k, n = q.shape[0], 256
    g = torch.Generator().manual_seed(5)
    drafts = torch.stack([torch.multinomial(r, n, True, generator=g) for r in q], 1)
    u = torch.rand(n, k, dtype=torch.float64, generator=g)
    v = torch.rand(n, dtype=torch.float64, generator=g)
    P, Q = p.expand(n, -1, -1), q.expand(n, -1, -1)
    ours = zoo.make_rule()(P, Q, drafts, u, v)
    shipped = S.verify_with_uniforms(P, Q, drafts, u, v)
    assert torch.equal(ours[0], shipped[0]) and torch.equal(ours[1], shipped[1])


def joint_law_rejects(report) -> bool:
    return any(r.check == "chi-square" and not r.passed for r in report.rows)


#: Which exactness check catches which bug ("position law": the single-step
#: law/acceptance check of test_speculative_rule on the fixed case; "u = 0":
#: the forced-uniform probes; "joint law": X6 on toy models, the broken rule
#: run inside a decoding loop).
CAUGHT_BY = {
    "always accept": ("position law", "joint law"),
    "resample from p": ("position law", "joint law"),
    "residual q - p": ("position law", "joint law"),
    "accept u <= p/q": ("u = 0",),
    "bonus from k-th": ("position law", "joint law"),
    "skip renormalisation": ("position law",),
}


def check_fails(check: str, rule_with_uniforms) -> bool:
    if check == "position law":
        report = CS.check_rule(
            CS.drawing_uniforms(rule_with_uniforms),
            n=RULE_TRIALS,
            seed=1,
            cases=[("fixed V=4 k=3", FIXED_P, FIXED_Q)],
            alpha=ALPHA,
        )
        return not report.passed
    if check == "u = 0":
        report = CS.check_rule_exact(rule_with_uniforms)
        return any(r.case == "u = 0 with p(x) = 0 rejects" and not r.passed for r in report.rows)
    if check == "joint law":
        return joint_law_rejects(joint_law_report(zoo.make_generator(rule=rule_with_uniforms)))
    raise AssertionError(check)


@pytest.mark.claim("X7")
@pytest.mark.parametrize("bug, check", [(b, c) for b in BUGS for c in CAUGHT_BY[b]])
@pytest.mark.teeth
def test_exactness_check_catches_a_broken_sampler(bug, check, claim_record):
    """X7. The shipped rule passes each check (tests/speculative/test_rule.py,
    tests/speculative/test_generator.py); the rule with ``bug`` (zoo.make_rule)
    fails the named check. The joint-law check runs the broken rule inside
    a plain decoding loop (zoo.make_generator(rule=...)) with 600 runs at
    k = 1 (the real test runs 1,500 at k = 1, 2, 4): the bugs move the law
    far more than that sample's noise."""
    assert check_fails(check, zoo.make_rule(bug)), f"{check} check did not catch '{bug}'"
    claim_record.measured("'{bug!s}' caught by {check!s}", bug=bug, check=check)


@pytest.mark.claim("X7")
@pytest.mark.teeth
def test_joint_law_check_catches_a_draft_scored_at_another_temperature(claim_record):
    """X7. Drafts sampled at temperature 0.3 but scored with q at temperature
    1 (zoo "q scored at temperature 1"): the joint law of the first three
    symbols (X6 check, 600 runs, k = 1) rejects; the correct loop
    (zoo.make_generator()) and the shipped generator pass it."""
    broken = joint_law_report(zoo.make_generator("q scored at temperature 1"))
    assert joint_law_rejects(broken), str(broken)
    correct = joint_law_report(zoo.make_generator())
    assert correct.passed, str(correct)
    claim_record.measured("q at temperature 1 for drafts sampled at 0.3: caught by joint law")


@pytest.mark.claim("X7")
@pytest.mark.teeth
def test_first_character_check_catches_always_accept_on_the_reference(
    aftertrain_model, speculative_drafts, claim_record
):
    """X7 for S2: with 'always accept' the 20,000 first characters after the
    S2 context follow the bigram draft's law, and the S2 check (chi-square
    and the TV bound, kit's check_rule on the reference's p and the bigram's
    q at that context) rejects them; the shipped rule passes the same check."""
    ids = hf.encode_text(
        aftertrain_model, hf.model_text(aftertrain_model).val_text[XS.S2_CONTEXT_SLICE]
    ).tolist()
    p1 = probabilities(DEC.Decoder(aftertrain_model).feed(ids)[-1], 1.0)
    q1 = probabilities(DEC.Decoder(speculative_drafts[D.DraftKind.BIGRAM]).feed(ids)[-1], 1.0)
    # Only the first character is judged here; the bonus row repeats p_1.
    case = [("S2 context, bigram draft", torch.stack([p1, p1]), q1[None])]
    broken = CS.check_rule(
        CS.drawing_uniforms(zoo.make_rule("always accept")),
        n=XS.S2_SAMPLES,
        cases=case,
        alpha=ALPHA,
        seed=XS.SEED,
    )
    first = {r.check: r for r in broken.rows if r.position == 0}
    claim_record.measured(
        "always accept: TV {tv:.4f} (bound {bound:.4f})", tv=first["tv"].tv, bound=first["tv"].tv_threshold
    )
    assert not first["chi-square"].passed and not first["tv"].passed, str(broken)
    shipped = CS.check_rule(
        lambda p, q, d: S.verify_batch(p, q, d, torch.default_generator),
        n=XS.S2_SAMPLES,
        cases=case,
        alpha=ALPHA,
        seed=XS.SEED,
    )
    assert shipped.passed, str(shipped)
