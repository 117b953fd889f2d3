"""Claims S5, S6, S7, X2 and X8: what speculative decoding costs and gains.

Everything is timed on the generator the library ships
(:func:`aftertrain.speculative.speculative_generate`, the fast loop: table
drafts, the rule on floats for one round); its output is the previous
loop's, bit for bit (tests/speculative/test_generator_fast_loop.py).

The ratios (c per draft, v_k per k, the speedup per draft and k) are timed
and every claim judged on their intervals by
:func:`aftertrain.experiments.speedup.speedup_decisions` (two sequential
decisions, alpha 1e-6 over every ratio, look and decision; the rules on
the intervals in :mod:`aftertrain.experiments.speedup_rules`), so no claim
rests on one pair or one median.

Each test reads its claim's verdict from the decision and first checks that
the work it times is correct. The figures are recorded in
benchmark.extra_info and, under ``--force-regen``, in
baselines/spec_speedup.yml (a record of one run, never compared against).
Under ``--benchmark-disable`` nothing is timed and every test here is
skipped as "not timed". ``--dist loadfile`` (this project's ``addopts``)
keeps the module on one xdist worker, so its decisions are taken once.
"""

from __future__ import annotations

import pytest
import torch

from aftertrain import speculative as S
from aftertrain.core.tolerances import OTHER_TIMINGS_RESERVE_S
from aftertrain.experiments import round_account as RA
from aftertrain.experiments import speculative as XS
from aftertrain.experiments import speedup as XU
from aftertrain.experiments import speedup_rules as SR
from aftertrain.experiments.speedup import SPEEDUP_CHARS
from aftertrain.experiments.speedup_rules import BIGRAM, CHEAP, QUANTIZED
from aftertrain.ledger.record import Shown, budget_left, shown, timing_budget, timing_enabled
from aftertrain.lm.decoding import generate
from aftertrain.speculative import drafts as D
from aftertrain.timing.compare import store_ratios


@pytest.fixture(scope="module")
def named_drafts(speculative_drafts) -> dict:
    """The session's drafts (conftest.py) by name."""
    return {kind.value: model for kind, model in speculative_drafts.items()}


@pytest.fixture(scope="module")
def spec(request, aftertrain_model, named_drafts):
    """The decisions of every speculative timing claim
    (:func:`aftertrain.experiments.speedup.speedup_decisions`, the
    ``--timing-budget`` per rule, at most an equal share of what is left of
    ``--timing-budget-total`` less OTHER_TIMINGS_RESERVE_S for the cheaper
    timing claims that may run after it), or None when this run does not
    time: ``{"decisions": name -> Decision, "cpp"}`` (``decisions`` None
    when nothing is left of the run's timing budget)."""
    if not timing_enabled(request.config):
        return None
    share = (budget_left(request.config) - OTHER_TIMINGS_RESERVE_S) / len(SR.RULES)
    if share <= 0:
        return {"decisions": None, "cpp": None}
    decisions, cpp = XU.speedup_decisions(
        aftertrain_model, named_drafts, budget_s=min(timing_budget(request.config), share)
    )
    return {"decisions": decisions, "cpp": cpp}


def _fmt(rows: XU.SpeedupRow | list[XU.SpeedupRow]) -> Shown:
    return shown(
        "{SpeedupRow.draft!s} k={SpeedupRow.k}: {SpeedupRow.speedup:.2f} "
        "({SpeedupRow.speedup_min:.2f}~{SpeedupRow.speedup_max:.2f}), "
        "predicted {SpeedupRow.predicted:.2f} / with v_k {SpeedupRow.predicted_vk:.2f}",
        rows,
    )


def _one_run(aftertrain_model, draft, k=4):
    """The timed work, checked first: greedy speculative output equals plain greedy."""
    prompt = XS.prompt_for(aftertrain_model)
    r = S.speculative_generate(aftertrain_model, draft, prompt, SPEEDUP_CHARS, k, 0.0)
    ids = torch.tensor(XS.prompt_ids(aftertrain_model))
    assert torch.equal(r.tokens, generate(aftertrain_model, ids, SPEEDUP_CHARS, 0.0))
    return lambda: S.speculative_generate(
        aftertrain_model, draft, prompt, SPEEDUP_CHARS, k, 1.0, torch.Generator().manual_seed(0)
    )


