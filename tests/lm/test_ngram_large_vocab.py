"""The table models and the loss on a subword vocabulary (151,936 symbols,
Qwen2's): memory proportional to the corpus, never V * V, and the loss
scored a bounded number of logits at a time. The character vocabulary's
figures are guarded bit for bit by tests/lm/test_ngram.py's stored table."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from aftertrain.lm import ngram as BG
from aftertrain.lm.counts import PairCounts
from aftertrain.lm.evaluation import LOGITS_BUDGET, val_loss
from tests.common.toys import toy_gpt

V = 151_936
N_TRAIN = 200_000
U32 = 2.0**-24  # float32 unit roundoff
U64 = 2.0**-53  # float64 unit roundoff


@pytest.fixture(scope="module")
def corpus() -> tuple[torch.Tensor, torch.Tensor]:
    """200,000 training tokens and 301 validation tokens drawn uniformly
    from the vocabulary (seed 0): the hardest case for memory, every pair
    distinct."""
    g = torch.Generator().manual_seed(0)
    return torch.randint(0, V, (N_TRAIN,), generator=g), torch.randint(0, V, (301,), generator=g)


@pytest.fixture(scope="module")
def bigram(corpus) -> BG.Bigram:
    return BG.Bigram.fit(corpus[0], vocab_size=V)


class LogitsRecorder(nn.Module):
    """Wraps a model and records how many logits each forward returned."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner, self.config, self.sizes = inner, inner.config, []

    def new_cache(self):
        return self.inner.new_cache()

    def forward(self, idx, cache=None):
        logits = self.inner(idx, cache)
        self.sizes.append(logits.numel())
        return logits


def _loss_atol(log_probs: torch.Tensor) -> float:
    """How far val_loss (float32 log-softmax) may sit from the float64 mean
    of the targets' -log p when the rows ``log_probs`` are normalized: the
    log-sum-exp of a row is 0 up to each log's float32 rounding (U32 *
    |log p|) and the float32 sum of V probabilities, (V - 1) * U32 at worst
    in any order."""
    return 2 * U32 * float(log_probs.abs().max()) + (V - 1) * U32


def test_bigram_of_a_151936_symbol_vocabulary_stores_its_pairs_not_a_table(bigram, corpus):
    """Memory, read off the structure: 2 V + 1 + 2 P elements for P <= n - 1
    distinct pairs (703,871 here, 5.6 MiB), where the (V, V) table would
    hold 2.3e10 (92 GB in float32)."""
    assert bigram.config.vocab_size == V and not hasattr(bigram, "log_probs")
    assert bigram.pairs.stored_elements() <= 2 * V + 1 + 2 * (N_TRAIN - 1)
    assert sum(b.numel() for b in bigram.buffers()) == 0  # nothing dense hides elsewhere


@pytest.fixture(scope="module")
def zipf_corpus() -> tuple[torch.Tensor, torch.Tensor]:
    """200,000 training and 301 validation tokens with frequencies falling
    as 1 / rank (seed 1): most validation pairs were seen in training, so
    the counts, not only the smoothing, decide the law."""
    weights = 1.0 / torch.arange(1, V + 1, dtype=torch.float64)
    tokens = torch.multinomial(
        weights, N_TRAIN + 301, replacement=True, generator=torch.Generator().manual_seed(1)
    )
    return tokens[:N_TRAIN], tokens[N_TRAIN:]


def add_alpha_gap(
    model: BG.Bigram, train: torch.Tensor, val: torch.Tensor, alpha: float
) -> tuple[float, float]:
    """The largest |log P_model(y | x) - log P(y | x)| over the pairs of
    ``val``, P = (count(x, y) + alpha) / (count(x, .) + alpha V) counted by
    hand on ``train`` in float64, and its allowance: one float32 rounding
    of the log (2**-23 |log P|) and the float64 roundings of the law's
    three operations and its log (8 U64)."""
    pair = Counter((train[:-1] * V + train[1:]).tolist())
    after = torch.bincount(train[:-1], minlength=V).double()
    x, y = val[:-1], val[1:]
    law = torch.tensor(
        [
            (pair[a * V + b] + alpha) / (float(after[a]) + alpha * V)
            for a, b in zip(x.tolist(), y.tolist(), strict=True)
        ],
        dtype=torch.float64,
    ).log()
    got = model.rows(x).gather(1, y[:, None])[:, 0].double()
    return float((got - law).abs().max()), 2.0**-23 * float(law.abs().max()) + 8 * U64


