"""The training recipe is deterministic: same seed, same weights, bit for bit."""

from __future__ import annotations

import pytest
import torch

from aftertrain.cli import main
from aftertrain.lm import train as _train


def _short(seed: int) -> _train.TrainResult:
    return _train.train(_train.TrainConfig(steps=3, eval_every=3, seed=seed, threads=1))


def _equal_weights(a, b) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_two_short_runs_with_one_seed_give_identical_weights():
    one, two = _short(5), _short(5)
    assert _equal_weights(one.model, two.model)
    assert one.val_loss == two.val_loss


def test_runs_with_different_seeds_give_different_weights():
    assert not _equal_weights(_short(5).model, _short(6).model)


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
    is evaluated."""
    kw = {"seed": 5, "threads": 1, "warmup": 1}
    cut = _train.train(_train.TrainConfig(steps=50, stop_at=4, eval_every=4, **kw))
    other = _train.train(_train.TrainConfig(steps=50, stop_at=4, eval_every=1, **kw))
    full = _train.train(_train.TrainConfig(steps=4, eval_every=4, **kw))
    assert cut.history[-1][0] == 4 and cut.best_step == 4
    assert [s for s, _, _ in other.history] == [1, 2, 3, 4]
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
    assert main(["train", "--steps", "50", "--stop-at", "3", "--threads", "1",
                 "--out", str(out)]) == 0
    meta = json.loads((tmp_path / "cut.pt.json").read_text())
    assert meta["stop_at"] == 3 and meta["best_step"] == 3 and meta["steps"] == 50
    assert "--stop-at 3" in meta["command"]
    assert main(["train", "--draft", "--stop-at", "3"]) == 2
    assert "--stop-at" in capsys.readouterr().err


@pytest.mark.parametrize("field, value", [("steps", 0), ("lr", -1.0), ("batch_size", 0),
                                          ("min_lr", 1.0), ("threads", 0)])
def test_train_config_rejects_bad_values(field, value):
    with pytest.raises(ValueError, match=field):
        _train.TrainConfig(**{field: value})


def test_cli_train_prints_progress_and_a_summary_and_writes_the_checkpoint(tmp_path, capsys):
    out = tmp_path / "tiny.pt"
    assert main(["train", "--steps", "4", "--eval-every", "2", "--threads", "1",
                 "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "step 2/4" in captured.err and "step 4/4" in captured.err
    assert "best validation loss" in captured.out and f"wrote {out}" in captured.out
    from aftertrain.lm.checkpoint import load_checkpoint

    load_checkpoint(out)


def test_cli_sample_is_repeatable_for_a_seed(capsys):
    assert main(["sample", "--prompt", "x = ", "--length", "30", "--seed", "3"]) == 0
    first = capsys.readouterr().out
    assert main(["sample", "--prompt", "x = ", "--length", "30", "--seed", "3"]) == 0
    assert capsys.readouterr().out == first
    assert first.startswith("x = ") and len(first.rstrip("\n")) >= 4


def test_cli_sample_reports_a_prompt_outside_the_vocabulary(capsys):
    assert main(["sample", "--prompt", "naïve"]) == 2
    assert "'ï' at position 2" in capsys.readouterr().err
