"""Bad inputs to the model layer (model, decoding, evaluation, checkpoint,
protocol, bigram, drafts): each raises ValueError whose message names the
argument and what is allowed, before any work.

One row per (callable, keyword arguments, words the message must hold).
Arguments that need an object are ``Lazy`` and built from the ``env``
fixture, so nothing is built at import time.
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
import torch

from aftertrain.lm import ngram as BG
from aftertrain.lm import registry as _models
from aftertrain.lm import text as _text
from aftertrain.lm.checkpoint import load_checkpoint, save_checkpoint, sha256_file
from aftertrain.lm.decoding import Decoder, context_start, generate, probabilities, sample_text, sample_token
from aftertrain.lm.evaluation import val_loss
from aftertrain.lm.model import GPT, GPTConfig, KVCache
from aftertrain.lm.protocol import TableConfig, TokenCache, check_idx
from aftertrain.lm.text import encode
from aftertrain.lm.train import TrainConfig
from aftertrain.speculative import drafts as D
from tests.common.bad_inputs import Lazy, case_id, check_raises_naming
from tests.common.toys import toy_gpt

NAN, INF = math.nan, math.inf


def _plain_state_dict_checkpoint(env, folder):
    """A plain state_dict with a metadata file whose SHA-256 matches it: the
    hash check passes, so only the format check can catch it."""
    path = folder / "plain.pt"
    torch.save(env.gpt.state_dict(), path)
    path.with_suffix(".pt.json").write_text(json.dumps({"sha256": sha256_file(path)}))
    return path


def _wrong_shape_checkpoint(env, folder):
    path = folder / "shape.pt"
    save_checkpoint(env.gpt, path, {})
    blob = torch.load(path, weights_only=True)
    blob["config"]["n_embd"] = 32
    torch.save(blob, path)
    path.with_suffix(".pt.json").write_text(json.dumps({"sha256": sha256_file(path)}))
    return path


def _list_meta_checkpoint(env, folder):
    """A checkpoint whose metadata file is valid JSON but a list."""
    path = folder / "listmeta.pt"
    save_checkpoint(env.gpt, path, {})
    path.with_suffix(".pt.json").write_text("[]")
    return path


def _not_json_checkpoint(env, folder):
    path = folder / "notjson.pt"
    save_checkpoint(env.gpt, path, {})
    path.with_suffix(".pt.json").write_text("{not json")
    return path


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bad_inputs_model")
    gpt = toy_gpt(100, seed=0)
    nan_gpt = toy_gpt(100, seed=0)
    with torch.no_grad():
        nan_gpt.head.weight.fill_(NAN)
    corpus = encode("the quick brown fox jumps over the lazy dog " * 4)
    e = SimpleNamespace(
        gpt=gpt,
        nan_gpt=nan_gpt,
        folder=folder,
        bigram=BG.Bigram.fit(corpus),
        ngram=BG.NGram.fit(corpus, order=3),
    )
    e.plain = _plain_state_dict_checkpoint(e, folder)
    e.wrong_shape = _wrong_shape_checkpoint(e, folder)
    e.not_json = _not_json_checkpoint(e, folder)
    e.list_meta = _list_meta_checkpoint(e, folder)
    return e


GPT_ = Lazy(lambda e: e.gpt)
NAN_GPT = Lazy(lambda e: e.nan_gpt)
PROMPT = encode("ab")
LOGITS = torch.tensor([0.0, 1.0, 2.0])
G = Lazy(lambda e: torch.Generator())


def _forward(e):
    return e.gpt.forward


CASES = [
    # --- model.py
    (GPTConfig, dict(n_layer=0), "n_layer must be an int >= 1"),
    (GPTConfig, dict(vocab_size=2.5), "vocab_size must be an int >= 1"),
    (GPTConfig, dict(n_embd=130, n_head=4), "n_embd (130) must be divisible by n_head"),
    (GPTConfig, dict(dropout=NAN), "dropout must be in [0, 1)"),
    (GPT, dict(config={"n_layer": 1}), "config must be a GPTConfig"),
    (KVCache, dict(n_layer=0), "n_layer must be an int >= 1"),
    (Lazy(_forward), dict(idx=torch.zeros(1, 3)), "idx must be a 2-D integer tensor"),
    (Lazy(_forward), dict(idx=torch.zeros(3, dtype=torch.long)), "idx must be a 2-D integer"),
    (Lazy(_forward), dict(idx=torch.tensor([[1, 100]])), "idx must lie in [0, 100)"),
    (Lazy(_forward), dict(idx=torch.zeros(1, 129, dtype=torch.long)), "exceeds block_size 128"),
    (
        Lazy(_forward),
        dict(idx=torch.zeros(1, 2, dtype=torch.long), cache=TokenCache()),
        "cache must be a KVCache",
    ),
    (Lazy(lambda e: KVCache(1).truncate), dict(n=5), "n must be an int in [0, 0]"),
    # --- decoding.py
    (context_start, dict(n=-1), "n must be >= 0"),
    (context_start, dict(n=1.5), "n must be >= 0"),
    (context_start, dict(n=200, block_size=128, slide=0), "slide must be in [1, block_size=128]"),
    (context_start, dict(n=10, block_size=0), "block_size must be an int >= 1"),
    (Decoder, dict(model=torch.nn.Linear(2, 2)), "model must implement aftertrain.lm.protocol"),
    (Decoder, dict(model=GPT_, slide=200), "slide must be in [1, block_size=128]"),
    (Lazy(lambda e: Decoder(e.gpt).feed), dict(tokens=[]), "tokens must hold at least one"),
    (Lazy(lambda e: Decoder(e.gpt).feed), dict(tokens=[3, 100]), "tokens must lie in [0, 100)"),
    (Lazy(lambda e: Decoder(e.gpt).feed), dict(tokens=torch.tensor([1.0])), "tokens must be a 1-D"),
    (Lazy(lambda e: Decoder(e.gpt).feed), dict(tokens=["a"]), "tokens must be a 1-D"),
    (Lazy(lambda e: Decoder(e.nan_gpt).feed), dict(tokens=[1, 2]), "model's logits must be finite"),
    (Lazy(lambda e: Decoder(e.gpt).truncate), dict(n=-1), "n must be an int in [0, 0]"),
    (probabilities, dict(logits=torch.tensor([NAN, 0.0]), temperature=1.0), "logits must be finite"),
    (probabilities, dict(logits=torch.tensor([INF, 0.0]), temperature=1.0), "got +inf"),
    (probabilities, dict(logits=torch.tensor([NAN, 0.0]), temperature=0.0), "got NaN"),
    (probabilities, dict(logits=torch.tensor([-INF, -INF]), temperature=1.0), "no finite value"),
    (
        probabilities,
        dict(logits=torch.tensor([1, 2]), temperature=1.0),
        "logits must be a floating-point tensor",
    ),
    (probabilities, dict(logits=torch.zeros(0), temperature=1.0), "at least one value per row"),
    (probabilities, dict(logits=LOGITS, temperature=-1.0), "temperature must be a finite number >= 0"),
    (probabilities, dict(logits=LOGITS, temperature=NAN), "temperature must be a finite number"),
    (probabilities, dict(logits=LOGITS, temperature="1"), "temperature must be a finite number"),
    (sample_token, dict(logits=torch.zeros(2, 3), temperature=1.0, generator=G), "logits must be a 1-D"),
    (sample_token, dict(logits=LOGITS, temperature=1.0, generator=3), "generator must be a torch.Generator"),
    (sample_token, dict(logits=torch.tensor([NAN, 1.0]), temperature=0, generator=G), "got NaN"),
    (generate, dict(model=NAN_GPT, prompt=PROMPT, n_new=5, temperature=0.0), "logits must be finite"),
    (generate, dict(model=GPT_, prompt=torch.tensor([1.0]), n_new=5), "prompt must be a non-empty 1-D"),
    (
        generate,
        dict(model=GPT_, prompt=torch.tensor([1, 100]), n_new=5),
        "prompt tokens must lie in [0, 100)",
    ),
    (generate, dict(model=GPT_, prompt=PROMPT, n_new=1.5), "n_new must be an int in [0, "),
    (generate, dict(model=GPT_, prompt=PROMPT, n_new=3, temperature=INF), "temperature must be a finite"),
    (
        generate,
        dict(model=GPT_, prompt=PROMPT, n_new=3, generator="seed"),
        "generator must be a torch.Generator",
    ),
    (generate, dict(model=object(), prompt=PROMPT, n_new=3), "model must implement"),
    (sample_text, dict(model=GPT_, prompt=5, length=3), "prompt must be a non-empty str"),
    (sample_text, dict(model=GPT_, prompt="a", length=-1), "length must be an int >= 0"),
    (sample_text, dict(model=GPT_, prompt="a", length=3, seed=-1), "seed must be an int in [0, 2**64)"),
    (sample_text, dict(model=GPT_, prompt="caf\u00e9", length=3), "outside the vocabulary"),
    # --- evaluation.py
    (val_loss, dict(model=GPT_, tokens=torch.tensor([1, 150])), "tokens must lie in [0, 100)"),
    (val_loss, dict(model=GPT_, tokens=torch.tensor([1.0, 2.0])), "tokens must be a 1-D integer"),
    (val_loss, dict(model=GPT_, tokens=torch.tensor([1])), "at least 2 tokens"),
    (val_loss, dict(model="gpt"), "model must implement"),
    # --- checkpoint.py
    (load_checkpoint, dict(path=Lazy(lambda e: e.plain)), "is not an aftertrain checkpoint"),
    (load_checkpoint, dict(path=Lazy(lambda e: e.wrong_shape)), "do not match its config"),
    (load_checkpoint, dict(path=Lazy(lambda e: e.folder / "none.pt")), "none.pt is missing"),
    (load_checkpoint, dict(path=Lazy(lambda e: e.not_json)), "is not JSON"),
    (load_checkpoint, dict(path=3), "path must be a file path"),
    (
        save_checkpoint,
        dict(model=Lazy(lambda e: e.bigram), path="x.pt", meta={}),
        "model must be an aftertrain.lm.model.GPT",
    ),
    (
        save_checkpoint,
        dict(model=GPT_, path=Lazy(lambda e: e.folder / "m.pt"), meta={"x": object()}),
        "meta must be JSON-serialisable",
    ),
    (
        save_checkpoint,
        dict(model=GPT_, path=Lazy(lambda e: e.folder / "m.pt"), meta=[1]),
        "meta must be a dict",
    ),
    (sha256_file, dict(path=Lazy(lambda e: e.folder / "none.pt")), "path must name an existing file"),
    # --- protocol.py
    (TableConfig, dict(vocab_size=0), "vocab_size must be an int >= 1"),
    (Lazy(lambda e: TokenCache().truncate), dict(n=True), "n must be an int in [0, 0]"),
    # --- bigram.py
    (BG.Bigram.fit, dict(tokens=torch.tensor([1, 150])), "tokens must lie in [0, 100)"),
    (BG.Bigram.fit, dict(tokens=torch.tensor([1.0, 2.0])), "tokens must be a 1-D integer"),
    (BG.Bigram.fit, dict(tokens=torch.tensor([1, 2]), alpha=0.0), "alpha must be a finite number > 0"),
    (BG.Bigram.fit, dict(tokens=torch.tensor([1, 2]), alpha=INF), "alpha must be a finite number > 0"),
    (
        BG.Bigram,
        dict(log_probs=torch.zeros(10, 9)),
        "log_probs must be a square float tensor of shape (V, V)",
    ),
    (BG.Bigram, dict(), "give either log_probs (a (V, V) table) or pairs and alpha"),
    (BG.Bigram, dict(log_probs=torch.zeros(3, 3), alpha=0.1), "alpha goes with pairs"),
    (BG.Bigram, dict(pairs="pairs", alpha=0.1), "pairs must be an aftertrain.lm.counts.PairCounts"),
    (BG.Bigram.fit, dict(tokens=torch.tensor([1, 2]), vocab_size=0), "vocab_size must be an int >= 1, got 0"),
    (BG.Bigram.fit, dict(tokens=torch.tensor([1, 2]), vocab_size=2), "tokens must lie in [0, 2)"),
    (BG.Uniform, dict(vocab_size=0), "vocab_size must be an int >= 1"),
    (BG.Unigram, dict(probs=torch.tensor([0.5, 0.0, 0.5])), "probs must hold finite probabilities > 0"),
    (BG.Unigram, dict(probs=torch.ones(2, 2)), "probs must be a non-empty 1-D float tensor"),
    (BG.Unigram.fit, dict(tokens=torch.tensor([1, 5]), vocab_size=5), "tokens must lie in [0, 5)"),
    (BG.Unigram.fit, dict(tokens=torch.tensor([1, 2]), alpha=0.0), "alpha must be a finite number > 0"),
    (BG.Bigram, dict(log_probs=torch.full((100, 100), NAN)), "log_probs must not hold NaN"),
    (Lazy(lambda e: e.bigram.forward), dict(idx=torch.tensor([[0, 100]])), "idx must lie in [0, 100)"),
    (Lazy(lambda e: e.bigram.rows), dict(prev=torch.tensor([100])), "prev must lie in [0, 100)"),
    (Lazy(lambda e: e.bigram.rows), dict(prev=torch.tensor([1.0])), "prev must be an integer tensor"),
    (
        Lazy(lambda e: e.bigram.forward),
        dict(idx=torch.zeros(2, 3, dtype=torch.long), cache=TokenCache()),
        "idx must have one row",
    ),
    (BG.Uniform, dict(block_size=0), "block_size must be an int >= 1"),
    # --- drafts.py
    (D.draft_model, dict(kind="bigram", reference=GPT_), "kind must be a DraftKind"),
    (
        D.draft_model,
        dict(kind=D.DraftKind.BIGRAM, reference=Lazy(lambda e: e.bigram)),
        "reference must be an aftertrain.lm.model.GPT",
    ),
    (BG.NGram.fit, dict(tokens=torch.tensor([1, 2]), order=0), "order must be an int >= 1"),
    (BG.NGram.fit, dict(tokens=torch.tensor([1, 150])), "tokens must lie in [0, 100)"),
    (Lazy(lambda e: e.ngram.distribution), dict(context=[1, 2]), "context must be a tuple"),
    (
        Lazy(lambda e: e.ngram.distribution),
        dict(context=(1, 100)),
        "context must be a tuple of token indices in [0, 100)",
    ),
    # --- inputs that once failed silently or obscurely
    (_text.decode, dict(tokens=[True, False]), "tokens[0] = True is not an index"),
    (_text.decode, dict(tokens=torch.tensor([True])), "tokens must be integer indices"),
    (_text.decode, dict(tokens=None), "tokens must be a 1-D tensor or a sequence"),
    (_text.Corpus, dict(train_text=None, val_text="ab"), "train_text must be a str"),
    (_text.Corpus, dict(train_text="ab", val_text=5), "val_text must be a str"),
    (sample_text, dict(model=GPT_, prompt="\u2603", length=2), "prompt has 1 character(s) outside"),
    (load_checkpoint, dict(path=Lazy(lambda e: e.folder)), "is a folder, not a checkpoint file"),
    (load_checkpoint, dict(path=Lazy(lambda e: e.plain), rebuild=7), "rebuild must be a command"),
    (
        save_checkpoint,
        dict(model=NAN_GPT, path=Lazy(lambda e: e.folder / "n.pt"), meta={}),
        "model must have finite weights; head.weight holds NaN or inf",
    ),
    (
        save_checkpoint,
        dict(model=GPT_, path=Lazy(lambda e: e.folder), meta={}),
        "path must be a file path, got the folder",
    ),
    (
        save_checkpoint,
        dict(model=GPT_, path="/proc/aftertrain-test/m.pt", meta={}),
        "its folder cannot be created",
    ),
    (_models.check_architecture, dict(net="x"), "model must be an aftertrain.lm.model.GPT"),
    (BG.baseline_losses, dict(reference="ref"), "reference must implement"),
    (
        BG.baseline_losses,
        dict(reference=Lazy(lambda e: toy_gpt(7, seed=0))),
        "train and val must be given for a reference of 7 symbols",
    ),
    (BG.baseline_losses, dict(train=torch.tensor([1.5, 2.0])), "train must be a 1-D integer tensor"),
    (BG.NGram, dict(tables=[{}], unigram=torch.full((100,), NAN)), "unigram must hold finite"),
    (BG.NGram, dict(tables=[{}], unigram=-torch.full((100,), 0.01)), "unigram must hold finite"),
    (BG.NGram, dict(tables=[{}], unigram=torch.full((5, 5), 0.04)), "unigram must be a non-empty 1-D float"),
    (BG.NGram.fit, dict(tokens=torch.tensor([1, 2]), vocab_size=1.5), "vocab_size must be an int >= 1"),
    (BG.NGram, dict(tables="x", unigram=torch.full((100,), 0.01)), "tables must be a list"),
    (check_idx, dict(idx=torch.tensor([[1]]), vocab_size=0), "vocab_size must be an int >= 1"),
    (val_loss, dict(model=NAN_GPT, tokens=torch.arange(40) % 100), "model: it produced a non-finite loss"),
    (
        generate,
        dict(model=GPT_, prompt=PROMPT, n_new=10**12),
        "n_new must be an int in [0, 1,000,000], got 1000000000000",
    ),
    # --- seeds past torch's 64 bits, numpy arrays, a list as metadata, float counts
    (sample_text, dict(model=GPT_, prompt="a", length=3, seed=2**64), "seed must be an int in [0, 2**64)"),
    (
        _text.decode,
        dict(tokens=Lazy(lambda e: __import__("numpy").array([5, 6]))),
        "tokens must be a 1-D tensor or a sequence of ints in [0, 100), got ndarray",
    ),
    (
        load_checkpoint,
        dict(path=Lazy(lambda e: e.list_meta)),
        "listmeta.pt.json must be a JSON object with a 'sha256' string",
    ),
    (TrainConfig, dict(steps=2.5), "steps must be an int, got 2.5"),
    (TrainConfig, dict(lr=NAN), "lr must be a finite number"),
    (TrainConfig, dict(seed=2**64), "seed must be an int in [0, 2**64)"),
    # a loss to climb back to at or under stop_below: the run stops at stop_below first
    (
        TrainConfig,
        dict(stop_below=1.0, stop_rising_to=0.5),
        ["stop_rising_to has an invalid value 0.5", "above stop_below (1.0)"],
    ),
    (TrainConfig, dict(stop_below=1.0, stop_rising_to=1.0), "above stop_below (1.0)"),
]


@pytest.mark.parametrize("fn, kwargs, words", CASES, ids=[case_id(c) for c in CASES])
def test_bad_input_raises_value_error_naming_the_argument(env, fn, kwargs, words):
    check_raises_naming(fn, kwargs, words, env)


def test_generate_works_for_a_model_whose_block_is_shorter_than_the_slide():
    """The probe found generate refusing every GPT with block_size < 64 (the
    default slide): the default slide is now at most the block."""
    small = GPT(GPTConfig(vocab_size=100, block_size=16, n_layer=1, n_head=2, n_embd=16)).eval()
    out = generate(small, PROMPT, 40, temperature=1.0, generator=torch.Generator().manual_seed(0))
    assert out.shape == (len(PROMPT) + 40,)
    assert int(out.min()) >= 0 and int(out.max()) < 100
