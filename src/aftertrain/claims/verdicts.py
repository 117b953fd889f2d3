"""The verdicts of the claims ledger, one set for the ledger, the report and
the README table, and the test outcomes they are decided from.

Strongest first: a claim takes the first verdict that any of its tests
gives it (see :mod:`aftertrain.ledger`). str-valued, so a verdict compares
equal to its name and the ledger's JSON holds the plain name.
"""

from aftertrain.core.enums import StrEnum


class Verdict(StrEnum):
    """A claim's verdict, strongest first (str-valued: the JSON and the README hold the name);
    from its tests' outcomes (``aftertrain.ledger.state.VERDICT_OF``): ``broken`` (a test
    failed or errored, or a strict xfail passed), ``does not reproduce`` (a test marked as a
    strict xfail failed as expected: the claim does not hold here), ``inconclusive`` (a timing
    could not decide), ``holds`` (its tests passed), ``not decided here`` (below), ``skipped``
    (its tests were skipped or untimed), ``not covered`` (no test of the run carries the ID)."""

    BROKEN = "broken"
    DOES_NOT_REPRODUCE = "does not reproduce"
    INCONCLUSIVE = "inconclusive"
    HOLDS = "holds"
    #: a defining part did not run (aftertrain.claims.parts), or only tests beside the claim ran
    NOT_DECIDED = "not decided here"
    SKIPPED = "skipped"
    NOT_COVERED = "not covered"


BROKEN = Verdict.BROKEN
DOES_NOT_REPRODUCE = Verdict.DOES_NOT_REPRODUCE
INCONCLUSIVE = Verdict.INCONCLUSIVE
HOLDS = Verdict.HOLDS
NOT_DECIDED = Verdict.NOT_DECIDED
SKIPPED = Verdict.SKIPPED
NOT_COVERED = Verdict.NOT_COVERED

VERDICTS = tuple(Verdict)


class Outcome(StrEnum):
    """A test's outcome, strongest first (str-valued: the JSON holds the name).
    A test's outcome is the strongest of its phases (setup, call, teardown), a
    passing setup or teardown not counting (:mod:`aftertrain.ledger.state`)."""

    ERROR = "error"
    FAILED = "failed"
    XPASSED = "xpassed"
    XFAILED = "xfailed"
    INCONCLUSIVE = "inconclusive"
    UNTIMED = "untimed"
    PASSED = "passed"
    SKIPPED = "skipped"


OUTCOMES = tuple(Outcome)
