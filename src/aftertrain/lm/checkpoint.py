"""GPT checkpoints: ``NAME.pt`` (config and weights) beside ``NAME.pt.json``
(metadata with the weights' SHA-256), and the bundled reference model."""

from __future__ import annotations

import hashlib
import io
import json
import os
from dataclasses import asdict
from importlib import resources
from pathlib import Path

import torch

from aftertrain.core.io import atomic_write
from aftertrain.lm.model import GPT, GPTConfig

REFERENCE_FILE = "reference.pt"
REBUILD_HINT = "aftertrain train --out src/aftertrain/data/reference.pt"


class CheckpointError(ValueError):
    """A checkpoint is missing, corrupted, not an aftertrain checkpoint, or
    does not match its metadata (a bad ``path`` argument, hence ValueError)."""


def sha256_file(path: str | os.PathLike) -> str:
    """Hex SHA-256 of the file at ``path`` (which must be a file)."""
    if not isinstance(path, (str, os.PathLike)) or not Path(path).is_file():
        raise ValueError(f"path must name an existing file, got {path!r}")
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _meta_path(path: Path) -> Path:
    return path.with_suffix(path.suffix + ".json")


def save_checkpoint(model: GPT, path: str | os.PathLike, meta: dict) -> dict:
    """Write ``path`` (config and weights) and ``path.json`` (``meta`` plus the
    weights' SHA-256 and the config), each with :func:`aftertrain.core.io.atomic_write`,
    weights first: a crash leaves the old pair intact, or new weights whose
    hash the old metadata does not match (refused by :func:`load_checkpoint`).
    Returns the metadata written."""
    if not isinstance(model, GPT):
        raise ValueError(f"model must be an aftertrain.lm.model.GPT, got {type(model).__name__}")
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"path must be a file path, got {type(path).__name__}")
    if not isinstance(meta, dict):
        raise ValueError(f"meta must be a dict, got {type(meta).__name__}")
    bad = _non_finite(model)
    if bad:
        raise ValueError(f"model must have finite weights; {bad} holds NaN or inf")
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"path must be a file path, got the folder {path}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"path {str(path)!r}: its folder cannot be created ({err.strerror})") from None
    buffer = io.BytesIO()
    torch.save({"config": asdict(model.config), "state_dict": model.state_dict()}, buffer)
    weights = buffer.getvalue()
    meta = {**meta, "sha256": hashlib.sha256(weights).hexdigest(), "config": asdict(model.config)}
    try:
        text = json.dumps(meta, indent=2, sort_keys=True) + "\n"
    except TypeError as err:
        raise ValueError(f"meta must be JSON-serialisable: {err}") from None
    atomic_write(path, weights)
    atomic_write(_meta_path(path), text)
    return meta


def load_checkpoint(path: str | os.PathLike, rebuild: str | None = None) -> GPT:
    """A model from ``path``, checked against the SHA-256 in ``path.json``;
    returned in eval mode with dropout 0. Raises :class:`CheckpointError`
    (naming the file, and ``rebuild`` as the command that remakes it) when a
    file is missing, the hash differs, or the file is not a checkpoint that
    :func:`save_checkpoint` wrote (a plain state_dict, another shape)."""
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"path must be a file path, got {type(path).__name__}")
    if rebuild is not None and not isinstance(rebuild, str):
        raise ValueError(f"rebuild must be a command (str) or None, got {type(rebuild).__name__}")
    path = Path(path)
    hint = f"; rebuild it with `{rebuild}`" if rebuild else ""
    meta_path = _meta_path(path)
    if path.is_dir():
        raise CheckpointError(f"checkpoint path {path} is a folder, not a checkpoint file")
    if not path.is_file() or not meta_path.is_file():
        missing = path if not path.is_file() else meta_path
        raise CheckpointError(f"checkpoint file {missing} is missing{hint}")
    _check_sha256(path, meta_path, hint)
    model = _model_from(path)
    bad = _non_finite(model)
    if bad:
        raise CheckpointError(f"checkpoint {path} holds NaN or inf weights (in {bad}){hint}")
    return model.eval()


def _check_sha256(path: Path, meta_path: Path, hint: str) -> None:
    """Raise :class:`CheckpointError` unless ``meta_path`` is a JSON object
    whose ``sha256`` is the SHA-256 of ``path`` (``hint`` ends each message)."""
    try:
        meta = json.loads(meta_path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CheckpointError(
            f"checkpoint {path} is not an aftertrain checkpoint: its metadata "
            f"{meta_path} is not JSON ({err}){hint}"
        ) from None
    if not isinstance(meta, dict) or not isinstance(meta.get("sha256"), str):
        raise CheckpointError(
            f"checkpoint metadata {meta_path} must be a JSON object with a "
            f"'sha256' string (as save_checkpoint writes), got "
            f"{type(meta).__name__ if not isinstance(meta, dict) else 'no sha256'}"
            f"{hint}"
        )
    digest = sha256_file(path)
    recorded = meta["sha256"]
    if digest != recorded:
        raise CheckpointError(
            f"checkpoint {path} has SHA-256 {digest}, but {meta_path} records "
            f"{recorded}: the file is corrupted{hint}"
        )


def _model_from(path: Path) -> GPT:
    """The GPT that ``path`` holds (its config with dropout 0, its weights);
    :class:`CheckpointError` when it is no checkpoint :func:`save_checkpoint` wrote."""
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises several types for a file it cannot read
        raise CheckpointError(
            f"checkpoint {path} is not an aftertrain checkpoint: torch.load "
            f"cannot read it ({_first_line(err)})"
        ) from None
    if not isinstance(blob, dict) or not {"config", "state_dict"} <= blob.keys():
        raise CheckpointError(
            f"checkpoint {path} is not an aftertrain checkpoint: expected a dict with keys "
            f"'config' and 'state_dict' (as save_checkpoint writes), got "
            f"{sorted(blob)[:5] if isinstance(blob, dict) else type(blob).__name__}"
        )
    try:
        config = GPTConfig(**{**blob["config"], "dropout": 0.0})
        model = GPT(config)
        model.load_state_dict(blob["state_dict"])
    except (TypeError, ValueError, RuntimeError) as err:
        raise CheckpointError(
            f"checkpoint {path} is not an aftertrain checkpoint: its weights "
            f"do not match its config ({_first_line(err)})"
        ) from None
    return model


def _non_finite(model: torch.nn.Module) -> str | None:
    """The name of the first parameter of ``model`` holding NaN or inf, else None."""
    for name, param in model.named_parameters():
        if not bool(torch.isfinite(param).all()):
            return name
    return None


def _first_line(err: Exception) -> str:
    """The first informative line of a (possibly multi-line) error message."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    detail = next((ln for ln in lines if "size mismatch" in ln), lines[0] if lines else "")
    return detail[:200]


def reference_path() -> Path:
    """Where the bundled reference checkpoint lives (``data/reference.pt``)."""
    return Path(str(resources.files("aftertrain") / "data" / REFERENCE_FILE))


def reference_meta() -> dict:
    """The committed metadata of the reference model (SHA-256, losses, command)."""
    return json.loads(_meta_path(reference_path()).read_text())


def load_reference() -> GPT:
    """The bundled trained reference model, in eval mode."""
    return load_checkpoint(reference_path(), rebuild=REBUILD_HINT)
