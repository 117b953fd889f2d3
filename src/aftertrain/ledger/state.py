"""The ledger's state: test outcomes per claim and the verdicts they give.

No pytest hooks here (they are in :mod:`aftertrain.ledger.plugin`); this
module reads test reports, resolves markers, ranks outcomes and writes the
JSON. It does not import torch (the plugin loads with every pytest run).
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
from pathlib import Path

import pytest

from aftertrain.claims.catalogue import CLAIMS
from aftertrain.claims.verdicts import (
    BROKEN,
    DOES_NOT_REPRODUCE,
    HOLDS,
    INCONCLUSIVE,
    NOT_COVERED,
    SKIPPED,
    VERDICTS,
)
from aftertrain.core.io import atomic_write

# User properties a test sets (through the claim_record fixture); they travel
# with the reports to an xdist controller.
CLAIM_PROPERTY = "claims"  # the test's claim IDs, set at collection
MEASURED_PROPERTY = "measured"  # a figure (claim_record.measured)
TABLE_PROPERTY = "aftertrain-table"  # (name, rows) (claim_record.table)
INCONCLUSIVE_PROPERTY = "aftertrain-inconclusive"  # the reason of a skip that is inconclusive
UNTIMED_PROPERTY = "aftertrain-untimed"  # the reason of a skip because nothing was timed

# Test outcomes, strongest first: a test's outcome is the strongest of its
# phases (setup, call, teardown), a passing setup or teardown not counting.
OUTCOMES = ("error", "failed", "xpassed", "xfailed", "inconclusive", "untimed", "passed",
            "skipped")
# A claim's verdict is that of its tests' strongest outcome, plain skips
# aside. "untimed" outranks "passed": a timing claim whose timing did not run
# is skipped even if an untimed test of it (a teeth test on fixed numbers)
# passed, so untimed never reads as holds.
VERDICT_OF = {"error": BROKEN, "failed": BROKEN, "xpassed": BROKEN,
              "xfailed": DOES_NOT_REPRODUCE, "inconclusive": INCONCLUSIVE,
              "untimed": SKIPPED, "passed": HOLDS, "skipped": SKIPPED}


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


def phase_outcome(report: pytest.TestReport) -> str:
    """error, failed, xpassed, xfailed, inconclusive, untimed, passed or
    skipped, for one phase."""
    if report.when != "call" and report.failed:
        return "error"
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.skipped:
        names = {name for name, _ in report.user_properties}
        if INCONCLUSIVE_PROPERTY in names:
            return "inconclusive"
        if UNTIMED_PROPERTY in names:
            return "untimed"
    return report.outcome


def phase_reason(report: pytest.TestReport) -> str | None:
    """One line saying why a phase did not pass: the failure's message, the
    xfail reason or the skip reason; None for a pass."""
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
        # nodeid -> {"claims", "outcome", "reason", "xfail_reason", "measured"}
        self.tests: dict[str, dict] = {}
        self.tables: dict[str, object] = {}

    def add(self, report: pytest.TestReport) -> None:
        """Take one phase's report (setup, call or teardown)."""
        if report.when == "teardown":
            for name, value in report.user_properties:
                if name == TABLE_PROPERTY:
                    table, rows = value
                    self.tables[table] = rows
        ids = dict(report.user_properties).get(CLAIM_PROPERTY)
        if not ids:
            return
        test = self.tests.setdefault(report.nodeid, {
            "claims": list(ids), "outcome": None, "reason": None, "xfail_reason": None,
            "measured": [],
        })
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

    def entries(self) -> list[dict]:
        """One dict per claim, in CLAIMS.md order: id, title, statement,
        article, verdict, reasons (of the tests that gave the verdict),
        tests (nodeid, outcome, reason, xfail_reason, measured) and measured
        (every figure of its tests)."""
        out = []
        for claim in CLAIMS.values():
            tests = [{"nodeid": nodeid, **{k: v for k, v in t.items() if k != "claims"}}
                     for nodeid, t in self.tests.items() if claim.id in t["claims"]]
            verdict = claim_verdict([t["outcome"] for t in tests])
            reasons = [t["reason"] for t in tests
                       if t["reason"] and VERDICT_OF[t["outcome"]] == verdict]
            out.append({
                "id": claim.id, "title": claim.title, "statement": claim.statement,
                "article": claim.article, "verdict": verdict, "reasons": reasons,
                "tests": tests,
                # every figure once: several tests of a claim often quote one figure
                "measured": list(dict.fromkeys(m for t in tests for m in t["measured"])),
            })
        return out

    def summary_lines(self) -> list[str]:
        """The end-of-run lines: one per claim (verdict, title, figures), the
        reasons of inconclusive and untimed claims, and the counts."""
        entries = self.entries()
        lines = []
        for e in entries:
            figures = "; ".join(map(str, e["measured"]))
            line = f"{e['id']:<4} {e['verdict']:<18} {e['title']}"
            lines.append(f"{line}  [{figures}]" if figures else line)
        for e in entries:
            if e["verdict"] == INCONCLUSIVE:
                lines.extend(f"{e['id']} inconclusive: {r}" for r in e["reasons"])
        counts = {v: sum(e["verdict"] == v for e in entries) for v in VERDICTS}
        lines.append(", ".join(f"{n} {v}" for v, n in counts.items() if n))
        return lines

    def write_json(self, path: str | os.PathLike, config: pytest.Config) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"meta": run_meta(config), "claims": self.entries(), "tables": self.tables}
        atomic_write(path, json.dumps(data, indent=1, default=str) + "\n")


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
    ran = [o for o in outcomes if o != "skipped"]
    if not ran:
        return SKIPPED
    return VERDICT_OF[min(ran, key=OUTCOMES.index)]


def run_meta(config: pytest.Config) -> dict:
    """What the run was: date (UTC), commit, cpu, torch, threads, load1,
    model, model_sha256, quick."""
    from aftertrain.ledger.model import ledger_meta

    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": _commit(config.rootpath),
        "cpu": _cpu(),
        "torch": _version("torch"),
        "threads": _torch_threads(),
        "load1": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        **ledger_meta(config),  # model, model_sha256: the model the claims ran on
        "quick": os.environ.get("AFTERTRAIN_QUICK") == "1",
    }


def _commit(root: Path) -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} x {os.cpu_count()}"
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()} x {os.cpu_count()}"


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _torch_threads() -> int | None:
    import sys

    torch = sys.modules.get("torch")  # only if the run imported it: the ledger does not
    return torch.get_num_threads() if torch is not None else None
