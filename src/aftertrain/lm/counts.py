"""Token counts of a corpus and their add-alpha smoothing: the unigram law
and the adjacent-pair counts the bigram reads, in memory proportional to
the corpus, whatever the vocabulary.

A pair table of a 151,936-token vocabulary would hold 2.3e10 cells; a
corpus of n tokens has at most n - 1 distinct pairs. :class:`PairCounts`
stores only those, row by row (compressed sparse rows), and
:meth:`PairCounts.log_rows` smooths the rows it is asked for:
``log((count(a, b) + alpha) / (count(a, .) + alpha * V))``.
:meth:`PairCounts.dense_log_probs` gives the same law as a (V, V) table,
summing each row over its V cells (the bigram's arithmetic on a small
vocabulary, where the table is cheap and its float sums are the stored
figures').
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from aftertrain.core.validation import check_int, check_real, check_tokens


def add_alpha_unigram(tokens: torch.Tensor, vocab_size: int, alpha: float) -> torch.Tensor:
    """``P(w) = (c(w) + alpha) / (N + alpha * V)`` (float64, V): the smoothed
    unigram law of ``tokens`` (1-D integer tensor in ``[0, vocab_size)``).

    Note: with alpha 1 (add-one) and the 60,000-character training split,
    a character never seen gets 1 / 60,100.
    """
    check_int("vocab_size", vocab_size, least=1)
    tokens = check_tokens("tokens", tokens, vocab_size, least=1)
    check_real("alpha", alpha, low=0.0, low_open=True)
    counts = torch.bincount(tokens, minlength=vocab_size).double()
    return (counts + alpha) / (counts.sum() + alpha * vocab_size)


def check_prev(prev: object, vocab_size: int) -> torch.Tensor:
    """``prev`` (an integer tensor of any shape, indices in ``[0,
    vocab_size)``: the tokens whose next-token rows are asked) flattened to
    int64, else ValueError naming ``prev``."""
    if (
        not isinstance(prev, torch.Tensor)
        or prev.is_floating_point()
        or prev.is_complex()
        or prev.dtype == torch.bool
    ):
        got = prev.dtype if isinstance(prev, torch.Tensor) else type(prev).__name__
        raise ValueError(f"prev must be an integer tensor of token indices, got {got}")
    flat = prev.reshape(-1).long()
    low, high = (int(flat.min()), int(flat.max())) if flat.numel() else (0, 0)
    if low < 0 or high >= vocab_size:
        raise ValueError(
            f"prev must lie in [0, {vocab_size}) (the vocabulary), got indices from {low} to {high}"
        )
    return flat


@dataclass(frozen=True, eq=False)
class PairCounts:
    """How often each token ``b`` follows each token ``a`` in a corpus,
    storing only the observed pairs (compressed sparse rows).

    Row ``a`` holds the pairs ``starts[a] <= k < starts[a + 1]``: next
    token ``nexts[k]`` (ascending within the row), seen ``counts[k]`` times;
    ``totals[a] = count(a, .)``. Memory: ``V + 1`` row starts, ``V`` totals
    and two entries per distinct pair (at most n - 1 for n tokens).
    """

    vocab_size: int
    starts: torch.Tensor  # (V + 1,) int64
    nexts: torch.Tensor  # (P,) int64
    counts: torch.Tensor  # (P,) float64, integers >= 1
    totals: torch.Tensor  # (V,) float64

    def __post_init__(self) -> None:
        V = check_int("vocab_size", self.vocab_size, least=1)
        P = self.nexts.numel() if isinstance(self.nexts, torch.Tensor) else -1
        for name, dtype, shape in (
            ("starts", torch.int64, (V + 1,)),
            ("nexts", torch.int64, (P,)),
            ("counts", torch.float64, (P,)),
            ("totals", torch.float64, (V,)),
        ):
            value = getattr(self, name)
            if not isinstance(value, torch.Tensor) or value.dtype != dtype or tuple(value.shape) != shape:
                got = f"{value.dtype} {tuple(value.shape)}" if isinstance(value, torch.Tensor) else value
                raise ValueError(f"{name} must be a {dtype} tensor of shape {shape}, got {got}")

    @classmethod
    def of(cls, tokens: torch.Tensor, vocab_size: int) -> PairCounts:
        """The pair counts of ``tokens`` (1-D integer tensor of at least 2
        indices in ``[0, vocab_size)``), in time O(n log n) for n tokens."""
        check_int("vocab_size", vocab_size, least=1)
        tokens = check_tokens("tokens", tokens, vocab_size)
        # a * V + b orders the pairs by row, then by next token (V**2 < 2**63 for any real vocabulary)
        keys, counts = torch.unique(tokens[:-1] * vocab_size + tokens[1:], return_counts=True)
        rows = keys // vocab_size
        per_row = torch.bincount(rows, minlength=vocab_size)
        starts = torch.cat([torch.zeros(1, dtype=torch.int64), per_row.cumsum(0)])
        totals = torch.bincount(tokens[:-1], minlength=vocab_size).double()
        return cls(vocab_size, starts, keys % vocab_size, counts.double(), totals)

    def dense(self) -> torch.Tensor:
        """The (V, V) float64 count table (V * V cells: a small vocabulary only)."""
        V = self.vocab_size
        table = torch.zeros(V * V, dtype=torch.float64)
        rows = torch.repeat_interleave(torch.arange(V), self.starts.diff())
        table[rows * V + self.nexts] = self.counts
        return table.view(V, V)

    def dense_log_probs(self, alpha: float) -> torch.Tensor:
        """``log((count(a, b) + alpha) / sum_b' (count(a, b') + alpha))``
        (float64, V x V): each row's denominator summed over its V smoothed
        cells, as the bigram of a small vocabulary computes it."""
        check_real("alpha", alpha, low=0.0, low_open=True)
        counts = self.dense() + alpha
        return torch.log(counts / counts.sum(dim=1, keepdim=True))

    def log_rows(self, prev: torch.Tensor, alpha: float) -> torch.Tensor:
        """``log((count(a, b) + alpha) / (count(a, .) + alpha * V))`` for each
        ``a`` of ``prev`` (integer tensor of any shape, indices in
        ``[0, V)``): float32 ``(*prev.shape, V)``, every cell computed in
        float64 and rounded once.

        Time and memory O(N * V) for the N rows asked (the output) plus the
        observed pairs of those rows; nothing of size V * V.

        Note: it agrees with :meth:`dense_log_probs` rounded to float32 to
        one float32 rounding plus (V + 2) float64 roundings of the
        denominator, relative: the dense row sum adds V terms, this one two.
        """
        check_real("alpha", alpha, low=0.0, low_open=True)
        V = self.vocab_size
        flat = check_prev(prev, V)
        denom = self.totals[flat] + alpha * V  # (N,) float64
        out = torch.log(alpha / denom).float()[:, None].repeat(1, V)  # (N, V): every unseen pair
        lo, n = self.starts[flat], self.starts[flat + 1] - self.starts[flat]
        row = torch.repeat_interleave(torch.arange(flat.numel()), n)  # (P_asked,) output row of each pair
        at = torch.arange(int(n.sum())) - torch.repeat_interleave(n.cumsum(0) - n - lo, n)  # its index k
        out[row, self.nexts[at]] = torch.log((self.counts[at] + alpha) / denom[row]).float()
        return out.view(*prev.shape, V)

    def stored_elements(self) -> int:
        """Tensor elements held: ``2 V + 1 + 2 P`` for P distinct pairs."""
        return sum(t.numel() for t in (self.starts, self.nexts, self.counts, self.totals))
