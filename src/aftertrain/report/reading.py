"""Reading the claims ledger: the report's only input, and the only module of
:mod:`aftertrain.report` that reads files.

The ledger is the JSON that ``pytest --claims-json FILE`` writes, in the
one format of :mod:`aftertrain.claims.ledgerfile` (parsed and validated
there): :func:`read_ledger` returns that
:class:`~aftertrain.claims.ledgerfile.LedgerFile`, which the report reads
claim by claim (``ledger.claim(id)``) and table by table (``ledger.table(SPEC)``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from aftertrain.claims.ledgerfile import (  # noqa: F401 (re-exported: where the metadata came from)
    META_FROM_LEDGER,
    META_FROM_REPORT_RUN,
    META_NONE,
    LedgerFile,
    LedgerFormatError,
)

#: What ``--quick`` changes in the pytest run behind the report: the ``quick``
#: hypothesis profile (derandomized like ``ci``, 10 examples instead of 25) and
#: timing with a third of the pairs (``AFTERTRAIN_QUICK=1``, read by the
#: benchmarks' ``record_paired``).
QUICK_ENV = {"HYPOTHESIS_PROFILE": "quick", "AFTERTRAIN_QUICK": "1"}


class ReportError(RuntimeError):
    """The claims ledger could not be produced or read, or an output path is
    unusable: a user's mistake, shown as one line by the command line."""


def read_ledger(path: str | os.PathLike) -> LedgerFile:
    """The ledger file at ``path``; :class:`ReportError` saying why it cannot be read."""
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"path must be a file path, got {type(path).__name__}")
    path = Path(path)
    if path.is_dir():
        raise ReportError(
            f"claims ledger {path} is a folder; give the JSON file written by `pytest --claims-json FILE`"
        )
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ReportError(f"claims ledger {path} does not exist") from None
    except PermissionError:
        raise ReportError(f"claims ledger {path} cannot be read (permission denied)") from None
    except UnicodeDecodeError:
        raise ReportError(f"claims ledger {path} is not a text file (not JSON)") from None
    except json.JSONDecodeError as err:
        raise ReportError(f"claims ledger {path} is not valid JSON: {err}") from None
    try:
        return LedgerFile.from_json(data, str(path))
    except LedgerFormatError as err:
        raise ReportError(str(err)) from None
