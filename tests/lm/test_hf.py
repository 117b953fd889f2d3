"""A transformers folder as the model under test (aftertrain.lm.hf): the
cache and its rollback, the Conv1D matrices as (out, in), the text, the
identity, and every refusal of bad input. Tiny random models are written
offline in a temporary folder; nothing is downloaded."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

transformers = pytest.importorskip(
    "transformers", reason="transformers installs with the test extra on Python >= 3.11"
)

from aftertrain.lm import hf  # noqa: E402
from aftertrain.lm import text as _text  # noqa: E402
from aftertrain.lm.anatomy import anatomy  # noqa: E402
from aftertrain.lm.registry import load_model  # noqa: E402

V, WINDOW = 300, 64


def _tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=V - 20, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([_text.load_corpus().train_text[:20_000]], trainer)
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A Llama (rotary, RMSNorm, gated MLP) and a GPT-2 (Conv1D, learned positions), both random."""
    torch.manual_seed(0)
    tok = _tokenizer()
    made = {
        "llama": transformers.LlamaForCausalLM(
            transformers.LlamaConfig(
                vocab_size=V,
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=2,
                max_position_embeddings=WINDOW,
            )
        ),
        "gpt2": transformers.GPT2LMHeadModel(
            transformers.GPT2Config(vocab_size=V, n_embd=32, n_layer=2, n_head=4, n_positions=WINDOW)
        ),
    }
    out = {}
    for name, model in made.items():
        folder = tmp_path_factory.mktemp(name)
        model.save_pretrained(folder)
        tok.save_pretrained(folder)
        out[name] = folder
    return out


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_cached_rounds_with_rollbacks_equal_one_forward(folders, arch):
    """Prefill 20, feed 10, roll back to 25, feed 15: every kept position's
    logits equal the whole sequence's forward to float32 rounding of a
    32-wide model (1e-5 is 100 float32 ulps of logits of order 1), and the
    cache holds 40 positions."""
    model = hf.load_folder(folders[arch])
    ids = model.text.val[:40][None]
    full = model(ids)
    cache = model.new_cache()
    a = model(ids[:, :20], cache)
    b = model(ids[:, 20:30], cache)
    cache.truncate(25)
    c = model(ids[:, 25:40], cache)
    got = torch.cat([a, b[:, :5], c], dim=1)
    assert cache.length == 40 and got.dtype == torch.float32
    assert float((got - full).abs().max()) <= 1e-5


def test_a_rollback_that_drops_one_position_too_many_is_caught(folders):
    """Teeth of the test above: a cache truncated one short gives other logits."""
    model = hf.load_folder(folders["llama"])
    ids = model.text.val[:31][None]
    full = model(ids)[0, -1]
    cache = model.new_cache()
    model(ids[:, :30], cache)
    cache.truncate(29)
    wrong = model(ids[:, 30:31], cache)[0, -1]  # reads position 30 as 29
    assert float((wrong - full).abs().max()) > 1e-3


def test_an_uncroppable_cache_rereads_the_kept_tokens(folders, monkeypatch):
    """An architecture whose cache cannot be cropped (sliding windows) drops
    it on rollback and re-reads the kept tokens: the same logits."""
    model = hf.load_folder(folders["llama"])
    ids = model.text.val[:30][None]
    full = model(ids)
    cache = model.new_cache()
    model(ids[:, :20], cache)
    monkeypatch.setattr(type(cache.kv), "is_croppable", property(lambda self: False))
    cache.truncate(12)
    assert cache.kv is None and cache.length == 12
    again = model(ids[:, 12:30], cache)
    assert float((again - full[:, 12:30]).abs().max()) <= 1e-5 and cache.length == 30


def test_conv1d_matrices_are_linear_out_by_in_with_the_same_function(folders):
    """GPT-2's Conv1D (weight (in, out)) becomes nn.Linear (out, in): the
    loaded model computes transformers' own logits to float32 rounding."""
    model = hf.load_folder(folders["gpt2"])
    raw = transformers.AutoModelForCausalLM.from_pretrained(folders["gpt2"], local_files_only=True).eval()
    ids = model.text.val[:50][None]
    with torch.no_grad():
        want = raw(input_ids=ids).logits
    assert float((model(ids) - want).abs().max()) <= 1e-5
    c_fc = dict(model.named_parameters())["hf.transformer.h.0.mlp.c_fc.weight"]
    assert c_fc.shape == (4 * 32, 32)  # (out, in)
    assert isinstance(model.hf.transformer.h[0].mlp.c_fc, torch.nn.Linear)


def test_the_text_is_the_corpus_through_the_models_tokenizer(folders):
    model = hf.load_folder(folders["llama"])
    corpus = _text.load_corpus()
    assert model.text.source == "the bundled corpus"
    assert model.tokenizer.decode(model.text.val.tolist()) == corpus.val_text
    assert (
        model.text.train.tolist() == model.tokenizer(corpus.train_text, add_special_tokens=False)["input_ids"]
    )
    assert hf.model_text(model) is model.text
    assert (
        hf.encode_text(model, "The ").tolist()
        == model.tokenizer("The ", add_special_tokens=False)["input_ids"]
    )
    assert hf.prompt_of(load_model()[0], "The ") == "The "  # our GPT takes the string


