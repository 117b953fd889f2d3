"""Named hypothesis strategies shared by the tests (strategies only: the toy
models are in tests/common/toys.py)."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from aftertrain.lm.text import VOCAB

#: Any string over the model's vocabulary (``string.printable``).
vocab_text = st.text(alphabet=VOCAB, max_size=300)


@st.composite
def prompt_and_split(draw, min_len: int = 1, max_len: int = 128):
    """A vocabulary prompt and a split point 1 <= k <= len: the first k
    characters are prefilled, the rest fed one at a time."""
    prompt = draw(st.text(alphabet=VOCAB, min_size=min_len, max_size=max_len))
    k = draw(st.integers(1, len(prompt)))
    return prompt, k


# --- quantization (aftertrain.quant) ----------------------------------------

#: Every width the quantizer accepts.
quant_bits = st.integers(2, 8)

#: Finite float32 values from tiny (subnormal) to huge magnitudes.
_float32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@st.composite
def weight_matrices(draw, max_rows: int = 8, max_cols: int = 8):
    """A finite float32 matrix, built to stress the quantizer.

    Elements are arbitrary finite float32 values (so tiny, subnormal and
    huge magnitudes all occur), then some rows are replaced by zeros and the
    whole matrix may be rescaled by a power of two (1e-30 .. 1e30 range),
    keeping every element finite.
    """
    shape = draw(st.tuples(st.integers(1, max_rows), st.integers(1, max_cols)))
    a = draw(hnp.arrays(np.float32, shape, elements=_float32))
    rows = draw(st.lists(st.booleans(), min_size=shape[0], max_size=shape[0]))
    a[np.array(rows, dtype=bool)] = 0.0
    exponent = draw(st.sampled_from([0, 0, -100, -60, 60, 100]))
    scaled = (a.astype(np.float64) * 2.0**exponent)
    if np.all(np.abs(scaled) < np.finfo(np.float32).max):
        a = scaled.astype(np.float32)
    return torch.from_numpy(a)


@st.composite
def tie_matrices(draw, bits: int, max_rows: int = 6, max_cols: int = 8):
    """A float32 matrix whose ``w / scale`` hits exact half-integers.

    Each row is ``2**e * (k + 0.5)`` for integer ``k`` (codes that round half
    to even), plus one element ``qmax * 2**e`` so the row's scale is exactly
    ``2**e`` (``qmax * 2**e / qmax`` is exact in float32). The same ``e`` for
    every row makes the per-tensor scale ``2**e`` as well.
    """
    qmax = 2 ** (bits - 1) - 1
    rows = draw(st.integers(1, max_rows))
    cols = draw(st.integers(2, max_cols))
    e = draw(st.integers(-20, 20))
    k = draw(hnp.arrays(np.int64, (rows, cols - 1), elements=st.integers(-qmax, qmax - 1)))
    sign = draw(st.sampled_from([1.0, -1.0]))
    top = np.full((rows, 1), sign * qmax, dtype=np.float64)
    a = np.concatenate([top, k + 0.5], axis=1) * 2.0**e
    return torch.from_numpy(a.astype(np.float32))


# --- pruning (aftertrain.prune) ------------------------------------------------


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
    flat = torch.tensor([s * (k * 0.25 + 0.125) for k, s in zip(perm, signs, strict=True)])
    parts = torch.split(flat, [r * c for r, c in shapes])
    return {f"m{i}.weight": p.view(shape) for i, (p, shape) in enumerate(zip(parts, shapes, strict=True))}


@st.composite
def sparse_matrix(draw, max_rows: int = 9, max_cols: int = 16, col_multiple: int = 1):
    """A float32 matrix with a drawn fraction of exact zeros: all zero, fully
    dense and -0.0 entries all occur."""
    dense = draw(weight_matrix(free_values, max_rows, max_cols, col_multiple))
    keep = draw(st.lists(st.booleans(), min_size=dense.numel(), max_size=dense.numel()))
    return torch.where(torch.tensor(keep).view(dense.shape), dense, torch.zeros(()))


# --- speculative decoding (claims S1, S2, X6, X7) ------------------------------------


@st.composite
def probability_vector(draw, size: int):
    """A probability vector of ``size`` cells: some exactly zero, some tiny,
    never all zero (float64, sums to 1 to float error)."""
    cell = st.one_of(st.just(0.0), st.floats(1e-6, 1.0), st.floats(1e-12, 1e-9))
    w = draw(st.lists(cell, min_size=size, max_size=size).filter(lambda x: sum(x) > 0))
    t = torch.tensor(w, dtype=torch.float64)
    return t / t.sum()


#: How the draft's q relates to the target's p at one position.
RELATIONS = ("independent", "equal", "nearly equal", "disjoint", "one-hot")


@st.composite
def verification_case(draw, max_vocab: int = 6, max_k: int = 3):
    """``(p (k+1, V), q (k, V))`` for one round of the verification rule:
    each drafted position's q is independent of p, equal to it, nearly equal
    (a 1e-9 relative perturbation), of disjoint support, or one-hot."""
    V = draw(st.integers(2, max_vocab))
    k = draw(st.integers(1, max_k))
    p = torch.stack([draw(probability_vector(V)) for _ in range(k + 1)])
    qs = []
    for i in range(k):
        relation = draw(st.sampled_from(RELATIONS))
        if relation == "equal":
            q = p[i].clone()
        elif relation == "nearly equal":
            noise = torch.tensor(draw(st.lists(st.floats(0.0, 1.0), min_size=V, max_size=V)),
                                 dtype=torch.float64)
            q = p[i] * (1 + 1e-9 * noise)
            q = q / q.sum()
        elif relation == "disjoint" and bool((p[i] == 0).any()):
            zeros = (p[i] == 0).double()
            w = zeros * torch.tensor(draw(st.lists(st.floats(0.1, 1.0), min_size=V, max_size=V)),
                                     dtype=torch.float64)
            q = w / w.sum()
        elif relation == "one-hot":
            q = torch.zeros(V, dtype=torch.float64)
            q[draw(st.integers(0, V - 1))] = 1.0
        else:
            q = draw(probability_vector(V))
        qs.append(q)
    return p, torch.stack(qs)


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

