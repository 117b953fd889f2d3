"""The bundled Llama-style fixture for :mod:`aftertrain.lm.hf`
(``aftertrain/data/llama-bpe``, written by tools/build_llama_fixture.py), a
transformers folder with its own byte-level BPE tokenizer: it loads offline, its files are the ones
fixture.json hashed, its tokenizer is what the tool trains and round-trips the
corpus, and its recorded validation loss is what the folder scores.

The validation loss is recomputed whole (4,835 tokens, about a second) the
way the tool computed it: float64, on a float64 copy. Only the order of
float64 operations can differ from the run that recorded it (another SIMD
width, thread count or summation order), in two places:

* each token's loss: the size of its rounding is measured, not guessed. The
  per-token gap between the same evaluation in float32 and in float64 is
  float32's rounding; float64's is that times ``u64 / u32 = 2**-29``; the
  tolerance allows the recording run and this one three times that each
  (``6 * max_token_gap32 * 2**-29``);
* the mean of n positive terms: any summation order is within
  ``n * u64 * mean`` of the exact sum (``u64 = 2**-53``; about 2e-12 nats
  here), a bound the bigram baseline's mean shares.
"""

from __future__ import annotations

import copy
import hashlib
import json
from importlib import resources

import pytest
import torch

transformers = pytest.importorskip(
    "transformers", reason="transformers is only installed on Python >= 3.11 (the test extra)"
)

from aftertrain.lm.text import load_corpus  # noqa: E402
from tests.common.tools import load_tool  # noqa: E402

FOLDER = resources.files("aftertrain") / "data" / "llama-bpe"
#: The tolerance's allowance per run, in units of float64's rounding noise.
NOISE_FACTOR = 3


@pytest.fixture(scope="module")
def tool():
    yield from load_tool("build_llama_fixture")


@pytest.fixture(scope="module")
def fixture():
    return json.loads((FOLDER / "fixture.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def loaded():
    """The folder's model (float32, eval) and tokenizer, loaded offline."""
    model = transformers.AutoModelForCausalLM.from_pretrained(str(FOLDER), local_files_only=True).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(FOLDER), local_files_only=True)
    return model, tokenizer


def test_folder_files_match_the_sha256_recorded_in_fixture_json(fixture):
    """Every file but fixture.json is listed, and hashes to its record."""
    files = {p.name for p in FOLDER.iterdir() if p.is_file()} - {"fixture.json"}
    assert set(fixture["sha256"]) == files
    for name, digest in fixture["sha256"].items():
        assert hashlib.sha256((FOLDER / name).read_bytes()).hexdigest() == digest, name


def test_fixture_is_a_small_untied_llama_with_a_512_id_byte_level_bpe(loaded, fixture):
    model, tokenizer = loaded
    config = model.config
    assert type(model).__name__ == "LlamaForCausalLM"
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads) == (128, 3, 4)
    assert config.max_position_embeddings == 256 and not config.tie_word_embeddings
    n = sum(p.numel() for p in model.parameters())
    assert n == fixture["parameters"] and 600_000 <= n <= 800_000
    assert len(tokenizer) == fixture["vocab_size"] == config.vocab_size == 512
    assert tokenizer.eos_token == "<|endoftext|>" and tokenizer.eos_token_id == config.eos_token_id


def test_tokenizer_round_trips_the_corpus_and_is_what_the_tool_trains(loaded, tool, fixture):
    """decode(encode(split)) == split on both splits; retraining the tool's
    BPE on the training split gives the same vocabulary and merges."""
    _, tokenizer = loaded
    corpus = load_corpus()
    for split in (corpus.train_text, corpus.val_text):
        ids = tokenizer(split, add_special_tokens=False)["input_ids"]
        assert tokenizer.decode(ids) == split
    assert len(tool.token_ids(tokenizer, corpus.train_text)) - 1 == fixture["train_tokens"]
    fresh = json.loads(tool.train_tokenizer(corpus.train_text).backend_tokenizer.to_str())
    stored = json.loads(tokenizer.backend_tokenizer.to_str())
    assert fresh["model"]["vocab"] == stored["model"]["vocab"]
    assert fresh["model"]["merges"] == stored["model"]["merges"]


@pytest.fixture(scope="module")
def val_losses(loaded, tool):
    """Per-token validation NLL in float64 (the recorded way) and in float32."""
    model, tokenizer = loaded
    ids = tool.token_ids(tokenizer, load_corpus().val_text)
    nll64 = tool.val_token_nats(copy.deepcopy(model).double(), ids)
    nll32 = tool.val_token_nats(model, ids)
    token_noise = 2 * NOISE_FACTOR * float((nll32 - nll64).abs().max()) * 2.0**-29
    assert token_noise > 0, "float32 and float64 agree bit for bit: the noise estimate is void"
    return nll64, nll32, token_noise + summation_bound(nll64)


def summation_bound(terms: torch.Tensor) -> float:
    """``n * 2**-53 * mean``: how far any float64 summation order of n
    non-negative terms can move their mean (recursive summation's bound)."""
    return len(terms) * 2.0**-53 * float(terms.mean())


def test_recomputed_val_loss_equals_the_recorded_one_within_float64_noise(val_losses, fixture):
    """The whole validation split's loss per token, recomputed as the tool
    did, is the recorded one up to float64 summation order (module docstring)."""
    nll64, _, tolerance = val_losses
    assert len(nll64) == fixture["val_tokens"]
    assert float(nll64.sum()) / len(nll64) == pytest.approx(
        fixture["val_loss_per_token"], rel=0, abs=tolerance
    )


@pytest.mark.teeth
def test_val_loss_match_catches_a_float32_evaluation(val_losses, fixture):
    """The same loss evaluated in float32 is outside the tolerance: the check
    tells the recorded figure from a nearby one."""
    _, nll32, tolerance = val_losses
    assert abs(float(nll32.mean()) - fixture["val_loss_per_token"]) > tolerance


def test_model_beats_the_bpe_bigram_on_the_validation_split(val_losses, fixture, loaded, tool):
    """The recorded bigram baseline is what the tool's bigram scores with this
    tokenizer (float64 from integer counts: only the summation bound), and
    the model's loss per token is below it."""
    nll64, _, _ = val_losses
    _, tokenizer = loaded
    corpus = load_corpus()
    train_ids = tool.token_ids(tokenizer, corpus.train_text)
    val_ids = tool.token_ids(tokenizer, corpus.val_text)
    log_probs = tool.bigram_log_probs(train_ids, len(tokenizer))
    terms = -log_probs[val_ids[:-1], val_ids[1:]]
    bigram = tool.bigram_nats(log_probs, val_ids) / len(terms)
    assert bigram == pytest.approx(fixture["bigram_val_loss_per_token"], rel=0, abs=summation_bound(terms))
    assert float(nll64.mean()) < bigram, f"model {float(nll64.mean()):.4f} vs bigram {bigram:.4f} nats/token"
