"""The claims ledger file: one format, written by the pytest plugin
(``pytest --claims-json FILE``, :mod:`aftertrain.ledger`) and read by the
report (:mod:`aftertrain.report`). The JSON written is the JSON read back
(pytest-benchmark's storage pattern): :meth:`LedgerFile.to_json` and
:meth:`LedgerFile.from_json` are inverses, and a file of another
:data:`FORMAT` is refused with the command that writes a current one.

Layout (format 2)::

    {"format": 2,
     "meta": {date, commit, cpu, torch, threads, load1, model, model_sha256, quick,
              [model_free_from]},
     "claims": [{"id", "title", "statement", "article", "verdict",
                 "defining": [part, ...], "undecided": [{"part", "what", "reason"}],
                 "not_run": [{"part", "reason"}], "parts": {part: verdict},
                 "beside": {part: {outcome: count}},
                 "reasons": [...], "measured": [...],
                 "tests": [{"nodeid", "outcome", "reason", "xfail_reason",
                            "measured", "part", "not_run", "reads_model"}]}],
     "tables": {name: record},
     "model_free_tables": [name, ...]}

``reads_model`` (a test's outcome may depend on the model:
:func:`aftertrain.ledger.model.reads_model`) and ``model_free_tables`` (the
tables written by tests that do not read it) came later in format 2: a file
without them reads as ``reads_model`` None (not known) and no such tables.
``meta["model_free_from"]`` is present when the run took the outcomes of
the tests that do not read the model from an earlier run's ledger
(``pytest --model-free-from FILE``): ``{"ledger", "model", "model_sha256",
"commit", "tests"}`` of that run.

``defining``, ``undecided`` and ``beside`` (:mod:`aftertrain.claims.parts`:
the claim's defining parts, those that did not run with why, and the
outcomes of the tests beside the claim, of the method and of other models)
and the verdict ``not decided here`` came later in format 2: a file without
them reads as no defining part recorded, none undecided, nothing beside.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from aftertrain.claims import verdicts as V
from aftertrain.claims.catalogue import CLAIMS
from aftertrain.core.io import atomic_write

#: The version of the layout above; bumped when a field changes meaning.
FORMAT = 2


class LedgerFormatError(ValueError):
    """A file that is not a claims ledger of this version's format."""


@dataclass(frozen=True)
class NotRun:
    """A part of a claim that did not run, and why."""

    part: str
    reason: str


@dataclass(frozen=True)
class Undecided:
    """A defining part of a claim that did not run: the ``part``, ``what`` it
    is for this claim, and why it did not run."""

    part: str
    what: str
    reason: str


@dataclass(frozen=True)
class TestEntry:
    """One claim-tagged test of the run (its strongest phase outcome)."""

    nodeid: str
    outcome: str | None
    reason: str | None = None
    xfail_reason: str | None = None
    measured: tuple[str, ...] = ()
    part: str = "assertions"
    not_run: tuple[NotRun, ...] = ()
    #: whether the outcome may depend on the model (None: the file does not say)
    reads_model: bool | None = None


@dataclass(frozen=True)
class ClaimEntry:
    """One claim of CLAIMS.md with the verdict its tests gave."""

    id: str
    verdict: str
    title: str = ""
    statement: str = ""
    article: str = ""
    not_run: tuple[NotRun, ...] = ()
    parts: dict[str, str] = field(default_factory=dict)
    defining: tuple[str, ...] = ()
    undecided: tuple[Undecided, ...] = ()
    #: part -> outcome -> count, of the tests beside the claim (they never decide it)
    beside: dict[str, dict[str, int]] = field(default_factory=dict)
    reasons: tuple[str, ...] = ()
    measured: tuple[str, ...] = ()
    tests: tuple[TestEntry, ...] = ()


