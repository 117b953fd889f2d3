"""The quality sweep (aftertrain.experiments.sweep): the key figures on a
tiny setting, their margins, reading them from a ledger's tables, and the
report's rendering of a sweep file (aftertrain.report.sweep)."""

from __future__ import annotations

import math

import pytest
import torch

from aftertrain.claims import tables as TB
from aftertrain.experiments import sweep as ESW

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
    assert [r["bits"] for r in fig["q4"]] == [4, 3, 2]
    assert {r["name"] for r in fig["q7"]} == {"tok.weight", "pos.weight", "blocks.0.f1.weight"}
    assert [r["sparsity"] for r in fig["p1"]] == [ESW.P1_SPARSITY]
    assert [r["sparsity"] for r in fig["p2"]] == [ESW.P2_SPARSITY]
    assert {(r["draft"], r["k"]) for r in fig["s4"]} == {(d.value, k) for d in ESW.DRAFTS for k in ESW.KS}
    m = ESW.margins(fig)
    assert set(m) == set(ESW.THRESHOLDS)
    assert all(math.isfinite(v) for v in m.values()), m


def test_margins_are_the_differences_the_claims_compare(tiny_figures):
    fig, m = tiny_figures, ESW.margins(tiny_figures)
    bits = {r["bits"]: r for r in fig["q4"]}
    assert m["q6_2bit_pc_minus_pt"] == bits[2]["per_channel"] - bits[2]["per_tensor"]
    assert m["q5_3bit_pc_minus_bigram"] == bits[3]["per_channel"] - fig["bigram"]
    pen = {r["name"]: r["penalty"] for r in fig["q7"]}
    assert m["q7_tok_over_block"] == pen["tok.weight"] / pen["blocks.0.f1.weight"]


def test_holds_reads_the_side_of_each_threshold():
    assert ESW.holds("q6_2bit_pc_minus_pt", 0.1) and not ESW.holds("q6_2bit_pc_minus_pt", -0.1)
    assert ESW.holds("q5_4bit_pc_minus_bigram", -0.1) and not ESW.holds("q5_4bit_pc_minus_bigram", 0.1)
    assert ESW.holds("q7_tok_over_block", 6.0) and not ESW.holds("q7_tok_over_block", 4.0)
    with pytest.raises(ValueError, match="name"):
        ESW.holds("q99", 0.0)


def test_figures_from_tables_take_what_the_suite_measured(tiny_figures):
    fig = tiny_figures
    tables = {TB.Q4: {"rows": fig["q4"], "float32": fig["val_loss"]}, TB.B1: {"bigram": fig["bigram"]},
              TB.Q7: fig["q7"], TB.P1: fig["p1"], TB.P2: fig["p2"], TB.SPEC_ACCEPTANCE: fig["s4"]}
    again = ESW.figures_from_tables(tables)
    assert ESW.margins(again) == ESW.margins(fig)
    del tables[TB.P2]
    assert ESW.figures_from_tables(tables) is None


@pytest.mark.parametrize("kwargs, arg", [
    (dict(bits=(8, 6)), "bits"), (dict(bits=(4, 3, 2, 9)), "bits"), (dict(seeds=()), "seeds"),
    (dict(n_new=0), "n_new"), (dict(names=["blocks.0.f1.weight"]), "names"),
])
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
    assert m["q7_tok_over_block"] == pytest.approx(0.0976 / 0.0184)
