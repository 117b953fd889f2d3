"""The run's metadata: when, where and on what a run of the claims' tests
was measured. One function for the ledger (which records it in its JSON)
and the report (which describes the machine it renders on when a ledger
carries none). Imports neither torch nor pytest.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import subprocess
import sys
from pathlib import Path

#: The keys of :func:`collect`, in the order the report's header shows them.
KEYS = ("date", "commit", "cpu", "torch", "threads", "load1", "model", "model_sha256", "quick")


def collect(root: Path | None, *, model: str | None, model_sha256: str | None, quick: bool) -> dict:
    """This machine's metadata now, one value per :data:`KEYS`; None where a
    value is not known (never a spelling of "unknown").

    ``commit`` is the full hash of ``root``'s checkout, with `` with
    uncommitted changes`` when tracked files differ from it; ``cpu`` is the
    CPU's model name and core count (``"<model> x <cores>"``); ``torch`` the
    version of the torch this process imported (``torch.__version__``, which
    names the build: ``+cpu``, ``+cu130``; a CUDA wheel's package metadata
    says only ``2.13.0``), else the installed package's; ``threads`` torch's thread count when this process
    imported torch; ``load1`` the 1-minute load average, to 2 decimals."""
    torch = sys.modules.get("torch")  # only if the process imported it: this module does not
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit(root),
        "cpu": f"{cpu_model()} x {os.cpu_count()}",
        "torch": torch.__version__ if torch is not None else _version("torch"),
        "threads": torch.get_num_threads() if torch is not None else None,
        "load1": None if load is None else round(load, 2),
        "model": model,
        "model_sha256": model_sha256,
        "quick": quick,
    }


def _git(root: Path | None, *args: str) -> bytes | None:
    """``git ARGS`` run in ``root``: its standard output, or None when
    ``root`` is None, git is missing or the command fails."""
    if root is None:
        return None
    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def commit(root: Path | None) -> str | None:
    """The full commit hash of the checkout at ``root`` (`` with uncommitted
    changes`` appended when tracked files differ), or None when ``root`` is
    not a git checkout or git is missing."""
    head = (_git(root, "rev-parse", "HEAD") or b"").strip()
    if not head:
        return None
    dirty = (_git(root, "status", "--porcelain", "--untracked-files=no") or b"").strip()
    return head.decode() + (" with uncommitted changes" if dirty else "")


def worktree(root: Path | None) -> str | None:
    """A fingerprint of the tracked code at ``root``: the SHA-256 of the
    commit and of the uncommitted changes to tracked files (``git diff
    HEAD``), so two runs of one commit with different edits differ where
    :func:`commit` says "with uncommitted changes" for both. Untracked files
    are not in it (a run's own output may be one). None when ``root`` is not
    a git checkout with a commit, or git is missing."""
    import hashlib

    head = (_git(root, "rev-parse", "HEAD") or b"").strip()
    diff = _git(root, "diff", "HEAD", "--binary") if head else None
    if diff is None:
        return None
    return hashlib.sha256(head + b"\n" + diff).hexdigest()


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``, else the platform's word)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None
