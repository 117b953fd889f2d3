"""The ``claim`` marker: which claims a test counts toward (:func:`claim_ids`,
checked by :func:`marker_problem`), and ``--claim ID``, which runs the tests
of the named claims alone.

``-k`` does not read a marker's arguments; so
``pytest --claim Q2`` (several: ``--claim Q2 --claim Q3`` or ``--claim
Q2,Q3``) keeps the tests that carry one of those IDs and deselects the rest.
The ledger shows every other claim as not run, with the selection as its
reason (:func:`not_selected`), never as "not covered". Each test's claim
IDs are also among its keywords, so ``-k Q2`` finds them too (as ``-k``
matches, a substring: ``-k Q1`` also takes Q10).
"""

from __future__ import annotations

import pytest

from aftertrain.claims.catalogue import CLAIMS, Claim
from aftertrain.claims.ledgerfile import ClaimEntry
from aftertrain.claims.parts import NotRun, Part
from aftertrain.claims.verdicts import SKIPPED

FLAG = "--claim"


def claim_ids(item: pytest.Item) -> tuple[str, ...]:
    """The claim IDs of every ``claim`` marker on ``item``, closest first
    (the function's, the decorator nearest the function first; then its
    class's; then its module's), each once where first named. A test counts
    toward every claim any of its markers names."""
    ids: list[str] = []
    for marker in item.iter_markers("claim"):
        for claim_id in marker.args:
            if claim_id not in ids:
                ids.append(claim_id)
    return tuple(ids)


def marker_problem(item: pytest.Item) -> str | None:
    """Why ``item``'s claim markers are invalid (a marker without IDs, with
    keyword arguments, or with an unknown ID), or None."""
    for marker in item.iter_markers("claim"):
        if not marker.args or marker.kwargs:
            return f"{item.nodeid}: claim markers take IDs only, e.g. claim('Q2', 'Q3')"
        unknown = [a for a in marker.args if not (isinstance(a, str) and a in CLAIMS)]
        if unknown:
            return (
                f"{item.nodeid}: unknown claim ID(s) {', '.join(map(repr, unknown))}; "
                f"known IDs: {', '.join(CLAIMS)}"
            )
    return None


def not_selected(claim: Claim, reason: str) -> ClaimEntry:
    """The entry of a claim ``--claim`` did not select: skipped, its
    assertions not run for ``reason`` (a claim test that also
    carries a selected claim's ID ran, but decides only that claim here)."""
    return ClaimEntry(
        id=claim.id,
        verdict=SKIPPED,
        title=claim.title,
        statement=claim.statement,
        article=claim.article,
        not_run=(NotRun(Part.ASSERTIONS, reason),),
        defining=tuple(Part(d.part) for d in claim.defining),
    )


def selected_claims(values: list[str] | None) -> tuple[str, ...] | None:
    """The claim IDs ``--claim`` named (each value one ID or several joined
    by commas), in CLAIMS.md order; None when it was not given. ValueError
    naming the unknown IDs and listing the known ones."""
    if not values:
        return None
    named = [v.strip() for value in values for v in value.split(",")]
    unknown = [v for v in named if v not in CLAIMS]
    if unknown:
        raise ValueError(
            f"{FLAG} {', '.join(map(repr, unknown))}: not a claim of CLAIMS.md; "
            f"known IDs: {', '.join(CLAIMS)}"
        )
    return tuple(c for c in CLAIMS if c in named)


def reason(ids: tuple[str, ...]) -> str:
    """Why a claim outside the selection did not run: the one text of the
    ledger's entry and its end-of-run line."""
    return f"not selected: this run ran only {' '.join(f'{FLAG} {c}' for c in ids)}"


class ByClaim:
    """Deselect every test that carries none of the selected claims' IDs."""

    def __init__(self, ids: tuple[str, ...]) -> None:
        self.ids = frozenset(ids)

    @pytest.hookimpl(trylast=True)  # after -m and -k have deselected theirs
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        keep, drop = [], []
        for item in items:
            (keep if self.ids & set(claim_ids(item)) else drop).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep
