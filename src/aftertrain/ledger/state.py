"""The ledger's state: test outcomes per claim and the verdicts they give.

No pytest hooks here (they are in :mod:`aftertrain.ledger.plugin`); this
module reads test reports, resolves markers, ranks outcomes and writes the
JSON. It does not import torch (the plugin loads with every pytest run).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from aftertrain.claims.catalogue import CLAIMS, Claim
from aftertrain.claims.ledgerfile import FORMAT, LedgerFile
from aftertrain.claims.parts import (
    DECIDING,
    NOT_RUN,
    Part,
    beside_text,
    details_text,
)
from aftertrain.claims.verdicts import (
    BROKEN,
    DOES_NOT_REPRODUCE,
    HOLDS,
    INCONCLUSIVE,
    NOT_COVERED,
    NOT_DECIDED,
    SKIPPED,
    VERDICTS,
)
from aftertrain.core import runmeta
from aftertrain.core.enums import StrEnum
from aftertrain.ledger.model import READS_MODEL_PROPERTY, ledger_meta

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


# Test outcomes, strongest first: a test's outcome is the strongest of its
# phases (setup, call, teardown), a passing setup or teardown not counting.
class Outcome(StrEnum):
    """A test's outcome, strongest first (str-valued: the JSON holds the name)."""

    ERROR = "error"
    FAILED = "failed"
    XPASSED = "xpassed"
    XFAILED = "xfailed"
    INCONCLUSIVE = "inconclusive"
    UNTIMED = "untimed"
    PASSED = "passed"
    SKIPPED = "skipped"


