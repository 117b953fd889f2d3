#!/usr/bin/env python3
"""Write or check docs/figures.md: every figure the project shows (a claim's
record, the ledger, the report) with the tests that check it independently.

The figures are enumerated from the code by tests/common/figures.py; their
checks are tests/common/figure_checks.py. ``tests/meta/test_figures.py``
fails when the file is stale.

Usage (from the repository root)::

    python tools/figures.py --write    # regenerate docs/figures.md (atomically)
    python tools/figures.py --check    # exit 1 when it is stale or a figure has no check
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from aftertrain.core.io import atomic_write  # noqa: E402
from tests.common import figures as F  # noqa: E402
from tests.common.figure_checks import CHECKS  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="regenerate docs/figures.md")
    mode.add_argument("--check", action="store_true", help="exit 1 when docs/figures.md is stale")
    args = ap.parse_args(argv)
    figures = F.enumerate_figures()
    resolved = F.resolved_placeholders()
    problems = F.inventory_problems(figures, CHECKS, F.collect_test_nodes(), resolved)
    for line in problems:
        print(line, file=sys.stderr)
    text = F.markdown(figures, CHECKS, resolved)
    if args.write:
        atomic_write(F.DOC, text)
        print(f"wrote {F.DOC.relative_to(ROOT)}: {len(figures)} figures")
        return 1 if problems else 0
    stale = not F.DOC.is_file() or F.DOC.read_text() != text
    if stale:
        print(f"{F.DOC.relative_to(ROOT)} is stale: run python tools/figures.py --write", file=sys.stderr)
    return 1 if stale or problems else 0


if __name__ == "__main__":
    sys.exit(main())
