"""Report section: speculative decoding (part 4; S2-S7, X1, X2, X8)."""

from __future__ import annotations

from functools import partial

from aftertrain.experiments import tables as ET
from aftertrain.experiments.article import ARTICLE
from aftertrain.experiments.speedup import SpeedupRow
from aftertrain.report.document import Document
from aftertrain.report.markdown import DASH, fmt
from aftertrain.report.plots import dodge, draft_color, k_axis, style_legend

TITLE = "Speculative decoding (part 4)"


def by_draft(rows: list) -> dict[str, list]:
    """Rows (with ``draft`` and ``k``) grouped by draft (first-seen order),
    each group sorted by k."""
    out: dict[str, list] = {}
    for r in sorted(rows, key=lambda r: r.k):
        out.setdefault(r.draft, []).append(r)
    order = list(dict.fromkeys(r.draft for r in rows))
    return {d: out[d] for d in order}


def article_points(rows, draft: str, field: str) -> list[tuple[int, float]]:
    """The article's ``field`` per k for ``draft`` (rows with ``draft`` and ``k``)."""
    return sorted((r.k, getattr(r, field)) for r in rows if r.draft == draft)


def by_draft_and_k(rows) -> dict[tuple[str, int], object]:
    """Rows with ``draft`` and ``k``, by (draft, k)."""
    return {(r.draft, r.k): r for r in rows}


def section(doc: Document) -> None:
    """Add the speculative decoding section to ``doc``, from the tables its ledger holds: the
    first token's law, acceptance, costs and speedups, beside the article's figures."""
    _first_token(doc)
    _acceptance(doc)
    _costs(doc)
    _speedup(doc)


def _first_token(doc: Document) -> None:
    s2 = doc.ledger.table(ET.SPEC_FIRST_TOKEN)
    if s2 is None:
        return
    art = {a.draft: a for a in ARTICLE.s2}
    rows = [
        [
            f"speculative, {r.draft} draft",
            fmt(getattr(art.get(r.draft), "tv", None)),
            fmt(r.tv),
            f"{r.chi2_pvalue:.3g}",
        ]
        for r in s2
    ]
    rows.append(["direct sampling (one draw)", fmt(ARTICLE.s2[0].direct_tv), fmt(s2[0].direct_tv), DASH])
    doc.table(
        "TV distance of 20,000 first characters to the target's law",
        ("S2",),
        ["sampler", "article", "ours", "chi-square p"],
        rows,
    )
    doc.add(
        f"Same-sample-size baseline (direct sampling, simulated): median "
        f"{s2[0].null_median:.4f}, 99% quantile {s2[0].null_q99:.4f}; "
        f"alarm threshold at alpha 1e-6: {s2[0].tv_threshold:.4f}."
    )


def _acceptance(doc: Document) -> None:
    """S4's table and plot beside the article's, then X1's table."""
    s4 = doc.ledger.table(ET.SPEC_ACCEPTANCE)
    if s4 is None:
        doc.missing("S4")
    else:
        _acceptance_table(doc, s4)
        doc.plot("spec_acceptance", _acceptance_drawer(s4))
    _x1_table(doc)


def _acceptance_table(doc: Document, s4) -> None:
    """S4's table: each draft and k, the article's figures beside ours."""
    rows = []
    published = by_draft_and_k(ARTICLE.s4)
    for r in s4:
        art = published.get((r.draft, r.k))
        a = lambda field, f, art=art: f.format(getattr(art, field)) if art else DASH
        rows.append(
            [
                r.draft,
                r.k,
                a("acceptance", "{:.3f}"),
                f"{r.acceptance:.3f}",
                f"{r.predicted_acceptance:.3f}",
                a("chars_per_pass", "{:.2f}"),
                f"{r.chars_per_pass:.2f}",
                a("target_passes", "{}"),
                r.target_passes,
            ]
        )
    doc.table(
        "Acceptance follows draft quality (200 characters, seed fixed)",
        ("S4", "S8", "X1"),
        [
            "draft",
            "k",
            "acceptance (article)",
            "acceptance (ours)",
            "X1 prediction from k=1 (ours)",
            "chars/pass (article)",
            "chars/pass (ours)",
            "target passes (article)",
            "target passes (ours)",
        ],
        rows,
    )


