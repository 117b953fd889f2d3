"""Reading the claims ledger: the report's only input, and the only module of
:mod:`aftertrain.report` that reads files.

The ledger is the JSON that ``pytest --claims-json FILE`` writes, in the
one format of :mod:`aftertrain.claims.ledgerfile` (parsed and validated
there); :class:`Ledger` is the report's view of it: verdicts, figures,
reasons and the parts not run by claim ID, the tables, and the run's
metadata with where it came from.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from aftertrain.claims import verdicts as V
from aftertrain.claims.ledgerfile import LedgerFile, LedgerFormatError

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
    #: claim ID -> its defining parts that did not run, each ``{"part", "what", "reason"}``.
    undecided: dict[str, list[dict]] = field(default_factory=dict)
    #: claim ID -> part -> its verdict or "not run" (aftertrain.claims.parts).
    parts: dict[str, dict[str, str]] = field(default_factory=dict)
    #: claim ID -> part beside the claim -> outcome -> count.
    beside: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    #: the claims that have tests, none of which reads the model (a file that
    #: does not say whether a test reads it names none)
    model_free_claims: frozenset[str] = frozenset()

    @classmethod
    def from_json(cls, data: object, source: str) -> Ledger:
        """The report's view of a ledger file (:class:`aftertrain.claims.ledgerfile.LedgerFile`,
        the one format the plugin writes), read from its JSON object."""
        try:
            file = LedgerFile.from_json(data, source)
        except LedgerFormatError as err:
            raise ReportError(str(err)) from None
        return cls.of(file, source)

    @classmethod
    def of(cls, file: LedgerFile, source: str) -> Ledger:
        """The view of a :class:`LedgerFile` read from ``source``."""
        claims = file.claims
        return cls({c.id: c.verdict for c in claims}, {c.id: list(c.measured) for c in claims},
                   {c.id: list(c.reasons) for c in claims}, file.tables, source, dict(file.meta),
                   META_FROM_LEDGER if file.meta else META_NONE,
                   not_run={c.id: [{"part": n.part, "reason": n.reason} for n in c.not_run]
                            for c in claims},
                   undecided={c.id: [{"part": u.part, "what": u.what, "reason": u.reason}
                                     for u in c.undecided] for c in claims},
                   parts={c.id: dict(c.parts) for c in claims},
                   beside={c.id: dict(c.beside) for c in claims},
                   model_free_claims=frozenset(
                       c.id for c in claims
                       if c.tests and all(t.reads_model is False for t in c.tests)))

    def verdict(self, claim_id: str) -> str:
        return self.verdicts.get(claim_id, V.NOT_COVERED)

    @property
    def model_free_from(self) -> dict | None:
        """The run whose outcomes this one took for the tests that do not read
        the model (``meta["model_free_from"]``: ledger, model, commit, tests), or None."""
        src = self.meta.get("model_free_from")
        return src if isinstance(src, dict) else None

    def taken_whole(self, claim_id: str) -> bool:
        """Whether the claim was decided by tests that do not read the model
        alone, in a run that took such outcomes from :attr:`model_free_from`'s
        (where a claim test was missing from that run's ledger it ran here, so
        "taken" is the rule, not a count)."""
        return self.model_free_from is not None and claim_id in self.model_free_claims

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
