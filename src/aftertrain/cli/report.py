"""``aftertrain report``: run the claims' tests on each model (one pytest
subprocess per model), then hand the ledgers to :mod:`aftertrain.report`,
which renders them. Argument checks, progress lines and the subprocess live
here; the report package only renders and writes what it is given.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from aftertrain.claims import verdicts as V
from aftertrain.core import runmeta
from aftertrain.core.io import atomic_write
from aftertrain.ledger import reuse
from aftertrain.ledger.state import WORKTREE
from aftertrain.report.ledgerfile import (
    META_FROM_REPORT_RUN,
    META_NONE,
    QUICK_ENV,
    LedgerFile,
    ReportError,
    read_ledger,
)
from aftertrain.report.paths import (
    COMMITTED,
    DEFAULT_MODELS,
    DEFAULT_OUT,
    SWEEP_FILE,
    check_output_folder,
    ledger_file,
)

# The report's sections (aftertrain.report.meta, .multimodel, .sweep, .assemble,
# .rendering) import the experiments and torch: they load inside the functions that
# render, after every argument is checked, so a usage error answers without
# torch (issue 36; tests/cli/test_cli_imports.py).


def default_checkout() -> Path | None:
    """The source checkout this package was installed from (editable
    install), if it has the project's tests; else None."""
    root = Path(__file__).resolve().parents[3]
    return root if is_checkout(root) else None


def is_checkout(path: Path) -> bool:
    return (path / "pyproject.toml").is_file() and (path / "tests").is_dir()


def run_ledger(checkout: Path, json_path: Path, quick: bool,
               log: Callable[[str], None], meta: dict | None = None,
               model: str | None = None, *, timing_lock: Path | None = None,
               output: Path | None = None, model_free_from: Path | None = None) -> LedgerFile:
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
    # The checkout's configuration named outright, and every path option in its
    # --flag=PATH form: pytest picks its rootdir from the command line's paths
    # before aftertrain's options are known, so a path given as a separate
    # word outside the checkout would root it there.
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
           f"--rootdir={checkout}", f"--config-file={checkout / 'pyproject.toml'}",
           f"--claims-json={json_path}"]
    if model is not None:
        cmd += [f"--aftertrain-model={model}"]
    if timing_lock is not None:  # side by side: one process each, the cores shared by the runs
        cmd += [f"--timing-lock={timing_lock}", "-n", "0"]
    if model_free_from is not None:
        cmd += [f"{reuse.FLAG}={model_free_from}"]
    env = {**os.environ, **(QUICK_ENV if quick else {})}
    log(f"running the claims' tests: {' '.join(cmd[1:])} (in {checkout})"
        + (f"; its output goes to {output}" if output else ""))
    with open(output, "w") if output else contextlib.nullcontext(sys.stderr) as stream:
        proc = subprocess.run(cmd, cwd=checkout, env=env, stdout=stream, stderr=stream)
    if proc.returncode not in (0, 1) or not json_path.is_file():
        where = f"; its output: {output}" if output else ""
        raise ReportError(f"pytest exited with status {proc.returncode} and wrote no ledger "
                          f"(an error outside the tests); run `python -m pytest` in "
                          f"{checkout}{where}")
    ledger = read_ledger(json_path)
    if ledger.meta_source == META_NONE and meta:
        ledger = replace(ledger, meta={**meta, "quick": quick}, meta_source=META_FROM_REPORT_RUN)
    return replace(ledger, pytest_status=proc.returncode)


def split_values(values: list[str] | None, flag: str) -> list[str]:
    """The names of a repeatable, comma-separated option (``--models a,b
    --models c``); an empty one (``--models ''``, ``a,,b``) is refused, never
    read as "the default"."""
    out = [v.strip() for arg in values or [] for v in str(arg).split(",")]
    if "" in out:
        raise ReportError(f"{flag} {','.join(values)!r} holds an empty name; give "
                          f"NAME_OR_PATH[,NAME_OR_PATH...], or leave {flag} out for the default")
    return out


def _labelled(ledgers: list[LedgerFile]) -> tuple[LedgerFile, dict[str, LedgerFile]]:
    from aftertrain.report import multimodel

    labels = [multimodel.model_label(led) for led in ledgers]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise ReportError(f"two ledgers are of the same model {dup}: give each model once")
    return ledgers[0], dict(zip(labels[1:], ledgers[1:], strict=True))


