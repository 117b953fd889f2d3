"""The default run's xdist workers (aftertrain.ledger.workers): how many
``-n auto`` starts, and that workers time one test at a time under the
lock the controller hands them, with the controller's whole-run budget."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from aftertrain.ledger import plugin, record, workers
from aftertrain.ledger.record import budget_left, start_total_budget
from tests.common.inner_runs import XDIST_VARIABLES, outside_any_run
from tests.common.pytester_sources import FLOCK_PROBE

pytest_plugins = ["pytester"]


@pytest.fixture
def two_files(pytester: pytest.Pytester):
    pytester.makepyfile(test_a="def test_a():\n    pass\n", test_b="def test_b():\n    pass\n")


@pytest.mark.parametrize("cores, expected", [(1, 0), (2, 2), (3, 3), (64, workers.MAX_WORKERS)])
def test_auto_starts_a_worker_per_core_up_to_the_cap(pytester, two_files, monkeypatch, cores, expected):
    outside_any_run(monkeypatch)
    monkeypatch.setattr(workers, "usable_cores", lambda: cores)
    config = pytester.parseconfig("-p", "aftertrain.ledger", "test_a.py", "test_b.py")
    assert workers.auto_workers(config) == expected


@pytest.mark.parametrize(
    "args",
    [
        ("--benchmark-json=out.json",),
        ("--benchmark-autosave",),
        ("--benchmark-compare",),
        ("--benchmark-save=x",),
        ("test_a.py",),
        ("test_a.py::test_a",),
    ],
)
def test_auto_is_one_process_where_results_or_files_need_one(pytester, two_files, monkeypatch, args):
    outside_any_run(monkeypatch)
    monkeypatch.setattr(workers, "usable_cores", lambda: 8)
    files = () if any(a.startswith("test_") for a in args) else ("test_a.py", "test_b.py")
    config = pytester.parseconfig("-p", "aftertrain.ledger", *args, *files)
    assert workers.auto_workers(config) == 0
    without = pytester.parseconfig("-p", "aftertrain.ledger", "test_a.py", "test_b.py")
    assert workers.auto_workers(without) == workers.MAX_WORKERS


@pytest.mark.parametrize("variable", ["PYTEST_CURRENT_TEST", "PYTEST_XDIST_WORKER"])
def test_auto_is_one_process_inside_another_runs_test(pytester, two_files, monkeypatch, variable):
    outside_any_run(monkeypatch)
    monkeypatch.setattr(workers, "usable_cores", lambda: 8)
    config = pytester.parseconfig("-p", "aftertrain.ledger", "test_a.py", "test_b.py")
    assert workers.auto_workers(config) == workers.MAX_WORKERS
    monkeypatch.setenv(variable, "gw0")
    assert workers.auto_workers(config) == 0


def test_xdist_own_variable_wins(pytester, two_files, monkeypatch):
    outside_any_run(monkeypatch)
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "3")
    config = pytester.parseconfig("-p", "aftertrain.ledger", "test_a.py", "test_b.py")
    assert workers.auto_workers(config) is None
    assert config.hook.pytest_xdist_auto_num_workers(config=config) == 3  # xdist's own hook


def test_the_hook_leaves_runs_without_the_ledger_to_xdist(pytester, two_files, monkeypatch):
    outside_any_run(monkeypatch)
    monkeypatch.setattr(workers, "usable_cores", lambda: 1)
    monkeypatch.setitem(sys.modules, "psutil", None)  # xdist's count then reads the affinity
    monkeypatch.setattr("os.cpu_count", lambda: 6)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(6)), raising=False)
    on = pytester.parseconfig("-p", "aftertrain.ledger", "test_a.py", "test_b.py")
    off = pytester.parseconfig("test_a.py", "test_b.py")
    assert on.hook.pytest_xdist_auto_num_workers(config=on) == 0  # ours: one usable core
    assert off.hook.pytest_xdist_auto_num_workers(config=off) == 6  # xdist's: every CPU


def test_a_worker_starts_the_budget_from_what_its_controller_has_left(pytester):
    config = pytester.parseconfig()
    start_total_budget(config, 12.5)
    assert 12.0 < budget_left(config) <= 12.5


def test_a_worker_started_mid_run_gets_what_is_left_of_the_controllers_budget(
    pytester, monkeypatch, tmp_path
):
    """The controller (``--timing-budget-total=1000``, 400 s of it spent on
    its clock) hands a worker the end of its budget as a wall-clock time,
    and the worker, configured 25 s later, counts from that end: 575 s
    left, not a fresh 1000 (nor the 600 left at the hand-off). Every clock
    read is a fake one (the budget's and the wall clock the hand-off
    reads), so the figure is exact on a machine of any pace."""
    outside_any_run(monkeypatch)
    now = [1000.0]
    monkeypatch.setattr(record, "clock", lambda: now[0])
    wall = SimpleNamespace(time=lambda: now[0])  # the hand-off's time.time, on the same fake
    monkeypatch.setattr(workers, "time", wall)
    monkeypatch.setattr(plugin, "time", wall)
    lock = tmp_path / "lock"
    lock.touch()
    controller = pytester.parseconfigure(
        "-p",
        "aftertrain.ledger",
        "--dist",
        "load",
        "--tx",
        "popen",
        "--timing-budget-total=1000",
        f"--timing-lock={lock}",
    )
    now[0] += 400
    node = SimpleNamespace(workerinput={"workerid": "gw0"})
    controller.hook.pytest_configure_node(node=node)
    now[0] += 25
    worker = pytester.parseconfig("-p", "aftertrain.ledger", "--timing-budget-total=1000")
    worker.workerinput = node.workerinput
    worker._do_configure()  # what pytester.parseconfigure does, once workerinput is set
    try:
        assert budget_left(worker) == 575
    finally:
        worker._ensure_unconfigure()


# A timed and an untimed test in two files, run by two workers: each reports
# what it holds of the lock its worker was given, whether pytest-benchmark
# timed, and the budget it sees.
_PROBE = """
import fcntl, json, os
from aftertrain.ledger.record import budget_left
from aftertrain.ledger.workers import LOCK_KEY
from flock_probe import try_flock


