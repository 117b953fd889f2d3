"""Every "ours" cell of the report's tables and every figure of its prose,
computed a second way from the committed ledger's raw JSON (dicts, not the
typed rows the report reads), with the formats written out here; and the
figures one table derives from another checked across tables (Q8's sum
against Q7's penalties, S6's predictions against the c and v_k they name,
one per draft and per k, on every committed ledger; X1's prediction against
the k = 1 rate).

tests/report/test_assemble.py checks the bits, speedup, acceptance and
sparsity tables' first columns and the plots; this file covers the rest.
The report is rendered once with its plots not saved (cheap).
"""

from __future__ import annotations

import pytest

from aftertrain import report as R
from aftertrain.claims import tables as TB
from aftertrain.report.markdown import read_table
from tests.common.committed import committed_data
from tests.common.figures import plots_without_png

MB = 1_048_576


@pytest.fixture(scope="module")
def raw() -> dict:
    return committed_data()


@pytest.fixture(scope="module")
def text(raw) -> str:
    with plots_without_png():
        return R.render(R.LedgerFile.from_json(raw, "claims.json")).markdown()


def _ratio(median, ci) -> str:
    return f"{median:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def _pct(x, d=1) -> str:
    return f"{round(100 * x, d):.{d}f}%"


def test_baseline_cache_and_storage_cells(raw, text):
    """B1 and K1 as recorded; Q3's MB are bytes / 2^20 (integer sums of the
    per-tensor row), the cut 1 - quantized / float32 bytes."""
    t = raw["tables"]
    rows = read_table(text, ["model", "article", "ours"])
    assert [(r[0], r[2]) for r in rows] == [(k, f"{v:.4f}") for k, v in t[TB.B1].items()]
    rows = read_table(text, ["", "article", "ours"])  # K1's table is the first of this header
    assert rows[0][2] == f"{t[TB.K1]['max_diff']:.2e}"
    s = t[TB.Q3]["per-tensor_8"]
    storage = [r[2] for r in _table_after(text, "Storage of int8", ["", "article", "ours"])]
    assert storage == [
        f"{s['weights_fp32_bytes'] / MB:.2f}",
        f"{(s['weight_code_bytes'] + s['scale_bytes']) / MB:.2f}",
        f"{s['parameters_fp32_bytes'] / MB:.2f}",
        f"{s['parameters_quantized_bytes'] / MB:.2f}",
        _pct((s["parameters_fp32_bytes"] - s["parameters_quantized_bytes"]) / s["parameters_fp32_bytes"]),
    ]
    assert storage[:4] == ["2.41", "0.60", "2.43", "0.62"]  # the article's, reproduced exactly


def _table_after(text: str, title: str, header: list[str]) -> list[list[str]]:
    """The first table with ``header`` after the bold ``title``."""
    return read_table(text[text.index(f"**{title}") :], header)


