"""The training recipe is deterministic: same seed, same weights, bit for bit."""

from __future__ import annotations

import json
import math

import pytest
import torch

from aftertrain.cli import main
from aftertrain.lm import model as _model
from aftertrain.lm import train as _train


def _val_tokens() -> torch.Tensor:
    from aftertrain.lm.text import load_corpus

    return load_corpus().val[:600]  # a short split: these runs test the recipe, not the model


#: A one-layer GPT for the tests of the schedule and the seeding, which do not
#: depend on the model's size (each step costs about 1/40 of the article's).
TINY = _model.GPTConfig(block_size=32, n_layer=1, n_head=2, n_embd=32, dropout=0.2)


def _short(seed: int) -> _train.TrainResult:
    return _train.train(
        _train.TrainConfig(steps=3, eval_every=3, seed=seed, threads=1, batch_size=2, model=TINY),
        val=_val_tokens(),
    )


def _equal_weights(a, b) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.fixture(scope="module")
def seed5_runs() -> tuple[_train.TrainResult, _train.TrainResult]:
    """Two independent short runs with seed 5."""
    return _short(5), _short(5)


def test_two_short_runs_with_one_seed_give_identical_weights(seed5_runs):
    one, two = seed5_runs
    assert _equal_weights(one.model, two.model)
    assert one.val_loss == two.val_loss


def test_runs_with_different_seeds_give_different_weights(seed5_runs):
    assert not _equal_weights(seed5_runs[0].model, _short(6).model)


def test_training_leaves_the_callers_random_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    _short(5)
    assert torch.equal(torch.rand(3), expected)


def test_learning_rate_warms_up_then_decays_to_min_lr():
    cfg = _train.TrainConfig(steps=1000, warmup=100, lr=1e-3, min_lr=1e-4)
    assert _train.learning_rate(0, cfg) == pytest.approx(1e-5)
    assert _train.learning_rate(99, cfg) == pytest.approx(1e-3)
    assert _train.learning_rate(999, cfg) == pytest.approx(1e-4, rel=1e-3)


def test_stop_at_is_the_full_run_cut_short_and_evaluations_do_not_change_it():
    """The article model's recipe: ``stop_at`` runs the first steps of the
    unchanged schedule; the weights after them do not depend on how often the
    run evaluates (evaluation draws no random numbers), and the last step run
    is evaluated. Scored on a short split with a tiny GPT: none of this
    depends on their sizes."""
    kw = {"seed": 5, "threads": 1, "warmup": 1, "batch_size": 2, "model": TINY}
    cut, other, full = (
        _train.train(_train.TrainConfig(**cfg, **kw), val=_val_tokens())
        for cfg in (
            {"steps": 50, "stop_at": 4, "eval_every": 4},
            {"steps": 50, "stop_at": 4, "eval_every": 1},
            {"steps": 4, "eval_every": 4},
        )
    )
    assert cut.history[-1][0] == 4 and cut.best_step == 4
    assert [s for s, _, _ in other.history] == [1, 2, 3, 4]
    assert _equal_weights(other.model, cut.model), "evaluating every step changed the weights"
    assert other.history[-1][2] == cut.val_loss
    # a 4-step schedule decays the learning rate faster after warm-up: other weights
    assert not _equal_weights(cut.model, full.model)


@pytest.mark.parametrize("stop_at", [0, 51])
def test_stop_at_outside_the_schedule_is_refused(stop_at):
    with pytest.raises(ValueError, match="stop_at"):
        _train.TrainConfig(steps=50, stop_at=stop_at)


def test_cli_stop_at_records_itself_and_refuses_the_draft(tmp_path, capsys):
    import json

    out = tmp_path / "cut.pt"
    assert main(["train", "--steps", "50", "--stop-at", "3", "--threads", "1", "--out", str(out)]) == 0
    meta = json.loads((tmp_path / "cut.pt.json").read_text())
    assert meta["stop_at"] == 3 and meta["best_step"] == 3 and meta["steps"] == 50
    assert "--stop-at 3" in meta["command"]
    assert main(["train", "--draft", "--stop-at", "3"]) == 2
    assert "--stop-at" in capsys.readouterr().err


