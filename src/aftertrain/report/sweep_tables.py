"""The tables of the sweep's report section (:mod:`aftertrain.report.sweep`),
one row per checkpoint: its recipe and validation history, its key figures,
each claim's margin (the article's model beside them), what could make it
fragile, and S6/S7's figures without a clock; and how a checkpoint's recipe
reads against the reference's (:func:`recipe_label`). Rendering only: the
figures are the sweep's."""

from __future__ import annotations

import math

from aftertrain.experiments.article import ARTICLE
from aftertrain.experiments.sweep import (
    KS,
    SPEC_DRAFTS,
    THRESHOLDS,
    TOKEN_EMBEDDING,
    Side,
    SweepPoint,
    article_figures,
    holds,
    margins,
)
from aftertrain.report.document import Document
from aftertrain.report.markdown import DASH, fmt, markdown_table

#: The recipe knobs a checkpoint's ``training.recipe`` records, their reference
#: values (:class:`aftertrain.lm.train.TrainConfig`'s defaults) and how a
#: difference reads.
RECIPE_KNOBS = (
    ("dropout", 0.2, "dropout {:g}"),
    ("weight_decay", 0.1, "weight decay {:g}"),
    ("lr", 1e-3, "peak lr {:g}"),
    ("min_lr", 1e-4, "min lr {:g}"),
    ("warmup", 100, "warm-up {}"),
    ("grad_clip", 1.0, "clip {}"),
    ("batch_size", 16, "batch {}"),
)


REFERENCE_RECIPE = "the reference recipe"


def recipe_label(p: SweepPoint) -> str:
    """How a point's recipe differs from the reference's (``training.recipe``;
    a checkpoint written before the recipe options had none: the reference's),
    plus ``keep the last step`` for a run that kept its last weights."""
    recipe = (p.training and p.training.recipe) or {}
    parts = [
        form.format("off" if recipe[k] is None else recipe[k])
        for k, ref, form in RECIPE_KNOBS
        if k in recipe and recipe[k] != ref
    ]
    if recipe.get("keep") == "last":
        parts.append("the last step kept")
    return ", ".join(parts) or REFERENCE_RECIPE


def _stopped(p: SweepPoint) -> str:
    t = p.training
    recipe = t.recipe or {}
    step = recipe.get("last_step") or t.stop_at or t.steps
    kept = t.best_step
    return DASH if step is None else (f"{step}" if kept in (None, step) else f"{step} (kept {kept})")


def _recipe_row(p: SweepPoint) -> list[str]:
    t = p.training
    return [
        p.model,
        recipe_label(p),
        DASH if t.steps is None else f"{t.steps}",
        _stopped(p),
        fmt(p.val_loss),
        fmt(t.train_loss),
        f"`{p.sha256}`" if p.sha256 else DASH,
        f"`{t.command}`" if t.command else DASH,
    ]


def _history(p: SweepPoint) -> str:
    hist = p.training.history or ()
    return ", ".join(f"{s} {v:.4f}" for s, _, v in hist) or DASH


def _fragility_row(p: SweepPoint) -> list[str]:
    f = p.fragility
    w, act = f.weight_range, f.activations
    worst = max(w.matrices, key=w.matrices.get)
    share = f.q7_share
    block = max((n for n in share if n.startswith("blocks.")), key=share.get)
    return (
        [p.model, f"{w.worst:.2f} ({worst.removesuffix('.weight')}) / {w.median:.2f}"]
        + [f"{act[s].ratio:.2f} ({act[s].max:.2f})" for s in sorted(act)]
        + [
            f"{f.embedding_over_blocks.tok:.2f} / {f.embedding_over_blocks.pos:.2f}",
            f"{f.max_abs.value:.3f} ({f.max_abs.name.removesuffix('.weight')})",
            f"{sum(r.penalty for r in p.figures.q7):+.4f}",
            " / ".join(
                f"{100 * share.get(n, math.nan):.0f}%" for n in ("tok.weight", "pos.weight", "head.weight")
            )
            + f" / {100 * share[block]:.0f}% ({block.removesuffix('.weight')})",
        ]
    )


#: The drafts of the S4/S6/S7 columns, as the sweep measures them.
BIGRAM, INT8, INT4 = SPEC_DRAFTS


