"""Shared set-up of the benchmarks (pytest-benchmark).

Every benchmark asserts its result is correct before it is timed and runs
on one thread. A timing claim is a decision of
:func:`aftertrain.timing.sequential_decisions` (through the ledger's
``claim_record`` fixture: ``holds``, ``broken`` or ``inconclusive``, and
``skipped`` as "not timed" under ``--benchmark-disable``; under pytest-xdist the
workers time one test at a time, :mod:`aftertrain.ledger.workers`).
Next to pytest-benchmark's absolute times, :func:`aftertrain.timing.compare.store` puts the
decision's paired ratios (median, interval, pairs) in
``benchmark.extra_info["ratios"]``: the machine-independent figure that
``--benchmark-compare`` also compares (:mod:`aftertrain.timing.compare`). Runs are
saved to and compared with ``baselines/benchmarks`` (``addopts`` in
pyproject.toml); see docs/measurement.md.
"""

from __future__ import annotations

import pytest
import torch

BENCHMARK_THREADS = 1  # pinned: thread count changes the times more than any code change


@pytest.fixture(autouse=True)
def _pinned_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(BENCHMARK_THREADS)
    yield
    torch.set_num_threads(before)
