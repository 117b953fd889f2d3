"""The quality sweep (aftertrain.experiments.sweep): the key figures on a
tiny setting, their margins, reading them from a ledger's tables, and the
report's rendering of a sweep file (aftertrain.report.sweep)."""

from __future__ import annotations

import math
import os
import stat
from dataclasses import replace

import pytest
import torch

from aftertrain.claims import tables as TB
from aftertrain.claims.ledgerfile import LedgerFile
from aftertrain.experiments import sweep as ESW
from aftertrain.experiments.article import ARTICLE
from aftertrain.experiments.sweep import Margin

TINY = dict(bits=(4, 3, 2), names=["tok.weight", "pos.weight", "blocks.0.f1.weight"], seeds=(0,), n_new=12)


@pytest.fixture(scope="module")
def tiny_tokens():
    from aftertrain.lm.text import load_corpus

    return load_corpus().val[:400]


@pytest.fixture(scope="module")
def tiny_figures(small_gpt, tiny_tokens):
    return ESW.key_figures(small_gpt, tokens=tiny_tokens, **TINY)


def test_key_figures_have_the_ledger_shapes_and_finite_margins(tiny_figures):
    fig = tiny_figures
    assert [r.bits for r in fig.q4] == [4, 3, 2]
    assert {r.name for r in fig.q7} == {"tok.weight", "pos.weight", "blocks.0.f1.weight"}
    assert [r.sparsity for r in fig.p1] == [ESW.P1_SPARSITY]
    assert [r.sparsity for r in fig.p2] == [ESW.P2_SPARSITY]
    assert {(r.draft, r.k) for r in fig.s4} == {(d.value, k) for d in ESW.DRAFTS for k in ESW.KS}
    assert ESW.KeyFigures.from_record(fig.to_record()) == fig  # as the sweep file stores it
    m = ESW.margins(fig)
    assert set(m) == set(ESW.THRESHOLDS)
    assert all(math.isfinite(v) for v in m.values()), m


def test_margins_are_the_differences_the_claims_compare(tiny_figures):
    fig, m = tiny_figures, ESW.margins(tiny_figures)
    bits = {r.bits: r for r in fig.q4}
    assert m[Margin.Q6_2BIT] == bits[2].per_channel - bits[2].per_tensor
    assert m[Margin.Q5_3BIT] == bits[3].per_channel - fig.bigram
    pen = {r.name: r.penalty for r in fig.q7}
    assert m[Margin.Q7_TOK] == pen["tok.weight"] / pen["blocks.0.f1.weight"]


def test_holds_reads_the_side_of_each_threshold():
    assert ESW.holds(Margin.Q6_2BIT, 0.1) and not ESW.holds(Margin.Q6_2BIT, -0.1)
    assert ESW.holds(Margin.Q5_4BIT, -0.1) and not ESW.holds(Margin.Q5_4BIT, 0.1)
    assert ESW.holds(Margin.Q7_TOK, 6.0) and not ESW.holds(Margin.Q7_TOK, 4.0)
    with pytest.raises(ValueError, match="margin must be a Margin"):
        ESW.holds("q6_2bit_pc_minus_pt", 0.0)


def test_figures_from_tables_take_what_the_suite_measured(tiny_figures):
    fig = tiny_figures
    rec = fig.to_record()
    tables = {
        TB.Q4: {"rows": rec["q4"], "float32": fig.val_loss},
        TB.B1: {"uniform": 4.6, "bigram": fig.bigram, "reference": fig.val_loss},
        TB.Q7: rec["q7"],
        TB.P1: rec["p1"],
        TB.P2: rec["p2"],
        TB.SPEC_ACCEPTANCE: rec["s4"],
    }
    again = ESW.figures_from_tables(LedgerFile((), tables=tables))
    assert again == fig and ESW.margins(again) == ESW.margins(fig)
    del tables[TB.P2]
    assert ESW.figures_from_tables(LedgerFile((), tables=tables)) is None


@pytest.mark.parametrize(
    "kwargs, arg",
    [
        (dict(bits=(8, 6)), "bits"),
        (dict(bits=(4, 3, 2, 9)), "bits"),
        (dict(seeds=()), "seeds"),
        (dict(n_new=0), "n_new"),
        (dict(names=["blocks.0.f1.weight"]), "names"),
    ],
)
def test_key_figures_refuses_bad_settings(small_gpt, kwargs, arg):
    with pytest.raises(ValueError, match=arg):
        ESW.key_figures(small_gpt, **kwargs)


