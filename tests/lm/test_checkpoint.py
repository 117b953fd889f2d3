"""Guards on checkpoints (each pins a rule one plausible slip would break; docs/mutation.md): a
checkpoint whose weights miss a tensor is refused, even when its metadata's
SHA-256 matches the file (the hash proves the file is intact, not complete)."""

from __future__ import annotations

import hashlib
import json

import pytest
import torch

from aftertrain.lm.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from tests.common.toys import toy_gpt


def _rewrite_weights(path, edit) -> None:
    """Apply ``edit`` to the saved blob and record the new file's hash, as a
    tool that rewrote the checkpoint honestly would."""
    blob = torch.load(path, weights_only=True)
    edit(blob)
    torch.save(blob, path)
    meta_path = path.with_suffix(path.suffix + ".json")
    meta = json.loads(meta_path.read_text())
    meta["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    meta_path.write_text(json.dumps(meta))


@pytest.mark.parametrize("drop", ["lm_head", "first", "last"])
def test_a_checkpoint_missing_a_tensor_is_refused(tmp_path, drop):
    path = tmp_path / "m.pt"
    save_checkpoint(toy_gpt(100, seed=0), path, {"note": "guard"})
    keys = list(torch.load(path, weights_only=True)["state_dict"])
    name = {"first": keys[0], "last": keys[-1]}.get(drop) or next(k for k in keys if "head" in k)
    _rewrite_weights(path, lambda blob: blob["state_dict"].pop(name))
    with pytest.raises(CheckpointError, match="not an aftertrain checkpoint"):
        load_checkpoint(path)


def test_an_intact_rewritten_checkpoint_still_loads_with_equal_weights(tmp_path):
    """The control of the test above: rewriting without a change loads, and
    the weights are the saved ones (so the refusal is about the missing tensor)."""
    model = toy_gpt(100, seed=0)
    path = tmp_path / "m.pt"
    save_checkpoint(model, path, {})
    _rewrite_weights(path, lambda blob: None)
    loaded = load_checkpoint(path)
    for (k, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items(), strict=True):
        assert torch.equal(a, b), k


def test_the_recorded_hash_and_config_are_the_files_whatever_the_callers_meta_says(tmp_path):
    """A caller's meta that carries stale ``sha256`` and ``config`` keys (say,
    copied from another checkpoint's metadata) does not override them: the
    written metadata holds the file's own hash and the model's config, and
    the checkpoint loads."""
    model = toy_gpt(100, seed=0)
    path = tmp_path / "m.pt"
    meta = save_checkpoint(model, path, {"sha256": "0" * 64, "config": {"n_layer": 99}, "note": "kept"})
    written = json.loads(path.with_suffix(".pt.json").read_text())
    assert written["sha256"] == meta["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert written["config"]["n_layer"] == model.config.n_layer and written["note"] == "kept"
    load_checkpoint(path)
