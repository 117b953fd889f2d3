"""Claims S5, S6, S7, X2 and X8: what speculative decoding costs and gains.

All figures are ratios from paired timing (aftertrain.timing.paired_timing,
alternating pairs on one thread): c per draft (S5), v_k per k (X8), and the
speedup of speculative over plain cached decoding per draft and k (S6),
beside the article's prediction cpp / (1 + k c) (S7) and the one charging
verification its measured cost, cpp / (v_k + k c) (X8). Each is measured
once per module (speculative.draft_cost_table, verify_cost_table,
speedup_table); every test first checks the work it times is correct. The
figures are recorded in benchmark.extra_info and in
baselines/spec_speedup.yml: a record of one run on this machine, written
only by ``pytest benchmarks/test_spec_speedup.py --force-regen`` and never
compared against (timings differ run to run; the claims are asserted as
relations instead).

Under ``pytest -n 2`` or ``--benchmark-disable`` nothing is timed and the
timing tests skip.
"""

from __future__ import annotations

import pytest
import torch

from aftertrain import drafts as D
from aftertrain import model as M
from aftertrain import speculative as S

SPEEDUP_KS = (2, 4, 8)


def _timing_enabled(config) -> bool:
    # pytest-benchmark's own switch (off under xdist and --benchmark-disable);
    # module-scoped fixtures cannot reach the function-scoped `benchmark`.
    session = getattr(config, "_benchmarksession", None)
    return session is not None and not session.disabled and not session.skip


@pytest.fixture(scope="module")
def speculative_drafts(reference) -> dict:
    return {kind: D.draft_model(kind, reference) for kind in D.DraftKind}


@pytest.fixture(scope="module")
def named_drafts(speculative_drafts) -> dict:
    return {k.value: m for k, m in speculative_drafts.items()}


@pytest.fixture(scope="module")
def costs(request, reference, named_drafts) -> dict:
    if not _timing_enabled(request.config):
        pytest.skip("benchmarks disabled: nothing is timed")
    return {r["draft"]: r for r in S.draft_cost_table(reference, named_drafts)}


@pytest.fixture(scope="module")
def verify_costs(request, reference) -> dict:
    if not _timing_enabled(request.config):
        pytest.skip("benchmarks disabled: nothing is timed")
    return {r["k"]: r for r in S.verify_cost_table(reference, SPEEDUP_KS)}


@pytest.fixture(scope="module")
def speedups(reference, named_drafts, costs, verify_costs) -> list[dict]:
    return S.speedup_table(reference, named_drafts, SPEEDUP_KS,
                           {n: r["c"] for n, r in costs.items()},
                           {k: r["v_k"] for k, r in verify_costs.items()})


def _one_run(reference, draft, k=4):
    """The timed work, checked first: greedy speculative output equals plain greedy."""
    prompt = S.prompt_text()
    r = S.speculative_generate(reference, draft, prompt, 50, k, 0.0)
    assert torch.equal(r.tokens, M.generate(reference, M._text.encode(prompt), 50, 0.0))
    return lambda: S.speculative_generate(reference, draft, prompt, 50, k, 1.0,
                                          torch.Generator().manual_seed(0))


# --- S5: draft cost ---------------------------------------------------------------------

#: Quantized drafts do the target's float32 arithmetic (fake quantization):
#: one drafted character costs one target step plus the draft's bookkeeping
#: (distribution, draw: ~5-10% of a step measured here), so c lies within
#: [0.8, 1.3] unless quantization changed the arithmetic (claim Q11).
SAME_WORK_BAND = (0.8, 1.3)
#: A table-lookup draft (bigram, n-gram) costs the draft loop's bookkeeping
#: only: ~50-100 us against a ~700-1000 us target step here; 0.25 leaves
#: room for a loaded machine and still says "a small fraction of a pass".
CHEAP = 0.25


