"""The registry of the claims' tables: for each name of
:mod:`aftertrain.claims.tables`, the :class:`~aftertrain.claims.tables.TableSpec`
that says what it holds.

The experiments own their row types (:mod:`.quant`, :mod:`.prune`,
:mod:`.speculative`, :mod:`.speedup`); the rows of the tables that only a
test or a benchmark measures (the baselines, the cache, the timed ratios)
are defined here. Each row type names its table (``@table``); a test records
it with ``claim_record.table(rows)`` and the report and the sweep read it back
typed with ``ledger.table(Q4)`` (the constants below), so the three share one
definition and the stored JSON is the rows' records.
"""

from __future__ import annotations

from dataclasses import dataclass

from aftertrain.claims import tables as TB
from aftertrain.claims.tables import Shape, TableRow, TableSpec, table
from aftertrain.experiments import prune as EP
from aftertrain.experiments import quant as EQ
from aftertrain.experiments import speculative as XS
from aftertrain.experiments import speedup as XU


@table(TB.B1, ("B1",), Shape.ONE)
@dataclass(frozen=True)
class Baselines(TableRow):
    """B1: validation loss (nats) of the uniform model, the bigram and the reference."""

    uniform: float
    bigram: float
    reference: float


@table(TB.K1, ("K1",), Shape.ONE)
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


@table(TB.Q11, ("Q11",), Shape.ONE)
@dataclass(frozen=True)
class FakeQuantSpeed(TableRow):
    """Q11: fake-quantized / float32 decoding step, and whether 1 lies in the interval."""

    median: float
    ci: tuple[float, float]
    holds_1: bool


@table(TB.X3, ("X3",), Shape.ONE)
@dataclass(frozen=True)
class Int8Linear(TableRow):
    """X3: dynamic int8 Linear / float32 per number of rows multiplied at once,
    and the fewest rows from which int8 pays (None: no size tried)."""

    ratios: dict[int, Ratio]
    crossover_rows: int | None

    def to_record(self) -> dict:
        # The rows are top-level keys of the record, as the benchmark first stored them.
        """The record: each row count (as a string) to its ratio's record, and ``crossover_rows``,
        all top-level keys, as the benchmark first stored them."""
        return {str(r): t.to_record() for r, t in self.ratios.items()} | {
            "crossover_rows": self.crossover_rows
        }

    @classmethod
    def from_record(cls, data: object) -> Int8Linear:
        """The X3 row ``data`` (a :meth:`to_record` dict) holds; ValueError when it is not a dict
        with ``crossover_rows``."""
        if not isinstance(data, dict) or "crossover_rows" not in data:
            raise ValueError(
                f"data is not an Int8Linear record (row counts and 'crossover_rows'), got {data!r:.200}"
            )
        return cls(
            {int(r): Ratio.from_record(t) for r, t in data.items() if r != "crossover_rows"},
            data["crossover_rows"],
        )


@table(TB.P7_PREFIX, ("P7",), Shape.ONE, suffix="sparsity")
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


@table(TB.X4, ("X4",), Shape.ONE)
@dataclass(frozen=True)
class CsrTable(TableRow):
    """X4's record: the rows, and the lowest sparsity from which CSR pays (None: none)."""

    rows: tuple[CsrRatio, ...]
    crossover: float | None


#: Each table's spec, by the name a reader passes to ``ledger.table(...)``.
B1 = Baselines.SPEC
K1 = CacheDiff.SPEC
Q3 = EQ.StorageRow.SPEC
Q4 = EQ.BitsTable.SPEC
Q6 = EQ.Reconstruction.SPEC
Q7 = EQ.SensitivityRow.SPEC
Q8 = EQ.Compounding.SPEC
Q9 = EQ.Divergence.SPEC
Q10 = EQ.Outliers.SPEC
Q11 = FakeQuantSpeed.SPEC
X3 = Int8Linear.SPEC
P1 = EP.LossRow.SPEC
P2 = EP.RandomRow.SPEC
P4 = EP.MatchingRow.SPEC
P5 = EP.BytesRow.SPEC
P6 = EP.CompressionRow.SPEC
#: one table per sparsity: ``P7.at(0.5)``
P7 = DenseZeros.SPEC
X4 = CsrTable.SPEC
X5 = EP.TwoFour.SPEC
SPEC_FIRST_TOKEN = XS.FirstTokenRow.SPEC
SPEC_ACCEPTANCE = XS.AcceptanceRow.SPEC
SPEC_X1 = XS.LongRunRow.SPEC
SPEC_DRAFT_COST = XU.CostRow.SPEC
SPEC_VERIFY_COST = XU.VerifyRow.SPEC
SPEC_SPEEDUP = XU.SpeedupRow.SPEC

#: Every table by name: the specs above (the P7 tables under
#: :data:`aftertrain.claims.tables.P7_PREFIX`).
SPECS: dict[str, TableSpec] = {s.name: s for s in list(globals().values()) if isinstance(s, TableSpec)}


def spec(name: str) -> TableSpec:
    """The spec of table ``name`` (a P7 table by its prefix); ``ValueError``
    naming the known tables for any other name."""
    key = TB.P7_PREFIX if isinstance(name, str) and name.startswith(TB.P7_PREFIX) else name
    if key not in SPECS:
        raise ValueError(
            f"name must be a table of aftertrain.claims.tables ({', '.join(SPECS)}), got {name!r}"
        )
    return SPECS[key]
