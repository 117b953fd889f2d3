"""Helpers for tests that start another pytest (its environment) or need a
git checkout of their own (the run metadata, ``--model-free-from``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.common.pytester_sources import BENCH

#: The variables pytest-xdist sets in its workers and reads in a run it starts.
XDIST_VARIABLES = (
    "PYTEST_XDIST_WORKER",
    "PYTEST_XDIST_WORKER_COUNT",
    "PYTEST_XDIST_TESTRUNUID",
    "PYTEST_XDIST_AUTO_NUM_WORKERS",
)


def outside_any_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment of a pytest started from a shell, not from a test:
    no xdist worker's variables (pytest-benchmark would not time in it) and
    no PYTEST_CURRENT_TEST. Called in the test's body; in a fixture only the
    xdist variables stay away (pytest sets PYTEST_CURRENT_TEST again for the
    call, after the fixtures), which is what a pytester run inside needs."""
    for name in (*XDIST_VARIABLES, "PYTEST_CURRENT_TEST"):
        monkeypatch.delenv(name, raising=False)


def saved_benchmark_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> str:
    """From outside any run (:func:`outside_any_run`), one pytest-benchmark run
    of :data:`~tests.common.pytester_sources.BENCH` at ratio 1.0 (``RATIO``,
    left set) saved as ``base`` in ``store/`` of ``pytester``'s folder; returns
    the ``--benchmark-storage`` option naming that store, for the runs that
    compare against it."""
    outside_any_run(monkeypatch)
    pytester.makepyfile(test_bench=BENCH)
    store = f"--benchmark-storage=file://{pytester.path / 'store'}"
    monkeypatch.setenv("RATIO", "1.0")
    pytester.runpytest("-p", "aftertrain.ledger", store, "--benchmark-save=base").assert_outcomes(passed=1)
    return store


def git(root: Path, *args: str) -> str:
    """``git ARGS`` in ``root``, its output stripped; fails the test on an error."""
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


def commit_all(root: Path, message: str = "one") -> str:
    """Commit every file of the checkout ``root`` (a throwaway identity);
    returns the new HEAD."""
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)
    return git(root, "rev-parse", "HEAD")
