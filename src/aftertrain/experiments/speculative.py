"""The experiments of speculative decoding: the tables of claims S2, S4 and
X1, and the timed steps of S5 and X8.

They run the rule and the generator (:mod:`aftertrain.speculative`) on the
reference and its drafts and tabulate as frozen rows
(:class:`aftertrain.claims.tables.TableRow`; registry
:data:`aftertrain.experiments.tables.SPECS`); the tests assert on the tables
and record them, the report renders them. The timed steps (:func:`plain_step`,
:func:`draft_step`, :func:`verify_step`) and decodings, in
:mod:`aftertrain.experiments.speculative_steps` (re-exported here), are what
:mod:`aftertrain.experiments.speedup` times as paired ratios
(:mod:`aftertrain.timing`): absolute times on a shared machine drift too much.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import torch

from aftertrain.claims import tables as TB
from aftertrain.claims.tables import TableRow, table
from aftertrain.core.validation import check_int, check_real
from aftertrain.experiments.speculative_steps import (  # noqa: F401 (re-exported)
    PROMPT_SLICE,
    SEED,
    draft_step,
    plain_decoding,
    plain_step,
    prompt_for,
    prompt_ids,
    prompt_text,
    speculative_decoding,
    verify_step,
)
from aftertrain.lm import hf as _hf
from aftertrain.lm.decoding import (
    Decoder,
    check_temperature,
    check_torch_generator,
    probabilities,
)
from aftertrain.lm.protocol import NextTokenModel, check_model
from aftertrain.speculative.generator import (
    prompt_tokens,
    speculative_generate,
)
from aftertrain.speculative.rule import inverse_cdf_sample, verify_batch

#: The article generated 200 characters beyond a prompt, with one fixed seed
#: (:data:`SEED`, beside the prompt in :mod:`aftertrain.experiments.speculative_steps`).
N_NEW = 200
KS = (1, 2, 4, 8)
#: A fixed context from the validation split, beside the prompt of the
#: 200-character runs (S4-S8, :data:`PROMPT_SLICE`): the context of the
#: first-character experiment (S2). The S2 context ("...Those relations ") ends at a word boundary, where the
#: reference's next character is uncertain (entropy 2.80 nats, largest
#: probability 0.126): a spread law, so a biased sampler shows. (Characters
#: 1000-1099, tried first, end where the reference is all but certain, and
#: any sampler scores a TV near 0 there.)
S2_CONTEXT_SLICE = slice(200, 300)
S2_SAMPLES = 20_000
#: X1 measures acceptance on longer runs than S4's 200 characters: on 200, the
#: k = 1 rate of a near-perfect draft is 100/100 = 1.000 and predicts no fall
#: at all; on 300 characters each rate rests on ~150 drafts or more (1,000
#: characters, the length before, gave the same verdicts on both bundled
#: models, with the fall 0.19-0.44 where the test asserts, for 3.5 times the CPU).
X1_N_NEW = 300


@table(TB.SPEC_FIRST_TOKEN, ("S2",))
@dataclass(frozen=True)
class FirstTokenRow(TableRow):
    """S2: one draft's TV distance and chi-square p-value, beside direct sampling's
    TV (one draw, and the median and 99% quantile of ``null_trials``) and the
    alarm threshold (:func:`aftertrain.stats.tv_threshold`)."""

    draft: str
    tv: float
    chi2_pvalue: float
    direct_tv: float
    null_median: float
    null_q99: float
    tv_threshold: float


@table(TB.SPEC_ACCEPTANCE, ("S4", "S8"))
@dataclass(frozen=True)
class AcceptanceRow(TableRow):
    """S4 / X1: one run of a draft (a DraftKind value) at ``k``; ``acceptance =
    accepted / drafted``, ``chars_per_pass = n_new / target_passes``, and the
    acceptance predicted from the same draft's k = 1 rate (None without one)."""

    draft: str
    k: int
    drafted: int
    accepted: int
    target_passes: int
    acceptance: float
    chars_per_pass: float
    predicted_acceptance: float | None


@table(TB.SPEC_X1, ("X1",))
@dataclass(frozen=True)
class LongRunRow(AcceptanceRow):
    """X1: an :class:`AcceptanceRow` of the longer runs (:data:`X1_N_NEW` characters)."""


