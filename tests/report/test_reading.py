"""The claims ledger read back (:func:`aftertrain.report.reading.read_ledger`):
a table this version does not know, and a text field holding anything but
a text, are refused in one line naming the file, the table, the row type
and the field (the report renders nothing it has not checked)."""

from __future__ import annotations

import json
import re

import pytest

from aftertrain.claims.tables import check_row
from aftertrain.experiments.quant import SensitivityRow
from aftertrain.report.reading import ReportError, read_ledger
from tests.common.committed import committed_data


def _written(tmp_path, data: dict):
    path = tmp_path / "claims.json"
    path.write_text(json.dumps(data))
    return path


def test_a_table_this_version_does_not_know_is_refused_naming_the_known_ones(tmp_path):
    data = committed_data()
    data["tables"]["q44"] = data["tables"]["q7"]
    path = _written(tmp_path, data)
    words = f"claims ledger {path}: table 'q44' is not a table this version knows ("
    with pytest.raises(ReportError, match=re.escape(words) + r".*\bq7\b"):
        read_ledger(path)


def test_a_text_field_holding_a_number_is_refused_naming_the_row_type_and_field(tmp_path):
    data = committed_data()
    data["tables"]["q7"][0]["name"] = 5
    path = _written(tmp_path, data)
    words = f"claims ledger {path}: table 'q7' is malformed: SensitivityRow.name must be a str, got 5"
    with pytest.raises(ReportError, match=re.escape(words)):
        read_ledger(path)
    with pytest.raises(ValueError, match=re.escape("SensitivityRow.name must be a str, got 5")):
        check_row(SensitivityRow(5, 1.5, 0.01))
    check_row(SensitivityRow("head.weight", 1.5, 0.01))
