"""Report section: pruning (part 8; P1-P8, X4, X5)."""

from __future__ import annotations

import torch

from aftertrain.claims.ledgerfile import LedgerFile
from aftertrain.experiments import tables as ET
from aftertrain.experiments.article import ARTICLE
from aftertrain.prune.formats import Format, break_even_sparsity, bytes_per_element_formula
from aftertrain.prune.masks import Method
from aftertrain.report.document import Document
from aftertrain.report.markdown import DASH, fmt, pct, ratio_cell
from aftertrain.report.plots import UNTRAINED

TITLE = "Pruning (part 8)"
#: P1's columns, in the article's order.
METHODS = (Method.GLOBAL, Method.LAYER, Method.RANDOM)


def _near(rows, sparsity: float):
    """The row of ``rows`` at ``sparsity`` (to 1e-9), or None."""
    return next((r for r in rows if abs(r.sparsity - sparsity) < 1e-9), None)


def section(doc: Document) -> None:
    """Add the pruning section to ``doc``, from the tables its ledger holds: loss by sparsity,
    random pruning, with quantization, bytes per element, equal size, dense with zeros, CSR and
    2:4, beside the article's figures."""
    led = doc.ledger
    _loss_by_sparsity(doc, led)
    _random_pruning(doc, led)
    _with_quantization(doc, led)
    _bytes_per_element(doc, led)
    _equal_size(doc, led)
    _dense_with_zeros(doc, led)
    _csr(doc, led)
    _two_four(doc, led)


def _loss_by_sparsity(doc: Document, led: LedgerFile) -> None:
    """P1: validation loss by sparsity for the three methods, and its plot."""
    p1, b1 = led.table(ET.P1), led.table(ET.B1)
    if p1 is None:
        doc.missing("P1")
    else:
        doc.table(
            "Validation loss by sparsity (global / per-layer magnitude / random)",
            ("P1", "P3"),
            ["sparsity", "global (article / ours)", "per-layer (article / ours)", "random (article / ours)"],
            [
                [pct(r.sparsity, 0)]
                + [f"{fmt(_near(ARTICLE.p1, r.sparsity).loss(m))} / {fmt(r.loss(m))}" for m in METHODS]
                for r in p1
            ],
        )

        def draw(ax):
            xs = [100 * r.sparsity for r in p1]
            for i, m in enumerate(METHODS):
                label = m.value
                ax.plot(xs, [r.loss(m) for r in p1], "o-", color=f"C{i}", label=f"{label} (ours)")
                ax.plot(
                    [100 * a.sparsity for a in ARTICLE.p1],
                    [a.loss(m) for a in ARTICLE.p1],
                    "o:",
                    color=f"C{i}",
                    alpha=0.5,
                    label=f"{label} (article)",
                )
            if b1:
                ax.axhline(b1.bigram, color="gray", ls="--", lw=1, label="bigram (ours)")
                ax.axhline(b1.reference, color="k", lw=1, label="unpruned (ours)")
            ax.axhline(UNTRAINED, color="r", ls=":", lw=1, label="untrained ln 100")
            ax.set(
                xlabel="sparsity of the 2-D weights (%)",
                ylabel="validation loss (nats)",
                title="Loss against sparsity (P1)",
            )
            return "Validation loss against sparsity for the three pruning methods"

        doc.plot("prune_sparsity", draw)


def _random_pruning(doc: Document, led: LedgerFile) -> None:
    """P2: random pruning, the mean over seeds."""
    p2 = led.table(ET.P2)
    if p2 is not None:
        doc.table(
            "Random pruning (mean over seeds)",
            ("P2",),
            ["sparsity", "article", "ours (mean)", "ours (min~max)"],
            [
                [
                    pct(r.sparsity, 0),
                    fmt(getattr(_near(ARTICLE.p2, r.sparsity), "mean", None)),
                    fmt(r.mean),
                    f"{fmt(r.min)}~{fmt(r.max)}",
                ]
                for r in p2
            ],
        )


def _with_quantization(doc: Document, led: LedgerFile) -> None:
    """P4: global-magnitude sparsity with the loss of per-channel quantization."""
    p4 = led.table(ET.P4)
    if p4 is not None:
        doc.table(
            "Global-magnitude sparsity with the loss of per-channel quantization",
            ("P4",),
            ["bits", "article", "ours", "our quantized loss"],
            [
                [
                    r.bits,
                    pct(next(a.sparsity for a in ARTICLE.p4 if a.bits == r.bits)),
                    pct(r.sparsity),
                    fmt(r.loss),
                ]
                for r in p4
            ],
        )


