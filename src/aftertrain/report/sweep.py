"""Report section: the quality and recipe sweeps, rendered from the sweep
file that ``aftertrain sweep`` writes (``sweep.json``): per checkpoint its
recipe, SHA-256 and validation history, the key figures of Q4-Q7, P1/P2 and
S4, each claim's margin (holds or not), what could make it fragile, and the
timing-free part of S6/S7. The plots draw the margins of the reference run's
checkpoints against validation loss (where each claim flips with quality)
and of every checkpoint against its recipe. Rendering only: the figures are
the sweep's.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from aftertrain.experiments.article import ARTICLE
from aftertrain.experiments.sweep import (
    KS,
    SPEC_DRAFTS,
    THRESHOLDS,
    TOKEN_EMBEDDING,
    Margin,
    Side,
    SweepPoint,
    article_figures,
    holds,
    margins,
)
from aftertrain.report.document import Document
from aftertrain.report.markdown import DASH, fmt, markdown_table
from aftertrain.report.reading import ReportError

TITLE = "The quality and recipe sweeps: where each claim flips"
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
#: sweep.json's format version.
VERSION = 1
#: The margins of each plot: nats differences, the Q7 ratio, the S4 acceptance drops.
PLOTS = (
    (
        "sweep_loss_margins",
        "Loss margins against validation loss (Q5, Q6, P1, P2)",
        [m for m, t in THRESHOLDS.items() if t.claim in ("Q5", "Q6", "P1", "P2")],
        "nats",
    ),
    ("sweep_q7_ratio", "tok's 4-bit penalty over the largest block matrix's (Q7)", [Margin.Q7_TOK], "ratio"),
    (
        "sweep_q7_pos",
        "pos's 4-bit penalty minus the largest other matrix's but tok's (Q7)",
        [Margin.Q7_POS],
        "nats",
    ),
    (
        "sweep_s4_acceptance",
        "Acceptance at k=8 minus k=1 (S4)",
        [Margin.S4_BIGRAM, Margin.S4_INT8],
        "acceptance",
    ),
)


def read_sweep(path: str | os.PathLike) -> list[SweepPoint]:
    """The points of a sweep file, sorted by validation loss (best first)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ReportError(f"sweep file {path} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ReportError(f"sweep file {path} cannot be read as JSON: {err}") from None
    if (
        not isinstance(data, dict)
        or data.get("version") != VERSION
        or not isinstance(data.get("points"), list)
    ):
        raise ReportError(
            f"sweep file {path} is not a sweep file of version {VERSION} (written by `aftertrain sweep`)"
        )
    points = []
    for p in data["points"]:
        try:
            points.append(SweepPoint.from_record(p))
        except (ValueError, TypeError, KeyError, AttributeError):
            raise ReportError(f"sweep file {path} has a malformed point: {str(p)[:80]}") from None
    return sorted(points, key=lambda p: p.val_loss)


def sweep_json(points: list[SweepPoint]) -> str:
    """The sweep file's text: its version and the points' records."""
    return (
        json.dumps({"version": VERSION, "points": [p.to_record() for p in points]}, indent=1, sort_keys=True)
        + "\n"
    )


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


def section(doc: Document, points: list[SweepPoint]) -> None:
    """Add the sweep's section to ``doc`` from ``points`` (:class:`SweepPoint`): the recipes, the
    key figures, each claim's margin, what breaks first, the speculative figures and the plots;
    a "no figures" line when there are no points."""
    if not points:
        return doc.missing("the sweep")
    doc.add(
        "Checkpoints of the reference recipe's run (`aftertrain train`, stopped at several "
        "steps: the quality sweep) and of other recipes (the recipe sweep: each stopped "
        "by `--stop-below` at the first evaluation at or below the article's quality, "
        "unless said otherwise), best validation loss first. Figures measured by "
        "`aftertrain sweep`, or taken from a model's claims ledger when its suite ran "
        "(column *from*)."
    )
    _recipes(doc, points)
    _key_figures(doc, points)
    _margins(doc, points)
    _fragility(doc, points)
    _speculative(doc, points)
    _plots(doc, points)


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


def _plots(doc: Document, points: list[SweepPoint]) -> None:
    """The sweep's plots, and the recipe plots where a recipe differs."""
    for name, title, keys, unit in PLOTS:
        doc.plot(name, _drawer(points, title, keys, unit))
    if any(recipe_label(p) != REFERENCE_RECIPE for p in points):
        for name, title, keys, unit in RECIPE_PLOTS:
            doc.plot(name, _recipe_drawer(points, title, keys, unit))


def _drawer(points: list[SweepPoint], title: str, keys: list[Margin], unit: str):
    art = article_figures()
    art_margins = margins(art)

    run = [p for p in points if recipe_label(p) == REFERENCE_RECIPE]
    others = [p for p in points if recipe_label(p) != REFERENCE_RECIPE]

    def draw(ax):
        xs = [p.val_loss for p in run]
        thresholds = set()
        for i, k in enumerate(keys):
            claim, what, threshold, side = (
                THRESHOLDS[k].claim,
                THRESHOLDS[k].what,
                THRESHOLDS[k].threshold,
                THRESHOLDS[k].side.value,
            )
            ax.plot(
                xs,
                [p.margins[k] for p in run],
                "o-",
                color=f"C{i}",
                label=f"{claim}: {what} (holds {side} {threshold:g})",
            )
            if others:
                ax.plot(
                    [p.val_loss for p in others],
                    [p.margins[k] for p in others],
                    "^",
                    color=f"C{i}",
                    alpha=0.6,
                    mfc="none",
                    label=f"{claim}: other recipes ({what.split(' (')[0]})",
                )
            ax.plot(
                [art.val_loss],
                [art_margins[k]],
                "x",
                color=f"C{i}",
                ms=9,
                label=f"{claim}: the article's model ({what.split(' (')[0]})",
            )
            thresholds.add(threshold)
        for t in sorted(thresholds):
            ax.axhline(t, color="k", lw=1, ls="--", label=f"threshold {t:g}")
        for p in run:
            ax.annotate(
                p.model,
                (p.val_loss, ax.get_ylim()[1]),
                fontsize=6,
                rotation=90,
                va="top",
                ha="right",
                color="0.4",
            )
        ax.set(xlabel="validation loss of the checkpoint (nats)", ylabel=unit, title=title)
        # The other recipes' triangles are in the caption, not the legend (it would crowd out the plot).
        handles = [
            (h, lab)
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True)
            if "other recipes" not in lab
        ]
        ax.legend(
            *zip(*handles, strict=True),
            fontsize=6,
            loc="upper left",
            bbox_to_anchor=(0, -0.28),
            borderaxespad=0,
        )
        return (
            f"{title}, one line per figure over the reference run's checkpoints "
            f"(triangles: other recipes), against the checkpoint's validation loss"
        )

    return draw