OUTCOMES = tuple(Outcome)
# A claim's verdict is that of its tests' strongest outcome among those that
# ran; a test skipped or not timed did not run, and its part is named "not
# run" beside the verdict (an untimed timing test beside a passing teeth test
# reads "holds; not run: timed part (not timed)").
NOT_RAN = (Outcome.UNTIMED, Outcome.SKIPPED)
VERDICT_OF = {Outcome.ERROR: BROKEN, Outcome.FAILED: BROKEN, Outcome.XPASSED: BROKEN,
              Outcome.XFAILED: DOES_NOT_REPRODUCE, Outcome.INCONCLUSIVE: INCONCLUSIVE,
              Outcome.UNTIMED: SKIPPED, Outcome.PASSED: HOLDS, Outcome.SKIPPED: SKIPPED}


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
            return (f"{item.nodeid}: unknown claim ID(s) {', '.join(map(repr, unknown))}; "
                    f"known IDs: {', '.join(CLAIMS)}")
    return None


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
        # nodeid -> {"claims", "outcome", "reason", "xfail_reason", "measured",
        #            "part", "not_run", "reads_model"}
        self.tests: dict[str, dict] = {}
        self.tables: dict[str, object] = {}
        #: the tables written by tests that do not read the model
        self.model_free_tables: list[str] = []
        #: ``meta["model_free_from"]`` when :meth:`reuse` took an earlier run's outcomes
        self.model_free_from: dict | None = None
        self._taken: frozenset[str] = frozenset()  # the node IDs reuse took

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
        test = self.tests.setdefault(report.nodeid, {
            "claims": list(ids), "outcome": None, "reason": None, "xfail_reason": None,
            "measured": [], "part": str(props.get(PART_PROPERTY, Part.ASSERTIONS)), "not_run": [],
            "reads_model": reads,
        })
        if reads:  # a phase may find the model shaped the outcome (a finding made lenient)
            test["reads_model"] = True
        if TIMED_PROPERTY in props and test["part"] == Part.ASSERTIONS:
            test["part"] = str(Part.TIMED)
        if not (report.when != "call" and report.passed):  # a passing setup/teardown is neutral
            outcome = phase_outcome(report)
            current = test["outcome"]
            if current is None or OUTCOMES.index(outcome) < OUTCOMES.index(current):
                test["outcome"] = outcome
                test["reason"] = phase_reason(report)
        if hasattr(report, "wasxfail"):
            test["xfail_reason"] = report.wasxfail
        if report.when == "teardown":  # user properties are final by now
            test["measured"] = [v for k, v in report.user_properties if k == MEASURED_PROPERTY]
            test["not_run"] = [{"part": str(Part(v[0])), "reason": str(v[1])}
                               for k, v in report.user_properties if k == NOT_RUN_PROPERTY]

    def reuse(self, earlier: LedgerFile, source: str) -> int:
        """Take ``earlier``'s outcomes of the tests that do not read the model
        (``reads_model`` false), and the tables they wrote, as this run's:
        ``--model-free-from``, which does not run those tests again. The
        verdicts are then decided as if they had run here, and each claim
        lists them after this run's tests. Returns how many tests were taken;
        :attr:`model_free_from` says from where (the file's name, its model,
        commit and the count)."""
        taken: dict[str, dict] = {}
        for claim in earlier.claims:
            for t in claim.tests:
                if t.reads_model is not False:
                    continue
                record = taken.setdefault(t.nodeid, {
                    "claims": [], "outcome": t.outcome, "reason": t.reason,
                    "xfail_reason": t.xfail_reason, "measured": list(t.measured), "part": t.part,
                    "not_run": [{"part": n.part, "reason": n.reason} for n in t.not_run],
                    "reads_model": False,
                })
                record["claims"].append(claim.id)
        self.tests.update(taken)
        self._taken = frozenset(taken)
        for name in earlier.model_free_tables:
            if name in earlier.tables and name not in self.model_free_tables:
                self.tables[name] = earlier.tables[name]
                self.model_free_tables.append(name)
        meta = earlier.meta
        self.model_free_from = {"ledger": Path(source).name, "model": meta.get("model"),
                                "model_sha256": meta.get("model_sha256"),
                                "commit": meta.get("commit"), "tests": len(taken)}
        return len(taken)

    def entries(self) -> list[dict]:
        """One dict per claim, in CLAIMS.md order: id, title, statement,
        article, verdict (:func:`decide`), defining (the claim's defining
        parts), undecided (part, what and reason of each defining part that
        did not run), not_run (part and reason of each other part of its
        deciding tests that did not run), parts (part -> its verdict, or
        ``not run``; the parts beside the claim too), beside (part ->
        outcome -> count, of the tests of the method and of other models),
        reasons (of the deciding tests that gave the verdict), tests
        (nodeid, outcome, reason, xfail_reason, measured, part, not_run) and
        measured (every figure of its tests)."""
        out = []
        # this run's tests first, then those taken from an earlier run (reuse)
        ordered = sorted(self.tests.items(), key=lambda kv: kv[0] in self._taken)
        for claim in CLAIMS.values():
            tests = [{"nodeid": nodeid, **{k: v for k, v in t.items() if k != "claims"}}
                     for nodeid, t in ordered if claim.id in t["claims"]]
            out.append({
                "id": claim.id, "title": claim.title, "statement": claim.statement,
                "article": claim.article, **decide(claim, tests), "tests": tests,
                # every figure once: several tests of a claim often quote one figure
                "measured": list(dict.fromkeys(m for t in tests for m in t["measured"])),
            })
        return out

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
            figures = "; ".join(map(str, e["measured"]))
            line = f"{e['id']:<4} {verdict_text(e):<18} {e['title']}"
            lines.append(f"{line}  [{figures}]" if figures else line)
        for e in entries:
            if e["verdict"] == NOT_COVERED:
                continue
            # a skip's reasons are those of the parts not run, said once below
            why = ([] if e["verdict"] in (HOLDS, SKIPPED, NOT_DECIDED)
                   else list(dict.fromkeys(e["reasons"])))
            details = details_text(e["undecided"], e["not_run"], e["parts"], e["beside"])
            if e["beside"]:  # said on a line of its own below
                details.pop()
            why.extend(details)
            lines.extend(f"{e['id']} {e['verdict']}: {r}" for r in why)
            if e["beside"]:
                lines.append(f"{e['id']} beside the claim: {beside_text(e['beside'])}")
            failed = [t for t in e["tests"] if t["part"] not in deciding_parts(CLAIMS[e["id"]])
                      and VERDICT_OF.get(t["outcome"]) == BROKEN]
            lines.extend(f"{e['id']} {t['part']} failed (the check, not the claim): "
                         f"{t['nodeid']}: {t['reason']}" for t in failed)
        if self.model_free_from is not None:
            src = self.model_free_from
            lines.append(f"not run here: {src['tests']} claim tests that do not read the model; "
                         f"their outcomes are those of {src['ledger']} (model {src['model']}, "
                         f"the same code)")
        uncovered = [e["id"] for e in entries if e["verdict"] == NOT_COVERED]
        if uncovered and len(uncovered) < len(entries):
            lines.append(f"not covered (no test of this run carries the ID): {', '.join(uncovered)}")
        counts = {v: sum(e["verdict"] == v for e in entries) for v in VERDICTS}
        lines.append(", ".join(f"{n} {v}" for v, n in counts.items() if n))
        return lines

    def ledger_file(self, meta: dict) -> LedgerFile:
        """This run as the one ledger file format (:mod:`aftertrain.claims.ledgerfile`)."""
        if self.model_free_from is not None:
            meta = {**meta, "model_free_from": self.model_free_from}
        data = {"format": FORMAT, "meta": meta, "claims": self.entries(), "tables": self.tables,
                "model_free_tables": self.model_free_tables}
        return LedgerFile.from_json(json.loads(json.dumps(data, default=str)), "this run")

    def write_json(self, path: str | os.PathLike, config: pytest.Config) -> None:
        self.ledger_file(run_meta(config)).write(path)


