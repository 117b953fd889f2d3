"""Claims S5, S6, S7, X2 and X8: what speculative decoding costs and gains.

Every figure is a paired ratio (aftertrain.timing, alternating pairs on one
thread), all of them timed together in ONE decision
(:func:`aftertrain.timing.sequential_decisions`, alpha 1e-6 over every
ratio and look), so each claim below is judged on intervals, never on one
pair or one median:

- ``c`` per draft (S5): one drafted character / one plain target step;
- ``v_k`` per k (X8): one verification pass over k+1 positions / one plain
  step;
- the speedup per draft and k (S6, S7, X8, X2): plain / speculative time
  for SPEEDUP_CHARS = 30 characters (the article: 200; the per-character
  cost is what the claims compare, and the decision needs ~30 pairs of each
  of the 15 cells (5 drafts x 3 k): at 50 characters the first look took
  ~9 minutes at load 9 on the 2-core box, at 30 it is ~25 s idle), beside the
  article's prediction cpp / (1 + k c) (S7) and the one charging
  verification its measured cost, cpp / (v_k + k c) (X8).

Each test reads its claim's verdict from the decision and first checks that
the work it times is correct. The figures are recorded in
benchmark.extra_info and, under ``--force-regen``, in
baselines/spec_speedup.yml (a record of one run, never compared against).
Under ``pytest -n 2`` or ``--benchmark-disable`` nothing is timed and every
test here is skipped as "not timed".
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from aftertrain import drafts as D
from aftertrain import speculative as S
from aftertrain import tables
from aftertrain.benchratios import store_ratios
from aftertrain.decoding import generate
from aftertrain.experiments import speculative as XS
from aftertrain.ledger.record import timing_budget, timing_enabled
from aftertrain.text import encode
from aftertrain.timing import Judgement, PairedTiming, RatioRule, sequential_decisions
from aftertrain.tolerances import (
    ARTICLE_MATCH,
    BETTER_THAN_BIGRAM,
    CHEAP_DRAFT,
    FORMULA_SLACK,
    QUANTIZED_SPEEDUP_BELOW,
    REAL_SPEEDUP,
    SAME_WORK_BAND,
    TIMING_ALPHA,
)
from aftertrain.verdicts import BROKEN, HOLDS

SPEEDUP_KS = (2, 4, 8)
SPEEDUP_CHARS = 30
COST_CALLS = 5  # a step is ~0.1-1 ms: 5 calls per timing
QUANTIZED = (D.DraftKind.INT8.value, D.DraftKind.INT4.value)
CHEAP = (D.DraftKind.NGRAM.value, D.DraftKind.GPT.value)
BIGRAM = D.DraftKind.BIGRAM.value


@pytest.fixture(scope="module")
def named_drafts(speculative_drafts) -> dict:
    """The session's drafts (conftest.py) by name."""
    return {kind.value: model for kind, model in speculative_drafts.items()}


# --- the cells and their intervals -----------------------------------------------------------


def interval(t: PairedTiming) -> tuple[float, float]:
    return t.ci_low, t.ci_high


def speedup(t: PairedTiming) -> tuple[float, float, float]:
    """(median, low, high) of plain / speculative from the ratio spec / plain."""
    return 1.0 / t.median, 1.0 / t.ci_high, 1.0 / t.ci_low


def predicted(cpp: float, k: int, c: tuple[float, float], v: tuple[float, float] = (1.0, 1.0)):
    """Range of cpp / (v + k c) over the intervals of c and v (decreasing in both)."""
    return cpp / (v[1] + k * c[1]), cpp / (v[0] + k * c[0])


