"""The figures of the Q4, Q7 and Q10 tables computed a second way on a tiny
GPT: the losses with weights fake-quantized by torch's own
``fake_quantize_per_tensor_affine`` / ``fake_quantize_per_channel_affine``
(symmetric, zero point 0, scale max|w| / qmax, codes in [-qmax-1, qmax]),
each penalty as that loss minus the float32 loss, the weight ranges in
numpy float64, and the activation peaks from inputs recorded by hooks written
here. The claims' tests compare these tables with stored baselines; these
pin each figure to its definition."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from aftertrain.experiments import quant as EQ
from aftertrain.lm.evaluation import val_loss
from aftertrain.lm.model import GPT
from aftertrain.quant import Granularity
from tests.common.toys import tiny_gpt

#: The tolerance of a loss against torch's fake quantization: torch multiplies
#: by 1 / scale where ours divides, so a weight at an exact half step can take
#: the other code; on this model that moves the loss by far less than 1e-4.
LOSS_TOL = 1e-4


@pytest.fixture(scope="module")
def model() -> GPT:
    return tiny_gpt(11, n_layer=3)


@pytest.fixture(scope="module")
def tokens() -> torch.Tensor:
    return torch.randint(0, 100, (200,), generator=torch.Generator().manual_seed(2))


def torch_quantized(model, bits: int, per_channel: bool, names=None):
    qmax = 2 ** (bits - 1) - 1
    out = copy.deepcopy(model)
    with torch.no_grad():
        for name, p in out.named_parameters():
            if p.dim() != 2 or (names is not None and name not in names):
                continue
            if per_channel:
                scale = p.abs().amax(dim=1) / qmax
                p.copy_(
                    torch.fake_quantize_per_channel_affine(
                        p, scale, torch.zeros(p.shape[0], dtype=torch.int32), 0, -qmax - 1, qmax
                    )
                )
            else:
                p.copy_(
                    torch.fake_quantize_per_tensor_affine(p, float(p.abs().max()) / qmax, 0, -qmax - 1, qmax)
                )
    return out


def test_bits_rows_are_the_losses_of_torch_fake_quantized_models(model, tokens):
    rows = EQ.bits_table(model, (8, 4, 2), tokens)
    assert [r.bits for r in rows] == [8, 4, 2]
    for r in rows:
        assert r.per_tensor == pytest.approx(
            val_loss(torch_quantized(model, r.bits, False), tokens), abs=LOSS_TOL
        )
        assert r.per_channel == pytest.approx(
            val_loss(torch_quantized(model, r.bits, True), tokens), abs=LOSS_TOL
        )
    assert rows[-1].per_tensor != pytest.approx(rows[-1].per_channel, abs=10 * LOSS_TOL)


def test_sensitivity_rows_are_one_matrix_losses_minus_the_float_loss(model, tokens):
    names = ["tok.weight", "blocks.1.f1.weight", "head.weight"]
    rows = EQ.sensitivity_table(model, 2, Granularity.PER_CHANNEL, tokens, names=names)
    base = val_loss(model, tokens)
    assert sorted(r.name for r in rows) == sorted(names)
    for r in rows:
        loss = val_loss(torch_quantized(model, 2, True, {r.name}), tokens)
        assert r.loss == pytest.approx(loss, abs=LOSS_TOL)
        assert r.penalty == pytest.approx(loss - base, abs=LOSS_TOL)
    assert [r.penalty for r in rows] == sorted((r.penalty for r in rows), reverse=True)


def test_weight_ranges_are_max_over_median_of_row_ranges(model):
    """Per matrix max / median of the rows' max|w| (numpy, float64); the worst
    is the largest of those and the median their median, exactly."""
    got = EQ.weight_range_ratios(model)
    expected = {}
    for name, p in model.named_parameters():
        if p.dim() == 2:
            r = p.detach().abs().amax(dim=1).double().numpy()
            expected[name] = float(r.max() / np.median(r))
    assert got.matrices == pytest.approx(expected, rel=1e-12)
    assert got.worst == max(got.matrices.values())
    assert got.median == float(np.median(list(got.matrices.values())))


def test_activation_peaks_are_max_over_median_of_channel_peaks(model, tokens):
    """The inputs of blocks.0.f1, blocks.2.f1 and ln recorded by hooks here,
    over the windows of the context length; per channel max|x|, then max and
    max / median (numpy)."""
    seen: dict[str, list[np.ndarray]] = {}
    sites = {"block0_ffn_input": "blocks.0.f1", "block2_ffn_input": "blocks.2.f1", "final_residual": "ln"}
    modules = dict(model.named_modules())
    handles = [
        modules[m].register_forward_pre_hook(
            lambda _m, args, s=s: seen.setdefault(s, []).append(
                args[0].detach().double().reshape(-1, args[0].shape[-1]).numpy()
            )
        )
        for s, m in sites.items()
    ]
    try:
        with torch.no_grad():
            for start in range(0, len(tokens), 32):
                model(tokens[start : start + 32].view(1, -1))
    finally:
        for h in handles:
            h.remove()
    got = EQ.activation_channel_ratios(model, tokens)
    assert set(got) == set(sites)
    for site, xs in seen.items():
        peak = np.abs(np.concatenate(xs)).max(axis=0)
        assert got[site].max == pytest.approx(peak.max(), rel=1e-6)
        assert got[site].ratio == pytest.approx(peak.max() / np.median(peak), rel=1e-6)


@pytest.mark.teeth
@pytest.mark.parametrize("bug", ["floor_rounding", "wrong_axis", "ignores_granularity", "mean_scale"])
def test_fake_quantized_loss_check_catches_a_broken_quantizer(model, tokens, bug):
    """A broken rule moves a 4-bit loss by more than LOSS_TOL from torch's."""
    from tests.common import quant_bugs

    (row,) = EQ.bits_table(model, (4,), tokens, quantize=quant_bugs.model_quantizer(getattr(quant_bugs, bug)))
    gaps = (
        abs(row.per_tensor - val_loss(torch_quantized(model, 4, False), tokens)),
        abs(row.per_channel - val_loss(torch_quantized(model, 4, True), tokens)),
    )
    assert max(gaps) > LOSS_TOL, gaps


