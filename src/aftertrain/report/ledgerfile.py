"""Reading the claims ledger: the report's only input, and the only module of
:mod:`aftertrain.report` that reads files or runs the tests.

The ledger is the JSON that ``pytest --claims-json FILE`` writes
(:mod:`aftertrain.ledger`): per claim its verdict, its tests, the figures they
recorded and (newer ledgers) ``"reasons"``; the tables the tests attached;
and (newer ledgers) the run's ``"meta"``. Older ledgers without ``reasons``
or ``meta`` still read: the reasons fall back to the tests' xfail reasons,
and the metadata to what the report can say itself (labelled so).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from aftertrain.claims import verdicts as V
from aftertrain.claims.catalogue import CLAIMS

#: What ``--quick`` changes in the pytest run behind the report: the ``quick``
#: hypothesis profile (derandomized like ``ci``, 10 examples instead of 25) and
#: timing with a third of the pairs (``AFTERTRAIN_QUICK=1``, read by the
#: benchmarks' ``record_paired``).
QUICK_ENV = {"HYPOTHESIS_PROFILE": "quick", "AFTERTRAIN_QUICK": "1"}

#: Where the run's metadata came from (``Ledger.meta_source``).
META_FROM_LEDGER = "ledger"
META_FROM_REPORT_RUN = "report run"
META_NONE = "none"


class ReportError(RuntimeError):
    """The claims ledger could not be produced or read, or an output path is
    unusable: a user's mistake, shown as one line by the command line."""


@dataclass(frozen=True)
class Ledger:
    """Verdicts per claim ID, the figures the tests recorded, the reasons of
    verdicts that are not ``holds``, the tables, and the run's metadata."""

    verdicts: dict[str, str]
    measured: dict[str, list[str]]
    reasons: dict[str, list[str]]
    tables: dict[str, object]
    source: str
    meta: dict = field(default_factory=dict)
    meta_source: str = META_NONE
    #: pytest's exit status when :func:`run_ledger` ran the tests (None: read from a file).
    pytest_status: int | None = None
    #: claim ID -> the parts of it that did not run, each ``{"part", "reason"}``.
    not_run: dict[str, list[dict]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict, source: str) -> Ledger:
        if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
            raise ReportError(f"{source} is not a claims ledger (no 'claims' list)")
        verdicts, measured, reasons, not_run = {}, {}, {}, {}
        try:
            for n, entry in enumerate(data["claims"]):
                missing = [k for k in ("id", "verdict") if k not in entry]
                if missing:
                    raise ReportError(f"{source}: claim entry {n} has no {' or '.join(missing)}")
                cid = entry["id"]
                verdicts[cid] = entry["verdict"]
                measured[cid] = [str(m) for m in entry.get("measured", [])]
                not_run[cid] = [{"part": str(n["part"]), "reason": str(n["reason"])}
                                for n in entry.get("not_run", [])]
                if "reasons" in entry:
                    reasons[cid] = [str(r) for r in entry["reasons"]]
                else:  # a ledger from before "reasons": the xfail reasons
                    reasons[cid] = [t["xfail_reason"] for t in entry.get("tests", [])
                                    if t.get("xfail_reason")]
        except (KeyError, TypeError, AttributeError) as err:
            raise ReportError(f"{source} has a malformed claim entry (bad field {err})") from None
        bad = sorted({v for v in verdicts.values() if v not in V.VERDICTS})
        if bad:
            raise ReportError(f"{source} has verdicts this version does not know: {bad}; "
                              f"known: {', '.join(V.VERDICTS)}")
        if not isinstance(data.get("tables", {}), dict):
            raise ReportError(f"{source} has 'tables' that is not an object")
        unknown = sorted(set(verdicts) - set(CLAIMS))
        if unknown:
            raise ReportError(f"{source} names claims this version does not know: {unknown}")
        meta = data.get("meta")
        if meta is not None and not isinstance(meta, dict):
            raise ReportError(f"{source} has 'meta' that is not an object")
        return cls(verdicts, measured, reasons, data.get("tables", {}), source,
                   dict(meta or {}), META_FROM_LEDGER if meta else META_NONE, not_run=not_run)

    def verdict(self, claim_id: str) -> str:
        return self.verdicts.get(claim_id, V.NOT_COVERED)

    def table(self, name: str):
        return self.tables.get(name)

    @property
    def quick(self) -> bool | None:
        """Whether the run was a quick one, from its own metadata; None when
        the ledger does not say."""
        q = self.meta.get("quick")
        return None if q is None else bool(q)


def read_ledger(path: str | os.PathLike) -> Ledger:
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"path must be a file path, got {type(path).__name__}")
    path = Path(path)
    if path.is_dir():
        raise ReportError(f"claims ledger {path} is a folder; give the JSON file "
                          "written by `pytest --claims-json FILE`")
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
    return Ledger.from_json(data, str(path))
