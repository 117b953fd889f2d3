"""Claims ledger: a pytest plugin that reports, per claim, whether it holds.

Switched on by this project's pytest configuration (``-p aftertrain.ledger``
in ``addopts``), so installing aftertrain changes no one else's test runs.

Tests tie themselves to claims with ``@pytest.mark.claim("Q2")`` (several
IDs in one marker, several markers, or a module's ``pytestmark``). An ID
missing from :data:`aftertrain.claims.CLAIMS` is a collection error. At the
end of the run one line per claim gives its verdict, in precedence order:

- ``broken``: a test failed, errored, or passed although marked xfail;
- ``does not reproduce``: a test is an xfail (strict, by house rule) and
  failed as expected;
- ``holds``: every test that ran passed (skipped ones aside);
- ``skipped``: every test was skipped;
- ``not covered``: no test of this run carries the ID.

A test attaches measured figures with ``record_property("measured", "...")``;
they are shown next to the verdict. ``--claims-json PATH`` writes the ledger
as JSON (id, title, verdict, tests with outcomes, xfail reasons, figures).

Works under pytest-xdist: the IDs go into ``item.user_properties`` at
collection (user properties travel with the test reports to the
controller), and the ledger is built on the controller from
``pytest_runtest_logreport`` alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aftertrain.claims import CLAIMS

CLAIM_PROPERTY = "claims"  # user property holding a test's claim IDs
MEASURED_PROPERTY = "measured"  # user property a test sets to report a figure
# A test attaches a whole table of its figures (JSON-able rows) for the claims
# report with ``record_property("table:NAME", rows)``; the JSON carries them
# under "tables", so the report draws what the tests measured.
TABLE_PREFIX = "table:"

# Verdicts, strongest first: a claim takes the first that applies.
BROKEN = "broken"
DOES_NOT_REPRODUCE = "does not reproduce"
HOLDS = "holds"
SKIPPED = "skipped"
NOT_COVERED = "not covered"
VERDICTS = (BROKEN, DOES_NOT_REPRODUCE, HOLDS, SKIPPED, NOT_COVERED)

# Test outcomes, strongest first: a test's outcome is the strongest of its
# phases (setup, call, teardown), a passing setup or teardown not counting.
_OUTCOMES = ("error", "failed", "xpassed", "xfailed", "passed", "skipped")
_VERDICT_OF = {"error": BROKEN, "failed": BROKEN, "xpassed": BROKEN,
               "xfailed": DOES_NOT_REPRODUCE, "passed": HOLDS, "skipped": SKIPPED}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("claims", "aftertrain claims ledger")
    group.addoption(
        "--claims-json", metavar="PATH", default=None,
        help="write the claims ledger (verdict, tests, figures per claim) as JSON to PATH",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "claim(*ids): ties a test to claim IDs of CLAIMS.md (aftertrain.claims)"
    )
    if not hasattr(config, "workerinput"):  # the controller, or a run without xdist
        config.pluginmanager.register(Ledger(config), "aftertrain-claims-ledger")


def claim_ids(item: pytest.Item) -> tuple[str, ...]:
    """The claim IDs of every ``claim`` marker on ``item``, in order, once each."""
    ids: list[str] = []
    for marker in item.iter_markers("claim"):
        for claim_id in marker.args:
            if claim_id not in ids:
                ids.append(claim_id)
    return tuple(ids)


def _marker_problem(item: pytest.Item) -> str | None:
    for marker in item.iter_markers("claim"):
        if not marker.args or marker.kwargs:
            return f"{item.nodeid}: claim markers take IDs only, e.g. claim('Q2', 'Q3')"
        unknown = [a for a in marker.args if not (isinstance(a, str) and a in CLAIMS)]
        if unknown:
            return (f"{item.nodeid}: unknown claim ID(s) {', '.join(map(repr, unknown))}; "
                    f"known IDs: {', '.join(CLAIMS)}")
    return None


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    """Turn a claim marker with an unknown ID into a collection error of its
    module, and store each test's IDs in its user properties."""
    report = yield
    if report.passed:
        items = [x for x in report.result if isinstance(x, pytest.Item)]
        problems = [p for p in map(_marker_problem, items) if p]
        if problems:
            report.outcome = "failed"
            report.longrepr = "\n".join(problems)
            report.result = []
        else:
            for item in items:
                ids = claim_ids(item)
                if ids:
                    item.user_properties.append((CLAIM_PROPERTY, ids))
    return report


def _phase_outcome(report: pytest.TestReport) -> str:
    """error, failed, xpassed, xfailed, passed or skipped, for one phase."""
    if report.when != "call" and report.failed:
        return "error"
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    return report.outcome


class Ledger:
    """Collects claim-tagged test outcomes on the controller and reports them."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        # nodeid -> {"claims", "outcome", "xfail_reason", "measured"}
        self.tests: dict[str, dict] = {}
        self.tables: dict[str, object] = {}  # name -> rows, from "table:NAME" properties

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)  # last value of each name
        if report.when == "teardown":
            for name, value in props.items():
                if isinstance(name, str) and name.startswith(TABLE_PREFIX):
                    self.tables[name[len(TABLE_PREFIX):]] = value
        ids = props.get(CLAIM_PROPERTY)
        if not ids:
            return
        test = self.tests.setdefault(report.nodeid, {
            "claims": list(ids), "outcome": None, "xfail_reason": None, "measured": [],
        })
        if not (report.when != "call" and report.passed):  # a passing setup/teardown is neutral
            outcome = _phase_outcome(report)
            current = test["outcome"]
            if current is None or _OUTCOMES.index(outcome) < _OUTCOMES.index(current):
                test["outcome"] = outcome
        if hasattr(report, "wasxfail"):
            test["xfail_reason"] = report.wasxfail
        if report.when == "teardown":  # user properties are final by now
            test["measured"] = [v for k, v in report.user_properties if k == MEASURED_PROPERTY]

    def entries(self) -> list[dict]:
        """One dict per claim, in CLAIMS.md order: id, title, statement,
        article, verdict, tests (nodeid, outcome, xfail_reason, measured)
        and measured (every figure of its tests)."""
        out = []
        for claim in CLAIMS.values():
            tests = [{"nodeid": nodeid, **{k: v for k, v in t.items() if k != "claims"}}
                     for nodeid, t in self.tests.items() if claim.id in t["claims"]]
            outcomes = {t["outcome"] for t in tests}
            if not tests:
                verdict = NOT_COVERED
            elif outcomes == {"skipped"}:
                verdict = SKIPPED
            else:
                verdict = min((_VERDICT_OF[o] for o in outcomes - {"skipped"}),
                              key=VERDICTS.index)
            out.append({
                "id": claim.id, "title": claim.title, "statement": claim.statement,
                "article": claim.article, "verdict": verdict, "tests": tests,
                "measured": [m for t in tests for m in t["measured"]],
            })
        return out

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:
        entries = self.entries()
        tr = terminalreporter
        tr.write_sep("=", "claims ledger")
        for e in entries:
            figures = "; ".join(map(str, e["measured"]))
            line = f"{e['id']:<4} {e['verdict']:<18} {e['title']}"
            tr.write_line(f"{line}  [{figures}]" if figures else line)
        counts = {v: sum(e["verdict"] == v for e in entries) for v in VERDICTS}
        tr.write_line(", ".join(f"{n} {v}" for v, n in counts.items() if n))

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        path = self.config.getoption("claims_json")
        if path:
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"claims": self.entries(), "tables": self.tables},
                                       indent=1, default=str) + "\n")
