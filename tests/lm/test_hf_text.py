"""A transformers model's text (aftertrain.lm.hf_text): the splits encoded
by its tokenizer inside its vocabulary, and a user's text file split as the
bundled corpus is, with its refusals. Stand-in tokenizers; no model."""

from __future__ import annotations

import pytest

from aftertrain.lm import text as _text
from aftertrain.lm.hf_text import TRAIN_SHARE, ModelText, read_text_file


class _Ids:
    """A tokenizer stand-in giving fixed ids (ModelText.encode reads only ``input_ids``)."""

    def __init__(self, ids: list[int]) -> None:
        self.ids = ids

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        return {"input_ids": self.ids}


def test_model_text_refuses_an_id_equal_to_the_vocabulary_size():
    """The vocabulary is [0, V): id V - 1 passes, id V is refused naming it."""
    text = ModelText.encode(_Ids([0, 4]), 5, "ab", "cd", "a test")
    assert text.train.tolist() == [0, 4] and text.vocab_size == 5
    with pytest.raises(ValueError, match=r"id 5 on a test, outside the model's vocabulary \[0, 5\)"):
        ModelText.encode(_Ids([0, 5]), 5, "ab", "cd", "a test")


def test_a_split_of_fewer_than_two_tokens_is_refused_naming_it():
    with pytest.raises(ValueError, match="the train split of a test encodes to 1 token"):
        ModelText.encode(_Ids([3]), 5, "a", "cd", "a test")


def test_a_text_file_is_split_at_the_bundled_corpuss_share(tmp_path):
    """70 characters of each of 0-9: the first round(700 x 6/7) = 600 train
    the tables, the last 100 are the validation text (the corpus's 60,000 of 70,000)."""
    assert TRAIN_SHARE == _text.TRAIN_CHARS / (_text.TRAIN_CHARS + _text.VAL_CHARS) == 6 / 7
    f = tmp_path / "t.txt"
    f.write_text("".join(str(i) * 70 for i in range(10)), encoding="utf-8")
    train, val = read_text_file(f)
    assert (len(train), len(val)) == (600, 100) and train + val == f.read_text()


@pytest.mark.parametrize(
    "write, match",
    [
        (None, "does not exist or is not a file"),
        (b"\xff" * 200, "is not UTF-8"),
        ("x" * 99, "has 99 characters; at least 100 needed"),
    ],
    ids=["missing", "not UTF-8", "too short"],
)
def test_a_bad_text_file_is_refused_naming_it(tmp_path, write, match):
    f = tmp_path / "t.txt"
    if isinstance(write, bytes):
        f.write_bytes(write)
    elif write is not None:
        f.write_text(write, encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        read_text_file(f)
