"""The whole report as a document, not written: the header, the claims
table, every section in order (:data:`SECTIONS`), then the claims that do
not reproduce and the broken and inconclusive ones with their reasons.

No file I/O here: :mod:`.reading` reads the ledger, :mod:`.assemble`
writes what this renders.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from aftertrain.claims import verdicts as V
from aftertrain.claims.catalogue import CLAIMS
from aftertrain.claims.ledgerfile import LedgerFile
from aftertrain.report import baselines, meta, multimodel, prune, quant, speculative
from aftertrain.report import sweep as sweep_section
from aftertrain.report.document import Document, claims_table, ours_cell
from aftertrain.report.markdown import DASH, figures

SECTIONS = (baselines, quant, prune, speculative)


def summary_counts(ledger: LedgerFile) -> dict[str, int]:
    """How many claims of the catalogue have each verdict in ``ledger`` (a claim with no test
    counts as ``not covered``); ValueError when ``ledger`` is not a :class:`LedgerFile`."""
    if not isinstance(ledger, LedgerFile):
        raise ValueError(f"ledger must be a LedgerFile (read_ledger), got {type(ledger).__name__}")
    counts: dict[str, int] = {}
    for cid in CLAIMS:
        v = ledger.verdict(cid)
        counts[v] = counts.get(v, 0) + 1
    return counts


def _note_fits_this_run(note: str, ledger: LedgerFile) -> bool:
    """Whether every figure a test's note quotes is one of this run's figures
    or one of the articles' (a note written once may quote a stored run)."""
    known = {f for c in ledger.claims for m in c.measured for f in figures(m)}
    known |= {f for c in CLAIMS.values() for f in figures(c.article)}
    return all(f in known for f in figures(note))


def _findings(doc: Document) -> None:
    led = doc.ledger
    nonrepro = [c for c in CLAIMS if led.verdict(c) == V.DOES_NOT_REPRODUCE]
    if nonrepro:
        doc.add("## What does not reproduce on our model")
        lines = []
        for c in nonrepro:
            line = (
                f"- **{c}** ({CLAIMS[c].title}): article {CLAIMS[c].article or DASH}; "
                f"this run {ours_cell(led, c)}."
            )
            notes = [n for n in led.claim(c).reasons if _note_fits_this_run(n, led)]
            lines.append(line + "".join(f" The test's note: {n}" for n in notes))
        doc.add("\n".join(lines))
    failing = [c for c in CLAIMS if led.verdict(c) in (V.BROKEN, V.INCONCLUSIVE)]
    if failing:
        doc.add("## Broken and inconclusive claims")
        doc.add(
            "\n".join(
                f"- **{c}** ({CLAIMS[c].title}) {led.verdict(c)}: "
                + (
                    " / ".join(r.replace("\n", " ") for r in led.claim(c).reasons)
                    or "no reason recorded (a ledger written before reasons were recorded)"
                )
                for c in failing
            )
        )


def render(
    ledger: LedgerFile,
    checkout: Path | None = None,
    log: Callable[[str], None] = lambda s: None,
    others: dict[str, LedgerFile] | None = None,
    sweep: list[dict] | None = None,
) -> Document:
    """The whole report as a :class:`Document` (markdown and plots), not written.

    ``others``: the ledgers of more models by label (:func:`multimodel.model_label`):
    the claims table gets a verdict column per model, and the multi-model
    sections and "Does a model of the article's quality reproduce them?" come
    after the primary ``ledger``'s sections. ``sweep``: the points of a sweep
    file (:func:`aftertrain.report.sweep.read_sweep`), rendered when given.
    """
    doc = Document(ledger)
    counts = summary_counts(ledger)
    ledgers = {multimodel.model_label(ledger): ledger, **(others or {})}
    doc.add("# aftertrain claims report")
    doc.add(meta.header(ledger, checkout))
    for label, other in (others or {}).items():
        block = meta.header(other, checkout).replace(meta.BEGIN + "\n", "").replace("\n" + meta.END, "")
        doc.add(block.replace("**Run**", f"**Run of `{label}`**"))
    doc.add(
        f"Verdicts and figures from the pytest run recorded in `{Path(ledger.source).name}`; "
        "the article's figures from `aftertrain.claims.catalogue`. "
        + ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
        + "."
        + (
            "\n\n**Quick run**: the `quick` hypothesis profile and a third of the timing "
            "pairs; figures are a first look, not the committed measurement."
            if ledger.quick
            else ""
        )
    )
    doc.add(
        "## All claims\n\n" + (multimodel.claims_table_per_model(ledgers) if others else claims_table(ledger))
    )
    for section in SECTIONS:
        log(f"writing section: {section.TITLE}")
        doc.add(f"## {section.TITLE}")
        section.section(doc)
    if others:
        log(f"writing section: {multimodel.TITLE}")
        doc.add(f"## {multimodel.TITLE}")
        multimodel.section(doc, ledgers)
        multimodel.flip_section(doc, ledgers)
    if sweep:
        log(f"writing section: {sweep_section.TITLE}")
        doc.add(f"## {sweep_section.TITLE}")
        sweep_section.section(doc, sweep)
    _findings(doc)
    return doc
