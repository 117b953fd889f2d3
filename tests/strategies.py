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


# --- speculative decoding (claims S1, S2, X6, X7) ------------------------------------

import contextlib  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from aftertrain.drafts import TokenCache  # noqa: E402


class ToyConfig:
    def __init__(self, vocab_size: int, block_size: int = 128) -> None:
        self.vocab_size = vocab_size
        self.block_size = block_size


class ToyTable(nn.Module):
    """A toy language model over ``vocab_size`` symbols for exact laws (X6).

    The next-symbol logits are a random table indexed by the last ``order``
    symbols (1 or 2; the first symbol of a text sees a "start" index as its
    predecessor): context-dependent, cheap, and with the Decoder interface
    (``config``, ``new_cache()``, ``forward(idx, cache)``). A fraction
    ``zero_fraction`` of the logits is -inf (probability 0 at any
    temperature), never a row's largest, so supports differ between models.
    """

    def __init__(self, vocab_size: int, seed: int, order: int = 2, scale: float = 1.5,
                 zero_fraction: float = 0.2) -> None:
        super().__init__()
        assert order in (1, 2), "order must be 1 or 2"
        self.config = ToyConfig(vocab_size)
        self.order = order
        V = vocab_size
        g = torch.Generator().manual_seed(seed)
        logits = torch.randn(V + 1, V, V, generator=g) * scale
        drop = torch.rand(V + 1, V, V, generator=g) < zero_fraction
        drop &= logits < logits.amax(-1, keepdim=True)  # keep each row's top symbol
        self.register_buffer("table", logits.masked_fill(drop, float("-inf")))

    def forward(self, idx: torch.Tensor, cache: TokenCache | None = None) -> torch.Tensor:
        out = []
        for row in idx.tolist():
            seen = (cache.tokens if cache is not None else []) + row
            start = len(seen) - len(row)
            V = self.config.vocab_size
            prev = [seen[i - 1] if i >= 1 and self.order == 2 else V for i in range(start, len(seen))]
            out.append(self.table[torch.tensor(prev), torch.tensor(seen[start:])])
            if cache is not None:
                cache.tokens.extend(row)
        return torch.stack(out)

    def new_cache(self) -> TokenCache:
        return TokenCache()


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


def toy_gpt(vocab_size: int, seed: int, n_embd: int = 16) -> nn.Module:
    """A tiny randomly initialised GPT over ``vocab_size`` symbols (1 layer,
    the real key/value cache and window policy), weights scaled up so its
    distributions are far from uniform."""
    from aftertrain.model import GPT, GPTConfig

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = GPT(GPTConfig(vocab_size=vocab_size, n_layer=1, n_head=2, n_embd=n_embd))
    with torch.no_grad():
        net.head.weight.mul_(40.0)
    return net.eval()


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


@contextlib.contextmanager
def one_thread():
    """torch on one thread inside the block, restored after: for module- and
    session-scoped fixtures, which are set up before the autouse one-thread
    fixture of conftest.py takes effect (on a loaded 2-core machine two
    threads made the acceptance runs eight times slower)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
