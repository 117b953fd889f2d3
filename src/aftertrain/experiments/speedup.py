"""The speculative speedup experiment: the ratios of claims S5, S6, S7, X2
and X8 timed in sequential decisions and judged by
:mod:`aftertrain.experiments.speedup_rules`.

Every figure is a paired ratio (:mod:`aftertrain.timing`: alternating pairs
on one thread), named by a
:class:`~aftertrain.experiments.speedup_rules.RatioKey`: ``c:<draft>`` (S5),
``v:<k>`` (X8) and ``s:<draft>:<k>`` (speculative / plain time for
:data:`SPEEDUP_CHARS` characters; S6, S7, X8, X2). :func:`speedup_decisions`
times them in two sequential decisions (the costs, then the speedups), each
at alpha / 2, so a claim reading both errs with probability <= alpha;
:func:`speedup_tables` gives the claims' tables at a decision's look;
:func:`target_decisions` times the two speedup targets, figures beside X2:
the loop against what ``cpp / (v_k + k c)`` charges for it
(:func:`charged_decoding`) and the n-gram over plain decoding.

``SPEEDUP_CHARS = 30`` (the article: 200): the per-character cost is what the
claims compare, and the decision needs ~30 pairs of each of the 15 cells
(5 drafts x 3 k) at its first look. A timed call is the decoding after the
prompt alone: each side is prefilled once, untimed
(:func:`aftertrain.experiments.speculative.plain_decoding`,
:func:`~aftertrain.experiments.speculative.speculative_decoding`), each call
decodes the 30 characters and rolls back. (Reading the 32-character prompt
in the timed call, ~2 plain steps a side, would pull a 30-character speedup
toward 1: the n-gram's at k=4 from ~2.6 to ~2.35.) A pair costs plain ~30
steps (~0.016-0.025 s) + speculative ~0.007-0.035 s; both decisions together
take about a minute on a lightly loaded 2-core machine and up to their
budgets under load: the load decides, not the loop (docs/speculative.md). What a
first look costs at the floor (idle, one thread): the costs 8 ratios x 112
pairs x one call of a ~0.5-1.8 ms step a side (~1.5 s), the speedups 15
cells x 29 pairs x (plain ~0.016 s + speculative ~0.007-0.035 s) ~ 15 s.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping

import torch

from aftertrain.claims.verdicts import BROKEN, HOLDS
from aftertrain.core.tolerances import TIMING_ALPHA, TIMING_LOOKS
from aftertrain.core.validation import check_int, check_real
from aftertrain.experiments import speculative as XS
from aftertrain.experiments.speedup_rules import (
    COST_RULES,
    RULES,
    Cells,
    Interval,
    RatioKey,
    speedup,
)
from aftertrain.experiments.speedup_tables import (  # noqa: F401 (re-exported)
    CostRow,
    SpeedupRow,
    SpeedupTables,
    VerifyRow,
    speedup_tables,
)
from aftertrain.lm.protocol import NextTokenModel, check_model
from aftertrain.speculative import drafts as D
from aftertrain.speculative import speculative_generate
from aftertrain.timing import (
    Clock,
    Decision,
    Judgement,
    RatioRule,
    min_pairs,
    sequential_decisions,
)

SPEEDUP_KS = (2, 4, 8)
SPEEDUP_CHARS = 30
#: Calls per timing of a cost step. One: a plain step (~0.75 ms idle) and a
#: verification pass are hundreds of timer ticks, and a table draft's
#: character (1.3-1.9 us warm, several us right after a forward with cold
#: caches: docs/speculative.md) still 13 or more of ``perf_counter``'s 0.1 us; one call keeps
#: each timing under a scheduler slice (:func:`aftertrain.timing.paired_timing`'s
#: note), where 5 calls (3.75 ms a side) left the cost decision no first look
#: within its 40 s on a loaded 2-core machine. Blocks of m calls, as the loop
#: runs its verifications and steps back to back, were tried for the speedup
#: targets' share (docs/speculative.md, "What the loop costs beyond its
#: steps"; lightly loaded, both models): m = 4 lifts v_4 by ~0.03 and v_8 by ~0.07 of the
#: ~0.1-0.15 to back to back, and takes the decision from 2-5 s to 8-19 s
#: (28 pairs give the widest intervals, S5 waits for look 4-5); m = 2 at 56
#: pairs costs what one call at 112 does and lifts v_k by 1-4%. Neither brings
#: the n-gram's share (0.82-0.89) to 0.90, so one call stays.
COST_CALLS = 1
#: The cost decision's first look, in multiples of the fewest pairs its
#: interval needs (28): its intervals are read by the speedup judgements too.
COST_FIRST_LOOKS = 4


#: The speedup targets, for speculative decoding that pays: the best draft's
#: speedup at least this share of ``cpp / (v_k + k c)``, and the n-gram's at
#: least :data:`NGRAM_TARGET` over plain decoding. Engineering targets, not
#: claims of the article: figures beside the claims (:func:`target_decisions`),
#: deciding none of them.
SHARE_TARGET = 0.90
NGRAM_TARGET = 2.0
#: The targets' ratios (:func:`target_decisions`): name -> (the rule on the
#: timed ratio, what it decides in words).
TARGET_RULES = {
    "share": (
        RatioRule.at_most(1.0 / SHARE_TARGET),
        f"share of cpp / (v_k + k c) >= {SHARE_TARGET:g}: the loop over the passes and "
        f"drafts the formula charges for it <= 1 / {SHARE_TARGET:g}",
    ),
    "n-gram": (
        RatioRule.at_most(1.0 / NGRAM_TARGET),
        f"the n-gram's speedup >= {NGRAM_TARGET:g}: speculative over plain time <= 1 / {NGRAM_TARGET:g}",
    ),
}
#: A target decision's outcome in the targets' words.
TARGET_OUTCOMES = {HOLDS: "met", BROKEN: "not met"}


def charged_decoding(target: NextTokenModel, draft: NextTokenModel, k: int, n_new: int, temperature: float):
    """What the prediction ``cpp / (v_k + k c)`` charges for the run
    :func:`aftertrain.experiments.speculative.speculative_decoding` times, as
    one call: the seeded run's P target passes as P rounds of k drafted
    characters (``XS.draft_step``, S5's c) and one verification pass over k+1
    positions (``XS.verify_step``, X8's v_k), in the loop's order. P is
    counted once, here, from :func:`speculative_generate` with seed
    ``XS.SEED`` (the timed run's seed: every call makes the same passes).
    Each call returns P.

    Timed against the loop, the ratio loop / charged is
    the inverse of the share ``speedup / (cpp / (v_k + k c))`` with c, v_k
    and the speedup in one unit: ``speedup = N t / T``, ``cpp = N / P``,
    ``v_k = t_v / t`` and ``c = t_d / t`` for a unit step t give
    ``share = P (t_v + k t_d) / T``, t cancelled, so the share is one paired
    ratio instead of three intervals combined. (The claims' tables take t as
    one isolated plain step for c and v_k, each timed as single calls
    alternating with that step, and the plain loop's time per character
    for the speedup; so their share reads lower, by the plain loop's
    economy over isolated steps and by the calls' context:
    docs/speculative.md, "The share timed as one ratio".)"""
    check_model(target, "target")
    check_int("k", k, least=1)
    check_int("n_new", n_new, least=1)
    passes = speculative_generate(
        target, draft, XS.prompt_for(target), n_new, k, temperature, torch.Generator().manual_seed(XS.SEED)
    ).target_passes
    verify, draft_one = XS.verify_step(target, k, temperature), XS.draft_step(draft, temperature, target)

    def run() -> int:
        for _ in range(passes):
            for _ in range(k):
                draft_one()
            verify()
        return passes

    return run


def target_decisions(
    target: NextTokenModel,
    best: tuple[NextTokenModel, int],
    ngram: tuple[NextTokenModel, int],
    *,
    budget_s: float,
    alpha: float = TIMING_ALPHA,
    clock: Clock = time.perf_counter,
) -> dict[str, Decision]:
    """The two speedup targets, each one paired ratio in one sequential
    decision (:data:`TARGET_RULES`; alpha over both ratios and every look):

    - ``"share"``: the best draft ``best = (draft, k)``'s loop
      (:func:`aftertrain.experiments.speculative.speculative_decoding`) over
      what ``cpp / (v_k + k c)`` charges for it
      (:func:`charged_decoding`: its
      passes as verifications and drafted characters, the unit step
      cancelled), at most 1 / :data:`SHARE_TARGET`;
    - ``"n-gram"``: the n-gram ``ngram = (draft, k)`` over plain decoding, at
      most 1 / :data:`NGRAM_TARGET`.

    Pick ``best`` and ``ngram`` on the speedup decision's figures, then
    decide here on fresh pairs: the pick does not bias the intervals.
    ``budget_s`` seconds for both (a first look predicted not to fit starts
    none: ``looks == 0``); ``clock`` as :func:`aftertrain.timing.sequential_decisions`.
    :func:`target_figure` reads a decision."""
    check_model(target, "target")
    for name, pick in (("best", best), ("ngram", ngram)):
        if not (isinstance(pick, tuple) and len(pick) == 2):
            raise ValueError(f"{name} must be a (draft, k) tuple, got {pick!r}")
        check_model(pick[0], f"{name}[0]")
        check_int(f"{name}[1]", pick[1], least=1)
    _check_budget_and_alpha(budget_s, alpha)
    (best_draft, best_k), (ngram_draft, ngram_k) = best, ngram
    sides = {
        "share": (
            charged_decoding(target, best_draft, best_k, SPEEDUP_CHARS, 1.0),
            XS.speculative_decoding(target, best_draft, best_k, SPEEDUP_CHARS, 1.0),
        ),
        "n-gram": (
            XS.plain_decoding(target, SPEEDUP_CHARS, 1.0),
            XS.speculative_decoding(target, ngram_draft, ngram_k, SPEEDUP_CHARS, 1.0),
        ),
    }
    judgements = {
        name: Judgement(words, lambda t, n=name, r=rule: r.decide(t[n].ci_low, t[n].ci_high))
        for name, (rule, words) in TARGET_RULES.items()
    }
    return sequential_decisions(sides, judgements, warmup=1, alpha=alpha, budget_s=budget_s, clock=clock)


def target_figure(decision: Decision, name: str) -> tuple[float, float, float, str]:
    """The target ``name``'s figure from its decision (with a look): the
    share or the speedup, the inverse of the timed ratio, as (median, low,
    high) with the interval's ends swapped, and ``met``, ``not met`` or
    ``undecided``."""
    if name not in TARGET_RULES:
        raise ValueError(f"name must be one of {sorted(TARGET_RULES)}, got {name!r}")
    if decision.looks == 0 or name not in decision.timings:
        raise ValueError(
            f"decision must hold a look with the ratio {name!r}, got looks="
            f"{decision.looks} and ratios {sorted(decision.timings)}"
        )
    return (*speedup(decision.timings[name]), TARGET_OUTCOMES.get(decision.verdict, "undecided"))


def _check_budget_and_alpha(budget_s: float, alpha: float) -> None:
    """Raise ValueError, naming the argument, unless ``budget_s`` is a number
    of seconds > 0 and ``alpha`` a float in (0, 1)."""
    check_real("budget_s", budget_s, low=0, low_open=True, what="a number of seconds")
    if not (isinstance(alpha, float) and 0.0 < alpha < 1.0):
        raise ValueError(f"alpha must be a float in (0, 1), got {alpha!r}")


def _check_inputs(
    target: NextTokenModel, drafts: Mapping[str, NextTokenModel], budget_s: float, alpha: float
) -> None:
    """Raise ValueError, naming the argument, unless :func:`speedup_decisions`'s
    arguments are what it allows."""
    check_model(target, "target")
    names = {kind.value for kind in D.DraftKind}
    required = names - {D.DraftKind.GPT.value}  # a transformers target may have no draft model
    if not isinstance(drafts, Mapping) or not required <= set(drafts) <= names:
        raise ValueError(
            f"drafts must map every draft kind {sorted(names)} to a model (the draft GPT may be "
            f"left out), got {sorted(drafts) if isinstance(drafts, Mapping) else drafts!r}"
        )
    for name, draft in drafts.items():
        check_model(draft, f"drafts[{name!r}]")
    _check_budget_and_alpha(budget_s, alpha)


def _cost_ratios(target: NextTokenModel, drafts: Mapping[str, NextTokenModel]) -> dict:
    """The cost ratios, as (baseline, candidate) steps by ratio key: each
    draft's step against the target's (c), and the target's verification of
    k characters against its plain step (v_k) at each k of SPEEDUP_KS."""
    costs = {
        str(RatioKey.cost(name)): (XS.plain_step(target, 1.0), XS.draft_step(draft, 1.0, target))
        for name, draft in drafts.items()
    }
    for k in SPEEDUP_KS:
        costs[str(RatioKey.verify(k))] = (XS.plain_step(target, 1.0), XS.verify_step(target, k, 1.0))
    return costs


def _chars_per_pass(
    target: NextTokenModel, drafts: Mapping[str, NextTokenModel]
) -> dict[tuple[str, int], float]:
    """Characters per target pass of each (draft, k) of SPEEDUP_KS: the
    seeded run of SPEEDUP_CHARS characters the speedup times."""
    prompt = XS.prompt_for(target)

    def spec_run(draft: NextTokenModel, k: int):
        return speculative_generate(
            target, draft, prompt, SPEEDUP_CHARS, k, 1.0, torch.Generator().manual_seed(XS.SEED)
        )

    return {
        (name, k): spec_run(draft, k).chars_per_pass for name, draft in drafts.items() for k in SPEEDUP_KS
    }


def _judgements(
    names: Iterable[str], extra: Mapping[str, Interval], cpp: Mapping[tuple[str, int], float]
) -> dict[str, Judgement]:
    """The judgements of the rules ``names`` of :data:`RULES`, each reading
    the look's intervals with ``extra`` (another decision's) beneath them."""
    return {n: Judgement(RULES[n][0], lambda t, f=RULES[n][1]: f(Cells({**extra, **t}, cpp))) for n in names}


def _speedup_sides(target: NextTokenModel, drafts: Mapping[str, NextTokenModel]) -> dict:
    """The speedup ratios, as (plain, speculative) decodings by ratio key, one
    per draft and k of SPEEDUP_KS."""
    # each side prefilled once, untimed: a timed call is the decoding after the prompt
    plain = XS.plain_decoding(target, SPEEDUP_CHARS, 1.0)
    return {
        str(RatioKey.speedup(name, k)): (plain, XS.speculative_decoding(target, draft, k, SPEEDUP_CHARS, 1.0))
        for name, draft in drafts.items()
        for k in SPEEDUP_KS
    }


def speedup_decisions(
    target: NextTokenModel,
    drafts: Mapping[str, NextTokenModel],
    *,
    budget_s: float,
    alpha: float = TIMING_ALPHA,
) -> tuple[dict[str, Decision], dict[tuple[str, int], float]]:
    """Time every ratio and decide every rule of :data:`RULES`.

    Two decisions, each at ``alpha / 2``: the costs c and v_k (judged for
    :data:`COST_RULES`), then the speedups (judged with the costs' final
    intervals). ``drafts`` maps each :class:`aftertrain.speculative.drafts.DraftKind`
    value to its model; ``budget_s`` is seconds per rule. Returns the
    decisions by rule name (each carrying the costs' timings too) and the
    characters per target pass of each (draft, k)."""
    _check_inputs(target, drafts, budget_s, alpha)
    half = alpha / 2
    costs = _cost_ratios(target, drafts)
    cpp = _chars_per_pass(target, drafts)
    # The speedup judgements (S7's prediction, X8's fit) read the costs'
    # intervals too, which the costs' own rules may decide on at their first,
    # widest look: every cost ratio gets every look's pairs (every_ratio), and
    # the first look comes at COST_FIRST_LOOKS times the fewest pairs (cheap
    # steps: a few seconds).
    first = COST_FIRST_LOOKS * min_pairs(1.0 - half / (TIMING_LOOKS * len(costs)))
    decisions = sequential_decisions(
        costs,
        _judgements(COST_RULES, {}, cpp),
        calls=COST_CALLS,
        alpha=half,
        budget_s=budget_s * len(COST_RULES),
        every_ratio=True,
        first=first,
    )
    if any(d.looks == 0 for d in decisions.values()):  # no cost interval to judge speedups on
        spent = next(iter(decisions.values()))
        return {n: decisions.get(n) or dataclasses.replace(spent, rule=RULES[n][0]) for n in RULES}, cpp
    cost_timings = max(
        (d.timings for d in decisions.values()), key=lambda t: len(next(iter(t.values())).ratios)
    )  # the last look

    sides = _speedup_sides(target, drafts)
    rest = [n for n in RULES if n not in COST_RULES]
    decisions |= sequential_decisions(
        sides, _judgements(rest, cost_timings, cpp), warmup=1, alpha=half, budget_s=budget_s * len(rest)
    )
    for n in rest:  # the speedup decisions' timings with the costs', for the tables
        d = decisions[n]
        if d.looks:
            decisions[n] = dataclasses.replace(d, timings={**cost_timings, **d.timings})
    return decisions, cpp
