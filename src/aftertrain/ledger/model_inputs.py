"""The model plugin's inputs, checked and loaded: ``--aftertrain-model``
(or its environment variable), ``--aftertrain-baselines``,
``--aftertrain-text`` and ``--aftertrain-draft``
(:mod:`aftertrain.ledger.model_under_test` registers them). Every mistake is
a ``pytest.UsageError``: one line naming the option and what it allows.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def load_inputs(config: pytest.Config, env: str, text_env: str, draft_env: str):
    """``(model, identity, draft or None)`` for this run's options, each
    checked first (an empty value would silently mean the default)."""
    for dest, what in (
        ("aftertrain_model", "a bundled model, a checkpoint file or a transformers folder"),
        ("aftertrain_baselines", "a folder"),
    ):
        given = config.getoption(dest)
        if given is not None and not given.strip():  # '' would fall back to the default
            raise pytest.UsageError(f"--{dest.replace('_', '-')} must name {what}, got {given!r}")
    given = os.environ.get(env)
    if config.getoption("aftertrain_model", None) is None and given is not None and not given.strip():
        # as the option: '' would fall back to the default (a CI template's empty variable)
        raise pytest.UsageError(
            f"${env} must name a bundled model, a checkpoint file or a transformers folder, got {given!r}; "
            "unset it to run on the default, the reference"
        )
    baselines = config.getoption("aftertrain_baselines")
    if baselines and Path(baselines).exists() and not Path(baselines).is_dir():
        raise pytest.UsageError(
            f"--aftertrain-baselines {baselines} is a file; give a folder "
            "(created when a baseline is first written)"
        )
    from aftertrain.lm import registry as _models

    text, draft = (
        _path_setting(config, "aftertrain_text", text_env),
        _path_setting(config, "aftertrain_draft", draft_env),
    )
    try:
        net, ident = _models.load_model(selected(config, env), text=text)
    except (ValueError, _models.CheckpointError) as err:
        flag = "--aftertrain-text" if str(err).startswith("text") else "--aftertrain-model"
        raise pytest.UsageError(f"{flag}: {err}") from None
    return net, ident, None if draft is None else _load_draft(net, draft, text)


def selected(config: pytest.Config, env: str) -> str:
    """The model named by the option, else the environment variable ``env``, else the default."""
    from aftertrain.lm import registry as _models

    return config.getoption("aftertrain_model", None) or os.environ.get(env) or _models.DEFAULT


def _path_setting(config: pytest.Config, dest: str, env: str) -> str | None:
    """The option ``dest``, else the environment variable ``env``, else None;
    an empty value is a usage error (it would silently mean the default)."""
    given = config.getoption(dest, None)
    source = f"--{dest.replace('_', '-')}"
    if given is None:
        given, source = os.environ.get(env), f"${env}"
    if given is not None and not given.strip():
        raise pytest.UsageError(f"{source} must name a path, got {given!r}; leave it out for the default")
    return given


def _load_draft(net, draft: str, text: str | None):
    """The user's draft model (a transformers folder) checked against the model under test."""
    from aftertrain.lm import hf as _hf

    if not isinstance(net, _hf.HFModel):
        raise pytest.UsageError(
            f"--aftertrain-draft {draft}: a draft model is for a transformers model under test; "
            "our GPT's draft is the bundled draft GPT"
        )
    try:
        model = _hf.load_folder(draft, text)
        _hf.check_same_vocabulary(net, model, "--aftertrain-draft")
    except ValueError as err:
        raise pytest.UsageError(f"--aftertrain-draft: {err}") from None
    return model