def test_a_users_text_file_is_split_six_sevenths_to_one(folders, tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text("x" * 600 + "y" * 100, encoding="utf-8")
    model = hf.load_folder(folders["llama"], path)
    assert model.text.train_text == "x" * 600 and model.text.val_text == "y" * 100
    assert "mine.txt" in model.text.source


def test_identity_is_the_digest_of_config_and_weights_only(folders, tmp_path):
    """Same config and weights, another tokenizer file: the same identity;
    one weight byte changed: another."""
    copy = tmp_path / "copy"
    shutil.copytree(folders["llama"], copy)
    first = hf.folder_digest(copy)
    (copy / "tokenizer_config.json").write_text(
        json.dumps({**json.loads((copy / "tokenizer_config.json").read_text()), "x": 1})
    )
    assert hf.folder_digest(copy) == first
    weights = copy / "model.safetensors"
    raw = bytearray(weights.read_bytes())
    raw[-1] ^= 1
    weights.write_bytes(bytes(raw))
    assert hf.folder_digest(copy) != first
    net, ident = load_model(str(folders["llama"]))
    assert ident.kind == "transformers" and ident.sha256 == hf.folder_digest(folders["llama"])
    assert not ident.bundled and isinstance(net, hf.HFModel)


def test_the_roles_are_found_by_structure(folders):
    llama = anatomy(hf.load_folder(folders["llama"]))
    assert llama.embeddings == ("hf.model.embed_tokens.weight",)
    assert llama.head == "hf.lm_head.weight"
    assert llama.first_ffn_input == "hf.model.layers.0.mlp.gate_proj"
    assert llama.last_ffn_input == "hf.model.layers.1.mlp.gate_proj"
    assert llama.final_norm == "hf.model.norm"
    gpt2 = anatomy(hf.load_folder(folders["gpt2"]))
    assert gpt2.embeddings == ("hf.transformer.wte.weight", "hf.transformer.wpe.weight")
    assert gpt2.first_ffn_input == "hf.transformer.h.0.mlp.c_fc"
    assert gpt2.last_block_norm == "hf.transformer.h.1.ln_2" and gpt2.final_norm == "hf.transformer.ln_f"


def test_a_draft_of_another_vocabulary_or_tokenizer_is_refused(folders, tmp_path):
    model = hf.load_folder(folders["llama"])
    hf.check_same_vocabulary(model, hf.load_folder(folders["gpt2"]))  # same tokenizer, same size
    other = tmp_path / "other"
    shutil.copytree(folders["gpt2"], other)
    cfg = json.loads((other / "config.json").read_text())
    transformers.GPT2LMHeadModel(transformers.GPT2Config(**{**cfg, "vocab_size": V + 8})).save_pretrained(
        other
    )
    with pytest.raises(ValueError, match=f"draft scores {V + 8} tokens, the model under test {V}"):
        hf.check_same_vocabulary(model, hf.load_folder(other))


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda d, f: d / "missing", "is not a transformers model folder"),
        (lambda d, f: (d / "empty").mkdir() or d / "empty", "is not a transformers model folder"),
        (
            lambda d, f: (shutil.copytree(f, d / "notok"), [p.unlink() for p in (d / "notok").glob("tok*")])[
                0
            ],
            "has no tokenizer transformers can load",
        ),
        (
            lambda d, f: (
                shutil.copytree(f, d / "big"),
                (d / "big" / "config.json").write_text(
                    json.dumps({**json.loads((f / "config.json").read_text()), "vocab_size": 100})
                ),
            )[0],
            "tokenizer has .* tokens but the model scores 100",
        ),
    ],
    ids=["missing", "no config", "no tokenizer", "tokenizer larger than the model"],
)
def test_bad_folders_get_one_clear_error(folders, tmp_path, make, match):
    with pytest.raises(ValueError, match=match):
        hf.load_folder(make(tmp_path, folders["llama"]))


def test_the_registry_names_a_folder_without_config(tmp_path):
    with pytest.raises(ValueError, match="is a folder without config.json"):
        load_model(str(tmp_path))


def test_a_text_file_is_refused_for_our_gpt_and_when_unreadable(folders, tmp_path):
    with pytest.raises(ValueError, match="only for a transformers model folder"):
        load_model("reference", text=tmp_path / "t.txt")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff" * 200)
    with pytest.raises(ValueError, match="is not UTF-8"):
        hf.load_folder(folders["llama"], bad)
    short = tmp_path / "short.txt"
    short.write_text("abc")
    with pytest.raises(ValueError, match="at least 100 needed"):
        hf.load_folder(folders["llama"], short)
    with pytest.raises(ValueError, match="does not exist"):
        hf.load_folder(folders["llama"], tmp_path / "nope.txt")
