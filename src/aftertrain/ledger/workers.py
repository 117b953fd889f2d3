"""The project's default run on every core: pytest-xdist workers that still time alone.

This project's ``addopts`` ask pytest-xdist for ``-n auto --dist loadfile``.
:func:`auto_workers` answers xdist's ``pytest_xdist_auto_num_workers`` for
a run with the ledger switched on: one worker per core the process may use,
at most :data:`MAX_WORKERS`, and none (one process, as without xdist) where
more would not help or would change what the run means:

- the run is inside another pytest run's test (``PYTEST_CURRENT_TEST`` or
  ``PYTEST_XDIST_WORKER`` in the environment: a test that starts pytest gets
  the run it asked for, on the core it already has);
- pytest-benchmark stores, compares or writes its results
  (:data:`ONE_PROCESS_OPTIONS`): they live in one process's session;
- the command line names tests of one file only (``--dist loadfile`` would
  give them all to one worker anyway);
- the process may use one core;
- the system has no ``flock`` (the lock's means), so workers could not time.

``PYTEST_XDIST_AUTO_NUM_WORKERS`` (xdist's own variable) and an explicit
``-n N`` win over this.

pytest-benchmark turns timing off under xdist, because workers timing side
by side disturb each other. Here the controller instead hands its workers
a :class:`~aftertrain.timing.lock.TimingLock` file (``--timing-lock`` when
given, else one in a temporary folder of its own, removed at the end): a
test that times runs alone, after the other workers' tests in flight have
ended, and none starts until it is done; every other test shares the cores.
So the timings see the machine as a run in one process would, and the
untimed work, most of the run, is spread over the cores. ``--dist loadfile``
keeps each file's tests on one worker, so a module's timing fixture (one
sequential decision read by several tests) is built once.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from aftertrain.ledger import benchmark
from aftertrain.timing.lock import available as flock_available

#: Workers of ``-n auto`` at most: each imports torch, collects the suite and
#: builds its own session fixtures (seconds each), so beyond a few the copies
#: cost more than the spread saves.
MAX_WORKERS = 4

#: pytest-benchmark options whose results must be in one process's session
#: (dest name -> the flag a user typed).
ONE_PROCESS_OPTIONS = {
    "benchmark_compare": "--benchmark-compare",
    "benchmark_compare_fail": "--benchmark-compare-fail",
    "benchmark_save": "--benchmark-save",
    "benchmark_autosave": "--benchmark-autosave",
    "benchmark_json": "--benchmark-json",
    "benchmark_histogram": "--benchmark-histogram",
    "benchmark_cprofile": "--benchmark-cprofile",
}

#: What the controller passes to its workers in ``workerinput``.
LOCK_KEY = "aftertrain_timing_lock"
DEADLINE_KEY = "aftertrain_timing_deadline_wall"

#: The controller's own lock folder (removed at the end of the run).
_OWN_LOCK_DIR = pytest.StashKey[Path]()


def one_process_option(config: pytest.Config) -> str | None:
    """The first :data:`ONE_PROCESS_OPTIONS` flag this run was given, or None."""
    for dest, flag in ONE_PROCESS_OPTIONS.items():
        if config.getoption(dest, None) not in (None, False, [], ""):
            return flag
    return None


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the system says)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def _one_file(config: pytest.Config) -> bool:
    """Whether the command line names tests (files or node IDs) of one file only."""
    args = [a for a in config.args if not a.startswith("-")]
    if not args:
        return False
    files = set()
    for arg in args:
        path = Path(config.invocation_params.dir, arg.split("::", 1)[0])
        if not (path.suffix == ".py" and path.is_file()):
            return False
        files.add(path.resolve())
    return len(files) == 1


def auto_workers(config: pytest.Config) -> int | None:
    """``-n auto``'s worker count for this run (0: one process), or None to
    leave the choice to xdist (``PYTEST_XDIST_AUTO_NUM_WORKERS`` is set)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    if os.environ.get("PYTEST_CURRENT_TEST") or os.environ.get("PYTEST_XDIST_WORKER"):
        return 0
    if one_process_option(config) or _one_file(config):
        return 0
    cores = usable_cores()
    return 0 if cores < 2 or not flock_available() else min(cores, MAX_WORKERS)


def distributed(config: pytest.Config) -> bool:
    """Whether this process is an xdist controller with workers."""
    return (
        config.getoption("dist", "no") != "no"
        and bool(config.getoption("tx", None))
        and not hasattr(config, "workerinput")
    )


def wants_timing(config: pytest.Config) -> bool:
    """Whether the user left pytest-benchmark on (loaded, no ``--benchmark-disable``
    or ``--benchmark-skip``), whatever xdist did to it."""
    if not config.pluginmanager.hasplugin("benchmark"):
        return False
    disabled = config.getoption("benchmark_disable") and not config.getoption("benchmark_enable")
    return not disabled and not config.getoption("benchmark_skip")


def controller_lock(config: pytest.Config) -> str | None:
    """The lock file the workers share: ``--timing-lock`` when given, else a
    new one in a temporary folder (removed by :func:`cleanup`); None when
    this run does not time. Refuses the :data:`ONE_PROCESS_OPTIONS` with workers."""
    flag = one_process_option(config)
    if flag:
        raise pytest.UsageError(
            f"{flag} needs the run in one process (pytest-benchmark keeps "
            f"its results per process); run it with -n 0"
        )
    if not wants_timing(config) or not flock_available():
        return None  # the workers do not time (pytest-benchmark's own rule under xdist)
    given = config.getoption("timing_lock", None)
    if given is not None:
        return str(given)
    folder = Path(tempfile.mkdtemp(prefix="aftertrain-timing-lock-"))
    config.stash[_OWN_LOCK_DIR] = folder
    return str(folder / "timing.lock")


def cleanup(config: pytest.Config) -> None:
    """Remove the controller's own lock folder, if it made one."""
    folder = config.stash.get(_OWN_LOCK_DIR, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def worker_input(lock: str | None, deadline_left: float) -> dict:
    """What a worker needs from the controller: the lock file and the end of
    the run's whole timing budget (wall clock, so every process reads one end)."""
    return {LOCK_KEY: lock, DEADLINE_KEY: time.time() + deadline_left}


def time_in_worker(config: pytest.Config) -> None:
    """In a worker given a lock: turn pytest-benchmark's timing back on (it
    turns itself off under xdist), as the user's options have it."""
    if wants_timing(config):
        benchmark.time_again(config)
