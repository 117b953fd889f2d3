"""The per-part mark of the ledger's verdicts (aftertrain.ledger.state):
:func:`verdict_text` marks every verdict decided by the parts that ran
``(part not run)`` when another part did not run, whatever that verdict is;
``skipped`` and ``not covered`` (nothing ran) carry no mark. And through a
whole :class:`Ledger`: a claim whose assertions failed while its timed part
was not timed reads ``broken (part not run)`` on the summary line, with
:func:`part_verdicts` giving each part its own verdict."""

from __future__ import annotations

import pytest

from aftertrain.claims.catalogue import CLAIMS
from aftertrain.claims.ledgerfile import ClaimEntry, NotRun, TestEntry
from aftertrain.claims.parts import Part
from aftertrain.claims.verdicts import (
    BROKEN,
    DOES_NOT_REPRODUCE,
    HOLDS,
    INCONCLUSIVE,
    NOT_COVERED,
    NOT_DECIDED,
    SKIPPED,
    VERDICTS,
    Outcome,
)
from aftertrain.ledger.state import (
    CLAIM_PROPERTY,
    NOT_RUN,
    TIMED_PROPERTY,
    UNTIMED_PROPERTY,
    Ledger,
    part_verdicts,
)

PART = (NotRun(Part.TIMED, "not timed"),)


def verdict_text(entry: dict) -> str:
    return ClaimEntry(CLAIM, **entry).verdict_text()


def test_the_verdicts_are_the_ones_this_file_covers():
    """The two tables below cover every verdict (a new one needs a row)."""
    assert set(VERDICTS) == {
        HOLDS,
        BROKEN,
        DOES_NOT_REPRODUCE,
        INCONCLUSIVE,
        SKIPPED,
        NOT_COVERED,
        NOT_DECIDED,
    }


@pytest.mark.parametrize("verdict", [HOLDS, BROKEN, DOES_NOT_REPRODUCE, INCONCLUSIVE])
def test_a_verdict_of_the_parts_that_ran_is_marked_when_a_part_did_not_run(verdict):
    """Every verdict a part that ran decides carries the mark, not only holds."""
    assert verdict_text({"verdict": verdict, "not_run": PART}) == f"{verdict} (part not run)"
    assert verdict_text({"verdict": verdict, "not_run": ()}) == verdict


@pytest.mark.parametrize("verdict", [SKIPPED, NOT_COVERED, NOT_DECIDED])
def test_a_verdict_where_nothing_ran_is_never_marked(verdict):
    """Nothing ran, or a defining part did not (``not decided here`` names the
    part itself): no "(part not run)" mark beside it."""
    assert verdict_text({"verdict": verdict, "not_run": PART}) == verdict
    assert verdict_text({"verdict": verdict, "not_run": ()}) == verdict


def _phase(nodeid: str, when: str, outcome: str, props: list) -> pytest.TestReport:
    longrepr = None
    if outcome == "skipped":
        longrepr = (nodeid, 1, "Skipped: not timed")
    elif outcome == "failed":
        longrepr = "boom"
    return pytest.TestReport(
        nodeid=nodeid,
        location=(nodeid, 1, nodeid),
        keywords={},
        outcome=outcome,
        longrepr=longrepr,
        when=when,
        user_properties=props,
    )


CLAIM = next(iter(CLAIMS))


def _ledger(assertions: str) -> Ledger:
    """One claim: a test of its assertions ending ``assertions``, and a timed
    test that was not timed (skipped with the untimed property)."""
    ledger = Ledger()
    claim = [(CLAIM_PROPERTY, (CLAIM,))]
    for when, outcome in (("setup", "passed"), ("call", assertions), ("teardown", "passed")):
        ledger.add(_phase("t.py::test_assert", when, outcome, claim))
    timed = [*claim, (TIMED_PROPERTY, True), (UNTIMED_PROPERTY, "not timed")]
    ledger.add(_phase("t.py::test_timed", "setup", "passed", timed))
    ledger.add(_phase("t.py::test_timed", "call", "skipped", timed))
    ledger.add(_phase("t.py::test_timed", "teardown", "passed", timed))
    return ledger


@pytest.mark.parametrize("assertions, verdict", [("passed", HOLDS), ("failed", BROKEN)])
def test_a_claim_whose_timed_part_was_not_timed_is_marked_whatever_its_verdict(assertions, verdict):
    """The entry's parts, its parts not run and the summary line agree."""
    ledger = _ledger(assertions)
    [entry] = [e for e in ledger.entries() if e.id == CLAIM]
    assert entry.verdict == verdict
    assert entry.parts == {"assertions": verdict, "timed part": NOT_RUN}
    assert entry.not_run == PART
    [line] = [x for x in ledger.summary_lines() if x.startswith(f"{CLAIM:<4} ")]
    assert f"{verdict} (part not run)" in line


def test_part_verdicts_gives_each_part_the_verdict_of_its_own_tests():
    """Each part is judged alone: a failed teeth test does not make the
    assertions part broken; a part that only a test named as not run has
    reads ``not run``."""
    tests = [
        TestEntry("t::a", Outcome.PASSED, part=Part.ASSERTIONS),
        TestEntry("t::b", Outcome.FAILED, part=Part.TEETH),
        TestEntry("t::c", Outcome.INCONCLUSIVE, part=Part.TIMED),
        TestEntry(
            "t::d", Outcome.XFAILED, part=Part.ASSERTIONS, not_run=(NotRun(Part.BASELINE, "no baseline"),)
        ),
    ]
    assert part_verdicts(tests) == {
        "assertions": DOES_NOT_REPRODUCE,
        "teeth": BROKEN,
        "timed part": INCONCLUSIVE,
        "baseline comparison": NOT_RUN,
    }


def test_a_part_fixed_at_collection_stays_when_the_test_also_times():
    """Only an assertions test becomes the timed part when it requires
    timing: a teeth test (its part fixed at collection) that times stays
    the teeth part."""
    from aftertrain.ledger.state import PART_PROPERTY

    ledger = Ledger()
    props = [(CLAIM_PROPERTY, (CLAIM,)), (PART_PROPERTY, "teeth"), (TIMED_PROPERTY, True)]
    for when in ("setup", "call", "teardown"):
        ledger.add(_phase("t.py::test_teeth_timed", when, "passed", props))
    assert ledger.tests["t.py::test_teeth_timed"].part == Part.TEETH
    [entry] = [e for e in ledger.entries() if e.id == CLAIM]
    assert entry.parts == {"teeth": HOLDS}
