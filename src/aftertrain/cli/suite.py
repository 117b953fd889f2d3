"""Running the claims' suite for ``aftertrain report``: one pytest subprocess
per model, writing its ledger (``--claims-json``), one model after another or
side by side under one timing lock. Nothing here parses arguments; a run
that cannot be done is a :class:`~aftertrain.report.reading.ReportError`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from aftertrain.cli.progress import heartbeat, relay
from aftertrain.core import runmeta
from aftertrain.core.tolerances import REPORT_TIMING_BUDGET_TOTAL_S
from aftertrain.report.paths import ledger_file
from aftertrain.report.reading import (
    META_FROM_REPORT_RUN,
    META_NONE,
    QUICK_ENV,
    LedgerFile,
    ReportError,
    read_ledger,
)

# aftertrain.ledger (the pytest plugin) imports pytest: it loads where a run
# starts, so that ``aftertrain --version`` and a usage error answer at once.


def default_checkout() -> Path | None:
    """The source checkout this package was installed from (editable
    install), if it has the project's tests; else None."""
    root = Path(__file__).resolve().parents[3]
    return root if is_checkout(root) else None


def is_checkout(path: Path) -> bool:
    """Whether ``path`` is an aftertrain source tree: pyproject.toml and tests/."""
    return (path / "pyproject.toml").is_file() and (path / "tests").is_dir()


def _pytest_command(
    checkout: Path,
    json_path: Path,
    model: str | None,
    timing_lock: Path | None,
    model_free_from: Path | None,
) -> list[str]:
    """The command line of :func:`run_ledger`'s pytest run (its arguments as there)."""
    from aftertrain.ledger import reuse

    # The checkout's configuration named outright, and every path option in its
    # --flag=PATH form: pytest picks its rootdir from the command line's paths
    # before aftertrain's options are known, so a path given as a separate
    # word outside the checkout would root it there.
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        f"--rootdir={checkout}",
        f"--config-file={checkout / 'pyproject.toml'}",
        f"--claims-json={json_path}",
        f"--timing-budget-total={REPORT_TIMING_BUDGET_TOTAL_S:g}",
    ]
    if model is not None:
        cmd += [f"--aftertrain-model={model}"]
    if timing_lock is not None:  # side by side: one process each, the cores shared by the runs
        cmd += [f"--timing-lock={timing_lock}", "-n", "0"]
    if model_free_from is not None:
        cmd += [f"{reuse.FLAG}={model_free_from}"]
    return cmd


def run_ledger(
    checkout: Path,
    json_path: Path,
    quick: bool,
    log: Callable[[str], None],
    meta: dict | None = None,
    model: str | None = None,
    *,
    timing_lock: Path | None = None,
    output: Path | None = None,
    model_free_from: Path | None = None,
) -> LedgerFile:
    """Run the checkout's whole pytest suite, writing its ledger to ``json_path``.

    pytest's own progress streams to standard error as it runs, or to the
    file ``output`` when given (runs side by side). ``meta`` (the run's
    metadata, taken just before the run) stands in for the ledger's own
    when the ledger carries none. ``model``: a bundled model's name or a
    checkpoint path, passed as ``--aftertrain-model`` (default: the suite's
    default, the reference). ``timing_lock``: passed as ``--timing-lock``,
    so runs side by side never time while another runs a test (each then
    in one process, ``-n 0``; a run alone uses the suite's xdist workers).
    ``model_free_from``: an earlier run's ledger, passed as
    ``--model-free-from`` (:mod:`aftertrain.ledger.reuse`): the tests that do
    not read the model are not run again, their outcomes are that run's. The
    ledger keeps pytest's exit status (``pytest_status``: 1 when a test
    failed, a claim's or not).
    """
    if not is_checkout(checkout):
        raise ReportError(f"checkout must be an aftertrain source tree with tests/, got {checkout}")
    cmd = _pytest_command(checkout, json_path, model, timing_lock, model_free_from)
    env = {**os.environ, **(QUICK_ENV if quick else {})}
    log(
        f"running the claims' tests: {' '.join(cmd[1:])} (in {checkout})"
        + (f"; its output goes to {output}" if output else "")
    )
    proc = _run_pytest(cmd, checkout, env, output, model)
    if proc.returncode not in (0, 1) or not json_path.is_file():
        where = f"; its output: {output}" if output else ""
        raise ReportError(
            f"pytest exited with status {proc.returncode} and wrote no ledger "
            f"(an error outside the tests); run `python -m pytest` in "
            f"{checkout}{where}"
        )
    ledger = read_ledger(json_path)
    if ledger.meta_source == META_NONE and meta:
        ledger = replace(ledger, meta={**meta, "quick": quick}, meta_source=META_FROM_REPORT_RUN)
    return replace(ledger, pytest_status=proc.returncode)