def test_quantization_cells(raw, text):
    t = raw["tables"]
    q6 = _table_after(
        text,
        "2 bits on blocks.0.f1",
        ["granularity", "zeroed (article)", "zeroed (ours)", "MAE (article)", "MAE (ours)"],
    )
    assert [(r[0], r[2], r[4]) for r in q6] == [
        (g, _pct(t[TB.Q6][g]["zero_fraction"]), f"{t[TB.Q6][g]['mean_abs_error']:.4f}")
        for g in ("per-tensor", "per-channel")
    ]
    q4 = read_table(
        text,
        ["bits", "per-tensor (article)", "per-tensor (ours)", "per-channel (article)", "per-channel (ours)"],
    )
    assert [r[0] for r in q4] == ["float32"] + [str(r["bits"]) for r in t[TB.Q4]["rows"]]
    q7 = read_table(text, ["rank", "matrix", "article", "ours"])
    assert [(int(r[0]), r[1], r[3]) for r in q7] == [
        (i + 1, r["name"], f"{r['penalty']:+.4f}") for i, r in enumerate(t[TB.Q7])
    ]
    penalties = [r["penalty"] for r in t[TB.Q7]]
    assert penalties == sorted(penalties, reverse=True)  # "most harmful first"
    q8 = _table_after(text, "Penalties compound", ["", "article", "ours"])
    assert [r[2] for r in q8] == [f"{t[TB.Q8]['sum_of_penalties']:+.4f}", f"{t[TB.Q8]['all_at_once']:+.4f}"]
    assert t[TB.Q8]["sum_of_penalties"] == pytest.approx(sum(penalties), rel=1e-12)
    q4 = {r["bits"]: r for r in t[TB.Q4]["rows"]}
    assert t[TB.Q4]["float32"] == t[TB.B1]["reference"]  # both the reference's validation loss
    # all at once: every matrix at 4 bits per-channel, Q4's row, minus the float32 loss
    assert t[TB.Q8]["all_at_once"] == pytest.approx(q4[4]["per_channel"] - t[TB.Q4]["float32"], rel=1e-9)
    assert t[TB.Q8]["excess"] == pytest.approx(
        t[TB.Q8]["all_at_once"] - t[TB.Q8]["sum_of_penalties"], rel=1e-9
    )
    q9 = _table_after(text, "Same seed, float32 against int8", ["", "article", "ours"])
    position = t[TB.Q9]["position"]
    assert q9[0][2] == str(position)
    a, b = t[TB.Q9]["float32"], t[TB.Q9]["quantized"]
    assert a[: position - 1] == b[: position - 1] and a[position - 1] != b[position - 1]  # 1-based
    q10 = _table_after(text, "No outlier channels", ["", "article", "ours"])
    w, acts = t[TB.Q10]["weights"], t[TB.Q10]["activations"]
    assert [r[2] for r in q10] == (
        [f"{w['worst']:.2f}", f"{w['median']:.2f}"]
        + [
            f"{acts[s]['ratio']:.2f} ({acts[s]['max']:.2f})"
            for s in ("block0_ffn_input", "block2_ffn_input", "final_residual")
        ]
        + [f"{t[TB.Q10]['int8_granularity_gap']:.4f}"]
    )
    ranges = sorted(w["matrices"].values())
    middle = len(ranges) // 2  # 15 matrices: the 8th
    # rel 1e-6: the committed ledger's worst and median were summarised in float32
    # (tests/experiments/test_quant_figures.py pins them exactly on a toy model)
    assert w["worst"] == pytest.approx(max(ranges), rel=1e-6)
    assert w["median"] == pytest.approx(
        ranges[middle] if len(ranges) % 2 else (ranges[middle - 1] + ranges[middle]) / 2, rel=1e-6
    )
    assert t[TB.Q10]["int8_granularity_gap"] == pytest.approx(
        q4[8]["per_tensor"] - q4[8]["per_channel"], rel=1e-9
    )