@pytest.mark.parametrize(
    ("n_layer", "want"),
    [
        (3, {"block0_ffn_input": "blocks.0.f1", "block2_ffn_input": "blocks.2.f1", "final_residual": "ln"}),
        (
            12,
            {"block0_ffn_input": "blocks.0.f1", "block11_ffn_input": "blocks.11.f1", "final_residual": "ln"},
        ),
        (1, {"block0_ffn_input": "blocks.0.f1", "final_residual": "ln"}),
    ],
)
def test_activation_sites_are_the_first_and_last_ffn_input_and_the_final_norm(n_layer, want):
    """Q10's sites on our GPT: the article's three for three blocks, the
    last block's index in its key, one block's input once."""
    assert EQ.activation_sites(tiny_gpt(0, n_layer=n_layer)) == want


def test_activation_sites_of_a_llama_are_its_gate_inputs_and_final_norm():
    """On a transformers Llama (built here, random weights): the first and
    last decoder layer's gate_proj (the MLP's first matrix) and model.norm."""
    transformers = pytest.importorskip("transformers", reason="transformers: the test extra")
    config = transformers.LlamaConfig(
        vocab_size=50,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=16,
    )
    torch.manual_seed(0)  # a test-local model; the library never seeds
    llama = transformers.LlamaForCausalLM(config).eval()
    assert EQ.activation_sites(llama) == {
        "block0_ffn_input": "model.layers.0.mlp.gate_proj",
        "block1_ffn_input": "model.layers.1.mlp.gate_proj",
        "final_residual": "model.norm",
    }
