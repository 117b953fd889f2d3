"""Named hypothesis strategies shared by the tests (strategies only: the toy
models are in tests/common/toys.py): the project's own (text, prompts,
speculative runs) and, re-exported, the kit's public ones
(aftertrain.checks.strategies)."""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from aftertrain.lm.text import VOCAB

#: Any string over the model's vocabulary (``string.printable``).
vocab_text = st.text(alphabet=VOCAB, max_size=300)


@st.composite
def tokens_and_split(draw, vocab_size: int, max_len: int):
    """Token ids of a model's vocabulary (1 to ``max_len`` of them, each in
    ``[0, vocab_size)``) and a split point 1 <= k <= len: the first k
    tokens are prefilled, the rest fed one at a time."""
    tokens = draw(st.lists(st.integers(0, vocab_size - 1), min_size=1, max_size=max_len))
    k = draw(st.integers(1, len(tokens)))
    return tokens, k


# The kit's strategies (quantization, pruning, verification rounds) live in
# aftertrain.checks.strategies, for users' suites too; the tests import them
# from here, the one place.
from aftertrain.checks.strategies import (  # noqa: E402,F401 (re-exported)
    ALL_RELATIONS,
    RELATIONS,
    distinct_weight_dicts,
    distributions,
    free_values,
    heavy_tailed,
    mixed_row_scales,
    nm_shapes,
    probability_vector,
    quant_bits,
    sparse_matrix,
    sparsities,
    subnormal_rows,
    tie_matrices,
    tied_values,
    verification_case,
    weight_dicts,
    weight_matrices,
    weight_matrix,
    weights,
)


@st.composite
def speculative_run(draw, vocab_size: int = 5):
    """Arguments of one speculative run on toy models: a prompt of 1 to 40
    symbols, 0 to 200 new symbols (so runs cross the window moves at 129 and
    193), k from 1 to 8, a temperature among 0 (greedy), 0.5, 1 and 2, a seed."""
    prompt = draw(st.lists(st.integers(0, vocab_size - 1), min_size=1, max_size=40))
    return {
        "prompt": torch.tensor(prompt),
        "n_new": draw(st.integers(0, 200)),
        "k": draw(st.integers(1, 8)),
        "temperature": draw(st.sampled_from([0.0, 0.5, 1.0, 2.0])),
        "seed": draw(st.integers(0, 2**31 - 1)),
    }
