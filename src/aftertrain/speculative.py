"""Speculative decoding (part 4): the verification rule and the generator.

A cheap draft model proposes ``k`` characters ``x_1 .. x_k`` from its
distributions ``q_1 .. q_k``; the target scores all of them plus one more
position in a single cached pass, giving ``p_1 .. p_{k+1}``. Position ``i``
is accepted when ``u_i < p_i(x_i) / q_i(x_i)`` (``u_i`` uniform on [0, 1));
at the first rejection the next character is drawn from
``normalize(max(0, p_i - q_i))`` and the rest of the draft is discarded; if
all ``k`` are accepted a bonus character is drawn from ``p_{k+1}``.

Why the law is exactly the target's: at one position the emitted character
``y`` has probability ``q(y) min(1, p(y)/q(y)) + (1 - sum_x min(p(x), q(x)))
* max(0, p(y) - q(y)) / sum_x max(0, p(x) - q(x))``; both sums equal
``1 - TV(p, q)``, so this is ``min(p(y), q(y)) + max(0, p(y) - q(y)) = p(y)``.
Given acceptance, the next position repeats the argument with the target's
distribution for the longer text, so every emitted character follows the
target's next-character law for the text before it.

Context policy. Both models predict through :class:`aftertrain.model.Decoder`,
whose window start is a function of the text length alone
(:func:`aftertrain.model.context_start`), so ``p_i`` is the distribution plain
decoding (:func:`aftertrain.model.generate`) would use for the same text:
plain and speculative decoding sample the same law.

Randomness. Every draw is an inverse-CDF draw from a float64 uniform of the
caller's ``torch.Generator``; :func:`verify_with_uniforms` is the rule as a
pure function of those uniforms, so tests can replay it exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn

from aftertrain import model as _model
from aftertrain import text as _text
from aftertrain.stats import SUM_TOLERANCE

__all__ = [
    "distributions",
    "verify",
    "verify_batch",
    "verify_with_uniforms",
    "SpeculativeResult",
    "speculative_generate",
    "vocab_size",
    "prompt_text",
    "first_token_samples",
    "first_token_table",
    "predicted_acceptance",
    "acceptance_table",
    "draft_cost_table",
    "verify_cost_table",
    "speedup_table",
]


# --- distributions and draws --------------------------------------------------


def distributions(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """float64 next-character distributions from logits (last axis).

    ``softmax(logits / temperature)`` for ``temperature > 0`` (the same
    function plain decoding samples from, :func:`aftertrain.model.probabilities`);
    at temperature 0 the one-hot vector of the argmax (first index on ties, as
    :func:`aftertrain.model.sample_token`), so greedy decoding is the same rule
    applied to point masses.
    """
    _check_temperature(temperature)
    if temperature == 0:
        top = torch.argmax(logits, dim=-1)
        return torch.nn.functional.one_hot(top, logits.shape[-1]).double()
    return _model.probabilities(logits, temperature)


def _sample(dist: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Inverse-CDF draws: row ``n`` gives the index ``i`` with
    ``cdf[i-1] <= x < cdf[i]``, ``x = v[n] * cdf[-1]``.

    ``dist`` (N, V) is non-negative with a positive sum per row (it need not
    be normalised: scaling ``v`` by the total is the normalisation). A cell of
    zero mass is an empty interval and is never drawn; ``x`` is kept strictly
    below the total (should ``v * total`` round up to it), so the draw always
    lands on a cell with mass.
    """
    cdf = dist.cumsum(-1)  # (N, V)
    total = cdf[:, -1:]
    x = torch.minimum(v.unsqueeze(-1) * total, torch.nextafter(total, torch.zeros_like(total)))
    return torch.searchsorted(cdf, x, right=True).squeeze(-1)


