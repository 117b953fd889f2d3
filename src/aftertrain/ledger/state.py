"""The ledger's state: test outcomes per claim and the verdicts they give.

No pytest hooks here (they are in :mod:`aftertrain.ledger.plugin`); this
module reads test reports, ranks outcomes and writes the JSON; the verdict
each claim's tests give is :mod:`aftertrain.ledger.verdict_rule`'s
(re-exported). It does not import torch (the plugin loads with every pytest
run).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from aftertrain.claims.catalogue import CLAIMS
from aftertrain.claims.ledgerfile import ClaimEntry, LedgerFile, TestEntry
from aftertrain.claims.parts import (
    NOT_RUN,  # noqa: F401 (re-exported)
    NotRun,
    Part,
    beside_text,
)
from aftertrain.claims.verdicts import (
    BROKEN,
    HOLDS,
    NOT_COVERED,
    NOT_DECIDED,
    OUTCOMES,
    SKIPPED,
    VERDICTS,
    Outcome,
)
from aftertrain.core import runmeta
from aftertrain.ledger.claim_marker import not_selected
from aftertrain.ledger.model_under_test import READS_MODEL_PROPERTY, ledger_meta
from aftertrain.ledger.verdict_rule import (  # noqa: F401 (re-exported)
    NOT_RAN,
    VERDICT_OF,
    claim_verdict,
    decide,
    deciding_parts,
    part_verdicts,
    parts_not_run,
)

# User properties a test sets (through the claim_record fixture); they travel
# with the reports to an xdist controller.
CLAIM_PROPERTY = "claims"  # the test's claim IDs, set at collection
MEASURED_PROPERTY = "measured"  # a figure (claim_record.measured)
TABLE_PROPERTY = "aftertrain-table"  # (name, rows) (claim_record.table)
INCONCLUSIVE_PROPERTY = "aftertrain-inconclusive"  # the reason of a skip that is inconclusive
UNTIMED_PROPERTY = "aftertrain-untimed"  # the reason of a skip because nothing was timed
TIMED_PROPERTY = "aftertrain-timed"  # the test is a claim's timed part (claim_record.require_timing)
PART_PROPERTY = "aftertrain-part"  # the test's part when fixed at collection (its markers)
NOT_RUN_PROPERTY = "aftertrain-not-run"  # (part, reason): a part of the test that did not run


#: How a crash line names pytest's own expected-failure exception (``pytest.xfail()``).
_XFAIL_CRASH = f"{pytest.xfail.Exception.__module__}.{pytest.xfail.Exception.__qualname__}"


def xfail_hides_an_error(report: pytest.TestReport) -> bool:
    """Whether ``report`` is a setup or teardown exception that an ``xfail``
    marker turned into an "xfailed" report. pytest does that for every
    phase, so a fixture that fails would read as the known gap the marker
    names; only ``pytest.xfail()`` called in a fixture is an expected failure
    there."""
    if report.when == "call" or not hasattr(report, "wasxfail"):
        return False
    crash = getattr(report.longrepr, "reprcrash", None)
    return crash is not None and not crash.message.startswith(_XFAIL_CRASH)


def phase_outcome(report: pytest.TestReport) -> Outcome:
    """error, failed, xpassed, xfailed, inconclusive, untimed, passed or
    skipped, for one phase; an exception in setup or teardown is an error,
    also under an ``xfail`` marker."""
    if report.when != "call" and (report.failed or xfail_hides_an_error(report)):
        return Outcome.ERROR
    if hasattr(report, "wasxfail"):
        return Outcome.XFAILED if report.skipped else Outcome.XPASSED
    if report.skipped:
        names = {name for name, _ in report.user_properties}
        if INCONCLUSIVE_PROPERTY in names:
            return Outcome.INCONCLUSIVE
        if UNTIMED_PROPERTY in names:
            return Outcome.UNTIMED
    return Outcome(report.outcome)


def phase_reason(report: pytest.TestReport) -> str | None:
    """One line saying why a phase did not pass: the failure's message, the
    xfail reason or the skip reason; None for a pass."""
    if xfail_hides_an_error(report):
        return report.longrepr.reprcrash.message
    if hasattr(report, "wasxfail"):
        return report.wasxfail or None
    if report.skipped:
        longrepr = report.longrepr
        if isinstance(longrepr, tuple) and len(longrepr) == 3:
            return str(longrepr[2]).removeprefix("Skipped: ")
        return str(longrepr)
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        if crash is not None:
            return crash.message
        lines = str(report.longrepr).strip().splitlines()
        return lines[-1] if lines else "failed"
    return None


class Ledger:
    """Claim-tagged test outcomes of one run, and the verdicts they give."""

    def __init__(self) -> None:
        #: nodeid -> the test's entry as it stands (its phases so far)
        self.tests: dict[str, TestEntry] = {}
        #: nodeid -> the IDs of the claims the test counts toward
        self.claims_of: dict[str, tuple[str, ...]] = {}
        self.tables: dict[str, object] = {}
        #: the tables written by tests that do not read the model
        self.model_free_tables: list[str] = []
        #: ``meta["model_free_from"]`` when :meth:`reuse` took an earlier run's outcomes
        self.model_free_from: dict | None = None
        self._taken: frozenset[str] = frozenset()  # the node IDs reuse took
        #: the claims ``--claim`` selected (None: all); the others did not run, for this reason
        self.selected: tuple[str, ...] | None = None
        self.not_selected_reason = ""

    def add(self, report: pytest.TestReport) -> None:
        """Take one phase's report (setup, call or teardown)."""
        props = dict(report.user_properties)
        reads = props.get(READS_MODEL_PROPERTY)
        if report.when == "teardown":
            for name, value in report.user_properties:
                if name == TABLE_PROPERTY:
                    table, rows = value
                    self.tables[table] = rows  # the last writer's rows, and its kind
                    if table in self.model_free_tables:
                        self.model_free_tables.remove(table)
                    if reads is False:
                        self.model_free_tables.append(table)
        ids = props.get(CLAIM_PROPERTY)
        if not ids:
            return
        self.claims_of.setdefault(report.nodeid, tuple(ids))
        test = self.tests.get(report.nodeid) or TestEntry(
            report.nodeid, None, part=Part(props.get(PART_PROPERTY, Part.ASSERTIONS)), reads_model=reads
        )
        change: dict = {}
        if reads:  # a phase may find the model shaped the outcome (a finding made lenient)
            change["reads_model"] = True
        if TIMED_PROPERTY in props and test.part == Part.ASSERTIONS:
            change["part"] = Part.TIMED
        if not (report.when != "call" and report.passed):  # a passing setup/teardown is neutral
            outcome = phase_outcome(report)
            current = test.outcome
            if current is None or OUTCOMES.index(outcome) < OUTCOMES.index(current):
                change.update(outcome=outcome, reason=phase_reason(report))
        if hasattr(report, "wasxfail"):
            change["xfail_reason"] = report.wasxfail
        if report.when == "teardown":  # user properties are final by now
            change["measured"] = tuple(v for k, v in report.user_properties if k == MEASURED_PROPERTY)
            change["not_run"] = tuple(
                NotRun(Part(v[0]), str(v[1])) for k, v in report.user_properties if k == NOT_RUN_PROPERTY
            )
        self.tests[report.nodeid] = replace(test, **change)

    def reuse(self, earlier: LedgerFile, source: str) -> int:
        """Take ``earlier``'s outcomes of the tests that do not read the model
        (``reads_model`` false), and the tables they wrote, as this run's:
        ``--model-free-from``, which does not run those tests again. The
        verdicts are then decided as if they had run here, and each claim
        lists them after this run's tests. Returns how many tests were taken;
        :attr:`model_free_from` says from where (the file's name, its model,
        commit and the count)."""
        taken: dict[str, TestEntry] = {}
        claims: dict[str, list[str]] = {}
        for claim in earlier.claims:
            for t in claim.tests:
                if t.reads_model is not False:
                    continue
                taken.setdefault(t.nodeid, t)
                claims.setdefault(t.nodeid, []).append(claim.id)
        self.tests.update(taken)
        self.claims_of.update({nodeid: tuple(ids) for nodeid, ids in claims.items()})
        self._taken = frozenset(taken)
        for name in earlier.model_free_tables:
            if name in earlier.tables and name not in self.model_free_tables:
                self.tables[name] = earlier.tables[name]
                self.model_free_tables.append(name)
        meta = earlier.meta
        self.model_free_from = {
            "ledger": Path(source).name,
            "model": meta.get("model"),
            "model_sha256": meta.get("model_sha256"),
            "commit": meta.get("commit"),
            "tests": len(taken),
        }
        return len(taken)

    def entries(self) -> list[ClaimEntry]:
        """One entry per claim, in CLAIMS.md order (:func:`decide`), with its
        tests: this run's first, then those taken from an earlier run (:meth:`reuse`)."""
        ordered = sorted(self.tests.items(), key=lambda kv: kv[0] in self._taken)
        return [
            decide(claim, [t for nodeid, t in ordered if claim.id in self.claims_of[nodeid]])
            if self.selected is None or claim.id in self.selected
            else not_selected(claim, self.not_selected_reason)
            for claim in CLAIMS.values()
        ]

    def summary_lines(self) -> list[str]:
        """The end-of-run lines: one per claim (verdict, title, figures); then
        why, for every claim that is not a plain ``holds`` (its reasons, the
        defining parts that did not run, the other parts that did not run;
        the claims no test carried in one line); what the tests beside each
        claim gave (the method, other models) and why one of them failed;
        then the counts."""
        entries = self.entries()
        lines = []
        for e in entries:
            figures = "; ".join(e.measured)
            line = f"{e.id:<4} {e.verdict_text():<18} {e.title}"
            lines.append(f"{line}  [{figures}]" if figures else line)
        unselected = [] if self.selected is None else [e.id for e in entries if e.id not in self.selected]
        for e in entries:
            if e.verdict == NOT_COVERED or e.id in unselected:
                continue
            # a skip's reasons are those of the parts not run, said once below
            why = [] if e.verdict in (HOLDS, SKIPPED, NOT_DECIDED) else list(dict.fromkeys(e.reasons))
            details = e.details()
            if e.beside:  # said on a line of its own below
                details.pop()
            why.extend(details)
            lines.extend(f"{e.id} {e.verdict}: {r}" for r in why)
            if e.beside:
                lines.append(f"{e.id} beside the claim: {beside_text(e.beside)}")
            failed = [
                t
                for t in e.tests
                if t.part not in deciding_parts(CLAIMS[e.id]) and VERDICT_OF.get(t.outcome) == BROKEN
            ]
            lines.extend(
                f"{e.id} {t.part} failed (the check, not the claim): {t.nodeid}: {t.reason}" for t in failed
            )
        if self.model_free_from is not None:
            src = self.model_free_from
            lines.append(
                f"not run here: {src['tests']} claim tests that do not read the model; "
                f"their outcomes are those of {src['ledger']} (model {src['model']}, "
                f"the same code)"
            )
        if unselected:
            lines.append(f"not run ({self.not_selected_reason}): {', '.join(unselected)}")
        uncovered = [e.id for e in entries if e.verdict == NOT_COVERED]
        if uncovered and len(uncovered) < len(entries):
            lines.append(f"not covered (no test of this run carries the ID): {', '.join(uncovered)}")
        counts = {v: sum(e.verdict == v for e in entries) for v in VERDICTS}
        lines.append(", ".join(f"{n} {v}" for v, n in counts.items() if n))
        return lines

    def ledger_file(self, meta: dict) -> LedgerFile:
        """This run as the one ledger file (:mod:`aftertrain.claims.ledgerfile`)."""
        if self.model_free_from is not None:
            meta = {**meta, "model_free_from": self.model_free_from}
        return LedgerFile(
            tuple(self.entries()), meta, dict(self.tables), tuple(self.model_free_tables), "this run"
        )

    def write_json(self, path: str | os.PathLike, config: pytest.Config) -> None:
        """Write this run's ledger file to ``path`` atomically (:meth:`LedgerFile.write`), with
        the run's metadata (:func:`run_meta`) taken from ``config`` now."""
        self.ledger_file(run_meta(config)).write(path)


#: The ledger meta's fingerprint of the tracked code (:func:`aftertrain.core.runmeta.worktree`),
#: beside the header's keys: ``--model-free-from`` compares it.
WORKTREE = "worktree"


def run_meta(config: pytest.Config) -> dict:
    """What the run was (:func:`aftertrain.core.runmeta.collect`), on the model
    the claims ran on, and the fingerprint of its tracked code (:data:`WORKTREE`)."""
    return {
        **runmeta.collect(config.rootpath, **ledger_meta(config), quick=quick_run()),
        WORKTREE: runmeta.worktree(config.rootpath),
    }


def quick_run() -> bool:
    """Whether this run is a quick one (``AFTERTRAIN_QUICK=1``, set by ``aftertrain report --quick``)."""
    return os.environ.get("AFTERTRAIN_QUICK") == "1"
