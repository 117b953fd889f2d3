"""A transformers model's text (:mod:`aftertrain.lm.hf`): the two splits
as text and as its tokenizer's ids (:class:`ModelText`), and a user's text
file split as the bundled corpus is (:func:`read_text_file`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

from aftertrain.lm import text as _text

__all__ = ["TRAIN_SHARE", "ModelText", "read_text_file"]

#: The share of a text's characters that trains the tables (the bundled corpus's 60,000 of 70,000).
TRAIN_SHARE = _text.TRAIN_CHARS / (_text.TRAIN_CHARS + _text.VAL_CHARS)


@dataclass(frozen=True)
class ModelText:
    """A model's text: the two splits as text and as the tokenizer's ids.

    ``source`` says where the text came from (the bundled corpus or a file)."""

    train_text: str
    val_text: str
    train: torch.Tensor
    val: torch.Tensor
    vocab_size: int
    source: str

    @classmethod
    def encode(cls, tokenizer, vocab_size: int, train_text: str, val_text: str, source: str) -> ModelText:
        """Both splits encoded with ``tokenizer`` (no special tokens); ValueError
        when an id lies outside ``[0, vocab_size)`` or a split is too short."""
        splits = []
        for name, text in (("train", train_text), ("validation", val_text)):
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            if len(ids) < 2:
                raise ValueError(
                    f"the {name} split of {source} encodes to {len(ids)} token(s); at least 2 needed"
                )
            bad = [t for t in ids if not 0 <= t < vocab_size]
            if bad:
                raise ValueError(
                    f"the tokenizer gives id {bad[0]} on {source}, outside the model's "
                    f"vocabulary [0, {vocab_size}): the tokenizer does not match the model"
                )
            splits.append(torch.tensor(ids, dtype=torch.long))
        return cls(train_text, val_text, splits[0], splits[1], vocab_size, source)


def read_text_file(path: str | os.PathLike) -> tuple[str, str]:
    """A user's text file as (train, validation): the first :data:`TRAIN_SHARE`
    of its characters and the rest. ValueError naming the file when it is
    missing, not UTF-8, or too short to split (at least 100 characters)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"text file {str(path)!r} does not exist or is not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"text file {str(path)!r} is not UTF-8 ({err.reason} at byte {err.start})") from None
    if len(text) < 100:
        raise ValueError(
            f"text file {str(path)!r} has {len(text)} characters; at least 100 needed to split it"
        )
    cut = round(len(text) * TRAIN_SHARE)
    return text[:cut], text[cut:]