def test_key_figures_refuses_a_non_gpt():
    with pytest.raises(ValueError, match="model"):
        ESW.key_figures(torch.nn.Linear(2, 2))


def test_every_claim_holds_on_the_articles_published_figures():
    """The margins read each claim as the article states it: on the
    article's own figures every one of them is on its claim's side (Q7's
    ratio 0.0976 / 0.0184 = 5.30 > 5)."""
    m = ESW.margins(ESW.article_figures())
    assert {n: ESW.holds(n, v) for n, v in m.items()} == {n: True for n in ESW.THRESHOLDS}
    assert m[Margin.Q7_TOK] == pytest.approx(0.0976 / 0.0184)


# --- the recipe sweep: fragility, S6/S7 without a clock, recipes, reuse ---------------


def test_fragility_reads_the_weights_and_the_4bit_penalties(small_gpt, tiny_figures):
    """The embedding ratio is tok's RMS over all block weights' RMS (computed
    here directly); the shares are each penalty over their sum (so they sum
    to 1); the weight ranges are Q10's."""
    from aftertrain.experiments.quant import weight_range_ratios

    f = ESW.fragility(small_gpt, tiny_figures.q7)
    w = {n: p.detach().double() for n, p in small_gpt.named_parameters() if p.dim() == 2}
    blocks = torch.cat([v.flatten() for n, v in w.items() if n.startswith("blocks.")])
    expected = w["tok.weight"].pow(2).mean().sqrt() / blocks.pow(2).mean().sqrt()
    assert f.embedding_over_blocks.tok == pytest.approx(float(expected), rel=1e-12)
    assert sum(f.q7_share.values()) == pytest.approx(1.0, abs=1e-12)
    assert f.weight_range == weight_range_ratios(small_gpt)
    assert f.max_abs.value == max(float(v.abs().max()) for v in w.values())
    assert set(f.activations) == {"block0_ffn_input", "block2_ffn_input", "final_residual"}
    assert ESW.Fragility.from_record(f.to_record()) == f
    assert f.to_record()["embedding_over_blocks"] == {
        "tok.weight": f.embedding_over_blocks.tok,
        "pos.weight": f.embedding_over_blocks.pos,
    }


def test_fragility_sees_an_embedding_scaled_up(small_gpt, tiny_figures):
    """tok x 10 multiplies tok's RMS ratio by 10 and leaves its row-range
    ratio (a ratio of its own rows) alone."""
    import copy

    big = copy.deepcopy(small_gpt)
    with torch.no_grad():
        big.tok.weight.mul_(10)
    f, g = ESW.fragility(small_gpt, tiny_figures.q7), ESW.fragility(big, tiny_figures.q7)
    assert g.embedding_over_blocks.tok == pytest.approx(10 * f.embedding_over_blocks.tok, rel=1e-6)
    assert g.weight_range.matrices["tok.weight"] == pytest.approx(
        f.weight_range.matrices["tok.weight"], rel=1e-6
    )
    assert g.max_abs.name == "tok.weight"


def test_speculative_figures_apply_the_formula_to_the_measured_acceptance(small_gpt):
    rows = ESW.speculative_figures(small_gpt, n_new=12)
    assert [(r.draft, r.k) for r in rows] == [(d.value, k) for d in ESW.SPEC_DRAFTS for k in ESW.SPEC_KS]
    cost = {"bigram": 0.004, "8-bit": 1.059, "4-bit": 1.034}  # the article's c (S5)
    assert cost == {a.draft: a.c for a in ARTICLE.s5}
    for r in rows:
        c = cost[r.draft]
        assert r.formula_article_c == pytest.approx(r.chars_per_pass / (1 + r.k * c))
        assert r.break_even_c == pytest.approx((r.chars_per_pass - 1) / r.k)
        assert 0 <= r.acceptance <= 1
    with pytest.raises(ValueError, match="n_new"):
        ESW.speculative_figures(small_gpt, n_new=0)


def _with_recipe(point: ESW.SweepPoint, recipe: dict | None) -> ESW.SweepPoint:
    training = ESW.Training(
        command="aftertrain train ...",
        steps=5000,
        best_step=400,
        train_loss=1.9,
        history=((200, 2.4, 2.5), (400, 1.9, 2.02)),
        recipe=recipe,
    )
    return replace(point, sha256="ab" * 32, training=training)


