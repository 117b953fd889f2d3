"""Checks of the path options of aftertrain's pytest plugins, made before
any test runs (torch-free, like the ledger)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest


def path_option_problem(
    early_config: pytest.Config, args: list[str], flag: str, value: str | None
) -> str | None:
    """Why pytest's rootdir was taken from the value of ``flag VALUE`` (space
    form), or None.

    pytest picks its rootdir and configuration from the command line's paths
    before a plugin's options are known, so an existing path given as
    ``flag VALUE`` counts as a test path then. The signs that it decided the
    rootdir and lost a configuration: no configuration file was found,
    although the folder pytest was started in (or one above it) has one, and
    the rootdir is the value's folder or one above it.
    """
    if value is None or early_config.inipath is not None or flag not in args:
        return None
    config = project_config(early_config.invocation_params.dir)
    if config is None:
        return None
    path = Path(value).resolve()
    if not path.exists():
        return None
    where = path if path.is_dir() else path.parent
    root = early_config.rootpath
    if where == early_config.invocation_params.dir or not (root == where or root in where.parents):
        return None
    return (
        f"{flag} {value}: pytest took the path for a test path before aftertrain's options "
        f"were known and rooted itself in {root}, without {config}; "
        f"write {flag}={value}, or name the tests too (python -m pytest tests {flag} {value})"
    )


def project_config(start: Path) -> Path | None:
    """The first pytest configuration file in ``start`` or a folder above it
    (``pytest.ini``, ``.pytest.ini``, ``tox.ini``, ``setup.cfg`` or a
    ``pyproject.toml`` with a ``[tool.pytest`` table), or None."""
    for folder in (start, *start.parents):
        for name in ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"):
            path = folder / name
            try:
                text = path.read_text(errors="replace") if path.is_file() else None
            except OSError:
                continue
            if text is None:
                continue
            if name == "pyproject.toml" and "[tool.pytest" not in text:
                continue
            if name in ("tox.ini", "setup.cfg") and "[pytest]" not in text and "[tool:pytest]" not in text:
                continue
            return path
    return None


def output_file_problem(flag: str, value: str) -> str | None:
    """Why ``value`` cannot take the file ``flag`` writes at the end of the
    run (a folder, an empty path, a parent that is a file or cannot be
    created or written), or None."""
    if not value:
        return f"{flag} must be a file path, got {value!r}"
    path = Path(value)
    if path.is_dir():
        return f"{flag} {value} is a folder; give a file path (e.g. {Path(value) / 'claims.json'})"
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        return f"{flag} {value}: {parent} is a file, so the file cannot be written"
    try:  # os.access says yes to root everywhere: try it
        os.rmdir(tempfile.mkdtemp(prefix=".aftertrain-", dir=parent))
    except OSError as err:
        return f"{flag} {value}: cannot write in {parent} ({err.strerror})"
    return None
