"""Timing verdicts under load: run the timing benchmarks several times, with
and without a CPU load this script starts and stops itself, and tabulate
the verdict of each timing claim; then the teeth under the same load.

    python benchmarks/stress.py --runs 5                 # every timing benchmark
    python benchmarks/stress.py --runs 3 --skip-spec     # without the speculative module
    python benchmarks/stress.py --runs 5 --suite --teeth-runs 10   # the default pytest
    python benchmarks/stress.py --suite --runs 3 --teeth-runs 0    # the suite's own speed

Besides the verdicts, a table of seconds: the whole run's wall time and the
time per area (each test folder's setup, call and teardown from pytest's
``--durations``), the median of the runs in each condition; a change that
slows the suite shows there.

The load: one busy-looping subprocess per core (``os.cpu_count()``), started
before the loaded runs and killed (by its own pid) after them, also on error
or Ctrl-C. Each run is ``python -m pytest <benchmarks> --claims-json FILE``
from the repository root (with ``--suite``: the default ``python -m pytest``,
every test, as the README runs it); its ledger gives the verdicts, and the
claims called broken whatever their kind. The teeth: the
decision "median ratio inside SAME_SPEED_BAND" on P7's matmul against itself
(must hold), against twice the work and against half the work (must be
broken), ``--teeth-runs`` times in each condition, in this process.

Exit status 1 (a ``STRESS FAILED`` line each) when a pytest run exited
non-zero or called a claim broken, or a teeth candidate got its expected
verdict in fewer than 90% of its decisions; 0 otherwise.

Prints markdown tables (docs/measurement.md, "Stress", says how to read them). Writes nothing else.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aftertrain.claims.verdicts import BROKEN, HOLDS

ROOT = Path(__file__).resolve().parent.parent
TIMING_CLAIMS = ("Q11", "S5", "S6", "S7", "P7", "X2", "X3", "X4", "X8")
BENCHMARKS = (
    "benchmarks/test_quant_fake_speed.py",
    "benchmarks/test_prune_dense_zeros.py",
    "benchmarks/test_quant_int8_linear.py",
    "benchmarks/test_sparse_csr_crossover.py",
    "benchmarks/test_spec_speedup.py",
)
ORDER = ("holds", "broken", "does not reproduce", "inconclusive", "skipped")
#: The teeth candidates against P7's matmul, and the verdict each must get.
TEETH_EXPECT = {
    "same work (must hold)": HOLDS,
    "twice the work (must be broken)": BROKEN,
    "half the work (must be broken)": BROKEN,
}
#: The least share of a candidate's teeth decisions with its expected verdict
#: (9 of 10 runs).
TEETH_LEAST = 0.9


class Load:
    """One busy-looping Python subprocess per core while in the block."""

    def __init__(self, cores: int) -> None:
        self.cores, self.procs = cores, []

    def __enter__(self) -> Load:
        for _ in range(self.cores):
            self.procs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        time.sleep(5)  # a head start (the 1-minute load average takes a minute to show them)
        return self

    def __exit__(self, *exc) -> None:
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()


def run_benchmarks(
    files: list[str], budget: float | None
) -> tuple[dict[str, str], list[str], float, int, dict[str, float]]:
    """One pytest run: verdict per timing claim, every claim called broken,
    seconds, exit status, and seconds per area (setup, call and teardown of
    the tests under each folder, from ``--durations=0``)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "claims.json"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            *files,
            "-p",
            "no:cacheprovider",
            "-q",
            "--claims-json",
            str(out),
            "--durations=0",
            "--durations-min=0",
        ]
        if budget is not None:
            cmd += ["--timing-budget", str(budget)]
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        seconds = time.perf_counter() - start
        claims = json.loads(out.read_text())["claims"] if out.is_file() else []
        claims = [e for e in claims if e["verdict"] != "not covered"]
    return (
        {e["id"]: e["verdict"] for e in claims if e["id"] in TIMING_CLAIMS},
        [e["id"] for e in claims if e["verdict"] == "broken"],
        seconds,
        proc.returncode,
        areas(proc.stdout),
    )


def areas(durations: str) -> dict[str, float]:
    """Seconds per area from pytest's ``--durations`` lines (``1.23s call
    tests/claims_on_model/test_quant.py::test_x``): the test's folder (``tests/claims_on_model``,
    ``benchmarks``; a file directly under tests/ counts as ``tests``)."""
    total: dict[str, float] = collections.defaultdict(float)
    for line in durations.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].endswith("s") and parts[1] in ("setup", "call", "teardown"):
            try:
                secs = float(parts[0][:-1])
            except ValueError:
                continue
            total[str(Path(parts[2].split("::")[0]).parent)] += secs
    return dict(total)


def teeth(runs: int) -> dict[str, collections.Counter]:
    """Verdicts of the same-speed decision on work of known ratio."""
    import torch

    from aftertrain.core.tolerances import SAME_SPEED_BAND
    from aftertrain.timing import RatioRule, decide_ratio

    g = torch.Generator().manual_seed(8)
    x, w = torch.randn(128, 128, generator=g), torch.randn(128, 512, generator=g)
    half = w[:, :256].contiguous()
    work = (lambda: x @ w, lambda: (x @ w, x @ w), lambda: x @ half)
    candidates = dict(zip(TEETH_EXPECT, work, strict=True))
    rule = RatioRule.inside(SAME_SPEED_BAND)
    torch.set_num_threads(1)
    return {
        name: collections.Counter(decide_ratio(lambda: x @ w, c, rule).verdict for _ in range(runs))
        for name, c in candidates.items()
    }