def report_main(args) -> int:
    """``aftertrain report``: see :func:`aftertrain.cli.build_parser`.

    Steps: check every argument (before any long work), get the ledgers (read
    the given ones or run the suite once per model), place the sweep file,
    render, and with ``--update-committed`` commit the ledgers and the README
    table; the exit status is 1 when any model's run failed or broke a claim.
    """
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[report {time.perf_counter() - t0:5.0f}s] {msg}", file=sys.stderr, flush=True)

    checkout, out = _checkout_and_output(args)
    requested_jobs = _jobs(args)
    claims_json = split_values(getattr(args, "claims_json", None), "--claims-json")
    models = split_values(getattr(args, "models", None), "--models")
    sweep_arg = getattr(args, "sweep", None)
    sweep = None
    if sweep_arg:  # refused before any run
        from aftertrain.report import sweep as sweep_section

        sweep = sweep_section.read_sweep(sweep_arg)
    run_dir = out  # where a run writes its ledger
    if claims_json:
        ledger, others = _read_ledgers(claims_json, models, args.quick)
        log(f"read the claims ledger{'s' if others else ''} {', '.join(claims_json)}")
    else:
        models = _check_models(models, checkout)
        out.mkdir(parents=True, exist_ok=True)
        # With --update-committed the runs' ledgers wait outside report/ until
        # every model has run: a later model's suite checks the committed
        # report against its committed ledger, which must not change under it.
        run_dir = Path(tempfile.mkdtemp(prefix="aftertrain-runs-")) if args.update_committed else out
        # One model at a time on the suite's xdist workers: 282 s for both bundled
        # models on 2 idle cores, against 344 s for the two side by side.
        jobs = requested_jobs if requested_jobs is not None else 1
        ledger, others = _run_models(models, checkout, run_dir, args.quick, log, claims_json,
                                     jobs)
    # every argument is checked: now the sections, and torch with them
    from aftertrain.report.assemble import build, read_report_sweep

    if sweep_arg:
        _place_sweep(sweep_arg, out)
    else:
        sweep = read_report_sweep(out)
        if sweep:
            log(f"rendering the sweep file {out / SWEEP_FILE}")
    path = build(ledger, out, checkout, log, others, sweep)
    if args.update_committed:
        _commit(out, run_dir, claims_json, ledger, others, checkout)
        log(f"updated the committed report {out} and the claims table of {checkout / 'README.md'}")
    log(f"wrote {path} and {len(list(out.glob('*.png')))} plots")
    return _summary(path, ledger, others)


def _jobs(args) -> int | None:
    """``--jobs``, checked (None: not given; the default is one model at a
    time, each on the suite's xdist workers)."""
    jobs = getattr(args, "jobs", None)
    if jobs is not None and jobs < 1:
        raise ReportError(f"--jobs must be a whole number >= 1, got {jobs}")
    return jobs


def _checkout_and_output(args) -> tuple[Path | None, Path]:
    """The source tree to run in (None: none found) and the output folder, checked writable."""
    checkout = Path(args.checkout).resolve() if args.checkout else default_checkout()
    if args.checkout and not is_checkout(checkout):
        raise ReportError(f"--checkout {args.checkout} is not an aftertrain source tree "
                          "(needs pyproject.toml and tests/)")
    if args.update_committed:
        if checkout is None:
            raise ReportError("--update-committed needs the source tree to update: "
                              "give --checkout PATH")
        out = checkout / COMMITTED
    else:
        if args.out == "":
            raise ReportError("--out must name a folder, got ''")
        out = Path(args.out) if args.out is not None else DEFAULT_OUT
    check_output_folder(out)  # before any long work
    return checkout, out


def _read_ledgers(claims_json: list[str], models: list[str], quick: bool) -> tuple[LedgerFile, dict]:
    """``--claims-json``: finished runs, read and labelled by their models."""
    if quick:
        raise ReportError("--quick changes the test run, and --claims-json reads a finished "
                          "one (its own metadata says whether it was quick); drop --quick")
    if models:
        raise ReportError("--models runs the tests on those models, and --claims-json reads "
                          "finished runs (each ledger names its model); give one of them")
    ledgers = []
    for p in claims_json:
        try:
            ledgers.append(read_ledger(p))
        except ReportError as err:
            raise ReportError(f"--claims-json: {err}") from None
    return _labelled(ledgers)


def _check_models(models: list[str], checkout: Path | None) -> list[str]:
    """The models to run (default: the bundled ones), each resolvable, none twice."""
    if checkout is None:
        raise ReportError("no checkout to run the tests in: give --checkout PATH (an aftertrain "
                          "source tree) or --claims-json FILE (from `pytest --claims-json FILE`)")
    from aftertrain.lm import registry as _models

    models = models or list(DEFAULT_MODELS)
    for m in models:  # a bad name, path or architecture is refused before any run
        try:
            _models.load_model(m)
        except (ValueError, _models.CheckpointError) as err:
            raise ReportError(f"--models: {err}") from None
    if len(set(models)) != len(models):
        raise ReportError(f"--models names a model twice: {models}")
    return models


