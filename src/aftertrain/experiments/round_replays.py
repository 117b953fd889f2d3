"""The speculative loop's parts, each replayed by itself or knocked out of
the loop: what :mod:`aftertrain.experiments.round_account` times.

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
- ``rule``: :func:`aftertrain.speculative.rounds.round_rule` on the
  recorded logits;
- ``rest``: the loop's own bookkeeping (its generator, the uniforms, the
  counters, the text), every part's result looked up.

:func:`knockouts` runs the loop instead with one part's results looked up
and the others made, so the caches the parts leave each other count.
:func:`in_place` runs the whole loop with a clock read around each part
and reports one part's seconds (:class:`aftertrain.timing.Timed`): each
part as the loop runs it, after the parts before it in the round.
Every replay returns what the loop made, and leaves its decoders at the
prefill, as the loop does.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable

import torch

from aftertrain.core.validation import check_int
from aftertrain.experiments import speculative as XS
from aftertrain.lm.decoding import check_torch_generator
from aftertrain.lm.protocol import NextTokenModel
from aftertrain.speculative.drafters import Uniforms
from aftertrain.speculative.generator import SpeculativeDecoder
from aftertrain.speculative.rounds import Round, roll_back, round_rule
from aftertrain.timing.paired import Clock, Timed

__all__ = ["RUN_PARTS", "Part", "in_place", "knockouts", "part_replays"]


class Part(enum.Enum):
    """A part of a speculative round, by the name the account shows."""

    DRAFT = "draft"
    VERIFY = "verify"
    RULE = "rule"
    REST = "rest"


#: The parts a round runs a model or the rule for (the rest is the loop's own work).
RUN_PARTS = (Part.DRAFT, Part.VERIFY, Part.RULE)


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
            roll_back(tdec, a)
        roll_back(tdec, prompt)
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


def in_place(
    target: NextTokenModel,
    draft: NextTokenModel,
    k: int,
    n_new: int,
    temperature: float,
    clock: Clock = time.perf_counter,
) -> dict[Part, Callable[[], object]]:
    """The loop of the same seeded run as :func:`part_replays`, every part
    run, with ``clock`` read before and after each part of each round: for
    each of :data:`RUN_PARTS` a callable returning
    ``Timed(seconds of that part, the generated characters)`` (the draft's
    steps and rollbacks, the target's passes and rollbacks, the rule), so a
    part's time is what it costs where the loop runs it, in the cache state
    the parts before it leave; ``REST`` is the bookkeeping replayed alone
    (:func:`_loop` with no part run, timed whole), measured apart from the
    loop, so the account's sum is no identity: work the brackets miss, or
    clock reads that slow the loop, leave it off 1."""
    replay, _, rounds = _recorded(target, draft, k, n_new, temperature)
    return {
        **{p: _timed_loop(replay, n_new, k, p, clock) for p in RUN_PARTS},
        Part.REST: _loop(replay, rounds, n_new, k, frozenset()),
    }


def _timed_loop(
    replay: SpeculativeDecoder, n_new: int, k: int, part: Part, clock: Clock
) -> Callable[[], Timed]:
    """:meth:`SpeculativeDecoder.decode`'s loop on ``replay``'s decoders with
    ``clock`` read around every part (the same reads whichever ``part`` it
    reports), returning ``Timed(seconds of part, the generated characters)``."""
    prompt, temperature = replay.prompt, replay.temperature
    tdec, ddec = replay.target, replay.drafter
    which = RUN_PARTS.index(part)

    @torch.no_grad()
    def loop() -> Timed:
        check_int("n_new", n_new, least=0)
        check_int("k", k, least=1)
        generator = torch.Generator().manual_seed(XS.SEED)
        check_torch_generator(generator)
        text = list(prompt)
        end = len(text) + n_new
        spent = [0.0, 0.0, 0.0]  # draft, verify, rule: RUN_PARTS' order
        with Uniforms(generator) as source:
            while len(text) < end:
                kk = min(k, end - len(text) - 1)
                uniforms = source.take(2 * kk + 1)
                t0 = clock()
                drafts, q, qx = ddec.draft(text, kk, uniforms[:kk]) if kk else ([], [], [])
                t1 = clock()
                logits = tdec.feed(text[len(tdec) :] + drafts)[-(kk + 1) :]
                t2 = clock()
                n, token = round_rule(
                    logits, drafts, q, qx, uniforms[kk : 2 * kk], uniforms[2 * kk], temperature
                )
                t3 = clock()
                text += drafts[:n] + [token]
                t4 = clock()
                roll_back(tdec, text)
                t5 = clock()
                ddec.rollback(text)
                t6 = clock()
                spent[0] += (t1 - t0) + (t6 - t5)
                spent[1] += (t2 - t1) + (t5 - t4)
                spent[2] += t3 - t2
        t0 = clock()
        roll_back(tdec, prompt)
        t1 = clock()
        ddec.rollback(prompt)
        t2 = clock()
        spent[0] += t2 - t1
        spent[1] += t1 - t0
        assert replay.at_prefill(), "the replay's caches moved off the prefill"
        return Timed(spent[which], text[len(prompt) :])

    return loop


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
                    roll_back(tdec, text)
                if drafting:
                    ddec.rollback(text)
        if verifying:
            roll_back(tdec, prompt)
        if drafting:
            ddec.rollback(prompt)
        assert replay.at_prefill(), "the replay's caches moved off the prefill"
        return text[len(prompt) :]

    return loop