def probe(request, name, **extra):
    lock = request.config.workerinput[LOCK_KEY]
    out = dict(lock=lock, shared=try_flock(lock, fcntl.LOCK_SH),
               alone=try_flock(lock, fcntl.LOCK_EX),
               budget=budget_left(request.config), **extra)
    with open(os.path.join(os.environ["PROBE_DIR"], name + ".json"), "w") as f:
        json.dump(out, f)
"""

_TIMED = """
from probe import probe

def test_timed(request, benchmark):
    benchmark.pedantic(lambda: None, rounds=3, iterations=1)
    probe(request, "timed", rounds=len(benchmark.stats.stats.data))
"""

_UNTIMED = """
from probe import probe

def test_untimed(request):
    probe(request, "untimed")
"""


@pytest.mark.e2e
def test_workers_time_alone_under_the_controllers_lock(pytester, tmp_path, monkeypatch):
    """Under ``-n 2`` pytest-benchmark times (it turns itself off under
    xdist), a timing test holds the lock alone, an untimed one shares it,
    every worker reads the controller's budget, and the controller's lock
    folder is gone afterwards."""
    for name in XDIST_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PROBE_DIR", str(tmp_path))
    pytester.makepyfile(probe=_PROBE, flock_probe=FLOCK_PROBE, test_timed=_TIMED, test_untimed=_UNTIMED)
    result = pytester.runpytest_subprocess(
        "-p",
        "aftertrain.ledger",
        "-n",
        "2",
        "--dist",
        "loadfile",
        "--timing-budget-total=1000",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=2)
    timed = json.loads((tmp_path / "timed.json").read_text())
    untimed = json.loads((tmp_path / "untimed.json").read_text())
    assert timed["rounds"] == 3  # it did time
    assert (timed["shared"], timed["alone"]) == ("blocked", "blocked")  # held alone
    assert (untimed["shared"], untimed["alone"]) == ("free", "blocked")  # held shared
    assert timed["lock"] == untimed["lock"]
    assert 900 < timed["budget"] <= 1000 and 900 < untimed["budget"] <= 1000
    assert not Path(timed["lock"]).parent.exists()  # the controller's own folder, removed
    assert "automatically disabled" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*each timing ran alone*run with -n 0 to see it*"])


@pytest.mark.e2e
def test_workers_with_benchmark_disable_do_not_time(pytester, tmp_path, monkeypatch):
    for name in XDIST_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(
        test_timed="def test_timed(benchmark):\n    benchmark(lambda: None)\n    assert benchmark.disabled\n",
        test_other="def test_other():\n    pass\n",
    )
    result = pytester.runpytest_subprocess(
        "-p", "aftertrain.ledger", "-n", "2", "--benchmark-disable", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=2)


def test_workers_refuse_a_benchmark_file_with_one_line(pytester, tmp_path, monkeypatch):
    for name in XDIST_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    # in process: the controller refuses as pytest configures, before any worker starts
    result = pytester.runpytest(
        "-p", "aftertrain.ledger", "-n", "2", f"--benchmark-json={tmp_path / 'b.json'}"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--benchmark-json needs the run in one process*-n 0*"])
    assert not (tmp_path / "b.json").exists()


def test_auto_is_one_process_where_workers_could_not_time(pytester, two_files, monkeypatch):
    """No flock (not POSIX): workers could not take the timing lock, so
    ``-n auto`` keeps the run in one process, where it times as always."""
    outside_any_run(monkeypatch)
    monkeypatch.setattr(workers, "usable_cores", lambda: 8)
    config = pytester.parseconfig("-p", "aftertrain.ledger", "test_a.py", "test_b.py")
    assert workers.auto_workers(config) == workers.MAX_WORKERS
    monkeypatch.setattr(workers, "flock_available", lambda: False)
    assert workers.auto_workers(config) == 0
    assert workers.controller_lock(config) is None  # an explicit -n N: workers do not time