def _run_models(models: list[str], checkout: Path, run_dir: Path, quick: bool,
                log: Callable[[str], None], claims_json: list[str], jobs: int = 1
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
    from aftertrain.lm import registry as _models
    from aftertrain.report import meta

    jobs = min(jobs, len(models))
    side_by_side = jobs > 1
    logs = Path(tempfile.mkdtemp(prefix="aftertrain-report-logs-")) if side_by_side else None
    plans = []
    for i, m in enumerate(models):
        label = Path(m).stem if m not in _models.BUNDLED else m
        run_path = (run_dir / ledger_file(label, i == 0)).resolve()
        claims_json.append(str(run_path))
        plans.append((i, m, label, run_path))

    def one(plan, first: LedgerFile | None = None) -> LedgerFile:
        i, m, label, run_path = plan
        earlier = None
        if first is not None:  # the first model's run: take its model-free outcomes
            here = runmeta.worktree(checkout)
            if here is not None and first.meta.get(WORKTREE) == here:
                earlier = plans[0][3]
            else:
                why = (f"{checkout} is not a git checkout with a commit" if here is None else
                       f"the checkout's tracked code changed since {models[0]}'s run (commit "
                       f"{first.meta.get('commit')}, now {runmeta.commit(checkout)})")
                log(f"{why}: {m}'s run runs every test")
        log(f"model {i + 1} of {len(models)}: {m} (the claims' tests with --aftertrain-model {m}"
            + (f"; those that do not read the model ran on {models[0]}: their outcomes are "
               f"taken from its ledger)" if earlier else ")"))
        output = logs / f"pytest-{i + 1}-{label}.log" if logs else None
        led = run_ledger(checkout, run_path, quick, log, meta.collect(checkout, m), model=m,
                         timing_lock=logs / "timing.lock" if logs else None, output=output,
                         model_free_from=earlier)
        if output:  # pytest's last line: its summary ("... passed ... in 296.65s")
            tail = [line.strip() for line in output.read_text(errors="replace").splitlines()
                    if line.strip()]
            log(f"model {m}: {tail[-1] if tail else 'no output'} (all of it: {output})")
        log(f"model {m}: pytest exit status {led.pytest_status}")
        return led

    if side_by_side:
        log(f"running {len(models)} models {jobs} at a time (--jobs {jobs}); timing runs "
            f"one at a time")
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            ran = list(pool.map(one, plans))
        if all(led.pytest_status == 0 for led in ran):
            shutil.rmtree(logs, ignore_errors=True)
            log(f"every run passed: their logs and lock ({logs}) removed")
        else:
            log(f"a run failed: every run's whole log is kept in {logs}")
    else:
        ran = [one(plans[0])]
        ran += [one(plan, ran[0]) for plan in plans[1:]]
    return _labelled(ran)


def _place_sweep(sweep_arg: str, out: Path) -> None:
    """Copy ``--sweep FILE`` into the output folder, where the report reads it."""
    target = out / SWEEP_FILE
    if Path(sweep_arg).resolve() != target.resolve():
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sweep_arg, target)


def _commit(out: Path, run_dir: Path, claims_json: list[str], ledger: LedgerFile, others: dict,
            checkout: Path) -> None:
    """``--update-committed``: the runs' ledgers into report/, the README's claims table."""
    from aftertrain.report import multimodel
    from aftertrain.report.assemble import update_readme
    for n, (src, led) in enumerate(zip(claims_json, [ledger, *others.values()], strict=False)):
        target = out / ledger_file(multimodel.model_label(led), n == 0)
        if Path(src).resolve() != target.resolve():
            atomic_write(target, Path(src).read_bytes())
    if run_dir is not out:  # the runs' ledgers are in report/ now
        shutil.rmtree(run_dir, ignore_errors=True)
    update_readme(checkout / "README.md", ledger, others)


def _summary(path: Path, ledger: LedgerFile, others: dict) -> int:
    """One line per model (its verdict tally); 1 when a run failed or a claim is broken."""
    from aftertrain.report import multimodel
    from aftertrain.report.rendering import summary_counts
    status = 0
    for label, led in {multimodel.model_label(ledger): ledger, **others}.items():
        counts = summary_counts(led)
        failed = led.pytest_status not in (None, 0)
        tally = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
        print(f"{path}{f' [{label}]' if others else ''}: " + tally
              + (f"; pytest exit status {led.pytest_status} (a test failed)" if failed else ""))
        if counts.get(V.BROKEN) or failed:
            status = 1
    return status