def _judged(claim_record, spec, name: str, benchmark, draft_module):
    """Check the timed work, record the decision's ratios, return (decision, tables)."""
    claim_record.require_timing()
    if spec["decisions"] is None:  # nothing left but the reserve: ends the test as inconclusive
        claim_record.budget_or_inconclusive(reserve=OTHER_TIMINGS_RESERVE_S)
        raise AssertionError("the fixture took no decisions with time left beyond the reserve")
    benchmark.group = "speculative"
    run = _one_run(*draft_module)
    decision = spec["decisions"][name]
    if decision.looks == 0:  # the budget ran out before the first look
        claim_record.conclude(decision)
    store_ratios(benchmark, decision)
    benchmark.pedantic(run, rounds=1, iterations=1)
    return decision, XU.speedup_tables(decision, spec["cpp"])


@pytest.mark.claim("S5")
def test_draft_cost_quantized_near_one_pass_bigram_a_small_fraction(
    benchmark, claim_record, aftertrain_model, named_drafts, spec
):
    """S5. c = one drafted character (the generator's own drafter: for the
    bigram and the n-gram a table look-up, one uniform and a bisection, no
    model call; for the others a cached forward) / one plain target step
    (model.generate's loop). Holds when the quantized
    drafts' intervals lie in SAME_WORK_BAND (the article: 8-bit 1.059, 4-bit
    1.034) and the bigram's and the n-gram's at most CHEAP_DRAFT (the
    article's bigram: 0.004, timed without the loop)."""
    decision, tabs = _judged(claim_record, spec, "S5", benchmark, (aftertrain_model, named_drafts[BIGRAM]))
    claim_record.table(tabs.costs)
    claim_record.measured(
        "{costs}; target step {CostRow.target_us:.0f} us",
        tabs.costs[0],
        costs=shown(
            "{CostRow.draft!s} c={CostRow.c:.3f} ({CostRow.c_low:.3f}~{CostRow.c_high:.3f})",
            tabs.costs,
            sep=", ",
        ),
    )
    claim_record.conclude(decision)


@pytest.mark.claim("X8")
def test_verification_pass_costs_more_than_a_plain_pass_and_grows_with_k(
    benchmark, claim_record, aftertrain_model, named_drafts, spec
):
    """X8. v_k = one verification pass over k+1 positions (feed,
    distributions, rule) / one plain step. Holds when every interval lies
    above 1 and v_8's lies above v_2's (the article measured 1.41, 1.63,
    1.83 ms for 2, 5, 9 positions against 1.09 ms for one)."""
    decision, tabs = _judged(
        claim_record, spec, "X8 cost", benchmark, (aftertrain_model, named_drafts[BIGRAM])
    )
    claim_record.table(tabs.verify)
    claim_record.measured(
        "v_{VerifyRow.k}={VerifyRow.v_k:.2f} ({VerifyRow.v_low:.2f}~{VerifyRow.v_high:.2f})",
        tabs.verify,
        sep=", ",
    )
    claim_record.conclude(decision)


@pytest.mark.claim("S6")
@pytest.mark.does_not_reproduce_on(
    "reference",
    reason=(
        "on some CPUs: on a 2-core AVX2 CPU the 8-bit draft at k=8 measured 0.97 [0.96, 0.97] "
        "(.ci/run, look 3; 0.957 with its interval above 0.95 at look 5 in another run): slower than "
        "plain decoding, but not by the 5% margin; 0.81-0.85 on an AVX-512 one "
        "(baselines/reference/spec_speedup.yml)"
    ),
)
def test_speedup_table_quantized_drafts_are_slower_than_plain(
    benchmark, claim_record, aftertrain_model, named_drafts, spec
):
    """S6. Speedup = plain time / speculative time. The article's finding
    that a good but expensive draft loses: every 8-bit and 4-bit speedup's
    interval lies below QUANTIZED_SPEEDUP_BELOW (the article: 8-bit 0.80 at
    k=4, 0.56 at k=8; 4-bit 0.41 at k=8)."""
    decision, tabs = _judged(
        claim_record, spec, "S6", benchmark, (aftertrain_model, named_drafts[D.DraftKind.INT8.value])
    )
    claim_record.table(tabs.speedups)
    claim_record.measured("{rows}", rows=_fmt(tabs.speedups))
    claim_record.conclude(decision)


