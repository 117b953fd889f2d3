"""Hypothesis strategies for a user's own property tests: the inputs the
kit's batteries are built from, near the edges where implementations break.

``@given(aftertrain.checks.strategies.distributions())`` draws a target
``p (k+1, V)`` and a draft ``q (k, V)`` for one verification round;
:func:`weights` draws float32 weight matrices for a quantizer; :func:`nm_shapes`,
:data:`sparsities` and :func:`weight_dicts` a pruner's inputs. Every
strategy is deterministic under hypothesis' ``derandomize`` and shrinks.

Needs ``hypothesis`` (``pip install "aftertrain[strategies]"``); the rest
of :mod:`aftertrain.checks` imports without it. Each strategy checks its
arguments when it is called (:func:`aftertrain.core.validation.check_int`'s
words: ``max_rows must be an int >= 1, got 0``), not when hypothesis first
draws from it.

Speculative decoding:

* :func:`probability_vector`: a distribution of ``size`` cells, some exactly
  zero, some tiny (1e-12 to 1e-9);
* :func:`distributions` / :func:`verification_case`: ``(p, q)`` with each
  drafted position's q independent of p, equal, nearly equal (1e-9
  relative), ulp-close (p with cells moved by a few float64 ulps),
  of disjoint support, one-hot, or a zero residual (q >= p in every cell:
  p with one cell raised, so ``max(0, p - q)`` is all zero).

Quantization: :func:`weight_matrices` (arbitrary finite float32: subnormal
and huge values, zero rows, a power-of-two rescale), :func:`heavy_tailed`,
:func:`mixed_row_scales`, :func:`tie_matrices` (``w / scale`` on exact
half-integers), :func:`subnormal_rows`, and :func:`weights`, any of them.

Pruning: :data:`sparsities`, :func:`weight_matrix`, :func:`weight_dicts`,
:func:`distinct_weight_dicts` (no ties), :func:`sparse_matrix`,
:func:`nm_shapes` (``(n, m, rows, cols)`` with rows of whole blocks).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

import numpy as np
import torch

from aftertrain.core.validation import check_int

try:
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError as exc:  # pragma: no cover - exercised by a subprocess test
    raise ImportError(
        "aftertrain.checks.strategies needs hypothesis: pip install "
        "'aftertrain[strategies]' (or hypothesis>=6.100)"
    ) from exc

__all__ = [
    "ALL_RELATIONS",
    "RELATIONS",
    "distinct_weight_dicts",
    "distributions",
    "free_values",
    "heavy_tailed",
    "mixed_row_scales",
    "nm_shapes",
    "probability_vector",
    "quant_bits",
    "sparse_matrix",
    "sparsities",
    "subnormal_rows",
    "tie_matrices",
    "tied_values",
    "verification_case",
    "weight_dicts",
    "weight_matrices",
    "weight_matrix",
    "weights",
]

# --- argument checks ---------------------------------------------------------

#: An argument check: ``(name, value, every argument by name)``; raises ValueError.
Check = Callable[[str, object, dict], object]


def _least(n: int) -> Check:
    return lambda name, value, _: check_int(name, value, least=n)


def _bits(name: str, value: object, _: dict) -> None:
    check_int(name, value, least=2, most=8, why=" (the widths the kit's schemes accept)")


def _bits_or_none(name: str, value: object, given: dict) -> None:
    if value is not None:
        _bits(name, value, given)


def _strategy(name: str, value: object, _: dict) -> None:
    if not isinstance(value, st.SearchStrategy):
        raise ValueError(
            f"{name} must be a hypothesis strategy of floats (e.g. free_values), got {value!r:.80}"
        )


def _multiple(name: str, value: object, given: dict) -> None:
    check_int("max_cols", given["max_cols"], least=1)
    check_int(name, value, least=1, most=given["max_cols"], why=" (at most max_cols)")


def _checked(**checks: Check):
    """Check the named arguments when the strategy is called (not at its
    first draw, where hypothesis would word the mistake)."""

    def wrap(strategy):
        signature = inspect.signature(strategy)

        @functools.wraps(strategy)
        def checked(*args, **kwargs):
            given = signature.bind(*args, **kwargs)
            given.apply_defaults()
            for name, check in checks.items():
                check(name, given.arguments[name], given.arguments)
            return strategy(*args, **kwargs)

        checked.__qualname__ = strategy.__name__  # a module-level name, not hypothesis' inner one
        return checked

    return wrap


_ROWS_COLS = {"max_rows": _least(1), "max_cols": _least(1)}

# --- quantization -------------------------------------------------------------

#: Every width the kit's schemes accept.
quant_bits = st.integers(2, 8)

#: Finite float32 values from tiny (subnormal) to huge magnitudes.
_float32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@_checked(**_ROWS_COLS)
@st.composite
def weight_matrices(draw, max_rows: int = 8, max_cols: int = 8):
    """A finite float32 matrix, built to stress a quantizer.

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
    scaled = a.astype(np.float64) * 2.0**exponent
    if np.all(np.abs(scaled) < np.finfo(np.float32).max):
        a = scaled.astype(np.float32)
    return torch.from_numpy(a)


