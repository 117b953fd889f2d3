"""The one rule from a claim's test outcomes to its verdict
(:mod:`aftertrain.claims.parts` says it in words): the deciding tests'
strongest outcome among those that ran, ``not decided here`` where a
defining part did not run, and beside the verdict each part's own verdict
and the parts that did not run. Pure functions of the tests' entries
(:class:`~aftertrain.claims.ledgerfile.TestEntry`); the ledger's state
(:mod:`aftertrain.ledger.state`) calls :func:`decide` once per claim.
It does not import torch (the plugin loads with every pytest run).
"""

from __future__ import annotations

from aftertrain.claims.catalogue import Claim
from aftertrain.claims.ledgerfile import ClaimEntry, TestEntry
from aftertrain.claims.parts import DECIDING, NOT_RUN, NotRun, Part, Undecided
from aftertrain.claims.verdicts import (
    BROKEN,
    DOES_NOT_REPRODUCE,
    HOLDS,
    INCONCLUSIVE,
    NOT_COVERED,
    NOT_DECIDED,
    OUTCOMES,
    SKIPPED,
    Outcome,
    Verdict,
)

# A claim's verdict is that of its tests' strongest outcome among those that
# ran; a test skipped or not timed did not run, and its part is named "not
# run" beside the verdict (an untimed timing test beside a passing teeth test
# reads "holds; not run: timed part (not timed)").
NOT_RAN = (Outcome.UNTIMED, Outcome.SKIPPED)
VERDICT_OF = {
    Outcome.ERROR: BROKEN,
    Outcome.FAILED: BROKEN,
    Outcome.XPASSED: BROKEN,
    Outcome.XFAILED: DOES_NOT_REPRODUCE,
    Outcome.INCONCLUSIVE: INCONCLUSIVE,
    Outcome.UNTIMED: SKIPPED,
    Outcome.PASSED: HOLDS,
    Outcome.SKIPPED: SKIPPED,
}


def claim_verdict(outcomes: list[str]) -> Verdict:
    """The verdict of a claim whose tests had ``outcomes``: that of the
    strongest outcome, plain skips aside; ``skipped`` when all were plain
    skips; ``not covered`` when there were none."""
    if isinstance(outcomes, (str, bytes)) or not isinstance(outcomes, (list, tuple)):
        raise ValueError(f"outcomes must be a list of outcome names, got {type(outcomes).__name__}")
    for outcome in outcomes:
        if outcome not in OUTCOMES:
            raise ValueError(f"outcomes must be among {OUTCOMES}, got {outcome!r}")
    if not outcomes:
        return NOT_COVERED
    ran = [o for o in outcomes if o not in NOT_RAN]
    if not ran:
        return SKIPPED
    return VERDICT_OF[min(ran, key=OUTCOMES.index)]


def deciding_parts(claim: Claim) -> frozenset[str]:
    """The parts whose tests decide ``claim``: :data:`aftertrain.claims.parts.DECIDING`
    and the claim's own defining parts (X7's teeth)."""
    return DECIDING | {d.part for d in claim.defining}


def decide(claim: Claim, tests: list[TestEntry]) -> ClaimEntry:
    """The entry of ``claim`` from its ``tests``, as the one rule of
    :mod:`aftertrain.claims.parts` says: the deciding tests' verdict
    (:func:`claim_verdict`), but ``not decided here`` where that is
    ``holds`` or ``does not reproduce`` and a defining part did not run, or
    where none of the deciding tests ran and a test beside the claim did (a
    teeth test alone decides nothing). Beside the verdict: the claim's
    defining parts, those that did not run (``undecided``, with why), the
    other parts of its deciding tests that did not run, each part's own
    verdict, the outcomes of the tests beside the claim (of the method, of
    other models), the reasons of the deciding tests that gave the verdict,
    and every figure of its tests once."""
    deciding = [t for t in tests if t.part in deciding_parts(claim)]
    beside_tests = [t for t in tests if t.part not in deciding_parts(claim)]
    verdict = claim_verdict([t.outcome for t in deciding])
    undecided = []
    for d in claim.defining:
        of_part = [t for t in deciding if t.part == d.part]
        if not any(t.outcome not in NOT_RAN for t in of_part):
            why = list(dict.fromkeys(t.reason or "skipped" for t in of_part))
            undecided.append(Undecided(Part(d.part), d.what, "; ".join(why) or "no test of it ran here"))
    beside_ran = any(t.outcome not in NOT_RAN for t in beside_tests)
    if (verdict in (HOLDS, DOES_NOT_REPRODUCE) and undecided) or (
        verdict in (SKIPPED, NOT_COVERED) and beside_ran
    ):
        verdict = NOT_DECIDED
    if verdict == NOT_COVERED and beside_tests:  # only tests beside it, none of which ran
        verdict = SKIPPED
    beside: dict[Part, dict[Outcome, int]] = {}
    for t in beside_tests:
        counts = beside.setdefault(t.part, {})
        counts[t.outcome] = counts.get(t.outcome, 0) + 1
    undecided_parts = {u.part for u in undecided}
    return ClaimEntry(
        id=claim.id,
        verdict=verdict,
        title=claim.title,
        statement=claim.statement,
        article=claim.article,
        not_run=tuple(n for n in parts_not_run(deciding) if n.part not in undecided_parts),
        parts=part_verdicts(tests),
        defining=tuple(Part(d.part) for d in claim.defining),
        undecided=tuple(undecided),
        beside=beside,
        reasons=tuple(t.reason for t in deciding if t.reason and VERDICT_OF[t.outcome] == verdict),
        # every figure once: several tests of a claim often quote one figure
        measured=tuple(dict.fromkeys(m for t in tests for m in t.measured)),
        tests=tuple(tests),
    )


def parts_not_run(tests: list[TestEntry]) -> list[NotRun]:
    """The parts of a claim that did not run, each once: the part of every
    test that was skipped or not timed (its skip reason), and the parts a
    test named as not run (a baseline comparison with no baseline for this model)."""
    found = [NotRun(t.part, t.reason or "skipped") for t in tests if t.outcome in NOT_RAN]
    found += [n for t in tests for n in t.not_run]
    return list(dict.fromkeys(found))


def part_verdicts(tests: list[TestEntry]) -> dict[Part, Verdict | str]:
    """Each part of a claim -> the verdict of its tests that ran (as
    :func:`claim_verdict`), or ``not run`` when none of them ran."""
    parts: dict[Part, list[Outcome]] = {}
    for t in tests:
        parts.setdefault(t.part, []).append(t.outcome)
        for n in t.not_run:
            parts.setdefault(n.part, [])
    return {
        part: (NOT_RUN if not [o for o in outcomes if o not in NOT_RAN] else claim_verdict(outcomes))
        for part, outcomes in parts.items()
    }
