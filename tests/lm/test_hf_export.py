"""aftertrain.lm.hf_export: the reference GPT as a transformers GPT-2 folder.

The logits oracle: the converted model and ours compute the same real
function (the head's bias folded into ``ln_f.bias``), so in float32 each
differs from the exact logits by its own float32 rounding, and from each
other by at most the sum of the two plus the fold's storage rounding. The
float32 rounding noise of the computation is measured, not guessed: our
model's float32 logits against its own float64 evaluation
(``noise = max |ours32 - ours64|``; about 1.6e-5 on logits up to 23, ten
float32 ulps at that size). GPT-2 runs the same operations in another order,
so its rounding is a realisation of the same size; the tolerance allows each
of the two three times that noise (``6 * noise``) plus
:attr:`HeadBiasFold.rounding_bound`. In float64 the same argument leaves
only the fold's storage rounding: the noise shrinks by
``u64 / u32 = 2**-29``.
"""

from __future__ import annotations

import copy
import string

import pytest
import torch

transformers = pytest.importorskip(
    "transformers", reason="transformers is only installed on Python >= 3.11 (the test extra)"
)

from aftertrain.lm import hf_export as H  # noqa: E402
from aftertrain.lm import text as T  # noqa: E402
from aftertrain.lm.checkpoint import load_reference  # noqa: E402

#: Windows of 128 positions of the validation text scored by the logits tests.
WINDOWS = 4
#: The tolerance's allowance per model, in units of the measured float32 noise.
NOISE_FACTOR = 3


@pytest.fixture(scope="module")
def reference():
    """The reference GPT (float32, eval) and ``WINDOWS`` validation windows."""
    net = load_reference().float().eval()
    val = T.load_corpus().val
    x = torch.stack([val[i * 128 : (i + 1) * 128] for i in range(WINDOWS)])
    return net, x


@pytest.fixture(scope="module")
def ours(reference):
    """Our logits in float32 and float64, and float32's noise between them."""
    net, x = reference
    with torch.no_grad():
        l32 = net(x)
        l64 = copy.deepcopy(net).double()(x)
    noise = float((l32.double() - l64).abs().max())
    assert noise > 0, "float32 and float64 logits agree bit for bit: the noise estimate is void"
    return l32, l64, noise


def logit_gap(convert, reference, ours, cache: bool = False) -> tuple[float, float]:
    """``(max |converted - ours|, tolerance)`` in float32 for a converter
    ``convert(net) -> GPT2LMHeadModel``; with ``cache`` the converted model
    reads each window in two halves through transformers' cache."""
    net, x = reference
    l32, _, noise = ours
    model = convert(net)
    with torch.no_grad():
        if cache:
            first = model(x[:, :64], use_cache=True)
            rest = model(x[:, 64:], cache=first.cache, use_cache=True)
            theirs = torch.cat([first.logits, rest.logits], dim=1)
        else:
            theirs = model(x).logits
    fold = H.fold_head_bias(net.head.weight, net.head.bias, net.ln.bias)
    tolerance = 2 * NOISE_FACTOR * noise + fold.rounding_bound
    return float((theirs - l32).abs().max()), tolerance


@pytest.mark.parametrize("cache", [False, True], ids=["whole", "cached"])
def test_converted_reference_logits_match_ours_within_float32_noise(reference, ours, cache):
    """On 4 windows of the validation text, the GPT-2's logits are ours up to
    float32 rounding (the module docstring derives the tolerance), read
    whole or in two halves through the cache."""
    gap, tolerance = logit_gap(H.to_gpt2, reference, ours, cache=cache)
    assert gap <= tolerance, f"max logit gap {gap:.3g} exceeds float32 noise tolerance {tolerance:.3g}"


def test_converted_logits_in_float64_differ_only_by_the_folded_bias_rounding(reference, ours):
    """In float64 the two models differ by the float32 storage of
    ``ln.bias + d`` (bounded by ``rounding_bound``) and float64 noise
    (float32's noise scaled by ``2**-29``, allowed three times per model)."""
    net, x = reference
    _, l64, noise = ours
    model = H.to_gpt2(net).double()
    with torch.no_grad():
        gap = float((model(x).logits - l64).abs().max())
    fold = model.aftertrain_head_fold
    tolerance = fold.rounding_bound + 2 * NOISE_FACTOR * noise * 2.0**-29
    assert gap <= tolerance, f"float64 logit gap {gap:.3g} exceeds the fold's rounding bound {tolerance:.3g}"


def _broken(bug: str):
    """A converter with one mapping bug."""

    def convert(net):
        state, _ = H.gpt2_state_dict(net)
        config = H.gpt2_config(net)
        if bug == "head bias dropped":
            state["transformer.ln_f.bias"] = net.ln.bias.detach().clone()
        elif bug == "gelu_new":
            config.activation_function = "gelu_new"
        elif bug == "qkv reshaped, not transposed":
            for i in range(net.config.n_layer):
                w = net.blocks[i].qkv.weight.detach()
                state[f"transformer.h.{i}.attn.c_attn.weight"] = w.reshape(w.shape[1], w.shape[0])
        model = transformers.GPT2LMHeadModel(config)
        model.load_state_dict(state, strict=True)
        return model.eval()

    return convert


@pytest.mark.teeth
@pytest.mark.parametrize("bug", ["head bias dropped", "gelu_new", "qkv reshaped, not transposed"])
def test_logit_match_catches_conversion_bugs(reference, ours, bug):
    """Each broken converter's logits leave the float32 tolerance."""
    gap, tolerance = logit_gap(_broken(bug), reference, ours)
    assert gap > tolerance, f"{bug}: gap {gap:.3g} within tolerance {tolerance:.3g}"


