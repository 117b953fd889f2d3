"""The verdict words of the claims ledger and the test outcomes they are
decided from: the one definition of each, for the plugin, the ledger file
(``claims.schema.json``'s enums are these, tested equal), the report and the
README table; docs/ledger.md shows them to a reader.

Both are strongest first. Each test of a claim gets one outcome (the
strongest of its phases); each outcome maps to a verdict, and a claim
takes the verdict of the strongest outcome among the tests that decide it,
plain skips aside (the rule and its exceptions: :mod:`aftertrain.ledger`'s
``claim_verdict`` and ``decide``; which tests decide a claim:
:mod:`aftertrain.claims.parts`). str-valued, so a verdict compares equal to
its word and the ledger's JSON holds the plain word.
"""

from aftertrain.core.enums import StrEnum


class Verdict(StrEnum):
    """A claim's verdict, strongest first (the meaning of each word is on its member)."""

    #: a deciding test failed or errored (in setup or teardown too, also under
    #: an ``xfail`` marker) where the claim is expected to hold, or a test
    #: marked as a strict xfail passed: the run fails
    BROKEN = "broken"
    #: a deciding test found the claim false on the model under test, and every
    #: defining part ran: a strict xfail (``does_not_reproduce_on`` the pinned
    #: reference) failed as expected, or an assertion of the claim failed in a
    #: timed test or on a model without pinned expectations; the run passes
    DOES_NOT_REPRODUCE = "does not reproduce"
    #: a timing decision could not decide within its budget (a failure only
    #: under ``--timing-strict``)
    INCONCLUSIVE = "inconclusive"
    #: every deciding test that ran passed, and every defining part ran
    HOLDS = "holds"
    #: a defining part did not run where the claim would read ``holds`` or
    #: ``does not reproduce`` (:mod:`aftertrain.claims.parts`), or only tests
    #: beside the claim (of the method, of another model) ran
    NOT_DECIDED = "not decided here"
    #: its deciding tests were all skipped or not timed (``--benchmark-disable``),
    #: ``--claim`` left it out, or it has only tests beside it and none of them ran
    SKIPPED = "skipped"
    #: no test of the run carries the claim's ID
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
    """A test's outcome, strongest first: the strongest of its phases (setup,
    call, teardown), a passing setup or teardown not counting."""

    #: an exception in setup or teardown, also under an ``xfail`` marker
    #: (where pytest says xfailed): a fixture that breaks is no known gap
    ERROR = "error"
    #: the test failed
    FAILED = "failed"
    #: marked as a strict xfail, it passed
    XPASSED = "xpassed"
    #: marked xfail, it failed as expected (the reason is the marker's)
    XFAILED = "xfailed"
    #: its timing decision could not decide within its budget
    INCONCLUSIVE = "inconclusive"
    #: a timing test that timed nothing (``--benchmark-disable``, ``--benchmark-skip``)
    UNTIMED = "untimed"
    #: the test passed
    PASSED = "passed"
    #: skipped, with its reason
    SKIPPED = "skipped"


OUTCOMES = tuple(Outcome)
