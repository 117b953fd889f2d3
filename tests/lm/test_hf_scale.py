"""The claims on a model ten times the reference's size (6.5 M parameters:
a Llama-style model of width 320 and 5 blocks, the llama-bpe fixture's
512-id tokenizer), written offline with seeded random weights: the run of
the default run on it ends with a verdict or a stated reason for
every claim and no error. Its wall time is what the default run's budget
(10 minutes on a 2-core machine) is measured against; a time is reported,
never asserted (a shared runner's load is not the code's).

Heavier than the default run: marked ``slow`` (``pytest -m slow
tests/lm/test_hf_scale.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip(
    "transformers", reason="transformers installs with the test extra on Python >= 3.11"
)

from aftertrain.lm.hf import load_folder  # noqa: E402
from aftertrain.lm.registry import ARCHITECTURE_PARAMETERS  # noqa: E402
from tests.common.inner_runs import outside_any_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "src" / "aftertrain" / "data" / "llama-bpe"


def build_ten_times(folder: Path) -> int:
    """Write the 10x model into ``folder``; its parameter count."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=512,
        hidden_size=320,
        intermediate_size=864,
        num_hidden_layers=5,
        num_attention_heads=5,
        num_key_value_heads=5,
        max_position_embeddings=256,
        tie_word_embeddings=False,
    )
    model = transformers.LlamaForCausalLM(config)
    model.save_pretrained(folder)
    transformers.AutoTokenizer.from_pretrained(FIXTURE, local_files_only=True).save_pretrained(folder)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.slow
def test_the_claims_run_on_a_ten_times_model(tmp_path, monkeypatch):
    folder = tmp_path / "ten-times"
    n = build_ten_times(folder)
    assert 9 <= n / ARCHITECTURE_PARAMETERS <= 11, n
    assert load_folder(folder).config.vocab_size == 512
    outside_any_run(monkeypatch)
    out = tmp_path / "ledger.json"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]  # the default run, every claim
    cmd += [f"--aftertrain-model={folder}", f"--claims-json={out}"]
    start = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=os.environ.copy())
    wall = time.monotonic() - start
    print(f"the claims on a {n:,}-parameter model: {wall:.0f} s wall, exit {done.returncode}")
    assert done.returncode == 0, done.stdout[-4000:]
    claims = json.loads(out.read_text())["claims"]
    assert {c["verdict"] for c in claims} <= {
        "holds",
        "does not reproduce",
        "inconclusive",
        "not decided here",
        "skipped",
        "not covered",
    }
