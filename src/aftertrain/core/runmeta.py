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


def collect(root: Path | None, *, model: str | None, model_sha256: str | None,
            quick: bool) -> dict:
    """This machine's metadata now, one value per :data:`KEYS`; None where a
    value is not known (never a spelling of "unknown").

    ``commit`` is the full hash of ``root``'s checkout, with `` with
    uncommitted changes`` when tracked files differ from it; ``cpu`` is the
    CPU's model name and core count (``"<model> x <cores>"``); ``torch`` the
    installed version; ``threads`` torch's thread count when this process
    imported torch; ``load1`` the 1-minute load average, to 2 decimals."""
    torch = sys.modules.get("torch")  # only if the process imported it: this module does not
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit(root),
        "cpu": f"{cpu_model()} x {os.cpu_count()}",
        "torch": _version("torch"),
        "threads": torch.get_num_threads() if torch is not None else None,
        "load1": None if load is None else round(load, 2),
        "model": model,
        "model_sha256": model_sha256,
        "quick": quick,
    }


def commit(root: Path | None) -> str | None:
    """The full commit hash of the checkout at ``root`` (`` with uncommitted
    changes`` appended when tracked files differ), or None when ``root`` is
    not a git checkout or git is missing."""
    if root is None:
        return None
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0 or not head.stdout.strip():
        return None
    return head.stdout.strip() + (" with uncommitted changes" if dirty.stdout.strip() else "")


def worktree(root: Path | None) -> str | None:
    """A fingerprint of the tracked code at ``root``: the SHA-256 of the
    commit and of the uncommitted changes to tracked files (``git diff
    HEAD``), so two runs of one commit with different edits differ where
    :func:`commit` says "with uncommitted changes" for both. Untracked files
    are not in it (a run's own output may be one). None when ``root`` is not
    a git checkout with a commit, or git is missing."""
    import hashlib

    if root is None:
        return None
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                              timeout=10)
        diff = subprocess.run(["git", "diff", "HEAD", "--binary"], cwd=root, capture_output=True,
                              timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0 or diff.returncode != 0 or not head.stdout.strip():
        return None
    return hashlib.sha256(head.stdout.strip() + b"\n" + diff.stdout).hexdigest()


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