def test_timing_ratio_cells(raw, text):
    t = raw["tables"]
    q11 = read_table(text, ["", "ours: median [CI of the median]"])
    assert q11[0][1] == _ratio(t[TB.Q11]["median"], t[TB.Q11]["ci"])
    assert t[TB.Q11]["holds_1"] == (t[TB.Q11]["ci"][0] <= 1 <= t[TB.Q11]["ci"][1])
    x3 = read_table(text, ["rows multiplied at once", "ours: median [CI of the median]"])
    sizes = sorted(int(k) for k in t[TB.X3] if k != "crossover_rows")
    assert x3 == [[str(n), _ratio(t[TB.X3][str(n)]["median"], t[TB.X3][str(n)]["ci"])] for n in sizes]
    below = [n for n in sizes if t[TB.X3][str(n)]["ci"][1] < 1]
    cross = t[TB.X3]["crossover_rows"]
    assert cross is None or (cross in below and all(n in below for n in sizes if n >= cross))
    p7 = read_table(text, ["zeros", "article: median (quartiles)", "ours: median [interval]"])
    p7_tables = [
        t[k]
        for k in sorted(t, key=lambda k: float(k[3:]) if k.startswith("p7_") else 9)
        if k.startswith(TB.P7_PREFIX)
    ]
    assert [(r[0], r[2]) for r in p7] == [
        (_pct(r["sparsity"], 0), _ratio(r["median"], r["ci"])) for r in p7_tables
    ]
    for r in p7_tables:
        assert r["q1"] <= r["median"] <= r["q3"]
    x4 = read_table(text, ["sparsity", "ours: median [interval]"])
    assert x4 == [[_pct(r["sparsity"]), _ratio(r["median"], r["ci"])] for r in t[TB.X4]["rows"]]
    cross = t[TB.X4]["crossover"]
    pays = [r["sparsity"] for r in t[TB.X4]["rows"] if r["ci"][1] < 1]
    assert cross is None or (
        cross in pays and all(r["sparsity"] in pays for r in t[TB.X4]["rows"] if r["sparsity"] >= cross)
    )
    assert f"CSR starts to pay at: {_pct(cross) if cross else 'no sparsity tried'}" in text


def test_pruning_cells(raw, text):
    t = raw["tables"]
    p2 = read_table(text, ["sparsity", "article", "ours (mean)", "ours (min~max)"])
    assert [(r[0], r[2], r[3]) for r in p2] == [
        (_pct(r["sparsity"], 0), f"{r['mean']:.4f}", f"{r['min']:.4f}~{r['max']:.4f}") for r in t[TB.P2]
    ]
    for r in t[TB.P2]:
        assert r["min"] <= r["mean"] <= r["max"] and r["std"] <= (r["max"] - r["min"])
    p4 = read_table(text, ["bits", "article", "ours", "our quantized loss"])
    assert [(int(r[0]), r[2], r[3]) for r in p4] == [
        (r["bits"], _pct(r["sparsity"]), f"{r['loss']:.4f}") for r in t[TB.P4]
    ]
    q4 = {r["bits"]: r["per_channel"] for r in t[TB.Q4]["rows"]}
    assert all(r["loss"] == q4[r["bits"]] for r in t[TB.P4])  # the per-channel loss of Q4
    p5 = read_table(
        text,
        ["storage", "dense (article)", "dense (ours)", "COO / bitmask (article)", "COO / bitmask (ours)"],
    )
    assert p5[0][2] == f"{t[TB.P5][0]['dense']:.2f}"
    assert [r[0] for r in p5[2:]] == [
        f"{_pct(r['sparsity'], 0)} sparse" for r in t[TB.P5] if r["sparsity"] in (0.5, 0.75, 0.9)
    ]
    assert [r[4] for r in p5[2:]] == [
        f"{r['coo']:.3f} / {r['bitmask']:.3f}" for r in t[TB.P5] if r["sparsity"] in (0.5, 0.75, 0.9)
    ]
    for r in t[TB.P5]:
        # kept fraction f (the pruned model's own, not exactly 1 - sparsity): COO 8 f (a 4 B
        # value and a 4 B index), bitmask 4 f + 1/8 (values and one bit per element)
        f = r["coo"] / 8
        assert abs(f - (1 - r["sparsity"])) < 1e-5
        assert (r["dense"], r["bitmask"]) == pytest.approx((4.0, 4 * f + 0.125), rel=1e-12)
    p6 = _table_after(text, "At equal size", ["", "compression (article / ours)", "loss (article / ours)"])
    assert [(r[0], r[1].split(" / ")[1], r[2].split(" / ")[1]) for r in p6] == [
        (r["name"], f"{r['compression']:.2f}x", f"{r['loss']:.4f}") for r in t[TB.P6]
    ]
    p1 = read_table(
        text, ["sparsity", "global (article / ours)", "per-layer (article / ours)", "random (article / ours)"]
    )
    assert [r[0] for r in p1] == [_pct(r["sparsity"], 0) for r in t[TB.P1]]
    assert t[TB.P6][0]["compression"] == 4.0  # float32 over int8
    x5 = t[TB.X5]
    rows = _table_after(text, "2:4 structured pruning", ["", "ours"])
    assert [r[0] for r in rows] == [
        "loss, 2:4",
        "loss, global 50%",
        "loss, per-layer 50%",
        "bytes per element, 2:4 storage",
        "bytes per element, bitmask",
        "bytes per element, COO",
    ]
    assert [r[1] for r in rows] == [
        f"{x5['two_four']:.4f}",
        f"{x5['global_50']:.4f}",
        f"{x5['layer_50']:.4f}",
        f"{x5['bytes_two_four']:.3f}",
        f"{x5['bytes_bitmask']:.3f}",
        f"{x5['bytes_coo']:.3f}",
    ]
    assert x5["bytes_two_four"] == 4 * 0.5 + 0.5 * 2 / 8  # half kept (4 B), 2 position bits each
    p1 = {r["sparsity"]: r for r in t[TB.P1]}
    assert (x5["global_50"], x5["layer_50"]) == (p1[0.5]["global"], p1[0.5]["layer"])


