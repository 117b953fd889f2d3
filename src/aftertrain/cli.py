"""The ``aftertrain`` command line."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from aftertrain import model as _model
from aftertrain import text as _text


def _progress_bar(stream=None, width: int = 30):
    """Training progress: a bar rewritten in place (at most 5 times a second)
    on a terminal; elsewhere (a log, CI) one line per validation only."""
    stream = sys.stderr if stream is None else stream
    tty = stream.isatty()
    last = [0.0]

    def show(p) -> None:
        if tty and (p.elapsed - last[0] >= 0.2 or p.step == p.steps or p.val_loss is not None):
            last[0] = p.elapsed
            done = int(width * p.step / p.steps)
            bar = "#" * done + "-" * (width - done)
            best = f" best val {p.best_val:.4f}" if p.best_val is not None else ""
            eta = p.elapsed / p.step * (p.steps - p.step)
            stream.write(f"\r[{bar}] step {p.step}/{p.steps} loss {p.train_loss:.4f}"
                         f"{best} {p.elapsed:.0f}s elapsed, ~{eta:.0f}s left ")
        if p.val_loss is not None:
            stream.write(("\n" if tty else "") + f"  step {p.step}/{p.steps}: loss {p.train_loss:.4f} "
                         f"val {p.val_loss:.4f} (best {p.best_val:.4f}) {p.elapsed:.0f}s\n")
        stream.flush()

    return show


def cmd_train(args: argparse.Namespace) -> int:
    from aftertrain import train as _train

    if args.draft and args.stop_at is not None:
        raise ValueError("--stop-at stops the reference recipe; the draft trains in full")
    if args.draft:
        steps = _train.DRAFT_STEPS if args.steps is None else args.steps
        cfg = _train.draft_train_config(steps, args.seed, args.threads, min(args.eval_every, steps))
    else:
        steps = _train.TrainConfig().steps if args.steps is None else args.steps
        cfg = _train.TrainConfig(steps=steps, seed=args.seed, threads=args.threads,
                                 eval_every=min(args.eval_every, steps), stop_at=args.stop_at)
    out = Path(args.out) if args.out else None
    stop = "" if cfg.stop_at is None else f" stopped at step {cfg.stop_at}"
    print(f"training {'the draft GPT, ' if args.draft else ''}{cfg.steps} steps{stop}, "
          f"seed {cfg.seed}, {cfg.threads} thread(s), "
          f"dropout {cfg.model.dropout}, batch {cfg.batch_size}", file=sys.stderr)
    result = _train.train(cfg, on_progress=_progress_bar())
    print(f"done in {result.seconds:.0f}s: best validation loss {result.val_loss:.4f} "
          f"at step {result.best_step} (train {result.train_loss:.4f})")
    if out is None:
        print("no --out given: weights not saved")
        return 0
    command = "aftertrain train " + " ".join(shlex.quote(a) for a in args.argv)
    meta = _model.save_checkpoint(result.model, out, {
        "command": command,
        "val_loss": result.val_loss,
        "train_loss": result.train_loss,
        "best_step": result.best_step,
        "steps": cfg.steps,
        "stop_at": cfg.stop_at,
        "seed": cfg.seed,
        "threads": cfg.threads,
        "history": result.history,
    })
    print(f"wrote {out} (sha256 {meta['sha256'][:16]}...)")
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    _text.encode(args.prompt)  # a bad prompt is reported before any loading
    net = _model.load_checkpoint(args.checkpoint) if args.checkpoint else _model.load_reference()
    out = _model.sample_text(net, args.prompt, args.length, args.temperature, args.seed)
    print(args.prompt + out)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from aftertrain import report

    try:
        return report.main(args)
    except report.ReportError as err:
        print(f"aftertrain report: error: {err}", file=sys.stderr)
        return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aftertrain",
        description="Executable claims about compressing a small character-level GPT.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "report", help="run the claims' tests and write the report (tables beside the article's, plots)",
        description="Run this checkout's pytest suite (the claims ledger), then write "
                    "OUT/report.md with every table of the articles beside ours, the verdicts, "
                    "and PNG plots. Exit status 1 when a claim is broken.")
    p.add_argument("--out", default="report", help="output folder (default: report/)")
    p.add_argument("--quick", action="store_true",
                   help="fewer hypothesis examples and timing pairs: a first look, said so in the report")
    p.add_argument("--update-readme", action="store_true",
                   help="also rewrite the claims table of the checkout's README.md")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--checkout", help="aftertrain source tree whose tests to run "
                        "(default: the one this package is installed from)")
    source.add_argument("--claims-json", help="read verdicts and figures from this ledger "
                        "(written by `pytest --claims-json FILE`) instead of running the tests")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("train", help="train the reference model (deterministic recipe)")
    p.add_argument("--steps", type=_positive_int, default=None,
                   help="optimiser steps (default 5000; 2000 with --draft)")
    p.add_argument("--seed", type=int, default=1337, help="random seed (default 1337)")
    p.add_argument("--threads", type=_positive_int, default=2,
                   help="torch threads; fixed so the run is bit-for-bit repeatable (default 2)")
    p.add_argument("--eval-every", type=_positive_int, default=250,
                   help="steps between validation evaluations (default 250)")
    p.add_argument("--stop-at", type=_positive_int, default=None, metavar="STEP",
                   help="stop after STEP steps of the unchanged schedule (the bundled "
                   "article model: --stop-at 950)")
    p.add_argument("--draft", action="store_true",
                   help="train the 1-layer draft GPT of speculative decoding instead "
                   "(bundled as src/aftertrain/data/draft.pt)")
    p.add_argument("--out", help="where to write the checkpoint (atomically); "
                   "the bundled one is src/aftertrain/data/reference.pt")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("sample", help="print text sampled from the reference model")
    p.add_argument("--prompt", default="The ", help="text to continue (default 'The ')")
    p.add_argument("--length", type=_nonnegative_int, default=200,
                   help="characters to generate (default 200)")
    p.add_argument("--temperature", type=_nonnegative_float, default=1.0,
                   help="sampling temperature, 0 = greedy (default 1.0)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--checkpoint", help="a checkpoint other than the bundled reference")
    p.set_defaults(func=cmd_sample)
    return parser


def _positive_int(s: str) -> int:
    v = int(s)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {s}")
    return v


def _nonnegative_int(s: str) -> int:
    v = int(s)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {s}")
    return v


def _nonnegative_float(s: str) -> float:
    v = float(s)
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {s}")
    return v


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = argv[1:]
    try:
        return args.func(args)
    except (ValueError, _model.CheckpointError, _text.CorpusError) as err:
        print(f"aftertrain {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
