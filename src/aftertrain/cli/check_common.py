"""What the ``check`` subcommands share (aftertrain.cli.check,
aftertrain.cli.check_kits): each command's parser (:func:`add_check`, then
its own options, then :func:`add_common`), loading ``MODULE:FUNC``, and
running the reports with standard output kept for them alone."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import json
import sys
from pathlib import Path

from aftertrain.cli.options import int_in
from aftertrain.cli.progress import heartbeat

#: ``--seed`` at most (a torch.Generator seed).
MAX_SEED = 2**64 - 1


def add_check(sub, name: str, *, help: str, description: str, target: str) -> argparse.ArgumentParser:
    """Add the check command ``name`` to ``check``'s subparsers ``sub`` with
    ``help`` and ``description``, and its ``MODULE:FUNC`` positional argument
    (``target`` names the function: "the rule"); return its parser, for the
    command's own options, which :func:`add_common` then ends."""
    parser = sub.add_parser(name, help=help, description=description)
    parser.add_argument(
        "target",
        metavar="MODULE:FUNC",
        help=f"{target}: an importable module (the current folder is searched "
        "first) or a path to a .py file, and the function's name",
    )
    return parser


def add_common(parser: argparse.ArgumentParser, func, seed_help: str) -> None:
    """The options every check command ends with: ``--seed`` (0 to
    :data:`MAX_SEED`, default 0; ``seed_help`` says what it seeds), ``--json``
    and ``--quiet``; ``func(args) -> exit status`` runs the command."""
    parser.add_argument("--seed", type=int_in(0, MAX_SEED, grouped=True), default=0, help=seed_help)
    parser.add_argument("--json", action="store_true", help="print the reports as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on standard error")
    parser.set_defaults(func=func)


class CheckUsageError(Exception):
    """MODULE:FUNC cannot be loaded or is not a callable."""


def _described(exc: BaseException) -> str:
    """``"TypeName: message (at FILE:LINE)"``, the frame the innermost of the
    user's code (:func:`aftertrain.checks.rule_battery.describe_exception`)."""
    from aftertrain.checks.rule_battery import describe_exception

    return describe_exception(exc)


def _where(exc: BaseException) -> str:
    """`` at FILE:LINE``: the innermost frame of ``exc`` in the user's code, or ''."""
    text = _described(exc)
    at = text.rfind(" (at ")
    return f" at {text[at + 5 : -1]}" if at >= 0 else ""


def load_function(target: str):
    """The callable ``FUNC`` of ``MODULE:FUNC``; MODULE is a dotted module
    name (the current folder first on the path) or a path to a .py file."""
    module_name, sep, func = target.rpartition(":")
    if not sep or not module_name or not func:
        raise CheckUsageError(f"expected MODULE:FUNC (e.g. my_rules:my_rule), got {target!r}")
    try:
        if module_name.endswith(".py"):
            path = Path(module_name).resolve()
            if not path.is_file():
                raise CheckUsageError(f"{module_name}: no such file")
            # the file's folder first on the path: it imports the modules beside it
            if str(path.parent) not in sys.path:
                sys.path.insert(0, str(path.parent))
            # registered under its name (dataclasses and pickle look it up), unless
            # that name is taken (a file called json.py must not shadow json)
            name = path.stem if path.stem not in sys.modules else f"_aftertrain_check_{path.stem}"
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                sys.modules.pop(name, None)
                raise
        else:
            if str(Path.cwd()) not in sys.path:
                sys.path.insert(0, str(Path.cwd()))
            module = importlib.import_module(module_name)
    except CheckUsageError:
        raise
    except ModuleNotFoundError as exc:
        if exc.name != module_name:  # one the user's module imports: where it does
            raise CheckUsageError(f"cannot import {module_name}: {_described(exc)}") from None
        raise CheckUsageError(
            f"cannot import {module_name}: no module of that name in {Path.cwd()} or on the path"
        ) from None
    except (Exception, SystemExit) as exc:  # the user's module: its own error, or sys.exit
        what = (
            f"called sys.exit({exc.code!r}) on import{_where(exc)}"
            if isinstance(exc, SystemExit)
            else _described(exc)
        )
        raise CheckUsageError(f"cannot import {module_name}: {what}") from None
    fn = getattr(module, func, None)
    if not callable(fn):
        raise CheckUsageError(f"{module_name} has no callable {func!r}")
    return fn


def run_reports(args: argparse.Namespace, say: str, what: str, reports_of) -> int:
    """Load ``args.target``, run ``reports_of(fn, progress)`` (a list of
    reports), print them (or JSON); return 0 passed, 1 failed, 2 usage error."""
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    # The user's module and function may print: that goes to standard error, so
    # standard output holds the reports alone (--json parses).
    with contextlib.redirect_stdout(sys.stderr):
        try:
            fn = load_function(args.target)
        except CheckUsageError as err:
            print(f"{say}: error: {err}", file=sys.stderr)
            return 2
        try:
            if progress is None:
                reports = reports_of(fn, progress)
            else:  # a line at least every 5 s, between the kit's own progress lines too
                with heartbeat(say.removeprefix("aftertrain "), f"judging {args.target}") as at:

                    def said(line: str) -> None:
                        progress(line)
                        at(line, written=True)

                    reports = reports_of(fn, said)
        except CheckUsageError as err:
            print(f"{say}: error: {err}", file=sys.stderr)
            return 2
        except SystemExit as exc:  # the kit reports exceptions; an exit ends it
            print(
                f"{say}: FAILED: {args.target} called sys.exit({exc.code!r}){_where(exc)} "
                f"instead of returning {what}",
                file=sys.stderr,
            )
            return 1
    status = 0 if all(r.passed for r in reports) else 1
    if args.json:
        text = json.dumps([_as_dict(r) for r in reports], indent=1, default=str)
    else:
        text = "\n".join(str(r) for r in reports)
    try:
        print(text, flush=True)
    except BrokenPipeError:  # `| head`: the reader has what it wanted; the verdict stands
        from aftertrain.cli import silence_stdout

        silence_stdout()
    return status


def _as_dict(report) -> dict:
    if hasattr(report, "as_dict"):
        return report.as_dict()
    return {
        "subject": report.subject,
        "passed": report.passed,
        "failures": report.failures,
        "rows": list(report.rows),
    }