def abs_gap(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    """Range of |x - y| for x in a, y in b."""
    low = max(0.0, b[0] - a[1], a[0] - b[1])
    return low, max(a[1] - b[0], b[1] - a[0])


def combine(verdicts) -> str | None:
    """Every part holds: holds; any part broken: broken; else undecided."""
    verdicts = list(verdicts)
    if BROKEN in verdicts:
        return BROKEN
    return HOLDS if all(v == HOLDS for v in verdicts) else None


class Cells:
    """The decision's timings read as c, v_k and speedups with predictions."""

    def __init__(self, t: dict[str, PairedTiming], cpp: dict[tuple[str, int], float]) -> None:
        self.t, self.cpp = t, cpp

    def c(self, draft):
        return interval(self.t[f"c:{draft}"])

    def v(self, k):
        return interval(self.t[f"v:{k}"])

    def s(self, draft, k):
        return speedup(self.t[f"s:{draft}:{k}"])[1:]

    def cells(self, drafts=None):
        return [(d, k) for d, k in self.cpp if drafts is None or d in drafts]

    def article(self, d, k):
        return predicted(self.cpp[d, k], k, self.c(d))

    def with_vk(self, d, k):
        return predicted(self.cpp[d, k], k, self.c(d), self.v(k))


def s5(cells: Cells) -> str | None:
    same, cheap = RatioRule.inside(SAME_WORK_BAND), RatioRule.at_most(CHEAP_DRAFT)
    return combine([same.decide(*cells.c(d)) for d in QUANTIZED]
                   + [cheap.decide(*cells.c(d)) for d in (BIGRAM, D.DraftKind.NGRAM.value)])


def x8_cost(cells: Cells) -> str | None:
    v2, v8 = cells.v(2), cells.v(8)
    grows = HOLDS if v8[0] > v2[1] else BROKEN if v8[1] < v2[0] else None
    return combine([RatioRule.at_least(1.0).decide(*cells.v(k)) for k in SPEEDUP_KS] + [grows])


def s6_quantized_slower(cells: Cells) -> str | None:
    rule = RatioRule.at_most(QUANTIZED_SPEEDUP_BELOW)
    return combine(rule.decide(*cells.s(d, k)) for d, k in cells.cells(QUANTIZED))


def s6_bigram_faster(cells: Cells) -> str | None:
    lows_highs = [cells.s(d, k) for d, k in cells.cells((BIGRAM,))]
    if any(low > REAL_SPEEDUP for low, _ in lows_highs):
        return HOLDS
    if all(high <= REAL_SPEEDUP for _, high in lows_highs):
        return BROKEN
    return None


def s7_never_underrates(cells: Cells) -> str | None:
    verdicts = []
    for d, k in cells.cells():
        (s_lo, s_hi), (p_lo, p_hi) = cells.s(d, k), cells.article(d, k)
        verdicts.append(HOLDS if s_hi <= FORMULA_SLACK * p_lo else
                        BROKEN if s_lo > FORMULA_SLACK * p_hi else None)
    return combine(verdicts)


def s7_matches(cells: Cells) -> str | None:
    verdicts = []
    for d, k in cells.cells(QUANTIZED):
        low, high = abs_gap(cells.article(d, k), cells.s(d, k))
        verdicts.append(HOLDS if high <= ARTICLE_MATCH else BROKEN if low > ARTICLE_MATCH else None)
    return combine(verdicts)


def fit_verdict(rows: list[dict]) -> str | None:
    """X8's fit: the mean |error| of cpp / (v_k + k c) below that of
    cpp / (1 + k c). Rows hold the ranges "speedup", "article", "with_vk"
    (low, high); holds when the largest possible error sum of the v_k formula
    is below the smallest possible of the article's, broken when the
    smallest of the v_k formula's exceeds the largest of the article's."""
    art = [abs_gap(r["article"], r["speedup"]) for r in rows]
    vk = [abs_gap(r["with_vk"], r["speedup"]) for r in rows]
    if sum(h for _, h in vk) < sum(lo for lo, _ in art):
        return HOLDS
    if sum(lo for lo, _ in vk) > sum(h for _, h in art):
        return BROKEN
    return None


def x8_fit(cells: Cells) -> str | None:
    return fit_verdict([{"speedup": cells.s(d, k), "article": cells.article(d, k),
                         "with_vk": cells.with_vk(d, k)} for d, k in cells.cells()])


def x2(cells: Cells) -> str | None:
    bigram = [cells.s(d, k) for d, k in cells.cells((BIGRAM,))]
    best_low, best_high = max(lo for lo, _ in bigram), max(h for _, h in bigram)
    cheap = [cells.s(d, k) for d, k in cells.cells(CHEAP)]
    if any(lo > 1.0 and lo > BETTER_THAN_BIGRAM * best_high for lo, _ in cheap):
        return HOLDS
    if all(h <= 1.0 or h <= BETTER_THAN_BIGRAM * best_low for _, h in cheap):
        return BROKEN
    return None


RULES = {
    "S5": ("quantized drafts' c in [0.8, 1.3], bigram's and n-gram's c <= 0.25", s5),
    "X8 cost": ("v_k >= 1 for every k and v_8 > v_2", x8_cost),
    "S6": (f"every quantized speedup <= {QUANTIZED_SPEEDUP_BELOW}", s6_quantized_slower),
    "S6 bigram": (f"the bigram's best speedup > {REAL_SPEEDUP}", s6_bigram_faster),
    "S7": (f"measured speedup <= {FORMULA_SLACK} x cpp / (1 + k c) everywhere",
           s7_never_underrates),
    "S7 match": (f"|cpp / (1 + k c) - speedup| <= {ARTICLE_MATCH} for quantized drafts",
                 s7_matches),
    "X8 fit": ("mean |error| of cpp / (v_k + k c) below that of cpp / (1 + k c)", x8_fit),
    "X2": (f"a cheap draft's speedup > 1 and > {BETTER_THAN_BIGRAM} x the bigram's best", x2),
}


COST_RULES = ("S5", "X8 cost")


@pytest.fixture(scope="module")
def spec(request, reference, named_drafts):
    """The decisions of every speculative timing claim, or None when this
    run does not time: ``{"decisions": name -> Decision, "cpp"}``.

    Two decisions, each at alpha / 2 (so claims reading both, S7 and X8's
    fit, err with probability <= alpha): the costs c and v_k (cheap steps:
    many pairs in seconds; judged for S5 and X8's cost), then the speedups
    (12 generations per pair; judged for S6, S7, X8's fit and X2 with the
    costs' final intervals)."""
    if not timing_enabled(request.config):
        return None
    prompt = XS.prompt_text()
    ids = encode(prompt)
    budget = timing_budget(request.config)
    alpha = TIMING_ALPHA / 2
    costs = {}
    for name, draft in named_drafts.items():
        costs[f"c:{name}"] = (XS.plain_step(reference, 1.0), XS.draft_step(draft, 1.0))
    for k in SPEEDUP_KS:
        costs[f"v:{k}"] = (XS.plain_step(reference, 1.0), XS.verify_step(reference, k, 1.0))
    cpp = {(name, k): S.speculative_generate(reference, draft, prompt, SPEEDUP_CHARS, k, 1.0,
                                             torch.Generator().manual_seed(XS.SEED)).chars_per_pass
           for name, draft in named_drafts.items() for k in SPEEDUP_KS}
    decisions = sequential_decisions(
        costs, {n: Judgement(RULES[n][0], lambda t, f=RULES[n][1]: f(Cells(t, cpp)))
                for n in COST_RULES},
        calls=COST_CALLS, alpha=alpha, budget_s=budget * len(COST_RULES))
    cost_timings = max((d.timings for d in decisions.values()),
                       key=lambda t: len(next(iter(t.values())).ratios))  # the last look

    def plain() -> None:
        generate(reference, ids, SPEEDUP_CHARS, 1.0, torch.Generator().manual_seed(XS.SEED))

    sides = {}
    for name, draft in named_drafts.items():
        for k in SPEEDUP_KS:
            def run(draft=draft, k=k):
                return S.speculative_generate(reference, draft, prompt, SPEEDUP_CHARS, k, 1.0,
                                              torch.Generator().manual_seed(XS.SEED))
            sides[f"s:{name}:{k}"] = (plain, run)
    rest = [n for n in RULES if n not in COST_RULES]
    decisions |= sequential_decisions(
        sides, {n: Judgement(RULES[n][0],
                             lambda t, f=RULES[n][1]: f(Cells({**cost_timings, **t}, cpp)))
                for n in rest},
        warmup=1, alpha=alpha, budget_s=budget * len(rest))
    for n in rest:  # the speedup decisions' timings with the costs', for the tables
        d = decisions[n]
        decisions[n] = dataclasses.replace(d, timings={**cost_timings, **d.timings})
    return {"decisions": decisions, "cpp": cpp}


def tables_of(decision, cpp) -> dict:
    """The claims' tables at a decision's look: c, v_k, speedups with both predictions."""
    cells = Cells(decision.timings, cpp)
    t = decision.timings
    costs = [{"draft": d, "c": t[f"c:{d}"].median, "c_low": t[f"c:{d}"].ci_low,
              "c_high": t[f"c:{d}"].ci_high,
              "target_us": float(np.median(t[f"c:{d}"].baseline)) * 1e6,
              "draft_us": float(np.median(t[f"c:{d}"].candidate)) * 1e6}
             for d in dict.fromkeys(d for d, _ in cpp)]
    verify = [{"k": k, "v_k": t[f"v:{k}"].median, "v_low": t[f"v:{k}"].ci_low,
               "v_high": t[f"v:{k}"].ci_high,
               "verify_us": float(np.median(t[f"v:{k}"].candidate)) * 1e6,
               "step_us": float(np.median(t[f"v:{k}"].baseline)) * 1e6} for k in SPEEDUP_KS]
    c = {r["draft"]: r["c"] for r in costs}
    v = {r["k"]: r["v_k"] for r in verify}
    speedups = []
    for d, k in cells.cells() if f"s:{BIGRAM}:{SPEEDUP_KS[0]}" in t else ():
        med, low, high = speedup(t[f"s:{d}:{k}"])
        speedups.append({"draft": d, "k": k, "chars_per_pass": cpp[d, k], "speedup": med,
                         "speedup_min": low, "speedup_max": high,  # the interval's ends
                         "predicted": cpp[d, k] / (1 + k * c[d]),
                         "predicted_vk": cpp[d, k] / (v[k] + k * c[d])})
    return {"c": costs, "v_k": verify, "speedups": speedups}


def _fmt(r) -> str:
    return (f"{r['draft']} k={r['k']}: {r['speedup']:.2f} ({r['speedup_min']:.2f}~"
            f"{r['speedup_max']:.2f}), predicted {r['predicted']:.2f} / with v_k "
            f"{r['predicted_vk']:.2f}")


def _one_run(reference, draft, k=4):
    """The timed work, checked first: greedy speculative output equals plain greedy."""
    prompt = XS.prompt_text()
    r = S.speculative_generate(reference, draft, prompt, SPEEDUP_CHARS, k, 0.0)
    assert torch.equal(r.tokens, generate(reference, encode(prompt), SPEEDUP_CHARS, 0.0))
    return lambda: S.speculative_generate(reference, draft, prompt, SPEEDUP_CHARS, k, 1.0,
                                          torch.Generator().manual_seed(0))


def _judged(claim_record, spec, name: str, benchmark, draft_module):
    """Check the timed work, record the decision's ratios, return (decision, tables)."""
    claim_record.require_timing()
    benchmark.group = "speculative"
    run = _one_run(*draft_module)
    decision = spec["decisions"][name]
    store_ratios(benchmark, decision)
    benchmark.pedantic(run, rounds=1, iterations=1)
    return decision, tables_of(decision, spec["cpp"])


@pytest.mark.claim("S5")
def test_draft_cost_quantized_near_one_pass_bigram_a_small_fraction(benchmark, claim_record,
                                                                   reference, named_drafts, spec):
    """S5. c = one drafted character (the generator's own draft loop) / one
    plain target step (model.generate's loop). Holds when the quantized
    drafts' intervals lie in SAME_WORK_BAND (the article: 8-bit 1.059, 4-bit
    1.034) and the bigram's and the n-gram's at most CHEAP_DRAFT (the
    article's bigram: 0.004, timed without the loop)."""
    decision, tabs = _judged(claim_record, spec, "S5", benchmark, (reference, named_drafts[BIGRAM]))
    claim_record.table(tables.SPEC_DRAFT_COST, tabs["c"])
    claim_record.measured(", ".join(f"{r['draft']} c={r['c']:.3f} ({r['c_low']:.3f}~"
                                    f"{r['c_high']:.3f})" for r in tabs["c"])
                          + f"; target step {tabs['c'][0]['target_us']:.0f} us")
    claim_record.conclude(decision)


@pytest.mark.claim("X8")
def test_verification_pass_costs_more_than_a_plain_pass_and_grows_with_k(benchmark, claim_record,
                                                                        reference, named_drafts,
                                                                        spec):
    """X8. v_k = one verification pass over k+1 positions (feed,
    distributions, rule) / one plain step. Holds when every interval lies
    above 1 and v_8's lies above v_2's (the article measured 1.41, 1.63,
    1.83 ms for 2, 5, 9 positions against 1.09 ms for one)."""
    decision, tabs = _judged(claim_record, spec, "X8 cost", benchmark,
                             (reference, named_drafts[BIGRAM]))
    claim_record.table(tables.SPEC_VERIFY_COST, tabs["v_k"])
    claim_record.measured(", ".join(f"v_{r['k']}={r['v_k']:.2f} ({r['v_low']:.2f}~"
                                    f"{r['v_high']:.2f})" for r in tabs["v_k"]))
    claim_record.conclude(decision)


@pytest.mark.claim("S6")
def test_speedup_table_quantized_drafts_are_slower_than_plain(benchmark, claim_record, reference,
                                                             named_drafts, spec):
    """S6. Speedup = plain time / speculative time. The article's finding
    that a good but expensive draft loses: every 8-bit and 4-bit speedup's
    interval lies below QUANTIZED_SPEEDUP_BELOW (the article: 8-bit 0.80 at
    k=4, 0.56 at k=8; 4-bit 0.41 at k=8)."""
    decision, tabs = _judged(claim_record, spec, "S6", benchmark,
                             (reference, named_drafts[D.DraftKind.INT8.value]))
    claim_record.table(tables.SPEC_SPEEDUP, tabs["speedups"])
    claim_record.measured("; ".join(_fmt(r) for r in tabs["speedups"]))
    claim_record.conclude(decision)


@pytest.mark.claim("S6")
@pytest.mark.does_not_reproduce_on("reference", reason=(
    "measured (baselines/spec_speedup.yml): the bigram draft is slower than plain decoding "
    "at every k: median 0.77 (0.77~0.81) at k=2, 0.68 at k=4, 0.54 at k=8; article 1.30 at "
    "k=4, 1.26 at k=8. Our bigram accepts 0.244 at k=1 (article 0.290), its drafted "
    "character costs c = 0.099 with the loop (article 0.004 without), and verifying k+1 "
    "positions costs v_k = 1.27-1.52 plain passes (X8): cpp / (v_k + k c) = 0.87 at best"))
def test_bigram_draft_is_faster_than_plain_decoding(benchmark, claim_record, reference,
                                                   named_drafts, spec):
    """S6. The cheap bigram draft gives a real speedup at its best k: some
    k's interval lies above REAL_SPEEDUP (the article: 1.30 at k = 4, 1.26 at
    k = 8, "only the worst draft is faster than plain decoding")."""
    decision, tabs = _judged(claim_record, spec, "S6 bigram", benchmark,
                             (reference, named_drafts[BIGRAM]))
    claim_record.measured("; ".join(_fmt(r) for r in tabs["speedups"] if r["draft"] == BIGRAM))
    claim_record.conclude(decision)


@pytest.mark.claim("S7")
def test_speedup_formula_never_underrates_the_measured_speedup(benchmark, claim_record, reference,
                                                               named_drafts, spec):
    """S7. The article's prediction cpp / (1 + k c) against the measured
    speedup, every draft and k. The formula leaves out costs the run pays
    (verifying k+1 positions costs v_k > 1 plain passes, X8; the rounds'
    bookkeeping), never costs it does not pay, so it may overrate but must
    not underrate: measured <= FORMULA_SLACK x predicted, on the intervals
    of the speedup and of c."""
    decision, tabs = _judged(claim_record, spec, "S7", benchmark,
                             (reference, named_drafts[D.DraftKind.INT4.value]))
    claim_record.measured("; ".join(f"{r['draft']} k={r['k']}: predicted {r['predicted']:.2f} "
                                    f"measured {r['speedup']:.2f}" for r in tabs["speedups"]))
    claim_record.conclude(decision)


@pytest.mark.claim("S7")
@pytest.mark.does_not_reproduce_on("reference", reason=(
    "measured (baselines/spec_speedup.yml): the article's formula overrates every quantized "
    "speedup by 0.10-0.18 (8-bit k=2 predicted 0.97, measured 0.80; 4-bit k=2 0.96 vs 0.78; "
    "4-bit k=8 0.75 vs 0.65); the article matched to ~0.05. It charges one plain pass per "
    "verification, but a pass over k+1 positions costs v_k = 1.27-1.52 here (X8)"))
def test_speedup_formula_matches_quantized_drafts_within_0p05(benchmark, claim_record, reference,
                                                              named_drafts, spec):
    """S7. For the 8-bit and 4-bit drafts at k = 2, 4, 8 the prediction
    cpp / (1 + k c) is within ARTICLE_MATCH of the measured speedup (the
    article's "match to about 0.05"), on the intervals."""
    decision, tabs = _judged(claim_record, spec, "S7 match", benchmark,
                             (reference, named_drafts[D.DraftKind.INT8.value]))
    quantized = [r for r in tabs["speedups"] if r["draft"] in QUANTIZED]
    worst = max(quantized, key=lambda r: abs(r["predicted"] - r["speedup"]))
    claim_record.measured(f"largest |predicted - measured| "
                          f"{abs(worst['predicted'] - worst['speedup']):.2f} ({_fmt(worst)})")
    claim_record.conclude(decision)


@pytest.mark.claim("X8", "X7")
@pytest.mark.teeth
def test_fit_check_catches_speedups_that_follow_the_article_formula():
    """Teeth for X8's fit (no timing): in a world where measured speedups
    follow cpp / (1 + k c) exactly, as they would if verification cost one
    plain pass, the fit calls "v_k fits better" broken."""
    rows = []
    for cpp, k, c, v in [(1.3, 2, 0.1, 1.27), (2.9, 2, 1.0, 1.27), (4.4, 8, 0.12, 1.56)]:
        s = cpp / (1 + k * c)
        rows.append({"speedup": (s, s), "article": (s, s),
                     "with_vk": (cpp / (v + k * c),) * 2})
    assert fit_verdict(rows) == BROKEN


@pytest.mark.claim("X8")
def test_charging_verification_its_cost_fits_the_speedups_better(benchmark, claim_record,
                                                                 reference, named_drafts, spec):
    """X8. Mean absolute error, over every draft and k, of cpp / (v_k + k c)
    against the measured speedups is below that of cpp / (1 + k c), on the
    intervals of c, v_k and the speedups (:func:`fit_verdict`)."""
    decision, tabs = _judged(claim_record, spec, "X8 fit", benchmark,
                             (reference, named_drafts[D.DraftKind.NGRAM.value]))
    rows = tabs["speedups"]
    err_article = sum(abs(r["predicted"] - r["speedup"]) for r in rows) / len(rows)
    err_vk = sum(abs(r["predicted_vk"] - r["speedup"]) for r in rows) / len(rows)
    claim_record.measured(f"mean |error| at the medians: 1 + k c {err_article:.3f}, "
                          f"v_k + k c {err_vk:.3f}")
    claim_record.conclude(decision)


@pytest.mark.claim("X2")
def test_cheap_and_good_draft_beats_the_bigram_and_plain_decoding(benchmark, request, claim_record,
                                                                  reference, named_drafts, spec,
                                                                  baselines_dir, data_regression):
    """X2. Some cheap, better draft (n-gram, draft GPT) gives a real speedup
    (interval above 1) and beats the bigram's best by BETTER_THAN_BIGRAM
    (its interval above 1.1 x every bigram interval). Under --force-regen
    the run's figures (c, v_k, every speedup with both predictions, the best
    draft) are written to baselines/spec_speedup.yml."""
    decision, tabs = _judged(claim_record, spec, "X2", benchmark,
                             (reference, named_drafts[D.DraftKind.NGRAM.value]))
    cheap = [r for r in tabs["speedups"] if r["draft"] in CHEAP]
    best = max(cheap, key=lambda r: r["speedup"])
    bigram_best = max((r for r in tabs["speedups"] if r["draft"] == BIGRAM),
                      key=lambda r: r["speedup"])
    c = {r["draft"]: r for r in tabs["c"]}
    claim_record.measured(f"best: {_fmt(best)}, c={c[best['draft']]['c']:.3f}; "
                          f"bigram best: {_fmt(bigram_best)}")
    if request.config.getoption("force_regen"):
        data_regression.check(_record(tabs, best), fullpath=baselines_dir / "spec_speedup.yml")
    claim_record.conclude(decision)


def _record(tabs, best) -> dict:
    def rounded(d):
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in d.items()}

    return {"c": {r["draft"]: rounded(r) for r in tabs["c"]},
            "v_k": {int(r["k"]): rounded(r) for r in tabs["v_k"]},
            "speedups": [rounded(r) for r in tabs["speedups"]],
            "best": rounded(best), "chars": SPEEDUP_CHARS,
            "threads": 1, "torch": str(torch.__version__)}
