"""The claims report: every table of the articles beside ours, with plots.

Verdicts and figures both come from one pytest run of this project: the
claims ledger (:mod:`aftertrain.ledger`) gives each claim's verdict, and the
tests attach the tables they measured, which the ledger writes into its
``--claims-json`` file. The report never re-derives a verdict or re-measures
a figure: it renders what the tests found, beside the article's figures
(:data:`aftertrain.experiments.article.ARTICLE`), as ``report.md`` and PNG plots.

Layout: :mod:`.reading` reads the ledger (the only file input);
:mod:`.markdown` formats; :mod:`.document` holds the report being built;
:mod:`.plots` draws; one module per section (:mod:`.baselines`,
:mod:`.quant`, :mod:`.prune`, :mod:`.speculative`); :mod:`.meta` the run's
metadata; :mod:`.rendering` puts the sections together into one document (no
file I/O); :mod:`.assemble` writes it; :mod:`.paths` names the folders and
checks an output folder (torch-free, like :mod:`.reading`: the package
loads its sections on first use). The command that runs the tests and
calls it is :mod:`aftertrain.cli.report`; nothing here starts a process,
parses arguments or prints.
"""

import importlib
import importlib.util

#: Each public name and the module that defines it: loaded on first use, so
#: ``aftertrain.report.paths`` and ``.reading`` (what ``aftertrain
#: report`` checks its arguments with) load without the sections, which
#: import the experiments and torch. No submodule is named like a name it
#: exports (``render`` lives in ``.rendering``): importing a submodule binds
#: its name in the package, which would hide the function.
_NAMES = {
    "COMMITTED": "paths",
    "DEFAULT_OUT": "paths",
    "README_BEGIN": "assemble",
    "README_END": "assemble",
    "build": "assemble",
    "update_readme": "assemble",
    "readme_table": "assemble",
    "readme_rows": "assemble",
    "readme_header": "assemble",
    "claims_rows": "document",
    "claims_table": "document",
    "LedgerFile": "reading",
    "ReportError": "reading",
    "read_ledger": "reading",
    "render": "rendering",
    "summary_counts": "rendering",
}

__all__ = sorted(_NAMES)


def __getattr__(name: str):
    if name in _NAMES:
        return getattr(importlib.import_module(f"aftertrain.report.{_NAMES[name]}"), name)
    if importlib.util.find_spec(f"aftertrain.report.{name}") is not None:  # a submodule, as before
        return importlib.import_module(f"aftertrain.report.{name}")
    raise AttributeError(f"module 'aftertrain.report' has no attribute {name!r}")
