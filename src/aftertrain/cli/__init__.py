"""The ``aftertrain`` command line.

A user's mistake (a bad value, a path that cannot be used, a file that is
not what it should be) is one line on standard error, naming the bad value
and what is allowed, with exit status 2, and it is found before any long
work starts. A traceback means a bug in aftertrain.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shlex
import sys
import threading
import time
from pathlib import Path

from aftertrain import __version__

#: ``sample --length`` at most: generation is one model step per character
#: (about 10-30 ms each on 2 cores), so this is up to about a minute.
MAX_SAMPLE_LENGTH = 2000
#: ``train --steps`` at most (the reference recipe is 5000).
MAX_STEPS = 1_000_000
MAX_THREADS = 256
MAX_SEED = 2 ** 63 - 1
#: ``train`` writes a progress line at least this often, however slow a step
#: is: on a busy 2-core machine a step of two spinning threads took 5.6 s
#: (docs/models.md), and a log then showed nothing for minutes.
PROGRESS_EVERY_S = 5.0


class UsageError(Exception):
    """A user's mistake found by the command line itself."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a mistake is one line (no usage block) and exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


# --- argument types: each names what is allowed ----------------------------------


def _int_in(low: int, high: int):
    def parse(s: str) -> int:
        try:
            v = int(s, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a whole number from {low} to {high}, got {s!r}") from None
        if not low <= v <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, got {v}")
        return v
    parse.__name__ = "whole number"
    return parse


def _temperature(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a finite number >= 0 (0 = greedy), got {s!r}") from None
    if not (v >= 0 and v != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0 (0 = greedy), got {s}")
    return v


def _finite(s: str, what: str, ok) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {s!r}") from None
    if not (math.isfinite(v) and ok(v)):
        raise argparse.ArgumentTypeError(f"must be {what}, got {s}")
    return v


def _positive(s: str) -> float:
    return _finite(s, "a finite number > 0", lambda v: v > 0)


def _non_negative(s: str) -> float:
    return _finite(s, "a finite number >= 0", lambda v: v >= 0)


def _dropout(s: str) -> float:
    return _finite(s, "a number from 0 to below 1", lambda v: 0 <= v < 1)


def _check_new_file(path: str, flag: str) -> Path:
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


@contextlib.contextmanager
def training_progress(stream=None, every: float = PROGRESS_EVERY_S, width: int = 30):
    """Training progress, as the ``on_progress`` callback it yields: on a
    terminal a bar rewritten in place (at most 5 times a second), elsewhere (a
    log, CI) one line per validation; and on both a line whenever nothing was
    written for ``every`` seconds (from a thread, so the start-up and a step
    slower than ``every`` show too)."""
    stream = sys.stderr if stream is None else stream
    tty = stream.isatty()
    lock = threading.Lock()
    t0 = time.monotonic()
    state = {"p": None, "written": t0, "bar": 0.0, "open": False}  # open: a bar line unended
    done = threading.Event()

    def write(text: str, bar: bool = False) -> None:
        with lock:
            stream.write(("\n" if state["open"] and not bar else "") + text)
            stream.flush()
            state["written"], state["open"] = time.monotonic(), bar

    def show(p) -> None:
        state["p"] = p
        if tty and (p.elapsed - state["bar"] >= 0.2 or p.step == p.steps or p.val_loss is not None):
            state["bar"] = p.elapsed
            filled = int(width * p.step / p.steps)
            best = f" best val {p.best_val:.4f}" if p.best_val is not None else ""
            eta = p.elapsed / p.step * (p.steps - p.step)
            write(f"\r[{'#' * filled}{'-' * (width - filled)}] step {p.step}/{p.steps} loss "
                  f"{p.train_loss:.4f}{best} {p.elapsed:.0f}s elapsed, ~{eta:.0f}s left ", bar=True)
        if p.val_loss is not None:
            write(f"  step {p.step}/{p.steps}: loss {p.train_loss:.4f} val {p.val_loss:.4f} "
                  f"(best {p.best_val:.4f}) {p.elapsed:.0f}s\n")

    def heartbeat() -> None:
        while not done.wait(min(1.0, every / 4)):
            if time.monotonic() - state["written"] >= every:
                p = state["p"]
                at = ("starting (corpus, model)" if p is None
                      else f"step {p.step}/{p.steps}, loss {p.train_loss:.4f}")
                write(f"  {time.monotonic() - t0:.0f}s: {at}\n")

    beat = threading.Thread(target=heartbeat, name="aftertrain-progress", daemon=True)
    beat.start()
    try:
        yield show
    finally:
        done.set()
        beat.join()
        if state["open"]:
            write("")


# --- subcommands -------------------------------------------------------------------


#: ``train`` options that change the recipe: flag -> TrainConfig field (dropout is
#: the model's). The draft has its own recipe, so they are refused with --draft.
RECIPE_FLAGS = {"--lr": "lr", "--min-lr": "min_lr", "--warmup": "warmup",
                "--weight-decay": "weight_decay", "--dropout": "dropout",
                "--grad-clip": "grad_clip", "--stop-below": "stop_below",
                "--stop-rising-to": "stop_rising_to", "--keep": "keep"}


def _recipe(args: argparse.Namespace, steps: int):
    """The TrainConfig of the given options; every option not given keeps the
    reference's default."""
    from aftertrain.lm import model as _model
    from aftertrain.lm import train as _train

    given = {f: getattr(args, f) for f in RECIPE_FLAGS.values() if getattr(args, f) is not None}
    if args.no_grad_clip:
        given["grad_clip"] = None
    dropout = given.pop("dropout", None)
    default = _train.TrainConfig()
    model = default.model if dropout is None else _model.GPTConfig(
        **{**default.model.__dict__, "dropout": dropout})
    if "min_lr" not in given and "lr" in given and given["lr"] < default.min_lr:
        raise UsageError(f"--lr {given['lr']:g} is below the default --min-lr "
                         f"{default.min_lr:g}; give --min-lr too")
    try:
        return _train.TrainConfig(steps=steps, seed=args.seed, threads=args.threads,
                                  eval_every=min(args.eval_every, steps), stop_at=args.stop_at,
                                  model=model, **given)
    except ValueError as err:
        flag = next((f for f, n in RECIPE_FLAGS.items() if str(err).startswith(n + " ")), None)
        raise UsageError(f"{flag or 'recipe'}: {err}") from None


def _check_steps(args: argparse.Namespace, steps: int) -> None:
    """The options bounded by the run's length."""
    if args.stop_at is not None and args.stop_at > steps:
        raise UsageError(f"--stop-at must be at most the steps run ({steps}), got {args.stop_at}")
    if args.warmup is not None and args.warmup > steps:
        raise UsageError(f"--warmup {args.warmup} is longer than the run: at most the steps run "
                         f"({steps})")


def cmd_train(args: argparse.Namespace) -> int:
    out = _check_new_file(args.out, "--out") if args.out is not None else None  # before training
    if args.draft and args.stop_at is not None:
        raise UsageError("--stop-at stops the reference recipe; the draft trains in full")
    recipe = [f for f, n in RECIPE_FLAGS.items() if getattr(args, n) is not None]
    recipe += ["--no-grad-clip"] if args.no_grad_clip else []
    if args.draft and recipe:
        raise UsageError(f"{recipe[0]} changes the reference recipe; the draft has its own")
    if args.steps is not None:
        _check_steps(args, args.steps)  # before torch loads, where the options say enough
    # Two OpenMP threads that spin while they wait for each other stall on a
    # busy machine (0.2 steps/s against 1 for one thread, docs/measurement.md);
    # passive waiting changes no result. Read when torch loads, so set here.
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from aftertrain.lm import checkpoint as _checkpoint
    from aftertrain.lm import train as _train

    if args.draft:
        steps = _train.DRAFT_STEPS if args.steps is None else args.steps
        cfg = _train.draft_train_config(steps, args.seed, args.threads, min(args.eval_every, steps))
    else:
        steps = _train.TrainConfig().steps if args.steps is None else args.steps
        _check_steps(args, steps)
        cfg = _recipe(args, steps)
    out = Path(args.out) if args.out else None
    stop = "" if cfg.stop_at is None else f" stopped at step {cfg.stop_at}"
    stop += "" if cfg.stop_below is None else f" or at validation loss <= {cfg.stop_below:g}"
    stop += ("" if cfg.stop_rising_to is None
             else f" or when validation loss climbs back to {cfg.stop_rising_to:g}")
    clip = "off" if cfg.grad_clip is None else f"{cfg.grad_clip:g}"
    print(f"training {'the draft GPT, ' if args.draft else ''}{cfg.steps} steps{stop}, "
          f"seed {cfg.seed}, {cfg.threads} thread(s), "
          f"dropout {cfg.model.dropout}, batch {cfg.batch_size}, lr {cfg.lr:g} "
          f"(min {cfg.min_lr:g}, warm-up {cfg.warmup}), weight decay {cfg.weight_decay:g}, "
          f"gradient clipping {clip}, keep the {cfg.keep} weights", file=sys.stderr)
    try:
        with training_progress() as show:
            result = _train.train(cfg, on_progress=show)
    except FloatingPointError as err:  # the recipe diverged (NonFiniteLossError is one)
        print(f"aftertrain train: the run diverged: {str(err).splitlines()[0]}; no checkpoint "
              f"written (a smaller --lr or --weight-decay, or gradient clipping, keeps the loss "
              f"finite)", file=sys.stderr)
        return 1
    kept = "best" if cfg.keep == "best" else "kept (last)"
    print(f"done in {result.seconds:.0f}s: {kept} validation loss {result.val_loss:.4f} "
          f"at step {result.best_step} (train {result.train_loss:.4f})")
    if out is None:
        print("no --out given: weights not saved")
        return 0
    command = "aftertrain train " + " ".join(shlex.quote(a) for a in args.argv)
    meta = _checkpoint.save_checkpoint(result.model, out, {
        "command": command, "val_loss": result.val_loss, "train_loss": result.train_loss,
        "best_step": result.best_step, "steps": cfg.steps, "stop_at": cfg.stop_at,
        "seed": cfg.seed, "threads": cfg.threads, "history": result.history,
        **({} if args.draft else {"recipe": {
            "lr": cfg.lr, "min_lr": cfg.min_lr, "warmup": cfg.warmup,
            "weight_decay": cfg.weight_decay, "dropout": cfg.model.dropout,
            "grad_clip": cfg.grad_clip, "batch_size": cfg.batch_size,
            "stop_below": cfg.stop_below, "stop_rising_to": cfg.stop_rising_to, "keep": cfg.keep,
            "last_step": result.history[-1][0]}}),
    })
    print(f"wrote {out} (sha256 {meta['sha256'][:16]}...)")
    return 0


def _load_checkpoint(path: str):
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"--checkpoint {path} is a folder; give a checkpoint file "
                         "(written by `aftertrain train --out FILE`)")
    if not p.is_file():
        raise UsageError(f"--checkpoint {path} does not exist")
    from aftertrain.lm import checkpoint as _checkpoint

    try:
        return _checkpoint.load_checkpoint(p)
    except _checkpoint.CheckpointError as err:
        raise UsageError(f"--checkpoint: {err}") from None
    except Exception as err:  # noqa: BLE001 - torch.load of a foreign file raises anything
        # (UnpicklingError, IndexError, KeyError 'config', a size mismatch...)
        detail = (f"it has no {err} entry" if isinstance(err, KeyError)
                  else (str(err).splitlines() or [""])[0][:160])
        raise UsageError(f"--checkpoint {path} is not an aftertrain checkpoint (a dict of "
                         f"'config' and a matching 'state_dict', written by `aftertrain train "
                         f"--out`): {detail}") from None


def cmd_sample(args: argparse.Namespace) -> int:
    if args.checkpoint:  # a missing file or a folder: before torch loads
        p = Path(args.checkpoint)
        if p.is_dir() or not p.is_file():
            _load_checkpoint(args.checkpoint)
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
        raise UsageError("--checkpoint must name a checkpoint file, got '' (leave it out for "
                         "the bundled reference)")
    net = _load_checkpoint(args.checkpoint) if args.checkpoint else _checkpoint.load_reference()
    if len(args.prompt) > 500:
        print(f"reading the {len(args.prompt)}-character prompt (one model step per character "
              f"beyond the first)...", file=sys.stderr, flush=True)
    if args.length > 500:
        print(f"sampling {args.length} characters (one model step each)...", file=sys.stderr,
              flush=True)
    try:
        out = _decoding.sample_text(net, args.prompt, args.length, args.temperature, args.seed)
    except ValueError as err:
        if not args.checkpoint:
            raise  # the bundled model refusing valid arguments is a bug
        raise UsageError(f"--checkpoint {args.checkpoint} does not fit this prompt "
                         f"or vocabulary: {err}") from None
    print(args.prompt + out)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from aftertrain.cli.report import report_main
    from aftertrain.report import ReportError

    try:
        return report_main(args)
    except ReportError as err:
        raise UsageError(str(err)) from None


def cmd_sweep(args: argparse.Namespace) -> int:
    from aftertrain.cli.sweep import sweep_main
    from aftertrain.report import ReportError

    try:
        return sweep_main(args)
    except ReportError as err:
        raise UsageError(str(err)) from None


# --- the parser ------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="aftertrain",
        description="Executable claims about compressing a small character-level GPT.",
    )
    parser.add_argument("--version", action="version", version=f"aftertrain {__version__}")
    sub = parser.add_subparsers(dest="command", required=True,
                                metavar="{report,sweep,train,sample,check}", parser_class=OneLineParser)

    p = sub.add_parser(
        "report", help="run the claims' tests and write the report (tables beside the article's, plots)",
        description="Run this checkout's pytest suite (the claims ledger), then write "
                    "OUT/report.md with every table of the articles beside ours, the verdicts, "
                    "and PNG plots. Exit status 1 when a claim is broken, 2 on a usage error.")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--out", help="output folder (default: build/report, ignored by git)")
    where.add_argument("--update-committed", "--update-readme", dest="update_committed",
                       action="store_true",
                       help="write the committed report (the checkout's report/ folder, with its "
                            "claims.json) and rewrite the claims table of its README.md")
    p.add_argument("--quick", action="store_true",
                   help="fewer hypothesis examples and timing pairs: a first look, said so in the "
                        "report (only when the report runs the tests)")
    p.add_argument("--checkout", help="aftertrain source tree whose tests to run and whose "
                   "report/ and README --update-committed rewrites (default: the one this "
                   "package is installed from)")
    p.add_argument("--claims-json", action="append", metavar="FILE[,FILE...]",
                   help="read verdicts and figures from this ledger (written by `pytest "
                   "--claims-json FILE`) instead of running the tests; several (repeated or "
                   "comma-separated) give one verdict column per model, the first the primary")
    p.add_argument("--models", action="append", metavar="NAME_OR_PATH[,...]",
                   help="run the claims' tests on these models (bundled names: "
                   "reference, article, sweep-250, sweep-1250; or a checkpoint written by "
                   "`aftertrain train --out`); default reference,article; the first is the "
                   "primary and runs the whole suite, every later one only the tests that read "
                   "the model (the others' outcomes are the first run's)")
    p.add_argument("--jobs", type=int, metavar="N",
                   help="run N models' suites side by side, each in one process and each "
                   "whole (default 1: one model after another, each on the suite's xdist "
                   "workers, every core, later models running only the tests that read the "
                   "model); their timings still run one at a time, each test that times "
                   "waiting until no other run's test is running")
    p.add_argument("--sweep", metavar="FILE",
                   help="render this sweep file (written by `aftertrain sweep`); default: "
                   "OUT/sweep.json when it exists")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser(
        "sweep", help="the quality sweep: key figures of Q4-Q7, P1/P2, S4 per checkpoint "
        "against validation loss",
        description="Measure the key figures of Q4-Q7, P1/P2 and S4 on checkpoints of one "
                    "training run (default: the bundled sweep-250, article, sweep-1250, reference) "
                    "and write OUT/sweep.json, OUT/sweep.md and its plots; `aftertrain report` "
                    "renders OUT/sweep.json when it exists.")
    p.add_argument("--models", action="append", metavar="NAME_OR_PATH[,...]",
                   help="checkpoints to measure (default: sweep-250,article,sweep-1250,reference)")
    p.add_argument("--claims-json", action="append", metavar="FILE[,FILE...]",
                   help="ledgers whose tables give a model's figures (not measured again)")
    p.add_argument("--reuse", action="append", metavar="FILE[,FILE...]",
                   help="sweep files (written by `aftertrain sweep`) whose points are taken as "
                   "they are for the checkpoints of the same SHA-256 (not measured again)")
    p.add_argument("--out", help="output folder (default: build/report, ignored by git)")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("train", help="train the reference model (deterministic recipe)")
    p.add_argument("--steps", type=_int_in(1, MAX_STEPS), default=None,
                   help="optimiser steps (default 5000; 2000 with --draft)")
    p.add_argument("--seed", type=_int_in(0, MAX_SEED), default=1337, help="random seed (default 1337)")
    p.add_argument("--threads", type=_int_in(1, MAX_THREADS), default=2,
                   help="torch threads; fixed so the run is bit-for-bit repeatable (default 2)")
    p.add_argument("--eval-every", type=_int_in(1, MAX_STEPS), default=250,
                   help="steps between validation evaluations (default 250)")
    p.add_argument("--stop-at", type=_int_in(1, MAX_STEPS), default=None, metavar="STEP",
                   help="stop after STEP steps of the unchanged schedule (the bundled "
                   "article model: --stop-at 950)")
    p.add_argument("--lr", type=_positive, default=None,
                   help="peak learning rate (default 1e-3)")
    p.add_argument("--min-lr", type=_non_negative, default=None,
                   help="learning rate at the end of the cosine decay, at most --lr (default 1e-4)")
    p.add_argument("--warmup", type=_int_in(0, MAX_STEPS), default=None,
                   help="steps of linear warm-up (default 100)")
    p.add_argument("--weight-decay", type=_non_negative, default=None,
                   help="AdamW weight decay on 2-D weights (default 0.1)")
    p.add_argument("--dropout", type=_dropout, default=None, help="dropout (default 0.2)")
    clip = p.add_mutually_exclusive_group()
    clip.add_argument("--grad-clip", type=_positive, default=None, metavar="NORM",
                      help="clip the global gradient norm at NORM (default 1.0)")
    clip.add_argument("--no-grad-clip", action="store_true", help="no gradient clipping")
    p.add_argument("--stop-below", type=_positive, default=None, metavar="LOSS",
                   help="stop after the first evaluation whose validation loss is at most LOSS "
                   "(the weights are then those of --stop-at that step)")
    p.add_argument("--stop-rising-to", type=_positive, default=None, metavar="LOSS",
                   help="stop after the first evaluation at or above LOSS that follows one below "
                   "it (an overfitting run on its way back up; with --keep last)")
    p.add_argument("--keep", choices=("best", "last"), default=None,
                   help="keep the weights of the best evaluation (default) or of the last step")
    p.add_argument("--draft", action="store_true",
                   help="train the 1-layer draft GPT of speculative decoding instead "
                   "(bundled as src/aftertrain/data/draft.pt)")
    p.add_argument("--out", help="where to write the checkpoint (atomically; checked before "
                   "training); the bundled one is src/aftertrain/data/reference.pt")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("sample", help="print text sampled from the reference model")
    p.add_argument("--prompt", default="The ", help="text to continue (default 'The ')")
    p.add_argument("--length", type=_int_in(0, MAX_SAMPLE_LENGTH), default=200,
                   help=f"characters to generate, at most {MAX_SAMPLE_LENGTH} (default 200)")
    p.add_argument("--temperature", type=_temperature, default=1.0,
                   help="sampling temperature, 0 = greedy (default 1.0)")
    p.add_argument("--seed", type=_int_in(0, MAX_SEED), default=0, help="random seed (default 0)")
    p.add_argument("--checkpoint", help="a checkpoint other than the bundled reference")
    p.set_defaults(func=cmd_sample)
    from aftertrain.cli import check

    check.add_parser(sub)
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
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    args = parser.parse_args(_attach_negative_numbers(argv))
    args.argv = argv[1:]
    try:
        status = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not in Python's flush at exit
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
