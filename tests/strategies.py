"""Named hypothesis strategies shared by the tests."""

from __future__ import annotations

from hypothesis import strategies as st

from aftertrain.text import VOCAB

#: Any string over the model's vocabulary (``string.printable``).
vocab_text = st.text(alphabet=VOCAB, max_size=300)


@st.composite
def prompt_and_split(draw, min_len: int = 1, max_len: int = 128):
    """A vocabulary prompt and a split point 1 <= k <= len: the first k
    characters are prefilled, the rest fed one at a time."""
    prompt = draw(st.text(alphabet=VOCAB, min_size=min_len, max_size=max_len))
    k = draw(st.integers(1, len(prompt)))
    return prompt, k
