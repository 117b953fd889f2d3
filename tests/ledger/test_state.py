"""Guards on the claims ledger (each pins a rule one plausible slip would break; docs/mutation.md):
a test's outcome is the strongest of its phases (setup, call, teardown),
whatever order the phases arrive in, so a teardown error after a passing
call makes the claim broken, never holds."""

from __future__ import annotations

import pytest

from aftertrain.claims.catalogue import CLAIMS
from aftertrain.claims.ledgerfile import TestEntry
from aftertrain.claims.parts import Part
from aftertrain.claims.verdicts import (
    BROKEN,
    DOES_NOT_REPRODUCE,
    HOLDS,
    NOT_DECIDED,
    SKIPPED,
    Outcome,
)
from aftertrain.ledger.state import CLAIM_PROPERTY, Ledger, decide, deciding_parts

CLAIM = next(iter(CLAIMS))


def _report(when: str, outcome: str, **extra) -> pytest.TestReport:
    report = pytest.TestReport(
        nodeid="tests/test_x.py::test_x",
        location=("tests/test_x.py", 1, "test_x"),
        keywords={},
        outcome=outcome,
        longrepr=None if outcome == "passed" else "boom",
        when=when,
        user_properties=[(CLAIM_PROPERTY, (CLAIM,))],
    )
    for k, v in extra.items():
        setattr(report, k, v)
    return report


def _verdict(*phases: pytest.TestReport) -> str:
    ledger = Ledger()
    for report in phases:
        ledger.add(report)
    return next(e for e in ledger.entries() if e.id == CLAIM).verdict


@pytest.mark.parametrize(
    "phases, verdict",
    [
        ((("setup", "passed"), ("call", "passed"), ("teardown", "passed")), HOLDS),
        ((("setup", "passed"), ("call", "passed"), ("teardown", "failed")), BROKEN),  # teardown error
        ((("setup", "failed"),), BROKEN),  # setup error
        ((("setup", "passed"), ("call", "failed"), ("teardown", "passed")), BROKEN),
    ],
)
def test_a_tests_outcome_is_the_strongest_of_its_phases(phases, verdict):
    assert _verdict(*(_report(w, o) for w, o in phases)) == verdict


def test_an_xfail_whose_teardown_errors_is_broken():
    """xfailed (does not reproduce) is weaker than a teardown error."""
    call = _report("call", "skipped", wasxfail="known gap")
    call.longrepr = ("tests/test_x.py", 1, "known gap")
    assert _verdict(_report("setup", "passed"), call, _report("teardown", "passed")) == DOES_NOT_REPRODUCE
    assert _verdict(_report("setup", "passed"), call, _report("teardown", "failed")) == BROKEN


# --- the rule: defining parts, and the tests beside a claim --------------------------

NO_CUDA = "2:4 speed needs CUDA sparse kernels; no CUDA device here"


def _t(part: str, outcome: str, reason: str | None = None) -> TestEntry:
    return TestEntry(f"t.py::{part}-{outcome}-{reason}", Outcome(outcome), reason, part=Part(part))


@pytest.mark.parametrize(
    "claim_id, tests, verdict, undecided",
    [
        # P8's storage passed, its defining 2:4 speed-up did not run (no CUDA)
        (
            "P8",
            [_t("assertions", "passed"), _t("timed part", "skipped", NO_CUDA)],
            NOT_DECIDED,
            [("timed part", NO_CUDA)],
        ),
        # a timing claim's correctness test alone, nothing timed (-n 2, --benchmark-disable)
        (
            "X3",
            [_t("assertions", "passed"), _t("timed part", "untimed", "not timed")],
            NOT_DECIDED,
            [("timed part", "not timed")],
        ),
        # a rule's self-test and teeth alone decide nothing, whatever they give
        (
            "S6",
            [_t("method", "passed"), _t("teeth", "passed")],
            NOT_DECIDED,
            [("timed part", "no test of it ran here")],
        ),
        (
            "Q5",
            [_t("teeth", "failed", "Failed: DID NOT RAISE")],
            NOT_DECIDED,
            [("assertions", "no test of it ran here")],
        ),
        # another model's outcome and our model's pinned figure decide nothing either
        (
            "Q6",
            [_t("on another model", "passed"), _t("expectation of our model", "failed", "boom")],
            NOT_DECIDED,
            [("assertions", "no test of it ran here")],
        ),
        # the claim's own assertions decide; a failing teeth test beside them does not make it broken
        (
            "Q5",
            [_t("assertions", "xfailed", "3 bits stay below"), _t("teeth", "failed", "boom")],
            DOES_NOT_REPRODUCE,
            [],
        ),
        # a broken claim stays broken when a defining part did not run
        (
            "X5",
            [_t("assertions", "failed", "boom"), _t("timed part", "skipped", NO_CUDA)],
            BROKEN,
            [("timed part", NO_CUDA)],
        ),
        # X1: a draft that does not fall has nothing to explain; one that falls decides
        (
            "X1",
            [
                _t("assertions", "passed"),
                _t("assertions", "skipped", "8-bit: nothing to explain"),
                _t("method", "passed"),
            ],
            HOLDS,
            [],
        ),
        (
            "X1",
            [_t("assertions", "skipped", "8-bit: nothing to explain"), _t("method", "passed")],
            NOT_DECIDED,
            [("assertions", "8-bit: nothing to explain")],
        ),
        # X7 claims the teeth: there they are the defining part
        ("X7", [_t("teeth", "passed")], HOLDS, []),
        # nothing of it ran
        ("Q11", [_t("timed part", "untimed", "not timed")], SKIPPED, [("timed part", "not timed")]),
        (
            "Q5",
            [_t("teeth", "skipped", "precondition not met")],
            SKIPPED,
            [("assertions", "no test of it ran here")],
        ),
    ],
)
def test_a_claim_is_decided_only_by_its_deciding_tests_and_only_when_its_defining_parts_ran(
    claim_id, tests, verdict, undecided
):
    got = decide(CLAIMS[claim_id], tests)
    assert got.verdict == verdict
    assert [(u.part, u.reason) for u in got.undecided] == undecided
    beside = [t for t in tests if t.part not in deciding_parts(CLAIMS[claim_id])]
    assert sum(n for c in got.beside.values() for n in c.values()) == len(beside)


def test_a_not_decided_claim_says_which_part_did_not_run_and_what_did():
    """P8 without CUDA: one line naming the defining part, why, and the part
    that ran with its own verdict; the teeth beside it on a line of its own."""
    ledger = Ledger()
    for nodeid, part, outcome, reason in [
        ("t::storage", "assertions", "passed", None),
        ("t::speed", "timed part", "skipped", NO_CUDA),
        ("t::teeth", "teeth", "passed", None),
    ]:
        ledger.tests[nodeid] = TestEntry(nodeid, Outcome(outcome), reason, part=Part(part), reads_model=False)
        ledger.claims_of[nodeid] = ("P8",)
    lines = ledger.summary_lines()
    assert any(line.startswith("P8   not decided here") for line in lines)
    assert (
        f"P8 not decided here: defining part not run: timed part, the 2:4 speed-up against "
        f"dense (CUDA sparse kernels): {NO_CUDA} (ran: assertions holds)"
    ) in lines
    assert "P8 beside the claim: method checked: 1 teeth pass" in lines
    assert lines[-1].startswith("1 not decided here")
