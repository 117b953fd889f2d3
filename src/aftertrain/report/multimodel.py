"""Report sections over several models: one verdict
column per model, the loss plots with one line per model beside the
article's points, and "Does a model of the article's quality reproduce
them?": for each claim that does not reproduce on the first model (the
reference), its verdict and figures on every other model, and the reverse.

The first ledger is the primary one (the reference by default): every other
section of the report renders it; these sections put the others beside it.
Nothing here re-derives a verdict: each model's verdicts are its own
ledger's. A later model's ledger may take the outcomes of the tests that do
not read the model from the first run (``--model-free-from``): the verdict
column marks the claims decided by those alone, and a paragraph says so.
"""

from __future__ import annotations

from pathlib import Path

from aftertrain.claims import verdicts as V
from aftertrain.claims.catalogue import CLAIMS
from aftertrain.experiments import tables as ET
from aftertrain.experiments.article import ARTICLE
from aftertrain.prune.masks import Method
from aftertrain.report.document import Document, ours_cell, verdict_cell_text
from aftertrain.report.markdown import DASH, markdown_table, verdict_mark
from aftertrain.report.plots import UNTRAINED
from aftertrain.report.reading import LedgerFile

TITLE = "The claims on several models"
FLIP_TITLE = "Does a model of the article's quality reproduce them?"
#: One line style per model, in the order given (the article's points dotted, in grey).
MODEL_STYLES = ("o-", "s--", "^-.", "v-", "D--", "P-.")


def model_label(ledger: LedgerFile) -> str:
    """A short name for a ledger's model: the bundled name its metadata
    gives, or a checkpoint path's file stem; without metadata, ``<label>``
    of a ledger file ``claims-<label>.json``, else ``reference`` (ledgers
    from before ``--aftertrain-model`` are the reference's)."""
    name = str(ledger.meta.get("model") or "")
    if not name:
        stem = Path(ledger.source).stem
        return stem[len("claims-") :] if stem.startswith("claims-") else "reference"
    return Path(name).stem if ("/" in name or name.endswith(".pt")) else name


def claims_header(labels: list[str]) -> list[str]:
    """The header of the claims table over models ``labels``: ID, claim, article, then
    ``ours (m)`` and ``verdict (m)`` per model."""
    return ["ID", "claim", "article"] + [h for m in labels for h in (f"ours ({m})", f"verdict ({m})")]


def claims_rows_per_model(ledgers: dict[str, LedgerFile]) -> list[list[str]]:
    """One row per claim: ID, the claim, the article's figure, then per model
    its figures and its verdict (with the parts not run beside it)."""

    def verdict(led: LedgerFile, claim_id: str) -> str:
        note = (
            f" ({led.model_free_from.get('model')}'s run: no test of it reads the model)"
            if led.taken_whole(claim_id)
            else ""
        )
        return verdict_cell_text(led, claim_id, note)

    return [
        [c.id, f"{c.title}: {c.statement}", c.article or DASH]
        + [cell for led in ledgers.values() for cell in (ours_cell(led, c.id), verdict(led, c.id))]
        for c in CLAIMS.values()
    ]


def claims_table_per_model(ledgers: dict[str, LedgerFile]) -> str:
    """The claims table over ``ledgers`` (label to ledger) in markdown: :func:`claims_header` and
    :func:`claims_rows_per_model`."""
    return markdown_table(claims_header(list(ledgers)), claims_rows_per_model(ledgers))


def _style(i: int) -> str:
    return MODEL_STYLES[i % len(MODEL_STYLES)]


def section(doc: Document, ledgers: dict[str, LedgerFile]) -> None:
    """The overlay plots: bits and sparsity, one line per model and configuration."""
    losses = ", ".join(
        f"{m} {led.table(ET.B1).reference:.4f}" if led.table(ET.B1) else f"{m} {DASH}"
        for m, led in ledgers.items()
    )
    doc.add(
        f"Validation loss of each model (B1): {losses}; the article's model "
        f"{ARTICLE.b1.reference:.4f}. The verdict columns of *All claims* are each model's "
        "own ledger; the sections above render the first model's."
    )
    for m, led in ledgers.items():
        if led.model_free_from:
            doc.add(model_free_text(m, led))
    _bits_plot(doc, ledgers)
    _sparsity_plot(doc, ledgers)


def model_free_text(name: str, ledger: LedgerFile) -> str:
    """What a run that took its model-free outcomes from another says in the report."""
    src = ledger.model_free_from
    whole = [c for c in CLAIMS if ledger.taken_whole(c)]
    return (
        f"On `{name}` only the tests that read the model ran. The {src.get('tests')} claim "
        f"tests that do not read it (their outcome is the same on any model) were not run "
        f"again: their outcomes are those of `{src.get('model')}`'s run of the same commit"
        + (f" (every test of {', '.join(whole)}; some tests of the others)" if whole else "")
        + "."
    )


