"""Helpers for the tests that run the checks kit (:mod:`aftertrain.checks`):
what a :class:`~aftertrain.checks.report.Report` failed (and whether only as
edge findings), and the joint-law check of a decoding loop on the toy
models (claim X6's method, which X7's broken generators are put through too)."""

from __future__ import annotations

from collections.abc import Callable

from aftertrain.checks import speculative as CS
from aftertrain.checks.report import Report, Row
from aftertrain.stats import ALPHA
from tests.common.toys import TOY_PROMPT, TOY_TEMPERATURE, toy_draft, toy_target

#: Symbols whose joint law the check enumerates (4 ** 3 = 64 cells).
JOINT_LENGTH = 3


def failed_checks(report: Report) -> set[str]:
    """The names of the checks of ``report`` that have a failing row."""
    return {r.check for r in report.rows if not r.passed}


def edge_findings(report: Report) -> list[Row]:
    """The failed rows of ``report``, once it is checked that the report
    passed, that some row failed, and that every failed row is an edge
    finding (severity ``"edge"``: true, reported, not a failure)."""
    failed = [r for r in report.rows if not r.passed]
    assert report.passed and failed and {r.severity for r in failed} == {"edge"}, str(report)
    return failed


def joint_law_report(generate: Callable, k: int = 1, runs: int = 600, seed: int = 0) -> Report:
    """The kit's ``check_generator`` on ``generate`` at one ``k``: the first
    :data:`JOINT_LENGTH` symbols of ``runs`` calls (toy 4-symbol target and
    draft, temperature 0.3) against the enumerated law (chi-square at
    alpha 1e-6; for k = 4 the run is k + 1 = 5 symbols long, so the first
    round really drafts 4), and greedy output equal to plain greedy
    decoding of the toy target."""
    return CS.check_generator(
        generate,
        toy_target(),
        toy_draft(),
        runs=runs,
        ks=(k,),
        length=JOINT_LENGTH,
        temperatures=(TOY_TEMPERATURE,),
        prompt=TOY_PROMPT.tolist(),
        alpha=ALPHA,
        seed=seed,
    )