@pytest.mark.claim("S6")
@pytest.mark.does_not_reproduce_on(
    "reference",
    reason=(
        "measured on the fast loop, decoding after the prompt (baselines/reference/spec_speedup.yml, "
        "idle, one thread): the bigram draft is no faster than plain decoding: "
        "1.07 [0.80, 1.38] at k=2, 0.92 [0.70, 1.17] at k=4, 1.00 [0.89, 1.25] at k=8; article 1.30 "
        "at k=4. Its drafted character costs c = 0.007 (article 0.004: the article's cost "
        "structure), but verifying k+1 positions costs v_k = 1.13 / 1.23 / 1.41 plain steps at k = "
        "2 / 4 / 8 (X8: the forward's per-position arithmetic) and our bigram makes 1.25-1.58 "
        "characters per pass, so cpp / (v_k + k c) is 1.19 at best (k=2), of which the run measures "
        "90%. Before the fast loop (idle): 0.77 at k=2, c = 0.099"
    ),
)
def test_bigram_draft_is_faster_than_plain_decoding(
    benchmark, claim_record, aftertrain_model, named_drafts, spec
):
    """S6. The cheap bigram draft gives a real speedup at its best k: some
    k's interval lies above REAL_SPEEDUP (the article: 1.30 at k = 4, 1.26 at
    k = 8, "only the worst draft is faster than plain decoding")."""
    decision, tabs = _judged(
        claim_record, spec, "S6 bigram", benchmark, (aftertrain_model, named_drafts[BIGRAM])
    )
    # this judgement may decide at another look than S6's first test: its own figures, labelled
    # so (the report's cell would otherwise list "bigram k=2:" twice with different numbers)
    claim_record.measured(
        "the bigram at this judgement's look {looks}: {rows}",
        looks=decision.looks,
        rows=shown(
            "k={SpeedupRow.k} {SpeedupRow.speedup:.2f} "
            "({SpeedupRow.speedup_min:.2f}~{SpeedupRow.speedup_max:.2f})",
            [r for r in tabs.speedups if r.draft == BIGRAM],
            sep=", ",
        ),
    )
    claim_record.conclude(decision)


@pytest.mark.claim("S7")
def test_speedup_formula_never_underrates_the_measured_speedup(
    benchmark, claim_record, aftertrain_model, named_drafts, spec
):
    """S7. The article's prediction cpp / (1 + k c) against the measured
    speedup, every draft and k. The formula leaves out costs the run pays
    (verifying k+1 positions costs v_k > 1 plain passes, X8; the rounds'
    bookkeeping), never costs it does not pay, so it may overrate but must
    not underrate: measured <= FORMULA_SLACK x predicted, on the intervals
    of the speedup and of c."""
    decision, tabs = _judged(
        claim_record, spec, "S7", benchmark, (aftertrain_model, named_drafts[D.DraftKind.INT4.value])
    )
    claim_record.measured(
        "{SpeedupRow.draft!s} k={SpeedupRow.k}: predicted {SpeedupRow.predicted:.2f} "
        "measured {SpeedupRow.speedup:.2f} (share of cpp / (v_k + k c) "
        "{share:.2f})",
        tabs.speedups,
        share=lambda r: r.share,
    )
    claim_record.conclude(decision)