def _cells(rows, draft, field: str, digits: int, ks: list[int]) -> str:
    """``field`` of ``draft``'s row (a DraftKind) at each of ``ks`` (rows with
    ``draft`` and ``k``), joined by " / "; a dash where there is none."""
    at = {(r.draft, r.k): r for r in rows}
    return " / ".join(
        f"{getattr(at[(draft.value, k)], field):.{digits}f}" if (draft.value, k) in at else DASH for k in ks
    )


def _speculative_row(p: SweepPoint) -> list[str]:
    rows, ks = p.speculative, sorted({r.k for r in p.speculative})
    bigram, int8, int4 = BIGRAM, INT8, INT4
    return [
        p.model,
        _cells(rows, bigram, "acceptance", 3, ks),
        _cells(rows, bigram, "chars_per_pass", 2, ks),
        _cells(rows, bigram, "break_even_c", 2, ks),
        _cells(rows, int8, "acceptance", 3, ks),
        _cells(rows, int8, "formula_article_c", 2, ks),
        _cells(rows, int4, "formula_article_c", 2, ks),
    ]


def _article_speculative_row(ks: list[int]) -> list[str]:
    """The article's published S4/S7 figures in the columns of :func:`_speculative_row`
    (a dash where it published none)."""
    bigram, int8, int4 = BIGRAM, INT8, INT4
    return [
        "the article's model (published)",
        _cells(ARTICLE.s4, bigram, "acceptance", 3, ks),
        _cells(ARTICLE.s4, bigram, "chars_per_pass", 2, ks),
        DASH,
        _cells(ARTICLE.s4, int8, "acceptance", 3, ks),
        _cells(ARTICLE.s7, int8, "predicted", 2, ks),
        _cells(ARTICLE.s7, int4, "predicted", 2, ks),
    ]


def _figure_row(p: SweepPoint) -> list[str]:
    f = p.figures
    bits = {r.bits: r for r in f.q4}
    tok = next(r.penalty for r in f.q7 if r.name == TOKEN_EMBEDDING)
    block = max(r.penalty for r in f.q7 if r.name.startswith("blocks."))
    p1 = f.p1[0]
    return (
        [p.model, fmt(p.val_loss), fmt(f.bigram)]
        + [f"{fmt(bits[b].per_tensor)} / {fmt(bits[b].per_channel)}" for b in sorted(bits, reverse=True)]
        + [
            f"{tok:+.4f} / {block:+.4f}",
            f"{fmt(p1.global_)} / {fmt(p1.layer)} / {fmt(p1.random)}",
            fmt(f.p2[0].mean),
            _cells(f.s4, BIGRAM, "acceptance", 3, list(KS)),
            _cells(f.s4, INT8, "acceptance", 3, list(KS)),
        ]
    )


def _recipes(doc: Document, points: list[SweepPoint]) -> None:
    """The recipe and the validation history of each trained checkpoint."""
    with_training = [p for p in points if p.training]
    if with_training:
        doc.add(
            "**Recipe of each checkpoint** (what differs from the reference recipe: AdamW lr "
            "1e-3, 100 warm-up steps, cosine decay to 1e-4 over 5,000 steps, weight decay "
            "0.1 on 2-D weights, gradient clipping at 1.0, dropout 0.2, batch 16, seed "
            "1337; the command retrains it to the same SHA-256 on one machine, and "
            "`--stop-at` the *stopped* step gives the same weights)\n\n"
            + markdown_table(
                [
                    "model",
                    "recipe",
                    "schedule (steps)",
                    "stopped (kept)",
                    "val loss",
                    "train loss",
                    "SHA-256",
                    "command",
                ],
                [_recipe_row(p) for p in with_training],
            )
        )
        doc.add(
            "**Validation history** (step, validation loss; the training loss of each "
            "interval is in the sweep file)\n\n"
            + "\n".join(f"- {p.model}: {_history(p)}" for p in with_training)
        )


def _key_figures(doc: Document, points: list[SweepPoint]) -> None:
    """The key figures of each checkpoint, one row each."""
    bits = sorted({r.bits for p in points for r in p.figures.q4}, reverse=True)
    doc.add(
        "**Key figures per checkpoint**\n\n"
        + markdown_table(
            ["model", "val loss", "bigram"]
            + [f"{b}-bit pt / pc" for b in bits]
            + [
                "Q7 tok / max block penalty",
                "P1 30% global / layer / random",
                "P2 random 5%",
                "S4 bigram k=1 / k=8",
                "S4 8-bit k=1 / k=8",
            ],
            [_figure_row(p) for p in points],
        )
    )


