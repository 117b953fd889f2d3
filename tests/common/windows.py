"""The decoding window of the model under test, as
:class:`aftertrain.lm.decoding.Decoder` moves it on that model's
``block_size``: where a recomputation reads from, and how long a run must be
to cross the window's moves (at 129 and 193 on our GPT's block of 128, at
``block_size + 1`` and ``block_size + slide + 1`` on any model)."""

from __future__ import annotations

from aftertrain.lm.decoding import Decoder, context_start
from aftertrain.lm.protocol import NextTokenModel


def window_start(model: NextTokenModel, n: int) -> int:
    """First index of the window that predicts the token after ``text[:n]``
    on ``model``: the Decoder's policy on the model's block and slide."""
    decoder = Decoder(model)
    return context_start(n, decoder.block_size, decoder.slide)


def move(model: NextTokenModel, moves: int) -> int:
    """The text length at which the window has moved ``moves`` times on
    ``model`` (``block_size + (moves - 1) * slide + 1``: 129 and 193 on our
    GPT): the token after a text this long is predicted from window
    ``moves + 1``."""
    decoder = Decoder(model)
    return decoder.block_size + (moves - 1) * decoder.slide + 1


def new_tokens_past(model: NextTokenModel, prompt_length: int, moves: int, at_least: int) -> int:
    """``at_least`` new tokens, or more where the model's block is longer:
    enough that a run after a prompt of ``prompt_length`` tokens predicts a
    token after the window's ``moves``-th move (its text grows past
    :func:`move`)."""
    return max(at_least, move(model, moves) + 1 - prompt_length)
