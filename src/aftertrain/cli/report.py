"""``aftertrain report``: run the claims' tests on each model (one pytest
subprocess per model, :mod:`aftertrain.cli.suite`), then hand the ledgers to
:mod:`aftertrain.report`, which renders them. Argument checks and progress
lines live here; the report package only renders and writes what it is given.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from aftertrain.claims import verdicts as V
from aftertrain.cli.options import UsageError
from aftertrain.cli.suite import default_checkout, is_checkout, labelled, run_models
from aftertrain.core.io import atomic_write
from aftertrain.report.paths import (
    COMMITTED,
    DEFAULT_MODELS,
    DEFAULT_OUT,
    SWEEP_FILE,
    check_output_folder,
    ledger_file,
)
from aftertrain.report.reading import LedgerFile, ReportError, read_ledger

# The report's sections (aftertrain.report.meta, .multimodel, .sweep, .assemble,
# .rendering) import the experiments and torch: they load inside the functions that
# render, after every argument is checked, so a usage error answers without
# torch (tests/cli/test_cli_imports.py).


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``report`` and its options to ``subparsers``.

    Long: one ``add_argument`` per option, in the order ``--help`` lists
    them; the options interleave what to write, what to run and what to
    read, so no group of them is a piece of its own.
    """
    p = subparsers.add_parser(
        "report",
        help="run the claims' tests and write the report (tables beside the article's, plots)",
        description="Run this checkout's pytest suite (the claims ledger), then write "
        "OUT/report.md with every table of the articles beside ours, the verdicts, "
        "and PNG plots. Exit status 1 when a claim is broken, 2 on a usage error.",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument("--out", help="output folder (default: build/report, ignored by git)")
    where.add_argument(
        "--update-committed",
        "--update-readme",
        dest="update_committed",
        action="store_true",
        help="write the committed report (the checkout's report/ folder, with its "
        "claims.json) and rewrite the claims table of its README.md",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="fewer hypothesis examples and timing pairs: a first look, said so in the "
        "report (only when the report runs the tests)",
    )
    p.add_argument(
        "--checkout",
        help="aftertrain source tree whose tests to run and whose "
        "report/ and README --update-committed rewrites (default: the one this "
        "package is installed from)",
    )
    p.add_argument(
        "--claims-json",
        action="append",
        metavar="FILE[,FILE...]",
        help="read verdicts and figures from this ledger (written by `pytest "
        "--claims-json FILE`) instead of running the tests; several (repeated or "
        "comma-separated) give one verdict column per model, the first the primary",
    )
    p.add_argument(
        "--models",
        action="append",
        metavar="NAME_OR_PATH[,...]",
        help="run the claims' tests on these models (bundled names: "
        "reference, article, sweep-250, sweep-1250; a checkpoint written by "
        "`aftertrain train --out`; or a transformers causal-LM folder with its "
        "tokenizer); default reference,article; the first is the "
        "primary and runs the whole suite, every later one only the tests that read "
        "the model (the others' outcomes are the first run's)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="run N models' suites side by side, each in one process and each "
        "whole (default 1: one model after another, each on the suite's xdist "
        "workers, every core, later models running only the tests that read the "
        "model); their timings still run one at a time, each test that times "
        "waiting until no other run's test is running",
    )
    p.add_argument(
        "--sweep",
        metavar="FILE",
        help="render this sweep file (written by `aftertrain sweep`); default: OUT/sweep.json when it exists",
    )
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """:func:`report_main`, a ReportError being the user's mistake (exit status 2)."""
    try:
        return report_main(args)
    except ReportError as err:
        raise UsageError(str(err)) from None


def split_values(values: list[str] | None, flag: str) -> list[str]:
    """The names of a repeatable, comma-separated option (``--models a,b
    --models c``); an empty one (``--models ''``, ``a,,b``) is refused, never
    read as "the default"."""
    out = [v.strip() for arg in values or [] for v in str(arg).split(",")]
    if "" in out:
        raise ReportError(
            f"{flag} {','.join(values)!r} holds an empty name; give "
            f"NAME_OR_PATH[,NAME_OR_PATH...], or leave {flag} out for the default"
        )
    return out


def report_main(args) -> int:
    """``aftertrain report``: see :func:`add_parser`.

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
        ledger, others = run_models(models, checkout, run_dir, args.quick, log, claims_json, jobs)
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
        raise ReportError(
            f"--checkout {args.checkout} is not an aftertrain source tree (needs pyproject.toml and tests/)"
        )
    if args.update_committed:
        if checkout is None:
            raise ReportError("--update-committed needs the source tree to update: give --checkout PATH")
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
        raise ReportError(
            "--quick changes the test run, and --claims-json reads a finished "
            "one (its own metadata says whether it was quick); drop --quick"
        )
    if models:
        raise ReportError(
            "--models runs the tests on those models, and --claims-json reads "
            "finished runs (each ledger names its model); give one of them"
        )
    ledgers = []
    for p in claims_json:
        try:
            ledgers.append(read_ledger(p))
        except ReportError as err:
            raise ReportError(f"--claims-json: {err}") from None
    return labelled(ledgers)


def _check_models(models: list[str], checkout: Path | None) -> list[str]:
    """The models to run (default: the bundled ones), each resolvable, none twice."""
    if checkout is None:
        raise ReportError(
            "no checkout to run the tests in: give --checkout PATH (an aftertrain "
            "source tree) or --claims-json FILE (from `pytest --claims-json FILE`)"
        )
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


def _place_sweep(sweep_arg: str, out: Path) -> None:
    """Copy ``--sweep FILE`` into the output folder, where the report reads it."""
    target = out / SWEEP_FILE
    if Path(sweep_arg).resolve() != target.resolve():
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sweep_arg, target)


def _commit(
    out: Path, run_dir: Path, claims_json: list[str], ledger: LedgerFile, others: dict, checkout: Path
) -> None:
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
        print(
            f"{path}{f' [{label}]' if others else ''}: "
            + tally
            + (f"; pytest exit status {led.pytest_status} (a test failed)" if failed else "")
        )
        if counts.get(V.BROKEN) or failed:
            status = 1
    return status
