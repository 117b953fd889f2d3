"""The sweep section's figures computed a second way from the committed
sweep file's raw points: each claim's margin from its definition written
out here (THRESHOLDS' words), the key figures, fragility and S6/S7 cells with
the formats written out here, each 4-bit share as a penalty over the sum of
penalties, break-even c and the article-c formula from chars per pass, and the
margin plots' series (lines and bars) against the points' margins."""

from __future__ import annotations

import json
import math

import pytest

from aftertrain.experiments.article import ARTICLE
from aftertrain.experiments.sweep import THRESHOLDS, SweepPoint, article_figures
from aftertrain.report import sweep as SW
from aftertrain.report.document import Document
from aftertrain.report.markdown import read_table
from aftertrain.report.reading import read_ledger
from tests.common.committed import COMMITTED
from tests.common.figures import plots_without_png


@pytest.fixture(scope="module")
def points() -> list[dict]:
    data = json.loads((COMMITTED / "sweep.json").read_text())
    return sorted(data["points"], key=lambda p: p["val_loss"])


@pytest.fixture(scope="module")
def doc(points) -> Document:
    d = Document(read_ledger(COMMITTED / "claims.json"))
    with plots_without_png():
        SW.section(d, [SweepPoint.from_record(p) for p in points])
    return d


def _margins(f: dict) -> dict[str, float]:
    bits = {r["bits"]: r for r in f["q4"]}
    pen = {r["name"]: r["penalty"] for r in f["q7"]}
    acc = {(r["draft"], r["k"]): r["acceptance"] for r in f["s4"]}
    return {
        "q5_4bit_pc_minus_bigram": bits[4]["per_channel"] - f["bigram"],
        "q5_3bit_pc_minus_bigram": bits[3]["per_channel"] - f["bigram"],
        "q6_2bit_pc_minus_pt": bits[2]["per_channel"] - bits[2]["per_tensor"],
        "q7_tok_over_block": pen["tok.weight"] / max(v for n, v in pen.items() if n.startswith("blocks.")),
        "q7_pos_minus_next": pen["pos.weight"]
        - max(v for n, v in pen.items() if n not in ("tok.weight", "pos.weight")),
        "p1_global_minus_layer_30": f["p1"][0]["global"] - f["p1"][0]["layer"],
        "p2_random5_minus_bigram": f["p2"][0]["mean"] - f["bigram"],
        "s4_bigram_k8_minus_k1": acc[("bigram", 8)] - acc[("bigram", 1)],
        "s4_8bit_k8_minus_k1": acc[("8-bit", 8)] - acc[("8-bit", 1)],
    }


def _thresholds() -> dict[str, tuple[str, str, float, str]]:
    """Each margin's (claim, words, threshold, side) by its name in the sweep file."""
    return {m.value: (t.claim, t.what, t.threshold, t.side.value) for m, t in THRESHOLDS.items()}


def test_margins_are_their_definitions_and_their_cells_say_which_side(points, doc):
    assert {m.value for m in THRESHOLDS} == set(_margins(points[0]["figures"]))
    header = ["model", "val loss", "from"] + [
        f"{c}: {w} ({'>' if s == 'above' else '<'} {t:g})" for c, w, t, s in _thresholds().values()
    ]
    rows = read_table(doc.markdown(), header)
    for p, row in zip(points, rows, strict=False):
        expected = _margins(p["figures"])
        assert p["margins"] == pytest.approx(expected, rel=1e-12)
        for (name, (_, _, t, side)), cell in zip(_thresholds().items(), row[3:], strict=True):
            m = expected[name]
            assert cell == f"{m:+.4f} {'✓' if (m > t if side == 'above' else m < t) else '✗'}"


def test_key_figure_cells(points, doc):
    bits = sorted({r["bits"] for p in points for r in p["figures"]["q4"]}, reverse=True)
    rows = read_table(
        doc.markdown(),
        ["model", "val loss", "bigram"]
        + [f"{b}-bit pt / pc" for b in bits]
        + [
            "Q7 tok / max block penalty",
            "P1 30% global / layer / random",
            "P2 random 5%",
            "S4 bigram k=1 / k=8",
            "S4 8-bit k=1 / k=8",
        ],
    )
    for p, row in zip(points, rows, strict=True):
        f = p["figures"]
        q4 = {r["bits"]: r for r in f["q4"]}
        pen = {r["name"]: r["penalty"] for r in f["q7"]}
        acc = {(r["draft"], r["k"]): r["acceptance"] for r in f["s4"]}
        p1 = f["p1"][0]
        assert row == (
            [p["model"], f"{p['val_loss']:.4f}", f"{f['bigram']:.4f}"]
            + [f"{q4[b]['per_tensor']:.4f} / {q4[b]['per_channel']:.4f}" for b in bits]
            + [
                f"{pen['tok.weight']:+.4f} / "
                f"{max(v for n, v in pen.items() if n.startswith('blocks.')):+.4f}",
                f"{p1['global']:.4f} / {p1['layer']:.4f} / {p1['random']:.4f}",
                f"{f['p2'][0]['mean']:.4f}",
                f"{acc[('bigram', 1)]:.3f} / {acc[('bigram', 8)]:.3f}",
                f"{acc[('8-bit', 1)]:.3f} / {acc[('8-bit', 8)]:.3f}",
            ]
        )


