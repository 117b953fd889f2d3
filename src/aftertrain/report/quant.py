"""Report section: quantization (part 3; Q2-Q11, X3)."""

from __future__ import annotations

from aftertrain.experiments import tables as ET
from aftertrain.experiments.article import ARTICLE
from aftertrain.experiments.quant import storage_key
from aftertrain.quant import Granularity
from aftertrain.report.document import Document
from aftertrain.report.markdown import fmt, pct, ratio_cell
from aftertrain.report.plots import UNTRAINED

TITLE = "Quantization (part 3)"
#: Characters shown on each side of the point where the float32 and int8 texts part (Q9).
Q9_CONTEXT = 30


def section(doc: Document) -> None:
    """Add the quantization section to ``doc``, from the tables its ledger holds: the bits table,
    storage, sensitivity, sample texts, outliers and speed, beside the article's figures."""
    _bits(doc)
    _storage(doc)
    _sensitivity(doc)
    _texts(doc)
    _outliers_and_speed(doc)


def _bits(doc: Document) -> None:
    q4, b1 = doc.ledger.table(ET.Q4), doc.ledger.table(ET.B1)
    if q4 is None:
        return doc.missing("Q2/Q4")
    bits = q4.rows
    art = {a.bits: a for a in ARTICLE.q4.rows}
    rows = [
        [
            r.bits,
            fmt(art[r.bits].per_tensor),
            fmt(r.per_tensor),
            fmt(art[r.bits].per_channel),
            fmt(r.per_channel),
        ]
        for r in bits
    ]
    rows.insert(
        0, ["float32", fmt(ARTICLE.q4.float32), fmt(q4.float32), fmt(ARTICLE.q4.float32), fmt(q4.float32)]
    )
    doc.table(
        "Validation loss by bit width",
        ("Q2", "Q4", "Q5", "Q6"),
        ["bits", "per-tensor (article)", "per-tensor (ours)", "per-channel (article)", "per-channel (ours)"],
        rows,
    )

    def draw(ax):
        xs = [r.bits for r in bits]
        ax.plot(xs, [r.per_tensor for r in bits], "o-", color="C0", label="per-tensor (ours)")
        ax.plot(xs, [r.per_channel for r in bits], "s-", color="C1", label="per-channel (ours)")
        ax.plot(
            list(art),
            [a.per_tensor for a in art.values()],
            "o:",
            color="C0",
            alpha=0.5,
            label="per-tensor (article)",
        )
        ax.plot(
            list(art),
            [a.per_channel for a in art.values()],
            "s:",
            color="C1",
            alpha=0.5,
            label="per-channel (article)",
        )
        ax.axhline(q4.float32, color="k", lw=1, label="float32 (ours)")
        if b1:
            ax.axhline(b1.bigram, color="gray", ls="--", lw=1, label="bigram (ours)")
        ax.axhline(UNTRAINED, color="r", ls=":", lw=1, label="untrained ln 100")
        ticks = sorted(set(xs) | set(art), reverse=True)
        ax.set_xticks(ticks, [str(b) for b in ticks])  # only bit widths measured
        ax.invert_xaxis()
        ax.set(xlabel="bits per weight", ylabel="validation loss (nats)", title="Loss against bits (Q4)")
        return "Validation loss against bits, both granularities, with the float32 and bigram lines"

    doc.plot("quant_bits", draw)


def _storage(doc: Document) -> None:
    st = doc.ledger.table(ET.Q3)
    if st is None:
        return
    mb = 2**20
    pt = st[storage_key(Granularity.PER_TENSOR, 8)]
    doc.table(
        "Storage of int8 (MB = 2^20 bytes; per-tensor scales)",
        ("Q3",),
        ["", "article", "ours"],
        [
            ["2-D weights float32", f"{ARTICLE.q3.weights_fp32_mb:.2f}", f"{pt.weights_fp32_bytes / mb:.2f}"],
            [
                "2-D weights int8",
                f"{ARTICLE.q3.weights_int8_mb:.2f}",
                f"{(pt.weight_code_bytes + pt.scale_bytes) / mb:.2f}",
            ],
            [
                "all parameters float32",
                f"{ARTICLE.q3.parameters_fp32_mb:.2f}",
                f"{pt.parameters_fp32_bytes / mb:.2f}",
            ],
            [
                "all parameters int8",
                f"{ARTICLE.q3.parameters_int8_mb:.2f}",
                f"{pt.parameters_quantized_bytes / mb:.2f}",
            ],
            ["cut", pct(ARTICLE.q3.cut), pct(1 - pt.parameters_quantized_bytes / pt.parameters_fp32_bytes)],
        ],
    )
    rec = doc.ledger.table(ET.Q6)
    if rec is not None:
        doc.table(
            "2 bits on blocks.0.f1: zeroed elements and mean absolute error",
            ("Q6",),
            ["granularity", "zeroed (article)", "zeroed (ours)", "MAE (article)", "MAE (ours)"],
            [
                [
                    g.value,
                    pct(ARTICLE.q6[g].zero_fraction),
                    pct(rec[g.value].zero_fraction),
                    fmt(ARTICLE.q6[g].mean_abs_error),
                    fmt(rec[g.value].mean_abs_error),
                ]
                for g in Granularity
            ],
        )


