"""The structured result every check of :mod:`aftertrain.checks` returns."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Row:
    """One measurement of a check: which ``case`` of the battery, which
    ``check`` (e.g. "chi-square", "tv", "acceptance", "support",
    "round-trip"), the ``position`` (drafted position or bonus, where one
    applies) and the figures that decided it. Fields that do not apply are
    None."""

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


@dataclass
class Report:
    """What a check found: ``subject`` names the implementation and battery,
    ``rows`` every measurement, ``failures`` one line per failed row or
    problem (an exception, a NaN, an output out of range)."""

    subject: str
    rows: list[Row] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when nothing failed."""
        return not self.failures

    def add(self, row: Row) -> Row:
        """Record ``row``; a failed row adds its failure line."""
        self.rows.append(row)
        if not row.passed:
            where = "" if row.position is None else f" position {row.position}"
            self.failures.append(f"{row.case}{where}: {row.check} failed: {row.detail}".rstrip(": "))
        return row

    def fail(self, line: str) -> None:
        """Record a problem that is not a measured row (an exception, a NaN)."""
        self.failures.append(line)

    def __str__(self) -> str:
        head = (f"{self.subject}: {'PASSED' if self.passed else 'FAILED'} "
                f"({len(self.rows)} checks, {len(self.failures)} failures)")
        return "\n".join([head, *(f"  - {f}" for f in self.failures)])

    def raise_for_failures(self) -> None:
        """Raise AssertionError listing every failure; return None if none."""
        if self.failures:
            raise AssertionError(str(self))
