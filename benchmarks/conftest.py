"""Shared set-up of the benchmarks (pytest-benchmark).

Every benchmark asserts its result is correct before it is timed and runs
on one thread. A timing claim is a decision of
:func:`aftertrain.timing.sequential_decisions` (through the ledger's
``claim_record`` fixture: ``holds``, ``broken`` or ``inconclusive``, and
``skipped`` as "not timed" under ``--benchmark-disable`` or pytest-xdist).
Next to pytest-benchmark's absolute times, :func:`aftertrain.benchratios.store` puts the
decision's paired ratios (median, interval, pairs) in
``benchmark.extra_info["ratios"]``: the machine-independent figure that
``--benchmark-compare`` also compares (:mod:`aftertrain.benchratios`). Runs are
saved to and compared with ``baselines/benchmarks`` (``addopts`` in
pyproject.toml); see docs/measurement.md.
"""

from __future__ import annotations

import pytest
import torch

from aftertrain.benchratios import REGRESSED, compare_ratios, ratio_table
from aftertrain.tolerances import RATIO_REGRESSION


BENCHMARK_THREADS = 1  # pinned: thread count changes the times more than any code change


@pytest.fixture(autouse=True)
def _pinned_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(BENCHMARK_THREADS)
    yield
    torch.set_num_threads(before)


# --- compare of paired ratios with the stored run (--benchmark-compare) -------------------


def _stored_runs(config) -> dict:
    """Full name -> extra_info of the run pytest-benchmark compares with."""
    session = getattr(config, "_benchmarksession", None)
    stored = {}
    for mapping in (getattr(session, "compared_mapping", None) or {}).values():
        stored.update({name: bench.get("extra_info", {}) for name, bench in mapping.items()})
    return stored


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """With --benchmark-compare: compare this run's paired ratios with the
    stored run's; a regression fails the run (exit status 1)."""
    config = session.config
    stored = _stored_runs(config)
    bs = getattr(config, "_benchmarksession", None)
    if not stored or bs is None or hasattr(config, "workerinput"):
        return
    now = {b.fullname: b.extra_info for b in bs.benchmarks}
    config._ratio_changes = compare_ratios(now, stored)
    if any(c.status == REGRESSED for c in config._ratio_changes):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, config) -> None:
    changes = getattr(config, "_ratio_changes", None)
    if changes is None:
        return
    tr = terminalreporter
    tr.write_sep("-", f"paired ratios against the stored run (regressed: interval above "
                      f"stored x {RATIO_REGRESSION:g})")
    for line in ratio_table(changes):
        tr.write_line(line)
    for c in changes:
        if c.status == REGRESSED:
            tr.write_line(f"RATIO REGRESSION {c.line()}", red=True)
