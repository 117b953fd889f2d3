"""The vocabulary and the bundled corpus."""

from __future__ import annotations

import hashlib
import string
import sys

import pytest
import torch
from hypothesis import given

from aftertrain.lm import text
from tests.common.strategies import vocab_text


def test_vocabulary_is_string_printable_in_order():
    assert text.VOCAB == string.printable
    assert text.VOCAB_SIZE == 100


@given(vocab_text)
def test_encode_then_decode_is_the_identity(s):
    tokens = text.encode(s)
    assert tokens.dtype == torch.long and tokens.shape == (len(s),)
    assert text.decode(tokens) == s
    assert text.decode(tokens.tolist()) == s


def test_encode_names_the_character_and_position_outside_the_vocabulary():
    with pytest.raises(ValueError, match=r"'é' at position 3"):
        text.encode("abcé")


def test_encode_lists_only_the_first_few_bad_characters():
    with pytest.raises(ValueError, match=r"12 character\(s\).*and 7 more"):
        text.encode("ü" * 12)


def test_decode_rejects_indices_outside_the_vocabulary():
    with pytest.raises(ValueError, match=r"tokens\[1\] = 100"):
        text.decode([5, 100])


def test_corpus_splits_have_the_documented_sizes_and_are_disjoint(corpus):
    assert len(corpus.train_text) == 60_000
    assert len(corpus.val_text) == 10_000
    assert corpus.train.numel() == 60_000 and corpus.val.numel() == 10_000
    raw = (corpus.train_text + corpus.val_text).encode("ascii")
    assert hashlib.sha256(raw).hexdigest() == text.CORPUS_SHA256


@pytest.mark.skipif(
    sys.version_info[:2] != (3, 11), reason="the corpus was cut from CPython 3.11's pydoc_data"
)
def test_corpus_is_cut_from_pydoc_topics_as_documented(corpus):
    rebuilt = text.corpus_from_pydoc_topics()
    if rebuilt != corpus.train_text + corpus.val_text:
        pytest.skip("this CPython 3.11 patch release ships other topic texts")
    assert set(rebuilt) <= set(text.VOCAB)


def test_a_corrupted_corpus_names_the_file_and_the_fix(monkeypatch):
    text.load_corpus.cache_clear()
    monkeypatch.setattr(text, "CORPUS_SHA256", "0" * 64)
    try:
        with pytest.raises(text.CorpusError, match=r"corpus\.txt has SHA-256 .*`git checkout"):
            text.load_corpus()
    finally:
        text.load_corpus.cache_clear()