@pytest.mark.claim("S7")
@pytest.mark.does_not_reproduce_on(
    "reference",
    reason=(
        "measured on the fast loop, decoding after the prompt (baselines/reference/spec_speedup.yml, "
        "idle): the article's formula overrates the quantized speedups by up to "
        "0.21 (8-bit k=2 predicted 1.02, measured 0.84; 8-bit k=4 1.03 vs 0.82; 4-bit k=4 0.88 vs "
        "0.72; 8-bit k=8 0.86 vs 0.85); the article matched to ~0.05. It charges one plain pass per "
        "verification, but a pass over k+1 positions costs v_k = 1.13-1.41 here (X8); with v_k the "
        "quantized drafts measure 0.83-1.04 of cpp / (v_k + k c). What v_k reads depends on the call "
        "before it by 5-10% (single calls in the decision's alternating pairs against verifications "
        "back to back: docs/speculative.md), and the loop's own work is 1-12% of a speculative call"
    ),
)
def test_speedup_formula_matches_quantized_drafts_within_0p05(
    benchmark, request, claim_record, aftertrain_model, named_drafts, spec
):
    """S7. For the 8-bit and 4-bit drafts at k = 2, 4, 8 the prediction
    cpp / (1 + k c) is within ARTICLE_MATCH of the measured speedup (the
    article's "match to about 0.05"), on the intervals. Beside it, not
    deciding it: each quantized draft's cost account at the k the formula
    overrates most (:func:`_accounts`)."""
    decision, tabs = _judged(
        claim_record, spec, "S7 match", benchmark, (aftertrain_model, named_drafts[D.DraftKind.INT8.value])
    )
    quantized = [r for r in tabs.speedups if r.draft in QUANTIZED]
    worst = max(quantized, key=lambda r: abs(r.predicted - r.speedup))
    claim_record.measured(
        "largest |predicted - measured| {gap:.2f} ({worst}); {accounts}",
        gap=abs(worst.predicted - worst.speedup),
        worst=_fmt(worst),
        accounts=_accounts(request.config, aftertrain_model, named_drafts, quantized),
    )
    claim_record.conclude(decision)


def _accounts(config, aftertrain_model, named_drafts, quantized) -> Shown:
    """Each quantized draft's cost account at the k where cpp / (1 + k c)
    overrates its speedup most (picked at the speedup decision's look,
    timed on fresh pairs): the share of the loop's time its parts explain,
    each timed in place, where the loop runs it (``Method.IN_PLACE``:
    :func:`aftertrain.experiments.round_account.account_row`), and its
    round per target pass in plain decoding's time per character beside
    what the formula charges (:func:`~aftertrain.experiments.round_account.round_costs`);
    one look, within ``--timing-budget`` and what is left of the run's
    timing budget beyond the reserve (the whole account, every look:
    tools/account_spec.py)."""
    picked = {}
    for r in quantized:
        if (
            r.draft not in picked
            or r.predicted - r.speedup > picked[r.draft].predicted - picked[r.draft].speedup
        ):
            picked[r.draft] = r
    # one look: two cells' four ratios at the fewest pairs (24), about 7 s idle; a first look not
    # predicted to fit the budget is not started (the line says so)
    budget = min(timing_budget(config), budget_left(config) - OTHER_TIMINGS_RESERVE_S)
    if budget <= 0:
        return shown("the cost account: not timed, the run's timing budget is spent")
    decisions = RA.account_decisions(
        aftertrain_model,
        {(r.draft, r.k): named_drafts[r.draft] for r in picked.values()},
        budget_s=budget,
        looks=1,
        method=RA.Method.IN_PLACE,
    )
    timed = [
        (RA.account_row(d, *cell, RA.Method.IN_PLACE), picked[cell[0]])
        for cell, d in decisions.items()
        if d.looks
    ]
    if not timed:
        return shown("the cost account: not timed: {why!s}", why=next(iter(decisions.values())).note)
    return shown(
        "{draft!s} k={k}: accounted {accounted:.2f} [{low:.2f}, {high:.2f}] of the loop's time, "
        "each part timed in place (draft {draft_share:.2f}, verify {verify_share:.2f}, "
        "rule {rule_share:.2f}, rest {rest_share:.2f}; {pairs} pairs), "
        "a target pass costing verification {verification:.2f} "
        "(the formula charges one plain step), drafting {drafting:.2f} (k c {charged:.2f}), "
        "bookkeeping {bookkeeping:.2f}, beyond the parts {unaccounted:.2f} plain characters' time: "
        "the {overrates!s} overrates it most",
        timed,
        draft=lambda t: t[0].draft,
        k=lambda t: t[0].k,
        accounted=lambda t: t[0].accounted,
        low=lambda t: t[0].low,
        high=lambda t: t[0].high,
        draft_share=lambda t: t[0].shares[RA.Part.DRAFT],
        verify_share=lambda t: t[0].shares[RA.Part.VERIFY],
        rule_share=lambda t: t[0].shares[RA.Part.RULE],
        rest_share=lambda t: t[0].shares[RA.Part.REST],
        pairs=lambda t: t[0].pairs,
        verification=lambda t: RA.round_costs(*t).verification,
        drafting=lambda t: RA.round_costs(*t).drafting,
        charged=lambda t: RA.round_costs(*t).charged_drafting,
        bookkeeping=lambda t: RA.round_costs(*t).bookkeeping,
        unaccounted=lambda t: RA.round_costs(*t).unaccounted,
        overrates=lambda t: RA.round_costs(*t).overrates,
    )