def _acceptance_drawer(s4):
    """S4's plot: acceptance against k per draft, with the X1 prediction and the article's figures."""

    def draw(ax):
        groups = by_draft(s4)
        for i, (d, rs) in enumerate(groups.items()):
            color = draft_color(d, i)
            ks = [r.k for r in rs]
            ax.plot(ks, [r.acceptance for r in rs], "o-", color=color, label=f"{d} measured")
            ax.plot(ks, [r.predicted_acceptance for r in rs], ":", color=color, label=f"{d} X1 prediction")
            points = article_points(ARTICLE.s4, d, "acceptance")
            if points:
                ax.plot(*zip(*points, strict=True), "x", color=color, ms=9, label=f"{d} article")
        k_axis(ax, [r.k for r in s4])
        style_legend(
            ax,
            list(groups),
            [
                ("measured", {"marker": "o", "ls": "-"}),
                ("X1 prediction", {"ls": ":"}),
                ("article", {"marker": "x", "ls": "", "ms": 9}),
            ],
        )
        ax.set(
            xlabel="draft length k",
            ylabel="acceptance rate (accepted / drafted)",
            title="Acceptance against k (S4, X1)",
        )
        return "Acceptance rate against k per draft, with the X1 prediction a(1-a^k)/(k(1-a))"

    return draw


def _x1_table(doc: Document) -> None:
    """X1's table: the k = 8 acceptance predicted from k = 1 against the measured one."""
    x1 = doc.ledger.table(ET.SPEC_X1)
    art = {a.draft: a for a in ARTICLE.x1}
    if x1 is not None:
        doc.table(
            "Acceptance at k=8 predicted from k=1 (300-character runs)",
            ("X1",),
            ["draft", "k=1", "predicted at k=8", "measured at k=8", "article: k=1 / predicted / measured"],
            [
                [
                    d,
                    f"{rs[0].acceptance:.3f}",
                    f"{rs[-1].predicted_acceptance:.3f}",
                    f"{rs[-1].acceptance:.3f}",
                    f"{art[d].acceptance_1:.3f} / {art[d].predicted_8:.3f} / {art[d].measured_8:.3f}"
                    if d in art
                    else DASH,
                ]
                for d, rs in by_draft(x1).items()
            ],
        )


def _costs(doc: Document) -> None:
    s5 = doc.ledger.table(ET.SPEC_DRAFT_COST)
    art = {a.draft: a for a in ARTICLE.s5}
    if s5 is not None:
        doc.table(
            "Cost c of one draft character relative to one target step",
            ("S5",),
            ["draft", "article: us (c)", "ours: us", "ours: c, median [CI of the median]"],
            [
                [
                    r.draft,
                    f"{art[r.draft].draft_us:.0f} ({art[r.draft].c:.3f})" if r.draft in art else DASH,
                    f"{r.draft_us:.0f}",
                    f"{r.c:.3f} [{r.c_low:.3f}, {r.c_high:.3f}]",
                ]
                for r in s5
            ],
        )
        doc.add(
            f"One plain target step (ours): {s5[0].target_us:.0f} us; the article's: "
            f"{ARTICLE.s5[0].target_us:.0f} us."
        )
    x8 = doc.ledger.table(ET.SPEC_VERIFY_COST)
    if x8 is not None:
        ms = {a.positions: a.ms for a in ARTICLE.x8}
        doc.table(
            "Verification pass over k+1 positions against one plain step",
            ("X8",),
            ["k", "article (ms ratio to 1 position)", "ours: v_k, median [CI of the median]"],
            [
                [
                    r.k,
                    f"{ms[r.k + 1] / ms[1]:.2f}" if r.k + 1 in ms else DASH,
                    f"{r.v_k:.3f} [{r.v_low:.3f}, {r.v_high:.3f}]",
                ]
                for r in x8
            ],
        )


def _decided(row: SpeedupRow) -> bool:
    """Whether a speedup cell's interval decides faster or slower than plain
    decoding (it does not contain 1)."""
    return not row.speedup_min <= 1.0 <= row.speedup_max