@pytest.mark.claim("S5")
def test_draft_cost_quantized_near_one_pass_bigram_a_small_fraction(benchmark, reference,
                                                                   speculative_drafts, costs,
                                                                   record_property):
    """S5. c = one drafted character (the generator's own draft loop) / one
    plain target step (model.generate's loop), median of 21 pairs. The
    quantized drafts' whole 0.99 interval lies in SAME_WORK_BAND (the article:
    8-bit 1.059, 4-bit 1.034); the bigram's and the n-gram's upper limit is
    below CHEAP (the article's bigram: 0.004, timed without the loop)."""
    benchmark.group = "speculative"
    run = _one_run(reference, speculative_drafts[D.DraftKind.BIGRAM])
    benchmark.extra_info["c"] = costs
    record_property("table:spec_draft_cost", list(costs.values()))
    record_property("measured", ", ".join(
        f"{n} c={r['c']:.3f} ({r['c_low']:.3f}~{r['c_high']:.3f})" for n, r in costs.items())
        + f"; target step {costs['bigram']['target_us']:.0f} us")
    for kind in (D.DraftKind.INT8, D.DraftKind.INT4):
        r = costs[kind.value]
        assert SAME_WORK_BAND[0] <= r["c_low"] and r["c_high"] <= SAME_WORK_BAND[1], r
    for kind in (D.DraftKind.BIGRAM, D.DraftKind.NGRAM):
        assert costs[kind.value]["c_high"] < CHEAP, costs[kind.value]
    benchmark.pedantic(run, rounds=1, iterations=1)


# --- X8: verification is not free -----------------------------------------------------------


@pytest.mark.claim("X8")
def test_verification_pass_costs_more_than_a_plain_pass_and_grows_with_k(benchmark, reference,
                                                                        verify_costs,
                                                                        record_property):
    """X8. v_k = one verification pass over k+1 positions (feed, distributions,
    rule) / one plain step, median of 21 pairs. Its 0.99 interval lies above
    1 for every k, and v_8 > v_2 (the article measured 1.41, 1.63, 1.83 ms
    for 2, 5, 9 positions against 1.09 ms for one)."""
    benchmark.group = "speculative"
    benchmark.extra_info["v_k"] = verify_costs
    record_property("table:spec_verify_cost", list(verify_costs.values()))
    record_property("measured", ", ".join(
        f"v_{k}={r['v_k']:.2f} ({r['v_low']:.2f}~{r['v_high']:.2f})" for k, r in verify_costs.items()))
    for r in verify_costs.values():
        assert r["v_low"] > 1.0, r
    assert verify_costs[8]["v_k"] > verify_costs[2]["v_k"]
    step = S._verify_step(reference, 4, 1.0)
    benchmark.pedantic(step, rounds=20, iterations=1)


# --- S6, S7, X8, X2: speedups -----------------------------------------------------------------


def _row(speedups, draft, k):
    return next(r for r in speedups if r["draft"] == draft and r["k"] == k)


def _fmt(r) -> str:
    return (f"{r['draft']} k={r['k']}: {r['speedup']:.2f} ({r['speedup_min']:.2f}~"
            f"{r['speedup_max']:.2f}), predicted {r['predicted']:.2f} / with v_k "
            f"{r['predicted_vk']:.2f}")


@pytest.mark.claim("S6")
def test_speedup_table_quantized_drafts_are_slower_than_plain(benchmark, reference,
                                                             speculative_drafts, speedups,
                                                             record_property):
    """S6. Speedup = plain time / speculative time for 200 characters, median
    of 5 alternating pairs (min~max), as the article measured it. The
    article's finding that a good but expensive draft loses: every 8-bit and
    4-bit median speedup is below 0.95 (the article: 8-bit 0.80 at k=4, 0.56
    at k=8; 4-bit 0.41 at k=8). Why the median and 0.95: c ~ 1 bounds the
    speedup by cpp / (1 + k c) <= (k + 1) / (1 + k) = 1 before verification
    costs anything extra (X8), and a single disturbed pair on a shared
    machine moves the maximum of 5 pairs (measured: 0.56~1.17 around a median
    of 0.71) but not the median; 0.95 leaves 5% for the noise of a median."""
    benchmark.group = "speculative"
    run = _one_run(reference, speculative_drafts[D.DraftKind.INT8])
    benchmark.extra_info["speedups"] = speedups
    record_property("table:spec_speedup", speedups)
    record_property("measured", "; ".join(_fmt(r) for r in speedups))
    for r in speedups:
        if r["draft"] in (D.DraftKind.INT8.value, D.DraftKind.INT4.value):
            assert r["speedup"] < 0.95, r
    benchmark.pedantic(run, rounds=1, iterations=1)


@pytest.mark.claim("S6")
@pytest.mark.does_not_reproduce_on("reference", reason=(
    "measured (baselines/spec_speedup.yml): the bigram draft is slower than plain decoding "
    "at every k: median 0.77 (0.77~0.81) at k=2, 0.68 at k=4, 0.54 at k=8; article 1.30 at "
    "k=4, 1.26 at k=8. Our bigram accepts 0.244 at k=1 (article 0.290), its drafted "
    "character costs c = 0.099 with the loop (article 0.004 without), and verifying k+1 "
    "positions costs v_k = 1.27-1.52 plain passes (X8): cpp / (v_k + k c) = 0.87 at best"))
