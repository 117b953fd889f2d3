"""Report section: the quality and recipe sweeps, rendered from the sweep
file that ``aftertrain sweep`` writes (``sweep.json``): per checkpoint its
recipe, SHA-256 and validation history, the key figures of Q4-Q7, P1/P2 and
S4, each claim's margin (holds or not), what could make it fragile, and the
timing-free part of S6/S7. The plots draw the margins of the reference run's
checkpoints against validation loss (where each claim flips with quality)
and of every checkpoint against its recipe. The tables are
:mod:`aftertrain.report.sweep_tables`' (how a recipe reads,
:func:`recipe_label`, re-exported here). Rendering only: the figures are
the sweep's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from aftertrain.core.io import read_json
from aftertrain.experiments.sweep import (
    THRESHOLDS,
    Margin,
    SweepPoint,
    article_figures,
    margins,
)
from aftertrain.report.document import Document
from aftertrain.report.reading import ReportError
from aftertrain.report.sweep_tables import (  # noqa: F401 (re-exported)
    RECIPE_KNOBS,
    REFERENCE_RECIPE,
    recipe_label,
    tables,
)

TITLE = "The quality and recipe sweeps: where each claim flips"
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
    """The points of a sweep file, sorted by validation loss (best first):
    a regular JSON file of bounded size and depth, every number finite
    (:func:`aftertrain.core.io.read_json`), of this version's format, each
    point whole. :class:`ReportError`, one line saying why, otherwise."""
    path = Path(path)
    try:
        data = read_json(path, "sweep file")
    except ValueError as err:
        raise ReportError(str(err)) from None
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
    tables(doc, points)
    _plots(doc, points)


def _plots(doc: Document, points: list[SweepPoint]) -> None:
    """The sweep's plots, and the recipe plots where a recipe differs."""
    for name, title, keys, unit in PLOTS:
        doc.plot(name, _drawer(points, title, keys, unit))
    if any(recipe_label(p) != REFERENCE_RECIPE for p in points):
        for name, title, keys, unit in RECIPE_PLOTS:
            doc.plot(name, _recipe_drawer(points, title, keys, unit))


def _label(k: Margin) -> str:
    """A margin's legend label: its claim, what it is and which side holds."""
    th = THRESHOLDS[k]
    return f"{th.claim}: {th.what} (holds {th.side.value} {th.threshold:g})"


def _threshold_lines(ax, keys: list[Margin]) -> None:
    """One dashed line at each distinct threshold of ``keys``."""
    for t in sorted({THRESHOLDS[k].threshold for k in keys}):
        ax.axhline(t, color="k", lw=1, ls="--", label=f"threshold {t:g}")


def _drawer(points: list[SweepPoint], title: str, keys: list[Margin], unit: str):
    """A plot of the margins ``keys`` against validation loss: a line over the
    reference run's checkpoints, triangles for other recipes, a cross for
    the article's model, and the thresholds."""
    art = article_figures()
    art_margins = margins(art)

    run = [p for p in points if recipe_label(p) == REFERENCE_RECIPE]
    others = [p for p in points if recipe_label(p) != REFERENCE_RECIPE]

    def draw(ax):
        for i, k in enumerate(keys):
            claim, short = THRESHOLDS[k].claim, THRESHOLDS[k].what.split(" (")[0]
            ax.plot(
                [p.val_loss for p in run], [p.margins[k] for p in run], "o-", color=f"C{i}", label=_label(k)
            )
            if others:
                ax.plot(
                    [p.val_loss for p in others],
                    [p.margins[k] for p in others],
                    "^",
                    color=f"C{i}",
                    alpha=0.6,
                    mfc="none",
                    label=f"{claim}: other recipes ({short})",
                )
            ax.plot(
                [art.val_loss],
                [art_margins[k]],
                "x",
                color=f"C{i}",
                ms=9,
                label=f"{claim}: the article's model ({short})",
            )
        _threshold_lines(ax, keys)
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
        _legend_below(ax)
        return (
            f"{title}, one line per figure over the reference run's checkpoints "
            f"(triangles: other recipes), against the checkpoint's validation loss"
        )

    return draw


def _legend_below(ax) -> None:
    """The legend below the plot, without the other recipes' triangles: they
    are in the caption (in the legend they would crowd out the plot)."""
    handles = [
        (h, lab) for h, lab in zip(*ax.get_legend_handles_labels(), strict=True) if "other recipes" not in lab
    ]
    ax.legend(
        *zip(*handles, strict=True),
        fontsize=6,
        loc="upper left",
        bbox_to_anchor=(0, -0.28),
        borderaxespad=0,
    )


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
        for i, k in enumerate(keys):
            offset = (i - (len(keys) - 1) / 2) * width
            ax.bar(
                [x + offset for x in xs], [p.margins[k] for p in order], width, color=f"C{i}", label=_label(k)
            )
            ax.plot(
                [len(order) - 0.4 + offset + 0.4],
                [art_margins[k]],
                "*",
                color=f"C{i}",
                ms=10,
                label=f"{THRESHOLDS[k].claim}: the article's model (published)",
            )
        _threshold_lines(ax, keys)
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