def _speedup(doc: Document) -> None:
    s6 = doc.ledger.table(ET.SPEC_SPEEDUP)
    if s6 is None:
        return doc.missing("S6/S7")
    published6, published7 = by_draft_and_k(ARTICLE.s6), by_draft_and_k(ARTICLE.s7)
    rows = [_speedup_row(r, published6.get((r.draft, r.k)), published7.get((r.draft, r.k))) for r in s6]
    doc.table(
        "Speedup over plain cached decoding (ours: median of alternating pairs "
        "[confidence interval of the median]; undecided: the interval contains 1)",
        ("S6", "S7", "X8", "X2"),
        [
            "draft",
            "k",
            "article",
            "ours",
            "article's prediction",
            "ours: (chars/pass)/(1+kc)",
            "ours: (chars/pass)/(v_k+kc)",
            "ours: share (measured / (v_k+kc))",
            "ours: c, v_k used",
        ],
        rows,
    )
    doc.add(
        "Both predictions use the c and v_k of the last column: their medians at the cost "
        "decision's last look, which the speedup judgements read; S5's and X8's tables above "
        "show each decision at its own look, which may be an earlier one."
    )
    best = max(s6, key=lambda r: r.speedup)
    doc.add(
        f"Highest median speedup (X2's verdict is in the claims table): {best.draft} at "
        f"k={best.k}, {best.speedup:.2f} [{best.speedup_min:.2f}, "
        f"{best.speedup_max:.2f}] (confidence interval of the median); predicted "
        f"{best.predicted:.2f} by the article's formula, {best.predicted_vk:.2f} "
        f"with the measured verification cost."
    )

    doc.plot("spec_speedup", partial(_draw_speedup, s6=s6))


def _speedup_row(r: SpeedupRow, art6, art7) -> list:
    """S6 and S7's table row of ``r``, beside the article's ``art6`` and
    ``art7`` at its draft and k (None where it published none)."""
    return [
        r.draft,
        r.k,
        f"{art6.speedup:.2f} ({art6.speedup_min:.2f}~{art6.speedup_max:.2f})" if art6 else DASH,
        f"{r.speedup:.2f} [{r.speedup_min:.2f}, {r.speedup_max:.2f}]"
        + ("" if _decided(r) else " (undecided)"),
        f"{art7.predicted:.2f}" if art7 else DASH,
        f"{r.predicted:.2f}",
        f"{r.predicted_vk:.2f}",
        f"{r.share:.2f}",
        f"{r.c:.3f}, {r.v_k:.3f}",
    ]


def _speedup_series(ax, d: str, rs: list[SpeedupRow], color, dx: float) -> None:
    """One draft's series of S6's plot, its k shifted by ``dx``: the measured
    median with its interval (hollow where undecided), the prediction with
    v_k and the article's figures."""
    ks = [r.k + dx for r in rs]
    med = [r.speedup for r in rs]
    ax.errorbar(
        ks,
        med,
        yerr=[
            [m - r.speedup_min for m, r in zip(med, rs, strict=True)],
            [r.speedup_max - m for m, r in zip(med, rs, strict=True)],
        ],
        fmt="o-",
        color=color,
        capsize=3,
        ms=4,
        lw=1.2,
        label=f"{d} measured",
    )
    undecided = [(k, m) for k, m, r in zip(ks, med, rs, strict=True) if not _decided(r)]
    if undecided:  # hollow: the interval contains 1, faster or slower not decided
        ax.plot(
            *zip(*undecided, strict=True), "o", mfc="white", mec=color, ms=6, zorder=3, label="_undecided"
        )
    ax.plot(ks, [r.predicted_vk for r in rs], "_", color=color, ms=12, mew=2, label=f"{d} predicted (v_k)")
    points = article_points(ARTICLE.s6, d, "speedup")
    if points:
        ax.plot(
            [k + dx for k, _ in points],
            [v for _, v in points],
            "x",
            color=color,
            ms=8,
            label=f"{d} article",
        )


def _draw_speedup(ax, s6: list[SpeedupRow]) -> str:
    """S6's plot: the measured speedup against k per draft, with S7's prediction
    and the article's figures."""
    groups = by_draft(s6)
    for i, (d, rs) in enumerate(groups.items()):
        _speedup_series(ax, d, rs, draft_color(d, i), dodge(i, len(groups)))
    ax.axhline(1.0, color="k", lw=1)
    k_axis(ax, [r.k for r in s6])
    style_legend(
        ax,
        list(groups),
        [
            ("measured: median, CI of the median", {"marker": "o", "ls": "-"}),
            ("undecided (CI contains 1)", {"marker": "o", "ls": "", "mfc": "white"}),
            ("predicted with v_k", {"marker": "_", "ls": "", "ms": 12, "mew": 2}),
            ("article", {"marker": "x", "ls": "", "ms": 8}),
        ],
    )
    ax.set(
        xlabel="draft length k",
        ylabel="speedup over plain decoding (x)",
        title="Speedup against k (S6, S7, X8, X2)",
    )
    return (
        "Speedup against k per draft: median of alternating pairs with the confidence "
        "interval of the median (hollow where it contains 1: undecided), and the "
        "prediction with the measured verification cost"
    )
