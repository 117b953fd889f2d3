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
    assert not ident.bundled and isinstance(net, hf.HFModel) and not net.training and not net.hf.training


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


# --- Guards of the transformers campaign's survivors (docs/mutation.md) ---------------------------


def test_two_rollbacks_in_a_row_crop_from_what_the_cache_holds(folders):
    """Prefill 30, roll back to 25 then to 22 with no forward between, feed
    8: the logits are the whole sequence's (tolerance as in the rounds test
    above). The second crop must start from the 25 positions the first left."""
    model = hf.load_folder(folders["llama"])
    ids = model.text.val[:30][None]
    full = model(ids)
    cache = model.new_cache()
    model(ids[:, :30], cache)
    cache.truncate(25)
    cache.truncate(22)
    again = model(ids[:, 22:30], cache)
    assert cache.length == 30 and float((again - full[:, 22:30]).abs().max()) <= 1e-5


def test_the_window_is_the_models_positions_capped_at_max_window(folders, tmp_path):
    """64 positions give a window of 64; a model of 2,048 positions (the
    same rotary Llama, its config widened) is read in windows of MAX_WINDOW."""
    assert hf.load_folder(folders["gpt2"]).config.block_size == WINDOW
    wide = tmp_path / "wide"
    shutil.copytree(folders["llama"], wide)
    cfg = json.loads((wide / "config.json").read_text())
    (wide / "config.json").write_text(json.dumps({**cfg, "max_position_embeddings": 2048}))
    assert hf.load_folder(wide).config.block_size == hf.MAX_WINDOW == 1024


class _WithBos:
    """The model's tokenizer, adding a BOS (id 0) when asked for special
    tokens, as Llama's does (transformers' default is to ask)."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        ids = self.inner(text, add_special_tokens=False)["input_ids"]
        return {"input_ids": ([0] if add_special_tokens else []) + ids}


def test_encode_text_asks_the_tokenizer_for_no_special_tokens(folders):
    """A prompt is the text's own ids: no BOS in front, whatever the
    tokenizer adds by default."""
    model = hf.load_folder(folders["llama"])
    plain = model.tokenizer("The ", add_special_tokens=False)["input_ids"]
    model.tokenizer = _WithBos(model.tokenizer)
    assert hf.encode_text(model, "The ").tolist() == plain
    assert hf.prompt_of(model, "The ").tolist() == plain


def test_identity_covers_pytorch_bin_weights_and_needs_a_weight_file(folders, tmp_path):
    """A folder whose weights are a pytorch_model.bin: one byte of it
    changed changes the identity. A folder with config.json alone has none (ValueError)."""
    binary = tmp_path / "bin"
    shutil.copytree(folders["gpt2"], binary)
    model = transformers.AutoModelForCausalLM.from_pretrained(binary, local_files_only=True)
    (binary / "model.safetensors").unlink()
    torch.save(model.state_dict(), binary / "pytorch_model.bin")  # transformers' older weight format
    first = hf.folder_digest(binary)
    raw = bytearray((binary / "pytorch_model.bin").read_bytes())
    raw[-1] ^= 1
    (binary / "pytorch_model.bin").write_bytes(bytes(raw))
    assert hf.folder_digest(binary) != first
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(folders["gpt2"] / "config.json", bare)
    with pytest.raises(ValueError, match="has no config.json and weight files to identify it by"):
        hf.folder_digest(bare)


def test_a_tokenizer_one_token_larger_than_the_model_is_refused(folders, tmp_path):
    """The model scores len(tokenizer) - 1 tokens: the last id has no logit."""
    n = len(hf.load_folder(folders["llama"]).tokenizer)
    short = tmp_path / "short"
    shutil.copytree(folders["llama"], short)
    cfg = json.loads((short / "config.json").read_text())
    (short / "config.json").write_text(json.dumps({**cfg, "vocab_size": n - 1}))
    with pytest.raises(ValueError, match=f"the tokenizer has {n} tokens but the model scores {n - 1}"):
        hf.load_folder(short)


def test_a_model_that_is_not_a_causal_lm_is_refused_as_such(folders, tmp_path):
    """A DistilBERT config (an encoder, absent from AutoModelForCausalLM's
    mapping) beside a tokenizer: refused for what it is, before any weight."""
    enc = tmp_path / "encoder"
    shutil.copytree(folders["llama"], enc)
    transformers.DistilBertConfig(vocab_size=V, dim=32, n_layers=1, n_heads=4, hidden_dim=64).save_pretrained(
        enc
    )
    with pytest.raises(ValueError, match="holds a 'distilbert' model, which is not a causal LM"):
        hf.load_folder(enc)


def test_a_mixture_of_experts_is_refused_before_its_weights_load(folders, tmp_path, monkeypatch):
    """A Mixtral (its experts one (experts, 2 x intermediate, hidden)
    tensor) beside a tokenizer: refused naming the 3-D weight and its shape,
    built on the meta device, before transformers reads a weight file."""
    moe = tmp_path / "moe"
    shutil.copytree(folders["llama"], moe)
    for f in moe.glob("*.safetensors"):
        f.unlink()
    transformers.MixtralConfig(
        vocab_size=V,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_local_experts=4,
        max_position_embeddings=WINDOW,
    ).save_pretrained(moe)
    (moe / "model.safetensors").write_bytes(b"not read")

    def no_weights(*args, **kwargs):
        raise AssertionError("the weights were read")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_weights)
    with pytest.raises(
        ValueError, match=r"weight 'model\.layers\.0\.mlp\.experts\.gate_up_proj' has shape \(4, 128, 32\)"
    ):
        hf.load_folder(moe)


def _swapped_tokenizer(tokenizer):
    """``tokenizer`` with the ids of two of its tokens exchanged: the same
    size, another vocabulary (4 token/id pairs differ: each token's old and new)."""
    from tokenizers import Tokenizer

    spec = json.loads(tokenizer.backend_tokenizer.to_str())
    vocab = spec["model"]["vocab"]
    a, b = sorted(vocab, key=vocab.get)[100:102]
    vocab[a], vocab[b] = vocab[b], vocab[a]
    return transformers.PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(json.dumps(spec)))