def _rule(
    p: torch.Tensor, q: torch.Tensor, drafts: torch.Tensor, u: torch.Tensor, v: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The verification rule on a batch, as a function of its uniforms.

    Shapes: p (N, k+1, V), q (N, k, V), drafts (N, k), u (N, k), v (N,).
    Returns (accepted (N,), token (N,)).
    """
    N, k = drafts.shape
    px = p[:, :k].gather(2, drafts.unsqueeze(2)).squeeze(2)  # (N, k)
    qx = q.gather(2, drafts.unsqueeze(2)).squeeze(2)  # (N, k)
    # u < p/q written without the division: no 0/0, and strict, so a
    # character with p(x) = 0 is never accepted, even at u = 0.
    ok = u * qx < px
    accepted = ok.long().cumprod(dim=1).sum(dim=1)  # leading acceptances
    rows = torch.arange(N)
    p_n = p[rows, accepted]  # (N, V): the target at the first rejection, or the bonus
    # q padded with a zero row at position k+1: the bonus residual is p itself.
    q_n = torch.cat([q, q.new_zeros(N, 1, q.shape[-1])], dim=1)[rows, accepted]
    residual = (p_n - q_n).clamp_min(0)
    # All zero only if p <= q everywhere, i.e. p == q up to rounding. Then the
    # rejection itself had probability sum max(0, q - p) = sum max(0, p - q)
    # = 0 up to float error (it happens only when u * q(x) rounds to p(x)),
    # so whatever is drawn here moves the law by at most that float error;
    # drawing from p keeps every draw inside p's support.
    empty = (residual.sum(-1) <= 0).unsqueeze(-1)
    residual = torch.where(empty, p_n, residual)
    return accepted, _sample(residual, v)


def _draw_uniforms(n: int, k: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    # The documented draw order: all acceptance uniforms u (n, k), then v (n,).
    u = torch.rand(n, k, dtype=torch.float64, generator=generator)
    v = torch.rand(n, dtype=torch.float64, generator=generator)
    return u, v


def _verify(
    p: torch.Tensor, q: torch.Tensor, drafts: torch.Tensor, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    u, v = _draw_uniforms(drafts.shape[0], drafts.shape[1], generator)
    return _rule(p, q, drafts, u, v)


# --- the public rule ------------------------------------------------------------


def verify_with_uniforms(
    p: torch.Tensor,
    q: torch.Tensor,
    drafts: torch.Tensor,
    u: torch.Tensor,
    v: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The verification rule (S1) on a batch of N independent rounds, given its uniforms.

    Args:
        p: target distributions (N, k+1, V): row ``i`` for the position of
            draft ``i``, row ``k`` for the bonus position.
        q: draft distributions (N, k, V) the drafts were sampled from.
        drafts: drafted characters (N, k), each with ``q > 0``.
        u: acceptance uniforms (N, k) in [0, 1).
        v: uniforms (N,) in [0, 1) for the inverse-CDF draw of the next character.

    Returns:
        ``(accepted, token)``, each (N,) long: ``accepted`` = number of leading
        drafts with ``u_i * q_i(x_i) < p_i(x_i)``; ``token`` is drawn from
        ``normalize(max(0, p_a - q_a))`` at the first rejection ``a``, or from
        ``p_{k+1}`` when all ``k`` are accepted. ``token`` always lies in the
        support of the distribution it is drawn from (never NaN).

    Note:
        p = [0.5, 0.5], q = [1, 0], draft 0, u = 0.6: 0.6 * 1 >= 0.5, rejected;
        the residual is [0, 0.5], so the token is 1 whatever v is.
    """
    p, q, drafts = _check_rule_inputs(p, q, drafts)
    N, k = drafts.shape
    for name, x, shape in (("u", u, (N, k)), ("v", v, (N,))):
        if not isinstance(x, torch.Tensor) or tuple(x.shape) != shape:
            raise ValueError(f"{name} must be a tensor of shape {shape}")
        if not bool(((x >= 0) & (x < 1)).all()):
            raise ValueError(f"{name} must lie in [0, 1)")
    return _rule(p, q, drafts, u.double(), v.double())


def verify_batch(
    p: torch.Tensor, q: torch.Tensor, drafts: torch.Tensor, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`verify_with_uniforms` with uniforms drawn from ``generator``
    (first ``u`` as ``rand(N, k)``, then ``v`` as ``rand(N)``, float64)."""
    p, q, drafts = _check_rule_inputs(p, q, drafts)
    _check_generator(generator)
    return _verify(p, q, drafts, generator)


def verify(
    p: torch.Tensor, q: torch.Tensor, drafts: torch.Tensor, generator: torch.Generator
) -> tuple[int, int]:
    """One round of the verification rule (S1): ``(accepted, next token)``.

    Args:
        p: target distributions (k+1, V) at the k drafted positions and the next.
        q: draft distributions (k, V) the drafts were sampled from.
        drafts: the k drafted characters (k,), each with ``q > 0``; k >= 0.
        generator: the source of the uniforms (drawn as by :func:`verify_batch`
            with N = 1).

    The round emits ``drafts[:accepted] + [token]``; each emitted character
    follows ``p`` at its position (module docstring).
    """
    if not isinstance(p, torch.Tensor) or p.dim() != 2:
        raise ValueError("p must be a 2-D tensor (k+1, V)")
    if not isinstance(q, torch.Tensor) or q.dim() != 2:
        raise ValueError("q must be a 2-D tensor (k, V)")
    if not isinstance(drafts, torch.Tensor) or drafts.dim() != 1:
        raise ValueError("drafts must be a 1-D tensor (k,)")
    accepted, token = verify_batch(p[None], q[None], drafts[None], generator)
    return int(accepted[0]), int(token[0])


def _check_rule_inputs(p, q, drafts):
    for name, x in (("p", p), ("q", q)):
        if not isinstance(x, torch.Tensor) or x.dim() != 3:
            raise ValueError(f"{name} must be a 3-D tensor, got {type(x).__name__}"
                             f"{'' if not isinstance(x, torch.Tensor) else tuple(x.shape)}")
    if not isinstance(drafts, torch.Tensor) or drafts.dim() != 2:
        raise ValueError("drafts must be a 2-D integer tensor (N, k)")
    N, k = drafts.shape
    V = p.shape[-1]
    if tuple(p.shape) != (N, k + 1, V) or V < 1:
        raise ValueError(f"p must have shape (N, k+1, V) = ({N}, {k + 1}, V), got {tuple(p.shape)}")
    if tuple(q.shape) != (N, k, V):
        raise ValueError(f"q must have shape (N, k, V) = ({N}, {k}, {V}), got {tuple(q.shape)}")
    if drafts.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8, torch.int8):
        raise ValueError(f"drafts must hold integer indices, got dtype {drafts.dtype}")
    drafts = drafts.long()
    if drafts.numel() and (drafts.min() < 0 or drafts.max() >= V):
        raise ValueError(f"drafts must lie in [0, {V})")
    p, q = p.double(), q.double()
    for name, x in (("p", p), ("q", q)):
        if x.numel() == 0:
            continue
        if not bool(torch.isfinite(x).all()):
            raise ValueError(f"{name} must be finite (no NaN or inf)")
        if bool((x < 0).any()):
            raise ValueError(f"{name} must be >= 0 everywhere")
        worst = float((x.sum(-1) - 1).abs().max())
        if worst > SUM_TOLERANCE:
            raise ValueError(f"every row of {name} must sum to 1 within {SUM_TOLERANCE:g}; "
                             f"worst row is off by {worst:.3g}")
    if k and bool((q.gather(2, drafts.unsqueeze(2)) <= 0).any()):
        raise ValueError("every drafted character must have q > 0 (it was drawn from q)")
    return p, q, drafts


def _check_generator(generator) -> None:
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator, got {type(generator).__name__}")


def _check_temperature(temperature) -> None:
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) \
            or not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature!r}")


# --- the generator ----------------------------------------------------------------


def vocab_size(model: nn.Module) -> int:
    """The model's vocabulary size: ``model.config.vocab_size``, or the
    project's 100 characters for models whose config does not name one
    (:class:`aftertrain.bigram.Bigram`, ``Uniform``)."""
    config = getattr(model, "config", None)
    if config is None or not hasattr(config, "block_size"):
        raise ValueError(f"model must have a config with block_size (the Decoder interface), "
                         f"got {type(model).__name__}")
    return int(getattr(config, "vocab_size", _text.VOCAB_SIZE))


@dataclass(frozen=True)
class SpeculativeResult:
    """Text and statistics of one speculative run.

    Invariants: ``len(generated) = target_passes + accepted`` (each pass
    emits its accepted drafts plus one character); ``accepted <= drafted``.
    """

    tokens: torch.Tensor  # prompt + generated, 1-D long
    prompt_length: int
    drafted: int  # drafted characters sent to verification
    accepted: int  # of those, accepted
    target_passes: int  # verification passes (one per round), prompt prefill not counted
    draft_passes: int  # draft forward calls
    target_logits: torch.Tensor  # (n_new, V): the target logits the rule used for each character

    @property
    def generated(self) -> torch.Tensor:
        return self.tokens[self.prompt_length:]

    @property
    def text(self) -> str:
        """The generated characters (project vocabulary only)."""
        return _text.decode(self.generated)

    @property
    def acceptance_rate(self) -> float | None:
        """accepted / drafted, as the article defines it; None if nothing was drafted."""
        return self.accepted / self.drafted if self.drafted else None

    @property
    def chars_per_pass(self) -> float | None:
        """Generated characters per target pass; None if there was no pass."""
        n = self.tokens.numel() - self.prompt_length
        return n / self.target_passes if self.target_passes else None

    def stats(self) -> dict:
        """The figures as plain numbers (for tables and baselines)."""
        return {
            "drafted": self.drafted,
            "accepted": self.accepted,
            "target_passes": self.target_passes,
            "acceptance_rate": self.acceptance_rate,
            "chars_per_pass": self.chars_per_pass,
        }


def _draft_tokens(
    decoder: _model.Decoder,
    pending: list[int],
    k: int,
    temperature: float,
    generator: torch.Generator,
) -> tuple[list[int], torch.Tensor]:
    """Feed ``pending`` to the draft and sample ``k >= 1`` characters from it.

    Returns the drafts and the distributions ``q`` (k, V) they were drawn
    from: the very tensors the rule is then given (a draft scored with a
    distribution other than the one it was sampled from breaks the law).
    The draft is fed ``pending`` and the first k - 1 drafts: k draft passes.
    """
    logits = decoder.feed(pending)[-1]
    drafts, qs = [], []
    for i in range(k):
        q = distributions(logits, temperature)
        x = int(_sample(q[None], torch.rand(1, dtype=torch.float64, generator=generator))[0])
        drafts.append(x)
        qs.append(q)
        if i < k - 1:
            logits = decoder.feed([x])[-1]
    return drafts, torch.stack(qs)


@torch.no_grad()
def speculative_generate(
    target: nn.Module,
    draft: nn.Module,
    prompt: str | torch.Tensor,
    n_new: int,
    k: int,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> SpeculativeResult:
    """``n_new`` characters after ``prompt`` by speculative decoding.

    Each round the draft proposes ``min(k, remaining - 1)`` characters (so the
    run ends at exactly ``n_new``); the target scores the last emitted
    character and the drafts in one cached pass (k+1 positions) and
    :func:`verify` keeps a prefix plus one character; both decoders are then
    rolled back to the kept text. Temperature scales p and q alike; 0 is
    greedy (a draft is accepted iff it equals the target's argmax).

    Args:
        target, draft: models with the Decoder interface (``config.block_size``,
            ``new_cache()``, ``forward(idx, cache)``) and the same vocabulary.
        prompt: a string over the project vocabulary, or a 1-D tensor of indices.
        n_new: characters to generate, >= 0.
        k: characters drafted per round, >= 1.
        temperature: >= 0.
        generator: source of every random draw (default: seed 0).

    Every emitted character follows the target's next-character law for the
    text before it, exactly as :func:`aftertrain.model.generate` samples it.
    """
    V = vocab_size(target)
    if vocab_size(draft) != V:
        raise ValueError(f"target and draft must share a vocabulary: target has {V} "
                         f"characters, draft {vocab_size(draft)}")
    prompt_ids = _prompt_tokens(prompt, V)
    if isinstance(n_new, bool) or not isinstance(n_new, int) or n_new < 0:
        raise ValueError(f"n_new must be an int >= 0, got {n_new!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")
    _check_temperature(temperature)
    if generator is None:
        generator = torch.Generator().manual_seed(0)
    _check_generator(generator)

    tdec, ddec = _model.Decoder(target), _model.Decoder(draft)
    text = list(prompt_ids)
    if len(text) > 1:  # prefill all but the last prompt character, not counted as a pass
        tdec.feed(text[:-1])
        ddec.feed(text[:-1])
    end = len(text) + n_new
    drafted = accepted = passes = draft_passes = 0
    used: list[torch.Tensor] = []
    while len(text) < end:
        kk = min(k, end - len(text) - 1)
        if kk:
            drafts, q = _draft_tokens(ddec, text[len(ddec):], kk, temperature, generator)
            draft_passes += kk
        else:
            drafts, q = [], torch.zeros(0, V, dtype=torch.float64)
        logits = tdec.feed(text[len(tdec):] + drafts)[-(kk + 1):]  # (kk+1, V)
        if logits.shape[-1] != V or q.shape[-1] != V:
            raise ValueError(f"the models must produce {V} logits per position, got "
                             f"target {logits.shape[-1]}, draft {q.shape[-1]}")
        p = distributions(logits, temperature)
        n, token = _verify(p[None], q[None], torch.tensor([drafts], dtype=torch.long), generator)
        n, token = int(n[0]), int(token[0])
        passes += 1
        drafted += kk
        accepted += n
        used.append(logits[: n + 1])
        text += drafts[:n] + [token]
        # Each decoder keeps what it has fed of the new text, minus the last
        # character (fed next round with the next drafts).
        for dec in (tdec, ddec):
            dec.truncate(min(len(dec), len(text) - 1))
            assert dec.tokens == text[: len(dec)], "a decoder holds text that was not emitted"
    target_logits = torch.cat(used) if used else torch.zeros(0, V)
    return SpeculativeResult(torch.tensor(text, dtype=torch.long), len(prompt_ids), drafted,
                             accepted, passes, draft_passes, target_logits)


def _prompt_tokens(prompt: str | torch.Tensor, V: int) -> list[int]:
    if isinstance(prompt, str):
        bad = sorted({c for c in prompt if c not in _text.VOCAB})
        if bad:
            raise ValueError(f"prompt holds characters outside the vocabulary: {bad!r}")
        if V != _text.VOCAB_SIZE:
            raise ValueError(f"a string prompt needs the project vocabulary of "
                             f"{_text.VOCAB_SIZE} characters; the models have {V}: pass indices")
        ids = _text.encode(prompt).tolist()
    elif isinstance(prompt, torch.Tensor) and prompt.dim() == 1 and not prompt.is_floating_point():
        ids = prompt.tolist()
        if ids and (min(ids) < 0 or max(ids) >= V):
            raise ValueError(f"prompt indices must lie in [0, {V})")
    else:
        raise ValueError("prompt must be a string or a 1-D integer tensor")
    if not ids:
        raise ValueError("prompt must hold at least one character")
    return ids


# --- experiments (the tables of claims S2, S4, X1) -------------------------------------

#: The article generated 200 characters beyond a prompt, with one fixed seed.
N_NEW = 200
KS = (1, 2, 4, 8)
SEED = 0
#: Fixed contexts from the validation split: the prompt of the 200-character
#: runs (S4-S8) and the context of the first-character experiment (S2). The
#: S2 context ("...Those relations ") ends at a word boundary, where the
#: reference's next character is uncertain (entropy 2.80 nats, largest
#: probability 0.126): a spread law, so a biased sampler shows. (Characters
#: 1000-1099, tried first, end where the reference is all but certain, and
#: any sampler scores a TV near 0 there.)
PROMPT_SLICE = slice(0, 32)
S2_CONTEXT_SLICE = slice(200, 300)
S2_SAMPLES = 20_000
#: X1 measures acceptance on longer runs than S4's 200 characters: on 200, the
#: k = 1 rate of a near-perfect draft is 100/100 = 1.000 and predicts no fall
#: at all; on 1,000 characters each rate rests on ~500 drafts or more.
X1_N_NEW = 1000


def prompt_text() -> str:
    """The prompt of the acceptance and speed runs: the first 32 characters
    of the validation split."""
    return _text.load_corpus().val_text[PROMPT_SLICE]


@torch.no_grad()
def first_token_samples(
    target: nn.Module,
    draft: nn.Module,
    context: str | torch.Tensor,
    n: int,
    temperature: float,
    generator: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` independent first characters after ``context`` from the shipped
    rule, and the target's distribution ``p`` for that character.

    What is simulated (S2): the first round of :func:`speculative_generate`
    with k = 1, vectorised over ``n`` rounds. The target's ``p_1`` and the
    draft's ``q_1`` after ``context`` are computed once; each round draws a
    draft ``x ~ q_1`` (the inverse-CDF draw the generator uses), takes the
    bonus distribution ``p_2 = p(. | context + x)`` from one batched target
    pass over all V possible ``x``, and runs :func:`verify_batch` on
    ``(p_1, p_2), q_1, x``. The first emitted character is ``x`` if accepted,
    else the rule's token. Its law depends only on ``p_1`` and ``q_1``
    whatever k is (a rejection at position 1 ends the round there; an
    acceptance emits ``x`` first), so k = 1 loses nothing, and the bonus
    position is the true one, so the round is exactly the generator's.

    Returns:
        ``(first, p_1)``: (n,) long and (V,) float64.
    """
    V = vocab_size(target)
    if vocab_size(draft) != V:
        raise ValueError("target and draft must share a vocabulary")
    ids = _prompt_tokens(context, V)
    if len(ids) >= target.config.block_size:
        raise ValueError(f"context must be shorter than the block size {target.config.block_size}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    _check_temperature(temperature)
    _check_generator(generator)
    p1 = distributions(_model.Decoder(target).feed(ids)[-1], temperature)
    q1 = distributions(_model.Decoder(draft).feed(ids)[-1], temperature)
    # Target after context + x, for every x at once: (V, V).
    extended = torch.tensor([ids + [x] for x in range(V)])
    p2_all = distributions(target(extended)[:, -1], temperature)
    x = _sample(q1.expand(n, V), torch.rand(n, dtype=torch.float64, generator=generator))
    p = torch.stack([p1.expand(n, V), p2_all[x]], dim=1)  # (n, 2, V)
    accepted, token = verify_batch(p, q1.expand(n, 1, V), x.unsqueeze(1), generator)
    return torch.where(accepted > 0, x, token), p1


def first_token_table(
    target: nn.Module,
    drafts: dict[str, nn.Module],
    n: int = S2_SAMPLES,
    seed: int = SEED,
    null_trials: int = 1000,
) -> list[dict]:
    """S2: TV distance of ``n`` first characters from the target's law, per draft,
    beside the same-sample-size baseline (direct draws from the target).

    Context: characters 200..299 of the validation split (S2_CONTEXT_SLICE),
    temperature 1.
    Each row: ``draft``, ``tv``, ``chi2_pvalue`` (Pearson, pooled cells),
    ``direct_tv`` (one direct draw of n, as the article's 0.0134),
    ``null_median``/``null_q99`` (of ``null_trials`` direct draws),
    ``tv_threshold`` (McDiarmid bound at alpha 1e-6, stats.tv_threshold).
    """
    from aftertrain import stats

    context = _text.load_corpus().val_text[S2_CONTEXT_SLICE]
    rows = []
    for i, (name, draft) in enumerate(drafts.items()):
        g = torch.Generator().manual_seed(seed + i)
        first, p = first_token_samples(target, draft, context, n, 1.0, g)
        null = stats.tv_null_distribution(p.numpy(), n, null_trials, seed)
        rows.append({
            "draft": name,
            "tv": stats.empirical_tv(first.numpy(), p.numpy()),
            "chi2_pvalue": stats.chisquare_gof(first.numpy(), p.numpy()).pvalue,
            "direct_tv": float(null[0]),
            "null_median": float(np.median(null)),
            "null_q99": float(np.quantile(null, 0.99)),
            "tv_threshold": stats.tv_threshold(null, n),
        })
    return rows


def predicted_acceptance(a1: float, k: int) -> float:
    """X1: acceptance at k if each drafted position were accepted independently
    with the k = 1 rate ``a1``: ``a (1 - a^k) / (k (1 - a))`` (``a`` at a = 1).

    The expected number accepted before the first rejection, capped at k, is
    ``sum_{i=1..k} a^i``; divided by the k drafted. Note: a = 0.896, k = 8
    gives 0.629 (the article's example).
    """
    if not 0.0 <= a1 <= 1.0:
        raise ValueError(f"a1 must be in [0, 1], got {a1!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")
    if a1 == 1.0:
        return 1.0
    return a1 * (1 - a1 ** k) / (k * (1 - a1))


def acceptance_table(
    target: nn.Module,
    drafts: dict[str, nn.Module],
    ks: tuple[int, ...] = KS,
    n_new: int = N_NEW,
    seed: int = SEED,
    temperature: float = 1.0,
) -> list[dict]:
    """S4 and X1: one ``n_new``-character run per draft and k, same prompt and seed.

    Each row: ``draft``, ``k``, ``drafted``, ``accepted``, ``target_passes``,
    ``acceptance`` (accepted / drafted), ``chars_per_pass`` (n_new / passes),
    and ``predicted_acceptance`` (X1, from the k = 1 row of the same draft;
    needs 1 in ``ks``).
    """
    prompt = prompt_text()
    rows = []
    for name, draft in drafts.items():
        a1 = None
        for k in ks:
            r = speculative_generate(target, draft, prompt, n_new, k, temperature,
                                     torch.Generator().manual_seed(seed))
            if k == 1:
                a1 = r.acceptance_rate
            rows.append({
                "draft": name, "k": k, "drafted": r.drafted, "accepted": r.accepted,
                "target_passes": r.target_passes, "acceptance": r.acceptance_rate,
                "chars_per_pass": r.chars_per_pass,
                "predicted_acceptance": None if a1 is None else predicted_acceptance(a1, k),
            })
    return rows


# --- timing experiments (S5-S7, X2, X8) ---------------------------------------------------
#
# Every figure is a ratio from aftertrain.timing.paired_timing (alternating
# pairs, median ratio): absolute times on a shared machine drift too much.

#: Prefix the cost measurements decode after (the validation prompt's length).
_COST_CONTEXT = 32


def _plain_step(target: nn.Module, temperature: float):
    """One step of plain cached decoding exactly as model.generate runs it
    (sample a token from the last logits, feed it), rolled back after."""
    ids = _text.encode(prompt_text()).tolist()[:_COST_CONTEXT]
    dec = _model.Decoder(target)
    logits = dec.feed(ids)[-1]
    g = torch.Generator().manual_seed(SEED)

    def step() -> None:
        token = _model.sample_token(logits, temperature, g)
        dec.feed([token])
        dec.truncate(len(ids))

    return step


def _draft_step(draft: nn.Module, temperature: float):
    """One drafted character exactly as the generator drafts it
    (_draft_tokens: distribution, inverse-CDF draw, feed), rolled back after."""
    ids = _text.encode(prompt_text()).tolist()[:_COST_CONTEXT]
    dec = _model.Decoder(draft)
    g = torch.Generator().manual_seed(SEED)

    def step() -> None:
        _draft_tokens(dec, ids[-1:], 1, temperature, g)
        dec.truncate(len(ids) - 1)

    dec.feed(ids[:-1])
    return step


def _verify_step(target: nn.Module, k: int, temperature: float):
    """One verification pass over k+1 positions as the generator runs it
    (feed k+1 tokens, distributions of every row, the rule), rolled back after."""
    ids = _text.encode(prompt_text()).tolist()[:_COST_CONTEXT]
    dec = _model.Decoder(target)
    dec.feed(ids[:-1])
    g = torch.Generator().manual_seed(SEED)
    if not 1 <= k < len(ids):
        raise ValueError(f"k must be in [1, {len(ids) - 1}], got {k}")
    drafts = ids[-k - 1:-1]  # any k characters: the pass's cost does not depend on them

    def step() -> None:
        logits = dec.feed(ids[-1:] + drafts)
        p = distributions(logits, temperature)
        # q = the target's own rows (positive wherever softmax is), so the rule
        # runs its full path; the draft's cost is timed separately (c).
        _verify(p[None], p[None, :-1], torch.tensor([drafts]), g)
        dec.truncate(len(ids) - 1)

    return step


def draft_cost_table(
    target: nn.Module,
    drafts: dict[str, nn.Module],
    temperature: float = 1.0,
    pairs: int = 21,
    calls: int = 5,
) -> list[dict]:
    """S5: ``c`` = time of one drafted character / time of one plain target step.

    Both sides run the generator's own code (:func:`_draft_tokens` for the
    draft; sample + feed as :func:`aftertrain.model.generate` for the target),
    so per-call Python overhead is counted on both. Each row: ``draft``,
    ``c`` (median pair ratio), ``c_low``/``c_high`` (its 0.99 interval),
    ``target_us``/``draft_us`` (median absolute times, this machine only).
    """
    from aftertrain.timing import paired_timing

    rows = []
    for name, draft in drafts.items():
        t = paired_timing(_plain_step(target, temperature), _draft_step(draft, temperature),
                          pairs=pairs, calls=calls)
        rows.append({"draft": name, "c": t.median, "c_low": t.ci_low, "c_high": t.ci_high,
                     "target_us": float(np.median(t.baseline)) * 1e6,
                     "draft_us": float(np.median(t.candidate)) * 1e6})
    return rows


def verify_cost_table(
    target: nn.Module,
    ks: tuple[int, ...] = KS,
    temperature: float = 1.0,
    pairs: int = 21,
    calls: int = 5,
) -> list[dict]:
    """X8: ``v_k`` = time of one verification pass over k+1 positions (feed,
    distributions, rule) / time of one plain target step. Rows: ``k``,
    ``v_k``, ``v_low``/``v_high`` (0.99 interval), ``verify_us``, ``step_us``."""
    from aftertrain.timing import paired_timing

    rows = []
    for k in ks:
        t = paired_timing(_plain_step(target, temperature), _verify_step(target, k, temperature),
                          pairs=pairs, calls=calls)
        rows.append({"k": k, "v_k": t.median, "v_low": t.ci_low, "v_high": t.ci_high,
                     "verify_us": float(np.median(t.candidate)) * 1e6,
                     "step_us": float(np.median(t.baseline)) * 1e6})
    return rows


def speedup_table(
    target: nn.Module,
    drafts: dict[str, nn.Module],
    ks: tuple[int, ...],
    c: dict[str, float],
    v: dict[int, float],
    n_new: int = N_NEW,
    seed: int = SEED,
    temperature: float = 1.0,
    pairs: int = 5,
) -> list[dict]:
    """S6, S7, X8, X2: measured speedup of speculative over plain cached
    decoding per draft and k, beside both predictions.

    Each pair times ``model.generate`` and :func:`speculative_generate` for
    ``n_new`` characters after the validation prompt, same seed (the runs are
    deterministic, so every pair times the same work); speedup = plain time /
    speculative time, median of ``pairs`` alternating pairs with min~max (the
    article's 5; min~max of 5 is a 0.9375 interval for the median).
    Predictions: ``predicted`` = cpp / (1 + k c) (the article's, S7) and
    ``predicted_vk`` = cpp / (v_k + k c) (X8), with ``c[draft]``, ``v[k]``.
    """
    from aftertrain.timing import paired_timing

    prompt = prompt_text()
    ids = _text.encode(prompt)
    rows = []
    for name, draft in drafts.items():
        for k in ks:
            run = speculative_generate(target, draft, prompt, n_new, k, temperature,
                                       torch.Generator().manual_seed(seed))

            def plain() -> None:
                _model.generate(target, ids, n_new, temperature, torch.Generator().manual_seed(seed))

            def spec() -> None:
                speculative_generate(target, draft, prompt, n_new, k, temperature,
                                     torch.Generator().manual_seed(seed))

            t = paired_timing(plain, spec, pairs=pairs, warmup=1, confidence=0.9)
            cpp = run.chars_per_pass
            # ratios are spec / plain; the speedup is their inverse
            rows.append({
                "draft": name, "k": k, "chars_per_pass": cpp,
                "speedup": 1.0 / t.median, "speedup_min": 1.0 / t.maximum,
                "speedup_max": 1.0 / t.minimum,
                "predicted": cpp / (1 + k * c[name]),
                "predicted_vk": cpp / (v[k] + k * c[name]),
            })
    return rows
