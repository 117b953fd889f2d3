"""``aftertrain train``: train the reference model (or, with ``--draft``, the
draft GPT of speculative decoding) by the deterministic recipe of
:mod:`aftertrain.lm.train`, showing progress, and write the checkpoint
atomically. Every option is checked before torch loads; a run that diverges
is one line and exit status 1, with no checkpoint written.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

from aftertrain.cli.options import (
    MAX_SEED,
    UsageError,
    check_new_file,
    dropout,
    int_in,
    non_negative,
    positive,
)

#: ``train --steps`` at most (the reference recipe is 5000).
MAX_STEPS = 1_000_000
MAX_THREADS = 256
#: ``train`` writes a progress line when nothing was written for this long,
#: however slow a step is: on a busy 2-core machine a step of two spinning
#: threads took 5.6 s (docs/models.md), and a log then showed nothing for
#: minutes. The thread looks every second, so a line comes within 5 s.
PROGRESS_EVERY_S = 4.0

#: ``train`` options that change the recipe: flag -> TrainConfig field (dropout is
#: the model's). The draft has its own recipe, so they are refused with --draft.
RECIPE_FLAGS = {
    "--lr": "lr",
    "--min-lr": "min_lr",
    "--warmup": "warmup",
    "--weight-decay": "weight_decay",
    "--dropout": "dropout",
    "--grad-clip": "grad_clip",
    "--stop-below": "stop_below",
    "--stop-rising-to": "stop_rising_to",
    "--keep": "keep",
}


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``train`` and its options to ``subparsers``."""
    p = subparsers.add_parser(
        "train",
        help="train the reference model (deterministic recipe)",
        description="Train the reference model (or, with --draft, the draft GPT of "
        "speculative decoding) by the deterministic recipe, and write the checkpoint "
        "where --out says (without it, nothing is written); a progress line on "
        "standard error at least every 5 seconds.",
    )
    p.add_argument(
        "--steps",
        type=int_in(1, MAX_STEPS),
        default=None,
        help="optimiser steps (default 5000; 2000 with --draft)",
    )
    p.add_argument("--seed", type=int_in(0, MAX_SEED), default=1337, help="random seed (default 1337)")
    p.add_argument(
        "--threads",
        type=int_in(1, MAX_THREADS),
        default=2,
        help="torch threads; fixed so the run is bit-for-bit repeatable (default 2)",
    )
    p.add_argument(
        "--eval-every",
        type=int_in(1, MAX_STEPS),
        default=250,
        help="steps between validation evaluations (default 250)",
    )
    p.add_argument(
        "--stop-at",
        type=int_in(1, MAX_STEPS),
        default=None,
        metavar="STEP",
        help="stop after STEP steps of the unchanged schedule (the bundled article model: --stop-at 950)",
    )
    _add_recipe(p)
    _add_stopping(p)
    p.add_argument(
        "--draft",
        action="store_true",
        help="train the 1-layer draft GPT of speculative decoding instead "
        "(bundled as src/aftertrain/data/draft.pt)",
    )
    p.add_argument(
        "--out",
        help="where to write the checkpoint (atomically; checked before "
        "training); the bundled one is src/aftertrain/data/reference.pt",
    )
    p.set_defaults(func=run)
    return p


def _add_stopping(p: argparse.ArgumentParser) -> None:
    """The options that stop training on the validation loss, and which
    weights it keeps (the best evaluation's or the last step's)."""
    p.add_argument(
        "--stop-below",
        type=positive,
        default=None,
        metavar="LOSS",
        help="stop after the first evaluation whose validation loss is at most LOSS "
        "(the weights are then those of --stop-at that step)",
    )
    p.add_argument(
        "--stop-rising-to",
        type=positive,
        default=None,
        metavar="LOSS",
        help="stop after the first evaluation at or above LOSS that follows one below "
        "it (an overfitting run on its way back up; with --keep last)",
    )
    p.add_argument(
        "--keep",
        choices=("best", "last"),
        default=None,
        help="keep the weights of the best evaluation (default) or of the last step",
    )


def _add_recipe(p: argparse.ArgumentParser) -> None:
    """The recipe's options (learning rate and its schedule, weight decay,
    dropout, gradient clipping), each defaulting to the reference recipe's
    value (:class:`aftertrain.lm.train.TrainConfig`)."""
    p.add_argument("--lr", type=positive, default=None, help="peak learning rate (default 1e-3)")
    p.add_argument(
        "--min-lr",
        type=non_negative,
        default=None,
        help="learning rate at the end of the cosine decay, at most --lr (default 1e-4)",
    )
    p.add_argument(
        "--warmup", type=int_in(0, MAX_STEPS), default=None, help="steps of linear warm-up (default 100)"
    )
    p.add_argument(
        "--weight-decay",
        type=non_negative,
        default=None,
        help="AdamW weight decay on 2-D weights (default 0.1)",
    )
    p.add_argument("--dropout", type=dropout, default=None, help="dropout (default 0.2)")
    clip = p.add_mutually_exclusive_group()
    clip.add_argument(
        "--grad-clip",
        type=positive,
        default=None,
        metavar="NORM",
        help="clip the global gradient norm at NORM (default 1.0)",
    )
    clip.add_argument("--no-grad-clip", action="store_true", help="no gradient clipping")


