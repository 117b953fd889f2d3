"""pytest-benchmark as the ledger uses it: the one module that reads its
session (``config._benchmarksession``, which it does not publish) and
answers its hooks.

- :func:`session`: the session, or None where pytest-benchmark is not loaded;
  the other modules ask this module, never the attribute.
- :class:`MachineHooks`: the torch build and thread count go into
  ``machine_info``, and a compare with a run of another machine is one line
  at the end of the run (:func:`aftertrain.timing.compare.machine_difference`)
  instead of pytest-benchmark's dump of both records.
- :func:`compare_with_stored_run` and :func:`ratio_summary`: with
  ``--benchmark-compare``, this run's paired ratios against the stored
  run's (:mod:`aftertrain.timing.compare`), and the lines that say so.
"""

from __future__ import annotations

import sys

import pytest

from aftertrain.core.tolerances import RATIO_REGRESSION
from aftertrain.timing.compare import (
    MACHINE_KEY,
    REGRESSED,
    compare_ratios,
    machine,
    machine_difference,
    ratio_table,
)


def session(config: pytest.Config):
    """pytest-benchmark's session of this run (its ``BenchmarkSession``), or
    None where pytest-benchmark is not loaded."""
    return getattr(config, "_benchmarksession", None)


def time_again(config: pytest.Config) -> None:
    """Turn pytest-benchmark's timing back on in an xdist worker (it turns
    itself off under xdist), without its warning that xdist is active."""
    bench = session(config)
    if bench is not None:
        bench.disabled = False
        bench.xdist_warning = False


def no_xdist_warning(config: pytest.Config) -> None:
    """Drop pytest-benchmark's warning that xdist is active (the workers do
    time, one at a time)."""
    bench = session(config)
    if bench is not None:
        bench.xdist_warning = False


class MachineHooks:
    """pytest-benchmark's machine hooks (registered only where it is loaded).
    ``machines`` holds the (stored, now) machine records of a
    ``--benchmark-compare`` (:func:`aftertrain.timing.compare.machine`),
    None without one."""

    def __init__(self) -> None:
        self.machines: tuple[dict, dict] | None = None

    @pytest.hookimpl
    def pytest_benchmark_update_machine_info(self, config: pytest.Config, machine_info: dict) -> None:
        """Add the torch version and thread count to pytest-benchmark's machine record."""
        torch = sys.modules.get("torch")  # the benchmarks imported it; the ledger does not
        machine_info[MACHINE_KEY] = {
            "torch": torch.__version__ if torch else None,
            "threads": torch.get_num_threads() if torch else None,
        }

    @pytest.hookimpl(tryfirst=True)
    def pytest_benchmark_compare_machine_info(
        self, config, benchmarksession, machine_info, compared_benchmark
    ) -> None:
        """Keep the (stored, now) machine records; hand pytest-benchmark its own
        record so it prints no dump of both (the ledger says the difference in one line)."""
        self.machines = (machine(compared_benchmark["machine_info"]), machine(machine_info))
        # The difference is reported in one line by the ledger; pytest-benchmark's
        # own hook (run after this one) then finds nothing to dump.
        compared_benchmark["machine_info"] = machine_info


def compare_with_stored_run(config: pytest.Config, machines: tuple[dict, dict] | None = None) -> list | None:
    """With ``--benchmark-compare``: this run's paired ratios against the
    stored run's (:func:`aftertrain.timing.compare.compare_ratios`, ``not
    comparable`` when ``machines`` differ); None without a compare."""
    bench = session(config)
    mappings = getattr(bench, "compared_mapping", None)
    if not mappings:
        return None
    stored = {}
    for mapping in mappings.values():
        stored.update({name: b.get("extra_info", {}) for name, b in mapping.items()})
    now = {b.fullname: b.extra_info for b in bench.benchmarks}
    return compare_ratios(now, stored, machines=machines)


def regressed(changes: list | None) -> bool:
    """Whether a ratio of the compare regressed (the run then fails)."""
    return bool(changes) and any(c.status == REGRESSED for c in changes)


def ratio_summary(terminalreporter, changes: list, machines: tuple[dict, dict] | None) -> None:
    """The compare's section of the terminal summary: a line across machines
    when they differ, the table of ratios, and one RATIO REGRESSION line per
    ratio that regressed."""
    tr = terminalreporter
    tr.write_sep(
        "-", f"paired ratios against the stored run (regressed: interval above stored x {RATIO_REGRESSION:g})"
    )
    if machines is not None and machine_difference(*machines):
        tr.write_line(
            f"not comparable across machines: {machine_difference(*machines)}; "
            "hardware-dependent ratios are not compared",
            yellow=True,
        )
    for line in ratio_table(changes):
        tr.write_line(line)
    for c in changes:
        if c.status == REGRESSED:
            tr.write_line(f"RATIO REGRESSION {c.line()}", red=True)