def test_a_draft_whose_tokenizer_has_the_same_size_but_other_ids_is_refused(folders):
    model, draft = hf.load_folder(folders["llama"]), hf.load_folder(folders["gpt2"])
    draft.tokenizer = _swapped_tokenizer(draft.tokenizer)
    assert len(draft.tokenizer) == len(model.tokenizer)
    with pytest.raises(ValueError, match=r"draft's tokenizer differs from the model's \(4 token/id pairs"):
        hf.check_same_vocabulary(model, draft)


def test_the_final_norm_is_the_last_outside_the_blocks():
    """BLOOM normalizes its embeddings before the blocks
    (``word_embeddings_layernorm``) and after them (``ln_f``): the final
    norm is the one after."""
    torch.manual_seed(0)
    bloom = transformers.BloomForCausalLM(
        transformers.BloomConfig(vocab_size=V, hidden_size=32, n_layer=2, n_head=4)
    ).eval()
    roles = anatomy(bloom)
    assert roles.final_norm == "transformer.ln_f"
    assert roles.last_block_norm == "transformer.h.1.post_attention_layernorm"
    assert roles.first_ffn_input == "transformer.h.0.mlp.dense_h_to_4h"


def test_a_transformers_targets_table_drafts_are_fitted_on_its_training_split_in_its_window(folders):
    """The bigram and the n-gram of a transformers target: the tables
    Bigram.fit and NGram.fit give on its text's training split (bit for
    bit), over its vocabulary, decoded in its window (64 positions here,
    not the tables' default 128)."""
    from aftertrain.lm.ngram import Bigram, NGram
    from aftertrain.speculative.drafts import DraftKind, draft_model

    model = hf.load_folder(folders["llama"])
    bigram = draft_model(DraftKind.BIGRAM, model)
    assert torch.equal(bigram.log_probs, Bigram.fit(model.text.train, vocab_size=V).log_probs)
    ngram = draft_model(DraftKind.NGRAM, model)
    context = tuple(model.text.val[:4].tolist())
    assert torch.equal(
        ngram.distribution(context), NGram.fit(model.text.train, vocab_size=V).distribution(context)
    )
    for table in (bigram, ngram):
        assert (table.config.vocab_size, table.config.block_size) == (V, WINDOW)


def test_a_transformers_targets_draft_gpt_must_share_its_tokenizer(folders):
    """DraftKind.GPT is the user's draft: returned as given when its
    tokenizer is the target's, refused when the ids differ, required."""
    from aftertrain.speculative.drafts import DraftKind, draft_model

    model, draft = hf.load_folder(folders["llama"]), hf.load_folder(folders["gpt2"])
    assert draft_model(DraftKind.GPT, model, draft) is draft
    draft.tokenizer = _swapped_tokenizer(draft.tokenizer)
    with pytest.raises(ValueError, match="draft's tokenizer differs from the model's"):
        draft_model(DraftKind.GPT, model, draft)
    with pytest.raises(ValueError, match="none was given"):
        draft_model(DraftKind.GPT, model)