@pytest.mark.claim("X8")
def test_charging_verification_its_cost_fits_the_speedups_better(
    benchmark, claim_record, aftertrain_model, named_drafts, spec
):
    """X8. Mean absolute error, over every draft and k, of cpp / (v_k + k c)
    against the measured speedups is below that of cpp / (1 + k c), on the
    intervals of c, v_k and the speedups (:func:`aftertrain.experiments.speedup_rules.fit_verdict`)."""
    decision, tabs = _judged(
        claim_record, spec, "X8 fit", benchmark, (aftertrain_model, named_drafts[D.DraftKind.NGRAM.value])
    )
    rows = tabs.speedups
    err_article = sum(abs(r.predicted - r.speedup) for r in rows) / len(rows)
    err_vk = sum(abs(r.predicted_vk - r.speedup) for r in rows) / len(rows)
    gains = SR.fit_gain_sum(SR.fit_rows(SR.Cells(decision.timings, spec["cpp"])))
    claim_record.measured(
        "mean |error| at the medians: 1 + k c {err_article:.3f}, v_k + k c {err_vk:.3f}{bounds}",
        err_article=err_article,
        err_vk=err_vk,
        bounds=shown("")
        if gains is None
        else shown(
            "; error sum of v_k + k c minus that of 1 + k c, bounded over the intervals: "
            "{low:.2f} to {high:.2f}",
            low=gains[0],
            high=gains[1],
        ),
    )
    claim_record.conclude(decision)


@pytest.mark.claim("X2")
def test_cheap_and_good_draft_beats_the_bigram_and_plain_decoding(
    benchmark, request, claim_record, aftertrain_model, named_drafts, spec, baselines_dir, data_regression
):
    """X2. Some cheap, better draft (n-gram, draft GPT) gives a real speedup
    (interval above 1) and beats the bigram's best by BETTER_THAN_BIGRAM
    (its interval above 1.1 x every bigram interval). Under --force-regen
    the run's figures (c, v_k, every speedup with both predictions, the best
    draft) are written to baselines/spec_speedup.yml."""
    decision, tabs = _judged(
        claim_record, spec, "X2", benchmark, (aftertrain_model, named_drafts[D.DraftKind.NGRAM.value])
    )
    cheap = [r for r in tabs.speedups if r.draft in CHEAP]
    best = max(cheap, key=lambda r: r.speedup)
    bigram_best = max((r for r in tabs.speedups if r.draft == BIGRAM), key=lambda r: r.speedup)
    c = {r.draft: r for r in tabs.costs}
    claim_record.measured(
        "best: {best}, c={CostRow.c:.3f}; bigram best: {bigram_best}; {targets}",
        c[best.draft],
        best=_fmt(best),
        bigram_best=_fmt(bigram_best),
        targets=_targets(request.config, aftertrain_model, named_drafts, spec),
    )
    if request.config.getoption("force_regen"):
        data_regression.check(_record(tabs, best), fullpath=baselines_dir / "spec_speedup.yml")
    claim_record.conclude(decision)


