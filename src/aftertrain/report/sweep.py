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

from aftertrain.experiments.sweep import THRESHOLDS, article_figures, holds, margins
from aftertrain.report.document import Document
from aftertrain.report.ledgerfile import ReportError
from aftertrain.report.markdown import DASH, fmt, markdown_table

TITLE = "The quality and recipe sweeps: where each claim flips"
#: The recipe knobs a checkpoint's ``training.recipe`` records, their reference
#: values (:class:`aftertrain.lm.train.TrainConfig`'s defaults) and how a
#: difference reads.
RECIPE_KNOBS = (("dropout", 0.2, "dropout {:g}"), ("weight_decay", 0.1, "weight decay {:g}"),
                ("lr", 1e-3, "peak lr {:g}"), ("min_lr", 1e-4, "min lr {:g}"),
                ("warmup", 100, "warm-up {}"), ("grad_clip", 1.0, "clip {}"),
                ("batch_size", 16, "batch {}"))
REFERENCE_RECIPE = "the reference recipe"
#: sweep.json's format version.
VERSION = 1
#: The margins of each plot: nats differences, the Q7 ratio, the S4 acceptance drops.
PLOTS = (
    ("sweep_loss_margins", "Loss margins against validation loss (Q5, Q6, P1, P2)",
     [k for k in THRESHOLDS if THRESHOLDS[k][0] in ("Q5", "Q6", "P1", "P2")], "nats"),
    ("sweep_q7_ratio", "tok's 4-bit penalty over the largest block matrix's (Q7)",
     ["q7_tok_over_block"], "ratio"),
    ("sweep_q7_pos", "pos's 4-bit penalty minus the largest other matrix's but tok's (Q7)",
     ["q7_pos_minus_next"], "nats"),
    ("sweep_s4_acceptance", "Acceptance at k=8 minus k=1 (S4)",
     ["s4_bigram_k8_minus_k1", "s4_8bit_k8_minus_k1"], "acceptance"),
)