def problems(
    outcomes: list[tuple[int, list[str]]],
    teeth_of: dict[str, collections.Counter],
    least: float = TEETH_LEAST,
) -> list[str]:
    """What makes the stress run fail, a line each: a pytest run that exited
    non-zero or called a claim broken (``outcomes``: (exit status, broken
    claims) per run), a teeth candidate given its expected verdict in fewer
    than ``least`` of its decisions."""
    lines = [
        f"run {i}: exit {status}" + (f", broken: {', '.join(broken)}" if broken else "")
        for i, (status, broken) in enumerate(outcomes, start=1)
        if status or broken
    ]
    for name, counter in teeth_of.items():
        total = sum(counter.values())
        right = counter[TEETH_EXPECT[name]]
        if total == 0 or right < least * total:
            lines.append(f"teeth {name!r}: {right} of {total} {TEETH_EXPECT[name]}, fewer than {least:.0%}")
    return lines


def cell(counter: collections.Counter) -> str:
    return ", ".join(f"{counter[v]} {v}" for v in ORDER if counter[v]) or "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per condition (default 5)")
    parser.add_argument(
        "--skip-spec", action="store_true", help="leave out benchmarks/test_spec_speedup.py (minutes per run)"
    )
    parser.add_argument(
        "--suite", action="store_true", help="run the default pytest (every test) instead of the benchmarks"
    )
    parser.add_argument(
        "--teeth-runs",
        type=int,
        default=None,
        help="decisions per teeth candidate and condition (default --runs; 0: none)",
    )
    parser.add_argument("--budget", type=float, default=None, help="--timing-budget per run")
    parser.add_argument(
        "--conditions",
        default="idle,loaded",
        help="comma-separated: idle (no load of ours), loaded (default both)",
    )
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be >= 1, got {args.runs}")
    teeth_runs = args.runs if args.teeth_runs is None else args.teeth_runs
    if teeth_runs < 0:
        parser.error(f"--teeth-runs must be >= 0 (0: no teeth), got {teeth_runs}")
    if args.suite and args.skip_spec:
        parser.error("--suite runs every test; it cannot be combined with --skip-spec")
    files = [] if args.suite else [f for f in BENCHMARKS if not (args.skip_spec and "spec" in f)]
    verdicts: dict[str, dict[str, collections.Counter]] = {}
    summary: dict[str, list[str]] = {}
    teeth_of: dict[str, dict] = {}
    walls: dict[str, list[float]] = {}
    per_area: dict[str, dict[str, list[float]]] = {}
    failed: list[str] = []
    conditions = args.conditions.split(",")
    if not conditions or any(c not in ("idle", "loaded") for c in conditions):
        parser.error(f"--conditions must name idle and/or loaded, got {args.conditions!r}")
    for condition in conditions:
        cores = os.cpu_count() or 1
        load = Load(cores) if condition == "loaded" else None
        if load:
            load.__enter__()
        try:
            per_claim = collections.defaultdict(collections.Counter)
            rows, outcomes = [], []
            walls[condition], per_area[condition] = [], collections.defaultdict(list)
            for i in range(args.runs):
                load1 = os.getloadavg()[0]
                got, broken, seconds, status, by_area = run_benchmarks(files, args.budget)
                walls[condition].append(seconds)
                for area, secs in by_area.items():
                    per_area[condition][area].append(secs)
                outcomes.append((status, broken))
                for cid, v in got.items():
                    per_claim[cid][v] += 1
                rows.append(
                    f"run {i + 1}: exit {status}, {seconds:.0f} s, load1 at start "
                    f"{load1:.1f}, at end {os.getloadavg()[0]:.1f}, "
                    f"broken: {', '.join(broken) or 'none'}"
                )
                timing = " ".join(f"{cid}={v}" for cid, v in sorted(got.items()))
                print(f"{condition} {rows[-1]}; timing: {timing}", file=sys.stderr, flush=True)
            verdicts[condition] = per_claim
            summary[condition] = rows
            teeth_of[condition] = teeth(teeth_runs) if teeth_runs else {}
            failed += [f"{condition} {line}" for line in problems(outcomes, teeth_of[condition])]
        finally:
            if load:
                load.__exit__()
    print("| claim | " + " | ".join(conditions) + " |")
    print("|---|" + "---|" * len(conditions))
    for cid in TIMING_CLAIMS:
        if any(verdicts[c][cid] for c in conditions):
            print(f"| {cid} | " + " | ".join(cell(verdicts[c][cid]) for c in conditions) + " |")
    print()
    if any(teeth_of.values()):
        print("| teeth: P7 matmul against | " + " | ".join(conditions) + " |")
        print("|---|" + "---|" * len(conditions))
        for name in next(iter(teeth_of.values())):
            print(f"| {name} | " + " | ".join(cell(teeth_of[c][name]) for c in conditions) + " |")
        print()
    print("| seconds (median of the runs) | " + " | ".join(conditions) + " |")
    print("|---|" + "---|" * len(conditions))
    print(
        "| whole run (wall) | " + " | ".join(f"{statistics.median(walls[c]):.0f}" for c in conditions) + " |"
    )
    every = sorted(
        {a for c in conditions for a in per_area[c]},
        key=lambda a: -statistics.median(per_area[conditions[0]].get(a, [0.0])),
    )
    for area in every:
        print(
            f"| {area} | "
            + " | ".join(
                f"{statistics.median(per_area[c][area]):.1f}" if per_area[c].get(area) else "-"
                for c in conditions
            )
            + " |"
        )
    print()
    for c in conditions:
        print(f"- {c}: " + "; ".join(summary[c]))
    for line in failed:
        print(f"STRESS FAILED: {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
