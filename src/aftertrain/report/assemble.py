"""Writing the report: report.md and its plots (rendered by :mod:`.render`),
the README's claims table; ``aftertrain report``."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from aftertrain import verdicts as V
from aftertrain.io import atomic_write
from aftertrain.report import meta
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


def build(ledger: Ledger, out: str | os.PathLike, checkout: Path | None = None,
          log: Callable[[str], None] = lambda s: None) -> Path:
    """Write ``report.md`` and its plots into ``out`` (each file atomically);
    returns the report's path."""
    out = Path(out)
    check_output_folder(out)
    out.mkdir(parents=True, exist_ok=True)
    doc = render(ledger, checkout, log)
    for plot in doc.plots.values():
        atomic_write(out / f"{plot.name}.png", plot.png)
    return atomic_write(out / "report.md", doc.markdown())


def update_readme(readme: Path, ledger: Ledger) -> None:
    """Replace the claims table between the README's markers with this
    ledger's (atomically); the markers must be there."""
    if not Path(readme).is_file():
        raise ValueError(f"readme must be an existing file, got {str(readme)!r}")
    text = readme.read_text()
    if README_BEGIN not in text or README_END not in text:
        raise ReportError(f"{readme} has no claims-table markers ({README_BEGIN!r} ... {README_END!r})")
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    atomic_write(readme, head + README_BEGIN + "\n" + claims_table(ledger) + "\n" + README_END + tail)


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
        out = Path(args.out) if args.out else DEFAULT_OUT
    check_output_folder(out)  # before any long work
    if args.claims_json:
        if args.quick:
            raise ReportError("--quick changes the test run, and --claims-json reads a finished "
                              "one (its own metadata says whether it was quick); drop --quick")
        try:
            ledger = read_ledger(args.claims_json)
        except ReportError as err:
            raise ReportError(f"--claims-json: {err}") from None
        log(f"read the claims ledger {args.claims_json}")
    else:
        if checkout is None:
            raise ReportError("no checkout to run the tests in: give --checkout PATH (an aftertrain "
                              "source tree) or --claims-json FILE (from `pytest --claims-json FILE`)")
        out.mkdir(parents=True, exist_ok=True)
        started = meta.collect(checkout)
        ledger = run_ledger(checkout, (out / "claims.json").resolve(), args.quick, log, started)
    path = build(ledger, out, checkout, log)
    if args.update_committed:
        target = out / "claims.json"
        if args.claims_json and Path(args.claims_json).resolve() != target.resolve():
            shutil.copyfile(args.claims_json, target)
        update_readme(checkout / "README.md", ledger)
        log(f"updated the committed report {out} and the claims table of {checkout / 'README.md'}")
    counts = summary_counts(ledger)
    log(f"wrote {path} and {len(list(out.glob('*.png')))} plots")
    print(f"{path}: " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items())))
    return 1 if counts.get(V.BROKEN) else 0
