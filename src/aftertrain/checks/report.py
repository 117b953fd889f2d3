"""The structured result every check of :mod:`aftertrain.checks` returns.

Every failed row has a class (:data:`SEVERITIES`):

* ``"failure"``: a broken guarantee on weights a trained model has (or on
  any input of the speculative and pruning checks): the report fails;
* ``"edge"``: a finding only at an edge of the number format (a group near
  float32's largest value, where the range or a code's value overflows; a
  group whose scale would be subnormal): true, reported, and the report
  still passes unless it was made ``strict``;
* ``"mismatch"``: the output is another scheme's correct output (a
  convention the declared scheme did not describe): the row's ``fits``
  names that scheme; the report fails (the declaration is wrong), and the
  line says what to declare instead.

A refusal (an implementation that refuses an input the scheme or pattern
leaves undefined, by the rule of :mod:`aftertrain.checks.refusals`) is a
passed row whose ``check`` is ``"refused"``, never a failure. Every row has
a class, :attr:`Row.outcome` (``"class"`` in ``as_dict()``): ``"passed"``,
``"refused"`` or its failed class.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FAILURE, EDGE, MISMATCH = "failure", "edge", "mismatch"
#: The classes of a failed row.
SEVERITIES = (FAILURE, EDGE, MISMATCH)
PASSED, REFUSED = "passed", "refused"
#: The class of any row (:attr:`Row.outcome`, ``"class"`` in ``--json``).
OUTCOMES = (PASSED, REFUSED, *SEVERITIES)


@dataclass(frozen=True)
class Row:
    """One measurement of a check: which ``case`` of the battery, which
    ``check`` (e.g. "chi-square", "tv", "acceptance", "support",
    "round-trip"), the ``position`` (drafted position or bonus, where one
    applies) and the figures that decided it. Fields that do not apply are
    None. ``severity`` classes a failed row (:data:`SEVERITIES`; ignored on
    a passed one); ``fits`` names the scheme a mismatch's output fits."""

    case: str
    check: str
    passed: bool
    position: int | None = None
    statistic: float | None = None
    dof: int | None = None
    p_value: float | None = None
    n: int | None = None
    tv: float | None = None
    tv_threshold: float | None = None
    value: float | None = None
    bound: float | None = None
    detail: str = ""
    severity: str = FAILURE
    fits: str | None = None

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {self.severity!r}")

    @property
    def outcome(self) -> str:
        """The row's class (:data:`OUTCOMES`): ``"refused"`` for a refusal,
        ``"passed"`` for any other passed row, else its ``severity``."""
        if self.passed:
            return REFUSED if self.check == REFUSED else PASSED
        return self.severity

    def line(self) -> str:
        """The one-line account of a failed row."""
        where = "" if self.position is None else f" position {self.position}"
        return f"{self.case}{where}: {self.check} failed: {self.detail}".rstrip(": ")


@dataclass
class Report:
    """What a check found: ``subject`` names the implementation and battery,
    ``rows`` every measurement; ``failures`` one line per row or problem
    that fails the report (a failure, a mismatch, and with ``strict`` an
    edge finding; an exception, a NaN, an output out of range);
    ``mismatches`` and ``edges`` the lines of those classes (a mismatch's
    line is in ``failures`` too, an edge's only with ``strict``)."""

    subject: str
    rows: list[Row] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    edges: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    strict: bool = False

    @property
    def passed(self) -> bool:
        """True when nothing failed: no failure, no mismatch (and no edge
        finding when ``strict``)."""
        return not self.failures

    def add(self, row: Row) -> Row:
        """Record ``row``; a failed row adds its line by its class."""
        self.rows.append(row)
        if row.passed:
            return row
        line = row.line()
        if row.severity == EDGE:
            self.edges.append(line)
            if self.strict:
                self.failures.append(f"edge: {line}")
        elif row.severity == MISMATCH:
            self.mismatches.append(line)
            self.failures.append(f"mismatch: {line}")
        else:
            self.failures.append(line)
        return row

    def fail(self, line: str) -> None:
        """Record a problem that is not a measured row (an exception, a NaN)."""
        self.failures.append(line)

    def verdict(self) -> str:
        """``"PASSED"``, ``"PASSED, 2 edge findings"`` or ``"FAILED"``."""
        if not self.passed:
            return "FAILED"
        n = len(self.edges)
        return "PASSED" if not n else f"PASSED, {n} edge finding{'s' * (n != 1)}"

    def __str__(self) -> str:
        counts = [f"{len(self.rows)} checks", f"{len(self.failures)} failures"]
        if self.mismatches:
            counts.append(f"{len(self.mismatches)} mismatches")
        if self.edges:
            counts.append(f"{len(self.edges)} edge findings" + (" (strict)" if self.strict else ""))
        head = f"{self.subject}: {self.verdict()} ({', '.join(counts)})"
        lines = list(self.failures)
        if not self.strict:
            lines += [f"edge: {e}" for e in self.edges]
        return "\n".join([head, *(f"  - {f}" for f in lines)])

    def as_dict(self) -> dict:
        """The report as plain data (the CLI's ``--json``)."""
        from dataclasses import asdict

        return {
            "subject": self.subject,
            "passed": self.passed,
            "verdict": self.verdict(),
            "strict": self.strict,
            "failures": list(self.failures),
            "mismatches": list(self.mismatches),
            "edges": list(self.edges),
            "rows": [{**asdict(r), "class": r.outcome} for r in self.rows],
        }

    def raise_for_failures(self) -> None:
        """Raise AssertionError listing every failure; return None if none."""
        if self.failures:
            raise AssertionError(str(self))
