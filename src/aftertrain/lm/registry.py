"""The models the claims run on: bundled checkpoints by name, or a user's file.

Four checkpoints ship in ``aftertrain/data``:

- ``reference``: our model, trained for the recipe's full 5,000 steps
  (validation loss 1.5539, much better than the article's 2.0272);
- ``sweep-250``, ``sweep-1250``: the same run stopped after 250 and 1,250
  steps (validation loss 2.5060 and 1.8518), for the quality sweep
  (``aftertrain sweep``; see docs/models.md);
- ``article``: the same run stopped early, after 950 of the schedule's
  5,000 steps (``aftertrain train --stop-at 950``), at the article's
  quality (validation loss about 2.03; the article's model 2.0272).

:func:`load_model` accepts either name, the path of a checkpoint written
by ``aftertrain train --out PATH`` (a ``.pt`` file with its ``.pt.json``
recording its SHA-256), or a folder ``transformers`` loads offline as a
causal LM with its tokenizer (:mod:`aftertrain.lm.hf`: the model a user
ships, read with its own tokenizer and text). A checkpoint must have the
article's architecture (:data:`ARCHITECTURE`, 637,156 parameters, the
bundled vocabulary); a transformers folder any causal-LM architecture.
The model is returned with its identity (name, SHA-256, path), which the
test suite uses to pick the stored baselines and the per-model expectations
and which the claims ledger prints in its header.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from aftertrain.lm import checkpoint as _checkpoint
from aftertrain.lm import hf as _hf
from aftertrain.lm import model as _model
from aftertrain.lm import train as _train
from aftertrain.lm.checkpoint import CheckpointError

__all__ = [
    "ARCHITECTURE",
    "BUNDLED",
    "DEFAULT",
    "CheckpointError",
    "ModelIdentity",
    "bundled_path",
    "check_architecture",
    "load_model",
    "model_meta",
    "resolve",
]

#: The article's architecture, the only one the claims are defined for.
ARCHITECTURE = _model.GPTConfig()
ARCHITECTURE_PARAMETERS = 637_156

#: Steps of the sweep checkpoints (validation loss 2.5060 and 1.8518 in the
#: reference run's history; the article model is step 950, the reference 3,750).
SWEEP_STEPS = (250, 1250)

#: The command that trained the bundled ``overfit`` checkpoint (its .pt.json records it too).
OVERFIT_COMMAND = (
    "aftertrain train --threads 1 --eval-every 50 --dropout 0 --stop-rising-to 2.03 "
    "--keep last --out src/aftertrain/data/overfit.pt"
)

#: Name -> (file in aftertrain/data, the command that rebuilds it).
BUNDLED: dict[str, tuple[str, str]] = {
    "reference": (_checkpoint.REFERENCE_FILE, _checkpoint.REBUILD_HINT),
    "article": (
        "article.pt",
        f"aftertrain train --stop-at {_train.ARTICLE_STEPS} --out src/aftertrain/data/article.pt",
    ),
    # The quality sweep (aftertrain sweep): the same run stopped at 250 and 1,250 steps.
    **{
        f"sweep-{n}": (
            f"sweep-{n}.pt",
            f"aftertrain train --stop-at {n} --out src/aftertrain/data/sweep-{n}.pt",
        )
        for n in SWEEP_STEPS
    },
    # The recipe sweep's overfitted run (no dropout, last step kept once the validation loss
    # climbs back to 2.03): the one recipe that reproduces Q5, Q6 and Q7 (report/sweep.md).
    "overfit": ("overfit.pt", OVERFIT_COMMAND),
}
DEFAULT = "reference"


@dataclass(frozen=True)
class ModelIdentity:
    """Which model a run uses: ``name`` (a bundled name, or the path as
    given), the checkpoint's ``sha256`` and ``path``, and whether it is
    ``bundled`` (bundled models have stored baselines and expectations).
    For a transformers folder ``sha256`` is :func:`aftertrain.lm.hf.folder_digest`
    (its config and weight files) and ``kind`` is ``"transformers"``."""

    name: str
    sha256: str
    path: Path
    bundled: bool
    kind: str = "gpt"


def bundled_path(name: str) -> Path:
    """The file of the bundled model ``name``."""
    if name not in BUNDLED:
        raise ValueError(f"name must be one of {', '.join(BUNDLED)}, got {name!r}")
    return Path(str(resources.files("aftertrain") / "data" / BUNDLED[name][0]))


def resolve(name_or_path: str | os.PathLike) -> tuple[Path, str, bool]:
    """``(path, name, bundled)`` for a bundled name or a checkpoint path."""
    if not isinstance(name_or_path, (str, os.PathLike)) or not str(name_or_path):
        raise ValueError(
            f"name_or_path must be a bundled model name ({', '.join(BUNDLED)}) "
            f"or a checkpoint path, got {name_or_path!r}"
        )
    key = os.fspath(name_or_path)
    if key in BUNDLED:
        return bundled_path(key), key, True
    path = Path(key)
    if path.is_dir():
        if not _hf.is_model_folder(path):
            raise ValueError(
                f"name_or_path {key!r} is a folder without config.json: not a transformers model folder "
                "(config.json, the weights and the tokenizer's files)"
            )
        return path, key, False
    if not path.is_file():
        raise ValueError(
            f"name_or_path {key!r} is neither a bundled model "
            f"({', '.join(BUNDLED)}), an existing checkpoint file nor a transformers model folder"
        )
    return path, key, False


def check_architecture(net: _model.GPT, name: str = "model") -> None:
    """``ValueError`` unless ``net`` has the article's architecture."""
    if not isinstance(net, _model.GPT):
        raise ValueError(f"{name} must be an aftertrain.lm.model.GPT, got {type(net).__name__}")
    config = _model.GPTConfig(**{**net.config.__dict__, "dropout": 0.0})
    if config != ARCHITECTURE:
        raise ValueError(
            f"{name} has architecture {config}, but the claims need the article's {ARCHITECTURE}"
        )
    n = sum(p.numel() for p in net.parameters())
    if n != ARCHITECTURE_PARAMETERS:  # pragma: no cover - implied by the config
        raise ValueError(f"{name} has {n} parameters, the article's model {ARCHITECTURE_PARAMETERS}")