def test_speculative_cells_and_prose(raw, text):
    t = raw["tables"]
    s2 = t[TB.SPEC_FIRST_TOKEN]
    rows = read_table(text, ["sampler", "article", "ours", "chi-square p"])
    assert [(r[2], r[3]) for r in rows[:-1]] == [(f"{r['tv']:.4f}", f"{r['chi2_pvalue']:.3g}") for r in s2]
    assert rows[-1][2] == f"{s2[0]['direct_tv']:.4f}"
    assert (
        f"median {s2[0]['null_median']:.4f}, 99% quantile {s2[0]['null_q99']:.4f}; alarm "
        f"threshold at alpha 1e-6: {s2[0]['tv_threshold']:.4f}."
    ) in text
    assert s2[0]["direct_tv"] <= s2[0]["null_q99"] < s2[0]["tv_threshold"]
    acc = t[TB.SPEC_ACCEPTANCE]
    rows = read_table(
        text,
        [
            "draft",
            "k",
            "acceptance (article)",
            "acceptance (ours)",
            "X1 prediction from k=1 (ours)",
            "chars/pass (article)",
            "chars/pass (ours)",
            "target passes (article)",
            "target passes (ours)",
        ],
    )
    assert [r[4] for r in rows] == [f"{r['predicted_acceptance']:.3f}" for r in acc]
    for r in acc:  # the figures are recorded to 4 decimals
        assert r["acceptance"] == pytest.approx(r["accepted"] / r["drafted"], abs=5e-5)
        assert r["chars_per_pass"] == pytest.approx(200 / r["target_passes"], abs=5e-5)
    x1 = t[TB.SPEC_X1]
    rows = read_table(
        text, ["draft", "k=1", "predicted at k=8", "measured at k=8", "article: k=1 / predicted / measured"]
    )
    by = {}
    for r in x1:
        by.setdefault(r["draft"], {})[r["k"]] = r
    assert [r[:4] for r in rows] == [
        [d, f"{v[1]['acceptance']:.3f}", f"{v[8]['predicted_acceptance']:.3f}", f"{v[8]['acceptance']:.3f}"]
        for d, v in by.items()
    ]
    for v in by.values():
        a = v[1]["accepted"] / v[1]["drafted"]
        assert v[8]["predicted_acceptance"] == pytest.approx(sum(a**i for i in range(1, 9)) / 8, rel=1e-9)
    s5, x8, s6 = t[TB.SPEC_DRAFT_COST], t[TB.SPEC_VERIFY_COST], t[TB.SPEC_SPEEDUP]
    rows = read_table(text, ["draft", "article: us (c)", "ours: us", "ours: c, median [CI of the median]"])
    assert [(r[2], r[3]) for r in rows] == [
        (f"{r['draft_us']:.0f}", f"{r['c']:.3f} [{r['c_low']:.3f}, {r['c_high']:.3f}]") for r in s5
    ]
    assert f"One plain target step (ours): {s5[0]['target_us']:.0f} us" in text
    rows = read_table(text, ["k", "article (ms ratio to 1 position)", "ours: v_k, median [CI of the median]"])
    assert [(int(r[0]), r[2]) for r in rows] == [
        (r["k"], f"{r['v_k']:.3f} [{r['v_low']:.3f}, {r['v_high']:.3f}]") for r in x8
    ]
    rows = read_table(
        text,
        [
            "draft",
            "k",
            "article",
            "ours",
            "article's prediction",
            "ours: (chars/pass)/(1+kc)",
            "ours: (chars/pass)/(v_k+kc)",
            "ours: share (measured / (v_k+kc))",
            "ours: c, v_k used",
        ],
    )
    assert [(r[5], r[8]) for r in rows] == [
        (f"{r['predicted']:.2f}", f"{r['c']:.3f}, {r['v_k']:.3f}") for r in s6
    ]
    # the share: the measured median over cpp / (v_k + k c), from the row's own figures
    assert [r[7] for r in rows] == [
        f"{r['speedup'] / (r['chars_per_pass'] / (r['v_k'] + r['k'] * r['c'])):.2f}" for r in s6
    ]
    assert (
        "Both predictions use the c and v_k of the last column: their medians at the cost "
        "decision's last look"
    ) in text
    best = max(s6, key=lambda r: r["speedup"])
    assert (
        f"Highest median speedup (X2's verdict is in the claims table): {best['draft']} at "
        f"k={best['k']}, {best['speedup']:.2f} [{best['speedup_min']:.2f}, "
        f"{best['speedup_max']:.2f}]"
    ) in text


