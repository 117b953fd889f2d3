"""``aftertrain sweep``: measure the quality sweep's key figures
(:mod:`aftertrain.experiments.sweep`) on checkpoints of one training run and
write ``sweep.json`` (the data), ``sweep.md`` and its plots (rendered by
:mod:`aftertrain.report.sweep`). A model whose claims ledger is given is not
measured again: its figures come from the ledger's tables.
"""

from __future__ import annotations

import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path

from aftertrain.cli.report import check_output_folder, split_values
from aftertrain.core.io import atomic_write
from aftertrain.report.ledgerfile import LedgerFile, ReportError, read_ledger
from aftertrain.report.paths import DEFAULT_OUT, SWEEP_FILE

# The sweep's sections and experiments import torch: they load in sweep_main
# after the arguments are checked (issue 36).

#: The checkpoints of the reference run, worst first: steps 250, 950, 1,250, 3,750 (best).
DEFAULT_SWEEP_MODELS = ("sweep-250", "article", "sweep-1250", "reference")




def sweep_main(args) -> int:
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
    from aftertrain.experiments import sweep as ESW
    from aftertrain.lm import registry as _models
    from aftertrain.report import sweep as sweep_section
    from aftertrain.report.document import Document
    from aftertrain.report.multimodel import model_label

    for m in names:
        try:
            _models.resolve(m)
        except ValueError as err:
            raise ReportError(f"--models: {err}") from None
    ledgers: dict[str, LedgerFile] = {}  # by the checkpoint's SHA-256, else by model label
    for p in claims_json:
        led = read_ledger(p)
        ledgers[str(led.meta.get("model_sha256") or model_label(led))] = led
    # Points of an earlier sweep file, by SHA-256: not measured again.
    reuse = {p.sha256: p for f in reuse_files for p in sweep_section.read_sweep(f) if p.complete}
    points = []
    for i, m in enumerate(names):
        net, ident = _models.load_model(m)
        label = m if ident.bundled else Path(m).stem
        if ident.sha256 in reuse:
            log(f"model {i + 1} of {len(names)}: {label}: reused from --reuse")
            points.append(replace(reuse[ident.sha256], model=label))
            continue
        # A ledger of this very checkpoint; one without metadata by its model's name
        # (ledgers from before --aftertrain-model: the reference's).
        led = ledgers.get(ident.sha256) or ledgers.get(label)
        fig = ESW.figures_from_tables(led) if led is not None else None
        if fig is not None:
            log(f"model {i + 1} of {len(names)}: {label}: figures from {led.source}")
            source = f"ledger {Path(led.source).name}"
        else:
            log(f"model {i + 1} of {len(names)}: {label}: measuring (bits, sensitivity, "
                "pruning, acceptance)")
            fig = ESW.key_figures(net)
            source = "measured"
        log(f"model {label}: fragility and the speculative figures (acceptance, no timing)")
        meta = _models.model_meta(m)
        points.append(ESW.sweep_point(
            label, fig, source, sha256=ident.sha256, training=ESW.Training.of(meta),
            fragility=ESW.fragility(net, fig.q7), speculative=ESW.speculative_figures(net)))
        log(f"model {label}: validation loss {fig.val_loss:.4f}")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / SWEEP_FILE, sweep_section.sweep_json(points))
    doc = Document(LedgerFile((), source=str(out / SWEEP_FILE)))
    doc.add(f"# {sweep_section.TITLE}")
    doc.add("Written by `aftertrain sweep "
            + " ".join(shlex.quote(a) for a in getattr(args, "argv", [])) + "`.")
    sweep_section.section(doc, sweep_section.read_sweep(out / SWEEP_FILE))
    for plot in doc.plots.values():
        atomic_write(out / f"{plot.name}.png", plot.png)
    path = atomic_write(out / "sweep.md", doc.markdown())
    losses = ", ".join(f"{p.model} {p.val_loss:.4f}" for p in points)
    print(f"{out / SWEEP_FILE}, {path}: {len(points)} checkpoints ({losses})")
    return 0

