"""Writing the report: report.md and its plots (rendered by :mod:`.rendering`)
and the README's claims table, from ledgers already read."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from aftertrain.claims.catalogue import CLAIMS
from aftertrain.core.io import atomic_write
from aftertrain.report import multimodel
from aftertrain.report import sweep as sweep_section
from aftertrain.report.markdown import markdown_table, verdict_mark
from aftertrain.report.paths import (  # noqa: F401 (re-exported: the report's folders)
    COMMITTED,
    DEFAULT_MODELS,
    DEFAULT_OUT,
    PRIMARY_LEDGER,
    SWEEP_FILE,
    check_output_folder,
    ledger_file,
)
from aftertrain.report.reading import (
    LedgerFile,
    ReportError,
    read_ledger,
)
from aftertrain.report.rendering import render

README_BEGIN = "<!-- claims table: written by `aftertrain report --update-committed` -->"
README_END = "<!-- end of claims table -->"


def read_report_ledgers(folder: str | os.PathLike) -> tuple[LedgerFile, dict[str, LedgerFile]]:
    """The primary ledger of a report folder and the other models' (by label),
    as :func:`main` writes them (``claims.json``, ``claims-<label>.json``)."""
    folder = Path(folder)
    primary = read_ledger(folder / PRIMARY_LEDGER)
    others = {}
    for path in sorted(folder.glob("claims-*.json")):
        led = read_ledger(path)
        others[multimodel.model_label(led)] = led
    return primary, others


def read_report_sweep(folder: str | os.PathLike) -> list[dict] | None:
    """The sweep points of a report folder, or None when it has no sweep file."""
    path = Path(folder) / SWEEP_FILE
    return sweep_section.read_sweep(path) if path.is_file() else None


def build(
    ledger: LedgerFile,
    out: str | os.PathLike,
    checkout: Path | None = None,
    log: Callable[[str], None] = lambda s: None,
    others: dict[str, LedgerFile] | None = None,
    sweep: list[dict] | None = None,
) -> Path:
    """Write ``report.md`` and its plots into ``out`` (each file atomically);
    returns the report's path. ``others`` and ``sweep``: see :func:`render`."""
    out = Path(out)
    check_output_folder(out)
    out.mkdir(parents=True, exist_ok=True)
    doc = render(ledger, checkout, log, others, sweep)
    for plot in doc.plots.values():
        atomic_write(out / f"{plot.name}.png", plot.png)
    return atomic_write(out / "report.md", doc.markdown())


def update_readme(readme: Path, ledger: LedgerFile, others: dict[str, LedgerFile] | None = None) -> None:
    """Replace the claims table between the README's markers with this
    ledger's (atomically; a verdict column per model with ``others``); the
    markers must be there."""
    if not Path(readme).is_file():
        raise ValueError(f"readme must be an existing file, got {str(readme)!r}")
    text = readme.read_text()
    if README_BEGIN not in text or README_END not in text:
        raise ReportError(f"{readme} has no claims-table markers ({README_BEGIN!r} ... {README_END!r})")
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    atomic_write(readme, head + README_BEGIN + "\n" + readme_table(ledger, others) + "\n" + README_END + tail)


def readme_rows(ledger: LedgerFile, others: dict[str, LedgerFile] | None = None) -> list[list[str]]:
    """The README's claims table, a line per claim: its ID, the article's
    words (the claim's title in the catalogue), how it reads on any model
    (the catalogue's ``any_model``) and its verdict on each model, the
    primary ``ledger``'s first (its figures and what stands beside each
    verdict are in report.md)."""
    ledgers = [ledger, *(others or {}).values()]
    return [
        [c.id, c.title, c.any_model] + [verdict_mark(led.verdict(c.id)) for led in ledgers]
        for c in CLAIMS.values()
    ]


def readme_header(ledger: LedgerFile, others: dict[str, LedgerFile] | None = None) -> list[str]:
    """The README table's header: ID, claim, on any model, then ``verdict (model)`` per model."""
    labels = [multimodel.model_label(ledger), *(others or {})]
    return ["ID", "claim", "on any model"] + [f"verdict ({label})" for label in labels]


def readme_table(ledger: LedgerFile, others: dict[str, LedgerFile] | None = None) -> str:
    """The README's claims table in markdown (:func:`readme_header`, :func:`readme_rows`)."""
    return markdown_table(readme_header(ledger, others), readme_rows(ledger, others))
