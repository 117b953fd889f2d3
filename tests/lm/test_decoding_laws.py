"""Every path that samples follows its own target law.

Method: each sampler is run with a fixed seed on a small model whose target
law is known independently of the code under test: a Markov chain over a
few symbols (the next symbol's law is ``softmax(table[previous] / T)``,
computed here with numpy), or, for the count-based drafts, the counts of
the training tokens taken again by hand. Laws are judged by Pearson's
chi-square with small cells pooled (aftertrain.stats.chisquare_gof) at
alpha <= 1e-6 per test: a family of rows shares the 1e-6 (Bonferroni), so
a correct sampler fails one of these tests by chance less than once in a
million runs. Count-based drafts are compared exactly (they are
deterministic tables): a dropped or doubled count shows bit for bit.

Teeth: the samples of one temperature judged against another temperature's
law are rejected (a path that ignores its temperature fails), and a draft
fitted on one count fewer differs from the hand count.

"""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import pairwise

import numpy as np
import pytest
import torch

from aftertrain import speculative as S
from aftertrain.lm.decoding import Decoder, generate, sample_token
from aftertrain.lm.ngram import BIGRAM_ALPHA, Bigram, NGram
from aftertrain.stats import ALPHA, chisquare_gof
from tests.common.toys import Markov

TEMPERATURES = (0.5, 1.0, 2.0)
V_ALL = 100  # the project's vocabulary: count drafts are built over it


def softmax(logits: np.ndarray, temperature: float) -> np.ndarray:
    """Reference softmax in numpy float64 (shares no code with aftertrain)."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    z = np.exp(z - z[np.isfinite(z)].max())
    return z / z.sum()


def transition_counts(tokens: list[int], V: int) -> np.ndarray:
    counts = np.zeros((V, V), dtype=np.int64)
    for a, b in pairwise(tokens):
        counts[a, b] += 1
    return counts


def rejected_rows(counts: np.ndarray, law, temperature: float, rows=None) -> list:
    """Rows (previous symbols) whose transition counts the chi-square rejects;
    the family shares alpha = 1e-6 (Bonferroni over the rows tested)."""
    rows = [a for a in (rows if rows is not None else range(counts.shape[0])) if counts[a].sum() >= 20]
    assert rows, "no row has enough transitions to test"
    out = []
    for a in rows:
        fit = chisquare_gof(counts[a], law(a, temperature), counts=True)
        if fit.rejects(ALPHA / len(rows)):
            out.append((a, fit))
    return out


# --- plain decoding ------------------------------------------------------------


@pytest.mark.parametrize("temperature", TEMPERATURES)
def test_sample_token_draws_softmax_of_logits_over_temperature(temperature):
    """4,000 draws from fixed logits over 8 symbols follow softmax(logits / T)
    (numpy reference), at T = 0.5, 1 and 2."""
    logits = torch.tensor([2.0, 1.0, 0.5, 0.0, -0.5, -1.0, -3.0, 1.5])
    g = torch.Generator().manual_seed(10)
    draws = [sample_token(logits, temperature, g) for _ in range(4000)]
    fit = chisquare_gof(np.array(draws), softmax(logits.numpy(), temperature))
    assert not fit.rejects(ALPHA), fit


def test_sample_token_at_temperature_zero_is_argmax_first_on_ties():
    g = torch.Generator().manual_seed(0)
    state = g.get_state()
    assert sample_token(torch.tensor([0.0, 3.0, 1.0, 3.0]), 0, g) == 1
    assert torch.equal(g.get_state(), state), "greedy decoding must not consume randomness"


@pytest.fixture(scope="module")
def markov():
    return Markov(support=5, seed=7)


@pytest.fixture(scope="module")
def chains(markov):
    """One 2,500-symbol plain-decoding run per temperature (the Decoder, its
    cache and window moves at 129, 193, ... included)."""
    prompt = torch.tensor([0])
    return {
        t: generate(markov, prompt, 2500, t, torch.Generator().manual_seed(20)).tolist() for t in TEMPERATURES
    }


@pytest.mark.parametrize("temperature", TEMPERATURES)
def test_generate_follows_the_chain_at_each_temperature(chains, markov, temperature):
    """Transition counts of a 2,500-symbol run follow softmax(table[a] / T)
    for every previous symbol a (5 rows, alpha 1e-6 / 5 each)."""
    assert len(chains[temperature]) == 1 + 2500 and chains[temperature][0] == 0
    counts = transition_counts(chains[temperature], 5)
    assert rejected_rows(counts, markov.law, temperature) == []


@pytest.mark.parametrize("run, judged", [(1.0, 0.5), (0.5, 1.0), (2.0, 1.0)])
@pytest.mark.teeth
def test_law_check_catches_a_run_at_another_temperature(chains, markov, run, judged):
    """Teeth: a decoder that ignores its temperature (samples at T = 1 when
    asked for 0.5, or 1 when asked for 2) fails the law test above."""
    counts = transition_counts(chains[run], 5)
    assert rejected_rows(counts, markov.law, judged) != []


def test_generate_first_token_follows_the_law_after_the_prompts_last_symbol(markov):
    """2,000 one-symbol runs after the prompt (0, 3, 1): the symbol follows
    the row of the prompt's last symbol, 1 (not of its first, 0), at T = 1."""
    g = torch.Generator().manual_seed(21)
    prompt = torch.tensor([0, 3, 1])
    firsts = [int(generate(markov, prompt, 1, 1.0, g)[-1]) for _ in range(2000)]
    fit = chisquare_gof(np.array(firsts), markov.law(1, 1.0))
    assert not fit.rejects(ALPHA), fit


