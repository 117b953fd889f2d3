"""What a fresh training run starts from, pinned to recorded values.

Every other training test compares runs with each other (same seed, same
weights), so a change to the initialisation or to the optimiser's first
steps that applies to both sides passes them. Here the recipe's initial
weights (per parameter: mean and standard deviation) and the first 8 steps
of the smallest recipe (the draft GPT's: one layer of width 64) are
compared with figures stored in ``baselines/recipe/``.

Stored on one machine, compared on every other (AVX2, AVX-512, arm64,
torch's generic kernels): the initial statistics are those of the recipe's
float32 draws, compared within the bound one draw can move between kernel
paths (``tolerances.NORMAL_DRAW_ULPS``); the first steps are recomputed in
float64 from float64 draws, where every kernel path gives the same figures
to far below ``tolerances.FIRST_STEPS_FLOAT64_RTOL`` (in float32 the draws
themselves differ between paths and 8 Adam steps carry that into the
updates: 1.7e-6 relative on an AVX2 machine against the AVX-512 one).

The stored files change only through the explicit regeneration command
``python -m pytest tests/lm/test_train_first_steps.py --force-regen``
(pytest-regressions; a normal run never writes them), to be run and
committed when a change to the recipe is deliberate. They do not depend on
the model the claims run on, so unlike ``baselines/<model>/`` they are
compared on every run, whatever ``--aftertrain-model`` says.
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

import pytest
import torch

from aftertrain.core import tolerances as TOL
from aftertrain.lm import train as _train
from aftertrain.lm.model import GPT

RECIPE = Path(__file__).resolve().parents[2] / "baselines" / "recipe"
#: Steps pinned: enough for Adam's second moment and the clip to matter
#: (betas (0.9, 0.999) moves step 8's loss by 8e-5, amsgrad the update's L1
#: by 4e-4 relative), few enough to run in a fraction of a second.
STEPS = 8

#: Initial weights: the statistics of float32 draws, each draw within
#: NORMAL_DRAW_ULPS of itself on every kernel path (derivation in
#: aftertrain.core.tolerances).
INIT_TOLERANCE = {"mean": dict(atol=TOL.INIT_MEAN_ATOL, rtol=0), "std": dict(atol=0, rtol=TOL.INIT_STD_RTOL)}

#: The first steps' losses and norms, recomputed in float64 (derivation of
#: FIRST_STEPS_FLOAT64_RTOL there); every optimiser change tried moves them
#: by >= 3e-4 relative (betas, amsgrad, eps, clipping, the learning rate).
STEPS_TOLERANCE = dict(atol=0, rtol=TOL.FIRST_STEPS_FLOAT64_RTOL)


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
            pytest.fail(
                f"stored baseline {path} is missing; create it deliberately with "
                "`python -m pytest tests/lm/test_train_first_steps.py --force-regen` and commit it"
            )
        fixture.check(columns, fullpath=path, **tolerances)

    return check


def _initial_state(cfg: _train.TrainConfig) -> dict[str, torch.Tensor]:
    """The weights ``train(cfg)`` starts from: the GPT built from the global
    generator seeded with ``cfg.seed`` (forked, so the caller's state stays),
    in torch's default dtype."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        return {k: v.clone() for k, v in GPT(cfg.model).state_dict().items()}


@contextlib.contextmanager
def float64_default():
    """Parameters built, drawn and trained in float64 while active."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def _draft_recipe() -> _train.TrainConfig:
    """The draft recipe, stopped after STEPS steps of its schedule (the
    warm-up's learning rates), one thread, the last step's weights."""
    return dataclasses.replace(
        _train.draft_train_config(threads=1), stop_at=STEPS, eval_every=STEPS, keep="last"
    )


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
    recipe_regression(
        {k: v for k, v in rows.items() if k in ("mean", "std")}, "init.csv", tolerances=INIT_TOLERANCE
    )


def _first_steps(cfg: _train.TrainConfig):
    """(training loss per step, the run's result, its initial weights) of
    ``cfg`` trained in float64."""
    from aftertrain.lm.text import load_corpus

    losses: list[float] = []
    with float64_default():
        start = _initial_state(cfg)
        result = _train.train(
            cfg, val=load_corpus().val[:600], on_progress=lambda p: losses.append(p.train_loss)
        )
    assert next(iter(result.model.parameters())).dtype == torch.float64
    return losses, result, start


@pytest.fixture(scope="module")
def first_steps():
    """The draft recipe's first STEPS steps in float64 (_first_steps)."""
    return _first_steps(_draft_recipe())


def test_first_training_losses_match_the_recorded_ones(first_steps, recipe_regression):
    """The draft recipe's training loss at steps 1..8 and the validation
    loss on 600 characters after step 8, in float64, within
    FIRST_STEPS_FLOAT64_RTOL (1e-9 relative). Step 1 is the initial model's
    loss on the first batch; the later ones follow the optimiser (a warm-up
    off by one step moves step 2 by 4e-3, no clipping step 3 by 5e-5, betas
    (0.9, 0.999) step 8 by 8e-5: all >= 1e-5 relative)."""
    losses, result, _ = first_steps
    assert len(losses) == STEPS
    recipe_regression(
        {
            "loss": [*losses, result.val_loss],
            "step": [float(s) for s in range(1, STEPS + 1)] + [float("nan")],
        },
        "draft_first_steps.csv",
        default_tolerance=STEPS_TOLERANCE,
    )


def test_first_updates_match_the_recorded_norms(first_steps, recipe_regression):
    """Per parameter after 8 steps: the L1 norm of the update ``sum |w8 -
    w0|`` (what Adam's steps, the clip and the learning rates did) and the
    squared norm ``sum w8^2`` (what weight decay, on 2-D weights only,
    shrinks), from the float64 run, within FIRST_STEPS_FLOAT64_RTOL."""
    recipe_regression(_norms(first_steps), "draft_first_updates.csv", default_tolerance=STEPS_TOLERANCE)


def _norms(steps) -> dict[str, list[float]]:
    """Per parameter: ``sum |w_end - w0|`` and ``sum w_end^2`` (float64)."""
    _, result, start = steps
    end = result.model.state_dict()
    return {
        "update_l1": [float((end[n].double() - w0.double()).abs().sum()) for n, w0 in start.items()],
        "squared": [float(end[n].double().square().sum()) for n in start],
    }


#: Recipe changes the float64 comparison must see (each moves some norm by
#: >= 3e-4 relative, 3e5 times the tolerance).
CHANGES = {
    "a learning rate 1% off": lambda c: dataclasses.replace(c, lr=c.lr * 1.01),
    "no gradient clipping": lambda c: dataclasses.replace(c, grad_clip=None),
    "one more step": lambda c: dataclasses.replace(c, stop_at=STEPS + 1, eval_every=STEPS + 1),
    "another seed": lambda c: dataclasses.replace(c, seed=c.seed + 1),
}


@pytest.mark.teeth
@pytest.mark.parametrize("change", CHANGES)
def test_first_updates_check_catches_a_changed_recipe(change, recipe_regression, request):
    """The stored norms are not so loosely compared that a real change of
    the recipe passes: each change in CHANGES fails the comparison. Not
    while regenerating (--force-regen would store the changed recipe)."""
    if request.config.getoption("force_regen") or request.config.getoption("regen_all"):
        pytest.skip("regenerating the stored files: a changed recipe must not be written")
    steps = _first_steps(CHANGES[change](_draft_recipe()))
    with pytest.raises(AssertionError):
        recipe_regression(_norms(steps), "draft_first_updates.csv", default_tolerance=STEPS_TOLERANCE)
