"""What a fresh training run starts from, pinned to recorded values.

Every other training test compares runs with each other (same seed, same
weights), so a change to the initialisation or to the optimiser's first
steps that applies to both sides passes them. Here the recipe's initial
weights (per parameter: mean and standard deviation) and the first 8 steps
of the smallest recipe (the draft GPT's: one layer of width 64) are
compared with figures stored in ``baselines/recipe/``.

The stored files change only through the explicit regeneration command
``python -m pytest tests/lm/test_train_first_steps.py --force-regen``
(pytest-regressions; a normal run never writes them), to be run and
committed when a change to the recipe is deliberate. They do not depend on
the model the claims run on, so unlike ``baselines/<model>/`` they are
compared on every run, whatever ``--aftertrain-model`` says.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from aftertrain.core.tolerances import LOSS_ATOL
from aftertrain.lm import train as _train
from aftertrain.lm.model import GPT

RECIPE = Path(__file__).resolve().parents[2] / "baselines" / "recipe"
#: Steps pinned: enough for Adam's second moment and the clip to matter
#: (betas (0.9, 0.999) moves step 8's loss by 8e-5, amsgrad the update's L1
#: by 4e-4 relative), few enough to run in a fraction of a second.
STEPS = 8

#: Initial weights are the generator's draws, the same bits on every run;
#: their float64 statistics are only subject to float64 summation order.
#: 1e-9 (absolute on a mean ~1e-4, relative on a std ~0.02) is far above that
#: and far below what another seed (means move ~1e-4) or another std moves.
INIT_TOLERANCE = {"mean": dict(atol=1e-9, rtol=0), "std": dict(atol=0, rtol=1e-9)}

#: The update's L1 norm and the weights' squared norm after STEPS steps:
#: measured to move 8e-9 relative between 1, 2 and 4 threads (float32
#: summation order); 1e-6 relative is 100x that, and below every optimiser
#: change tried (>= 3e-4 relative for betas, amsgrad, eps, clipping).
WEIGHTS_RTOL = 1e-6


@pytest.fixture
def recipe_regression(lazy_datadir, original_datadir, request):
    """``check(columns, file_name, **tolerances)``: pytest-regressions'
    num_regression against ``baselines/recipe/<file_name>``; a missing file
    fails without being written unless ``--force-regen`` is given."""
    from pytest_regressions.num_regression import NumericRegressionFixture

    fixture = NumericRegressionFixture(lazy_datadir, original_datadir, request)
    regen = request.config.getoption("force_regen") or request.config.getoption("regen_all")

    def check(columns: dict, file_name: str, **tolerances) -> None:
        path = RECIPE / file_name
        if not path.is_file() and not regen:
            pytest.fail(f"stored baseline {path} is missing; create it deliberately with "
                        "`python -m pytest tests/lm/test_train_first_steps.py --force-regen` and commit it")
        fixture.check(columns, fullpath=path, **tolerances)

    return check


def _initial_state(cfg: _train.TrainConfig) -> dict[str, torch.Tensor]:
    """The weights ``train(cfg)`` starts from: the GPT built from the global
    generator seeded with ``cfg.seed`` (forked, so the caller's state stays)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        return {k: v.clone() for k, v in GPT(cfg.model).state_dict().items()}


def _draft_recipe() -> _train.TrainConfig:
    """The draft recipe, stopped after STEPS steps of its schedule (the
    warm-up's learning rates), one thread, the last step's weights."""
    return dataclasses.replace(_train.draft_train_config(threads=1), stop_at=STEPS,
                               eval_every=STEPS, keep="last")


def test_initial_weights_match_the_recorded_statistics(recipe_regression):
    """Per parameter of the reference recipe's GPT and of the draft's, from
    each recipe's seed: mean and standard deviation (float64). Catches
    another init std or distribution, another seed or order of
    construction, a bias or LayerNorm no longer zero / one. The rows are in
    the state dict's order, reference then draft (38 rows)."""
    rows = {"recipe": [], "parameter": [], "mean": [], "std": []}
    for recipe, cfg in (("reference", _train.TrainConfig()), ("draft", _draft_recipe())):
        for name, w in _initial_state(cfg).items():
            w = w.double()
            rows["recipe"].append(recipe)
            rows["parameter"].append(name)
            rows["mean"].append(float(w.mean()))
            rows["std"].append(float(w.std()) if w.numel() > 1 else 0.0)
    recipe_regression({k: v for k, v in rows.items() if k in ("mean", "std")}, "init.csv",
                      tolerances=INIT_TOLERANCE)


@pytest.fixture(scope="module")
def first_steps():
    """(training loss per step, the run's result, its initial weights)."""
    from aftertrain.lm.text import load_corpus

    cfg = _draft_recipe()
    losses: list[float] = []
    result = _train.train(cfg, val=load_corpus().val[:600],
                          on_progress=lambda p: losses.append(p.train_loss))
    return losses, result, _initial_state(cfg)


def test_first_training_losses_match_the_recorded_ones(first_steps, recipe_regression):
    """The draft recipe's training loss at steps 1..8 and the validation
    loss on 600 characters after step 8, within LOSS_ATOL (1e-5 nats:
    measured to move at most 4.8e-7, one float32 ulp, between thread
    counts). Step 1 is the initial model's loss on the first batch; the
    later ones follow the optimiser (a warm-up off by one step moves step 2
    by 4e-3, no clipping step 3 by 5e-5, betas (0.9, 0.999) step 8 by 8e-5)."""
    losses, result, _ = first_steps
    assert len(losses) == STEPS
    recipe_regression({"loss": [*losses, result.val_loss],
                       "step": [float(s) for s in range(1, STEPS + 1)] + [float("nan")]},
                      "draft_first_steps.csv", default_tolerance=dict(atol=LOSS_ATOL, rtol=0))


def test_first_updates_match_the_recorded_norms(first_steps, recipe_regression):
    """Per parameter after 8 steps: the L1 norm of the update ``sum |w8 -
    w0|`` (what Adam's steps, the clip and the learning rates did) and the
    squared norm ``sum w8^2`` (what weight decay, on 2-D weights only,
    shrinks), both float64, within 1e-6 relative (WEIGHTS_RTOL)."""
    _, result, start = first_steps
    end = result.model.state_dict()
    update, squared = [], []
    for name, w0 in start.items():
        update.append(float((end[name].double() - w0.double()).abs().sum()))
        squared.append(float(end[name].double().square().sum()))
    recipe_regression({"update_l1": update, "squared": squared}, "draft_first_updates.csv",
                      default_tolerance=dict(atol=0, rtol=WEIGHTS_RTOL))
