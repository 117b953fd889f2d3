"""Guards on the claims ledger (each pins a rule one plausible slip would break; docs/mutation.md):
a test's outcome is the strongest of its phases (setup, call, teardown),
whatever order the phases arrive in, so a teardown error after a passing
call makes the claim broken, never holds."""

from __future__ import annotations

import pytest

from aftertrain.claims.catalogue import CLAIMS
from aftertrain.claims.verdicts import BROKEN, DOES_NOT_REPRODUCE, HOLDS
from aftertrain.ledger.state import CLAIM_PROPERTY, Ledger

CLAIM = next(iter(CLAIMS))


def _report(when: str, outcome: str, **extra) -> pytest.TestReport:
    report = pytest.TestReport(
        nodeid="tests/test_x.py::test_x", location=("tests/test_x.py", 1, "test_x"),
        keywords={}, outcome=outcome, longrepr=None if outcome == "passed" else "boom",
        when=when, user_properties=[(CLAIM_PROPERTY, (CLAIM,))])
    for k, v in extra.items():
        setattr(report, k, v)
    return report


def _verdict(*phases: pytest.TestReport) -> str:
    ledger = Ledger()
    for report in phases:
        ledger.add(report)
    return next(e for e in ledger.entries() if e["id"] == CLAIM)["verdict"]


@pytest.mark.parametrize("phases, verdict", [
    ((("setup", "passed"), ("call", "passed"), ("teardown", "passed")), HOLDS),
    ((("setup", "passed"), ("call", "passed"), ("teardown", "failed")), BROKEN),  # teardown error
    ((("setup", "failed"),), BROKEN),  # setup error
    ((("setup", "passed"), ("call", "failed"), ("teardown", "passed")), BROKEN),
])
def test_a_tests_outcome_is_the_strongest_of_its_phases(phases, verdict):
    assert _verdict(*(_report(w, o) for w, o in phases)) == verdict


def test_an_xfail_whose_teardown_errors_is_broken():
    """xfailed (does not reproduce) is weaker than a teardown error."""
    call = _report("call", "skipped", wasxfail="known gap")
    call.longrepr = ("tests/test_x.py", 1, "known gap")
    assert _verdict(_report("setup", "passed"), call, _report("teardown", "passed")) \
        == DOES_NOT_REPRODUCE
    assert _verdict(_report("setup", "passed"), call, _report("teardown", "failed")) == BROKEN