def test_fold_shift_of_a_quantized_head_is_within_its_cauchy_schwarz_bound(reference):
    """With the head weight rounded to int8 per row (scale = max |row| / 127),
    the folded model's logits move from the unfolded quantized model's by
    exactly ``(W' - W) d`` (up to float64 rounding), within
    ``max_r ||(W' - W)_r||_2 ||d||_2``; and that bound is at most
    ``sqrt(n_embd) * max scale / 2 * ||d||_2``."""
    net, x = reference
    W = net.head.weight.detach().double()
    scale = W.abs().amax(dim=1, keepdim=True) / 127
    Wq = (W / scale).round() * scale
    fold = H.fold_head_bias(net.head.weight, net.head.bias, net.ln.bias)
    shift = fold.shift(Wq)
    bound = fold.bound(Wq)
    assert float(shift.abs().max()) <= bound
    assert bound <= (128**0.5) * float(scale.max()) / 2 * fold.d_norm
    h = torch.randn(5, 128, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    unfolded = h @ Wq.T + net.head.bias.double()
    folded = (h + fold.d) @ Wq.T
    assert torch.allclose(folded - unfolded, shift.expand(5, -1), rtol=0, atol=1e-12)


def test_char_tokenizer_ids_are_text_encode_on_the_corpus_and_round_trip():
    """The tokenizer's ids on both splits are lm.text.encode's; decoding
    gives the text back, with no space inserted between characters."""
    tok = H.char_tokenizer()
    corpus = T.load_corpus()
    for split in (corpus.train_text, corpus.val_text):
        ids = tok(split)["input_ids"]
        assert ids == T.encode(split).tolist()
        assert tok.decode(ids) == split
    assert tok.decode(T.encode(string.printable).tolist()) == string.printable
    assert len(tok) == T.VOCAB_SIZE


def test_char_tokenizer_refuses_a_character_outside_the_vocabulary():
    with pytest.raises(Exception, match="UNK"):
        H.char_tokenizer()("caf\u00e9")


def test_saved_folder_loads_offline_and_gives_the_same_logits(reference, tmp_path):
    """save_gpt2 writes a folder AutoModelForCausalLM and AutoTokenizer load
    with local_files_only=True; the loaded model's logits are to_gpt2's bit
    for bit (same weights, same code); a second save replaces the folder and
    leaves no temporary beside it."""
    net, x = reference
    folder = tmp_path / "gpt2-char"
    fold = H.save_gpt2(net, folder)
    assert fold.d_norm > 0
    H.save_gpt2(net, folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpt2-char"]
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in folder.iterdir()}
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, local_files_only=True).eval()
    tok = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    assert model.config.activation_function == "gelu" and model.config.vocab_size == 100
    text = T.load_corpus().val_text[:128]
    assert tok(text)["input_ids"] == T.encode(text).tolist() and tok.decode(tok(text)["input_ids"]) == text
    with torch.no_grad():
        assert torch.equal(model(x).logits, H.to_gpt2(net)(x).logits)


def test_bad_inputs_raise_value_errors_naming_the_argument(reference, tmp_path):
    net, _ = reference
    with pytest.raises(ValueError, match="net must be"):
        H.to_gpt2("reference")
    with pytest.raises(ValueError, match="changed_weight must be"):
        H.fold_head_bias(net.head.weight, net.head.bias, net.ln.bias).bound(torch.zeros(3, 3))
    with pytest.raises(ValueError, match="weight must be"):
        H.fold_head_bias(torch.zeros(200, 128), torch.zeros(200), torch.zeros(128))
    with pytest.raises(ValueError, match="rank below"):
        H.fold_head_bias(torch.zeros(100, 128), torch.ones(100), torch.zeros(128))
    with pytest.raises(ValueError, match="bias must be"):
        H.fold_head_bias(net.head.weight, torch.zeros(3), net.ln.bias)
    with pytest.raises(ValueError, match="does not exist"):
        H.save_gpt2(net, tmp_path / "missing" / "folder")


def test_fold_rounding_bound_and_shift_bound_are_their_formulas_on_a_hand_example():
    """W = [[1, 0, 0], [0, 1, 0]], c = (3, 4): d = (3, 4, 0), ||d|| = 5. With
    the LayerNorm's bias b = (1, 0, 5), b + d = (4, 4, 5): the rounding bound
    is max_r ||W_r|| * u ||b + d|| = 2**-24 * sqrt(57). A head changed by
    (0.3, 0.4, 0) in its first row (row norm 0.5, column norms at most 0.4)
    moves that logit by 0.3 * 3 + 0.4 * 4 = 2.5, which the row bound
    0.5 * ||d|| = 2.5 meets exactly (the row is parallel to d). Float64
    throughout: 1e-12 relative is far above its rounding."""
    W = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    fold = H.fold_head_bias(W, torch.tensor([3.0, 4.0]), torch.tensor([1.0, 0.0, 5.0]))
    assert fold.d.tolist() == pytest.approx([3.0, 4.0, 0.0], rel=1e-12, abs=1e-12)
    assert fold.rounding_bound == pytest.approx(2.0**-24 * 57**0.5, rel=1e-12)
    changed = W + torch.tensor([[0.3, 0.4, 0.0], [0.0, 0.0, 0.0]])
    assert fold.shift(changed).tolist() == pytest.approx([2.5, 0.0], rel=1e-6, abs=1e-12)
    assert fold.bound(changed) == pytest.approx(2.5, rel=1e-6)