def loss_gap(model: BG.Bigram, val: torch.Tensor) -> float:
    """|val_loss(model) - the float64 mean of -log P_model(y | x)| on ``val``:
    zero up to :func:`_loss_atol` when every row is normalized."""
    x, y = val[:-1], val[1:]
    mean = float(-model.rows(x).gather(1, y[:, None]).double().mean())
    return abs(val_loss(model, val) - mean)


class AlphaDroppedBigram(BG.Bigram):
    """A broken bigram: (count + alpha) / count(a, .), the unseen pairs'
    smoothing mass never paid for in the denominator."""

    def rows(self, prev: torch.Tensor) -> torch.Tensor:
        totals = self.pairs.totals[prev]
        return (
            super().rows(prev) + torch.log((totals + self.alpha * V) / totals.clamp(min=1))[..., None].float()
        )


@pytest.fixture(scope="module")
def zipf_bigram(zipf_corpus) -> BG.Bigram:
    return BG.Bigram.fit(zipf_corpus[0], vocab_size=V)


def test_bigram_rows_on_a_151936_symbol_vocabulary_are_the_add_alpha_law(zipf_corpus, zipf_bigram):
    """At the 300 validation pairs (:func:`add_alpha_gap` gives the method
    and the allowance)."""
    gap, allowed = add_alpha_gap(zipf_bigram, *zipf_corpus, BG.BIGRAM_ALPHA)
    assert gap <= allowed


@pytest.mark.teeth
def test_add_alpha_check_catches_alpha_dropped_from_the_seen_counts(zipf_corpus):
    """The broken bigram scores seen pairs count / (count(a, .) + alpha V):
    its counts are the true ones minus alpha, to which it adds alpha."""
    pairs = PairCounts.of(zipf_corpus[0], V)
    broken = BG.Bigram(pairs=dataclasses.replace(pairs, counts=pairs.counts - BG.BIGRAM_ALPHA), alpha=0.1)
    gap, allowed = add_alpha_gap(broken, *zipf_corpus, BG.BIGRAM_ALPHA)
    assert gap > 100 * allowed


def test_bigram_loss_on_a_151936_symbol_vocabulary_is_the_mean_of_its_rows(zipf_corpus, zipf_bigram):
    """val_loss over 300 targets, scored 128 positions (19.4 million
    logits) a forward, against the float64 mean of the targets' -log p
    (tolerance :func:`_loss_atol`)."""
    val = zipf_corpus[1]
    assert loss_gap(zipf_bigram, val) <= _loss_atol(zipf_bigram.rows(val[:-1]))


@pytest.mark.teeth
def test_loss_check_catches_rows_that_are_not_normalized(zipf_corpus, zipf_bigram):
    val = zipf_corpus[1]
    broken = AlphaDroppedBigram(pairs=zipf_bigram.pairs, alpha=zipf_bigram.alpha)
    assert loss_gap(broken, val) > 100 * _loss_atol(broken.rows(val[:-1]))


def test_val_loss_returns_at_most_the_budget_of_logits_a_forward(bigram, corpus):
    """A 128-symbol window of 151,936 logits is 19.4 million: one window a
    forward. A 256-symbol window (38.9 million) is fed in pieces through the
    cache, and every target's loss is the same float32 value as before, so
    the means differ only by the float64 sums' grouping (n * U64, relative)."""
    val = corpus[1]
    whole = LogitsRecorder(bigram)
    loss = val_loss(whole, val)
    wide = LogitsRecorder(BG.Bigram(pairs=bigram.pairs, alpha=bigram.alpha, block_size=256))
    assert val_loss(wide, val) == pytest.approx(loss, rel=val.numel() * U64, abs=0)
    assert max(whole.sizes + wide.sizes) <= LOGITS_BUDGET and len(whole.sizes) == len(wide.sizes) == 3
    uniform = LogitsRecorder(BG.Uniform(block_size=256, vocab_size=V))
    per_target = float(F.cross_entropy(torch.zeros(1, V), torch.tensor([0])))
    # every term is the same float32 (24 bits), so the float64 sum and mean are exact
    assert val_loss(uniform, val) == per_target and max(uniform.sizes) <= LOGITS_BUDGET
    assert per_target == pytest.approx(math.log(V), abs=U32 * math.log(V) * 4)