@pytest.mark.parametrize("name", ["claims.json", "claims-article.json"])
def test_speedup_predictions_are_the_formulas_of_the_costs_they_name(name):
    """S6's two predictions from the row's own c and v_k (the cost decision's
    last look, which S5's and X8's tables may show at an earlier one): one c
    per draft and one v_k per k across the table, for S5's drafts and X8's k."""
    t = committed_data(name)["tables"]
    s5, x8, s6 = t[TB.SPEC_DRAFT_COST], t[TB.SPEC_VERIFY_COST], t[TB.SPEC_SPEEDUP]
    for r in s6:
        assert r["predicted"] == pytest.approx(r["chars_per_pass"] / (1 + r["k"] * r["c"]), rel=1e-12)
        assert r["predicted_vk"] == pytest.approx(
            r["chars_per_pass"] / (r["v_k"] + r["k"] * r["c"]), rel=1e-12
        )
    assert len({(r["draft"], r["c"]) for r in s6}) == len({r["draft"] for r in s6}) == len(s5)
    assert len({(r["k"], r["v_k"]) for r in s6}) == len({r["k"] for r in s6}) == len(x8)
    assert {r["draft"] for r in s6} == {r["draft"] for r in s5}
    assert {r["k"] for r in s6} == {r["k"] for r in x8}


def test_header_shows_the_ledgers_metadata(raw, text):
    m = raw["meta"]
    assert (
        f"**Run**: date {m['date']} · commit {m['commit']} · CPU {m['cpu']} · torch "
        f"{m['torch']} · {m['threads']} torch thread(s) · load {m['load1']:.2f} (1-minute "
        f"average) · model {m['model']} (sha256 {m['model_sha256'][:16]}…) · "
        f"{'quick run' if m['quick'] else 'full run'}"
    ) in text


