"""Guards on the one model interface (each pins a rule one plausible slip would break; docs/mutation.md):
the vocabulary's upper edge is refused by every model, as ValueError naming idx."""

from __future__ import annotations

import pytest
import torch

from aftertrain.lm import ngram as BG
from aftertrain.lm.protocol import check_idx
from aftertrain.lm.text import VOCAB_SIZE, encode
from tests.common.toys import ToyTable, toy_gpt

TEXT = "an index equal to the vocabulary size is one past the last character\n"


def _models() -> dict[str, torch.nn.Module]:
    corpus = encode(TEXT * 2)
    return {
        "GPT": toy_gpt(VOCAB_SIZE, seed=0),
        "bigram": BG.Bigram.fit(corpus),
        "bigram of observed pairs": BG.Bigram.fit(corpus, vocab_size=BG.DENSE_MAX_VOCAB + 1),
        "unigram": BG.Unigram.fit(corpus),
        "uniform": BG.Uniform(),
        "n-gram": BG.NGram.fit(corpus, order=3),
        "toy table": ToyTable(4, seed=0),
    }


@pytest.mark.parametrize("name", list(_models()))
def test_every_model_refuses_the_index_equal_to_its_vocabulary_size(name):
    """Indices are in [0, V): V itself is one past the last row of every
    table, and must be refused before it reaches an embedding or a table."""
    model = _models()[name]
    V = model.config.vocab_size
    model(torch.tensor([[0, V - 1]]))  # the edges inside the vocabulary are fine
    with pytest.raises(ValueError, match="idx"):
        model(torch.tensor([[0, V]]))
    with pytest.raises(ValueError, match="idx"):
        model(torch.tensor([[V, 0]]), model.new_cache())


@pytest.mark.parametrize("vocab_size", [1, 2, 100])
def test_check_idx_accepts_exactly_zero_to_vocab_size_minus_one(vocab_size):
    assert check_idx(torch.tensor([[0, vocab_size - 1]]), vocab_size).shape == (1, 2)
    for bad in (vocab_size, vocab_size + 1, -1):
        with pytest.raises(ValueError, match=r"idx must lie in \[0, " + str(vocab_size)):
            check_idx(torch.tensor([[bad]]), vocab_size)
