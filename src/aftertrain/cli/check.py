"""``aftertrain check rule MODULE:FUNC``: the speculative checks on a user's
rule from the command line. Exit status 0 when every check passed, 1 when
one failed (one line per failure), 2 on a usage error (one line)."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import json
import sys
from pathlib import Path

import torch

#: --dtype's choices: the precisions the kit hands p and q in.
DTYPES = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16,
          "float16": torch.float16}


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``check`` (with its ``rule`` subcommand) to ``subparsers``."""
    p = subparsers.add_parser(
        "check", help="run aftertrain's conformance checks on your own implementation",
        description="Run aftertrain.checks on an implementation of yours.")
    sub = p.add_subparsers(dest="check_kind", required=True, metavar="{rule}",
                           parser_class=type(p))
    r = sub.add_parser(
        "rule", help="a speculative sampler's verification rule",
        description="Judge a verification rule (docs/checks.md, 'The rule protocol'): "
                    "check_rule's statistical battery, and with --exact check_rule_exact's "
                    "forced-uniform probes. Exit 0 passed, 1 failed, 2 usage error.")
    r.add_argument("target", metavar="MODULE:FUNC",
                   help="the rule: an importable module (the current folder is searched first) "
                        "or a .py file, and the function's name")
    r.add_argument("--exact", action="store_true",
                   help="FUNC takes its uniforms, rule(p, q, drafts, u, v): run the exact "
                        "probes too")
    r.add_argument("--sequential", action="store_true",
                   help="FUNC handles one round per call: p (k+1, V), q (k, V), drafts (k,)")
    r.add_argument("--dtype", choices=list(DTYPES), default="float64",
                   help="the precision p and q are handed in (default float64)")
    r.add_argument("--n", type=_rounds, default=None,
                   help="rounds per case (default 20000; fewer lose power: the chi-square "
                        "detects a TV bias of about 0.025 * sqrt(20000 / N))")
    r.add_argument("--seed", type=_rounds, default=0, help="seed of the cases and draws (default 0)")
    r.add_argument("--json", action="store_true", help="print the reports as JSON")
    r.add_argument("--quiet", action="store_true", help="no progress lines on standard error")
    r.set_defaults(func=cmd_check)
    return p


def _rounds(s: str) -> int:
    try:
        v = int(s, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {s!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {v}")
    return v


class CheckUsageError(Exception):
    """MODULE:FUNC cannot be loaded or is not a callable."""


def load_function(target: str):
    """The callable ``FUNC`` of ``MODULE:FUNC``; MODULE is a dotted module
    name (the current folder first on the path) or a path to a .py file."""
    module_name, sep, func = target.rpartition(":")
    if not sep or not module_name or not func:
        raise CheckUsageError(f"expected MODULE:FUNC (e.g. my_rules:my_rule), got {target!r}")
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            if not path.is_file():
                raise CheckUsageError(f"{module_name}: no such file")
            spec = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            if str(Path.cwd()) not in sys.path:
                sys.path.insert(0, str(Path.cwd()))
            module = importlib.import_module(module_name)
    except CheckUsageError:
        raise
    except Exception as exc:
        raise CheckUsageError(f"cannot import {module_name}: {type(exc).__name__}: {exc}") from None
    fn = getattr(module, func, None)
    if not callable(fn):
        raise CheckUsageError(f"{module_name} has no callable {func!r}")
    return fn


def cmd_check(args: argparse.Namespace) -> int:
    """Run the checks; print one line per failure (or JSON); return 0/1/2."""
    from aftertrain.checks.assertions import rule_reports
    from aftertrain.checks.speculative import DEFAULT_N

    try:
        rule = load_function(args.target)
    except CheckUsageError as err:
        print(f"aftertrain check rule: error: {err}", file=sys.stderr)
        return 2
    n = DEFAULT_N if args.n is None else args.n
    if n < 100:
        print(f"aftertrain check rule: error: --n must be >= 100, got {n}", file=sys.stderr)
        return 2
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    reports = rule_reports(rule, exact=args.exact, sequential=args.sequential,
                           dtype=DTYPES[args.dtype], n=n, seed=args.seed, progress=progress)
    if args.json:
        print(json.dumps([{"subject": r.subject, "passed": r.passed, "failures": r.failures,
                           "rows": [dataclasses.asdict(row) for row in r.rows]}
                          for r in reports], indent=1, default=str))
    else:
        for r in reports:
            print(r)
    return 0 if all(r.passed for r in reports) else 1