def _sensitivity(doc: Document) -> None:
    sens = doc.ledger.table(ET.Q7)
    art = {a.name: a.penalty for a in ARTICLE.q7}
    if sens is not None:
        doc.table(
            "One matrix at a time at 4 bits (penalty in nats, most harmful first)",
            ("Q7",),
            ["rank", "matrix", "article", "ours"],
            [[i + 1, r.name, fmt(art.get(r.name)), f"{r.penalty:+.4f}"] for i, r in enumerate(sens)],
        )

        def draw_sens(ax):
            names = [r.name.replace(".weight", "") for r in sens]
            ys = range(len(sens))
            ax.barh([y + 0.2 for y in ys], [r.penalty for r in sens], height=0.4, label="ours")
            ax.barh(
                [y - 0.2 for y in ys],
                [art.get(r.name, float("nan")) for r in sens],
                height=0.4,
                label="article (where published)",
            )
            ax.set_yticks(list(ys), names, fontsize=7)
            ax.invert_yaxis()
            ax.set(xlabel="loss penalty at 4 bits (nats)", title="4-bit sensitivity (Q7)")
            return "4-bit sensitivity: loss penalty of quantizing one matrix at a time"

        doc.plot("quant_sensitivity", draw_sens)
    comp = doc.ledger.table(ET.Q8)
    if comp is not None:
        doc.table(
            "Penalties compound at 4 bits",
            ("Q8",),
            ["", "article", "ours"],
            [
                [
                    "sum of one-at-a-time penalties",
                    f"{ARTICLE.q8.sum_of_penalties:+.4f}",
                    f"{comp.sum_of_penalties:+.4f}",
                ],
                ["all at once", f"{ARTICLE.q8.all_at_once:+.4f}", f"{comp.all_at_once:+.4f}"],
            ],
        )


def parting_excerpt(first: str, second: str, position: int | None, context: int = Q9_CONTEXT) -> str:
    """Both texts around the character where they part (``position``, 1-based
    as the Q9 table records it), one above the other, with a caret under the
    first differing character (newlines shown as ⏎)."""
    if position is None:
        return f"the texts do not part within {min(len(first), len(second))} characters"
    at = position - 1
    start = max(0, at - context)
    lead = "…" if start else ""

    def show(t: str) -> str:
        tail = "…" if len(t) > at + context else ""
        return lead + t[start : at + context].replace("\n", "⏎") + tail

    caret = " " * (len("float32: ") + len(lead) + at - start) + f"^ character {position}"
    return f"float32: {show(first)}\nint8:    {show(second)}\n{caret}"


def _texts(doc: Document) -> None:
    div = doc.ledger.table(ET.Q9)
    if div is None:
        return
    doc.table(
        "Same seed, float32 against int8 text",
        ("Q9",),
        ["", "article", "ours"],
        [["first differing character", ARTICLE.q9_position, div.position]],
    )
    doc.add("```\n" + parting_excerpt(div.float32, div.quantized, div.position) + "\n```")


def _outliers_and_speed(doc: Document) -> None:
    out = doc.ledger.table(ET.Q10)
    if out is not None:
        w, acts, aw = out.weights, out.activations, ARTICLE.q10.weights
        rows = [
            ["weight range max/median, worst matrix", fmt(aw.worst, 2), fmt(w.worst, 2)],
            ["weight range max/median, median matrix", fmt(aw.median, 2), fmt(w.median, 2)],
        ]
        for site, art in ARTICLE.q10.activations.items():
            rows.append(
                [
                    f"activation {site} max/median (max)",
                    f"{art.ratio:.2f} ({art.max:.2f})",
                    f"{acts[site].ratio:.2f} ({acts[site].max:.2f})",
                ]
            )
        rows.append(
            [
                "int8 loss, per-tensor minus per-channel",
                fmt(ARTICLE.q10.int8_granularity_gap),
                fmt(out.int8_granularity_gap),
            ]
        )
        doc.table("No outlier channels", ("Q10",), ["", "article", "ours"], rows)
    speed = doc.ledger.table(ET.Q11)
    if speed is not None:
        doc.table(
            "Fake-quantized forward against float32 (time ratio)",
            ("Q11",),
            ["", "ours: median [CI of the median]"],
            [["fake-quantized / float32", ratio_cell(speed)]],
        )
    x3 = doc.ledger.table(ET.X3)
    if x3 is not None:
        sizes = sorted(x3.ratios)
        doc.table(
            "Dynamic int8 Linear against float32 (time ratio, below 1 = int8 faster)",
            ("X3",),
            ["rows multiplied at once", "ours: median [CI of the median]"],
            [[r, ratio_cell(x3.ratios[r])] for r in sizes],
        )
        if x3.crossover_rows:
            doc.add(f"int8 is decidedly faster (interval wholly below 1) from {x3.crossover_rows} rows.")
        elif all(x3.ratios[r].ci[0] > 1.0 for r in sizes):
            doc.add(
                f"int8 is decidedly slower (interval wholly above 1) at every size up to {sizes[-1]} rows."
            )
        else:
            doc.add(
                f"No size up to {sizes[-1]} rows has its interval wholly below 1: where int8 "
                f"starts to pay is not decided by this run."
            )