#: The recipe plots: every checkpoint's margin of the six claims that do not
#: reproduce, one column per checkpoint.
RECIPE_PLOTS = (
    (
        "recipe_loss_margins",
        "Q5, Q6, Q7 (pos), P2 margins per checkpoint",
        [Margin.Q5_3BIT, Margin.Q6_2BIT, Margin.Q7_POS, Margin.P2_RANDOM],
        "nats",
    ),
    (
        "recipe_q7_ratio",
        "tok's 4-bit penalty over the largest block matrix's per checkpoint (Q7)",
        [Margin.Q7_TOK],
        "ratio",
    ),
)


def _recipe_drawer(points: list[SweepPoint], title: str, keys: list[Margin], unit: str):
    art_margins = margins(article_figures())
    order = sorted(points, key=lambda p: (recipe_label(p) != REFERENCE_RECIPE, p.model))

    def draw(ax):
        xs = range(len(order))
        width = 0.8 / len(keys)
        thresholds = set()
        for i, k in enumerate(keys):
            claim, what, threshold, side = (
                THRESHOLDS[k].claim,
                THRESHOLDS[k].what,
                THRESHOLDS[k].threshold,
                THRESHOLDS[k].side.value,
            )
            offset = (i - (len(keys) - 1) / 2) * width
            ax.bar(
                [x + offset for x in xs],
                [p.margins[k] for p in order],
                width,
                color=f"C{i}",
                label=f"{claim}: {what} (holds {side} {threshold:g})",
            )
            ax.plot(
                [len(order) - 0.4 + offset + 0.4],
                [art_margins[k]],
                "*",
                color=f"C{i}",
                ms=10,
                label=f"{claim}: the article's model (published)",
            )
            thresholds.add(threshold)
        for t in sorted(thresholds):
            ax.axhline(t, color="k", lw=1, ls="--", label=f"threshold {t:g}")
        ax.set_xticks(list(xs) + [len(order)])
        ax.set_xticklabels(
            [f"{p.model} ({p.val_loss:.2f})" for p in order] + ["article (published)"],
            rotation=60,
            ha="right",
            fontsize=6,
        )
        ax.set(ylabel=unit, title=title)
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
        return (
            f"{title}: one bar per margin and checkpoint (validation loss in brackets), "
            "the article's published model as stars"
        )

    return draw
