"""The tables' registry (aftertrain.experiments.tables.SPECS over the names
of aftertrain.claims.tables): every name has a spec bound to its row type,
rows name their table (what ``claim_record.table(rows)`` records), and a
typed table goes to its stored record and back unchanged."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from aftertrain.claims import tables as TB
from aftertrain.claims.ledgerfile import LedgerFile
from aftertrain.claims.tables import Shape, TableRow, TableSpec, check_row, spec_of, table
from aftertrain.experiments import prune as EP
from aftertrain.experiments import quant as EQ
from aftertrain.experiments import tables as ET
from tests.common.committed import LEDGERS

ROOT = Path(__file__).resolve().parents[2]


def test_every_name_has_a_spec_bound_to_its_row_type():
    """Each name constant of aftertrain.claims.tables is one spec's, and that
    spec is its row type's own (``TableRow.SPEC``): what ``claim_record.table(rows)``
    records the rows under."""
    constants = {v for k, v in vars(TB).items() if k.isupper() and isinstance(v, str)}
    assert set(ET.SPECS) == constants
    for name, spec in ET.SPECS.items():
        assert spec.name == name and spec.row.SPEC is spec, name
        assert ET.spec(name) is spec
    assert ET.spec(TB.p7(0.5)) is ET.P7 and ET.P7.at(0.5).name == TB.p7(0.5)


@pytest.mark.parametrize("path", LEDGERS, ids=lambda p: p.name)
def test_committed_tables_read_typed_and_write_back_identically(path):
    """The report's committed ledgers: each stored table reads into its row
    types and writes back as the same JSON (the stored format is the records')."""
    stored = json.loads(path.read_text())["tables"]
    assert stored, path
    for name, data in stored.items():
        table = ET.spec(name).from_record(data)
        rows = (
            table if isinstance(table, list) else list(table.values()) if isinstance(table, dict) else [table]
        )
        assert rows and all(type(r) is ET.spec(name).row for r in rows), name
        assert spec_of(table).name_of(table) == name  # what claim_record.table stores it under
        assert json.loads(json.dumps(ET.spec(name).to_record(table))) == data, name


def test_a_row_round_trips_through_its_record():
    table = EQ.BitsTable(1.55, (EQ.BitsRow(8, 1.56, 1.554), EQ.BitsRow(4, 1.8, 1.6)))
    rec = ET.Q4.to_record(table)
    assert rec == {
        "float32": 1.55,
        "rows": [
            {"bits": 8, "per_tensor": 1.56, "per_channel": 1.554},
            {"bits": 4, "per_tensor": 1.8, "per_channel": 1.6},
        ],
    }
    assert ET.Q4.from_record(json.loads(json.dumps(rec))) == table
    assert ET.Q4.columns == ("float32", "rows")
    ledger = LedgerFile((), tables={TB.Q4: rec})
    assert ledger.table(ET.Q4) == table and ledger.table(ET.B1) is None


def test_the_rows_name_their_table_and_anything_else_is_refused():
    """``spec_of`` (what ``claim_record.table`` records under): one row, a
    list or a dict of rows of a row type with a table; the spec's shape and
    every row's type checked."""
    base = ET.Baselines(4.6, 2.6, 2.0)
    assert spec_of(base) is ET.B1
    p1 = [EP.LossRow(0.3, 2.2, 2.4, 4.5)]
    assert spec_of(p1) is ET.P1 and spec_of(tuple(p1)) is ET.P1
    zeros = ET.DenseZeros(0.9, 1.0, (0.9, 1.1), 0.95, 1.05)
    assert spec_of(zeros).name_of(zeros) == TB.p7(0.9)
    for bad, why in [
        ([], "non-empty list"),
        ({}, "non-empty"),
        ("b1", "got 'b1'"),
        ([{"uniform": 4.6}], "non-empty list"),
        (_Pair(1, (0.5, 2.0)), "decorated"),
        ([base], "b1: table must be one row of Baselines"),
        ([*p1, base], "p1: table must be list of rows of LossRow"),
        (EQ.BitsRow(8, 1.0, 1.0), "decorated"),
    ]:
        with pytest.raises(ValueError, match=why):
            spec_of(bad)


def test_a_row_type_names_one_table_only_through_the_decorator():
    with pytest.raises(ValueError, match="suffix must be a field of a one-row table"):
        table("pair", ("X",), Shape.ONE, suffix="c")(_Pair)
    with pytest.raises(ValueError, match="must decorate a dataclass subclassing TableRow"):
        table("pair", ("X",))(dict)
    with pytest.raises(ValueError, match="claims must be a non-empty tuple"):
        table("pair", ())


def test_a_field_named_by_a_keyword_keeps_its_json_key():
    from aftertrain.experiments.prune import LossRow
    from aftertrain.prune import Method

    row = LossRow(0.3, 2.2, 2.4, 4.5)
    assert row.to_record() == {"sparsity": 0.3, "global": 2.2, "layer": 2.4, "random": 4.5}
    assert LossRow.from_record(row.to_record()) == row and row.loss(Method.GLOBAL) == 2.2


@dataclasses.dataclass(frozen=True)
class _Pair(TableRow):
    a: int
    b: tuple[float, float]


def test_a_spec_refuses_other_rows_and_records_naming_the_keys():
    spec = TableSpec("pair", ("X",), _Pair, Shape.ROWS)
    assert spec.from_record(spec.to_record([_Pair(1, (0.5, 2.0))])) == [_Pair(1, (0.5, 2.0))]
    assert spec.to_record(_Pair(i, (0.0, 1.0)) for i in range(2)) == [
        {"a": 0, "b": [0.0, 1.0]},
        {"a": 1, "b": [0.0, 1.0]},
    ]
    with pytest.raises(ValueError, match="pair: table must be list of rows of _Pair"):
        spec.to_record([{"a": 1, "b": [0.5, 2.0]}])
    with pytest.raises(ValueError, match=r"missing \['b'\], unknown \['c'\]"):
        spec.from_record([{"a": 1, "c": 2}])
    with pytest.raises(ValueError, match="list of rows"):
        spec.from_record({"a": 1})
    with pytest.raises(ValueError, match="name must be a table"):
        ET.spec("q44")


@pytest.mark.parametrize("path", LEDGERS, ids=lambda p: p.name)
def test_committed_tables_hold_what_their_row_types_say(path):
    """Every row of the committed ledgers passes ``check_row``: the check
    the report's reader makes refuses nothing a run writes."""
    ledger = LedgerFile.from_json(json.loads(Path(path).read_text()))
    for name, record in ledger.tables.items():
        typed = ET.spec(name).from_record(record)
        rows = typed.values() if isinstance(typed, dict) else typed if isinstance(typed, list) else [typed]
        for row in rows:
            check_row(row)


@pytest.mark.parametrize(
    ("row", "words"),
    [
        (EQ.BitsRow(8, float("nan"), 1.0), "BitsRow.per_tensor must be a finite number, got nan"),
        (EQ.BitsRow(8, True, 1.0), "BitsRow.per_tensor must be a finite number, got True"),
        (EQ.BitsRow(8.0, 1.0, 1.0), "BitsRow.bits must be an int, got 8.0"),
        (
            EQ.BitsTable(1.5, (EQ.BitsRow(8, 1.0, "low"),)),
            "BitsRow.per_channel must be a finite number, got 'low'",
        ),
        (ET.CsrTable((), "none"), "CsrTable.crossover must be a finite number, got 'none'"),
        (
            ET.DenseZeros(0.5, 1.0, (1.0, None), 1.0, 1.0),
            "DenseZeros.ci must be a list of items each a finite",
        ),
    ],
)
def test_check_row_names_the_row_type_the_field_and_the_value(row, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        check_row(row)


def test_check_row_takes_an_int_for_a_float_and_none_where_optional():
    check_row(EQ.BitsRow(8, 2, 1.5))
    check_row(ET.CsrTable((ET.CsrRatio(0.5, 1.0, (0.9, 1.1)),), None))
