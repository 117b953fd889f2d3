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

from pathlib import Path

import pytest
import torch

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


@pytest.fixture(scope="session")
def speculative_drafts(reference):
    """Every draft of speculative decoding (aftertrain.drafts.DraftKind ->
    model), built once per session from the model under test."""
    from aftertrain.drafts import DraftKind, draft_model

    return {kind: draft_model(kind, reference) for kind in DraftKind}


@pytest.fixture(autouse=True)
def _pinned_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(BENCHMARK_THREADS)
    yield
    torch.set_num_threads(before)