def _check_count(name: str, value: object, minimum: int) -> None:
    check_int(name, value, least=minimum)


def _check_tables_args(
    target: NextTokenModel, drafts: dict | None = None, ks: tuple[int, ...] | None = None
) -> None:
    """The arguments every table shares: a target, a non-empty dict of named
    drafts sharing its vocabulary, and ks (distinct ints >= 1)."""
    V = check_model(target, "target").config.vocab_size
    if drafts is not None:
        if not isinstance(drafts, dict) or not drafts:
            raise ValueError(f"drafts must be a non-empty dict of name -> model, got {drafts!r}")
        for name, draft in drafts.items():
            if check_model(draft, f"drafts[{name!r}]").config.vocab_size != V:
                raise ValueError(f"drafts[{name!r}] must share the target's vocabulary of {V}")
    if ks is not None:
        if not isinstance(ks, (tuple, list)) or not ks or len(set(ks)) != len(ks):
            raise ValueError(f"ks must be a non-empty tuple of distinct ints >= 1, got {ks!r}")
        for k in ks:
            _check_count("every k in ks", k, 1)


@torch.no_grad()
def first_token_samples(
    target: NextTokenModel,
    draft: NextTokenModel,
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
    V = check_model(target, "target").config.vocab_size
    if check_model(draft, "draft").config.vocab_size != V:
        raise ValueError("target and draft must share a vocabulary")
    ids = prompt_tokens(context, V, "context")
    if len(ids) >= target.config.block_size:
        raise ValueError(f"context must be shorter than the block size {target.config.block_size}")
    check_int("n", n, least=1)
    check_temperature(temperature)
    check_torch_generator(generator)
    p1 = probabilities(Decoder(target, name="target").feed(ids)[-1], temperature)
    q1 = probabilities(Decoder(draft, name="draft").feed(ids)[-1], temperature)
    x = inverse_cdf_sample(q1.expand(n, V), torch.rand(n, dtype=torch.float64, generator=generator))
    p = torch.stack([p1.expand(n, V), _second_rows(target, ids, x, temperature)], dim=1)  # (n, 2, V)
    accepted, token = verify_batch(p, q1.expand(n, 1, V), x.unsqueeze(1), generator)
    return torch.where(accepted > 0, x, token), p1


#: Largest vocabulary whose every continuation is scored in one batch (V rows
#: of the context plus one token); above it only the drawn ones are.
ALL_CONTINUATIONS_MAX_VOCAB = 4096


def _second_rows(target: NextTokenModel, ids: list[int], x: torch.Tensor, temperature: float) -> torch.Tensor:
    """The target's law after context + x, for each drawn ``x`` (n, V): the
    rows of every continuation scored at once for a small vocabulary (the same
    batch whatever was drawn), else of the distinct drawn ones, 64 at a time
    (a 151k vocabulary would not fit in one batch)."""
    V = target.config.vocab_size
    if V <= ALL_CONTINUATIONS_MAX_VOCAB:
        extended = torch.tensor([ids + [t] for t in range(V)])
        return probabilities(target(extended)[:, -1], temperature)[x]
    drawn, where = torch.unique(x, return_inverse=True)
    rows = [
        probabilities(target(torch.tensor([ids + [t] for t in part.tolist()]))[:, -1], temperature)
        for part in drawn.split(64)
    ]
    return torch.cat(rows)[where]


def first_token_table(
    target: NextTokenModel,
    drafts: dict[str, NextTokenModel],
    n: int = S2_SAMPLES,
    seed: int = SEED,
    null_trials: int = 1000,
) -> list[FirstTokenRow]:
    """S2: TV distance of ``n`` first characters from the target's law, per draft,
    beside the same-sample-size baseline (direct draws from the target).

    Context: characters 200..299 of the validation split (S2_CONTEXT_SLICE),
    temperature 1.
    Each :class:`FirstTokenRow`: ``draft``, ``tv``, ``chi2_pvalue`` (Pearson, pooled cells),
    ``direct_tv`` (one direct draw of n, as the article's 0.0134),
    ``null_median``/``null_q99`` (of ``null_trials`` direct draws),
    ``tv_threshold`` (McDiarmid bound at alpha 1e-6, stats.tv_threshold).
    """
    from aftertrain import stats

    _check_tables_args(target, drafts)
    _check_count("n", n, 1)
    _check_count("seed", seed, 0)
    if seed >= 2**64:
        raise ValueError(f"seed must be an int in [0, 2**64), got {seed!r}")
    _check_count("null_trials", null_trials, 1)
    context = _hf.prompt_of(target, _hf.model_text(target).val_text[S2_CONTEXT_SLICE])
    rows = []
    for i, (name, draft) in enumerate(drafts.items()):
        g = torch.Generator().manual_seed(seed + i)
        first, p = first_token_samples(target, draft, context, n, 1.0, g)
        null = stats.tv_null_distribution(p.numpy(), n, null_trials, seed)
        rows.append(
            FirstTokenRow(
                draft=name,
                tv=stats.empirical_tv(first.numpy(), p.numpy()),
                chi2_pvalue=stats.chisquare_gof(first.numpy(), p.numpy()).pvalue,
                direct_tv=float(null[0]),
                null_median=float(np.median(null)),
                null_q99=float(np.quantile(null, 0.99)),
                tv_threshold=stats.tv_threshold(null, n),
            )
        )
    return rows


def predicted_acceptance(a1: float, k: int) -> float:
    """X1: acceptance at k if each drafted position were accepted independently
    with the k = 1 rate ``a1``: ``a (1 - a^k) / (k (1 - a))`` (``a`` at a = 1).

    The expected number accepted before the first rejection, capped at k, is
    ``sum_{i=1..k} a^i``; divided by the k drafted. Note: a = 0.896, k = 8
    gives 0.629 (the article's example).
    """
    check_real("a1", a1, low=0, high=1)
    check_int("k", k, least=1)
    if a1 == 1.0:
        return 1.0
    return a1 * (1 - a1**k) / (k * (1 - a1))


def acceptance_table(
    target: NextTokenModel,
    drafts: dict[str, NextTokenModel],
    ks: tuple[int, ...] = KS,
    n_new: int = N_NEW,
    seed: int = SEED,
    temperature: float = 1.0,
) -> list[AcceptanceRow]:
    """S4 and X1: one ``n_new``-character run per draft and k, same prompt and seed.

    Each :class:`AcceptanceRow`: ``draft``, ``k``, ``drafted``, ``accepted``, ``target_passes``,
    ``acceptance`` (accepted / drafted), ``chars_per_pass`` (n_new / passes),
    and ``predicted_acceptance`` (X1, from the k = 1 row of the same draft;
    needs 1 in ``ks``).
    """
    _check_tables_args(target, drafts, ks)
    _check_count("n_new", n_new, 1)
    _check_count("seed", seed, 0)
    if seed >= 2**64:
        raise ValueError(f"seed must be an int in [0, 2**64), got {seed!r}")
    check_temperature(temperature)
    prompt = prompt_for(target)
    rows = []
    for name, draft in drafts.items():
        a1 = None
        for k in ks:
            r = speculative_generate(
                target, draft, prompt, n_new, k, temperature, torch.Generator().manual_seed(seed)
            )
            if k == 1:
                a1 = r.acceptance_rate
            rows.append(
                AcceptanceRow(
                    draft=name,
                    k=k,
                    drafted=r.drafted,
                    accepted=r.accepted,
                    target_passes=r.target_passes,
                    acceptance=r.acceptance_rate,
                    chars_per_pass=r.chars_per_pass,
                    predicted_acceptance=None if a1 is None else predicted_acceptance(a1, k),
                )
            )
    return rows


def long_run_table(
    target: NextTokenModel, drafts: dict[str, NextTokenModel], ks: tuple[int, ...] = (1, 8), seed: int = SEED
) -> list[LongRunRow]:
    """X1's runs: :func:`acceptance_table` over :data:`X1_N_NEW` characters, as
    :class:`LongRunRow` (the table the ledger records them as)."""
    return [
        LongRunRow(**{f.name: getattr(r, f.name) for f in fields(r)})
        for r in acceptance_table(target, drafts, ks=ks, n_new=X1_N_NEW, seed=seed)
    ]
