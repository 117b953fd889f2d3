"""The claims ledger file: one typed structure from the test reports to the
report's cells. The pytest plugin (:mod:`aftertrain.ledger.state`) builds
its entries, writes it (``pytest --claims-json FILE``) and the report
(:mod:`aftertrain.report`) reads it back and renders it through
:meth:`LedgerFile.claim` and :meth:`LedgerFile.table`. The JSON written is
the JSON read back (pytest-benchmark's storage pattern): :meth:`LedgerFile.to_json`
and :meth:`LedgerFile.from_json` are inverses, the one round trip being the
file, and a file of another :data:`FORMAT` is refused with the command that
writes a current one. Outcomes, verdicts and parts are the enums of
:mod:`aftertrain.claims.verdicts` and :mod:`aftertrain.claims.parts`.

The layout is specified once, as a JSON Schema shipped beside this module
(:data:`SCHEMA_PATH`, ``claims.schema.json``: every key, its type and the
enums of the verdicts, outcomes and parts); docs/ledger.md describes it and
what each verdict means. The tests validate every ledger they write against it.

The reader is more lenient than the schema in one way: a format-2 file
written before ``reads_model``, ``model_free_tables``, ``defining``,
``undecided`` and ``beside`` were added reads as ``reads_model`` None (not
known), no model-free tables, no defining part recorded, none undecided and
nothing beside; the schema describes the file as written now, every key present.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from aftertrain.claims.catalogue import CLAIMS
from aftertrain.claims.parts import NOT_RUN, NotRun, Part, Undecided, details_text
from aftertrain.claims.tables import TableSpec
from aftertrain.claims.verdicts import (
    NOT_COVERED,
    NOT_DECIDED,
    OUTCOMES,
    SKIPPED,
    VERDICTS,
    Outcome,
    Verdict,
)
from aftertrain.core.io import atomic_write

__all__ = [
    "FORMAT",
    "SCHEMA_PATH",
    "ClaimEntry",
    "LedgerFile",
    "LedgerFormatError",
    "NotRun",
    "TestEntry",
    "Undecided",
]

#: The version of the layout (the schema's ``format``); bumped when a field changes meaning.
FORMAT = 2
#: The JSON Schema (draft 2020-12) of the file ``pytest --claims-json FILE`` writes,
#: shipped in the package: a user's CI validates a ledger against it (docs/ledger.md).
SCHEMA_PATH = Path(__file__).with_name("claims.schema.json")

#: Where a ledger's run metadata came from (:attr:`LedgerFile.meta_source`).
META_FROM_LEDGER = "ledger"
META_FROM_REPORT_RUN = "report run"
META_NONE = "none"


class LedgerFormatError(ValueError):
    """A file that is not a claims ledger of this version's format."""


@dataclass(frozen=True)
class TestEntry:
    """One claim-tagged test of the run (its strongest phase outcome)."""

    __test__ = False  # a record of a test, not one: pytest must not collect it where imported
    nodeid: str
    outcome: Outcome | None
    reason: str | None = None
    xfail_reason: str | None = None
    measured: tuple[str, ...] = ()
    part: Part = Part.ASSERTIONS
    not_run: tuple[NotRun, ...] = ()
    #: whether the outcome may depend on the model (None: the file does not say)
    reads_model: bool | None = None


@dataclass(frozen=True)
class ClaimEntry:
    """One claim of CLAIMS.md with the verdict its tests gave."""

    id: str
    verdict: Verdict
    title: str = ""
    statement: str = ""
    article: str = ""
    not_run: tuple[NotRun, ...] = ()
    #: part -> its verdict, or :data:`aftertrain.claims.parts.NOT_RUN`
    parts: dict[Part, Verdict | str] = field(default_factory=dict)
    defining: tuple[Part, ...] = ()
    undecided: tuple[Undecided, ...] = ()
    #: part -> outcome -> count, of the tests beside the claim (they never decide it)
    beside: dict[Part, dict[Outcome, int]] = field(default_factory=dict)
    reasons: tuple[str, ...] = ()
    measured: tuple[str, ...] = ()
    tests: tuple[TestEntry, ...] = ()

    def details(self) -> list[str]:
        """What stands beside the verdict (:func:`aftertrain.claims.parts.details_text`):
        the defining parts not run with the parts that ran, the other parts
        not run, the tests of the method and of other models."""
        return details_text(self.undecided, self.not_run, self.parts, self.beside)

    def verdict_text(self) -> str:
        """The verdict, marked when some part did not run: ``holds`` or
        ``holds (part not run)``."""
        partly = self.not_run and self.verdict not in (SKIPPED, NOT_COVERED, NOT_DECIDED)
        return f"{self.verdict} (part not run)" if partly else str(self.verdict)

    @property
    def model_free(self) -> bool:
        """Whether the claim has tests and none of them reads the model (a
        file that does not say whether a test reads it: False)."""
        return bool(self.tests) and all(t.reads_model is False for t in self.tests)