def test_second_models_header_and_losses_come_from_its_own_ledger(raw):
    other = committed_data("claims-article.json")
    led = R.LedgerFile.from_json(raw, "claims.json")
    with plots_without_png():
        text = R.render(
            led, others={"article": R.LedgerFile.from_json(other, "claims-article.json")}
        ).markdown()
    m = other["meta"]
    assert (
        f"**Run of `article`**: date {m['date']} · commit {m['commit']} · CPU {m['cpu']}"
        f" · torch {m['torch']} · {m['threads']} torch thread(s) · load {m['load1']:.2f}"
    ) in text
    assert (
        f"Validation loss of each model (B1): reference {raw['tables'][TB.B1]['reference']:.4f}, "
        f"article {other['tables'][TB.B1]['reference']:.4f}; the article's model 2.0272."
    ) in text


def test_reference_lines_and_overlays_are_the_ledgers_and_closed_forms(raw):
    """The plots' reference lines: ln 100, B1's bigram and reference losses,
    int8 1 and float32 4 bytes, the formula curves 8(1-s) and 4(1-s) + 1/8;
    the overlays: each model's lines from its own ledger's raw JSON."""
    import math

    other = committed_data("claims-article.json")
    with plots_without_png():
        doc = R.render(
            R.LedgerFile.from_json(raw, "claims.json"),
            others={"article": R.LedgerFile.from_json(other, "claims-article.json")},
        )
    b1 = raw["tables"][TB.B1]
    bits, prune, size = (doc.plots[n].series for n in ("quant_bits", "prune_sparsity", "prune_bytes"))
    for s in (bits, prune):
        assert s["untrained ln 100"]["y"] == pytest.approx([math.log(100)] * 2, rel=1e-15)
        assert s["bigram (ours)"]["y"] == [b1["bigram"]] * 2
    assert prune["unpruned (ours)"]["y"] == [b1["reference"]] * 2
    assert (size["int8 dense"]["y"], size["float32 dense"]["y"]) == ([1.0] * 2, [4.0] * 2)
    xs = [x / 100 for x in size["COO: 8(1-s)"]["x"]]
    assert size["COO: 8(1-s)"]["y"] == pytest.approx([8 * (1 - x) for x in xs], rel=1e-9)
    assert size["bitmask: 4(1-s) + 1/8"]["y"] == pytest.approx([4 * (1 - x) + 0.125 for x in xs], rel=1e-9)
    overlay, sparsity = doc.plots["models_quant_bits"].series, doc.plots["models_prune_sparsity"].series
    assert overlay["untrained ln 100"]["y"] == pytest.approx([math.log(100)] * 2, rel=1e-15)
    assert overlay["bigram"]["y"] == [b1["bigram"]] * 2
    for label, data in (("reference", raw), ("article", other)):
        q4, p1 = data["tables"][TB.Q4]["rows"], data["tables"][TB.P1]
        assert overlay[f"per-tensor ({label})"]["y"] == [r["per_tensor"] for r in q4]
        assert overlay[f"per-channel ({label})"]["y"] == [r["per_channel"] for r in q4]
        for key, name in (
            ("global", "global magnitude"),
            ("layer", "per-layer magnitude"),
            ("random", "random"),
        ):
            assert sparsity[f"{name} ({label})"]["x"] == [100 * r["sparsity"] for r in p1]
            assert sparsity[f"{name} ({label})"]["y"] == [r[key] for r in p1]


def test_int8_storage_cell_adds_the_scales_bytes(raw):
    """The committed per-tensor scales are 60 bytes, invisible at two decimals
    of a MB; with 2^19 bytes of scales (0.50 MB) the "2-D weights int8" cell
    must show the codes plus the scales."""
    import copy

    ledger = copy.deepcopy(raw)
    s = ledger["tables"][TB.Q3]["per-tensor_8"]
    s["scale_bytes"] = 2**19
    with plots_without_png():
        text = R.render(R.LedgerFile.from_json(ledger, "claims.json")).markdown()
    storage = [r[2] for r in _table_after(text, "Storage of int8", ["", "article", "ours"])]
    assert storage[1] == f"{(s['weight_code_bytes'] + 2**19) / MB:.2f}"
    assert storage[1] != f"{s['weight_code_bytes'] / MB:.2f}"
