"""Shared set-up of the benchmarks (pytest-benchmark).

Every benchmark asserts its result is correct before it is timed, runs on
one thread, and stores next to pytest-benchmark's absolute times a paired
ratio (:func:`aftertrain.timing.paired_timing`) in ``benchmark.extra_info``:
the absolute time depends on the machine, the ratio to a baseline run in
alternating pairs much less. Runs are saved to and compared with
``baselines/benchmarks`` (``addopts`` in pyproject.toml); see
docs/measurement.md.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import pytest
import torch

from aftertrain.timing import PairedTiming, min_pairs, paired_timing

BENCHMARK_THREADS = 1  # pinned: thread count changes the times more than any code change


@pytest.fixture(scope="session")
def reference(aftertrain_model):
    """The model the claims run on (``--aftertrain-model`` / ``AFTERTRAIN_MODEL``,
    default the bundled reference; aftertrain.model_plugin); do not modify it."""
    return aftertrain_model


@pytest.fixture(scope="session")
def baselines_dir(pytestconfig) -> Path:
    """The model's stored records: ``baselines/<model>/`` or
    ``--aftertrain-baselines DIR`` (a path that does not exist for a model
    with neither). Benchmarks write there only under ``--force-regen``."""
    from aftertrain.model_plugin import baseline_folder

    root = Path(__file__).resolve().parent.parent / "baselines"
    folder = baseline_folder(pytestconfig, root)
    return folder if folder is not None else root / ".none"


@pytest.fixture(autouse=True)
def _pinned_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(BENCHMARK_THREADS)
    yield
    torch.set_num_threads(before)


def quick_pairs(pairs: int, confidence: float = 0.99) -> int:
    """``pairs``, or a third of it (never below what the interval needs) when
    ``AFTERTRAIN_QUICK=1`` (set by ``aftertrain report --quick``)."""
    if os.environ.get("AFTERTRAIN_QUICK") != "1":
        return pairs
    return max(min_pairs(confidence), pairs // 3)


@pytest.fixture
def record_paired(benchmark) -> Callable[..., PairedTiming | None]:
    """A function ``record_paired(baseline, candidate, **kwargs)`` that times
    ``candidate`` against ``baseline`` with :func:`paired_timing` (keyword
    arguments passed on; ``threads`` defaults to the benchmarks' one) and
    records the result in ``benchmark.extra_info``:

    - ``paired``: :meth:`PairedTiming.as_dict` (every pair, the settings);
    - ``ratio_median``, ``ratio_ci``: the median of candidate / baseline and
      its interval, the machine-independent figure.

    Returns the :class:`PairedTiming`, or ``None`` without timing when
    pytest-benchmark is disabled (``--benchmark-disable``, or under
    pytest-xdist, where it runs each benchmark once untimed).
    """

    def record(baseline: Callable[[], object], candidate: Callable[[], object],
               **kwargs) -> PairedTiming | None:
        if not benchmark.enabled:
            return None
        kwargs.setdefault("threads", BENCHMARK_THREADS)
        kwargs["pairs"] = quick_pairs(kwargs.get("pairs", 21), kwargs.get("confidence", 0.99))
        timing = paired_timing(baseline, candidate, **kwargs)
        benchmark.extra_info["paired"] = timing.as_dict()
        benchmark.extra_info["ratio_median"] = timing.median
        benchmark.extra_info["ratio_ci"] = [timing.ci_low, timing.ci_high]
        return timing

    return record
