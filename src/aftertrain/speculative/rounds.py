"""One round of the speculative loop: the target's verification of a
round's drafts, the rule on plain floats, the rollback after, and the
record of a round as it ran.

:func:`verify_round` scores the last emitted character and the drafts in
one cached target pass and :func:`round_rule` keeps a prefix and draws one
character; :func:`roll_back` then leaves the target holding the kept text
minus its last character. :class:`Round` is what
:meth:`aftertrain.speculative.generator.SpeculativeDecoder.rounds` records
of each round, so :mod:`aftertrain.experiments.round_replays` can replay
the loop part by part.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from aftertrain.lm.decoding import Decoder, probabilities_unchecked
from aftertrain.speculative.table_drafts import cumulative, draw_from_cdf

__all__ = ["Round", "roll_back", "round_rule", "verify_round"]


@dataclass(frozen=True)
class Round:
    """One round of the loop as it ran: what its parts were given and gave
    (:mod:`aftertrain.experiments.round_replays` replays them part by part).

    Invariant: ``len(uniforms) == 2 * len(drafts) + 1``; ``accepted <= len(drafts)``.
    """

    start: int  # characters of the text (prompt included) when the round began
    uniforms: list[float]  # the round's 2 kk + 1 uniforms, in the documented order
    drafts: list[int]
    q: list[list[float]]  # the draft's rows
    qx: list[float]  # each draft's own q
    logits: torch.Tensor  # (kk + 1, V): the target's rows the rule read
    accepted: int
    token: int


def verify_round(
    target: Decoder,
    text: list[int],
    drafts: list[int],
    q: list[list[float]],
    qx: list[float],
    u: list[float],
    v: float,
    temperature: float,
) -> tuple[int, int, torch.Tensor]:
    """One verification: the target scores what it has not seen of ``text``
    and the ``k`` drafts in one cached pass, and the rule
    (:func:`aftertrain.speculative.rule.verify_with_uniforms`, here on plain
    floats for one round) keeps a prefix and draws one character.

    ``q`` holds the draft's rows (float64 values as lists), ``qx`` each
    draft's own ``q``. Returns ``(accepted, token, logits)``: the logits
    (k+1, V) of the drafted positions and the next. Same uniforms, same
    result as the batched rule: ``u[i] * q_i(x_i) < p_i(x_i)`` accepts, the
    first rejection draws from ``normalize(max(0, p_a - q_a))`` (from
    ``p_a`` if that is all zero), a full acceptance from ``p_{k+1}``.

    The distributions are one softmax over the k+1 rows, read out as floats
    once; the rule's arithmetic is then that of the tensor rule in the same
    float64 operations (a difference, a clamp at 0, running sums in order),
    so the draws are the same bit for bit."""
    logits = target.feed(text[len(target) :] + drafts)[-(len(drafts) + 1) :]
    n, token = round_rule(logits, drafts, q, qx, u, v, temperature)
    return n, token, logits


def round_rule(
    logits: torch.Tensor,
    drafts: list[int],
    q: list[list[float]],
    qx: list[float],
    u: list[float],
    v: float,
    temperature: float,
) -> tuple[int, int]:
    """:func:`verify_round` after its forward: ``(accepted, token)`` from the
    k+1 rows of checked logits."""
    k = len(drafts)
    p = probabilities_unchecked(logits, temperature).tolist()
    n = 0
    while n < k and u[n] * qx[n] < p[n][drafts[n]]:
        n += 1
    p_n = p[n]
    if n < k:
        residual = [a - b if a > b else 0.0 for a, b in zip(p_n, q[n], strict=True)]
        if any(residual):  # else p <= q everywhere up to rounding: see rule._rule
            p_n = residual
    return n, draw_from_cdf(cumulative(p_n), v)


def roll_back(tdec: Decoder, text: list[int]) -> None:
    """After a round the target keeps what it has fed of the new ``text``,
    minus the last character (fed next round with the next drafts); so does a
    run draft (:meth:`ModelDrafter.rollback`)."""
    tdec.truncate(min(len(tdec), len(text) - 1))
    assert tdec.tokens == text[: len(tdec)], "the target holds text that was not emitted"
