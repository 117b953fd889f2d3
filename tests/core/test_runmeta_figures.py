"""The run metadata the ledger records and the report's header shows,
each value against a second source: the commit against ``git rev-parse`` in
a repository made here (and marked when a tracked file changes), the load
against a patched ``os.getloadavg`` (rounded to 2 decimals), the thread count
against torch, the CPU against /proc/cpuinfo's first model name and
``os.cpu_count``, torch's version against ``torch.__version__``, the date
against the clock around the call."""

from __future__ import annotations

import datetime
import os
import subprocess
from pathlib import Path

import torch

from aftertrain.core import runmeta
from tests.common.inner_runs import commit_all, git


def test_commit_is_git_head_and_says_when_a_tracked_file_changed(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("one\n")
    head = commit_all(tmp_path)
    assert runmeta.collect(tmp_path, model=None, model_sha256=None, quick=False)["commit"] == head
    (tmp_path / "untracked.txt").write_text("not tracked\n")
    assert runmeta.commit(tmp_path) == head
    (tmp_path / "a.txt").write_text("two\n")
    assert runmeta.commit(tmp_path) == f"{head} with uncommitted changes"
    assert runmeta.commit(None) is None


def test_worktree_fingerprints_the_commit_and_the_tracked_edits(tmp_path):
    """Against hashlib over ``git rev-parse HEAD`` and ``git diff HEAD``: the
    same edit gives the same fingerprint, another edit another one, an
    untracked file none; outside a checkout, None."""
    import hashlib

    assert runmeta.worktree(tmp_path) is None and runmeta.worktree(None) is None
    git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("one\n")
    git(tmp_path, "add", "a.txt")
    assert runmeta.worktree(tmp_path) is None  # no commit yet
    head = commit_all(tmp_path)
    clean = runmeta.worktree(tmp_path)
    assert clean == hashlib.sha256(head.encode() + b"\n").hexdigest()
    (tmp_path / "untracked.txt").write_text("not tracked\n")
    assert runmeta.worktree(tmp_path) == clean
    (tmp_path / "a.txt").write_text("two\n")
    two = runmeta.worktree(tmp_path)
    diff = subprocess.run(
        ["git", "diff", "HEAD", "--binary"], cwd=tmp_path, capture_output=True, check=True
    ).stdout
    assert two == hashlib.sha256(head.encode() + b"\n" + diff).hexdigest() != clean
    (tmp_path / "a.txt").write_text("three\n")
    assert runmeta.worktree(tmp_path) not in (clean, two)
    assert runmeta.commit(tmp_path) == f"{head} with uncommitted changes"  # the same for both


def test_load_threads_cpu_torch_date_model_and_quick(monkeypatch):
    # the 5- and 15-minute averages differ from the 1-minute one, so taking the wrong one shows
    monkeypatch.setattr(os, "getloadavg", lambda: (1.23456, 9.0, 9.0))
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    meta = runmeta.collect(None, model="m", model_sha256="abc", quick=True)
    after = datetime.datetime.now(datetime.timezone.utc)
    assert list(meta) == list(runmeta.KEYS)
    assert meta["load1"] == 1.23
    assert meta["threads"] == torch.get_num_threads()
    assert meta["torch"] == torch.__version__
    assert before <= datetime.datetime.fromisoformat(meta["date"]) <= after
    assert (meta["model"], meta["model_sha256"], meta["quick"]) == ("m", "abc", True)
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        names = [
            line.split(":", 1)[1].strip()
            for line in cpuinfo.read_text().splitlines()
            if line.lower().startswith("model name")
        ]
        if names:
            assert meta["cpu"] == f"{names[0]} x {os.cpu_count()}"
    assert meta["cpu"].endswith(f" x {os.cpu_count()}")


def test_torch_is_the_imported_builds_version_with_its_local_tag(monkeypatch):
    """A CUDA wheel from the package index installs as version ``2.13.0`` in
    its metadata while ``torch.__version__`` says ``2.13.0+cu130``: the run
    records the imported torch's own string (the build matters for a figure),
    and the package's metadata only when the process has not imported torch."""
    import importlib.metadata
    import sys

    monkeypatch.setattr(torch, "__version__", "2.13.0+cu130")
    assert runmeta.collect(None, model=None, model_sha256=None, quick=False)["torch"] == "2.13.0+cu130"
    monkeypatch.delitem(sys.modules, "torch")
    meta = runmeta.collect(None, model=None, model_sha256=None, quick=False)
    assert meta["torch"] == importlib.metadata.version("torch")
    assert meta["threads"] is None
