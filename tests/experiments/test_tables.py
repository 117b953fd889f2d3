"""The tables' registry (aftertrain.experiments.tables.SPECS over the names
of aftertrain.claims.tables): every table a test records has a spec, and a
typed table goes to its stored record and back unchanged."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from aftertrain.claims import tables as TB
from aftertrain.claims.tables import Shape, TableRow, TableSpec
from aftertrain.experiments import quant as EQ
from aftertrain.experiments import tables as ET
from tests.common.committed import LEDGERS

ROOT = Path(__file__).resolve().parents[2]


def recorded_names() -> set[str]:
    """The table names the tests and benchmarks pass to ``claim_record.table``
    (``tables.X`` constants and ``tables.p7(...)``), read from their source."""
    names = set()
    for path in [*ROOT.glob("tests/**/test_*.py"), *ROOT.glob("benchmarks/**/test_*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "table" and ast.unparse(node.func.value) == "claim_record"
                    and node.args):
                arg = node.args[0]
                if isinstance(arg, ast.Attribute) and ast.unparse(arg.value) == "tables":
                    names.add(getattr(TB, arg.attr))
                elif isinstance(arg, ast.Call) and ast.unparse(arg.func) == "tables.p7":
                    names.add(TB.p7(0.5))
    return names


def test_every_recorded_table_and_every_name_has_a_spec():
    names = recorded_names()
    assert len(names) >= 20, names  # the scan found the suite's tables
    constants = {v for k, v in vars(TB).items() if k.isupper() and isinstance(v, str)}
    for name in names | constants:
        assert ET.spec(name).name in (name, TB.P7_PREFIX), name
    assert set(ET.SPECS) == constants


@pytest.mark.parametrize("path", LEDGERS, ids=lambda p: p.name)
def test_committed_tables_read_typed_and_write_back_identically(path):
    """The report's committed ledgers: each stored table reads into its row
    types and writes back as the same JSON (the stored format is the records')."""
    stored = json.loads(path.read_text())["tables"]
    assert stored, path
    for name, data in stored.items():
        table = ET.read(name, data)
        rows = table if isinstance(table, list) else \
            list(table.values()) if isinstance(table, dict) else [table]
        assert rows and all(isinstance(r, ET.spec(name).row) for r in rows), name
        assert json.loads(json.dumps(ET.record(name, table))) == data, name


def test_a_row_round_trips_through_its_record():
    table = EQ.BitsTable(1.55, (EQ.BitsRow(8, 1.56, 1.554), EQ.BitsRow(4, 1.8, 1.6)))
    rec = ET.record(TB.Q4, table)
    assert rec == {"float32": 1.55, "rows": [{"bits": 8, "per_tensor": 1.56, "per_channel": 1.554},
                                             {"bits": 4, "per_tensor": 1.8, "per_channel": 1.6}]}
    assert ET.read(TB.Q4, json.loads(json.dumps(rec))) == table
    assert ET.read(TB.Q4, None) is None
    assert ET.spec(TB.Q4).columns == ("float32", "rows")


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
        {"a": 0, "b": [0.0, 1.0]}, {"a": 1, "b": [0.0, 1.0]}]
    with pytest.raises(ValueError, match="pair: table must be list of rows of _Pair"):
        spec.to_record([{"a": 1, "b": [0.5, 2.0]}])
    with pytest.raises(ValueError, match=r"missing \['b'\], unknown \['c'\]"):
        spec.from_record([{"a": 1, "c": 2}])
    with pytest.raises(ValueError, match="list of rows"):
        spec.from_record({"a": 1})
    with pytest.raises(ValueError, match="name must be a table"):
        ET.spec("q44")
