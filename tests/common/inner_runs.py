"""Helpers for tests that start another pytest (its environment) or need a
git checkout of their own (the run metadata, ``--model-free-from``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from aftertrain.ledger.model_under_test import ENV_VAR
from aftertrain.report.reading import QUICK_ENV
from tests.common.pytester_sources import BENCH

#: The variables pytest-xdist sets in its workers and reads in a run it starts.
XDIST_VARIABLES = (
    "PYTEST_XDIST_WORKER",
    "PYTEST_XDIST_WORKER_COUNT",
    "PYTEST_XDIST_TESTRUNUID",
    "PYTEST_XDIST_AUTO_NUM_WORKERS",
)


#: The variables that change what a run of this project does, read by its
#: plugins and conftest: the model under test, ``aftertrain report --quick``'s
#: variables (its hypothesis profile among them). A run started from a test
#: must not inherit them from the run around it (``aftertrain report --quick``
#: sets them for its suites; a user's CI may set ``AFTERTRAIN_MODEL``).
RUN_VARIABLES = (ENV_VAR, *QUICK_ENV)


def clear_run_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Remove every ``AFTERTRAIN_*`` variable and :data:`RUN_VARIABLES` from
    the environment (restored after the test): called before a test sets
    any of its own, so an inner run sees only what the test set."""
    for name in [*RUN_VARIABLES, *(n for n in os.environ if n.startswith("AFTERTRAIN_"))]:
        monkeypatch.delenv(name, raising=False)


def outside_any_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment of a pytest started from a shell, not from a test:
    no xdist worker's variables (pytest-benchmark would not time in it), no
    PYTEST_CURRENT_TEST and none of :data:`RUN_VARIABLES` (what the test
    set under other ``AFTERTRAIN_*`` names stays). Called in the test's body;
    in a fixture only the xdist variables stay away (pytest sets
    PYTEST_CURRENT_TEST again for the call, after the fixtures), which is
    what a pytester run inside needs."""
    for name in (*XDIST_VARIABLES, "PYTEST_CURRENT_TEST", *RUN_VARIABLES):
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