def _bytes_per_element(doc: Document, led: LedgerFile) -> None:
    """P5: bytes per element of each storage, and its plot."""
    p5 = led.table(ET.P5)
    if p5 is not None:
        int8 = float(torch.int8.itemsize)  # int8 dense: one byte per element
        rows = [
            ["dense float32", fmt(ARTICLE.p5[0].dense, 2), fmt(p5[0].dense, 2), "", ""],
            ["int8", fmt(ARTICLE.p5_int8, 2), fmt(int8, 2), "", ""],
        ]
        rows += [
            [
                pct(r.sparsity, 0) + " sparse",
                "",
                "",
                f"{a.coo:.2f} / {a.bitmask:.2f}",
                f"{r.coo:.3f} / {r.bitmask:.3f}",
            ]
            for r in p5
            if (a := _near(ARTICLE.p5, r.sparsity)) is not None
        ]
        doc.table(
            "Bytes per element",
            ("P5",),
            ["storage", "dense (article)", "dense (ours)", "COO / bitmask (article)", "COO / bitmask (ours)"],
            rows,
        )

        cross = float(break_even_sparsity(Format.COO, Format.BITMASK))

        def draw_bytes(ax):
            s = [i / 1000 for i in range(0, 1000)]
            for fmt, label in ((Format.COO, "COO: 8(1-s)"), (Format.BITMASK, "bitmask: 4(1-s) + 1/8")):
                ax.plot(
                    [100 * x for x in s], [float(bytes_per_element_formula(fmt, x)) for x in s], label=label
                )
            ax.axhline(int8, color="C2", label="int8 dense")
            ax.axhline(
                float(bytes_per_element_formula(Format.DENSE, 0)), color="k", lw=1, label="float32 dense"
            )
            ax.plot(
                [100 * r.sparsity for r in p5], [r.coo for r in p5], "o", color="C0", label="COO measured"
            )
            ax.plot(
                [100 * r.sparsity for r in p5],
                [r.bitmask for r in p5],
                "s",
                color="C1",
                label="bitmask measured",
            )
            ax.axvline(100 * cross, color="gray", ls=":", lw=1)
            ax.set(xlabel="sparsity (%)", ylabel="bytes per element", title="Storage against sparsity (P5)")
            return (
                f"Bytes per element against sparsity for COO, bitmask and int8 "
                f"(they cross at {100 * cross:g}%)"
            )

        doc.plot("prune_bytes", draw_bytes)


def _equal_size(doc: Document, led: LedgerFile) -> None:
    """P6: int8 against sparse bitmask storage at equal size."""
    p6 = led.table(ET.P6)
    if p6 is not None:
        art = {a.name: a for a in ARTICLE.p6}
        doc.table(
            "At equal size: int8 against sparse bitmask storage",
            ("P6",),
            ["", "compression (article / ours)", "loss (article / ours)"],
            [
                [
                    r.name,
                    f"{art[r.name].compression:.2f}x / {r.compression:.2f}x",
                    f"{fmt(art[r.name].loss)} / {fmt(r.loss)}",
                ]
                if r.name in art
                else [r.name, f"{DASH} / {r.compression:.2f}x", f"{DASH} / {fmt(r.loss)}"]
                for r in p6
            ],
        )


def _dense_with_zeros(doc: Document, led: LedgerFile) -> None:
    """P7: a dense matmul with zeros against the original."""
    p7 = [t for t in (led.table(ET.P7.at(s)) for s in (0.5, 0.9, 0.99)) if t is not None]
    if p7:
        doc.table(
            "Dense (128x128)@(128x512) with zeros against the original (time ratio)",
            ("P7",),
            ["zeros", "article: median (quartiles)", "ours: median [interval]"],
            [
                [
                    pct(r.sparsity, 0),
                    f"{a.median:.3f} ({a.q1:.3f}~{a.q3:.3f})"
                    if (a := _near(ARTICLE.p7, r.sparsity)) is not None
                    else DASH,
                    ratio_cell(r),
                ]
                for r in p7
            ],
        )


def _csr(doc: Document, led: LedgerFile) -> None:
    """X4: CSR sparse matmul against dense."""
    x4 = led.table(ET.X4)
    if x4 is not None:
        doc.table(
            "CSR sparse matmul against dense (time ratio, below 1 = sparse faster)",
            ("X4",),
            ["sparsity", "ours: median [interval]"],
            [[pct(r.sparsity), ratio_cell(r)] for r in x4.rows],
        )
        doc.add(f"CSR starts to pay at: {pct(x4.crossover) if x4.crossover else 'no sparsity tried'}")


def _two_four(doc: Document, led: LedgerFile) -> None:
    """P8 and X5: 2:4 structured pruning against unstructured 50%."""
    x5 = led.table(ET.X5)
    if x5 is not None:
        doc.table(
            "2:4 structured pruning against unstructured 50%",
            ("P8", "X5"),
            ["", "ours"],
            [
                ["loss, 2:4", fmt(x5.two_four)],
                ["loss, global 50%", fmt(x5.global_50)],
                ["loss, per-layer 50%", fmt(x5.layer_50)],
                ["bytes per element, 2:4 storage", fmt(x5.bytes_two_four, 3)],
                ["bytes per element, bitmask", fmt(x5.bytes_bitmask, 3)],
                ["bytes per element, COO", fmt(x5.bytes_coo, 3)],
            ],
        )
