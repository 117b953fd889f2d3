"""What the commands share: the usage error, the one-line parser, and the
argument types, each naming what is allowed. Imports neither torch nor the
report, so a usage error answers at once (tests/cli/test_cli_imports.py).
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path

#: ``--seed`` at most (``train`` and ``sample``): a 63-bit seed.
MAX_SEED = 2**63 - 1


class UsageError(Exception):
    """A user's mistake found by the command line itself."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a mistake is one line (no usage block) and exit status 2."""

    def error(self, message: str):
        """Exit with status 2 and one line: the mistake and where help is."""
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def int_in(low: int, high: int, *, grouped: bool = False) -> Callable[[str], int]:
    """An argparse type: a whole number (base 10) from ``low`` to ``high``, both
    included; ``grouped``: the messages write ``high`` with thousands
    separators (``check``'s style: 200,000)."""
    top = f"{high:,}" if grouped else f"{high}"

    def parse(s: str) -> int:
        try:
            v = int(s, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a whole number from {low} to {top}, got {s!r}"
            ) from None
        if not low <= v <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {top}, got {v}")
        return v

    parse.__name__ = "whole number"
    return parse


def temperature(s: str) -> float:
    """An argparse type: a sampling temperature, finite and >= 0 (0 = greedy)."""
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0 (0 = greedy), got {s!r}") from None
    if not (v >= 0 and v != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0 (0 = greedy), got {s}")
    return v


def _finite(s: str, what: str, ok: Callable[[float], bool]) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {s!r}") from None
    if not (math.isfinite(v) and ok(v)):
        raise argparse.ArgumentTypeError(f"must be {what}, got {s}")
    return v


def positive(s: str) -> float:
    """An argparse type: a finite number > 0."""
    return _finite(s, "a finite number > 0", lambda v: v > 0)


def non_negative(s: str) -> float:
    """An argparse type: a finite number >= 0."""
    return _finite(s, "a finite number >= 0", lambda v: v >= 0)


def dropout(s: str) -> float:
    """An argparse type: a dropout probability, 0 <= p < 1."""
    return _finite(s, "a number from 0 to below 1", lambda v: 0 <= v < 1)


def check_new_file(path: str, flag: str) -> Path:
    """A file the command will write: not a folder, its folder writable."""
    p = Path(path)
    if path == "" or p.is_dir() or path.endswith(("/", os.sep)):
        raise UsageError(f"{flag} {path!r} is a folder or empty; give a file name, e.g. model.pt")
    parent = p.parent
    if not parent.exists():
        raise UsageError(f"{flag} {path}: folder {parent} does not exist")
    if not parent.is_dir():
        raise UsageError(f"{flag} {path}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: folder {parent} is not writable")
    if p.exists() and not os.access(p, os.W_OK):
        raise UsageError(f"{flag} {path}: the file exists and is not writable")
    return p