def test_bigram_draft_is_faster_than_plain_decoding(benchmark, reference, speculative_drafts,
                                                   speedups, record_property):
    """S6. The cheap bigram draft gives a real speedup at its best k: the
    minimum over the 5 pairs is above 1 (the article: 1.30 at k = 4, 1.26 at
    k = 8, "only the worst draft is faster than plain decoding")."""
    benchmark.group = "speculative"
    run = _one_run(reference, speculative_drafts[D.DraftKind.BIGRAM])
    benchmark.pedantic(run, rounds=1, iterations=1)
    rows = [r for r in speedups if r["draft"] == D.DraftKind.BIGRAM.value]
    best = max(rows, key=lambda r: r["speedup"])
    record_property("measured", "; ".join(_fmt(r) for r in rows))
    assert best["speedup"] > REAL_SPEEDUP, best


@pytest.mark.claim("S7")
def test_speedup_formula_never_underrates_the_measured_speedup(benchmark, reference,
                                                               speculative_drafts, speedups,
                                                               record_property):
    """S7. The article's prediction cpp / (1 + k c) against the measured
    speedup, every draft and k. The formula leaves out costs the run pays
    (verifying k+1 positions costs v_k > 1 plain passes, X8; the rounds'
    bookkeeping), never costs it does not pay, so it may overrate but must
    not underrate: measured <= 1.1 x predicted (10% for the timing noise of
    the two medians, c and the speedup)."""
    benchmark.group = "speculative"
    run = _one_run(reference, speculative_drafts[D.DraftKind.INT4])
    record_property("measured", "; ".join(
        f"{r['draft']} k={r['k']}: predicted {r['predicted']:.2f} measured {r['speedup']:.2f}"
        for r in speedups))
    for r in speedups:
        assert r["speedup"] <= 1.1 * r["predicted"], r
    benchmark.pedantic(run, rounds=1, iterations=1)


#: The article: "quantized drafts match to about 0.05" (8-bit 0.87/0.87,
#: 0.83/0.80, 0.62/0.56; 4-bit 0.67/0.67, 0.49/0.46, 0.41/0.41).
ARTICLE_MATCH = 0.05


@pytest.mark.claim("S7")
@pytest.mark.does_not_reproduce_on("reference", reason=(
    "measured (baselines/spec_speedup.yml): the article's formula overrates every quantized "
    "speedup by 0.10-0.18 (8-bit k=2 predicted 0.97, measured 0.80; 4-bit k=2 0.96 vs 0.78; "
    "4-bit k=8 0.75 vs 0.65); the article matched to ~0.05. It charges one plain pass per "
    "verification, but a pass over k+1 positions costs v_k = 1.27-1.52 here (X8)"))
def test_speedup_formula_matches_quantized_drafts_within_0p05(benchmark, reference,
                                                              speculative_drafts, speedups,
                                                              record_property):
    """S7. For the 8-bit and 4-bit drafts at k = 2, 4, 8 the prediction
    cpp / (1 + k c) is within 0.05 of the measured speedup (the article's
    "match to about 0.05")."""
    benchmark.group = "speculative"
    run = _one_run(reference, speculative_drafts[D.DraftKind.INT8])
    benchmark.pedantic(run, rounds=1, iterations=1)
    quantized = [r for r in speedups if r["draft"] in (D.DraftKind.INT8.value, D.DraftKind.INT4.value)]
    worst = max(quantized, key=lambda r: abs(r["predicted"] - r["speedup"]))
    record_property("measured", f"largest |predicted - measured| {abs(worst['predicted'] - worst['speedup']):.2f} "
                                f"({_fmt(worst)})")
    assert abs(worst["predicted"] - worst["speedup"]) <= ARTICLE_MATCH, worst


def prediction_errors(rows: list[dict]) -> tuple[float, float]:
    """Mean |predicted - measured| speedup of cpp / (1 + k c) and of cpp / (v_k + k c)."""
    err_article = sum(abs(r["predicted"] - r["speedup"]) for r in rows) / len(rows)
    err_vk = sum(abs(r["predicted_vk"] - r["speedup"]) for r in rows) / len(rows)
    return err_article, err_vk


