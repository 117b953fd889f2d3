"""Token counts and their add-alpha smoothing (aftertrain.lm.counts): the
sparse pair counts are the hand counts, their rows are the dense table's
to the rounding the two sums differ by, and every row is a distribution."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from aftertrain.lm.counts import PairCounts, add_alpha_unigram

U64 = 2.0**-53  # float64 unit roundoff
U32 = 2.0**-24  # float32 unit roundoff


def _zipf_tokens(n: int, vocab_size: int, seed: int) -> torch.Tensor:
    """n tokens whose frequencies fall as 1 / rank, so rows hold from one
    to hundreds of distinct pairs (a corpus's shape, not a flat one)."""
    weights = 1.0 / torch.arange(1, vocab_size + 1, dtype=torch.float64)
    return torch.multinomial(weights, n, replacement=True, generator=torch.Generator().manual_seed(seed))


def test_pair_counts_are_the_hand_counted_pairs():
    tokens = torch.tensor([0, 1, 0, 1, 0, 2, 4, 4])
    pairs = PairCounts.of(tokens, 5)
    hand = Counter(zip(tokens[:-1].tolist(), tokens[1:].tolist(), strict=True))
    table = pairs.dense()
    assert {(a, b): int(table[a, b]) for a, b in hand} == hand and table.sum() == 7
    assert pairs.starts.tolist() == [0, 2, 3, 4, 4, 5]  # row 0: 1 and 2; 1: 0; 2: 4; 3: none; 4: 4
    assert pairs.nexts.tolist() == [1, 2, 0, 4, 4] and pairs.counts.tolist() == [2, 1, 2, 1, 1]
    assert pairs.totals.tolist() == [3, 2, 1, 0, 1]
    assert pairs.stored_elements() == 2 * 5 + 1 + 2 * 5


def test_sparse_rows_equal_the_dense_table_to_the_rounding_of_its_row_sums():
    """Method: a 1,500-symbol vocabulary (past the bigram's dense limit),
    20,000 Zipf tokens, alpha 0.1; every row of :meth:`log_rows` against
    :meth:`dense_log_probs` rounded to float32.

    Tolerance: both compute log(numerator / denominator) from the same
    numerator; the dense denominator adds V rounded terms (at most V
    roundings, relative U64 each), the sparse one two (alpha * V and its
    sum), so the float64 logs differ by at most (V + 2) * U64 absolute
    (plus a rounding of each log, under 4 * U64 relative); each is then
    rounded once to float32 (2**-23 relative covers both roundings)."""
    V, alpha = 1500, 0.1
    pairs = PairCounts.of(_zipf_tokens(20_000, V, seed=0), V)
    sparse = pairs.log_rows(torch.arange(V), alpha)
    dense = pairs.dense_log_probs(alpha).float()
    torch.testing.assert_close(sparse, dense, rtol=2.0**-23 + 4 * U64, atol=(V + 2) * U64)
    assert sparse.shape == (V, V) and sparse.dtype == torch.float32


def test_log_rows_follow_the_shape_of_what_is_asked():
    pairs = PairCounts.of(_zipf_tokens(500, 50, seed=1), 50)
    prev = torch.tensor([[3, 0, 3], [49, 7, 7]])
    rows = pairs.log_rows(prev, 0.5)
    assert rows.shape == (2, 3, 50)
    assert torch.equal(rows[0, 0], rows[0, 2]) and torch.equal(
        rows[1, 1], pairs.log_rows(torch.tensor([7]), 0.5)[0]
    )


def row_sum_error(log_rows: Callable[[torch.Tensor], torch.Tensor], vocab_size: int) -> float:
    """Largest |sum_b P(b | a) - 1| over every row a of ``log_rows`` (the
    float32 log-probabilities, summed in float64)."""
    rows = log_rows(torch.arange(vocab_size)).double()
    return float((rows.exp().sum(dim=1) - 1).abs().max())


def _row_sum_bound(log_rows: torch.Tensor, vocab_size: int) -> float:
    # each float32 log is off by at most U32 * |log p| (absolute), so each p
    # by that much relative; the float64 exp and sum add (V + 1) * U64
    return U32 * float(log_rows.abs().max()) + (vocab_size + 1) * U64 * 4


corpora = st.integers(1, 40).flatmap(
    lambda V: st.tuples(
        st.just(V), st.lists(st.integers(0, V - 1), min_size=2, max_size=200), st.floats(0.01, 10.0)
    )
)


@given(corpora)
def test_every_row_is_a_distribution_and_each_cell_is_the_add_alpha_count(case):
    """Property: for any corpus, vocabulary and alpha, each row sums to 1
    (to the float32 rounding of its logs, :func:`_row_sum_bound`) and each
    cell is (count(a, b) + alpha) / (count(a, .) + alpha * V) from a hand
    count, to one float32 rounding of the log (the hand law rounds the same
    float64 operations; 8 * U64 absolute covers the log's own rounding)."""
    V, ids, alpha = case
    pairs = PairCounts.of(torch.tensor(ids), V)
    rows = pairs.log_rows(torch.arange(V), alpha)
    assert row_sum_error(lambda prev: pairs.log_rows(prev, alpha), V) <= _row_sum_bound(rows, V)
    hand, after = Counter(zip(ids[:-1], ids[1:], strict=True)), Counter(ids[:-1])
    law = torch.tensor(
        [[(hand[a, b] + alpha) / (after[a] + alpha * V) for b in range(V)] for a in range(V)],
        dtype=torch.float64,
    )
    torch.testing.assert_close(rows.double(), law.log(), rtol=2.0**-23, atol=8 * U64)


def _alpha_dropped_from_the_denominator(pairs: PairCounts, prev: torch.Tensor, alpha: float) -> torch.Tensor:
    """A broken log_rows: (count + alpha) / count(a, .), the smoothing mass
    of the unseen pairs never paid for."""
    ok = pairs.log_rows(prev, alpha).double()
    denom = pairs.totals[prev] + alpha * pairs.vocab_size
    return (ok + torch.log(denom / pairs.totals[prev].clamp(min=1))[:, None]).float()


@pytest.mark.teeth
def test_row_sum_check_catches_alpha_dropped_from_the_denominator():
    V, alpha = 30, 0.1
    pairs = PairCounts.of(_zipf_tokens(300, V, seed=2), V)
    rows = pairs.log_rows(torch.arange(V), alpha)
    broken = row_sum_error(lambda prev: _alpha_dropped_from_the_denominator(pairs, prev, alpha), V)
    assert broken > 100 * _row_sum_bound(rows, V)
    assert row_sum_error(lambda prev: pairs.log_rows(prev, alpha), V) <= _row_sum_bound(rows, V)


def test_add_alpha_unigram_is_the_smoothed_frequency():
    p = add_alpha_unigram(torch.tensor([0, 0, 2]), 4, 1.0)
    assert p.tolist() == [3 / 7, 1 / 7, 2 / 7, 1 / 7] and p.dtype == torch.float64
    assert math.isclose(float(add_alpha_unigram(torch.tensor([1, 1]), 3, 0.5).sum()), 1.0)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: PairCounts.of(torch.tensor([0, 5]), 5), r"tokens must lie in \[0, 5\)"),
        (lambda: PairCounts.of(torch.tensor([0]), 5), "tokens must be a 1-D integer tensor of at least 2"),
        (lambda: PairCounts.of(torch.tensor([0, 1]), 0), "vocab_size must be an int >= 1"),
        (
            lambda: PairCounts.of(torch.tensor([0, 1]), 2).log_rows(torch.tensor([2]), 0.1),
            r"prev must lie in",
        ),
        (
            lambda: PairCounts.of(torch.tensor([0, 1]), 2).log_rows(torch.tensor([0.0]), 0.1),
            "prev must be an",
        ),
        (lambda: PairCounts.of(torch.tensor([0, 1]), 2).log_rows(torch.tensor([0]), 0.0), "alpha must be"),
        (lambda: PairCounts.of(torch.tensor([0, 1]), 2).dense_log_probs(-1.0), "alpha must be"),
        (lambda: add_alpha_unigram(torch.tensor([0, 1]), 2, float("nan")), "alpha must be"),
        (
            lambda: PairCounts(
                2,
                torch.zeros(2, dtype=torch.int64),
                torch.zeros(0, dtype=torch.int64),
                torch.zeros(0, dtype=torch.float64),
                torch.zeros(2, dtype=torch.float64),
            ),
            r"starts must be a torch.int64 tensor of shape \(3,\)",
        ),
    ],
    ids=[
        "past the vocabulary",
        "one token",
        "no vocabulary",
        "prev past",
        "float prev",
        "alpha 0",
        "dense alpha",
        "unigram alpha",
        "short starts",
    ],
)
def test_counts_refuse_bad_arguments_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call()
