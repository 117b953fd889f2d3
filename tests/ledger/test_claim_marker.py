"""Tests of ``--claim ID`` and of the claim IDs among a test's keywords
(:mod:`aftertrain.ledger.claim_marker`), run in process with pytester on a
small test file (the plugin switched on with ``-p aftertrain.ledger``, as
this project's ``addopts`` does)."""

from __future__ import annotations

import json

import pytest

from aftertrain.claims.catalogue import CLAIMS
from aftertrain.ledger.claim_marker import selected_claims
from tests.common.inner_runs import outside_any_run

pytest_plugins = ["pytester"]

TESTS = """
import pytest

@pytest.mark.claim("Q2")
def test_q2_holds():
    pass

@pytest.mark.claim("Q3", "Q4")
def test_of_two_claims():
    pass

@pytest.mark.claim("Q10")
def test_q10():
    pass

def test_without_a_claim():
    pass
"""


@pytest.fixture(autouse=True)
def _not_an_xdist_worker(monkeypatch: pytest.MonkeyPatch):
    """The inner runs are not xdist workers, whatever runs this file."""
    outside_any_run(monkeypatch)


def test_claim_runs_that_claims_tests_alone_and_the_ledger_shows_the_rest_not_run(pytester: pytest.Pytester):
    """``--claim Q2`` runs Q2's one test; every other claim is skipped in the
    ledger, its assertions not run for the selection, and the end-of-run
    lines say so once rather than "not covered"."""
    pytester.makepyfile(test_claimed=TESTS)
    path = pytester.path / "claims.json"
    result = pytester.runpytest("-p", "aftertrain.ledger", "--claim", "Q2", "--claims-json", str(path))
    result.assert_outcomes(passed=1, deselected=3)
    entries = {e["id"]: e for e in json.loads(path.read_text())["claims"]}
    assert entries["Q2"]["verdict"] == "holds"
    reason = "not selected: this run ran only --claim Q2"
    for claim_id in set(CLAIMS) - {"Q2"}:
        assert entries[claim_id]["verdict"] == "skipped", claim_id
        assert entries[claim_id]["not_run"] == [{"part": "assertions", "reason": reason}]
    result.stdout.fnmatch_lines([f"not run ({reason}): Q1, Q3, *"])
    assert "not covered" not in result.stdout.str()


def test_several_claims_by_repeating_or_by_commas(pytester: pytest.Pytester):
    """``--claim Q2 --claim Q10`` and ``--claim Q2,Q10`` select the same
    tests, exactly (Q10's test, not Q1's by a substring)."""
    pytester.makepyfile(test_claimed=TESTS)
    for args in (["--claim", "Q2", "--claim", "Q10"], ["--claim", "Q2,Q10"]):
        result = pytester.runpytest("-p", "aftertrain.ledger", *args)
        result.assert_outcomes(passed=2, deselected=2)


def test_an_unknown_claim_is_refused_listing_the_known_ones(pytester: pytest.Pytester):
    pytester.makepyfile(test_claimed=TESTS)
    result = pytester.runpytest("-p", "aftertrain.ledger", "--claim", "Q99")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--claim 'Q99': not a claim of CLAIMS.md; known IDs: Q1, Q2, *"])


def test_k_finds_a_tests_claim_ids(pytester: pytest.Pytester):
    """The claim IDs are among a test's keywords: ``-k Q4`` finds the test
    marked ``claim("Q3", "Q4")``, whose name does not say Q4 (``-k``
    matches case-insensitively: a name holding ``q4`` would pass it alone)."""
    pytester.makepyfile(test_claimed=TESTS)
    result = pytester.runpytest("-p", "aftertrain.ledger", "-k", "Q4", "-v")
    result.assert_outcomes(passed=1, deselected=3)
    result.stdout.fnmatch_lines(["*test_of_two_claims PASSED*"])


@pytest.mark.parametrize(
    ("values", "ids"),
    [(None, None), (["Q10", "Q2"], ("Q2", "Q10")), (["Q2, Q3", "Q2"], ("Q2", "Q3"))],
)
def test_selected_is_in_catalogue_order_each_once(values, ids):
    assert selected_claims(values) == ids


@pytest.mark.parametrize("values", [["q2"], ["Q2,"], [""]])
def test_selected_refuses_what_is_not_a_claim_id(values):
    with pytest.raises(ValueError, match="--claim .*: not a claim of CLAIMS.md; known IDs: Q1"):
        selected_claims(values)