@pytest.mark.claim("X8", "X7")
def test_fit_check_prefers_the_article_formula_when_verification_is_free():
    """Teeth for X8's check (no timing): in a world where measured speedups
    follow cpp / (1 + k c) exactly, as they would if verification cost one
    plain pass, the check must not call the v_k formula the better fit."""
    rows = [{"predicted": cpp / (1 + k * c), "predicted_vk": cpp / (v + k * c),
             "speedup": cpp / (1 + k * c)}
            for cpp, k, c, v in [(1.3, 2, 0.1, 1.27), (2.9, 2, 1.0, 1.27), (4.4, 8, 0.12, 1.56)]]
    err_article, err_vk = prediction_errors(rows)
    assert not err_vk < err_article, (err_vk, err_article)


@pytest.mark.claim("X8")
def test_charging_verification_its_cost_fits_the_speedups_better(benchmark, reference,
                                                                 speculative_drafts, speedups,
                                                                 record_property):
    """X8. Mean absolute error, over every draft and k, of cpp / (v_k + k c)
    against the measured speedups is below that of cpp / (1 + k c)."""
    benchmark.group = "speculative"
    run = _one_run(reference, speculative_drafts[D.DraftKind.NGRAM])
    err_article, err_vk = prediction_errors(speedups)
    per_draft = {}
    for r in speedups:
        a, v = per_draft.get(r["draft"], (0.0, 0.0))
        per_draft[r["draft"]] = (a + abs(r["predicted"] - r["speedup"]),
                                 v + abs(r["predicted_vk"] - r["speedup"]))
    record_property("measured", f"mean |error|: 1 + k c {err_article:.3f}, v_k + k c "
                                f"{err_vk:.3f}; per draft (sum over k): " + ", ".join(
                                    f"{d} {a:.2f}/{v:.2f}" for d, (a, v) in per_draft.items()))
    assert err_vk < err_article, (err_vk, err_article)
    benchmark.pedantic(run, rounds=1, iterations=1)


#: X2's "real speedup": the best cheap draft's median over 5 pairs at least
#: 1.2x. The median, not the minimum: one pair disturbed by the shared
#: machine moves the minimum of 5 by 30% or more (S6's docstring), the median
#: by a few percent; 1.2 leaves that noise well inside a clear win.
REAL_SPEEDUP = 1.2


@pytest.mark.claim("X2")
def test_cheap_and_good_draft_beats_the_bigram_and_plain_decoding(benchmark, request, reference,
                                                                  speculative_drafts, speedups,
                                                                  costs, verify_costs,
                                                                  baselines_dir, data_regression,
                                                                  record_property):
    """X2. The best speedup of the cheap, better drafts (n-gram, draft GPT) is
    a real speedup (its median over the 5 pairs above REAL_SPEEDUP) and above the
    bigram's best median speedup, by at least 10% (timing noise of two
    medians). Under --force-regen the run's figures (c, v_k, every speedup
    with both predictions, the best draft) are written to
    baselines/spec_speedup.yml."""
    benchmark.group = "speculative"
    run = _one_run(reference, speculative_drafts[D.DraftKind.NGRAM])
    cheap = [r for r in speedups if r["draft"] in (D.DraftKind.NGRAM.value, D.DraftKind.GPT.value)]
    best = max(cheap, key=lambda r: r["speedup"])
    bigram_best = max((r for r in speedups if r["draft"] == D.DraftKind.BIGRAM.value),
                      key=lambda r: r["speedup"])
    record_property("measured", f"best: {_fmt(best)}, c={costs[best['draft']]['c']:.3f}; "
                                f"bigram best: {_fmt(bigram_best)}")
    if request.config.getoption("force_regen"):
        data_regression.check(_record(costs, verify_costs, speedups, best),
                              fullpath=baselines_dir / "spec_speedup.yml")
    assert best["speedup_min"] > 1.0, best
    assert best["speedup"] > 1.1 * bigram_best["speedup"], (best, bigram_best)
    benchmark.pedantic(run, rounds=1, iterations=1)


def _record(costs, verify_costs, speedups, best) -> dict:
    def rounded(d):
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in d.items()}

    return {"c": {n: rounded(r) for n, r in costs.items()},
            "v_k": {int(k): rounded(r) for k, r in verify_costs.items()},
            "speedups": [rounded(r) for r in speedups],
            "best": rounded(best),
            "threads": 1, "torch": str(torch.__version__)}
