"""Reading the claims ledger: the report's only input, and the only module of
:mod:`aftertrain.report` that reads files.

The ledger is the JSON that ``pytest --claims-json FILE`` writes, in the
one format of :mod:`aftertrain.claims.ledgerfile` (parsed and validated
there): :func:`read_ledger` returns that
:class:`~aftertrain.claims.ledgerfile.LedgerFile`, which the report reads
claim by claim (``ledger.claim(id)``) and table by table (``ledger.table(SPEC)``).
"""

from __future__ import annotations

import os

from aftertrain.claims.ledgerfile import (  # noqa: F401 (re-exported: where the metadata came from)
    META_FROM_LEDGER,
    META_FROM_REPORT_RUN,
    META_NONE,
    LedgerFile,
    LedgerFormatError,
)
from aftertrain.claims.tables import check_row
from aftertrain.core.io import read_json

#: What ``--quick`` changes in the pytest run behind the report: the ``quick``
#: hypothesis profile (derandomized like ``ci``, 10 examples instead of 25) and
#: timing with a third of the pairs (``AFTERTRAIN_QUICK=1``, read by the
#: benchmarks' ``record_paired``).
QUICK_ENV = {"HYPOTHESIS_PROFILE": "quick", "AFTERTRAIN_QUICK": "1"}


class ReportError(RuntimeError):
    """The claims ledger could not be produced or read, or an output path is
    unusable: a user's mistake, shown as one line by the command line."""


def read_ledger(path: str | os.PathLike) -> LedgerFile:
    """The ledger file at ``path``, checked whole before anything renders it:
    a regular JSON file of bounded size and depth, every number finite
    (:func:`aftertrain.core.io.read_json`), of this version's format
    (:meth:`LedgerFile.from_json`), one entry per claim, and every table one
    this version knows, each row with every field of the type its row type
    says (:func:`aftertrain.claims.tables.check_row`). :class:`ReportError`,
    one line saying why, otherwise."""
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"path must be a file path, got {type(path).__name__}")
    source = os.fspath(path)
    try:
        data = read_json(path, "claims ledger")
    except ValueError as err:
        raise ReportError(str(err)) from None
    try:
        ledger = LedgerFile.from_json(data, source)
    except LedgerFormatError as err:
        raise ReportError(str(err)) from None
    ids = [c.id for c in ledger.claims]
    twice = sorted({i for i in ids if ids.count(i) > 1}, key=ids.index)
    if twice:
        verdicts = "; ".join(
            f"{i}: {', '.join(str(c.verdict) for c in ledger.claims if c.id == i)}" for i in twice
        )
        raise ReportError(
            f"claims ledger {source} has more than one entry for {', '.join(twice)} "
            f"({verdicts}); a ledger holds one entry per claim"
        )
    for name, record in ledger.tables.items():
        problem = table_problem(name, record)
        if problem:
            raise ReportError(f"claims ledger {source}: table {name!r} {problem}")
    return ledger


def table_problem(name: str, record: object) -> str | None:
    """Why the ledger's table ``name`` cannot be rendered (a name this
    version does not know, a record that is not its rows, a field of the
    wrong type), or None."""
    from aftertrain.experiments.tables import SPECS, spec  # torch's import, only for a ledger with tables

    try:
        known = spec(name)
    except ValueError:
        return f"is not a table this version knows ({', '.join(SPECS)})"
    try:
        table = known.from_record(record)
        rows = table.values() if isinstance(table, dict) else table if isinstance(table, list) else [table]
        for row in rows:
            check_row(row)
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        return f"is malformed: {err}"
    return None
