"""``aftertrain sample``: print text sampled from the bundled reference model
or a checkpoint. The prompt and the checkpoint's path are checked before the
model loads; a checkpoint that is not aftertrain's is one line naming why.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from aftertrain.cli.options import MAX_SEED, UsageError, int_in, temperature
from aftertrain.cli.progress import heartbeat

#: ``sample --k`` when --draft is given without it.
DEFAULT_K = 4
#: ``sample --length`` at most: generation is one model step per character
#: (about 10-30 ms each on 2 cores), so this is up to about a minute.
MAX_SAMPLE_LENGTH = 2000


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``sample`` and its options to ``subparsers``."""
    p = subparsers.add_parser(
        "sample",
        help="print text sampled from the reference model",
        description="Print text sampled from the bundled reference model or a checkpoint; "
        "with --draft, by speculative decoding, with its characters per target pass and "
        "its speedup timed on the run. A line of progress on standard error at least "
        "every 5 seconds.",
    )
    p.add_argument("--prompt", default="The ", help="text to continue (default 'The ')")
    p.add_argument(
        "--length",
        type=int_in(0, MAX_SAMPLE_LENGTH),
        default=200,
        help=f"characters to generate, at most {MAX_SAMPLE_LENGTH} (default 200)",
    )
    p.add_argument(
        "--temperature", type=temperature, default=1.0, help="sampling temperature, 0 = greedy (default 1.0)"
    )
    p.add_argument("--seed", type=int_in(0, MAX_SEED), default=0, help="random seed (default 0)")
    p.add_argument("--checkpoint", help="a checkpoint other than the bundled reference")
    p.add_argument(
        "--draft",
        choices=["bigram", "n-gram", "8-bit", "4-bit", "gpt"],
        help="sample by speculative decoding with this draft; prints characters per "
        "target pass and the speedup measured on the run",
    )
    p.add_argument(
        "--k",
        type=int_in(1, 64),
        default=None,
        help=f"characters drafted per round; only with --draft (default {DEFAULT_K})",
    )
    p.set_defaults(func=run)
    return p


def checkpoint_from_option(path: str):
    """The model of the checkpoint file ``path``; a UsageError naming why when
    it is missing, a folder, or not a checkpoint written by ``aftertrain train``."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(
            f"--checkpoint {path} is a folder; give a checkpoint file "
            "(written by `aftertrain train --out FILE`)"
        )
    if not p.is_file():
        raise UsageError(f"--checkpoint {path} does not exist")
    from aftertrain.lm import checkpoint as _checkpoint

    try:
        return _checkpoint.load_checkpoint(p)
    except _checkpoint.CheckpointError as err:
        raise UsageError(f"--checkpoint: {err}") from None
    except Exception as err:  # noqa: BLE001 - torch.load of a foreign file raises anything
        # (UnpicklingError, IndexError, KeyError 'config', a size mismatch...)
        detail = (
            f"it has no {err} entry"
            if isinstance(err, KeyError)
            else (str(err).splitlines() or [""])[0][:160]
        )
        raise UsageError(
            f"--checkpoint {path} is not an aftertrain checkpoint (a dict of "
            f"'config' and a matching 'state_dict', written by `aftertrain train "
            f"--out`): {detail}"
        ) from None


def run(args: argparse.Namespace) -> int:
    """Print the prompt and its sampled continuation; 0."""
    if args.k is not None and not args.draft:
        raise UsageError(
            f"--k {args.k} applies only with --draft (characters drafted per round); "
            "give --draft NAME or leave --k out"
        )
    k = DEFAULT_K if args.k is None else args.k
    if args.checkpoint:  # a missing file or a folder: before torch loads
        p = Path(args.checkpoint)
        if p.is_dir() or not p.is_file():
            checkpoint_from_option(args.checkpoint)
    # As train does: two OpenMP threads spinning while they wait for each other
    # stall on a busy machine (a 300-character drafted run 8-28 s against under 4 s
    # waiting passively); it changes no character. Read when torch loads.
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from aftertrain.lm import checkpoint as _checkpoint
    from aftertrain.lm import decoding as _decoding
    from aftertrain.lm import text as _text

    try:
        _text.encode(args.prompt)  # a bad prompt is reported before any loading
    except ValueError as err:
        raise UsageError(f"--prompt: {err}") from None
    if args.prompt == "":
        raise UsageError("--prompt must hold at least one character (default 'The ')")
    if args.checkpoint == "":
        raise UsageError(
            "--checkpoint must name a checkpoint file, got '' (leave it out for the bundled reference)"
        )
    net = checkpoint_from_option(args.checkpoint) if args.checkpoint else _checkpoint.load_reference()
    if len(args.prompt) > 500:
        print(
            f"reading the {len(args.prompt)}-character prompt (one model step per character "
            f"beyond the first)...",
            file=sys.stderr,
            flush=True,
        )
    if args.length > 500:
        print(f"sampling {args.length} characters (one model step each)...", file=sys.stderr, flush=True)
    try:
        with heartbeat("sample", f"sampling {args.length} characters") as at:
            if args.draft:  # speculative decoding; its figures on standard error
                from aftertrain.experiments.sample import sample_with_draft

                out, figures = sample_with_draft(
                    net, args.draft, args.prompt, args.length, k, args.temperature, args.seed, progress=at
                )
                print(figures, file=sys.stderr)
            else:
                out = _decoding.sample_text(net, args.prompt, args.length, args.temperature, args.seed)
    except ValueError as err:
        if not args.checkpoint:
            raise  # the bundled model refusing valid arguments is a bug
        raise UsageError(
            f"--checkpoint {args.checkpoint} does not fit this prompt or vocabulary: {err}"
        ) from None
    print(args.prompt + out)
    return 0
