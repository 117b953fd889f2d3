"""Our reference GPT converted to GPT-2 (aftertrain.lm.hf_export) and run as
a transformers model: the claims see the same model.

GPT-2 has no head bias, so the conversion folds it into the final norm's
bias (``d`` with ``W d = b``). The float model is the same function (its
loss equal to float32 rounding); a copy whose head ``W'`` is quantized or
pruned adds the constant logit shift ``s = (W' - W) d`` that ours does not
have, and a constant shift of the logits moves a log-softmax by at most
``max(s) - min(s)``: that is the representation's whole effect on a loss,
asserted here configuration by configuration.

The end-to-end test runs the claims on the converted folder in a child
pytest and compares each deterministic claim's verdict with the native
reference's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="transformers installs with the test extra on Python >= 3.11")

from aftertrain import quant as Q  # noqa: E402
from aftertrain.lm.evaluation import val_loss  # noqa: E402
from aftertrain.lm.hf_export import save_gpt2  # noqa: E402
from aftertrain.lm.registry import load_model  # noqa: E402
from aftertrain.report.document import TIMING_CLAIMS  # noqa: E402
from tests.common.inner_runs import outside_any_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

#: The float32 rounding of a loss of about 1.5 summed over 10,000 positions in
#: float64 from float32 terms: each term within 2^-24 relative of its value,
#: so the mean within 2^-24 * 10 (the largest term) = 6e-7; 1e-6 allows it.
FLOAT_LOSS_ATOL = 1e-6


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    native = load_model("reference")[0]
    folder = tmp_path_factory.mktemp("reference-gpt2")
    fold = save_gpt2(native, folder)
    return native, load_model(str(folder))[0], fold


def test_the_float_model_is_the_same_function(converted):
    native, model, _ = converted
    assert abs(val_loss(native) - val_loss(model)) <= FLOAT_LOSS_ATOL


@pytest.mark.parametrize("bits", [8, 4, 2])
@pytest.mark.parametrize("g", list(Q.Granularity), ids=lambda g: g.value)
def test_a_quantized_copy_differs_only_by_the_folded_bias_shift(converted, bits, g):
    """|loss(converted) - loss(native)| <= max(s) - min(s) + float rounding,
    s = (W'_head - W_head) d for the quantized head W' (module docstring)."""
    native, model, fold = converted
    head = native.head.weight.detach()
    s = fold.shift(Q.fake_quantize(head, bits, g))
    bound = float(s.max() - s.min()) + 2 * FLOAT_LOSS_ATOL
    gap = abs(val_loss(Q.quantized_model(native, bits, g)) - val_loss(Q.quantized_model(model, bits, g)))
    assert gap <= bound, (gap, bound)


def test_the_shift_bound_is_not_vacuous(converted):
    """Teeth: the bound of an 8-bit per-channel head (3.5e-3) is under 1% of
    the shift a conversion that dropped the bias would make (the bias's range,
    above 1), so the comparisons above would see such a conversion."""
    native, _, fold = converted
    head = native.head.weight.detach()
    s = fold.shift(Q.fake_quantize(head, 8, Q.Granularity.PER_CHANNEL))
    b = native.head.bias.detach()
    assert float(s.max() - s.min()) < 0.01 * float(b.max() - b.min())


def _ledger(tmp: Path, model: str) -> dict:
    out = tmp / f"{Path(model).name}.json"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "tests/claims_on_model",
        "-q",
        "-p",
        "no:cacheprovider",
        "--benchmark-disable",
        f"--aftertrain-model={model}",
        f"--claims-json={out}",
    ]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=os.environ.copy())
    assert out.is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    return {c["id"]: c["verdict"] for c in json.loads(out.read_text())["claims"]}


@pytest.mark.e2e
def test_the_converted_reference_gets_the_native_verdicts(converted, tmp_path, monkeypatch):
    """Every claim the claims' tests decide without a clock reads the same
    verdict on the converted folder as on our GPT (no stored baselines for
    the folder: its figures are compared above, within the fold's bound)."""
    outside_any_run(monkeypatch)
    native = _ledger(tmp_path, "reference")
    folder = tmp_path / "reference-gpt2"
    save_gpt2(converted[0], folder)
    ours = _ledger(tmp_path, str(folder))
    differ = {c: (native[c], ours[c]) for c in native if c not in TIMING_CLAIMS and native[c] != ours.get(c)}
    assert not differ, differ