def test_fragility_cells_and_shares(points, doc):
    text = doc.markdown()
    start = text.index("**What could make a model fragile**")
    with_f = [p for p in points if p.get("fragility")]
    sites = sorted(with_f[0]["fragility"]["activations"])
    rows = read_table(
        text[start:],
        ["model", "weight range worst (matrix) / median"]
        + [f"activations {s}" for s in sites]
        + [
            "RMS tok / pos over blocks",
            "largest \\|w\\|",
            "sum of 4-bit penalties",
            "4-bit share tok / pos / head / top block",
        ],
    )
    for p, row in zip(with_f, rows, strict=True):
        f, pen = p["fragility"], {r["name"]: r["penalty"] for r in p["figures"]["q7"]}
        total = sum(pen.values())
        assert f["q7_share"] == pytest.approx({n: v / total for n, v in pen.items()}, rel=1e-9)
        w = f["weight_range"]
        worst = max(w["matrices"], key=w["matrices"].get)
        assert row[1] == f"{w['worst']:.2f} ({worst.removesuffix('.weight')}) / {w['median']:.2f}"
        assert row[2 : 2 + len(sites)] == [
            f"{f['activations'][s]['ratio']:.2f} ({f['activations'][s]['max']:.2f})" for s in sites
        ]
        assert row[-2] == f"{total:+.4f}"
        top = max((n for n in pen if n.startswith("blocks.")), key=lambda n: pen[n] / total)
        assert row[-1] == (
            " / ".join(f"{100 * pen[n] / total:.0f}%" for n in ("tok.weight", "pos.weight", "head.weight"))
            + f" / {100 * pen[top] / total:.0f}% ({top.removesuffix('.weight')})"
        )


def test_speculative_cells_are_the_formulas_of_chars_per_pass(points, doc):
    for p in points:
        for r in p.get("speculative") or []:
            c = next((a.c for a in ARTICLE.s5 if a.draft == r["draft"]), None)
            assert r["break_even_c"] == pytest.approx((r["chars_per_pass"] - 1) / r["k"], rel=1e-12)
            if c is not None:
                assert r["formula_article_c"] == pytest.approx(
                    r["chars_per_pass"] / (1 + r["k"] * c), rel=1e-12
                )
    with_s = [p for p in points if p.get("speculative")]
    ks = sorted({r["k"] for r in with_s[0]["speculative"]})
    kk = "/".join(f"k={k}" for k in ks)
    rows = read_table(
        doc.markdown(),
        [
            "model",
            f"bigram acceptance {kk}",
            f"bigram chars per pass {kk}",
            f"bigram break-even c {kk}",
            f"8-bit acceptance {kk}",
            f"8-bit formula, article's c {kk}",
            f"4-bit formula, article's c {kk}",
        ],
    )
    for p, row in zip(with_s, rows, strict=False):
        s = {(r["draft"], r["k"]): r for r in p["speculative"]}
        assert row[1:] == [
            " / ".join(f"{s[(d, k)][key]:.{n}f}" for k in ks)
            for d, key, n in (
                ("bigram", "acceptance", 3),
                ("bigram", "chars_per_pass", 2),
                ("bigram", "break_even_c", 2),
                ("8-bit", "acceptance", 3),
                ("8-bit", "formula_article_c", 2),
                ("4-bit", "formula_article_c", 2),
            )
        ]


def test_margin_plots_draw_the_points_margins(points, doc):
    """Lines: the reference recipe's checkpoints; triangles: the other recipes';
    a cross: the article's published model; dashed: the thresholds. Bars: every
    checkpoint, reference recipe first, then by name; stars: the article's."""

    def label(p: dict) -> str:
        return SW.recipe_label(SweepPoint.from_record(p))

    reference = [p for p in points if label(p) == SW.REFERENCE_RECIPE]
    others = [p for p in points if label(p) != SW.REFERENCE_RECIPE]
    order = sorted(points, key=lambda p: (label(p) != SW.REFERENCE_RECIPE, p["model"]))
    article = article_figures().to_record()
    for name, _, keys, _ in SW.PLOTS:
        s = doc.plots[name].series
        for k in keys:
            claim, what, t, side = _thresholds()[k.value]
            short = what.split(" (")[0]
            line = s[f"{claim}: {what} (holds {side} {t:g})"]
            assert line["x"] == [p["val_loss"] for p in reference]
            assert line["y"] == pytest.approx([_margins(p["figures"])[k.value] for p in reference], rel=1e-12)
            rest = s[f"{claim}: other recipes ({short})"]
            assert rest["x"] == [p["val_loss"] for p in others]
            assert rest["y"] == pytest.approx([_margins(p["figures"])[k.value] for p in others], rel=1e-12)
            art = s[f"{claim}: the article's model ({short})"]
            assert art["x"] == [ARTICLE.b1.reference]
            assert art["y"] == pytest.approx([_margins(article)[k.value]], rel=1e-12)
            assert s[f"threshold {t:g}"]["y"] == [t, t]
    for name, _, keys, _ in SW.RECIPE_PLOTS:
        s = doc.plots[name].series
        for k in keys:
            claim, what, t, side = _thresholds()[k.value]
            bars = s[f"{claim}: {what} (holds {side} {t:g})"]
            assert bars["y"] == pytest.approx([_margins(p["figures"])[k.value] for p in order], rel=1e-12)
            assert not any(math.isnan(y) for y in bars["y"])
            assert s[f"{claim}: the article's model (published)"]["y"] == pytest.approx(
                [_margins(article)[k.value]], rel=1e-12
            )