@pytest.mark.parametrize(
    "field, value", [("steps", 0), ("lr", -1.0), ("batch_size", 0), ("min_lr", 1.0), ("threads", 0)]
)
def test_train_config_rejects_bad_values(field, value):
    with pytest.raises(ValueError, match=field):
        _train.TrainConfig(**{field: value})


def test_cli_train_prints_progress_and_a_summary_and_writes_the_checkpoint(tmp_path, capsys):
    out = tmp_path / "tiny.pt"
    assert main(["train", "--steps", "4", "--eval-every", "2", "--threads", "1", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "step 2/4" in captured.err and "step 4/4" in captured.err
    assert "best validation loss" in captured.out and f"wrote {out}" in captured.out
    from aftertrain.lm.checkpoint import load_checkpoint

    load_checkpoint(out)
    meta = json.loads(out.with_suffix(".pt.json").read_text())
    step, train_loss, val_loss = next(h for h in meta["history"] if h[0] == meta["best_step"])
    assert (meta["train_loss"], meta["val_loss"]) == (train_loss, val_loss)
    assert f"best validation loss {val_loss:.4f}" in captured.out


def test_cli_sample_is_repeatable_for_a_seed(capsys):
    assert main(["sample", "--prompt", "x = ", "--length", "30", "--seed", "3"]) == 0
    first = capsys.readouterr().out
    assert main(["sample", "--prompt", "x = ", "--length", "30", "--seed", "3"]) == 0
    assert capsys.readouterr().out == first
    assert first.startswith("x = ") and len(first.rstrip("\n")) >= 4


def test_cli_sample_reports_a_prompt_outside_the_vocabulary(capsys):
    assert main(["sample", "--prompt", "naïve"]) == 2
    assert "'ï' at position 2" in capsys.readouterr().err


# --- the recipe options (the recipe sweep): each does what it says, defaults unchanged ---


def _run(**kw) -> _train.TrainResult:
    cfg = {"steps": 1, "eval_every": 1, "seed": 5, "threads": 1, "warmup": 0, "batch_size": 4, **kw}
    return _train.train(_train.TrainConfig(**cfg), val=_val_tokens())


def _initial_weights(cfg: _train.TrainConfig) -> dict[str, torch.Tensor]:
    # train() initialises the GPT from the global generator seeded with cfg.seed.
    from aftertrain.lm.model import GPT

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        return {k: v.clone() for k, v in GPT(cfg.model).state_dict().items()}


def test_the_defaults_are_the_reference_recipe():
    """The bundled checkpoints were trained with these values; changing one
    would make `aftertrain train` no longer retrain them to their SHA-256."""
    cfg = _train.TrainConfig()
    assert (
        cfg.steps,
        cfg.batch_size,
        cfg.lr,
        cfg.min_lr,
        cfg.warmup,
        cfg.weight_decay,
        cfg.grad_clip,
        cfg.eval_every,
        cfg.seed,
        cfg.threads,
        cfg.stop_at,
        cfg.stop_below,
        cfg.stop_rising_to,
        cfg.keep,
        cfg.model.dropout,
    ) == (5000, 16, 1e-3, 1e-4, 100, 0.1, 1.0, 250, 1337, 2, None, None, None, "best", 0.2)


def test_weight_decay_shrinks_only_2d_weights_by_lr_times_decay():
    """AdamW's decoupled decay: after one step from the same initial weights
    w0 (same batch, dropout and gradients), the run with decay d ends
    ``lr * d * w0`` below the run without on every 2-D weight, and equal on
    the 1-D ones (biases, LayerNorm). Tolerance: float32 rounding of weights
    of size ~0.1 (1e-6 absolute)."""
    lr, d = 1e-2, 5.0
    decayed, plain = _run(lr=lr, min_lr=0.0, weight_decay=d), _run(lr=lr, min_lr=0.0, weight_decay=0.0)
    w0 = _initial_weights(_train.TrainConfig(seed=5))
    a, b = decayed.model.state_dict(), plain.model.state_dict()
    for name, p in a.items():
        if p.dim() >= 2 and name in dict(decayed.model.named_parameters()):
            torch.testing.assert_close(b[name] - p, lr * d * w0[name], rtol=0, atol=1e-6)
        else:
            assert torch.equal(p, b[name]), name


def test_dropout_zero_trains_without_dropout():
    """With dropout 0 the training forward pass is the eval forward pass: the
    first step's training loss equals the initial model's loss on the first
    batch in eval mode, bit for bit (the same operations); with the default
    dropout 0.2 it does not (4.65434 against 4.65394 at seed 5)."""
    import torch.nn.functional as F

    from aftertrain.lm.model import GPT, GPTConfig
    from aftertrain.lm.text import load_corpus

    data, cfg = load_corpus().train, _train.TrainConfig(seed=5)
    starts = torch.randint(0, data.numel() - 129, (4,), generator=torch.Generator().manual_seed(5))
    x = torch.stack([data[s : s + 128] for s in starts.tolist()])
    y = torch.stack([data[s + 1 : s + 129] for s in starts.tolist()])
    net = GPT(GPTConfig())
    net.load_state_dict(_initial_weights(cfg))
    expected = F.cross_entropy(net.eval()(x).view(-1, 100), y.view(-1)).item()
    assert _run(model=GPTConfig(dropout=0.0)).history[0][1] == expected
    assert _run().history[0][1] != expected


def test_no_gradient_clipping_is_a_clip_that_never_binds():
    """grad_clip=None leaves the gradient alone: the same weights as a clip
    at 1e9 (scale factor exactly 1), other weights than the default clip at
    1.0 (the first step's gradient norm is above 1 at seed 5)."""
    none = _run(grad_clip=None).model
    assert _equal_weights(none, _run(grad_clip=1e9).model)
    assert not _equal_weights(none, _run(grad_clip=1.0).model)


#: 8 steps at lr 0.1 without warm-up overshoot: the best evaluation is step 2
#: (validation 6.10; 10.64 at step 4, 8.05 at step 8).
OVERSHOOT = {"steps": 8, "lr": 0.1}


@pytest.fixture(scope="module")
def overshoot() -> _train.TrainResult:
    return _run(**OVERSHOOT)


def test_stop_below_stops_at_the_first_evaluation_at_or_below_the_target(overshoot):
    full = overshoot
    losses = [v for _, _, v in full.history]
    target = losses[1]  # step 1 scores above it, so the run stops after step 2
    first = next(i for i, v in enumerate(losses) if v <= target)
    assert first == 1
    cut = _run(**OVERSHOOT, stop_below=target)
    assert cut.history == full.history[: first + 1]
    assert cut.best_step == full.history[first][0]


def test_stop_rising_to_stops_when_the_loss_climbs_back_to_the_target(overshoot):
    """The overshooting run's validation loss falls to its best at step 2
    and climbs above step 1's at step 3: with that as the target the run
    stops there, and with --keep last returns step 3's weights."""
    losses = [v for _, _, v in overshoot.history]
    assert losses[1] < losses[0] <= losses[2]
    cut = _run(**OVERSHOOT, stop_rising_to=losses[0], keep="last")
    assert cut.history == overshoot.history[:3] and cut.best_step == 3


def test_keep_last_returns_the_last_step_not_the_best_evaluation(overshoot):
    """The best evaluation of the overshooting run is step 2, so keeping the
    last step gives other weights; they are those of a run whose only
    evaluation is the last step."""
    best = overshoot
    last = _run(**OVERSHOOT, keep="last")
    only_last = _run(**OVERSHOOT, eval_every=8)
    assert best.best_step == 2 and last.best_step == 8
    assert _equal_weights(last.model, only_last.model)
    assert not _equal_weights(last.model, best.model)
    assert last.val_loss == last.history[-1][2]


@pytest.mark.parametrize(
    "field, value",
    [
        ("weight_decay", -0.1),
        ("weight_decay", math.nan),
        ("grad_clip", 0.0),
        ("grad_clip", -1.0),
        ("lr", math.inf),
        ("stop_below", 0.0),
        ("stop_below", math.nan),
        ("stop_rising_to", -1.0),
        ("keep", "first"),
    ],
)
def test_recipe_options_reject_bad_values_naming_what_is_allowed(field, value):
    with pytest.raises(ValueError, match=rf"{field} (has an invalid value .*; allowed: |must be a finite)"):
        _train.TrainConfig(**{field: value})


def test_cli_recipe_options_reach_the_recipe_and_are_recorded(tmp_path):
    import json

    out = tmp_path / "variant.pt"
    assert (
        main(
            [
                "train",
                "--steps",
                "50",
                "--stop-at",
                "2",
                "--eval-every",
                "2",
                "--threads",
                "1",
                "--lr",
                "3e-3",
                "--weight-decay",
                "0",
                "--dropout",
                "0",
                "--no-grad-clip",
                "--keep",
                "last",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    recipe = json.loads((tmp_path / "variant.pt.json").read_text())["recipe"]
    assert recipe == {
        "lr": 3e-3,
        "min_lr": 1e-4,
        "warmup": 100,
        "weight_decay": 0.0,
        "dropout": 0.0,
        "grad_clip": None,
        "batch_size": 16,
        "stop_below": None,
        "stop_rising_to": None,
        "keep": "last",
        "last_step": 2,
    }


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["--lr", "-1"], "--lr"),
        (["--lr", "nan"], "--lr"),
        (["--dropout", "1"], "--dropout"),
        (["--weight-decay", "-0.1"], "--weight-decay"),
        (["--grad-clip", "0"], "--grad-clip"),
        (["--grad-clip", "1", "--no-grad-clip"], "--no-grad-clip"),
        (["--min-lr", "0.01"], "--min-lr"),
        (["--lr", "1e-5"], "--min-lr"),
        (["--stop-below", "0"], "--stop-below"),
        (["--stop-rising-to", "inf"], "--stop-rising-to"),
        (["--keep", "first"], "--keep"),
        (["--draft", "--dropout", "0"], "--dropout"),
    ],
)
def test_cli_refuses_bad_recipe_options_in_one_line(argv, flag, capsys):
    """Before any training: exit status 2 (argparse's own or a usage error) and
    one line naming the flag."""
    try:
        code = main(["train", *argv])
    except SystemExit as stop:
        code = stop.code
    err = capsys.readouterr().err
    assert code == 2
    assert flag in err and len(err.strip().splitlines()) == 1, err


def test_each_evaluations_train_loss_is_the_mean_of_the_steps_since_the_last_one():
    """history's train loss at an evaluation is the mean of the training
    losses of the steps since the evaluation before (each step's own loss,
    as the progress callback reports it), not of every step so far."""
    seen = []
    result = _train.train(
        _train.TrainConfig(steps=6, eval_every=2, seed=5, threads=1, warmup=0, batch_size=4),
        val=_val_tokens(),
        on_progress=seen.append,
    )
    losses = [p.train_loss for p in seen]
    assert len(losses) == 6 and len(set(losses)) == 6  # distinct, so the means tell apart
    assert [(s, tl) for s, tl, _ in result.history] == [
        (2, pytest.approx(sum(losses[0:2]) / 2, rel=1e-12)),
        (4, pytest.approx(sum(losses[2:4]) / 2, rel=1e-12)),
        (6, pytest.approx(sum(losses[4:6]) / 2, rel=1e-12)),
    ]
