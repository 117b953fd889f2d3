"""``aftertrain check rule|generator|quantizer|pruner MODULE:FUNC``: aftertrain's
checks on a user's implementation from the command line. ``MODULE`` is an
importable module (the current folder first) or a path to a ``.py`` file
(its folder is put first on the path, so it imports the modules beside it).

Exit status 0 when every check passed (edge findings are printed and do not
fail unless ``--strict``), 1 when one failed (one line per failure, or one
line when the implementation ended the process: ``sys.exit`` inside it), 2
on a usage error (one line; a module that raises or calls ``sys.exit`` on
import is one, named with its file and line).

Standard output holds only the reports: what the user's module or function
prints goes to standard error, so ``--json`` output always parses. torch is
imported only once the arguments are found good.
"""

from __future__ import annotations

import argparse
import sys

from aftertrain.cli.check_common import (  # noqa: F401 (re-exported)
    MAX_SEED,
    CheckUsageError,
    add_check,
    add_common,
    load_function,
    run_reports,
)
from aftertrain.cli.options import int_in

#: --dtype's choices: the precisions the kit hands p and q in, by their names in
#: torch (looked up only when the checks run: ``--help`` and a usage error
#: answer without importing torch).
DTYPES = ("float64", "float32", "bfloat16", "float16")
#: ``--n`` at least and at most: check_rule's bounds
#: (:data:`aftertrain.checks.speculative.MAX_N`: p and q of every round at
#: once, about 260 MB at 200,000), repeated here so that a usage error needs
#: no torch (tests/cli/test_check.py keeps them equal).
MIN_N, MAX_N = 100, 200_000
#: ``--runs`` at least and at most: check_generator's least (10) and a bound
#: on the time (each run is a call of the user's loop: four joint laws of
#: 100,000 calls are about 11 minutes of aftertrain's own loop, ~1.6 ms a call).
MIN_RUNS, MAX_RUNS = 10, 100_000


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``check`` (with its ``rule``, ``generator``, ``quantizer`` and
    ``pruner`` subcommands) to ``subparsers``."""
    p = subparsers.add_parser(
        "check",
        help="run aftertrain's conformance checks on your own implementation",
        description="Run aftertrain.checks on an implementation of yours.",
    )
    sub = p.add_subparsers(
        dest="check_kind", required=True, metavar="{rule,generator,quantizer,pruner}", parser_class=type(p)
    )
    _add_rule(sub)
    _add_generator(sub)

    from aftertrain.cli import check_kits

    check_kits.add_parsers(sub)
    return p


def _add_rule(subparsers) -> None:
    """Add ``check rule`` and its options to the subcommands ``subparsers``."""
    r = add_check(
        subparsers,
        "rule",
        help="a speculative sampler's verification rule",
        description="Judge a verification rule (docs/checks.md, 'The rule protocol'): "
        "check_rule's statistical battery, and with --exact check_rule_exact's "
        "forced-uniform probes. Exit 0 passed, 1 failed, 2 usage error.",
        target="the rule",
    )
    r.add_argument(
        "--exact",
        action="store_true",
        help="FUNC takes its uniforms, rule(p, q, drafts, u, v): run the exact probes too",
    )
    r.add_argument(
        "--sequential",
        action="store_true",
        help="FUNC handles one round per call: p (k+1, V), q (k, V), drafts (k,)",
    )
    r.add_argument(
        "--dtype",
        choices=DTYPES,
        default="float64",
        help="the precision p and q are handed in (default float64)",
    )
    r.add_argument(
        "--uniforms",
        choices=DTYPES,
        default=None,
        help="with --exact: the precision the battery draws u and v in (default "
        "--dtype, as the rule's own torch.rand_like(p) would)",
    )
    r.add_argument(
        "--n",
        type=int_in(MIN_N, MAX_N, grouped=True),
        default=None,
        help=f"rounds per case, {MIN_N} to {MAX_N:,} (default 20000; fewer lose "
        "power: the chi-square detects a TV bias of about 0.025 * sqrt(20000 / N))",
    )
    add_common(
        r,
        run,
        seed_help="seed of the statistical battery's cases and draws (default 0; "
        "the exact probes are the same at every seed)",
    )


def _add_generator(subparsers) -> None:
    """Add ``check generator`` and its options to the subcommands ``subparsers``."""
    g = add_check(
        subparsers,
        "generator",
        help="a speculative decoding loop",
        description="Judge a decoding loop (docs/checks.md, 'check_generator'): the joint "
        "law of its first tokens on toy models against the target's exact law, and "
        "greedy decoding at temperature 0. Exit 0 passed, 1 failed, 2 usage error.",
        target="the loop, generate(target, draft, prompt, n_new, k, temperature, generator)",
    )
    form = g.add_mutually_exclusive_group()
    form.add_argument(
        "--loop",
        action="store_true",
        help="FUNC is loop(target, draft, ids, n_new, k, temperature) -> ids over "
        "model(ids).logits, drawing from torch's global generator",
    )
    form.add_argument(
        "--step",
        action="store_true",
        help="FUNC is one round, step(target, draft, ids, k, temperature) -> ids, over "
        "model(ids).logits, drawing from torch's global generator",
    )
    g.add_argument(
        "--runs",
        type=int_in(MIN_RUNS, MAX_RUNS, grouped=True),
        default=600,
        help=f"calls per k and temperature, {MIN_RUNS} to {MAX_RUNS:,} (default 600: "
        "fewer miss a filtered draft in some seeds, docs/checks.md)",
    )
    add_common(g, run_generator, seed_help="seed of the generator handed to each call (default 0)")


def run_generator(args: argparse.Namespace) -> int:
    """``check generator``: run :func:`aftertrain.checks.speculative.check_generator` on
    FUNC (through ``adapters.from_logits_loop`` with ``--loop``, ``from_logits_step``
    with ``--step``); print the report (or its JSON). Returns 0 passed, 1 failed, 2
    usage error."""

    def reports_of(fn, progress):
        from aftertrain.checks import adapters
        from aftertrain.checks.speculative import check_generator

        generate = (
            adapters.from_logits_loop(fn) if args.loop else adapters.from_logits_step(fn) if args.step else fn
        )
        return [check_generator(generate, runs=args.runs, seed=args.seed, progress=progress)]

    return run_reports(args, "aftertrain check generator", "the generated tokens", reports_of)


def run(args: argparse.Namespace) -> int:
    """``check rule``: run the checks; print one line per failure (or JSON); return 0/1/2."""

    def reports_of(rule, progress):
        import torch

        from aftertrain.checks import assertions
        from aftertrain.checks.speculative import DEFAULT_N

        return assertions.rule_reports(
            rule,
            exact=args.exact,
            sequential=args.sequential,
            dtype=getattr(torch, args.dtype),
            n=DEFAULT_N if args.n is None else args.n,
            seed=args.seed,
            uniforms=None if args.uniforms is None else getattr(torch, args.uniforms),
            progress=progress,
        )

    if args.uniforms is not None and not args.exact:
        print(
            "aftertrain check rule: error: --uniforms applies only with --exact (without it "
            "the rule draws its own)",
            file=sys.stderr,
        )
        return 2
    return run_reports(args, "aftertrain check rule", "(accepted, token)", reports_of)
