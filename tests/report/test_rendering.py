"""Guards on the report (each pins a rule one plausible slip would break; docs/mutation.md): a
claim the ledger does not mention is "not covered" (never "holds"), in the
claims table too, and a NaN figure prints as a dash, never as "nan"."""

from __future__ import annotations

import math

from aftertrain.claims.catalogue import CLAIMS
from aftertrain.claims.verdicts import BROKEN, NOT_COVERED
from aftertrain.report import LedgerFile, claims_rows
from aftertrain.report.markdown import DASH, fmt

FIRST, SECOND = list(CLAIMS)[:2]


def _ledger(claims: list[dict]) -> LedgerFile:
    return LedgerFile.from_json({"format": 2, "claims": claims}, "test")


def test_a_claim_missing_from_the_ledger_is_not_covered():
    ledger = _ledger([{"id": FIRST, "verdict": BROKEN, "measured": ["1.5x"]}])
    assert ledger.verdict(FIRST) == BROKEN
    assert ledger.verdict(SECOND) == NOT_COVERED
    rows = {row[0]: row for row in claims_rows(ledger)}
    assert "holds" not in rows[SECOND][-1] and "not covered" in rows[SECOND][-1]
    assert "BROKEN" in rows[FIRST][-1]


def test_an_empty_ledger_covers_nothing():
    ledger = _ledger([])
    assert {ledger.verdict(c) for c in CLAIMS} == {NOT_COVERED}


def test_nan_and_none_print_as_a_dash_numbers_as_numbers():
    assert fmt(math.nan) == DASH and fmt(None) == DASH
    assert fmt(float("nan"), 2) == DASH
    assert fmt(1.23456, 2) == "1.23" and fmt(0.0) == "0.0000"


def test_a_part_not_run_is_named_beside_the_verdict():
    """A claim that holds on the parts that ran names the rest in the claims
    table (one model and several), never a bare "holds"."""
    from aftertrain.report import multimodel

    missing = [{"part": "baseline comparison", "reason": "no baseline for this model"}]
    led = _ledger([{"id": "Q4", "verdict": "holds", "not_run": missing}, {"id": "Q5", "verdict": "holds"}])
    rows = {r[0]: r for r in claims_rows(led)}
    assert rows["Q4"][-1] == "holds; not run: baseline comparison (no baseline for this model)"
    assert rows["Q5"][-1] == "holds"
    multi = {r[0]: r for r in multimodel.claims_rows_per_model({"mine": led, "other": led})}
    assert multi["Q4"][4] == multi["Q4"][6] == rows["Q4"][-1]