def read_sweep(path: str | os.PathLike) -> list[dict]:
    """The points of a sweep file, sorted by validation loss (best first)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ReportError(f"sweep file {path} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ReportError(f"sweep file {path} cannot be read as JSON: {err}") from None
    if (not isinstance(data, dict) or data.get("version") != VERSION
            or not isinstance(data.get("points"), list)):
        raise ReportError(f"sweep file {path} is not a sweep file of version {VERSION} "
                          "(written by `aftertrain sweep`)")
    for p in data["points"]:
        if not isinstance(p, dict) or not {"model", "val_loss", "margins", "figures"} <= set(p):
            raise ReportError(f"sweep file {path} has a malformed point: {str(p)[:80]}")
    return sorted(data["points"], key=lambda p: p["val_loss"])


def sweep_json(points: list[dict]) -> str:
    return json.dumps({"version": VERSION, "points": points}, indent=1, sort_keys=True) + "\n"


def recipe_label(p: dict) -> str:
    """How a point's recipe differs from the reference's (``training.recipe``;
    a checkpoint written before the recipe options had none: the reference's),
    plus ``keep the last step`` for a run that kept its last weights."""
    recipe = (p.get("training") or {}).get("recipe") or {}
    parts = [form.format("off" if recipe[k] is None else recipe[k])
             for k, ref, form in RECIPE_KNOBS if k in recipe and recipe[k] != ref]
    if recipe.get("keep") == "last":
        parts.append("the last step kept")
    return ", ".join(parts) or REFERENCE_RECIPE


def _stopped(p: dict) -> str:
    t = p.get("training") or {}
    recipe = t.get("recipe") or {}
    step = recipe.get("last_step") or t.get("stop_at") or t.get("steps")
    kept = t.get("best_step")
    return DASH if step is None else (f"{step}" if kept in (None, step) else f"{step} (kept {kept})")


def _recipe_row(p: dict) -> list[str]:
    t = p.get("training") or {}
    return [p["model"], recipe_label(p), f"{t.get('steps', DASH)}", _stopped(p),
            fmt(p["val_loss"]), fmt(t.get("train_loss")),
            f"`{p['sha256']}`" if p.get("sha256") else DASH,
            f"`{t['command']}`" if t.get("command") else DASH]


def _history(p: dict) -> str:
    hist = (p.get("training") or {}).get("history") or []
    return ", ".join(f"{s} {v:.4f}" for s, _, v in hist) or DASH


def _fragility_row(p: dict) -> list[str]:
    f = p["fragility"]
    w, act = f["weight_range"], f["activations"]
    worst = max(w["matrices"], key=w["matrices"].get)
    share = f["q7_share"]
    block = max((n for n in share if n.startswith("blocks.")), key=share.get)
    return ([p["model"], f"{w['worst']:.2f} ({worst.removesuffix('.weight')}) / {w['median']:.2f}"]
            + [f"{act[s]['ratio']:.2f} ({act[s]['max']:.2f})" for s in sorted(act)]
            + [f"{f['embedding_over_blocks']['tok.weight']:.2f} / "
               f"{f['embedding_over_blocks']['pos.weight']:.2f}",
               f"{f['max_abs']['value']:.3f} ({f['max_abs']['name'].removesuffix('.weight')})",
               f"{sum(r['penalty'] for r in p['figures']['q7']):+.4f}",
               " / ".join(f"{100 * share.get(n, math.nan):.0f}%"
                          for n in ("tok.weight", "pos.weight", "head.weight"))
               + f" / {100 * share[block]:.0f}% ({block.removesuffix('.weight')})"])


def _speculative_row(p: dict) -> list[str]:
    rows = {(r["draft"], r["k"]): r for r in p["speculative"]}
    ks = sorted({k for _, k in rows})

    def cells(draft: str, key: str, digits: int) -> str:
        return " / ".join(f"{rows[(draft, k)][key]:.{digits}f}" for k in ks)

    return [p["model"], cells("bigram", "acceptance", 3), cells("bigram", "chars_per_pass", 2),
            cells("bigram", "break_even_c", 2), cells("8-bit", "acceptance", 3),
            cells("8-bit", "formula_article_c", 2), cells("4-bit", "formula_article_c", 2)]


def _article_speculative_row(ks: list[int]) -> list[str]:
    """The article's published S4/S7 figures in the columns of :func:`_speculative_row`
    (a dash where it published none)."""
    from aftertrain.claims.catalogue import ARTICLE_TABLES as A

    def cells(table: str, draft: str, i: int, digits: int) -> str:
        return " / ".join(f"{A[table][(draft, k)][i]:.{digits}f}" if (draft, k) in A[table]
                          else DASH for k in ks)

    return ["the article's model (published)", cells("s4", "bigram", 0, 3),
            cells("s4", "bigram", 1, 2), DASH, cells("s4", "8-bit", 0, 3),
            cells("s7", "8-bit", 0, 2), cells("s7", "4-bit", 0, 2)]


def _figure_row(p: dict) -> list[str]:
    f = p["figures"]
    bits = {r["bits"]: r for r in f["q4"]}
    pen = {r["name"]: r["penalty"] for r in f["q7"]}
    block = max(v for n, v in pen.items() if n.startswith("blocks."))
    acc = {(r["draft"], r["k"]): r["acceptance"] for r in f["s4"]}
    p1 = f["p1"][0]
    return ([p["model"], fmt(p["val_loss"]), fmt(f["bigram"])]
            + [f"{fmt(bits[b]['per_tensor'])} / {fmt(bits[b]['per_channel'])}"
               for b in sorted(bits, reverse=True)]
            + [f"{pen['tok.weight']:+.4f} / {block:+.4f}",
               f"{fmt(p1['global'])} / {fmt(p1['layer'])} / {fmt(p1['random'])}",
               fmt(f["p2"][0]["mean"]),
               f"{acc[('bigram', 1)]:.3f} / {acc[('bigram', 8)]:.3f}",
               f"{acc[('8-bit', 1)]:.3f} / {acc[('8-bit', 8)]:.3f}"])


def section(doc: Document, points: list[dict]) -> None:
    if not points:
        return doc.missing("the sweep")
    doc.add("Checkpoints of the reference recipe's run (`aftertrain train`, stopped at several "
            "steps: the quality sweep) and of other recipes (the recipe sweep: each stopped "
            "by `--stop-below` at the first evaluation at or below the article's quality, "
            "unless said otherwise), best validation loss first. Figures measured by "
            "`aftertrain sweep`, or taken from a model's claims ledger when its suite ran "
            "(column *from*).")
    with_training = [p for p in points if p.get("training")]
    if with_training:
        doc.add("**Recipe of each checkpoint** (what differs from the reference recipe: AdamW lr "
                "1e-3, 100 warm-up steps, cosine decay to 1e-4 over 5,000 steps, weight decay "
                "0.1 on 2-D weights, gradient clipping at 1.0, dropout 0.2, batch 16, seed "
                "1337; the command retrains it to the same SHA-256 on one machine, and "
                "`--stop-at` the *stopped* step gives the same weights)\n\n" + markdown_table(
                    ["model", "recipe", "schedule (steps)", "stopped (kept)", "val loss",
                     "train loss", "SHA-256", "command"],
                    [_recipe_row(p) for p in with_training]))
        doc.add("**Validation history** (step, validation loss; the training loss of each "
                "interval is in the sweep file)\n\n"
                + "\n".join(f"- {p['model']}: {_history(p)}" for p in with_training))
    bits = sorted({r["bits"] for p in points for r in p["figures"]["q4"]}, reverse=True)
    doc.add("**Key figures per checkpoint**\n\n" + markdown_table(
        ["model", "val loss", "bigram"] + [f"{b}-bit pt / pc" for b in bits]
        + ["Q7 tok / max block penalty", "P1 30% global / layer / random", "P2 random 5%",
           "S4 bigram k=1 / k=8", "S4 8-bit k=1 / k=8"],
        [_figure_row(p) for p in points]))
    names = list(THRESHOLDS)
    art = {"model": "the article's model (published)", "val_loss": article_figures()["val_loss"],
           "source": "the article", "margins": margins(article_figures())}
    doc.add("**Each claim's margin** (the claim holds where the margin is on its side of the "
            "threshold: ✓ holds, ✗ does not)\n\n" + markdown_table(
                ["model", "val loss", "from"] + [f"{THRESHOLDS[n][0]}: {THRESHOLDS[n][1]} "
                                                 f"({'>' if THRESHOLDS[n][3] == 'above' else '<'} "
                                                 f"{THRESHOLDS[n][2]:g})" for n in names],
                [[p["model"], fmt(p["val_loss"]), p.get("source", "")]
                 + [f"{p['margins'][n]:+.4f} {'✓' if holds(n, p['margins'][n]) else '✗'}" for n in names]
                 for p in [*points, art]]))
    with_fragility = [p for p in points if p.get("fragility")]
    if with_fragility:
        sites = sorted(with_fragility[0]["fragility"]["activations"])
        doc.add("**What could make a model fragile** (weight range: max / median of the rows' "
                "max|w| per matrix, the worst and the median matrix, as Q10; activations: max / "
                "median over channels of max|x| at Q10's sites, the largest |x| in brackets; "
                "RMS of tok / pos over the RMS of all block weights; the largest |w|; each "
                "matrix's share of the summed one-at-a-time 4-bit penalties, Q7; the article "
                "published weight ranges 2.49 / 1.51, activation ratios 1.50 (5.24), "
                "1.54 (6.24), 1.64 (6.67), the sum +0.2830 and shares tok 34%, pos 22%)\n\n" + markdown_table(
                    ["model", "weight range worst (matrix) / median"]
                    + [f"activations {s}" for s in sites]
                    + ["RMS tok / pos over blocks", "largest \\|w\\|", "sum of 4-bit penalties",
                       "4-bit share tok / pos / head / top block"],
                    [_fragility_row(p) for p in with_fragility]))
    with_spec = [p for p in points if p.get("speculative")]
    if with_spec:
        ks = sorted({r["k"] for r in with_spec[0]["speculative"]})
        kk = "/".join(f"k={k}" for k in ks)
        doc.add("**S6 and S7 without a clock** (timings are not measured by the sweep: a shared "
                "machine cannot time them honestly). Acceptance and characters per target pass "
                "of 200-character runs; *break-even c* = (chars per pass - 1) / k, the largest "
                "draft cost at which S7's formula still predicts a speedup; *formula, article's "
                "c*: chars per pass / (1 + k c) with the article's measured c (8-bit 1.059, "
                "4-bit 1.034), so only the acceptance is this checkpoint's. The article: bigram "
                "acceptance 0.290 at k=1, 0.059 at k=8 (1.47 chars per pass), its bigram c "
                "0.004; its own formula column is its published prediction\n\n"
                + markdown_table(
                    ["model", f"bigram acceptance {kk}", f"bigram chars per pass {kk}",
                     f"bigram break-even c {kk}", f"8-bit acceptance {kk}",
                     f"8-bit formula, article's c {kk}", f"4-bit formula, article's c {kk}"],
                    [_speculative_row(p) for p in with_spec] + [_article_speculative_row(ks)]))
    for name, title, keys, unit in PLOTS:
        doc.plot(name, _drawer(points, title, keys, unit))
    if any(recipe_label(p) != REFERENCE_RECIPE for p in points):
        for name, title, keys, unit in RECIPE_PLOTS:
            doc.plot(name, _recipe_drawer(points, title, keys, unit))


def _drawer(points: list[dict], title: str, keys: list[str], unit: str):
    art = article_figures()
    art_margins = margins(art)

    run = [p for p in points if recipe_label(p) == REFERENCE_RECIPE]
    others = [p for p in points if recipe_label(p) != REFERENCE_RECIPE]

    def draw(ax):
        xs = [p["val_loss"] for p in run]
        thresholds = set()
        for i, k in enumerate(keys):
            claim, what, threshold, side = THRESHOLDS[k]
            ax.plot(xs, [p["margins"][k] for p in run], "o-", color=f"C{i}",
                    label=f"{claim}: {what} (holds {side} {threshold:g})")
            if others:
                ax.plot([p["val_loss"] for p in others], [p["margins"][k] for p in others],
                        "^", color=f"C{i}", alpha=0.6, mfc="none",
                        label=f"{claim}: other recipes ({what.split(' (')[0]})")
            ax.plot([art["val_loss"]], [art_margins[k]], "x", color=f"C{i}", ms=9,
                    label=f"{claim}: the article's model ({what.split(' (')[0]})")
            thresholds.add(threshold)
        for t in sorted(thresholds):
            ax.axhline(t, color="k", lw=1, ls="--", label=f"threshold {t:g}")
        for p in run:
            ax.annotate(p["model"], (p["val_loss"], ax.get_ylim()[1]), fontsize=6, rotation=90,
                        va="top", ha="right", color="0.4")
        ax.set(xlabel="validation loss of the checkpoint (nats)", ylabel=unit, title=title)
        # The other recipes' triangles are in the caption, not the legend (it would crowd out the plot).
        handles = [(h, lab) for h, lab in zip(*ax.get_legend_handles_labels(), strict=True)
                   if "other recipes" not in lab]
        ax.legend(*zip(*handles, strict=True), fontsize=6, loc="upper left",
                  bbox_to_anchor=(0, -0.28), borderaxespad=0)
        return (f"{title}, one line per figure over the reference run's checkpoints "
                f"(triangles: other recipes), against the checkpoint's validation loss")

    return draw


#: The recipe plots: every checkpoint's margin of the six claims that do not
#: reproduce, one column per checkpoint.
RECIPE_PLOTS = (
    ("recipe_loss_margins", "Q5, Q6, Q7 (pos), P2 margins per checkpoint",
     ["q5_3bit_pc_minus_bigram", "q6_2bit_pc_minus_pt", "q7_pos_minus_next",
      "p2_random5_minus_bigram"], "nats"),
    ("recipe_q7_ratio", "tok's 4-bit penalty over the largest block matrix's per checkpoint (Q7)",
     ["q7_tok_over_block"], "ratio"),
)


def _recipe_drawer(points: list[dict], title: str, keys: list[str], unit: str):
    art_margins = margins(article_figures())
    order = sorted(points, key=lambda p: (recipe_label(p) != REFERENCE_RECIPE, p["model"]))

    def draw(ax):
        xs = range(len(order))
        width = 0.8 / len(keys)
        thresholds = set()
        for i, k in enumerate(keys):
            claim, what, threshold, side = THRESHOLDS[k]
            offset = (i - (len(keys) - 1) / 2) * width
            ax.bar([x + offset for x in xs], [p["margins"][k] for p in order], width,
                   color=f"C{i}", label=f"{claim}: {what} (holds {side} {threshold:g})")
            ax.plot([len(order) - 0.4 + offset + 0.4], [art_margins[k]], "*", color=f"C{i}",
                    ms=10, label=f"{claim}: the article's model (published)")
            thresholds.add(threshold)
        for t in sorted(thresholds):
            ax.axhline(t, color="k", lw=1, ls="--", label=f"threshold {t:g}")
        ax.set_xticks(list(xs) + [len(order)])
        ax.set_xticklabels([f"{p['model']} ({p['val_loss']:.2f})" for p in order]
                           + ["article (published)"], rotation=60, ha="right", fontsize=6)
        ax.set(ylabel=unit, title=title)
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
        return (f"{title}: one bar per margin and checkpoint (validation loss in brackets), "
                "the article's published model as stars")

    return draw
