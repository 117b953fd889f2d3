"""The parts of a claim a test can be, which of them decide it, and how the
ledger and the report say what did and did not run.

A claim is decided by its *deciding* tests: the assertions of the claim on
the model under test (or on fixed numbers), its comparisons with our stored
baselines, its timed part. Three kinds of test are reported beside the claim
and never decide it:

- a test of the *method* (``teeth``: a broken variant fails the check;
  ``method``: a decision rule's self-test, a tool on a toy or on the
  article's worked numbers) checks the check, not the claim;
- a test of the claim *on another model* (the bundled ``overfit``,
  whatever model the run is on) is that model's outcome;
- an *expectation of a model* (a figure or direction measured on our
  reference, pinned to it) is that model's, never the article's claim.

Each of them can fail the run; none makes a claim ``holds``, ``does not
reproduce`` or ``broken``.

The rule (the README, "The claims on our two bundled models"): a claim
reads ``holds`` or ``does not reproduce`` only when every one of its defining parts (:attr:`Claim.defining
<aftertrain.claims.catalogue.Claim.defining>`) ran; when one did not, it
reads ``not decided here`` with that part and the reason, and the parts that
did run are listed with their own outcome.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from aftertrain.core.enums import StrEnum


class Part(StrEnum):
    """What a test is to its claims (str-valued: the ledger's JSON holds the name)."""

    ASSERTIONS = "assertions"
    BASELINE = "baseline comparison"
    TIMED = "timed part"
    TEETH = "teeth"
    METHOD = "method"
    ANOTHER_MODEL = "on another model"
    EXPECTATION = "expectation of our model"


#: The parts that decide a claim (besides a claim's own defining parts,
#: e.g. X7's teeth: the checks' teeth are what X7 claims).
DECIDING = frozenset({Part.ASSERTIONS, Part.BASELINE, Part.TIMED})
#: The tests of the method: they check the check.
METHOD_PARTS = (Part.TEETH, Part.METHOD)
#: Reported beside a claim, never deciding it: the method and other models' outcomes.
BESIDE = (*METHOD_PARTS, Part.ANOTHER_MODEL, Part.EXPECTATION)

#: What a part that did not run says in place of an outcome.
NOT_RUN = "not run"


@dataclass(frozen=True)
class NotRun:
    """A part of a claim that did not run, and why."""

    part: Part
    reason: str


@dataclass(frozen=True)
class Undecided:
    """A defining part of a claim that did not run: the ``part``, ``what`` it
    is for this claim, and why it did not run."""

    part: Part
    what: str
    reason: str


def not_run_text(not_run: Iterable[NotRun]) -> str:
    """``not run: baseline comparison (no baseline for this model); ...``, or ""."""
    items = [f"{n.part} ({n.reason})" for n in not_run]
    return "not run: " + "; ".join(items) if items else ""


def undecided_text(undecided: Iterable[Undecided]) -> str:
    """``timed part, the timing: not timed; ...``: the defining parts that did
    not run (``part``, ``what`` it is for the claim, ``reason``)."""
    return "; ".join(f"{n.part}, {n.what}: {n.reason}" for n in undecided)


def ran_text(parts: Mapping[str, str], beside: Iterable[str]) -> str:
    """``assertions holds, baseline comparison holds``: each deciding part
    that ran (not in ``beside``, the parts beside the claim) with its own
    verdict, from ``parts`` (part -> verdict or :data:`NOT_RUN`)."""
    beside = set(beside)
    return ", ".join(f"{p} {v}" for p, v in parts.items() if v != NOT_RUN and p not in beside)


def details_text(
    undecided: Iterable[Undecided],
    not_run: Iterable[NotRun],
    parts: Mapping[str, str],
    beside: Mapping[str, Mapping[str, int]],
) -> list[str]:
    """What stands beside a claim's verdict, one phrase each: the defining
    parts that did not run (and the parts that did, with their verdicts),
    the other parts that did not run, the tests beside the claim."""
    out = []
    undecided = list(undecided)
    if undecided:
        ran = ran_text(parts, beside)
        out.append(f"defining part not run: {undecided_text(undecided)}" + (f" (ran: {ran})" if ran else ""))
    if not_run_text(not_run):
        out.append(not_run_text(not_run))
    if beside:
        out.append(beside_text(beside))
    return out


def beside_text(counts: Mapping[str, Mapping[str, int]]) -> str:
    """``method checked: 12 teeth pass, 1 method tests pass; on another
    model: 1 pass`` from ``{part: {outcome: count}}`` of the tests reported
    beside a claim (the method's parts said once, first)."""

    def said(part: str) -> str:
        label = {Part.TEETH: "teeth ", Part.METHOD: "method tests "}.get(part, "")
        return ", ".join(f"{n} {label}{'pass' if o == 'passed' else o}" for o, n in counts[part].items())

    method = [said(p) for p in METHOD_PARTS if p in counts]
    others = [f"{p}: {said(p)}" for p in counts if p not in METHOD_PARTS]
    return "; ".join(([f"method checked: {', '.join(method)}"] if method else []) + others)
