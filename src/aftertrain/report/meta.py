"""The run's metadata: the report's header says when, where and on what the
claims were measured (date, commit, CPU, torch, threads, load, model).

From the ledger's ``"meta"`` when it has one; otherwise taken by
``aftertrain report`` when it starts the run itself, or (a ledger from
elsewhere without metadata) taken at render time and labelled so.
"""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from aftertrain.report.ledgerfile import META_FROM_LEDGER, META_FROM_REPORT_RUN, Ledger

BEGIN = "<!-- run metadata -->"
END = "<!-- end of run metadata -->"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def git_commit(checkout: Path | None) -> str:
    if checkout is None:
        return "unknown"
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=checkout,
                              capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=checkout, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if head.returncode != 0:
        return "unknown (not a git checkout)"
    return head.stdout.strip() + (" with uncommitted changes" if dirty.stdout.strip() else "")


def collect(checkout: Path | None) -> dict:
    """The metadata of this machine now (the keys of the ledger's ``meta``)."""
    import torch

    from aftertrain.lm import checkpoint as _checkpoint

    try:
        sha = _checkpoint.reference_meta().get("sha256", "unknown")
    except (OSError, ValueError):
        sha = "unknown"
    return {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "commit": git_commit(checkout), "cpu": cpu_model(), "torch": torch.__version__,
            "threads": torch.get_num_threads(), "load1": round(os.getloadavg()[0], 2),
            "model": "reference", "model_sha256": sha}


def header(ledger: Ledger, checkout: Path | None) -> str:
    """The metadata block of the report, between :data:`BEGIN` and :data:`END`."""
    if ledger.meta_source == META_FROM_LEDGER:
        meta, source = ledger.meta, "recorded in the ledger by the test run"
    elif ledger.meta_source == META_FROM_REPORT_RUN:
        meta, source = ledger.meta, "taken by `aftertrain report` as it started the test run"
    else:
        meta = collect(checkout)
        source = ("**taken at render time**: the ledger carries no run metadata, so these "
                  "describe the machine that rendered this report, not necessarily the run")
    quick = meta.get("quick")
    kind = {True: "quick run", False: "full run"}.get(quick, "run kind not recorded")
    sha = str(meta.get("model_sha256", "unknown"))[:16]
    load = meta.get("load1")
    fields = [
        f"date {meta.get('date', 'unknown')}", f"commit {meta.get('commit', 'unknown')}",
        f"CPU {meta.get('cpu', 'unknown')}", f"torch {meta.get('torch', 'unknown')}",
        f"{meta.get('threads', '?')} torch thread(s)",
        f"load {load if load is not None else 'unknown'} (1-minute average)",
        f"model {meta.get('model', 'unknown')} (sha256 {sha}…)", kind,
    ]
    return f"{BEGIN}\n**Run**: " + " · ".join(fields) + f" ({source}).\n{END}"


def strip_header(markdown: str) -> str:
    """``markdown`` without its metadata block (what varies between renders of
    one ledger without metadata)."""
    if BEGIN not in markdown or END not in markdown:
        return markdown
    head, rest = markdown.split(BEGIN, 1)
    return head + rest.split(END, 1)[1]
