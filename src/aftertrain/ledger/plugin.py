"""The ledger's pytest hooks, options and fixture; nothing else.

Besides the claims ledger, the controller compares this run's paired ratios
with the stored run's under ``--benchmark-compare``
(:mod:`aftertrain.ledger.benchmark`, the one module that speaks to
pytest-benchmark): a regression fails the run with one line per ratio.

State and verdicts live in :mod:`aftertrain.ledger.state`, the fixture's
type in :mod:`aftertrain.ledger.record`.
"""

from __future__ import annotations

import math
import time

import pytest

from aftertrain.core.tolerances import (
    REPORT_TIMING_BUDGET_TOTAL_S,
    TIMING_BUDGET_S,
    TIMING_BUDGET_TOTAL_S,
)
from aftertrain.ledger import benchmark, claim_marker, reuse, workers
from aftertrain.ledger.claim_marker import claim_ids, marker_problem
from aftertrain.ledger.model_under_test import READS_MODEL_PROPERTY, marked_part, reads_model
from aftertrain.ledger.path_options import output_file_problem, path_option_problem
from aftertrain.ledger.record import ClaimRecord, budget_left, start_total_budget, timing_enabled
from aftertrain.ledger.state import CLAIM_PROPERTY, PART_PROPERTY, Ledger, quick_run
from aftertrain.timing.lock import TimingLock


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the ledger's options (``--claims-json``, ``--claim``, the timing budgets and lock,
    ``--model-free-from``).

    Long: one ``addoption`` per option with its help text, read top to bottom
    as ``pytest --help`` lists them."""
    group = parser.getgroup("claims", "aftertrain claims ledger")
    group.addoption(
        claim_marker.FLAG,
        metavar="ID",
        action="append",
        default=None,
        dest="claim",
        help="run only the tests of claim ID of CLAIMS.md (repeat it, or join IDs with "
        "commas, for several); the ledger shows the other claims as not run",
    )
    group.addoption(
        "--claims-json",
        metavar="PATH",
        default=None,
        help="write the claims ledger (verdict, reasons, tests, figures per claim) as JSON to PATH",
    )
    group.addoption(
        "--timing-strict",
        action="store_true",
        default=False,
        help="an inconclusive timing decision fails its test (default: the claim is "
        "'inconclusive' and pytest does not fail)",
    )
    group.addoption(
        "--timing-budget",
        metavar="SECONDS",
        type=float,
        default=TIMING_BUDGET_S,
        help=f"seconds one timing decision may spend before it is inconclusive (default {TIMING_BUDGET_S:g})",
    )
    group.addoption(
        "--timing-lock",
        metavar="PATH",
        default=None,
        help="a lock file shared with other pytest runs on this machine: a test that times "
        "takes it alone, any other test shares it, so no run's test runs while another "
        "run times (aftertrain report gives its parallel model runs one)",
    )
    group.addoption(
        reuse.FLAG,
        metavar="CLAIMS_JSON",
        default=None,
        dest="model_free_from",
        help="run only the tests that read the model; the claims' tests that do not read it "
        "take their outcomes (and the tables they wrote) from CLAIMS_JSON, the ledger of "
        "an earlier run of this checkout's code on another model, and the other tests "
        "that do not read it do not run (aftertrain report gives every model after the "
        "first the first run's ledger); write --model-free-from=PATH",
    )
    group.addoption(
        "--timing-budget-total",
        metavar="SECONDS",
        type=float,
        default=TIMING_BUDGET_TOTAL_S,
        help=f"seconds from the start of the run by which every timing decision must end; "
        f"each gets at most what is left, and one with nothing left is inconclusive "
        f"(default {TIMING_BUDGET_TOTAL_S:g}: the default run's 5 minutes on a 2-core AVX2 "
        f"runner less 30; `aftertrain report` passes {REPORT_TIMING_BUDGET_TOTAL_S:g})",
    )


#: The name ``-p`` and the entry point give this plugin.
PLUGIN_NAME = "aftertrain.ledger"
#: ``--timing-budget`` and ``--timing-budget-total`` at most: a day. A budget is
#: how long a run may keep timing; one beyond a day (1e308) is a typo, and a
#: decision that long is no longer one run on one machine's state.
MAX_TIMING_BUDGET_S = 86_400.0


def switched_on(config: pytest.Config) -> bool:
    """Whether this run asked for the ledger: ``-p aftertrain.ledger`` (this
    project's ``addopts``) or ``--claims-json``. Installed as a ``pytest11``
    entry point, the plugin's options are known in every run, but the ledger
    is kept only where asked for."""
    return (
        PLUGIN_NAME in (config.getoption("plugins", None) or [])
        or config.getoption("claims_json", None) is not None
    )


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> None:
    """Refuse, before any conftest or test, a ``--claims-json`` that cannot
    be written, or one or a ``--model-free-from`` whose space form moved
    pytest's rootdir."""
    ns = early_config.known_args_namespace
    value = getattr(ns, "claims_json", None)
    problem = value is not None and (
        path_option_problem(early_config, args, "--claims-json", value)
        or output_file_problem("--claims-json", value)
    )
    earlier = getattr(ns, "model_free_from", None)
    problem = problem or (
        earlier is not None and path_option_problem(early_config, args, reuse.FLAG, earlier)
    )
    if problem:
        raise pytest.UsageError(problem)


def pytest_configure(config: pytest.Config) -> None:
    """Declare the ``claim`` marker, check the options, and register the hooks
    this process needs (the controller's, an xdist worker's, the timing lock's)."""
    config.addinivalue_line(
        "markers", "claim(*ids): ties a test to claim IDs of CLAIMS.md (aftertrain.claims.catalogue)"
    )

    for flag in ("timing_budget", "timing_budget_total"):
        budget = config.getoption(flag)
        if not (math.isfinite(budget) and 0 < budget <= MAX_TIMING_BUDGET_S):
            raise pytest.UsageError(
                f"--{flag.replace('_', '-')} must be a finite number of "
                f"seconds > 0 and at most {MAX_TIMING_BUDGET_S:g} (a day), "
                f"got {budget!r}"
            )
    start_total_budget(config)
    try:
        chosen = claim_marker.selected_claims(config.getoption("claim", None))
    except ValueError as err:
        raise pytest.UsageError(str(err)) from None
    if chosen is not None:
        config.pluginmanager.register(claim_marker.ByClaim(chosen), "aftertrain-by-claim")
    lock = config.getoption("timing_lock", None)
    given = getattr(config, "workerinput", {})
    if switched_on(config) and given.get(workers.LOCK_KEY):  # an xdist worker that times
        lock = given[workers.LOCK_KEY]
        start_total_budget(config, given[workers.DEADLINE_KEY] - time.time())
        config.pluginmanager.register(_TimingWorker(config), "aftertrain-timing-worker")
    elif switched_on(config) and workers.distributed(config):
        config.pluginmanager.register(_Workers(config, workers.controller_lock(config)), "aftertrain-workers")
    if lock is not None:  # in xdist's workers too: their untimed tests share it
        try:
            config.pluginmanager.register(_Exclusive(TimingLock(lock), config), "aftertrain-timing-lock")
        except ValueError as err:
            raise pytest.UsageError(f"--timing-lock: {err}") from None
    earlier = _model_free_from(config)
    if earlier is not None:
        config.pluginmanager.register(_ModelFree(reuse.reused_ids(earlier)), "aftertrain-model-free")
    if switched_on(config) and not hasattr(config, "workerinput"):  # the controller, or a run without xdist
        controller = _Controller(config)
        if chosen is not None:
            controller.ledger.selected = chosen
            controller.ledger.not_selected_reason = claim_marker.reason(chosen)
        if earlier is not None:
            controller.ledger.reuse(earlier, config.getoption("model_free_from"))
        config.pluginmanager.register(controller, "aftertrain-claims-ledger")
        if config.pluginmanager.hasplugin("benchmark"):
            config.pluginmanager.register(controller.machine_hooks, "aftertrain-benchmark-machine")


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # before xdist's own count
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` (this project's ``addopts``): :func:`aftertrain.ledger.workers.auto_workers`
    where the ledger is on; xdist's own count elsewhere."""
    return workers.auto_workers(config) if switched_on(config) else None


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    """Turn a claim marker with an unknown ID into a collection error of its
    module, and store each test's IDs in its user properties and among its
    keywords (``-k Q2`` finds the tests of Q2)."""
    report = yield
    if report.passed and switched_on(collector.config):
        items = [x for x in report.result if isinstance(x, pytest.Item)]
        problems = [p for p in map(marker_problem, items) if p]
        if problems:
            report.outcome = "failed"
            report.longrepr = "\n".join(problems)
            report.result = []
        else:
            for item in items:
                item.user_properties.append((READS_MODEL_PROPERTY, reads_model(item)))
                ids = claim_ids(item)
                if ids:
                    item.extra_keyword_matches.update(ids)
                    item.user_properties.append((CLAIM_PROPERTY, ids))
                    part = marked_part(item)
                    if part is not None:
                        item.user_properties.append((PART_PROPERTY, part.value))
    return report


@pytest.fixture
def claim_record(request: pytest.FixtureRequest) -> ClaimRecord:
    """What a test reports to the claims ledger: figures
    (``claim_record.measured(template, *rows, **values)``), tables (``claim_record.table(rows)``,
    the name that of the rows' type: :mod:`aftertrain.claims.tables`) and timing decisions
    (``claim_record.decide(...)``, ``claim_record.conclude(decision)``)."""
    return ClaimRecord(request.node, request.config)


class _Controller:
    """The hooks that run on the controller (or a run without xdist)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.ledger = Ledger()
        self.ratio_changes: list | None = None
        #: pytest-benchmark's machine hooks: the machines of a --benchmark-compare
        self.machine_hooks = benchmark.MachineHooks()

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.ledger.add(report)

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:
        tr = terminalreporter
        if self.ratio_changes is not None:
            benchmark.ratio_summary(tr, self.ratio_changes, self.machine_hooks.machines)
        from aftertrain.ledger.model_under_test import ledger_meta

        model = ledger_meta(self.config)
        on = (
            f" on model {model['model']} (sha256 {model['model_sha256'][:12]})"
            if model["model"] and model["model_sha256"]
            else ""
        )
        tr.write_sep("=", "claims ledger" + on)
        for line in self.ledger.summary_lines():
            tr.write_line(line)

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        path = self.config.getoption("claims_json")
        if path:
            self.ledger.write_json(path, self.config)
        self.ratio_changes = benchmark.compare_with_stored_run(self.config, self.machine_hooks.machines)
        if benchmark.regressed(self.ratio_changes):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _model_free_from(config: pytest.Config):
    """``--model-free-from``'s ledger, checked (:func:`aftertrain.ledger.reuse.read`);
    None when not given. Read in xdist's workers too (each deselects)."""
    path = config.getoption("model_free_from", None)
    if path is None:
        return None
    if not switched_on(config):
        raise pytest.UsageError(
            f"{reuse.FLAG} {path}: the claims ledger is off in this run; "
            f"switch it on with -p {PLUGIN_NAME} or --claims-json FILE"
        )
    try:
        return reuse.read(path, config.rootpath, quick_run())
    except ValueError as err:
        raise pytest.UsageError(str(err)) from None


class _ModelFree:
    """``--model-free-from``: deselect the tests that do not read the model,
    but a claim's test whose outcome the earlier ledger lacks (it runs here)."""

    def __init__(self, reused: frozenset[str]) -> None:
        self.reused = reused

    @pytest.hookimpl(trylast=True)  # after -m and -k have deselected theirs
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        keep, drop = [], []
        for item in items:
            taken = not reads_model(item) and (not claim_ids(item) or item.nodeid in self.reused)
            (drop if taken else keep).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep


class _Workers:
    """On an xdist controller: each worker gets the timing lock and the end of
    the run's whole timing budget (:mod:`aftertrain.ledger.workers`)."""

    def __init__(self, config: pytest.Config, lock: str | None) -> None:
        self.config, self.lock = config, lock

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        node.workerinput.update(workers.worker_input(self.lock, budget_left(self.config)))

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.lock is not None:
            benchmark.no_xdist_warning(self.config)  # the workers do time, one at a time

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.lock is not None:
            terminalreporter.write_line(
                "xdist workers: each timing ran alone (a timing lock); pytest-benchmark's "
                "table of absolute times stays in the workers (run with -n 0 to see it)"
            )

    @pytest.hookimpl
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        workers.cleanup(config)


class _TimingWorker:
    """In an xdist worker given the lock: pytest-benchmark times again (set
    at session start, after pytest-benchmark's own configuration)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        workers.time_in_worker(self.config)


class _Exclusive:
    """``--timing-lock``: each test runs holding the lock, exclusively when it
    times (it asks for pytest-benchmark's ``benchmark`` and this run times),
    shared otherwise."""

    def __init__(self, lock: TimingLock, config: pytest.Config) -> None:
        self.lock, self.config = lock, config

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem):
        times = "benchmark" in getattr(item, "fixturenames", ()) and timing_enabled(self.config)
        with self.lock.exclusive() if times else self.lock.shared():
            return (yield)

    @pytest.hookimpl
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.lock.close()