def load_model(
    name_or_path: str | os.PathLike = DEFAULT, text: str | os.PathLike | None = None
) -> tuple[_model.GPT | _hf.HFModel, ModelIdentity]:
    """The model (eval mode, hash-checked against its ``.json``) and its
    identity. ``ValueError`` for an unknown name, a missing file, or a model
    of another architecture; a :class:`aftertrain.lm.checkpoint.CheckpointError` (a ValueError) for a
    file that does not match its recorded SHA-256. A transformers folder
    gives an :class:`aftertrain.lm.hf.HFModel` reading ``text`` (a UTF-8
    file; default the bundled corpus) with its tokenizer; ``text`` is
    refused for our GPT, whose vocabulary is the corpus's characters."""
    path, name, bundled = resolve(name_or_path)
    if path.is_dir():
        net = _hf.load_folder(path, text)
        return net, ModelIdentity(name, _hf.folder_digest(path), path, False, "transformers")
    if text is not None:
        raise ValueError(
            f"text {os.fspath(text)!r} is only for a transformers model folder; {name!r} is our GPT, "
            "which reads the bundled corpus (its vocabulary is that corpus's characters)"
        )
    hint = BUNDLED[name][1] if bundled else None
    try:
        net = _checkpoint.load_checkpoint(path, rebuild=hint)
    except _checkpoint.CheckpointError as err:  # a ValueError naming the file and the fault
        raise _checkpoint.CheckpointError(f"name_or_path {name!r}: {err}") from None
    except Exception as err:  # unpickling, missing keys, shapes that do not fit
        raise ValueError(
            f"name_or_path {name!r} is not a checkpoint written by "
            f"`aftertrain train --out` ({type(err).__name__}: {err})"
        ) from err
    check_architecture(net, f"name_or_path {name!r}")
    return net, ModelIdentity(name, _read_meta(path)["sha256"], path, bundled)


def model_meta(name_or_path: str | os.PathLike = DEFAULT) -> dict:
    """The recorded metadata (SHA-256, losses, training command) of a model."""
    path, _, _ = resolve(name_or_path)
    return _read_meta(path)


def _read_meta(path: Path) -> dict:
    return json.loads(path.with_suffix(path.suffix + ".json").read_text())
