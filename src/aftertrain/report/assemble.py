"""Writing the report: report.md and its plots (rendered by :mod:`.render`),
the README's claims table; ``aftertrain report``."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from aftertrain import verdicts as V
from aftertrain.io import atomic_write
from aftertrain.report import meta, multimodel
from aftertrain.report import sweep as sweep_section
from aftertrain.report.document import claims_table
from aftertrain.report.ledgerfile import (
    Ledger,
    ReportError,
    check_output_folder,
    default_checkout,
    is_checkout,
    read_ledger,
    run_ledger,
)
from aftertrain.report.render import render, summary_counts

README_BEGIN = "<!-- claims table: written by `aftertrain report --update-committed` -->"
README_END = "<!-- end of claims table -->"
#: Where ``aftertrain report`` writes unless told otherwise: ignored by git.
DEFAULT_OUT = Path("build") / "report"
#: The committed report, inside the checkout (``--update-committed``).
COMMITTED = "report"
#: The models ``aftertrain report`` runs the suite on unless ``--models`` says otherwise:
#: the first is the primary one (its sections, its README verdicts first).
DEFAULT_MODELS = ("reference", "article")
#: The primary model's ledger in the output folder; every other model's is claims-<label>.json.
PRIMARY_LEDGER = "claims.json"
#: The sweep file ``aftertrain sweep`` writes and the report renders when present.
SWEEP_FILE = "sweep.json"


def ledger_file(label: str, primary: bool) -> str:
    """The file name of a model's ledger in a report folder."""
    return PRIMARY_LEDGER if primary else f"claims-{label}.json"


def read_report_ledgers(folder: str | os.PathLike) -> tuple[Ledger, dict[str, Ledger]]:
    """The primary ledger of a report folder and the other models' (by label),
    as :func:`main` writes them (``claims.json``, ``claims-<label>.json``)."""
    folder = Path(folder)
    primary = read_ledger(folder / PRIMARY_LEDGER)
    others = {}
    for path in sorted(folder.glob("claims-*.json")):
        led = read_ledger(path)
        others[multimodel.model_label(led)] = led
    return primary, others


def read_report_sweep(folder: str | os.PathLike) -> list[dict] | None:
    """The sweep points of a report folder, or None when it has no sweep file."""
    path = Path(folder) / SWEEP_FILE
    return sweep_section.read_sweep(path) if path.is_file() else None


def build(ledger: Ledger, out: str | os.PathLike, checkout: Path | None = None,
          log: Callable[[str], None] = lambda s: None,
          others: dict[str, Ledger] | None = None, sweep: list[dict] | None = None) -> Path:
    """Write ``report.md`` and its plots into ``out`` (each file atomically);
    returns the report's path. ``others`` and ``sweep``: see :func:`render`."""
    out = Path(out)
    check_output_folder(out)
    out.mkdir(parents=True, exist_ok=True)
    doc = render(ledger, checkout, log, others, sweep)
    for plot in doc.plots.values():
        atomic_write(out / f"{plot.name}.png", plot.png)
    return atomic_write(out / "report.md", doc.markdown())


def update_readme(readme: Path, ledger: Ledger, others: dict[str, Ledger] | None = None) -> None:
    """Replace the claims table between the README's markers with this
    ledger's (atomically; a verdict column per model with ``others``); the
    markers must be there."""
    if not Path(readme).is_file():
        raise ValueError(f"readme must be an existing file, got {str(readme)!r}")
    text = readme.read_text()
    if README_BEGIN not in text or README_END not in text:
        raise ReportError(f"{readme} has no claims-table markers ({README_BEGIN!r} ... {README_END!r})")
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    atomic_write(readme, head + README_BEGIN + "\n" + readme_table(ledger, others) + "\n" + README_END + tail)


def readme_table(ledger: Ledger, others: dict[str, Ledger] | None = None) -> str:
    """The README's claims table: one verdict column per model with ``others``."""
    if not others:
        return claims_table(ledger)
    return multimodel.claims_table({multimodel.model_label(ledger): ledger, **others})


def _split(values: list[str] | None) -> list[str]:
    return [v.strip() for arg in values or [] for v in str(arg).split(",") if v.strip()]


