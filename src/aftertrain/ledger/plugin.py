"""The ledger's pytest hooks, options and fixture; nothing else.

Besides the claims ledger, the controller compares this run's paired ratios
with the stored run's under ``--benchmark-compare``
(:mod:`aftertrain.timing.compare`): a regression fails the run with one line
per ratio.

State and verdicts live in :mod:`aftertrain.ledger.state`, the fixture's
type in :mod:`aftertrain.ledger.record`.
"""

from __future__ import annotations

import pytest

from aftertrain.core.tolerances import RATIO_REGRESSION, TIMING_BUDGET_S
from aftertrain.ledger.record import ClaimRecord
from aftertrain.ledger.state import CLAIM_PROPERTY, Ledger, claim_ids, marker_problem
from aftertrain.timing.compare import REGRESSED, compare_ratios, ratio_table


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("claims", "aftertrain claims ledger")
    group.addoption(
        "--claims-json", metavar="PATH", default=None,
        help="write the claims ledger (verdict, reasons, tests, figures per claim) as JSON to PATH",
    )
    group.addoption(
        "--timing-strict", action="store_true", default=False,
        help="an inconclusive timing decision fails its test (default: the claim is "
             "'inconclusive' and pytest does not fail)",
    )
    group.addoption(
        "--timing-budget", metavar="SECONDS", type=float, default=TIMING_BUDGET_S,
        help=f"seconds one timing decision may spend before it is inconclusive "
             f"(default {TIMING_BUDGET_S:g})",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "claim(*ids): ties a test to claim IDs of CLAIMS.md (aftertrain.claims.catalogue)"
    )
    budget = config.getoption("timing_budget")
    if not budget > 0:
        raise pytest.UsageError(f"--timing-budget must be > 0 seconds, got {budget!r}")
    if not hasattr(config, "workerinput"):  # the controller, or a run without xdist
        config.pluginmanager.register(_Controller(config), "aftertrain-claims-ledger")


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    """Turn a claim marker with an unknown ID into a collection error of its
    module, and store each test's IDs in its user properties."""
    report = yield
    if report.passed:
        items = [x for x in report.result if isinstance(x, pytest.Item)]
        problems = [p for p in map(marker_problem, items) if p]
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


@pytest.fixture
def claim_record(request: pytest.FixtureRequest) -> ClaimRecord:
    """What a test reports to the claims ledger: figures
    (``claim_record.measured(text)``), tables (``claim_record.table(name,
    rows)``, names from :mod:`aftertrain.claims.tables`) and timing decisions
    (``claim_record.decide(...)``, ``claim_record.conclude(decision)``)."""
    return ClaimRecord(request.node, request.config)


class _Controller:
    """The hooks that run on the controller (or a run without xdist)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.ledger = Ledger()
        self.ratio_changes: list | None = None

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.ledger.add(report)

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:
        tr = terminalreporter
        if self.ratio_changes is not None:
            tr.write_sep("-", f"paired ratios against the stored run (regressed: interval "
                              f"above stored x {RATIO_REGRESSION:g})")
            for line in ratio_table(self.ratio_changes):
                tr.write_line(line)
            for c in self.ratio_changes:
                if c.status == REGRESSED:
                    tr.write_line(f"RATIO REGRESSION {c.line()}", red=True)
        from aftertrain.ledger.model import ledger_meta

        model = ledger_meta(self.config)
        on = (f" on model {model['model']} (sha256 {model['model_sha256'][:12]})"
              if model["model"] and model["model_sha256"] else "")
        tr.write_sep("=", "claims ledger" + on)
        for line in self.ledger.summary_lines():
            tr.write_line(line)

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        path = self.config.getoption("claims_json")
        if path:
            self.ledger.write_json(path, self.config)
        self.ratio_changes = compare_with_stored_run(self.config)
        if self.ratio_changes and any(c.status == REGRESSED for c in self.ratio_changes):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def compare_with_stored_run(config: pytest.Config) -> list | None:
    """With ``--benchmark-compare``: this run's paired ratios against the
    stored run's (:func:`aftertrain.timing.compare.compare_ratios`); None
    without a compare."""
    session = getattr(config, "_benchmarksession", None)
    mappings = getattr(session, "compared_mapping", None)
    if not mappings:
        return None
    stored = {}
    for mapping in mappings.values():
        stored.update({name: bench.get("extra_info", {}) for name, bench in mapping.items()})
    now = {b.fullname: b.extra_info for b in session.benchmarks}
    return compare_ratios(now, stored)