def test_recipe_label_names_what_differs_from_the_reference_recipe(tiny_figures):
    from aftertrain.report import sweep as SW

    base = {
        "lr": 1e-3,
        "min_lr": 1e-4,
        "warmup": 100,
        "weight_decay": 0.1,
        "dropout": 0.2,
        "grad_clip": 1.0,
        "batch_size": 16,
        "stop_below": 2.03,
        "keep": "best",
        "last_step": 400,
    }
    p = ESW.sweep_point("x", tiny_figures, "measured")
    assert SW.recipe_label(p) == SW.REFERENCE_RECIPE  # no training record: a bundled checkpoint
    assert SW.recipe_label(_with_recipe(p, base)) == SW.REFERENCE_RECIPE
    assert (
        SW.recipe_label(_with_recipe(p, {**base, "dropout": 0.0, "grad_clip": None})) == "dropout 0, clip off"
    )
    assert (
        SW.recipe_label(_with_recipe(p, {**base, "lr": 3e-3, "keep": "last"}))
        == "peak lr 0.003, the last step kept"
    )


def test_sweep_section_renders_the_recipe_sweep(small_gpt, tiny_figures, no_png):
    """A recipe variant gets its recipe, SHA-256 and history, its fragility
    and S6/S7 rows, and a column in the recipe plots; the reference run's line
    holds only the reference recipe's checkpoints."""
    from aftertrain import report as R
    from aftertrain.report import sweep as SW
    from aftertrain.report.document import Document

    fig = tiny_figures
    extra = {
        "fragility": ESW.fragility(small_gpt, fig.q7),
        "speculative": ESW.speculative_figures(small_gpt, n_new=12),
    }
    ref = _with_recipe(ESW.sweep_point("run", replace(fig, val_loss=2.0), "measured", **extra), None)
    variant = _with_recipe(
        ESW.sweep_point("nodrop", replace(fig, val_loss=2.02), "measured", **extra),
        {"dropout": 0.0, "keep": "best", "last_step": 400},
    )
    from pathlib import Path

    doc = Document(R.read_ledger(Path(__file__).resolve().parents[2] / "report" / "claims.json"))
    SW.section(doc, [ref, variant])
    md = doc.markdown()
    assert "| nodrop | dropout 0 | 5000 | 400 | 2.0200 | 1.9000 | `" + "ab" * 32 in md
    assert "- nodrop: 200 2.5000, 400 2.0200" in md
    assert "**What could make a model fragile**" in md and "**S6 and S7 without a clock**" in md
    assert "the article's model (published) | – / – / 0.059" in md
    series = doc.plots["recipe_loss_margins"].series
    q6 = next(k for k in series if k.startswith("Q6: 2-bit"))
    assert len(series[q6]["y"]) == 2
    line = doc.plots["sweep_loss_margins"].series
    assert line[next(k for k in line if k.startswith("Q6: 2-bit"))]["x"] == [2.0]


def test_sweep_reuses_a_complete_point_of_the_same_checkpoint(
    tmp_path, small_gpt, tiny_figures, monkeypatch, no_png
):
    """--reuse takes a point whose SHA-256 is the checkpoint's as it is:
    nothing is measured (the measuring functions here raise)."""
    import json

    from aftertrain.cli import main
    from aftertrain.lm import registry as models
    from aftertrain.report import sweep as SW

    sha = models.model_meta("sweep-250")["sha256"]
    point = ESW.sweep_point(
        "sweep-250",
        replace(tiny_figures, val_loss=2.5),
        "measured",
        sha256=sha,
        training=ESW.Training(),
        fragility=ESW.fragility(small_gpt, tiny_figures.q7),
        speculative=(),
    )
    (tmp_path / "old.json").write_text(SW.sweep_json([point]))

    def measured(*a, **k):
        raise AssertionError("measured again")

    for name in ("key_figures", "fragility", "speculative_figures"):
        monkeypatch.setattr(ESW, name, measured)
    out = tmp_path / "out"
    before = os.umask(0o027)  # every file written gets 0o640, as a plain write would
    try:
        assert (
            main(["sweep", "--models", "sweep-250", "--reuse", str(tmp_path / "old.json"), "--out", str(out)])
            == 0
        )
    finally:
        os.umask(before)
    again = json.loads((out / "sweep.json").read_text())["points"]
    assert again == [json.loads(json.dumps(point.to_record()))]
    assert "Written by `aftertrain sweep --models sweep-250 --reuse" in (out / "sweep.md").read_text()
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in out.iterdir()}
    assert len(modes) >= 3 and set(modes.values()) == {0o640}, modes