def _bits_plot(doc: Document, ledgers: dict[str, LedgerFile]) -> None:
    have = {m: led.table(ET.Q4) for m, led in ledgers.items() if led.table(ET.Q4)}
    if not have:
        return doc.missing("Q4 on any model")

    def draw(ax):
        for i, (m, q4) in enumerate(have.items()):
            xs = [r.bits for r in q4.rows]
            ax.plot(xs, [r.per_tensor for r in q4.rows], _style(i), color="C0", label=f"per-tensor ({m})")
            ax.plot(xs, [r.per_channel for r in q4.rows], _style(i), color="C1", label=f"per-channel ({m})")
        art = ARTICLE.q4.rows
        ax.plot(
            [a.bits for a in art],
            [a.per_tensor for a in art],
            "x:",
            color="0.4",
            label="per-tensor (published)",
        )
        ax.plot(
            [a.bits for a in art],
            [a.per_channel for a in art],
            "+:",
            color="0.2",
            label="per-channel (published)",
        )
        b1 = next((led.table(ET.B1) for led in ledgers.values() if led.table(ET.B1)), None)
        if b1:
            ax.axhline(b1.bigram, color="gray", ls="--", lw=1, label="bigram")
        ax.axhline(UNTRAINED, color="r", ls=":", lw=1, label="untrained ln 100")
        ticks = sorted(
            {r.bits for q4 in have.values() for r in q4.rows} | {a.bits for a in art}, reverse=True
        )
        ax.set_xticks(ticks, [str(b) for b in ticks])
        ax.invert_xaxis()
        ax.set(
            xlabel="bits per weight",
            ylabel="validation loss (nats)",
            title="Loss against bits, per model (Q4)",
        )
        return "Validation loss against bits: one line per model and granularity, the article's points"

    doc.plot("models_quant_bits", draw)


def _sparsity_plot(doc: Document, ledgers: dict[str, LedgerFile]) -> None:
    have = {m: led.table(ET.P1) for m, led in ledgers.items() if led.table(ET.P1)}
    if not have:
        return doc.missing("P1 on any model")
    methods = (Method.GLOBAL, Method.LAYER, Method.RANDOM)

    def draw(ax):
        for i, (m, p1) in enumerate(have.items()):
            xs = [100 * r.sparsity for r in p1]
            for j, method in enumerate(methods):
                ax.plot(
                    xs, [r.loss(method) for r in p1], _style(i), color=f"C{j}", label=f"{method.value} ({m})"
                )
        for j, method in enumerate(methods):
            ax.plot(
                [100 * a.sparsity for a in ARTICLE.p1],
                [a.loss(method) for a in ARTICLE.p1],
                "x:",
                color=f"C{j}",
                alpha=0.5,
                label=f"{method.value} (published)",
            )
        ax.axhline(UNTRAINED, color="r", ls=":", lw=1, label="untrained ln 100")
        ax.set(
            xlabel="sparsity of the 2-D weights (%)",
            ylabel="validation loss (nats)",
            title="Loss against sparsity, per model (P1)",
        )
        return "Validation loss against sparsity: one line per model and method, the article's points"

    doc.plot("models_prune_sparsity", draw)


def flips(primary: LedgerFile, other: LedgerFile) -> tuple[list[str], list[str]]:
    """``(not_on_primary, lost_on_other)``: the claims that do not reproduce
    on the primary model, and the claims that hold on the primary but not on
    the other model (does not reproduce or broken there)."""
    not_on_primary = [c for c in CLAIMS if primary.verdict(c) == V.DOES_NOT_REPRODUCE]
    lost = [
        c
        for c in CLAIMS
        if primary.verdict(c) == V.HOLDS and other.verdict(c) in (V.DOES_NOT_REPRODUCE, V.BROKEN)
    ]
    return not_on_primary, lost


def flip_section(doc: Document, ledgers: dict[str, LedgerFile]) -> None:
    """For each claim that does not reproduce on the first model, whether it
    reproduces on each other model, with both figures; then the reverse."""
    (first, primary), *others = ledgers.items()
    doc.add(f"## {FLIP_TITLE}")
    doc.add(
        f"The README explains the claims that do not reproduce on `{first}` by its quality: "
        "a better model degrades more gently. Here each of them on the other models, with "
        "the figures of both runs (a claim *reproduces* on a model when it holds there)."
    )
    for other_name, other in others:
        not_on_primary, lost = flips(primary, other)
        header = _flip_header(first, other_name)
        if not not_on_primary:
            doc.add(f"Every claim that `{first}` covers holds or is inconclusive there; nothing to compare.")
        else:
            rows = [
                [*_flip_row(c, primary, other), "**yes**" if other.verdict(c) == V.HOLDS else "no"]
                for c in not_on_primary
            ]
            flipped = [r[0] for r in rows if r[-1] == "**yes**"]
            doc.add(
                f"**Does not reproduce on `{first}`: on `{other_name}`?** "
                f"({len(flipped)} of {len(rows)} reproduce there"
                + (f": {', '.join(flipped)}" if flipped else "")
                + ")\n\n"
                + markdown_table([*header, "reproduces"], rows)
            )
        if lost:
            doc.add(
                f"**Holds on `{first}` but not on `{other_name}`** ({', '.join(lost)})\n\n"
                + markdown_table(header, [_flip_row(c, primary, other) for c in lost])
            )


def _flip_header(first: str, other_name: str) -> list[str]:
    """The columns of :func:`_flip_row` for the models ``first`` and ``other_name``."""
    return [
        "ID",
        "claim",
        "article",
        f"ours ({first})",
        f"ours ({other_name})",
        f"verdict ({other_name})",
    ]


def _flip_row(c: str, primary: LedgerFile, other: LedgerFile) -> list[str]:
    """Claim ``c`` on two models: its ID, title, the article's figure, ours
    on each and its verdict on ``other``."""
    return [
        c,
        CLAIMS[c].title,
        CLAIMS[c].article or DASH,
        ours_cell(primary, c),
        ours_cell(other, c),
        verdict_mark(other.verdict(c)),
    ]
