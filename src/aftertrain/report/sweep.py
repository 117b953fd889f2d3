"""Report section: the quality sweep, rendered from the
sweep file that ``aftertrain sweep`` writes (``sweep.json``): the key figures
of Q4-Q7, P1/P2 and S4 per checkpoint of one training run, and each claim's
margin against validation loss with its threshold drawn, so the reader sees
where each claim flips. Rendering only: the figures are the sweep's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from aftertrain.experiments.sweep import THRESHOLDS, article_figures, holds, margins
from aftertrain.report.document import Document
from aftertrain.report.ledgerfile import ReportError
from aftertrain.report.markdown import fmt, markdown_table

TITLE = "The quality sweep: where each claim flips"
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
    doc.add("Checkpoints of one training run (the recipe of `aftertrain train`, stopped at "
            "several steps), best validation loss first. Figures measured by `aftertrain sweep`, "
            "or taken from a model's claims ledger when its suite ran (column *from*).")
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
    for name, title, keys, unit in PLOTS:
        doc.plot(name, _drawer(points, title, keys, unit))


def _drawer(points: list[dict], title: str, keys: list[str], unit: str):
    art = article_figures()
    art_margins = margins(art)

    def draw(ax):
        xs = [p["val_loss"] for p in points]
        thresholds = set()
        for i, k in enumerate(keys):
            claim, what, threshold, side = THRESHOLDS[k]
            ax.plot(xs, [p["margins"][k] for p in points], "o-", color=f"C{i}",
                    label=f"{claim}: {what} (holds {side} {threshold:g})")
            ax.plot([art["val_loss"]], [art_margins[k]], "x", color=f"C{i}", ms=9,
                    label=f"{claim}: the article's model ({what.split(' (')[0]})")
            thresholds.add(threshold)
        for t in sorted(thresholds):
            ax.axhline(t, color="k", lw=1, ls="--", label=f"threshold {t:g}")
        for p in points:
            ax.annotate(p["model"], (p["val_loss"], ax.get_ylim()[1]), fontsize=6, rotation=90,
                        va="top", ha="right", color="0.4")
        ax.set(xlabel="validation loss of the checkpoint (nats)", ylabel=unit, title=title)
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(0, -0.28), borderaxespad=0)
        return f"{title}, one line per figure, against the checkpoint's validation loss"

    return draw
