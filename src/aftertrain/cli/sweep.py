"""``aftertrain sweep``: measure the quality sweep's key figures
(:mod:`aftertrain.experiments.sweep`) on checkpoints of one training run and
write ``sweep.json`` (the data), ``sweep.md`` and its plots (rendered by
:mod:`aftertrain.report.sweep`). A model whose claims ledger is given is not
measured again: its figures come from the ledger's tables.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path

from aftertrain.cli.options import UsageError
from aftertrain.cli.progress import heartbeat
from aftertrain.cli.report import check_output_folder, split_values
from aftertrain.core.io import atomic_write
from aftertrain.report.paths import DEFAULT_OUT, SWEEP_FILE
from aftertrain.report.reading import LedgerFile, ReportError, read_ledger

# The sweep's sections and experiments import torch: they load in sweep_main
# after the arguments are checked, so a usage error answers without torch.

#: The checkpoints of the reference run, worst first: steps 250, 950, 1,250, 3,750 (best).
DEFAULT_SWEEP_MODELS = ("sweep-250", "article", "sweep-1250", "reference")


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``sweep`` and its options to ``subparsers``."""
    p = subparsers.add_parser(
        "sweep",
        help="the quality sweep: key figures of Q4-Q7, P1/P2, S4 per checkpoint against validation loss",
        description="Measure the key figures of Q4-Q7, P1/P2 and S4 on checkpoints of one "
        "training run (default: the bundled sweep-250, article, sweep-1250, reference) "
        "and write OUT/sweep.json, OUT/sweep.md and its plots; `aftertrain report` "
        "renders OUT/sweep.json when it exists.",
    )
    p.add_argument(
        "--models",
        action="append",
        metavar="NAME_OR_PATH[,...]",
        help="checkpoints to measure (default: sweep-250,article,sweep-1250,reference)",
    )
    p.add_argument(
        "--claims-json",
        action="append",
        metavar="FILE[,FILE...]",
        help="ledgers whose tables give a model's figures (not measured again)",
    )
    p.add_argument(
        "--reuse",
        action="append",
        metavar="FILE[,FILE...]",
        help="sweep files (written by `aftertrain sweep`) whose points are taken as "
        "they are for the checkpoints of the same SHA-256 (not measured again)",
    )
    p.add_argument("--out", help="output folder (default: build/report, ignored by git)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """:func:`sweep_main`, a ReportError being the user's mistake (exit status 2)."""
    try:
        return sweep_main(args)
    except ReportError as err:
        raise UsageError(str(err)) from None


def sweep_main(args) -> int:
    """Check the arguments, measure (or take from a ledger or an earlier sweep
    file) each checkpoint's point, and write sweep.json, sweep.md and its plots."""
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[sweep {time.perf_counter() - t0:5.0f}s] {msg}", file=sys.stderr, flush=True)

    out = Path(args.out) if args.out else DEFAULT_OUT
    check_output_folder(out)
    names = split_values(args.models, "--models") or list(DEFAULT_SWEEP_MODELS)
    if len(set(names)) != len(names):
        raise ReportError(f"--models names a model twice: {names}")
    claims_json = split_values(args.claims_json, "--claims-json")
    reuse_files = split_values(args.reuse, "--reuse")
    ledgers = _ledgers(claims_json)  # a bad ledger refused before the models load
    from aftertrain.lm import registry as _models
    from aftertrain.report import sweep as sweep_section

    for m in names:
        try:
            _models.resolve(m)
        except ValueError as err:
            raise ReportError(f"--models: {err}") from None
    # Points of an earlier sweep file, by SHA-256: not measured again.
    reuse = {p.sha256: p for f in reuse_files for p in sweep_section.read_sweep(f) if p.complete}
    points = []
    # a measurement runs minutes without a line of its own: a line at least every 5 s
    with heartbeat("sweep", f"loading {names[0]}") as at:

        def say(msg: str) -> None:
            log(msg)
            at(msg, written=True)

        for i, m in enumerate(names):
            at(f"model {i + 1} of {len(names)}: loading {m}")
            net, ident = _models.load_model(m)
            label = m if ident.bundled else Path(m).stem
            if ident.sha256 in reuse:
                say(f"model {i + 1} of {len(names)}: {label}: reused from --reuse")
                points.append(replace(reuse[ident.sha256], model=label))
                continue
            # A ledger of this very checkpoint; one without metadata by its model's name
            # (ledgers from before --aftertrain-model: the reference's).
            led = ledgers.get(ident.sha256) or ledgers.get(label)
            points.append(_point(m, label, net, ident.sha256, led, f"model {i + 1} of {len(names)}", say))
        at("writing sweep.json, sweep.md and its plots")
        path = _write(out, points, getattr(args, "argv", []))
    losses = ", ".join(f"{p.model} {p.val_loss:.4f}" for p in points)
    print(f"{out / SWEEP_FILE}, {path}: {len(points)} checkpoints ({losses})")
    return 0


def _point(m: str, label: str, net, sha256: str, led: LedgerFile | None, at: str, log):
    """The sweep point of the model ``m`` (loaded as ``net``), named
    ``label``: its key figures from ``led`` (a ledger of it) when that
    holds them, else measured; its fragility and speculative figures
    measured. ``at`` starts its first progress line."""
    from aftertrain.experiments import sweep as ESW
    from aftertrain.lm import registry as _models

    fig = ESW.figures_from_tables(led) if led is not None else None
    if fig is not None:
        log(f"{at}: {label}: figures from {led.source}")
        source = f"ledger {Path(led.source).name}"
    else:
        log(f"{at}: {label}: measuring (bits, sensitivity, pruning, acceptance)")
        fig = ESW.key_figures(net)
        source = "measured"
    log(f"model {label}: fragility and the speculative figures (acceptance, no timing)")
    meta = _models.model_meta(m)
    point = ESW.sweep_point(
        label,
        fig,
        source,
        sha256=sha256,
        training=ESW.Training.of(meta),
        fragility=ESW.fragility(net, fig.q7),
        speculative=ESW.speculative_figures(net),
    )
    log(f"model {label}: validation loss {fig.val_loss:.4f}")
    return point


def _ledgers(claims_json: list[str]) -> dict[str, LedgerFile]:
    """The ledgers of ``--claims-json`` by their checkpoint's SHA-256, else by
    their model's label (a ledger without metadata)."""
    from aftertrain.report.multimodel import model_label

    ledgers = {}
    for p in claims_json:
        led = read_ledger(p)
        ledgers[str(led.meta.get("model_sha256") or model_label(led))] = led
    return ledgers


def _write(out: Path, points: list, argv: list[str]) -> Path:
    """Write sweep.json, then sweep.md and its plots rendered from it (the
    file as the report reads it); the path of sweep.md."""
    from aftertrain.report import sweep as sweep_section
    from aftertrain.report.document import Document

    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / SWEEP_FILE, sweep_section.sweep_json(points))
    doc = Document(LedgerFile((), source=str(out / SWEEP_FILE)))
    doc.add(f"# {sweep_section.TITLE}")
    doc.add("Written by `aftertrain sweep " + " ".join(shlex.quote(a) for a in argv) + "`.")
    sweep_section.section(doc, sweep_section.read_sweep(out / SWEEP_FILE))
    for plot in doc.plots.values():
        atomic_write(out / f"{plot.name}.png", plot.png)
    return atomic_write(out / "sweep.md", doc.markdown())
