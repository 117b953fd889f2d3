"""The claims report: every table of the articles beside ours, with plots.

Verdicts and figures both come from one pytest run of this project: the
claims ledger (:mod:`aftertrain.ledger`) gives each claim's verdict, and the
tests attach the tables they measured, which the ledger writes into its
``--claims-json`` file. The report never re-derives a verdict or re-measures
a figure: it renders what the tests found, beside the article's figures
(:data:`aftertrain.claims.ARTICLE_TABLES`), as ``report.md`` and PNG plots.

Layout: :mod:`.ledgerfile` reads the ledger (the only file input);
:mod:`.markdown` formats; :mod:`.document` holds the report being built;
:mod:`.plots` draws; one module per section (:mod:`.baselines`,
:mod:`.quant`, :mod:`.prune`, :mod:`.speculative`); :mod:`.meta` the run's
metadata; :mod:`.render` puts the sections together into one document (no
file I/O); :mod:`.assemble` writes it and is ``aftertrain report``.
"""

from aftertrain.report.assemble import (
    COMMITTED,
    DEFAULT_OUT,
    README_BEGIN,
    README_END,
    build,
    main,
    update_readme,
)
from aftertrain.report.document import claims_rows, claims_table
from aftertrain.report.ledgerfile import Ledger, ReportError, read_ledger
from aftertrain.report.render import render, summary_counts
from aftertrain.report.sweeprun import sweep_main

__all__ = ["COMMITTED", "DEFAULT_OUT", "README_BEGIN", "README_END", "Ledger", "ReportError",
           "build", "claims_rows", "claims_table", "main", "read_ledger", "render",
           "summary_counts", "sweep_main", "update_readme"]