def test_generate_at_temperature_zero_follows_the_argmax_chain(markov):
    """Greedy decoding: every next symbol is the first argmax of its row."""
    out = generate(markov, torch.tensor([3]), 300, 0.0).tolist()
    argmax = markov.table.argmax(dim=1).tolist()
    assert all(b == argmax[a] for a, b in pairwise(out))


def test_decoder_logits_are_the_chains_rows(markov):
    """The Decoder hands the sampler the row of the last symbol at every
    position, across the window moves (positions 129 and 193)."""
    tokens = torch.randint(0, 5, (260,), generator=torch.Generator().manual_seed(1))
    logits = Decoder(markov).feed(tokens)
    assert torch.equal(logits, markov.table[tokens])


# --- count-based drafts against counts taken again by hand ---------------------


@pytest.fixture(scope="module")
def corpus_tokens():
    """A 3,000-token stream from a 6-symbol chain (ids 0..5 of the 100): every
    count of a low-order context is in the hundreds, and each matters."""
    target = Markov(support=6, seed=3, vocab_size=V_ALL)
    return generate(target, torch.tensor([0]), 2999, 1.0, torch.Generator().manual_seed(4))


def hand_bigram(tokens: list[int], alpha: float) -> np.ndarray:
    counts = np.full((V_ALL, V_ALL), alpha)
    for a, b in pairwise(tokens):
        counts[a, b] += 1
    return counts / counts.sum(axis=1, keepdims=True)


def hand_witten_bell(tokens: list[int], order: int):
    """Interpolated Witten-Bell, written from its definition (Chen & Goodman
    1998, 2.5): returns P(. | context) as a numpy float64 function."""
    follow = defaultdict(Counter)  # context tuple -> next-symbol counts
    for j in range(1, order):
        for i in range(j, len(tokens)):
            follow[tuple(tokens[i - j : i])][tokens[i]] += 1
    uni = np.bincount(tokens, minlength=V_ALL).astype(np.float64)
    p0 = (uni + 1) / (uni.sum() + V_ALL)

    def law(context: tuple[int, ...]) -> np.ndarray:
        h = tuple(context[max(0, len(context) - (order - 1)) :]) if order > 1 else ()
        p = p0
        for j in range(1, len(h) + 1):  # from the shortest context up
            c = follow.get(h[len(h) - j :])
            if c:
                total, types = sum(c.values()), len(c)
                seen = np.zeros(V_ALL)
                for w, n in c.items():
                    seen[w] = n
                p = (seen + types * p) / (total + types)
        return p

    return law


def test_bigram_draft_is_the_hand_count(corpus_tokens):
    """Bigram.fit's probabilities are (count(a, b) + 0.1) / (count(a) + 10),
    counted again by hand over the 3,000 tokens, to float32 rounding."""
    probs = Bigram.fit(corpus_tokens).log_probs.double().exp().numpy()
    np.testing.assert_allclose(probs, hand_bigram(corpus_tokens.tolist(), BIGRAM_ALPHA), rtol=1e-6, atol=0)


@pytest.mark.parametrize("order", [1, 2, 3, 5])
def test_ngram_draft_is_the_hand_witten_bell_for_every_context(corpus_tokens, order):
    """NGram.fit's next-symbol law equals the hand-counted Witten-Bell law
    for every context that occurs in the tokens (and the empty one), to 1e-12."""
    ids = corpus_tokens.tolist()
    model, law = NGram.fit(corpus_tokens, order=order), hand_witten_bell(ids, order)
    contexts = {()} | {tuple(ids[max(0, i - order + 1) : i]) for i in range(1, len(ids) + 1)}
    for context in sorted(contexts):
        np.testing.assert_allclose(
            model.distribution(context).numpy(), law(context), rtol=1e-12, atol=1e-15, err_msg=str(context)
        )


