"""The cost account of a speculative call: the loop's time, part by part.

A seeded run's rounds are recorded as they ran
(:meth:`aftertrain.speculative.generator.SpeculativeDecoder.rounds`), and each
:class:`Part` of the loop is replayed over every round, on its own decoders
prefilled as the loop's, doing that part's work as the loop does it and
nothing else (:func:`part_replays`):

- ``draft``: the drafter's steps (its feed of the text it has not seen, two
  characters after a fully accepted round, then k - 1 drafts; a row and a
  draw per character) and its rollback;
- ``verify``: the target's cached pass over the round's last character and
  drafts (logits checked) and its rollback;
- ``rule``: :func:`aftertrain.speculative.generator.round_rule` on the
  recorded logits;
- ``rest``: the loop's own bookkeeping (its generator, the uniforms, the
  counters, the text), every part's result looked up.

Each part is timed against the loop it replays
(:func:`aftertrain.experiments.speculative.speculative_decoding`) as a paired
ratio part / loop in one sequential decision (:func:`account_decisions`);
or knocked out (:class:`Method`, :func:`knockouts`): the loop with the
part's results looked up, its share 1 - without / loop, so the colder
caches the parts leave each other count (alone, a few percent of the loop
lies beyond the parts' sum; knocked out, a few percent is counted twice).
The account A of a (draft, k) is the sum of its parts' medians, its interval
the sums of their ends: the intervals hold together with probability
``>= 1 - alpha`` (Bonferroni over every ratio and look), so the sum of the
ends bounds the sum of the medians. A near 1 says the loop costs what its
parts cost; :func:`round_costs` then puts each part per target pass in the
unit of the formula (plain decoding's time per character) beside what
``cpp / (1 + k c)`` charges for it.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from aftertrain.core.tolerances import TIMING_ALPHA, TIMING_LOOKS
from aftertrain.core.validation import check_int
from aftertrain.experiments import speculative as XS
from aftertrain.experiments.speedup_rules import Interval
from aftertrain.experiments.speedup_tables import SpeedupRow
from aftertrain.lm.decoding import check_torch_generator
from aftertrain.lm.protocol import NextTokenModel, check_model
from aftertrain.speculative.drafters import Uniforms
from aftertrain.speculative.generator import Round, SpeculativeDecoder, _roll_back, round_rule
from aftertrain.timing import Decision, Judgement, RatioRule, sequential_decisions

#: What the account must explain of the loop's time: the median sum in
#: EXPLAINED_MEDIAN and its interval inside EXPLAINED (the parts are the
#: loop's own work, so anything beyond a few percent either way is work the
#: account misses or counts twice).
EXPLAINED = (0.90, 1.10)
EXPLAINED_MEDIAN = (0.95, 1.05)


class Part(enum.Enum):
    """A part of a speculative round, by the name the account shows."""

    DRAFT = "draft"
    VERIFY = "verify"
    RULE = "rule"
    REST = "rest"


#: The parts a round runs a model or the rule for (the rest is the loop's own work).
RUN_PARTS = (Part.DRAFT, Part.VERIFY, Part.RULE)


class Method(enum.Enum):
    """How a part's time is taken: ``ALONE``, the part replayed by itself
    over every round (:func:`part_replays`); ``KNOCKOUT``, what the loop
    saves when the part's results are looked up instead of made
    (:func:`knockouts`: its share is 1 - without / loop), so the cache
    state the other parts leave it, and the one it leaves them, count too."""

    ALONE = "alone"
    KNOCKOUT = "knockout"


def _recorded(
    target: NextTokenModel, draft: NextTokenModel, k: int, n_new: int, temperature: float
) -> tuple[SpeculativeDecoder, list[int], list[Round]]:
    """A decoder prefilled as the loop's, and the text and rounds of the
    seeded run :func:`XS.speculative_decoding` times."""
    check_int("k", k, least=1)
    check_int("n_new", n_new, least=1)
    decoder = SpeculativeDecoder(target, draft, XS.prompt_for(target), temperature)
    text, rounds = decoder.rounds(n_new, k, torch.Generator().manual_seed(XS.SEED))
    return decoder, text, rounds


def part_replays(
    target: NextTokenModel, draft: NextTokenModel, k: int, n_new: int, temperature: float
) -> dict[Part, Callable[[], list]]:
    """Each part of the seeded run :func:`XS.speculative_decoding` times
    (``n_new`` characters at ``k`` after the validation prompt, seed
    ``XS.SEED``), replayed over every round as a zero-argument callable that
    returns what it made, round by round: the drafts (``DRAFT``), the
    target's logits (``VERIFY``), ``(accepted, token)`` (``RULE``) and the
    generated characters (``REST``: :func:`_loop` with no part run), each
    the loop's own (tested). Each replay leaves its decoders at the
    prefill, as the loop does."""
    replay, text, rounds = _recorded(target, draft, k, n_new, temperature)
    prompt, tdec, ddec = replay.prompt, replay.target, replay.drafter
    before = [text[: r.start] for r in rounds]
    after = before[1:] + [text]

    def drafts() -> list:
        made = []
        for r, b, a in zip(rounds, before, after, strict=True):
            kk = len(r.drafts)
            made.append(ddec.draft(b, kk, r.uniforms[:kk])[0] if kk else [])
            ddec.rollback(a)
        ddec.rollback(prompt)
        return made

    def verify() -> list:
        made = []
        for r, b, a in zip(rounds, before, after, strict=True):
            made.append(tdec.feed(b[len(tdec) :] + r.drafts)[-(len(r.drafts) + 1) :])
            _roll_back(tdec, a)
        _roll_back(tdec, prompt)
        return made

    def rule() -> list:
        made = []
        for r in rounds:
            kk = len(r.drafts)
            made.append(
                round_rule(
                    r.logits, r.drafts, r.q, r.qx, r.uniforms[kk : 2 * kk], r.uniforms[2 * kk], temperature
                )
            )
        return made

    rest = _loop(replay, rounds, n_new, k, frozenset())
    return {Part.DRAFT: drafts, Part.VERIFY: verify, Part.RULE: rule, Part.REST: rest}


def knockouts(
    target: NextTokenModel, draft: NextTokenModel, k: int, n_new: int, temperature: float
) -> dict[Part, Callable[[], list]]:
    """The loop of the same seeded run as :func:`part_replays`, once with
    each of :data:`RUN_PARTS` knocked out (its results looked up, the other
    parts run as the loop runs them) and once with none run (``REST``),
    each returning the generated characters (the loop's own, tested)."""
    replay, _, rounds = _recorded(target, draft, k, n_new, temperature)
    return {
        **{p: _loop(replay, rounds, n_new, k, frozenset(RUN_PARTS) - {p}) for p in RUN_PARTS},
        Part.REST: _loop(replay, rounds, n_new, k, frozenset()),
    }


def _loop(
    replay: SpeculativeDecoder, rounds: list[Round], n_new: int, k: int, run: frozenset[Part]
) -> Callable[[], list]:
    """The loop of :meth:`SpeculativeDecoder.decode` on ``replay``'s
    decoders, running the parts in ``run`` and looking up the others'
    results in ``rounds``: its checks, its generator, the uniforms, the
    counters, the text, the rollbacks of the models it runs and the cache
    check after. With every part run it is the loop."""
    prompt, temperature = replay.prompt, replay.temperature
    tdec, ddec = replay.target, replay.drafter
    drafting, verifying, ruling = (p in run for p in RUN_PARTS)

    def loop() -> list:
        check_int("n_new", n_new, least=0)
        check_int("k", k, least=1)
        generator = torch.Generator().manual_seed(XS.SEED)
        check_torch_generator(generator)
        text = list(prompt)
        end = len(text) + n_new
        drafted = accepted = passes = draft_passes = 0
        played = iter(rounds)
        with Uniforms(generator) as source:
            while len(text) < end:
                kk = min(k, end - len(text) - 1)
                uniforms = source.take(2 * kk + 1)
                r = next(played)
                if drafting and kk:
                    drafts, q, qx = ddec.draft(text, kk, uniforms[:kk])
                else:
                    drafts, q, qx = r.drafts, r.q, r.qx
                draft_passes += kk
                logits = tdec.feed(text[len(tdec) :] + drafts)[-(kk + 1) :] if verifying else r.logits
                if ruling:
                    n, token = round_rule(
                        logits, drafts, q, qx, uniforms[kk : 2 * kk], uniforms[2 * kk], temperature
                    )
                else:
                    n, token = r.accepted, r.token
                passes += 1
                drafted += kk
                accepted += n
                text += drafts[:n] + [token]
                if verifying:
                    _roll_back(tdec, text)
                if drafting:
                    ddec.rollback(text)
        if verifying:
            _roll_back(tdec, prompt)
        if drafting:
            ddec.rollback(prompt)
        assert replay._caches() == replay.held, "the replay's caches moved off the prefill"
        return text[len(prompt) :]

    return loop


def part_key(draft: str, k: int, part: Part) -> str:
    """The ratio name of ``part`` of the loop of ``draft`` at ``k``: ``<part>:<draft>:<k>``."""
    return f"{part.value}:{draft}:{k}"


def cell_name(draft: str, k: int) -> str:
    """The judgement name of the account of ``draft`` at ``k``: ``<draft> k=<k>``."""
    return f"{draft} k={k}"


def part_share(timing: Interval, part: Part, method: Method) -> tuple[float, float, float]:
    """(median, low, high) of ``part``'s share of the loop's time from its
    ratio's timing: the ratio itself for a part replayed alone and for the
    rest, 1 - the ratio (its interval's ends swapped) for a part knocked out."""
    if method is Method.KNOCKOUT and part in RUN_PARTS:
        return 1.0 - timing.median, 1.0 - timing.ci_high, 1.0 - timing.ci_low
    return timing.median, timing.ci_low, timing.ci_high


@dataclass(frozen=True)
class AccountRow:
    """The account of one (draft, k) at a decision's look: each part's share
    of the loop's time (:func:`part_share`, at the median) and their sum with
    its interval (the sums of the parts' interval ends)."""

    draft: str
    k: int
    method: Method
    shares: dict[Part, float]
    accounted: float
    low: float
    high: float
    looks: int
    pairs: int

    @property
    def explained(self) -> bool:
        """The median sum inside EXPLAINED_MEDIAN and its interval inside EXPLAINED."""
        return (
            EXPLAINED_MEDIAN[0] <= self.accounted <= EXPLAINED_MEDIAN[1]
            and EXPLAINED[0] <= self.low
            and self.high <= EXPLAINED[1]
        )


def _shares(timings: Mapping[str, Interval], draft: str, k: int, method: Method) -> dict[Part, tuple]:
    """Each part's (median, low, high) share of ``draft`` at ``k``;
    ``ValueError`` when ``timings`` lacks a ratio."""
    keys = {p: part_key(draft, k, p) for p in Part}
    missing = [key for key in keys.values() if key not in timings]
    if missing:
        raise ValueError(f"decision lacks the ratios {missing} (it has {sorted(timings)})")
    return {p: part_share(timings[key], p, method) for p, key in keys.items()}


def account_row(decision: Decision, draft: str, k: int, method: Method = Method.ALONE) -> AccountRow:
    """The :class:`AccountRow` of ``draft`` at ``k`` from a decision holding
    its four part ratios timed by ``method``; ``ValueError`` when it lacks one."""
    shares = _shares(decision.timings, draft, k, method)
    return AccountRow(
        draft,
        k,
        method,
        {p: s[0] for p, s in shares.items()},
        *(math.fsum(s[i] for s in shares.values()) for i in range(3)),
        decision.looks,
        min(len(decision.timings[part_key(draft, k, p)].ratios) for p in Part),
    )


def _explained(draft: str, k: int, method: Method) -> Callable[[Mapping], str | None]:
    """Holds when the account's interval lies inside EXPLAINED, broken when
    wholly outside it (as :class:`RatioRule` on the sums of the ends)."""
    rule = RatioRule.inside(EXPLAINED)

    def decide(t: Mapping) -> str | None:
        shares = _shares(t, draft, k, method).values()
        return rule.decide(math.fsum(s[1] for s in shares), math.fsum(s[2] for s in shares))

    return decide


def account_decisions(
    target: NextTokenModel,
    cells: Mapping[tuple[str, int], NextTokenModel],
    *,
    budget_s: float,
    alpha: float = TIMING_ALPHA,
    looks: int = TIMING_LOOKS,
    method: Method = Method.ALONE,
    n_new: int = 30,
    clock: Callable[[], float] | None = None,
) -> dict[tuple[str, int], Decision]:
    """The account of each cell ``(draft name, k) -> draft model``: its four
    parts (:func:`part_replays` for ``Method.ALONE``, :func:`knockouts` for
    ``Method.KNOCKOUT``) each timed against the loop they replay,
    ``n_new`` characters after the validation prompt at temperature 1, in one
    sequential decision (alpha over every ratio and at most ``looks``
    looks; ``budget_s`` seconds for all). Each cell's judgement holds when its account's
    interval lies inside EXPLAINED (:func:`_explained`); read a cell with
    :func:`account_row`."""
    check_model(target, "target")
    if not (isinstance(cells, Mapping) and cells):
        raise ValueError(f"cells must map at least one (draft, k) to a draft model, got {cells!r}")
    sides, judgements = {}, {}
    for (name, k), draft in cells.items():
        check_model(draft, f"cells[{name!r}, {k!r}]")
        loop = XS.speculative_decoding(target, draft, k, n_new, 1.0)
        replays = (part_replays if method is Method.ALONE else knockouts)(target, draft, k, n_new, 1.0)
        for part, replay in replays.items():
            sides[part_key(name, k, part)] = (loop, replay)
        judgements[cell_name(name, k)] = Judgement(
            f"{cell_name(name, k)}: the parts' sum of the loop's time inside {list(EXPLAINED)}",
            _explained(name, k, method),
        )
    extra = {} if clock is None else {"clock": clock}
    decided = sequential_decisions(
        sides, judgements, warmup=1, alpha=alpha, looks=looks, budget_s=budget_s, **extra
    )
    return {cell: decided[cell_name(*cell)] for cell in cells}


@dataclass(frozen=True)
class RoundCost:
    """One target pass of a (draft, k) in plain decoding's time per
    character, part by part, beside what ``cpp / (1 + k c)`` charges: the
    verification (the target's pass and the rule) 1, the drafting ``k c``,
    the bookkeeping 0; ``unaccounted`` is the loop's time beyond its parts'
    sum (1 - A of it; negative where the parts sum to more), charged 0 too.
    ``overrates`` names the one whose cost exceeds its charge the most."""

    draft: str
    k: int
    verification: float
    drafting: float
    bookkeeping: float
    unaccounted: float
    charged_drafting: float

    @property
    def excess(self) -> dict[str, float]:
        """Each part's cost beyond its charge, per target pass."""
        return {
            "verification": self.verification - 1.0,
            "drafting": self.drafting - self.charged_drafting,
            "bookkeeping": self.bookkeeping,
            "loop beyond its parts": self.unaccounted,
        }

    @property
    def overrates(self) -> str:
        """The part whose excess is the largest."""
        excess = self.excess
        return max(excess, key=excess.get)


def round_costs(row: AccountRow, speedup: SpeedupRow) -> RoundCost:
    """The parts of ``row`` per target pass, at the medians: a part's share
    r of the loop's time T is ``r T / P`` per pass, and T / P is ``cpp / s``
    plain characters' time (s the speedup, plain over speculative time for
    the same characters), so a part costs ``r cpp / s``; the formula charges
    1 for the verification and ``k c`` for the drafting (``speedup``'s own
    c); what the parts leave of the loop costs ``(1 - A) cpp / s``. Note:
    8-bit at k = 2 with cpp 3, s 0.8 and shares 0.6 / 0.36 / 0.04 (drafting /
    verification + rule / rest) costs 2.25 / 1.35 / 0.15 per pass, nothing
    unaccounted."""
    if (row.draft, row.k) != (speedup.draft, speedup.k):
        raise ValueError(
            f"row and speedup must be the same cell, got {row.draft} k={row.k} "
            f"and {speedup.draft} k={speedup.k}"
        )
    unit = speedup.chars_per_pass / speedup.speedup
    s = row.shares
    return RoundCost(
        row.draft,
        row.k,
        (s[Part.VERIFY] + s[Part.RULE]) * unit,
        s[Part.DRAFT] * unit,
        s[Part.REST] * unit,
        (1.0 - row.accounted) * unit,
        row.k * speedup.c,
    )


__all__ = [
    "EXPLAINED",
    "EXPLAINED_MEDIAN",
    "RUN_PARTS",
    "AccountRow",
    "Method",
    "Part",
    "RoundCost",
    "account_decisions",
    "account_row",
    "cell_name",
    "knockouts",
    "part_share",
    "part_key",
    "part_replays",
    "round_costs",
]