@_checked(bits=_bits, max_rows=_least(1), max_cols=_least(2))
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


def _shape(draw, max_rows: int, max_cols: int) -> tuple[int, int]:
    return draw(st.integers(1, max_rows)), draw(st.integers(1, max_cols))


def _gaussian(draw, shape) -> np.ndarray:
    seed = draw(st.integers(0, 2**32 - 1))
    return np.random.default_rng(seed).standard_normal(shape)


@_checked(**_ROWS_COLS)
@st.composite
def heavy_tailed(draw, max_rows: int = 8, max_cols: int = 16):
    """Cubed Gaussians (a few values far out: one sets the scale, the rest
    sit in a handful of codes) with one extreme of either sign up to 1e4."""
    shape = _shape(draw, max_rows, max_cols)
    a = _gaussian(draw, shape) ** 3
    r, c = draw(st.integers(0, shape[0] - 1)), draw(st.integers(0, shape[1] - 1))
    a[r, c] = draw(st.sampled_from([-1.0, 1.0])) * draw(st.floats(1.0, 1e4))
    return torch.from_numpy(a.astype(np.float32))


@_checked(**_ROWS_COLS)
@st.composite
def mixed_row_scales(draw, max_rows: int = 8, max_cols: int = 16):
    """Gaussian rows each multiplied by its own power of ten, 1e-30 to 1e30
    (a scale taken from the wrong row or group is off by orders of magnitude)."""
    shape = _shape(draw, max_rows, max_cols)
    exps = draw(st.lists(st.integers(-30, 30), min_size=shape[0], max_size=shape[0]))
    a = _gaussian(draw, shape) * 10.0 ** np.array(exps, dtype=np.float64)[:, None]
    return torch.from_numpy(a.astype(np.float32))


@_checked(max_rows=_least(2), max_cols=_least(1))
@st.composite
def subnormal_rows(draw, max_rows: int = 6, max_cols: int = 8):
    """Rows of subnormal float32 values (and zeros) beside at least one
    normal row: a per-row scale below float32's smallest normal."""
    rows, cols = draw(st.integers(2, max_rows)), draw(st.integers(1, max_cols))
    a = _gaussian(draw, (rows, cols))
    tiny = st.one_of(
        st.just(0.0), st.floats(-(2.0**-126), 2.0**-126, width=32, exclude_min=True, exclude_max=True)
    )
    for r in range(1, rows):
        if draw(st.booleans()):
            a[r] = draw(st.lists(tiny, min_size=cols, max_size=cols))
    return torch.from_numpy(a.astype(np.float32))


@_checked(**_ROWS_COLS, bits=_bits_or_none)
@st.composite
def weights(draw, max_rows: int = 8, max_cols: int = 16, bits: int | None = None):
    """Any of the quantization strategies above (tie matrices at ``bits``,
    drawn when None)."""
    b = draw(quant_bits) if bits is None else bits
    return draw(
        st.one_of(
            weight_matrices(max_rows, max_cols),
            heavy_tailed(max_rows, max_cols),
            mixed_row_scales(max_rows, max_cols),
            tie_matrices(b),
            subnormal_rows(max_rows, max_cols),
        )
    )