def test_sparse_and_dense_bigrams_meet_at_the_dense_limit():
    """Up to DENSE_MAX_VOCAB symbols fit gives the (V, V) table, one more
    gives the pairs; on the same counts their rows agree to the rounding of
    the row sums (tests/lm/test_counts.py derives the tolerance)."""
    n = BG.DENSE_MAX_VOCAB
    tokens = torch.randint(0, n, (5_000,), generator=torch.Generator().manual_seed(3))
    dense, sparse = BG.Bigram.fit(tokens, vocab_size=n), BG.Bigram.fit(tokens, vocab_size=n + 1)
    assert dense.pairs is None and dense.log_probs.shape == (n, n) and sparse.pairs is not None
    prev = torch.arange(n)
    again = BG.Bigram(pairs=PairCounts.of(tokens, n), alpha=BG.BIGRAM_ALPHA)
    torch.testing.assert_close(
        again.rows(prev), dense.rows(prev), rtol=2.0**-23 + 4 * U64, atol=(n + 2) * U64
    )
    assert again.rows(prev).shape == dense.rows(prev).shape == (n, n)


def test_ngram_of_a_151936_symbol_vocabulary_gives_distributions(corpus):
    """Order 3 on the 200,000 tokens: each law sums to 1 (float64, V terms:
    V * U64 each for the mix and the sum), and the forward is its log at
    every position."""
    train, val = corpus
    ngram = BG.NGram.fit(train, order=3, vocab_size=V)
    ids = train[:50].tolist()
    for end in (0, 1, 2, 30):
        assert float(ngram.distribution(tuple(ids[:end])).sum()) == pytest.approx(1.0, abs=4 * V * U64)
    logits = ngram(train[:40].view(1, 40))
    assert torch.equal(logits[0, 29], torch.log(ngram.distribution(tuple(ids[28:30]))).float())
    assert math.isfinite(val_loss(ngram, val))
    assert len(ngram._memo) * V <= BG.MEMO_MAX_FLOATS


def test_unigram_is_the_ngrams_add_one_law_and_scores_any_vocabulary(corpus):
    """On the characters, Unigram.fit at alpha 1 is bit for bit the n-gram's
    P_0 (one function computes both); on 151,936 symbols it scores the
    float64 mean of -log P(y) (tolerance :func:`_loss_atol`)."""
    assert torch.equal(BG.Unigram.fit().log_probs, torch.log(BG.NGram.fit(order=1).unigram).float())
    train, val = corpus
    unigram = BG.Unigram.fit(train, vocab_size=V)
    counts = torch.bincount(train, minlength=V).double()
    p = (counts[val[1:]] + 1) / (N_TRAIN + V)
    assert val_loss(unigram, val) == pytest.approx(float(-p.log().mean()), abs=_loss_atol(unigram.log_probs))


def test_baselines_of_a_reference_with_its_own_vocabulary():
    """A 300-symbol reference scored on its own tokens: the uniform
    predictor gives float32 ln(300), the bigram is fit on those tokens."""
    gpt = toy_gpt(300, seed=0)
    g = torch.Generator().manual_seed(4)
    train, val = torch.randint(0, 300, (3_000,), generator=g), torch.randint(0, 300, (400,), generator=g)
    losses = BG.baseline_losses(gpt, train, val)
    assert losses["uniform"] == float(F.cross_entropy(torch.zeros(1, 300), torch.tensor([0])))
    assert losses["bigram"] == val_loss(BG.Bigram.fit(train, vocab_size=300), val)
    assert losses["reference"] == val_loss(gpt, val)


def test_sparse_bigram_rows_are_the_add_alpha_law_at_the_alpha_it_was_fitted_with(zipf_corpus):
    """At alpha 0.5 (not BIGRAM_ALPHA) the 151,936-symbol bigram's rows are
    that alpha's law (:func:`add_alpha_gap`'s method and allowance)."""
    bigram = BG.Bigram.fit(zipf_corpus[0], alpha=0.5, vocab_size=V)
    assert bigram.alpha == 0.5
    gap, allowed = add_alpha_gap(bigram, *zipf_corpus, 0.5)
    assert gap <= allowed


def test_unigram_scores_the_vocabulary_given_not_the_tokens_seen():
    """Tokens 0, 1, 1 over 2,000 symbols at alpha 1: P = (c + 1) / (3 + 2000)
    for each of the 2,000, the 1,998 unseen ones included (float64, then
    one float32 rounding of the log, as Unigram stores it)."""
    unigram = BG.Unigram.fit(torch.tensor([0, 1, 1]), alpha=1.0, vocab_size=2000)
    counts = torch.zeros(2000, dtype=torch.float64)
    counts[0], counts[1] = 1, 2
    assert unigram.config.vocab_size == 2000
    assert torch.equal(unigram.log_probs, torch.log((counts + 1) / 2003).float())
