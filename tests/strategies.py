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


# --- pruning (aftertrain.prune) ------------------------------------------------

import torch  # noqa: E402

#: A sparsity in [0, 1], the end points included.
sparsities = st.floats(0.0, 1.0, allow_nan=False)

#: Weight values with heavy ties: every value is -2, 0 or 2.
tied_values = st.sampled_from([-2.0, 0.0, 2.0])

#: Weight values with no structure: finite floats of either sign, -0.0 included.
free_values = st.floats(-1e3, 1e3, allow_nan=False, width=32)


@st.composite
def weight_matrix(draw, values=free_values, max_rows: int = 9, max_cols: int = 12,
                  col_multiple: int = 1):
    """A float32 matrix of 1..max_rows x 1..max_cols, its column count a
    multiple of ``col_multiple``, elements drawn from ``values``."""
    rows = draw(st.integers(1, max_rows))
    cols = col_multiple * draw(st.integers(1, max(1, max_cols // col_multiple)))
    flat = draw(st.lists(values, min_size=rows * cols, max_size=rows * cols))
    return torch.tensor(flat, dtype=torch.float32).view(rows, cols)


@st.composite
def weight_dicts(draw, values=free_values, max_matrices: int = 4):
    """1..max_matrices named matrices, as ``prunable_weights`` returns them."""
    n = draw(st.integers(1, max_matrices))
    return {f"m{i}.weight": draw(weight_matrix(values)) for i in range(n)}


@st.composite
def distinct_weight_dicts(draw, max_matrices: int = 3):
    """Named matrices whose magnitudes are all distinct (no ties anywhere), so
    every magnitude ranking is unique: ``k * 0.25 + 0.125`` for a permutation
    of k, random signs, split into matrices of random shapes."""
    shapes = [(draw(st.integers(1, 6)), draw(st.integers(1, 8)))
              for _ in range(draw(st.integers(1, max_matrices)))]
    total = sum(r * c for r, c in shapes)
    perm = draw(st.permutations(range(total)))
    signs = draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=total, max_size=total))
    flat = torch.tensor([s * (k * 0.25 + 0.125) for k, s in zip(perm, signs)])
    parts = torch.split(flat, [r * c for r, c in shapes])
    return {f"m{i}.weight": p.view(shape) for i, (p, shape) in enumerate(zip(parts, shapes))}


@st.composite
def sparse_matrix(draw, max_rows: int = 9, max_cols: int = 16, col_multiple: int = 1):
    """A float32 matrix with a drawn fraction of exact zeros: all zero, fully
    dense and -0.0 entries all occur."""
    dense = draw(weight_matrix(free_values, max_rows, max_cols, col_multiple))
    keep = draw(st.lists(st.booleans(), min_size=dense.numel(), max_size=dense.numel()))
    return torch.where(torch.tensor(keep).view(dense.shape), dense, torch.zeros(()))