# --- pruning -------------------------------------------------------------------

#: A sparsity in [0, 1], the end points included.
sparsities = st.floats(0.0, 1.0, allow_nan=False)

#: Weight values with heavy ties: every value is -2, 0 or 2.
tied_values = st.sampled_from([-2.0, 0.0, 2.0])

#: Weight values with no structure: finite floats of either sign, -0.0 included.
free_values = st.floats(-1e3, 1e3, allow_nan=False, width=32)


@_checked(values=_strategy, max_rows=_least(1), col_multiple=_multiple)
@st.composite
def weight_matrix(draw, values=free_values, max_rows: int = 9, max_cols: int = 12, col_multiple: int = 1):
    """A float32 matrix of 1..max_rows x 1..max_cols, its column count a
    multiple of ``col_multiple``, elements drawn from ``values``."""
    rows = draw(st.integers(1, max_rows))
    cols = col_multiple * draw(st.integers(1, max(1, max_cols // col_multiple)))
    flat = draw(st.lists(values, min_size=rows * cols, max_size=rows * cols))
    return torch.tensor(flat, dtype=torch.float32).view(rows, cols)


@_checked(values=_strategy, max_matrices=_least(1))
@st.composite
def weight_dicts(draw, values=free_values, max_matrices: int = 4):
    """1..max_matrices named matrices, as a pruner is handed them."""
    n = draw(st.integers(1, max_matrices))
    return {f"m{i}.weight": draw(weight_matrix(values)) for i in range(n)}


@_checked(max_matrices=_least(1))
@st.composite
def distinct_weight_dicts(draw, max_matrices: int = 3):
    """Named matrices whose magnitudes are all distinct (no ties anywhere), so
    every magnitude ranking is unique: ``k * 0.25 + 0.125`` for a permutation
    of k, random signs, split into matrices of random shapes."""
    shapes = [
        (draw(st.integers(1, 6)), draw(st.integers(1, 8))) for _ in range(draw(st.integers(1, max_matrices)))
    ]
    total = sum(r * c for r, c in shapes)
    perm = draw(st.permutations(range(total)))
    signs = draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=total, max_size=total))
    flat = torch.tensor([s * (k * 0.25 + 0.125) for k, s in zip(perm, signs, strict=True)])
    parts = torch.split(flat, [r * c for r, c in shapes])
    return {f"m{i}.weight": p.view(shape) for i, (p, shape) in enumerate(zip(parts, shapes, strict=True))}


@_checked(max_rows=_least(1), col_multiple=_multiple)
@st.composite
def sparse_matrix(draw, max_rows: int = 9, max_cols: int = 16, col_multiple: int = 1):
    """A float32 matrix with a drawn fraction of exact zeros: all zero, fully
    dense and -0.0 entries all occur."""
    dense = draw(weight_matrix(free_values, max_rows, max_cols, col_multiple))
    keep = draw(st.lists(st.booleans(), min_size=dense.numel(), max_size=dense.numel()))
    return torch.where(torch.tensor(keep).view(dense.shape), dense, torch.zeros(()))


@_checked(max_m=_least(2), max_rows=_least(1), max_blocks=_least(1))
@st.composite
def nm_shapes(draw, max_m: int = 16, max_rows: int = 8, max_blocks: int = 4):
    """``(n, m, rows, cols)``: an N:M pattern (1 <= n < m <= max_m, 2:4
    among the first drawn) and a matrix shape whose rows are whole blocks."""
    m = draw(st.one_of(st.just(4), st.integers(2, max_m)))
    n = draw(st.one_of(st.just(m // 2), st.integers(1, m - 1)))
    return n, m, draw(st.integers(1, max_rows)), m * draw(st.integers(1, max_blocks))


# --- speculative decoding ------------------------------------------------------


@_checked(size=_least(1))
@st.composite
def probability_vector(draw, size: int):
    """A probability vector of ``size`` cells: some exactly zero, some tiny,
    never all zero (float64, sums to 1 to float error)."""
    cell = st.one_of(st.just(0.0), st.floats(1e-6, 1.0), st.floats(1e-12, 1e-9))
    w = draw(st.lists(cell, min_size=size, max_size=size).filter(lambda x: sum(x) > 0))
    t = torch.tensor(w, dtype=torch.float64)
    return t / t.sum()


#: How the draft's q relates to the target's p at one position (the relations
#: of :func:`verification_case`'s default).
RELATIONS = ("independent", "equal", "nearly equal", "disjoint", "one-hot")
#: Every relation :func:`distributions` draws: RELATIONS, plus q a few ulps
#: from p and a zero residual (q >= p in every cell).
ALL_RELATIONS = (*RELATIONS, "ulp-close", "zero residual")


def _related(draw, relation: str, p: torch.Tensor) -> torch.Tensor:
    V = p.numel()
    if relation == "equal":
        return p.clone()
    if relation == "nearly equal":
        noise = torch.tensor(draw(st.lists(st.floats(0.0, 1.0), min_size=V, max_size=V)), dtype=torch.float64)
        q = p * (1 + 1e-9 * noise)
        return q / q.sum()
    if relation == "ulp-close":
        steps = draw(st.lists(st.integers(-4, 4), min_size=V, max_size=V))
        q = p.clone()
        for i, s in enumerate(steps):
            for _ in range(abs(s)):
                q[i] = torch.nextafter(q[i], torch.tensor(2.0 if s > 0 else 0.0, dtype=q.dtype))
        return q.clamp_min(0)
    if relation == "zero residual":
        q = p.clone()
        i = draw(st.sampled_from([j for j in range(V) if p[j] > 0]))
        ulps = draw(st.integers(1, 8))
        for _ in range(ulps):
            q[i] = torch.nextafter(q[i], torch.tensor(2.0, dtype=q.dtype))
        return q  # q >= p in every cell: max(0, p - q) is all zero
    if relation == "disjoint" and bool((p == 0).any()):
        zeros = (p == 0).double()
        w = zeros * torch.tensor(
            draw(st.lists(st.floats(0.1, 1.0), min_size=V, max_size=V)), dtype=torch.float64
        )
        return w / w.sum()
    if relation == "one-hot":
        q = torch.zeros(V, dtype=torch.float64)
        q[draw(st.integers(0, V - 1))] = 1.0
        return q
    return draw(probability_vector(V))


def verification_case(max_vocab: int = 6, max_k: int = 3, relations=RELATIONS):
    """``(p (k+1, V), q (k, V))`` float64 for one round of the verification
    rule: each drafted position's q related to p by one of ``relations``
    (module docstring; "disjoint" falls back to independent where p has no
    zero). ValueError at once for an unknown relation or sizes below 2 and 1."""
    relations = tuple(relations)
    if not relations or set(relations) - set(ALL_RELATIONS):
        raise ValueError(f"relations must be a non-empty subset of {ALL_RELATIONS}, got {relations!r}")
    check_int("max_vocab", max_vocab, least=2)
    check_int("max_k", max_k, least=1)
    return _verification_case(max_vocab, max_k, relations)


@st.composite
def _verification_case(draw, max_vocab: int, max_k: int, relations: tuple):
    V = draw(st.integers(2, max_vocab))
    k = draw(st.integers(1, max_k))
    p = torch.stack([draw(probability_vector(V)) for _ in range(k + 1)])
    qs = [_related(draw, draw(st.sampled_from(list(relations))), p[i]) for i in range(k)]
    return p, torch.stack(qs)


def distributions(max_vocab: int = 6, max_k: int = 3, relations=ALL_RELATIONS):
    """:func:`verification_case` over every relation, the edges included
    (ulp-close, zero residual): ``@given(distributions())`` hands a test
    ``(p, q)``."""
    return verification_case(max_vocab, max_k, relations)