@dataclass(frozen=True)
class LedgerFile:
    """The whole file: the run's metadata, one entry per claim, the tables;
    and, not written to the file, where it was read from (``source``), where
    its metadata came from (``meta_source``) and pytest's exit status when
    the report ran the tests (``pytest_status``; None: read from a file)."""

    claims: tuple[ClaimEntry, ...]
    meta: dict = field(default_factory=dict)
    tables: dict = field(default_factory=dict)
    #: the names of the tables written by tests that do not read the model
    model_free_tables: tuple[str, ...] = ()
    source: str = field(default="ledger", compare=False)
    meta_source: str = field(default=META_NONE, compare=False)
    pytest_status: int | None = field(default=None, compare=False)

    def claim(self, claim_id: str) -> ClaimEntry:
        """The entry of claim ``claim_id`` (one of CLAIMS.md's IDs); ``not
        covered`` when the file has none; ``ValueError`` for an unknown ID."""
        for c in self.claims:
            if c.id == claim_id:
                return c
        if claim_id not in CLAIMS:
            raise ValueError(f"claim_id must be a claim of CLAIMS.md ({', '.join(CLAIMS)}), got {claim_id!r}")
        return ClaimEntry(claim_id, NOT_COVERED)

    def verdict(self, claim_id: str) -> Verdict:
        """The verdict of claim ``claim_id`` (:meth:`claim`)."""
        return self.claim(claim_id).verdict

    def table(self, spec: TableSpec):
        """The typed table ``spec`` names (:meth:`aftertrain.claims.tables.TableSpec.from_record`),
        or None when the run did not record it."""
        if not isinstance(spec, TableSpec):
            raise ValueError(f"spec must be a TableSpec (aftertrain.experiments.tables), got {spec!r}")
        data = self.tables.get(spec.name)
        return None if data is None else spec.from_record(data)

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
        return self.model_free_from is not None and self.claim(claim_id).model_free

    @property
    def quick(self) -> bool | None:
        """Whether the run was a quick one, from its own metadata; None when
        the ledger does not say."""
        q = self.meta.get("quick")
        return None if q is None else bool(q)

    def to_json(self) -> dict:
        """The JSON object written to ``--claims-json`` (lists, not tuples)."""
        data = {
            "format": FORMAT,
            "meta": dict(self.meta),
            "claims": [asdict(c) for c in self.claims],
            "tables": dict(self.tables),
            "model_free_tables": list(self.model_free_tables),
        }
        return json.loads(json.dumps(data, default=str))

    @classmethod
    def from_json(cls, data: object, source: str = "ledger") -> LedgerFile:
        """Read the object :meth:`to_json` writes; :class:`LedgerFormatError`
        naming ``source`` and the field for anything else."""
        if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
            raise LedgerFormatError(f"{source} is not a claims ledger (no 'claims' list)")
        if data.get("format") != FORMAT:
            raise LedgerFormatError(
                f"{source} is a claims ledger of format {data.get('format')!r}; this version reads "
                f"format {FORMAT}: write it again with `python -m pytest --claims-json FILE`"
            )
        if not isinstance(data.get("tables", {}), dict):
            raise LedgerFormatError(f"{source} has 'tables' that is not an object")
        if not isinstance(data.get("meta", {}), dict):
            raise LedgerFormatError(f"{source} has 'meta' that is not an object")
        free = data.get("model_free_tables", [])
        if not (isinstance(free, list) and all(isinstance(n, str) for n in free)):
            raise LedgerFormatError(
                f"{source} has 'model_free_tables' {free!r}; it must be a list of table names"
            )
        bad = sorted(
            {
                str(e.get("verdict"))
                for e in data["claims"]
                if isinstance(e, dict) and "verdict" in e and e["verdict"] not in VERDICTS
            }
        )
        if bad:
            raise LedgerFormatError(
                f"{source} has verdicts this version does not know: {bad}; known: {', '.join(VERDICTS)}"
            )
        outcomes = sorted(
            {
                str(t.get("outcome"))
                for e in data["claims"]
                if isinstance(e, dict)
                for t in e.get("tests", [])
                if isinstance(t, dict) and t.get("outcome") is not None and t["outcome"] not in OUTCOMES
            }
        )
        if outcomes:
            raise LedgerFormatError(
                f"{source}: test outcomes {outcomes} are not outcomes; allowed: {', '.join(OUTCOMES)}"
            )
        claims = tuple(_claim(entry, n, source) for n, entry in enumerate(data["claims"]))
        unknown = sorted({c.id for c in claims} - set(CLAIMS))
        if unknown:
            raise LedgerFormatError(f"{source} names claims this version does not know: {unknown}")
        meta = dict(data.get("meta") or {})
        return cls(
            claims,
            meta,
            dict(data.get("tables") or {}),
            tuple(free),
            source,
            META_FROM_LEDGER if meta else META_NONE,
        )

    def write(self, path: str | os.PathLike) -> Path:
        """Write atomically (a reader never sees half a file)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        return atomic_write(path, json.dumps(self.to_json(), indent=1, default=str) + "\n")


def _not_run(items: object) -> tuple[NotRun, ...]:
    if not isinstance(items, list):
        raise TypeError("not_run")
    return tuple(NotRun(Part(n["part"]), str(n["reason"])) for n in items)


def _reads_model(value: object) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"reads_model must be true, false or null, got {value!r}")
    return value


def _part_verdict(value: object) -> Verdict | str:
    return NOT_RUN if value == NOT_RUN else Verdict(value)


def _claim(entry: object, n: int, source: str) -> ClaimEntry:
    if not isinstance(entry, dict):
        raise LedgerFormatError(f"{source}: claim entry {n} is not an object")
    missing = [k for k in ("id", "verdict") if k not in entry]
    if missing:
        raise LedgerFormatError(f"{source}: claim entry {n} has no {' or '.join(missing)}")
    try:
        tests = tuple(
            TestEntry(
                nodeid=str(t["nodeid"]),
                outcome=None if t.get("outcome") is None else Outcome(t["outcome"]),
                reason=t.get("reason"),
                xfail_reason=t.get("xfail_reason"),
                measured=tuple(str(m) for m in t.get("measured", [])),
                part=Part(t.get("part", Part.ASSERTIONS)),
                not_run=_not_run(t.get("not_run", [])),
                reads_model=_reads_model(t.get("reads_model")),
            )
            for t in entry.get("tests", [])
        )
        return ClaimEntry(
            id=str(entry["id"]),
            verdict=Verdict(entry["verdict"]),
            title=str(entry.get("title", "")),
            statement=str(entry.get("statement", "")),
            article=str(entry.get("article", "")),
            not_run=_not_run(entry.get("not_run", [])),
            parts={Part(k): _part_verdict(v) for k, v in dict(entry.get("parts", {})).items()},
            defining=tuple(Part(p) for p in entry.get("defining", [])),
            undecided=tuple(
                Undecided(Part(u["part"]), str(u["what"]), str(u["reason"]))
                for u in entry.get("undecided", [])
            ),
            beside={
                Part(p): {Outcome(o): int(n) for o, n in dict(c).items()}
                for p, c in dict(entry.get("beside", {})).items()
            },
            reasons=tuple(str(r) for r in entry.get("reasons", [])),
            measured=tuple(str(m) for m in entry.get("measured", [])),
            tests=tests,
        )
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise LedgerFormatError(f"{source} has a malformed claim entry {n} (bad field {err})") from None