def _targets(config, aftertrain_model, named_drafts, spec) -> Shown:
    """The speedup targets, figures beside X2 (not its verdict): the best
    cheap draft and the n-gram's best k, picked at the speedup decision's
    last look, decided again on fresh pairs
    (:func:`aftertrain.experiments.speedup.target_decisions`: the loop over
    what cpp / (v_k + k c) charges for it, and the n-gram over plain
    decoding), within what is left of the run's timing budget beyond the
    reserve; each with its range and whether the whole range meets the
    target."""
    last = max(
        spec["decisions"].values(),
        key=lambda d: d.looks if str(SR.RatioKey.speedup(BIGRAM, XU.SPEEDUP_KS[0])) in d.timings else -1,
    )
    rows = XU.speedup_tables(last, spec["cpp"]).speedups
    best = max((r for r in rows if r.draft in CHEAP), key=lambda r: r.speedup)
    ngram = max((r for r in rows if r.draft == D.DraftKind.NGRAM.value), key=lambda r: r.speedup)
    budget = min(timing_budget(config), budget_left(config) - OTHER_TIMINGS_RESERVE_S)
    if budget <= 0:
        return shown(
            "{picked}: not timed, the run's timing budget is spent", picked=_picked(best, ngram, last)
        )
    decision = XU.target_decisions(
        aftertrain_model,
        (named_drafts[best.draft], best.k),
        (named_drafts[ngram.draft], ngram.k),
        budget_s=budget,
    )
    if decision["share"].looks == 0:
        return shown(
            "{picked}: not timed: {why!s}", picked=_picked(best, ngram, last), why=decision["share"].reason
        )
    share, share_low, share_high, share_met = XU.target_figure(decision["share"], "share")
    speed, speed_low, speed_high, speed_met = XU.target_figure(decision["n-gram"], "n-gram")
    return shown(
        "{picked}: share of cpp / (v_k + k c), the loop against the passes and drafts it "
        "charges, {share:.2f} ({share_low:.2f}~{share_high:.2f}) >= {SHARE_TARGET}: "
        "{share_met!s} ({share_pairs} pairs); n-gram speedup {speedup:.2f} "
        "({speedup_low:.2f}~{speedup_high:.2f}) >= {NGRAM_TARGET}: {speedup_met!s} "
        "({speedup_pairs} pairs)",
        picked=_picked(best, ngram, last),
        share=share,
        share_low=share_low,
        share_high=share_high,
        SHARE_TARGET=XU.SHARE_TARGET,
        share_met=share_met,
        share_pairs=len(decision["share"].timings["share"].ratios),
        speedup=speed,
        speedup_low=speed_low,
        speedup_high=speed_high,
        NGRAM_TARGET=XU.NGRAM_TARGET,
        speedup_met=speed_met,
        speedup_pairs=len(decision["n-gram"].timings["n-gram"].ratios),
    )


def _picked(best, ngram, last) -> Shown:
    """What the targets time: the best cheap draft and the n-gram's best k
    at the speedup decision's look ``last``."""
    return shown(
        "the speedup targets (the best cheap draft {best_draft!s} k={best_k}, the n-gram at "
        "k={ngram_k}; picked at look {looks}, timed again)",
        best_draft=best.draft,
        best_k=best.k,
        ngram_k=ngram.k,
        looks=last.looks,
    )


def _record(tabs, best) -> dict:
    def rounded(row):
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in row.to_record().items()}

    return {
        "c": {r.draft: rounded(r) for r in tabs.costs},
        "v_k": {int(r.k): rounded(r) for r in tabs.verify},
        "speedups": [rounded(r) for r in tabs.speedups],
        "best": rounded(best),
        "chars": SPEEDUP_CHARS,
        "threads": 1,
        "torch": str(torch.__version__),
    }