@contextlib.contextmanager
def training_progress(
    stream: TextIO | None = None,
    every: float = PROGRESS_EVERY_S,
    width: int = 30,
    clock: Callable[[], float] = time.monotonic,
    poll: float | None = None,
) -> Iterator[Callable]:
    """Training progress, as the ``on_progress`` callback it yields: on a
    terminal a bar rewritten in place (at most 5 times a second), elsewhere (a
    log, CI) one line per validation; and on both a line ``  Ns: STAGE``
    whenever nothing was written for ``every`` seconds of ``clock`` (from a
    thread looking every ``poll`` seconds, default ``min(1, every / 4)``, so
    the start-up and a step slower than ``every`` show too).

    Long: the bar, the validation lines and the thread's lines share one
    lock and the bar's unended line, which a thread's line must end first;
    hence its own thread, not :func:`aftertrain.cli.progress.heartbeat`'s."""
    stream = sys.stderr if stream is None else stream
    poll = min(1.0, every / 4) if poll is None else poll
    tty = stream.isatty()
    lock = threading.Lock()
    t0 = clock()
    state = {"p": None, "written": t0, "bar": 0.0, "open": False}  # open: a bar line unended
    done = threading.Event()

    def write(text: str, bar: bool = False) -> None:
        with lock:
            stream.write(("\n" if state["open"] and not bar else "") + text)
            stream.flush()
            state["written"], state["open"] = clock(), bar

    def show(p) -> None:
        state["p"] = p
        if tty and (p.elapsed - state["bar"] >= 0.2 or p.step == p.steps or p.val_loss is not None):
            state["bar"] = p.elapsed
            filled = int(width * p.step / p.steps)
            best = f" best val {p.best_val:.4f}" if p.best_val is not None else ""
            eta = p.elapsed / p.step * (p.steps - p.step)
            write(
                f"\r[{'#' * filled}{'-' * (width - filled)}] step {p.step}/{p.steps} loss "
                f"{p.train_loss:.4f}{best} {p.elapsed:.0f}s elapsed, ~{eta:.0f}s left ",
                bar=True,
            )
        if p.val_loss is not None:
            write(
                f"  step {p.step}/{p.steps}: loss {p.train_loss:.4f} val {p.val_loss:.4f} "
                f"(best {p.best_val:.4f}) {p.elapsed:.0f}s\n"
            )

    def heartbeat() -> None:
        while not done.wait(poll):
            if clock() - state["written"] >= every:
                p = state["p"]
                at = (
                    "starting (corpus, model)"
                    if p is None
                    else f"step {p.step}/{p.steps}, loss {p.train_loss:.4f}"
                )
                write(f"  {clock() - t0:.0f}s: {at}\n")

    beat = threading.Thread(target=heartbeat, name="aftertrain-progress", daemon=True)
    beat.start()
    try:
        yield show
    finally:
        done.set()
        beat.join()
        if state["open"]:
            write("")


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
    model = (
        default.model
        if dropout is None
        else _model.GPTConfig(**{**default.model.__dict__, "dropout": dropout})
    )
    if "min_lr" not in given and "lr" in given and given["lr"] < default.min_lr:
        raise UsageError(
            f"--lr {given['lr']:g} is below the default --min-lr {default.min_lr:g}; give --min-lr too"
        )
    try:
        return _train.TrainConfig(
            steps=steps,
            seed=args.seed,
            threads=args.threads,
            eval_every=min(args.eval_every, steps),
            stop_at=args.stop_at,
            model=model,
            **given,
        )
    except ValueError as err:
        flag = next((f for f, n in RECIPE_FLAGS.items() if str(err).startswith(n + " ")), None)
        raise UsageError(f"{flag or 'recipe'}: {err}") from None


def _check_steps(args: argparse.Namespace, steps: int) -> None:
    """The options bounded by the run's length."""
    if args.stop_at is not None and args.stop_at > steps:
        raise UsageError(f"--stop-at must be at most the steps run ({steps}), got {args.stop_at}")
    if args.warmup is not None and args.warmup > steps:
        raise UsageError(f"--warmup {args.warmup} is longer than the run: at most the steps run ({steps})")