def claim_verdict(outcomes: list[str]) -> str:
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


def decide(claim: Claim, tests: list[dict]) -> dict:
    """The verdict of ``claim`` from its ``tests`` (dicts with part, outcome,
    reason, not_run), as the one rule of :mod:`aftertrain.claims.parts`
    says: the deciding tests' verdict (:func:`claim_verdict`), but ``not
    decided here`` where that is ``holds`` or ``does not reproduce`` and a
    defining part did not run, or where none of the deciding tests ran and
    a test beside the claim did (a teeth test alone decides nothing).
    Returns ``{"verdict", "defining", "undecided", "not_run", "parts",
    "beside", "reasons"}`` (see :meth:`Ledger.entries`)."""
    deciding = [t for t in tests if t["part"] in deciding_parts(claim)]
    beside_tests = [t for t in tests if t["part"] not in deciding_parts(claim)]
    verdict = claim_verdict([t["outcome"] for t in deciding])
    undecided = []
    for d in claim.defining:
        of_part = [t for t in deciding if t["part"] == d.part]
        if not any(t["outcome"] not in NOT_RAN for t in of_part):
            why = list(dict.fromkeys(t["reason"] or "skipped" for t in of_part))
            undecided.append({"part": str(d.part), "what": d.what,
                              "reason": "; ".join(why) or "no test of it ran here"})
    beside_ran = any(t["outcome"] not in NOT_RAN for t in beside_tests)
    if (verdict in (HOLDS, DOES_NOT_REPRODUCE) and undecided) or \
            (verdict in (SKIPPED, NOT_COVERED) and beside_ran):
        verdict = NOT_DECIDED
    if verdict == NOT_COVERED and beside_tests:  # only tests beside it, none of which ran
        verdict = SKIPPED
    beside: dict[str, dict[str, int]] = {}
    for t in beside_tests:
        counts = beside.setdefault(t["part"], {})
        counts[str(t["outcome"])] = counts.get(str(t["outcome"]), 0) + 1
    undecided_parts = {u["part"] for u in undecided}
    return {
        "verdict": verdict, "defining": [str(d.part) for d in claim.defining],
        "undecided": undecided,
        "not_run": [n for n in parts_not_run(deciding) if n["part"] not in undecided_parts],
        "parts": part_verdicts(tests), "beside": beside,
        "reasons": [t["reason"] for t in deciding
                    if t["reason"] and VERDICT_OF[t["outcome"]] == verdict],
    }


def parts_not_run(tests: list[dict]) -> list[dict]:
    """The parts of a claim that did not run, each ``{"part", "reason"}``
    once: the part of every test that was skipped or not timed (its skip
    reason), and the parts a test named as not run (a baseline comparison
    with no baseline for this model)."""
    found = [{"part": t["part"], "reason": t["reason"] or "skipped"}
             for t in tests if t["outcome"] in NOT_RAN]
    found += [n for t in tests for n in t["not_run"]]
    return [dict(pair) for pair in dict.fromkeys(tuple(n.items()) for n in found)]


def part_verdicts(tests: list[dict]) -> dict[str, str]:
    """Each part of a claim -> the verdict of its tests that ran (as
    :func:`claim_verdict`), or ``not run`` when none of them ran."""
    parts: dict[str, list[str]] = {}
    for t in tests:
        parts.setdefault(t["part"], []).append(t["outcome"])
        for n in t["not_run"]:
            parts.setdefault(n["part"], [])
    return {part: (NOT_RUN if not [o for o in outcomes if o not in NOT_RAN]
                   else claim_verdict(outcomes)) for part, outcomes in parts.items()}


def verdict_text(entry: dict) -> str:
    """The verdict, marked when some part did not run: ``holds`` or
    ``holds (part not run)``."""
    partly = entry["not_run"] and entry["verdict"] not in (SKIPPED, NOT_COVERED, NOT_DECIDED)
    return f"{entry['verdict']} (part not run)" if partly else entry["verdict"]


#: The ledger meta's fingerprint of the tracked code (:func:`aftertrain.core.runmeta.worktree`),
#: beside the header's keys: ``--model-free-from`` compares it.
WORKTREE = "worktree"


def run_meta(config: pytest.Config) -> dict:
    """What the run was (:func:`aftertrain.core.runmeta.collect`), on the model
    the claims ran on, and the fingerprint of its tracked code (:data:`WORKTREE`)."""
    return {**runmeta.collect(config.rootpath, **ledger_meta(config), quick=quick_run()),
            WORKTREE: runmeta.worktree(config.rootpath)}


def quick_run() -> bool:
    """Whether this run is a quick one (``AFTERTRAIN_QUICK=1``, set by ``aftertrain report --quick``)."""
    return os.environ.get("AFTERTRAIN_QUICK") == "1"
