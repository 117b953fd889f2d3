"""The registry of the claims' tables: for each name of
:mod:`aftertrain.claims.tables`, the :class:`~aftertrain.claims.tables.TableSpec`
that says what it holds.

The experiments own their row types (:mod:`.quant`, :mod:`.prune`,
:mod:`.speculative`, :mod:`.speedup`); the rows of the tables that only a
test or a benchmark measures (the baselines, the cache, the timed ratios)
are defined here. A test records a table with
``claim_record.table(TB.Q4, record(TB.Q4, table))``; the report and the sweep
read it back with :func:`read`, so the three share one definition and the
stored JSON is the rows' records.
"""

from __future__ import annotations

from dataclasses import dataclass

from aftertrain.claims import tables as TB
from aftertrain.claims.tables import Shape, TableRow, TableSpec
from aftertrain.experiments import prune as EP
from aftertrain.experiments import quant as EQ
from aftertrain.experiments import speculative as XS
from aftertrain.experiments import speedup as XU


@dataclass(frozen=True)
class Baselines(TableRow):
    """B1: validation loss (nats) of the uniform model, the bigram and the reference."""

    uniform: float
    bigram: float
    reference: float


@dataclass(frozen=True)
class CacheDiff(TableRow):
    """K1: largest |cached - recomputed| logit over ``positions`` positions."""

    max_diff: float
    positions: int


@dataclass(frozen=True)
class Ratio(TableRow):
    """A timed paired ratio: its median and the median's interval ``(low, high)``."""

    median: float
    ci: tuple[float, float]


@dataclass(frozen=True)
class FakeQuantSpeed(TableRow):
    """Q11: fake-quantized / float32 decoding step, and whether 1 lies in the interval."""

    median: float
    ci: tuple[float, float]
    holds_1: bool


@dataclass(frozen=True)
class Int8Linear(TableRow):
    """X3: dynamic int8 Linear / float32 per number of rows multiplied at once,
    and the fewest rows from which int8 pays (None: no size tried)."""

    ratios: dict[int, Ratio]
    crossover_rows: int | None

    def to_record(self) -> dict:
        # The rows are top-level keys of the record, as the benchmark first stored them.
        return {str(r): t.to_record() for r, t in self.ratios.items()} | {
            "crossover_rows": self.crossover_rows}

    @classmethod
    def from_record(cls, data: object) -> Int8Linear:
        if not isinstance(data, dict) or "crossover_rows" not in data:
            raise ValueError(f"data is not an Int8Linear record (row counts and "
                             f"'crossover_rows'), got {data!r:.200}")
        return cls({int(r): Ratio.from_record(t) for r, t in data.items() if r != "crossover_rows"},
                   data["crossover_rows"])


@dataclass(frozen=True)
class DenseZeros(TableRow):
    """P7: dense matmul with zeros / the original at ``sparsity``: median,
    interval and quartiles of the pair ratios."""

    sparsity: float
    median: float
    ci: tuple[float, float]
    q1: float
    q3: float


@dataclass(frozen=True)
class CsrRatio(TableRow):
    """X4: CSR / dense matmul at ``sparsity``."""

    sparsity: float
    median: float
    ci: tuple[float, float]


@dataclass(frozen=True)
class CsrTable(TableRow):
    """X4's record: the rows, and the lowest sparsity from which CSR pays (None: none)."""

    rows: tuple[CsrRatio, ...]
    crossover: float | None


#: Every table by name (the P7 tables under :data:`aftertrain.claims.tables.P7_PREFIX`).
SPECS: dict[str, TableSpec] = {s.name: s for s in (
    TableSpec(TB.B1, ("B1",), Baselines, Shape.ONE),
    TableSpec(TB.K1, ("K1",), CacheDiff, Shape.ONE),
    TableSpec(TB.Q3, ("Q3",), EQ.StorageRow, Shape.BY_KEY),
    TableSpec(TB.Q4, ("Q2", "Q4", "Q5", "Q6"), EQ.BitsTable, Shape.ONE),
    TableSpec(TB.Q6, ("Q6",), EQ.Reconstruction, Shape.BY_KEY),
    TableSpec(TB.Q7, ("Q7",), EQ.SensitivityRow),
    TableSpec(TB.Q8, ("Q8",), EQ.Compounding, Shape.ONE),
    TableSpec(TB.Q9, ("Q9",), EQ.Divergence, Shape.ONE),
    TableSpec(TB.Q10, ("Q10",), EQ.Outliers, Shape.ONE),
    TableSpec(TB.Q11, ("Q11",), FakeQuantSpeed, Shape.ONE),
    TableSpec(TB.X3, ("X3",), Int8Linear, Shape.ONE),
    TableSpec(TB.P1, ("P1", "P3"), EP.LossRow),
    TableSpec(TB.P2, ("P2",), EP.RandomRow),
    TableSpec(TB.P4, ("P4",), EP.MatchingRow),
    TableSpec(TB.P5, ("P5",), EP.BytesRow),
    TableSpec(TB.P6, ("P6",), EP.CompressionRow),
    TableSpec(TB.P7_PREFIX, ("P7",), DenseZeros, Shape.ONE),
    TableSpec(TB.X4, ("X4",), CsrTable, Shape.ONE),
    TableSpec(TB.X5, ("P8", "X5"), EP.TwoFour, Shape.ONE),
    TableSpec(TB.SPEC_FIRST_TOKEN, ("S2",), XS.FirstTokenRow),
    TableSpec(TB.SPEC_ACCEPTANCE, ("S4", "S8"), XS.AcceptanceRow),
    TableSpec(TB.SPEC_X1, ("X1",), XS.AcceptanceRow),
    TableSpec(TB.SPEC_DRAFT_COST, ("S5",), XU.CostRow),
    TableSpec(TB.SPEC_VERIFY_COST, ("X8",), XU.VerifyRow),
    TableSpec(TB.SPEC_SPEEDUP, ("S6", "S7", "X2"), XU.SpeedupRow),
)}


def spec(name: str) -> TableSpec:
    """The spec of table ``name`` (a P7 table by its prefix); ``ValueError``
    naming the known tables for any other name."""
    key = TB.P7_PREFIX if isinstance(name, str) and name.startswith(TB.P7_PREFIX) else name
    if key not in SPECS:
        raise ValueError(f"name must be a table of aftertrain.claims.tables ({', '.join(SPECS)}), "
                         f"got {name!r}")
    return SPECS[key]


def record(name: str, table: object) -> object:
    """The JSON-able record of ``table`` under ``name`` (what the ledger stores);
    ``ValueError`` if ``table`` is not the spec's rows."""
    return spec(name).to_record(table)


def read(name: str, data: object | None) -> object | None:
    """The typed table of a stored record (None stays None: a missing table)."""
    return None if data is None else spec(name).from_record(data)