def _check_options(args: argparse.Namespace) -> None:
    """What the options alone say is wrong (before torch loads): --out, and
    the reference recipe's options given with --draft."""
    if args.out is not None:
        check_new_file(args.out, "--out")
    if args.draft and args.stop_at is not None:
        raise UsageError("--stop-at stops the reference recipe; the draft trains in full")
    recipe = [f for f, n in RECIPE_FLAGS.items() if getattr(args, n) is not None]
    recipe += ["--no-grad-clip"] if args.no_grad_clip else []
    if args.draft and recipe:
        raise UsageError(f"{recipe[0]} changes the reference recipe; the draft has its own")
    if args.steps is not None:
        _check_steps(args, args.steps)


def _config(args: argparse.Namespace):
    """The run's TrainConfig: the draft's recipe, or the reference's with the options given."""
    from aftertrain.lm import train as _train

    if args.draft:
        steps = _train.DRAFT_STEPS if args.steps is None else args.steps
        return _train.draft_train_config(steps, args.seed, args.threads, min(args.eval_every, steps))
    steps = _train.TrainConfig().steps if args.steps is None else args.steps
    _check_steps(args, steps)
    return _recipe(args, steps)


def _describe(cfg, draft: bool) -> str:
    """The line that states the run's recipe before it starts."""
    stop = "" if cfg.stop_at is None else f" stopped at step {cfg.stop_at}"
    stop += "" if cfg.stop_below is None else f" or at validation loss <= {cfg.stop_below:g}"
    stop += (
        ""
        if cfg.stop_rising_to is None
        else f" or when validation loss climbs back to {cfg.stop_rising_to:g}"
    )
    clip = "off" if cfg.grad_clip is None else f"{cfg.grad_clip:g}"
    return (
        f"training {'the draft GPT, ' if draft else ''}{cfg.steps} steps{stop}, "
        f"seed {cfg.seed}, {cfg.threads} thread(s), "
        f"dropout {cfg.model.dropout}, batch {cfg.batch_size}, lr {cfg.lr:g} "
        f"(min {cfg.min_lr:g}, warm-up {cfg.warmup}), weight decay {cfg.weight_decay:g}, "
        f"gradient clipping {clip}, keep the {cfg.keep} weights"
    )


def _checkpoint_meta(args: argparse.Namespace, cfg, result) -> dict:
    """What the checkpoint's ``.pt.json`` records: the command, the losses and
    the recipe (the reference's; the draft's is fixed)."""
    command = "aftertrain train " + " ".join(shlex.quote(a) for a in args.argv)
    return {
        "command": command,
        "val_loss": result.val_loss,
        "train_loss": result.train_loss,
        "best_step": result.best_step,
        "steps": cfg.steps,
        "stop_at": cfg.stop_at,
        "seed": cfg.seed,
        "threads": cfg.threads,
        "history": result.history,
        **(
            {}
            if args.draft
            else {
                "recipe": {
                    "lr": cfg.lr,
                    "min_lr": cfg.min_lr,
                    "warmup": cfg.warmup,
                    "weight_decay": cfg.weight_decay,
                    "dropout": cfg.model.dropout,
                    "grad_clip": cfg.grad_clip,
                    "batch_size": cfg.batch_size,
                    "stop_below": cfg.stop_below,
                    "stop_rising_to": cfg.stop_rising_to,
                    "keep": cfg.keep,
                    "last_step": result.history[-1][0],
                }
            }
        ),
    }


def run(args: argparse.Namespace) -> int:
    """Train; print the result; write the checkpoint when ``--out`` is given.
    0 on success, 1 when the run diverged (nothing written)."""
    _check_options(args)  # before torch loads, where the options say enough
    # Two OpenMP threads that spin while they wait for each other stall on a
    # busy machine (0.2 steps/s against 1 for one thread, docs/measurement.md);
    # passive waiting changes no result. Read when torch loads, so set here.
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from aftertrain.lm import checkpoint as _checkpoint
    from aftertrain.lm import train as _train

    cfg = _config(args)
    out = Path(args.out) if args.out else None
    print(_describe(cfg, args.draft), file=sys.stderr)
    try:
        with training_progress() as show:
            result = _train.train(cfg, on_progress=show)
    except FloatingPointError as err:  # the recipe diverged (NonFiniteLossError is one)
        print(
            f"aftertrain train: the run diverged: {str(err).splitlines()[0]}; no checkpoint "
            f"written (a smaller --lr or --weight-decay, or gradient clipping, keeps the loss "
            f"finite)",
            file=sys.stderr,
        )
        return 1
    kept = "best" if cfg.keep == "best" else "kept (last)"
    print(
        f"done in {result.seconds:.0f}s: {kept} validation loss {result.val_loss:.4f} "
        f"at step {result.best_step} (train {result.train_loss:.4f})"
    )
    if out is None:
        print("no --out given: weights not saved")
        return 0
    meta = _checkpoint.save_checkpoint(result.model, out, _checkpoint_meta(args, cfg, result))
    print(f"wrote {out} (sha256 {meta['sha256'][:16]}...)")
    return 0