def _run_pytest(
    cmd: list[str], checkout: Path, env: dict[str, str], output: Path | None, model: str | None
) -> subprocess.CompletedProcess:
    """Run pytest's command line ``cmd`` in ``checkout``, its output to the
    file ``output`` or, without one, relayed to standard error through a
    pipe; either way a line at least every 5 s (:func:`heartbeat`): pytest's
    output in a file says nothing here, and its own output can be silent for
    one slow test."""
    if output:
        running = f"model {model or 'reference'}: pytest running (its log: {output})"
        with open(output, "w") as stream, heartbeat("report", running):
            return subprocess.run(cmd, cwd=checkout, env=env, stdout=stream, stderr=stream)
    running = f"model {model or 'reference'}: pytest running a test"
    read_end, write_end = os.pipe()
    with heartbeat("report", running) as at, open(read_end, "rb", buffering=0) as source:
        relaying = threading.Thread(target=relay, args=(source, sys.stderr, at, running), daemon=True)
        relaying.start()
        try:
            return subprocess.run(cmd, cwd=checkout, env=env, stdout=write_end, stderr=write_end)
        finally:
            os.close(write_end)  # the child has ended: the relay reads to the end and stops
            relaying.join()


def labelled(ledgers: list[LedgerFile]) -> tuple[LedgerFile, dict[str, LedgerFile]]:
    """The first ledger (the primary model's) and the others by their model's
    label; two ledgers of one model are refused."""
    from aftertrain.report import multimodel

    labels = [multimodel.model_label(led) for led in ledgers]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise ReportError(f"two ledgers are of the same model {dup}: give each model once")
    return ledgers[0], dict(zip(labels[1:], ledgers[1:], strict=True))


def _model_free_from(
    checkout: Path,
    first: LedgerFile,
    first_path: Path,
    first_model: str,
    model: str,
    log: Callable[[str], None],
) -> Path | None:
    """The first run's ledger when this checkout's tracked code is the one it
    ran (its model-free outcomes then stand); else None, and the log says why."""
    from aftertrain.ledger.state import WORKTREE

    here = runmeta.worktree(checkout)
    if here is not None and first.meta.get(WORKTREE) == here:
        return first_path
    why = (
        f"{checkout} is not a git checkout with a commit"
        if here is None
        else f"the checkout's tracked code changed since {first_model}'s run (commit "
        f"{first.meta.get('commit')}, now {runmeta.commit(checkout)})"
    )
    log(f"{why}: {model}'s run runs every test")
    return None


def _plans(models: list[str], run_dir: Path, claims_json: list[str]) -> list[tuple[int, str, str, Path]]:
    """Each model's run: (its index, the model, its label, its ledger's path
    in ``run_dir``), each ledger's path appended to ``claims_json``."""
    from aftertrain.lm import registry as _models

    plans = []
    for i, m in enumerate(models):
        label = Path(m).stem if m not in _models.BUNDLED else m
        run_path = (run_dir / ledger_file(label, i == 0)).resolve()
        claims_json.append(str(run_path))
        plans.append((i, m, label, run_path))
    return plans


