"""A deterministic training recipe for the reference model.

Same seed, same weights, bit for bit, on the same machine (one fixed thread
count, every random draw from one ``torch.Generator``).

Why dropout and early stopping: 60,000 characters are few for 637k
parameters. Measured on this corpus (batch 16, AdamW 1e-3, cosine), without
dropout the validation loss bottoms at 1.69 near step 1,500 and climbs to 1.82
by step 2,000 while the training loss falls to 0.69: the model memorises.
With dropout 0.2 it bottoms at 1.63 near step 2,000 and ends at 1.69. The
recipe therefore trains with dropout 0.2 for the article's 5,000 steps and
keeps the weights of the evaluation with the lowest validation loss.

The article model (``aftertrain.lm.registry``, ``data/article.pt``) is the same
run stopped early: ``stop_at`` ends training after that many steps of the
unchanged 5,000-step schedule (the learning rate is still near its peak), so
its weights are those the reference's own run had at that step (bit for bit
on one machine; evaluations draw no random numbers, so how often the run
evaluates does not matter). At :data:`ARTICLE_STEPS` the validation loss is
2.0115, the article's quality (its model: 2.0272).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from aftertrain.core.validation import check_int, check_real, check_seed, is_real
from aftertrain.lm import model as _model
from aftertrain.lm import text as _text
from aftertrain.lm.evaluation import val_loss

#: ``TrainConfig.keep``: return the weights of the best evaluation (the
#: recipe's early stopping) or of the last step run (an overfitted model).
KEEP = ("best", "last")


@dataclass(frozen=True)
class TrainConfig:
    """The recipe. Every default is the reference's (so the bundled checkpoints
    retrain to the same SHA-256); the options exist for the recipe sweep
    (docs/models.md): ``weight_decay`` 0, ``model.dropout`` 0, another peak
    ``lr``, ``grad_clip=None`` (no clipping), ``stop_below`` (stop once the
    validation loss reaches a target), ``stop_rising_to`` (stop once an
    overfitting run's validation loss has climbed back to a target) and
    ``keep="last"``."""

    steps: int = 5000
    batch_size: int = 16
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup: int = 100
    weight_decay: float = 0.1  # AdamW's decoupled decay, on 2-D weights only
    grad_clip: float | None = 1.0  # max global gradient norm; None: no clipping
    eval_every: int = 250
    seed: int = 1337
    threads: int = 2
    stop_at: int | None = None  # stop after this many steps of the `steps` schedule
    stop_below: float | None = None  # stop after the first evaluation at or below this loss
    # stop after the first evaluation at or above this loss that follows one below it
    stop_rising_to: float | None = None
    keep: str = "best"  # the weights returned: the best evaluation's, or the last step's
    model: _model.GPTConfig = field(default_factory=lambda: _model.GPTConfig(dropout=0.2))

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "warmup", "eval_every", "threads"):
            check_int(name, getattr(self, name))
        if self.stop_at is not None:
            check_int("stop_at", self.stop_at)
        check_seed(self.seed)
        for name in ("lr", "min_lr", "weight_decay"):
            check_real(name, getattr(self, name))
        if self.grad_clip is not None:
            check_real("grad_clip", self.grad_clip)

        def finite(v: object) -> bool:
            return is_real(v) and math.isfinite(v)

        checks = {
            "steps": (self.steps >= 1, ">= 1"),
            "batch_size": (self.batch_size >= 1, ">= 1"),
            "lr": (finite(self.lr) and self.lr > 0, "a finite number > 0"),
            "min_lr": (
                finite(self.min_lr) and 0 <= self.min_lr <= self.lr,
                f"a number from 0 to lr ({self.lr})",
            ),
            "warmup": (self.warmup >= 0, ">= 0"),
            "weight_decay": (finite(self.weight_decay) and self.weight_decay >= 0, "a finite number >= 0"),
            "grad_clip": (
                self.grad_clip is None or (finite(self.grad_clip) and self.grad_clip > 0),
                "a finite number > 0, or None for no clipping",
            ),
            "eval_every": (self.eval_every >= 1, ">= 1"),
            "threads": (self.threads >= 1, ">= 1"),
            "stop_at": (
                self.stop_at is None or 1 <= self.stop_at <= self.steps,
                f"None or from 1 to steps ({self.steps})",
            ),
            "stop_below": (
                self.stop_below is None or (finite(self.stop_below) and self.stop_below > 0),
                "None or a finite loss > 0",
            ),
            "stop_rising_to": (
                self.stop_rising_to is None or (finite(self.stop_rising_to) and self.stop_rising_to > 0),
                "None or a finite loss > 0",
            ),
            "keep": (self.keep in KEEP, f"one of {', '.join(KEEP)}"),
        }
        for name, (ok, allowed) in checks.items():
            if not ok:
                raise ValueError(f"{name} has an invalid value {getattr(self, name)!r}; allowed: {allowed}")
        if (
            None not in (self.stop_below, self.stop_rising_to) and self.stop_rising_to <= self.stop_below
        ):  # it could never stop the run
            raise ValueError(
                f"stop_rising_to has an invalid value {self.stop_rising_to!r}; "
                f"allowed: above stop_below ({self.stop_below!r}), which stops the "
                f"run before its validation loss can climb back to it"
            )


@dataclass(frozen=True)
class Progress:
    """One training step as :func:`train` reports it to ``on_progress``: ``step`` of ``steps``
    (the last step the run can reach: ``stop_at``, else ``steps``), that step's training loss
    (nats), the validation loss on an evaluation step (None on the others), the best validation
    loss so far (None before the first evaluation) and the seconds since the loop started."""

    step: int
    steps: int
    train_loss: float
    val_loss: float | None  # set on evaluation steps
    best_val: float | None
    elapsed: float


@dataclass(frozen=True)
class TrainResult:
    """What :func:`train` returns: ``model``, the kept state (the best validation loss's, or the
    last evaluation's with ``keep="last"``) in eval mode with dropout 0; ``best_step`` and
    ``val_loss``, that state's step and validation loss (nats); ``train_loss``, the mean
    training loss over the evaluation interval ending there; ``history``, (step, mean training
    loss, validation loss) at every evaluation; ``seconds``, the loop's wall time."""

    model: torch.nn.Module
    best_step: int
    val_loss: float
    train_loss: float  # mean over the last evaluation interval
    history: list[tuple[int, float, float]]  # (step, train loss, val loss)
    seconds: float


#: The draft GPT of speculative decoding (claim X2): one layer of width 64,
#: cheap enough to draft with, trained briefly by ``aftertrain train --draft``.
#: The reference's learning rate with dropout 0.1 reached only 2.44 nats after
#: 500 steps, so the draft trains without dropout at three times the rate:
#: 1.757 nats (best at step 1,750) in 38 s on two threads.
DRAFT_MODEL = _model.GPTConfig(n_layer=1, n_head=4, n_embd=64, dropout=0.0)
DRAFT_STEPS = 2000
DRAFT_LR = 3e-3

#: The article model: the reference recipe stopped after this many steps
#: (``aftertrain train --stop-at ARTICLE_STEPS``); see the module docstring.
ARTICLE_STEPS = 950


def draft_train_config(
    steps: int = DRAFT_STEPS, seed: int = 1337, threads: int = 2, eval_every: int = 250
) -> TrainConfig:
    """The reference recipe (optimiser, schedule, batch, seed) with the draft's
    model, steps and learning rate."""
    return TrainConfig(
        steps=steps,
        seed=seed,
        threads=threads,
        eval_every=eval_every,
        lr=DRAFT_LR,
        min_lr=DRAFT_LR / 10,
        model=DRAFT_MODEL,
    )


def learning_rate(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up, then cosine decay from ``lr`` to ``min_lr``."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * progress))


def train(
    cfg: TrainConfig = TrainConfig(),
    data: torch.Tensor | None = None,
    val: torch.Tensor | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> TrainResult:
    """Train a GPT from scratch; returns the weights with the best validation loss
    (evaluated every ``eval_every`` steps and at the last step run, ``stop_at``
    when it is set), in eval mode."""
    corpus = _text.load_corpus()
    data = corpus.train if data is None else data
    val = corpus.val if val is None else val
    T = cfg.model.block_size
    if data.numel() <= T + 1:
        raise ValueError(f"data must hold more than {T + 1} tokens, got {data.numel()}")
    threads = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    try:
        return _train(cfg, data, val, on_progress)
    finally:
        torch.set_num_threads(threads)


def _optimizer(net: torch.nn.Module, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW, the weight decay on the 2-D weights only (not on biases and norms)."""
    decay = [p for p in net.parameters() if p.dim() >= 2]
    no_decay = [p for p in net.parameters() if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=cfg.lr,
        betas=(0.9, 0.99),
        foreach=False,
    )


def _batch(
    data: torch.Tensor, T: int, batch_size: int, gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch_size`` windows of ``T`` tokens at random starts, and their
    targets (the same windows one token on)."""
    starts = torch.randint(0, data.numel() - T - 1, (batch_size,), generator=gen)
    x = torch.stack([data[s : s + T] for s in starts.tolist()])
    y = torch.stack([data[s + 1 : s + T + 1] for s in starts.tolist()])
    return x, y


def _step(net, opt, data, T: int, cfg, gen: torch.Generator, step: int) -> float:
    """One optimiser step, the ``step``-th (from 1): a batch of ``T``
    characters a row, the scheduled learning rate, the gradients clipped
    when ``cfg`` says; the batch's loss. FloatingPointError when it is not finite."""
    net.train()
    x, y = _batch(data, T, cfg.batch_size, gen)
    for group in opt.param_groups:
        group["lr"] = learning_rate(step - 1, cfg)
    logits = net(x)
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
    if not torch.isfinite(loss):
        raise FloatingPointError(f"training loss became {loss.item()} at step {step}")
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if cfg.grad_clip is not None:
        torch.nn.utils.clip_grad_norm_(net.parameters(), cfg.grad_clip)
    opt.step()
    return loss.item()


def _stops(cfg, best: float, vl: float) -> bool:
    """Whether training stops after an evaluation of validation loss ``vl``
    (``best``: the best so far, this one included): at or below
    ``cfg.stop_below``, or at or above ``cfg.stop_rising_to`` after one below it."""
    if cfg.stop_below is not None and vl <= cfg.stop_below:
        return True
    return cfg.stop_rising_to is not None and best < cfg.stop_rising_to <= vl


def _train(cfg, data, val, on_progress) -> TrainResult:
    """The training loop of :func:`train` (its arguments checked there)."""
    gen = torch.Generator().manual_seed(cfg.seed)
    with torch.random.fork_rng(devices=[]):
        # Initialisation and dropout draw from the global generator; fork it so
        # library code never changes the caller's random state.
        torch.manual_seed(cfg.seed)
        net = _model.GPT(cfg.model)
        opt = _optimizer(net, cfg)
        T = cfg.model.block_size
        best, best_step, best_state = math.inf, 0, None
        history: list[tuple[int, float, float]] = []
        recent: list[float] = []
        t0 = time.perf_counter()
        last = cfg.steps if cfg.stop_at is None else cfg.stop_at

        for step in range(1, last + 1):
            loss = _step(net, opt, data, T, cfg, gen, step)
            recent.append(loss)
            vl = None
            if step % cfg.eval_every == 0 or step == last:
                vl = val_loss(net, val)
                tl = sum(recent) / len(recent)
                recent = []
                history.append((step, tl, vl))
                if vl < best:
                    best, best_step = vl, step
                    best_state = copy.deepcopy(net.state_dict())
            if on_progress is not None:
                on_progress(
                    Progress(
                        step,
                        last,
                        loss,
                        vl,
                        None if best == math.inf else best,
                        time.perf_counter() - t0,
                    )
                )
            if vl is not None and _stops(cfg, best, vl):
                break
        assert best_state is not None, "the last step always evaluates"
        if cfg.keep == "last":  # the loop ended on an evaluation: the last step or a stop_*
            best_step, _, best = history[-1]
            best_state = net.state_dict()
        final = _model.GPT(_model.GPTConfig(**{**cfg.model.__dict__, "dropout": 0.0}))
        final.load_state_dict(best_state)
    train_at_best = next(tl for s, tl, _ in history if s == best_step)
    return TrainResult(final.eval(), best_step, best, train_at_best, history, time.perf_counter() - t0)
