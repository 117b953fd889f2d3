"""The one model interface (aftertrain.lm.protocol.NextTokenModel): every model
the Decoder drives implements it, and its cache rolls back exactly."""

from __future__ import annotations

import pytest
import torch

from aftertrain.core.tolerances import LOGITS_ATOL
from aftertrain.lm import ngram as BG
from aftertrain.lm.decoding import Decoder
from aftertrain.lm.protocol import NextTokenModel, RollbackCache, TableConfig, TokenCache, check_model
from aftertrain.lm.text import encode
from tests.common.toys import CountingModel, ToyTable, toy_gpt

TEXT = "def rollback(cache, n):\n    cache.truncate(n)  # a rejected draft costs nothing\n"


def _models() -> dict[str, torch.nn.Module]:
    corpus = encode(TEXT * 3)
    return {
        "GPT": toy_gpt(100, seed=0),
        "bigram": BG.Bigram.fit(corpus),
        "bigram of observed pairs": BG.Bigram.fit(corpus, vocab_size=BG.DENSE_MAX_VOCAB + 1),
        "unigram": BG.Unigram.fit(corpus),
        "uniform": BG.Uniform(),
        "n-gram": BG.NGram.fit(corpus, order=4),
        "toy table": ToyTable(4, seed=0),
        "counting wrapper": CountingModel(toy_gpt(100, seed=1)),
    }


@pytest.fixture(scope="module")
def models() -> dict[str, torch.nn.Module]:
    return _models()


def _tokens(model, n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, model.config.vocab_size, (1, n), generator=g)


@torch.no_grad()
def rollback_error(model) -> float:
    """Largest |logit| difference between continuing a rolled-back cache and
    computing the same text from scratch: feed 20 tokens in two calls, roll
    back to 12, feed 6 other tokens; their logits must equal those of the 18
    tokens fed at once (only float32 summation order differs)."""
    a, b = _tokens(model, 20, seed=1), _tokens(model, 6, seed=2)
    cache = model.new_cache()
    model(a[:, :9], cache)
    model(a[:, 9:], cache)
    assert cache.length == 20
    cache.truncate(12)
    assert cache.length == 12
    got = model(b, cache)
    assert cache.length == 18
    want = model(torch.cat([a[:, :12], b], dim=1))[:, -6:]
    finite = torch.isfinite(want)
    assert torch.equal(finite, torch.isfinite(got)), "a -inf moved"
    return float((got[finite] - want[finite]).abs().max())


NAMES = ("GPT", "bigram", "uniform", "n-gram", "toy table", "counting wrapper")


@pytest.mark.parametrize("name", NAMES)
def test_each_model_implements_the_protocol_once(models, name):
    """isinstance against the runtime-checkable protocol, for the model, its
    config and a fresh cache; check_model accepts it."""
    model = models[name]
    assert isinstance(model, NextTokenModel)
    assert isinstance(model.new_cache(), RollbackCache)
    assert model.config.block_size == 128
    assert check_model(model) is model


@pytest.mark.parametrize("name", NAMES)
def test_each_cache_rolls_back_to_what_a_fresh_computation_gives(models, name):
    """Behaviour behind the protocol: a rolled-back cache continues exactly
    as if the removed tokens had never been fed (within LOGITS_ATOL, the
    float32 summation-order tolerance), and truncating past the end raises."""
    model = models[name]
    assert rollback_error(model) <= LOGITS_ATOL
    cache = model.new_cache()
    with pytest.raises(ValueError, match=r"n must be an int in \[0, 0\]"):
        cache.truncate(1)


class _ForgetfulCache(TokenCache):
    """A broken cache: truncate does nothing."""

    def truncate(self, n: int) -> None:
        pass


class _ForgetfulToy(ToyTable):
    def new_cache(self) -> TokenCache:
        return _ForgetfulCache()


@pytest.mark.teeth
def test_rollback_check_catches_a_cache_that_ignores_truncate():
    """Teeth: with a cache that keeps the rejected tokens the rolled-back
    logits are those of another text, far outside LOGITS_ATOL (the cache
    then still holds 26 tokens, so the length assertion fires first)."""
    with pytest.raises(AssertionError):
        rollback_error(_ForgetfulToy(4, seed=0))


@pytest.mark.teeth
def test_rollback_check_catches_a_gpt_cache_cut_one_position_too_far():
    """Teeth on the KV cache: a truncate that cuts one entry more than asked
    fails the check (tests/lm/test_model.py shows the logits then move by far
    more than LOGITS_ATOL)."""
    net = toy_gpt(100, seed=0)
    real = net.new_cache

    def short_cache():
        cache = real()
        truncate = cache.truncate
        cache.truncate = lambda n: truncate(max(0, n - 1))
        return cache

    net.new_cache = short_cache
    with pytest.raises(AssertionError):
        rollback_error(net)


def test_objects_without_the_interface_are_refused_by_name():
    """A module without config/new_cache, or with a config lacking the sizes,
    is not a NextTokenModel; the Decoder says so naming its argument."""
    assert not isinstance(torch.nn.Linear(2, 2), NextTokenModel)
    with pytest.raises(ValueError, match="model must implement aftertrain.lm.protocol.NextTokenModel"):
        Decoder(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="draft must implement"):
        check_model(object(), "draft")


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(vocab_size=0), "vocab_size must be an int >= 1"),
        (dict(block_size=1.5), "block_size must be an int >= 1"),
    ],
)
def test_table_config_rejects_bad_sizes(kwargs, words):
    with pytest.raises(ValueError, match=words):
        TableConfig(**kwargs)
