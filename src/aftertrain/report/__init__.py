"""The claims report: every table of the articles beside ours, with plots.

Verdicts and figures both come from one pytest run of this project: the
claims ledger (:mod:`aftertrain.ledger`) gives each claim's verdict, and the
tests attach the tables they measured, which the ledger writes into its
``--claims-json`` file. The report never re-derives a verdict or re-measures
a figure: it renders what the tests found, beside the article's figures
(:data:`aftertrain.claims.catalogue.ARTICLE_TABLES`), as ``report.md`` and PNG plots.

Layout: :mod:`.ledgerfile` reads the ledger (the only file input);
:mod:`.markdown` formats; :mod:`.document` holds the report being built;
:mod:`.plots` draws; one module per section (:mod:`.baselines`,
:mod:`.quant`, :mod:`.prune`, :mod:`.speculative`); :mod:`.meta` the run's
metadata; :mod:`.render` puts the sections together into one document (no
file I/O); :mod:`.assemble` writes it. The command that runs the tests and
calls it is :mod:`aftertrain.cli.report`; nothing here starts a process,
parses arguments or prints.
"""

from aftertrain.report.assemble import (
    COMMITTED,
    DEFAULT_OUT,
    README_BEGIN,
    README_END,
    build,
    update_readme,
)
from aftertrain.report.document import claims_rows, claims_table
from aftertrain.report.ledgerfile import Ledger, ReportError, read_ledger
from aftertrain.report.render import render, summary_counts

__all__ = ["COMMITTED", "DEFAULT_OUT", "README_BEGIN", "README_END", "Ledger", "ReportError",
           "build", "claims_rows", "claims_table", "read_ledger", "render",
           "summary_counts", "update_readme"]
