"""The report being built: its markdown parts, its plots (bytes and data
series, kept so tests can read them back), and the claims table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from aftertrain.claims.catalogue import CLAIMS
from aftertrain.claims.ledgerfile import LedgerFile
from aftertrain.report import plots
from aftertrain.report.markdown import DASH, figures_once, markdown_table, verdict_mark


@dataclass(frozen=True)
class Plot:
    """One plot: file name (without .png), PNG bytes, data series by label."""

    name: str
    png: bytes
    series: dict[str, dict]
    caption: str


@dataclass
class Document:
    """The report being built from one ledger: markdown ``parts`` in order and the ``plots`` by
    file name (PNG bytes and data series), which tests read back."""

    ledger: LedgerFile
    parts: list[str] = field(default_factory=list)
    plots: dict[str, Plot] = field(default_factory=dict)

    def add(self, text: str) -> None:
        """Append the markdown ``text`` as one part (surrounding newlines trimmed)."""
        self.parts.append(text.strip("\n") + "\n")

    def table(self, title: str, claim_ids: tuple[str, ...], header: list[str], rows) -> None:
        """Append a markdown table titled ``title``, the verdicts of ``claim_ids`` beside the
        title, with ``header`` and ``rows`` (lists of cells)."""
        self.add(f"**{title}** ({verdict_cell(self.ledger, *claim_ids)})\n\n" + markdown_table(header, rows))

    def missing(self, name: str) -> None:
        """Append the line saying that the figures of ``name`` were not recorded."""
        self.add(
            f"*No figures for {name}: the test that measures them did not run "
            f"or failed before recording them.*"
        )

    def plot(self, name: str, draw: Callable) -> None:
        """Draw ``draw(ax) -> caption`` (:func:`aftertrain.report.plots.render_plot`), keep the plot as
        ``name`` and append its image link and caption."""
        png, data, caption = plots.render_plot(draw)
        self.plots[name] = Plot(name, png, data, caption)
        self.add(f"![{caption}]({name}.png)\n\n*{caption}*")

    def markdown(self) -> str:
        """The parts added so far, as one markdown text."""
        return "\n".join(self.parts)


def verdict_cell(ledger: LedgerFile, *ids: str) -> str:
    """The verdicts of the claims ``ids`` in ``ledger``, as ``"Q2 holds, Q3 **BROKEN**"``."""
    return ", ".join(f"{i} {verdict_mark(ledger.verdict(i))}" for i in ids)


def ours_cell(ledger: LedgerFile, claim_id: str) -> str:
    """The figures the tests recorded for a claim, each once."""
    return figures_once(list(ledger.claim(claim_id).measured)) or DASH


def verdict_details(ledger: LedgerFile, claim_id: str) -> list[str]:
    """What stands beside a claim's verdict (:meth:`aftertrain.claims.ledgerfile.ClaimEntry.details`):
    the defining parts not run with the parts that ran, the other parts not
    run (``not run: baseline comparison (no baseline for this model)``), the
    tests of the method and of other models."""
    return ledger.claim(claim_id).details()


def verdict_cell_text(ledger: LedgerFile, claim_id: str, note: str = "") -> str:
    """The verdict column of the claims table: the verdict, ``note``, then its details."""
    return "; ".join([verdict_mark(ledger.verdict(claim_id)) + note, *verdict_details(ledger, claim_id)])


def claims_rows(ledger: LedgerFile) -> list[list[str]]:
    """One row per claim: ID, the claim in a line, the article's figure,
    ours (as the tests recorded it), verdict (with what stands beside it:
    :func:`verdict_details`)."""
    return [
        [
            c.id,
            f"{c.title}: {c.statement}",
            c.article or DASH,
            ours_cell(ledger, c.id),
            verdict_cell_text(ledger, c.id),
        ]
        for c in CLAIMS.values()
    ]


CLAIMS_HEADER = ["ID", "claim", "article", "ours", "verdict"]


def claims_table(ledger: LedgerFile) -> str:
    """The claims table of ``ledger`` in markdown: :data:`CLAIMS_HEADER` and :func:`claims_rows`."""
    return markdown_table(CLAIMS_HEADER, claims_rows(ledger))


#: Claims whose "ours" figures are timings: they move from run to run, so the
#: check that the README and the committed report agree with the ledger
#: compares their verdicts, not their figures.
TIMING_CLAIMS = frozenset({"Q11", "S5", "S6", "S7", "X2", "X3", "X4", "X8", "P7"})


def deterministic_rows(rows: list[list[str]]) -> list[list[str]]:
    """Claims-table rows with the timing figures left out (see TIMING_CLAIMS):
    ID, claim, article, then an (ours, verdict) pair per model."""
    return [
        row[:3]
        + [("(timing)" if row[0] in TIMING_CLAIMS and i % 2 == 0 else c) for i, c in enumerate(row[3:])]
        for row in rows
    ]
