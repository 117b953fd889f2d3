"""The ``aftertrain`` command line: the entry point and the parser, put
together from one module per command (:mod:`.report`, :mod:`.sweep`,
:mod:`.train`, :mod:`.sample`, :mod:`.check`), each with its ``add_parser``
and the function its parser runs; what they share is :mod:`.options`.

A user's mistake (a bad value, a path that cannot be used, a file that is
not what it should be) is one line on standard error, naming the bad value
and what is allowed, with exit status 2, and it is found before any long
work starts. A traceback means a bug in aftertrain.
"""

from __future__ import annotations

import argparse
import os
import sys

from aftertrain import __version__
from aftertrain.cli import check, report, sample, sweep, train
from aftertrain.cli.options import OneLineParser, UsageError

#: The commands, in the order ``aftertrain --help`` lists them.
COMMANDS = (report, sweep, train, sample, check)


def build_parser() -> argparse.ArgumentParser:
    """The ``aftertrain`` parser: ``--version`` and one subcommand per module of
    :data:`COMMANDS`, each mistake one line and exit status 2 (:class:`OneLineParser`)."""
    parser = OneLineParser(
        prog="aftertrain",
        description="Executable claims about compressing a small character-level GPT.",
    )
    parser.add_argument("--version", action="version", version=f"aftertrain {__version__}")
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="{report,sweep,train,sample,check}", parser_class=OneLineParser
    )
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def silence_stdout() -> None:
    """After a BrokenPipeError on standard output (the reader of a pipe, e.g.
    ``| head``, has gone): point it at /dev/null, so that Python's flush at exit
    does not raise again (the recipe of Python's ``signal`` docs)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _attach_negative_numbers(argv: list[str]) -> list[str]:
    """``--lr -1e-3`` as ``--lr=-1e-3``: argparse takes a value that starts
    with '-' and is not a plain decimal for an option, and then reports a
    missing value instead of naming the bad one."""
    out: list[str] = []
    for a in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and a.startswith("-"):
            try:
                float(a)
            except ValueError:
                pass
            else:
                out[-1] = f"{out[-1]}={a}"
                continue
        out.append(a)
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the command of ``argv`` (default: the process's arguments) and return
    its exit status: the command's own (0 done, 1 as its help says), 2 on a
    usage error, 130 when interrupted."""
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    args = parser.parse_args(_attach_negative_numbers(argv))
    args.argv = argv[1:]
    try:
        status = args.func(args)
        # A closed pipe shows here, not in Python's flush at exit; a standard
        # output closed outright (`>&-`) is None, and what was printed went nowhere.
        if sys.stdout is not None:
            sys.stdout.flush()
        return status
    except UsageError as err:
        print(f"aftertrain {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"aftertrain {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `aftertrain ... | head`: end quietly; 1 as Python's docs do
        silence_stdout()
        return 1


if __name__ == "__main__":
    sys.exit(main())
