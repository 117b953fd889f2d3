"""Where the report is written and read: the output folders, the ledgers'
file names, and the check that an output folder can be written. Imports
neither torch nor the report's sections, so ``aftertrain report``'s usage
errors answer before torch loads."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from aftertrain.report.reading import ReportError

#: Where ``aftertrain report`` writes unless told otherwise: ignored by git.
DEFAULT_OUT = Path("build") / "report"
#: The committed report, inside the checkout (``--update-committed``).
COMMITTED = "report"
#: The models ``aftertrain report`` runs the suite on unless ``--models`` says otherwise:
#: the first is the primary one (its sections, its README verdicts first).
DEFAULT_MODELS = ("reference", "article")
#: The primary model's ledger in the output folder; every other model's is claims-<label>.json.
PRIMARY_LEDGER = "claims.json"
#: The sweep file ``aftertrain sweep`` writes and the report renders when present.
SWEEP_FILE = "sweep.json"


def check_output_folder(out: Path, flag: str = "--out") -> None:
    """Refuse, before any work, an output folder that is a file or cannot be
    created or written."""
    if out.exists() and not out.is_dir():
        raise ReportError(f"{flag} {out} is a file; give a folder (created if missing)")
    parent = out
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise ReportError(f"{flag} {out}: {parent} is a file, so the folder cannot be created")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ReportError(f"{flag} {out}: {parent} is not writable")
    try:  # os.access says yes to root everywhere: try it
        os.rmdir(tempfile.mkdtemp(prefix=".aftertrain-", dir=parent))
    except OSError as err:
        raise ReportError(f"{flag} {out}: cannot create a folder in {parent} ({err.strerror})") from None


def ledger_file(label: str, primary: bool) -> str:
    """The file name of a model's ledger in a report folder."""
    return PRIMARY_LEDGER if primary else f"claims-{label}.json"