def _labelled(ledgers: list[Ledger]) -> tuple[Ledger, dict[str, Ledger]]:
    labels = [multimodel.model_label(led) for led in ledgers]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise ReportError(f"two ledgers are of the same model {dup}: give each model once")
    return ledgers[0], dict(zip(labels[1:], ledgers[1:], strict=True))


def main(args) -> int:
    """``aftertrain report``: see :func:`aftertrain.cli.build_parser`."""
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[report {time.perf_counter() - t0:5.0f}s] {msg}", file=sys.stderr, flush=True)

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
    run_dir = out  # where a run writes its ledger (see below)
    claims_json = _split(getattr(args, "claims_json", None))
    models = _split(getattr(args, "models", None))
    sweep_arg = getattr(args, "sweep", None)
    if sweep_arg:
        sweep = sweep_section.read_sweep(sweep_arg)  # a bad file is refused before any run
    if claims_json:
        if args.quick:
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
        ledger, others = _labelled(ledgers)
        log(f"read the claims ledger{'s' if others else ''} {', '.join(claims_json)}")
    else:
        if checkout is None:
            raise ReportError("no checkout to run the tests in: give --checkout PATH (an aftertrain "
                              "source tree) or --claims-json FILE (from `pytest --claims-json FILE`)")
        models = models or list(DEFAULT_MODELS)
        from aftertrain import models as _models

        for m in models:  # a bad name, path or architecture is refused before any run
            try:
                _models.load_model(m)
            except (ValueError, _models.CheckpointError) as err:
                raise ReportError(f"--models: {err}") from None
        if len(set(models)) != len(models):
            raise ReportError(f"--models names a model twice: {models}")
        out.mkdir(parents=True, exist_ok=True)
        # With --update-committed the runs' ledgers wait outside report/ until
        # every model has run: a later model's suite checks the committed
        # report against its committed ledger, which must not change under it.
        run_dir = Path(tempfile.mkdtemp(prefix="aftertrain-runs-")) if args.update_committed else out
        ran = []
        for i, m in enumerate(models):
            label = Path(m).stem if m not in _models.BUNDLED else m
            log(f"model {i + 1} of {len(models)}: {m} (the claims' tests with --aftertrain-model {m})")
            started = meta.collect(checkout, m)
            run_path = (run_dir / ledger_file(label, i == 0)).resolve()
            claims_json.append(str(run_path))
            ran.append(run_ledger(checkout, run_path, args.quick, log, started, model=m))
            log(f"model {m}: pytest exit status {ran[-1].pytest_status}")
        ledger, others = _labelled(ran)
    if sweep_arg:
        target = out / SWEEP_FILE
        if Path(sweep_arg).resolve() != target.resolve():
            out.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(sweep_arg, target)
    else:
        sweep = read_report_sweep(out)
        if sweep:
            log(f"rendering the sweep file {out / SWEEP_FILE}")
    path = build(ledger, out, checkout, log, others, sweep)
    if args.update_committed:
        for n, (src, led) in enumerate(zip(claims_json, [ledger, *others.values()], strict=False)):
            target = out / ledger_file(multimodel.model_label(led), n == 0)
            if Path(src).resolve() != target.resolve():
                atomic_write(target, Path(src).read_bytes())
        if run_dir is not out:  # the runs' ledgers are in report/ now
            shutil.rmtree(run_dir, ignore_errors=True)
        update_readme(checkout / "README.md", ledger, others)
        log(f"updated the committed report {out} and the claims table of {checkout / 'README.md'}")
    all_ledgers = {multimodel.model_label(ledger): ledger, **others}
    log(f"wrote {path} and {len(list(out.glob('*.png')))} plots")
    status = 0
    for label, led in all_ledgers.items():
        counts = summary_counts(led)
        failed = led.pytest_status not in (None, 0)
        tally = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
        print(f"{path}{f' [{label}]' if others else ''}: " + tally
              + (f"; pytest exit status {led.pytest_status} (a test failed)" if failed else ""))
        if counts.get(V.BROKEN) or failed:
            status = 1
    return status