def _model_line(i: int, models: list[str], reused: bool) -> str:
    """The progress line starting the run of ``models[i]`` (``reused``: the
    tests that do not read the model are taken from the first model's run)."""
    m = models[i]
    return f"model {i + 1} of {len(models)}: {m} (the claims' tests with --aftertrain-model {m}" + (
        f"; those that do not read the model ran on {models[0]}: their outcomes are taken from its ledger)"
        if reused
        else ")"
    )


def _last_line(output: Path) -> str:
    """pytest's last line in the log ``output``: its summary ("... passed ... in 296.65s")."""
    tail = [line.strip() for line in output.read_text(errors="replace").splitlines() if line.strip()]
    return tail[-1] if tail else "no output"


def _side_by_side(
    one: Callable[[tuple], LedgerFile], plans: list[tuple], jobs: int, logs: Path, log: Callable[[str], None]
) -> list[LedgerFile]:
    """``one`` of each of ``plans``, ``jobs`` at a time; the logs' folder
    ``logs`` removed when every run passed, kept (and named) when one failed."""
    log(f"running {len(plans)} models {jobs} at a time (--jobs {jobs}); timing runs one at a time")
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        ran = list(pool.map(one, plans))
    if all(led.pytest_status == 0 for led in ran):
        shutil.rmtree(logs, ignore_errors=True)
        log(f"every run passed: their logs and lock ({logs}) removed")
    else:
        log(f"a run failed: every run's whole log is kept in {logs}")
    return ran


def run_models(
    models: list[str],
    checkout: Path,
    run_dir: Path,
    quick: bool,
    log: Callable[[str], None],
    claims_json: list[str],
    jobs: int = 1,
) -> tuple[LedgerFile, dict]:
    """Run the suite once per model, ``jobs`` at a time; each ledger's path is
    appended to ``claims_json`` (in the order of ``models``). Runs side by
    side share a timing lock (``--timing-lock``): their untimed tests run
    together, but no run times while another runs a test, so each timing
    sees the machine as a lone run would. Their pytest output goes to a log
    file each (named in the progress lines), whose last line is shown when
    the run ends; the logs' folder is removed when every run passed, kept
    (and named) when one failed. A ReportError keeps it too.

    One at a time, every model after the first runs only the tests that
    read the model (``--model-free-from`` the first run's ledger): the
    others' outcomes are the same on every model, so they run once. Side by
    side, every run is whole (the first's ledger is not there yet)."""
    from aftertrain.report import meta

    jobs = min(jobs, len(models))
    logs = Path(tempfile.mkdtemp(prefix="aftertrain-report-logs-")) if jobs > 1 else None
    plans = _plans(models, run_dir, claims_json)

    def one(plan, first: LedgerFile | None = None) -> LedgerFile:
        i, m, label, run_path = plan
        earlier = (
            None
            if first is None  # the first model's run: take its model-free outcomes
            else _model_free_from(checkout, first, plans[0][3], models[0], m, log)
        )
        log(_model_line(i, models, earlier is not None))
        output = logs / f"pytest-{i + 1}-{label}.log" if logs else None
        led = run_ledger(
            checkout,
            run_path,
            quick,
            log,
            meta.collect_for_model(checkout, m),
            model=m,
            timing_lock=logs / "timing.lock" if logs else None,
            output=output,
            model_free_from=earlier,
        )
        if output:
            log(f"model {m}: {_last_line(output)} (all of it: {output})")
        log(f"model {m}: pytest exit status {led.pytest_status}")
        return led

    if logs is not None:
        ran = _side_by_side(one, plans, jobs, logs, log)
    else:
        ran = [one(plans[0])]
        ran += [one(plan, ran[0]) for plan in plans[1:]]
    return labelled(ran)