def _margins(doc: Document, points: list[SweepPoint]) -> None:
    """Each claim's margin on each checkpoint and on the article's model."""
    art_fig = article_figures()
    art = [("the article's model (published)", art_fig.val_loss, "the article", margins(art_fig))]
    doc.add(
        "**Each claim's margin** (the claim holds where the margin is on its side of the "
        "threshold: ✓ holds, ✗ does not)\n\n"
        + markdown_table(
            ["model", "val loss", "from"]
            + [
                f"{t.claim}: {t.what} ({'>' if t.side is Side.ABOVE else '<'} {t.threshold:g})"
                for t in THRESHOLDS.values()
            ],
            [
                [model, fmt(loss), source]
                + [f"{m[n]:+.4f} {'✓' if holds(n, m[n]) else '✗'}" for n in THRESHOLDS]
                for model, loss, source, m in [
                    *((p.model, p.val_loss, p.source, p.margins) for p in points),
                    *art,
                ]
            ],
        )
    )


def _fragility(doc: Document, points: list[SweepPoint]) -> None:
    """What could make each checkpoint fragile, where it was measured."""
    with_fragility = [p for p in points if p.fragility]
    if with_fragility:
        sites = sorted(with_fragility[0].fragility.activations)
        doc.add(
            "**What could make a model fragile** (weight range: max / median of the rows' "
            "max|w| per matrix, the worst and the median matrix, as Q10; activations: max / "
            "median over channels of max|x| at Q10's sites, the largest |x| in brackets; "
            "RMS of tok / pos over the RMS of all block weights; the largest |w|; each "
            "matrix's share of the summed one-at-a-time 4-bit penalties, Q7; the article "
            "published weight ranges 2.49 / 1.51, activation ratios 1.50 (5.24), "
            "1.54 (6.24), 1.64 (6.67), the sum +0.2830 and shares tok 34%, pos 22%)\n\n"
            + markdown_table(
                ["model", "weight range worst (matrix) / median"]
                + [f"activations {s}" for s in sites]
                + [
                    "RMS tok / pos over blocks",
                    "largest \\|w\\|",
                    "sum of 4-bit penalties",
                    "4-bit share tok / pos / head / top block",
                ],
                [_fragility_row(p) for p in with_fragility],
            )
        )


def _speculative(doc: Document, points: list[SweepPoint]) -> None:
    """S6 and S7's figures without a clock, where they were measured."""
    with_spec = [p for p in points if p.speculative]
    if with_spec:
        ks = sorted({r.k for r in with_spec[0].speculative})
        kk = "/".join(f"k={k}" for k in ks)
        doc.add(
            "**S6 and S7 without a clock** (timings are not measured by the sweep: a shared "
            "machine cannot time them honestly). Acceptance and characters per target pass "
            "of 200-character runs; *break-even c* = (chars per pass - 1) / k, the largest "
            "draft cost at which S7's formula still predicts a speedup; *formula, article's "
            "c*: chars per pass / (1 + k c) with the article's measured c (8-bit 1.059, "
            "4-bit 1.034), so only the acceptance is this checkpoint's. The article: bigram "
            "acceptance 0.290 at k=1, 0.059 at k=8 (1.47 chars per pass), its bigram c "
            "0.004; its own formula column is its published prediction\n\n"
            + markdown_table(
                [
                    "model",
                    f"bigram acceptance {kk}",
                    f"bigram chars per pass {kk}",
                    f"bigram break-even c {kk}",
                    f"8-bit acceptance {kk}",
                    f"8-bit formula, article's c {kk}",
                    f"4-bit formula, article's c {kk}",
                ],
                [_speculative_row(p) for p in with_spec] + [_article_speculative_row(ks)],
            )
        )


def tables(doc: Document, points: list[SweepPoint]) -> None:
    """Add the section's tables to ``doc``, in order: the recipes (of the
    points that were trained here), the key figures, the margins, what
    could make a model fragile and the speculative figures (each where its
    points hold the figures)."""
    _recipes(doc, points)
    _key_figures(doc, points)
    _margins(doc, points)
    _fragility(doc, points)
    _speculative(doc, points)