@dataclass(frozen=True)
class LedgerFile:
    """The whole file: the run's metadata, one entry per claim, the tables."""

    claims: tuple[ClaimEntry, ...]
    meta: dict = field(default_factory=dict)
    tables: dict = field(default_factory=dict)
    #: the names of the tables written by tests that do not read the model
    model_free_tables: tuple[str, ...] = ()

    def to_json(self) -> dict:
        """The JSON object written to ``--claims-json`` (lists, not tuples)."""
        data = {"format": FORMAT, "meta": dict(self.meta),
                "claims": [asdict(c) for c in self.claims], "tables": dict(self.tables),
                "model_free_tables": list(self.model_free_tables)}
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
                f"format {FORMAT}: write it again with `python -m pytest --claims-json FILE`")
        if not isinstance(data.get("tables", {}), dict):
            raise LedgerFormatError(f"{source} has 'tables' that is not an object")
        if not isinstance(data.get("meta", {}), dict):
            raise LedgerFormatError(f"{source} has 'meta' that is not an object")
        free = data.get("model_free_tables", [])
        if not (isinstance(free, list) and all(isinstance(n, str) for n in free)):
            raise LedgerFormatError(f"{source} has 'model_free_tables' {free!r}; it must be a list "
                                    "of table names")
        claims = tuple(_claim(entry, n, source) for n, entry in enumerate(data["claims"]))
        bad = sorted({c.verdict for c in claims if c.verdict not in V.VERDICTS})
        if bad:
            raise LedgerFormatError(f"{source} has verdicts this version does not know: {bad}; "
                                    f"known: {', '.join(V.VERDICTS)}")
        unknown = sorted({c.id for c in claims} - set(CLAIMS))
        if unknown:
            raise LedgerFormatError(f"{source} names claims this version does not know: {unknown}")
        return cls(claims, dict(data.get("meta") or {}), dict(data.get("tables") or {}),
                   tuple(free))

    def write(self, path: str | os.PathLike) -> Path:
        """Write atomically (a reader never sees half a file)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        return atomic_write(path, json.dumps(self.to_json(), indent=1, default=str) + "\n")


def _not_run(items: object) -> tuple[NotRun, ...]:
    if not isinstance(items, list):
        raise TypeError("not_run")
    return tuple(NotRun(str(n["part"]), str(n["reason"])) for n in items)


def _reads_model(value: object) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"reads_model must be true, false or null, got {value!r}")
    return value


def _claim(entry: object, n: int, source: str) -> ClaimEntry:
    if not isinstance(entry, dict):
        raise LedgerFormatError(f"{source}: claim entry {n} is not an object")
    missing = [k for k in ("id", "verdict") if k not in entry]
    if missing:
        raise LedgerFormatError(f"{source}: claim entry {n} has no {' or '.join(missing)}")
    try:
        tests = tuple(TestEntry(
            nodeid=str(t["nodeid"]), outcome=t.get("outcome"), reason=t.get("reason"),
            xfail_reason=t.get("xfail_reason"), measured=tuple(str(m) for m in t.get("measured", [])),
            part=str(t.get("part", "assertions")), not_run=_not_run(t.get("not_run", [])),
            reads_model=_reads_model(t.get("reads_model")))
            for t in entry.get("tests", []))
        return ClaimEntry(
            id=str(entry["id"]), verdict=str(entry["verdict"]), title=str(entry.get("title", "")),
            statement=str(entry.get("statement", "")), article=str(entry.get("article", "")),
            not_run=_not_run(entry.get("not_run", [])),
            parts={str(k): str(v) for k, v in dict(entry.get("parts", {})).items()},
            defining=tuple(str(p) for p in entry.get("defining", [])),
            undecided=tuple(Undecided(str(u["part"]), str(u["what"]), str(u["reason"]))
                            for u in entry.get("undecided", [])),
            beside={str(p): {str(o): int(n) for o, n in dict(c).items()}
                    for p, c in dict(entry.get("beside", {})).items()},
            reasons=tuple(str(r) for r in entry.get("reasons", [])),
            measured=tuple(str(m) for m in entry.get("measured", [])), tests=tests)
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise LedgerFormatError(f"{source} has a malformed claim entry {n} (bad field {err})") \
            from None