def test_ngram_draft_through_the_decoder_gives_the_hand_law_at_every_position(corpus_tokens):
    """Fed through the Decoder in uneven chunks (its token cache, window
    moves at 129 and 193 included), the order-3 n-gram's logits at every
    position are log of the hand-counted law for the two symbols before; fed
    in chunks straight through its own token cache, the same bit for bit as
    in one call."""
    ids = corpus_tokens.tolist()[:300]
    law = hand_witten_bell(corpus_tokens.tolist(), 3)
    decoder = Decoder(NGram.fit(corpus_tokens, order=3).eval())
    rows, start = [], 0
    for size in (1, 5, 2, 60, 1, 100, 131):
        rows.append(decoder.feed(ids[start : start + size]))
        start += size
    logits = torch.cat(rows)
    assert logits.shape == (300, V_ALL)
    # The model's own cache, without the Decoder (which would rebuild a cache
    # that lost tokens): chunks continue the text exactly as one long call.
    model = NGram.fit(corpus_tokens, order=3).eval()
    cache = model.new_cache()
    chunked = torch.cat(
        [model(torch.tensor([ids[a:b]]), cache)[0] for a, b in ((0, 1), (1, 7), (7, 8), (8, 300))]
    )
    assert torch.equal(chunked, model(torch.tensor([ids]))[0])
    for i in range(300):
        expected = np.log(law(tuple(ids[max(0, i - 1) : i + 1]))).astype(np.float32)
        np.testing.assert_allclose(logits[i].numpy(), expected, rtol=1e-6, err_msg=str(i))


@pytest.mark.teeth
def test_hand_count_catches_a_draft_missing_one_count(corpus_tokens):
    """Teeth: the tables built from the tokens minus their first or last
    token (one count dropped) differ from the hand count of the full tokens."""
    ids = corpus_tokens.tolist()
    law = hand_witten_bell(ids, 3)
    for short in (corpus_tokens[1:], corpus_tokens[:-1]):
        model = NGram.fit(short, order=3)
        assert any(
            not np.allclose(
                model.distribution(tuple(ids[max(0, i - 2) : i])).numpy(),
                law(tuple(ids[max(0, i - 2) : i])),
                rtol=1e-12,
                atol=1e-15,
            )
            for i in range(len(ids) + 1)
        )
    bigram = Bigram.fit(corpus_tokens[:-1]).log_probs.double().exp().numpy()
    assert not np.allclose(bigram, hand_bigram(ids, BIGRAM_ALPHA), rtol=1e-6, atol=0)


def test_ngram_draft_through_the_decoder_samples_its_own_law(corpus_tokens):
    """Plain decoding with the n-gram as the model (order 2: the law depends
    on the last symbol): 2,000 symbols whose transitions follow the
    hand-counted law, rows 0..5 (alpha 1e-6 / 6 each)."""
    model = NGram.fit(corpus_tokens, order=2).eval()
    law = hand_witten_bell(corpus_tokens.tolist(), 2)
    out = generate(model, torch.tensor([0]), 2000, 1.0, torch.Generator().manual_seed(5)).tolist()
    counts = transition_counts(out, V_ALL)
    assert rejected_rows(counts, lambda a, t: law((a,)), 1.0, rows=range(6)) == []


# --- the speculative generator, with each kind of draft -------------------------


def speculative_counts(target, draft, temperature: float, k: int, seed: int, n_new: int):
    out = S.speculative_generate(
        target, draft, torch.tensor([0]), n_new, k, temperature, torch.Generator().manual_seed(seed)
    )
    return transition_counts(out.tokens.tolist(), target.config.vocab_size), out


@pytest.mark.parametrize(
    "draft_kind, temperature, k",
    [
        ("chain", 1.0, 3),
        ("chain", 0.5, 2),
        ("chain", 2.0, 4),
        ("bigram", 1.0, 2),
        ("n-gram", 1.0, 3),
    ],
)
def test_speculative_generator_follows_the_target_law(corpus_tokens, draft_kind, temperature, k):
    """The generator's output follows the target chain's law whatever the
    draft: another chain, the bigram or the n-gram fitted on tokens of a
    third chain (so drafts are wrong often and rejections exercise the
    residual draw). 1,500 symbols, 6 rows, alpha 1e-6 / 6 each."""
    target = Markov(support=6, seed=11, vocab_size=V_ALL)
    draft = {
        "chain": lambda: Markov(support=6, seed=12, vocab_size=V_ALL),
        "bigram": lambda: Bigram.fit(corpus_tokens),
        "n-gram": lambda: NGram.fit(corpus_tokens, order=3),
    }[draft_kind]().eval()
    counts, out = speculative_counts(target, draft, temperature, k, seed=30, n_new=1500)
    assert out.accepted < out.drafted, "the draft must be rejected sometimes"
    assert rejected_rows(counts, target.law, temperature, rows=range(6)) == []


@pytest.mark.teeth
def test_law_check_catches_a_speculative_run_judged_at_another_temperature():
    target = Markov(support=6, seed=11, vocab_size=V_ALL)
    draft = Markov(support=6, seed=12, vocab_size=V_ALL)
    counts, _ = speculative_counts(target, draft, 1.0, 3, seed=30, n_new=1500)
    assert rejected_rows(counts, target.law, 0.5, rows=range(6)) != []


def test_speculative_generator_at_temperature_zero_is_the_argmax_chain():
    target = Markov(support=6, seed=11, vocab_size=V_ALL)
    draft = Markov(support=6, seed=12, vocab_size=V_ALL)
    out = S.speculative_generate(target, draft, torch.tensor([2]), 300, 3, 0.0).tokens.tolist()
    argmax = target.table.argmax(dim=1).tolist()
    assert all(b == argmax[a] for a, b in pairwise(out))
